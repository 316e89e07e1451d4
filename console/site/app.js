// The InstantStart console: a third face of the HTTP API (beside the CLI and the MCP tools). Every action is one
// signed API request; what the console can do, the CLI and the MCP tools can do through the same validations.
import { h, render } from './vendor/preact.module.js';
import { useCallback, useEffect, useRef, useState } from './vendor/hooks.module.js';
import htm from './vendor/htm.module.js';
import { ApiError, makeApi } from './api.js';
import { currentSession, loadConfig, signInCognito, signInSandbox, signOut } from './auth.js';

const html = htm.bind(h);

const STAGES = ['network', 'access', 'dependencies', 'hyperpod', 'storage', 'verify'];
const SETTLED = new Set(['READY', 'FAILED', 'DEGRADED', 'DELETED']);
const OPERATION_ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
const FEATURE_KEYS = [
  'trainingOperator',
  'inferenceOperator',
  'taskGovernance',
  'observability',
  'kubeRay',
  'tieredCheckpointing',
  'fsx',
];
const SYMBOL = { SUCCEEDED: '✓', RUNNING: '●', FAILED: '✕', PENDING: '○', CANCELLED: '–' };
const TABS = [
  ['overview', 'Overview'],
  ['instance-groups', 'Instance groups'],
  ['nodes', 'Nodes'],
  ['events', 'Events'],
  ['features', 'Features'],
  ['training-jobs', 'Training jobs'],
  ['inference', 'Inference'],
];

// ------------------------------------------------------------------ helpers
function parseRoute(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'create') return { page: 'create' };
  if (parts[0] === 'clusters' && parts[1]) return { page: 'cluster', tag: parts[1], tab: parts[2] || 'overview' };
  return { page: 'list' };
}

function useRoute() {
  const [route, setRoute] = useState(parseRoute(window.location.hash));
  useEffect(() => {
    // only #/... are routes: the skip link's #main moves focus without changing the page
    const onChange = () => {
      const hash = window.location.hash;
      if (hash === '' || hash.startsWith('#/')) setRoute(parseRoute(hash));
    };
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** load() now and again after interval(data) ms (a number, or a function of the last data; 0 = once). */
function usePoll(load, interval, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let alive = true;
    let timer = null;
    let last = null;
    const run = async () => {
      try {
        last = await load();
        if (alive) setState({ data: last, error: null, loading: false });
      } catch (error) {
        if (alive) setState((s) => ({ ...s, error, loading: false }));
      }
      const next = typeof interval === 'function' ? interval(last) : interval;
      if (alive && next) timer = setTimeout(run, next);
    };
    run();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [...deps, tick]);
  return [state, () => setTick((t) => t + 1)];
}

function useFocusHeading() {
  const ref = useRef(null);
  useEffect(() => {
    if (ref.current) ref.current.focus();
  }, []);
  return ref;
}

const time = (iso) => (iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' }) : '—');

function duration(startedAt, endedAt) {
  // the control plane's clock, not the browser's: a running stage shows when it started
  if (!startedAt) return '';
  if (!endedAt) return `since ${new Date(startedAt).toLocaleTimeString()}`;
  const seconds = Math.max(0, (Date.parse(endedAt) - Date.parse(startedAt)) / 1000);
  return seconds < 90 ? `${Math.round(seconds)} s` : `${Math.round(seconds / 60)} min`;
}

function executionLink(region, executionArn) {
  return `https://${region}.console.aws.amazon.com/states/home?region=${region}#/v2/executions/details/${executionArn}`;
}

function nodesReady(cluster) {
  if (!cluster) return null;
  const groups = (cluster.hyperPod && cluster.hyperPod.instanceGroups) || [];
  const target = groups.reduce((sum, g) => sum + (g.targetCount ?? g.instanceCount ?? 0), 0);
  const ready = (cluster.nodes || []).filter((n) => n.ready).length;
  return { ready, target };
}

/** Ready nodes over the target, summed over a cluster list entry's instance groups (GET /clusters). */
function groupsReady(groups) {
  if (!groups || !groups.length) return null;
  const target = groups.reduce((sum, g) => sum + (g.targetCount ?? 0), 0);
  const ready = groups.reduce((sum, g) => sum + (g.readyNodes ?? 0), 0);
  return { ready, target };
}

// ------------------------------------------------------------------ small components
function Badge({ status }) {
  const value = status || 'UNKNOWN';
  return html`<span class=${`badge badge-${value.toLowerCase()}`}>${value}</span>`;
}

function StageChips({ stages }) {
  const byName = Object.fromEntries((stages || []).map((s) => [s.name, s]));
  return html`<ol class="chips" aria-label="Stages">
    ${STAGES.map((name) => {
      const status = (byName[name] && byName[name].status) || 'PENDING';
      return html`<li class=${`chip chip-${status.toLowerCase()}`} title=${`${name}: ${status}`}>
        <span aria-hidden="true">${SYMBOL[status] || '?'}</span> ${name}<span class="visually-hidden">: ${status}</span>
      </li>`;
    })}
  </ol>`;
}

function ErrorNote({ error, onSignIn }) {
  if (!error) return null;
  const isApi = error instanceof ApiError;
  return html`<div class="alert" role="alert">
    <strong>${isApi ? `${error.status} ${error.code}` : 'Error'}:</strong> ${error.message}
    ${isApi && error.status === 403 && onSignIn
      ? html` <button type="button" class="link-button" onClick=${onSignIn}>Sign in again</button>`
      : null}
  </div>`;
}

/** A modal confirmation (native <dialog>: focus trapped, Escape cancels). */
let dialogs = 0;

function ConfirmDialog({ open, title, children, confirmLabel, danger, onConfirm, onCancel }) {
  const ref = useRef(null);
  const titleId = useRef(`dialog-title-${++dialogs}`).current;
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return html`<dialog ref=${ref} class="dialog" aria-labelledby=${titleId} onCancel=${(e) => {
    e.preventDefault();
    onCancel();
  }}>
    <h2 id=${titleId}>${title}</h2>
    <div class="dialog-body">${children}</div>
    <div class="actions">
      <button type="button" class=${danger ? 'danger' : 'primary'} onClick=${onConfirm}>${confirmLabel}</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
  </dialog>`;
}

function Table({ caption, columns, rows, empty }) {
  if (!rows || rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label=${caption}>
    <table role="table">
      <caption class="visually-hidden">${caption}</caption>
      <thead role="rowgroup"><tr role="row">${columns.map(([label]) => html`<th scope="col" role="columnheader">${label}</th>`)}</tr></thead>
      <tbody role="rowgroup">
        ${rows.map(
          (row, i) => html`<tr key=${i} role="row">
            ${columns.map(([label, cell]) => html`<td role="cell" data-label=${label}>${cell(row)}</td>`)}
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

// ------------------------------------------------------------------ sign-in
function SignIn({ config, onSignedIn, notice }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [challenge, setChallenge] = useState(null);
  const heading = useFocusHeading();

  const attempt = async (action) => {
    setBusy(true);
    setError(null);
    try {
      const result = await action();
      if (result.challenge) setChallenge(result);
      else onSignedIn(result.session || result);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  let body;
  if (config.mode === 'sandbox') {
    body = html`<p>
        This console talks to the offline sandbox's HTTP API on this machine. Signing in hands this browser tab the
        sandbox's local credentials (kept in this tab's session storage only); every request is SigV4-signed with
        them, as the CLI does.
      </p>
      <button type="button" class="primary" disabled=${busy} onClick=${() => attempt(signInSandbox)}>
        Sign in to the sandbox
      </button>`;
  } else if (challenge) {
    body = html`<form onSubmit=${(e) => {
      e.preventDefault();
      const value = new FormData(e.currentTarget).get('newPassword');
      attempt(() => challenge.respond(value));
    }}>
      <p>Choose a new password to finish your first sign-in.</p>
      <label for="new-password">New password</label>
      <input id="new-password" name="newPassword" type="password" autocomplete="new-password" required />
      <button type="submit" class="primary" disabled=${busy}>Set password and sign in</button>
    </form>`;
  } else {
    body = html`<form onSubmit=${(e) => {
      e.preventDefault();
      const data = new FormData(e.currentTarget);
      attempt(() => signInCognito(config, String(data.get('username')), String(data.get('password'))));
    }}>
      <label for="username">Email</label>
      <input id="username" name="username" type="email" autocomplete="username" required />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required />
      <button type="submit" class="primary" disabled=${busy}>Sign in</button>
    </form>`;
  }
  return html`<main id="main" class="signin" tabindex="-1">
    <h1 ref=${heading} tabindex="-1">Sign in to InstantStart</h1>
    ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
    ${body}
    ${error ? html`<div class="alert" role="alert">${error.message}</div>` : null}
  </main>`;
}

// ------------------------------------------------------------------ cluster list
function ClusterList({ api, onSignIn }) {
  const heading = useFocusHeading();
  const [state, refresh] = usePoll(
    async () => (await api.listClusters()).clusters, // one request: each entry has its stages and node counts
    4000,
    [],
  );
  const rows = state.data || [];
  return html`<section aria-labelledby="page-title">
    <div class="page-head">
      <h1 id="page-title" ref=${heading} tabindex="-1">Clusters</h1>
      <div class="actions">
        <button type="button" onClick=${refresh}>Refresh</button>
        <a class="button primary" href="#/create">Create cluster</a>
      </div>
    </div>
    <${ErrorNote} error=${state.error} onSignIn=${onSignIn} />
    ${state.loading
      ? html`<p role="status">Loading clusters…</p>`
      : html`<${Table}
          caption="Clusters"
          empty="No clusters yet. Create one to get a HyperPod cluster on EKS."
          rows=${rows}
          columns=${[
            ['Cluster', (c) => html`<a href=${`#/clusters/${encodeURIComponent(c.clusterTag)}`}>${c.clusterTag}</a>`],
            ['Status', (c) => html`<${Badge} status=${c.status} />`],
            ['Stages', (c) => html`<${StageChips} stages=${c.stages} />`],
            [
              'Nodes ready',
              (c) => {
                const n = groupsReady(c.instanceGroups);
                return n ? html`<span aria-label=${`${n.ready} of ${n.target} nodes ready`}>${n.ready}/${n.target}</span>` : '—';
              },
            ],
            ['Zone', (c) => c.availabilityZone],
            ['Created', (c) => time(c.createdAt)],
          ]}
        />`}
  </section>`;
}

// ------------------------------------------------------------------ create form
const fieldId = (path) => `f-${path.replace(/\[(\d+)\]\.?/g, '-$1-').replace(/-$/, '')}`;

function ruleError(rules, name, path, value, required = true) {
  const rule = rules[name];
  if (value === '' || value === null || value === undefined) return required ? `${path} is required` : null;
  const text = String(value);
  if ((rule.minLength && text.length < rule.minLength) || (rule.maxLength && text.length > rule.maxLength)) {
    return `${path} must be ${rule.minLength}-${rule.maxLength} characters: ${rule.rule}; got '${text}'`;
  }
  if (rule.pattern && !new RegExp(rule.pattern).test(text)) return `${path} must be ${rule.rule}; got '${text}'`;
  return null;
}

/** The API's field rules (rules.json, checked against the OpenAPI document), applied before sending. */
function validate(rules, form) {
  const errors = {};
  const put = (path, message) => {
    if (message) errors[path] = message;
  };
  put('clusterTag', ruleError(rules, 'clusterTag', 'clusterTag', form.clusterTag));
  put('availabilityZone', ruleError(rules, 'availabilityZone', 'availabilityZone', form.availabilityZone));
  put('kubernetesVersion', ruleError(rules, 'kubernetesVersion', 'kubernetesVersion', form.kubernetesVersion, false));
  const { minItems, maxItems } = rules.instanceGroups;
  if (form.groups.length < minItems || form.groups.length > maxItems) {
    put('instanceGroups', `instanceGroups must have ${minItems}-${maxItems} groups`);
  }
  const names = new Set();
  form.groups.forEach((g, i) => {
    const at = (field) => `instanceGroups[${i}].${field}`;
    put(at('instanceGroupName'), ruleError(rules, 'instanceGroupName', at('instanceGroupName'), g.instanceGroupName));
    if (names.has(g.instanceGroupName)) put(at('instanceGroupName'), `${at('instanceGroupName')} repeats a group name`);
    names.add(g.instanceGroupName);
    put(at('instanceType'), ruleError(rules, 'instanceType', at('instanceType'), g.instanceType));
    const { minimum, maximum } = rules.instanceCount;
    const count = Number(g.instanceCount);
    if (g.instanceCount === '' || !Number.isInteger(count) || count < minimum || count > maximum) {
      put(at('instanceCount'), `${at('instanceCount')} must be an integer between ${minimum} and ${maximum}`);
    }
    if (!rules.capacityType.enum.includes(g.capacityType)) {
      put(at('capacityType'), `${at('capacityType')} must be one of ${rules.capacityType.enum.join(', ')}`);
    }
    if (g.capacityType === 'TrainingPlan') {
      put(at('trainingPlanArn'), ruleError(rules, 'trainingPlanArn', at('trainingPlanArn'), g.trainingPlanArn));
    }
  });
  return errors;
}

function requestBody(form) {
  const body = {
    clusterTag: form.clusterTag,
    availabilityZone: form.availabilityZone,
    instanceGroups: form.groups.map((g) => ({
      instanceGroupName: g.instanceGroupName,
      instanceType: g.instanceType,
      instanceCount: Number(g.instanceCount),
      capacityType: g.capacityType,
      ...(g.capacityType === 'TrainingPlan' ? { trainingPlanArn: g.trainingPlanArn } : {}),
    })),
  };
  if (form.kubernetesVersion) body.kubernetesVersion = form.kubernetesVersion;
  return body;
}

function Field({ path, label, errors, hint, children }) {
  const id = fieldId(path);
  const error = errors[path];
  return html`<div class=${`field${error ? ' invalid' : ''}`}>
    <label for=${id}>${label}</label>
    ${children({
      id,
      'aria-invalid': error ? 'true' : 'false',
      'aria-describedby': [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined,
    })}
    ${hint ? html`<p class="hint" id=${`${id}-hint`}>${hint}</p>` : null}
    ${error ? html`<p class="field-error" id=${`${id}-error`}>${error}</p>` : null}
  </div>`;
}

const NEW_GROUP = { instanceGroupName: 'accel', instanceType: 'ml.g6.4xlarge', instanceCount: 1, capacityType: 'OnDemand', trainingPlanArn: '' };

function CreateCluster({ api, rules, onSignIn }) {
  const heading = useFocusHeading();
  const [form, setForm] = useState({ clusterTag: '', availabilityZone: '', kubernetesVersion: '', groups: [{ ...NEW_GROUP }] });
  const [errors, setErrors] = useState({});
  const [formError, setFormError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [zones, setZones] = useState([]);
  const [types, setTypes] = useState([]);
  const key = useRef(crypto.randomUUID());

  useEffect(() => {
    api
      .availabilityZones()
      .then((answer) => {
        const names = answer.availabilityZones.map((z) => z.zoneName);
        setZones(names);
        setForm((f) => (f.availabilityZone ? f : { ...f, availabilityZone: names.includes('us-west-2c') ? 'us-west-2c' : names[0] || '' }));
      })
      .catch(setFormError);
  }, []);
  useEffect(() => {
    if (!form.availabilityZone) return;
    api
      .instanceTypes(form.availabilityZone)
      .then((answer) => setTypes(answer.instanceTypes || []))
      .catch(() => setTypes([]));
  }, [form.availabilityZone]);

  const set = (field, value) => {
    setForm((f) => ({ ...f, [field]: value }));
    key.current = crypto.randomUUID(); // a changed request is a new request
  };
  const setGroup = (i, field, value) => {
    setForm((f) => ({ ...f, groups: f.groups.map((g, j) => (j === i ? { ...g, [field]: value } : g)) }));
    key.current = crypto.randomUUID();
  };
  const focusFirst = (found) => {
    const first = Object.keys(found)[0];
    const element = first && document.getElementById(fieldId(first));
    if (element) element.focus();
  };

  const submit = async (event) => {
    event.preventDefault();
    setFormError(null);
    const found = validate(rules, form);
    setErrors(found);
    if (Object.keys(found).length) {
      setTimeout(() => focusFirst(found), 0);
      return;
    }
    setBusy(true);
    try {
      await api.createCluster(requestBody(form), key.current);
      window.location.hash = `#/clusters/${encodeURIComponent(form.clusterTag)}`;
    } catch (error) {
      const fromApi = {};
      const rendered = (path) => document.getElementById(fieldId(path));
      const unplaced = [];
      for (const detail of (error instanceof ApiError && error.details) || []) {
        if (detail.field && rendered(detail.field)) fromApi[detail.field] = detail.message || error.message;
        else unplaced.push(detail);
      }
      setErrors(fromApi);
      if (!Object.keys(fromApi).length || unplaced.length) setFormError(error);
      setTimeout(() => focusFirst(fromApi), 0);
    } finally {
      setBusy(false);
    }
  };

  return html`<section aria-labelledby="page-title">
    <div class="page-head"><h1 id="page-title" ref=${heading} tabindex="-1">Create cluster</h1></div>
    <p class="lead">
      A HyperPod cluster on a new EKS cluster: network, access, add-ons, HyperPod capacity, S3 storage, then a
      verification that the nodes are Ready and schedulable. The form checks the API's field rules before sending;
      the API checks them again and has the last word.
    </p>
    <form class="create" noValidate onSubmit=${submit}>
      ${formError ? html`<${ErrorNote} error=${formError} onSignIn=${onSignIn} />` : null}
      <${Field} path="clusterTag" label="Cluster tag" errors=${errors} hint=${`3-24 characters: ${rules.clusterTag.rule}.`}>
        ${(a) => html`<input ...${a} name="clusterTag" value=${form.clusterTag} autocomplete="off" spellcheck="false"
          onInput=${(e) => set('clusterTag', e.currentTarget.value)} />`}
      <//>
      <div class="row">
        <${Field} path="availabilityZone" label="Availability Zone" errors=${errors}>
          ${(a) => html`<select ...${a} name="availabilityZone" value=${form.availabilityZone}
            onChange=${(e) => set('availabilityZone', e.currentTarget.value)}>
            ${zones.length ? null : html`<option value="">Loading zones…</option>`}
            ${zones.map((z) => html`<option value=${z}>${z}</option>`)}
          </select>`}
        <//>
        <${Field} path="kubernetesVersion" label="Kubernetes version" errors=${errors}>
          ${(a) => html`<select ...${a} name="kubernetesVersion" value=${form.kubernetesVersion}
            onChange=${(e) => set('kubernetesVersion', e.currentTarget.value)}>
            <option value="">Default of the deployment</option>
            ${['1.33', '1.32', '1.31', '1.30', '1.29', '1.28'].map((v) => html`<option value=${v}>${v}</option>`)}
          </select>`}
        <//>
      </div>
      <fieldset id=${fieldId('instanceGroups')} tabindex="-1" class="groups">
        <legend>Instance groups</legend>
        ${errors.instanceGroups ? html`<p class="field-error">${errors.instanceGroups}</p>` : null}
        <datalist id="instance-types">${types.map((t) => html`<option value=${t} />`)}</datalist>
        ${form.groups.map(
          (g, i) => html`<div class="group" key=${i} role="group" aria-label=${`Instance group ${i + 1}`}>
            <${Field} path=${`instanceGroups[${i}].instanceGroupName`} label="Group name" errors=${errors}>
              ${(a) => html`<input ...${a} value=${g.instanceGroupName} spellcheck="false"
                onInput=${(e) => setGroup(i, 'instanceGroupName', e.currentTarget.value)} />`}
            <//>
            <${Field} path=${`instanceGroups[${i}].instanceType`} label="Instance type" errors=${errors}>
              ${(a) => html`<input ...${a} value=${g.instanceType} list="instance-types" spellcheck="false"
                onInput=${(e) => setGroup(i, 'instanceType', e.currentTarget.value)} />`}
            <//>
            <${Field} path=${`instanceGroups[${i}].instanceCount`} label="Count" errors=${errors}>
              ${(a) => html`<input ...${a} type="number" inputmode="numeric" min=${rules.instanceCount.minimum}
                max=${rules.instanceCount.maximum} value=${g.instanceCount}
                onInput=${(e) => setGroup(i, 'instanceCount', e.currentTarget.value)} />`}
            <//>
            <${Field} path=${`instanceGroups[${i}].capacityType`} label="Capacity" errors=${errors}>
              ${(a) => html`<select ...${a} value=${g.capacityType}
                onChange=${(e) => setGroup(i, 'capacityType', e.currentTarget.value)}>
                ${rules.capacityType.enum.map((c) => html`<option value=${c}>${c}</option>`)}
              </select>`}
            <//>
            ${g.capacityType === 'TrainingPlan'
              ? html`<${Field} path=${`instanceGroups[${i}].trainingPlanArn`} label="Training plan ARN" errors=${errors}>
                  ${(a) => html`<input ...${a} value=${g.trainingPlanArn} spellcheck="false"
                    onInput=${(e) => setGroup(i, 'trainingPlanArn', e.currentTarget.value)} />`}
                <//>`
              : null}
            ${form.groups.length > 1
              ? html`<button type="button" class="link-button" onClick=${() =>
                  setForm((f) => ({ ...f, groups: f.groups.filter((_, j) => j !== i) }))}>
                  Remove group ${g.instanceGroupName || i + 1}
                </button>`
              : null}
          </div>`,
        )}
        <button type="button" onClick=${() =>
          setForm((f) => ({ ...f, groups: [...f.groups, { ...NEW_GROUP, instanceGroupName: `group-${f.groups.length + 1}` }] }))}>
          Add instance group
        </button>
      </fieldset>
      <div class="actions">
        <button type="submit" class="primary" disabled=${busy}>${busy ? 'Creating…' : 'Create cluster'}</button>
        <a class="button" href="#/">Cancel</a>
      </div>
    </form>
  </section>`;
}

// ------------------------------------------------------------------ cluster page
function StageProgress({ cluster, api, region, onChanged }) {
  const [retrying, setRetrying] = useState(null);
  const [error, setError] = useState(null);
  const stages = [...(cluster.stages || [])].sort((a, b) => a.order - b.order);
  const done = stages.filter((s) => s.status === 'SUCCEEDED').length;
  const retry = async (stage) => {
    setRetrying(stage);
    setError(null);
    try {
      await api.retryStage(cluster.clusterTag, stage);
      onChanged();
    } catch (e) {
      setError(e);
    } finally {
      setRetrying(null);
    }
  };
  return html`<section class="panel" aria-labelledby="stages-title">
    <h2 id="stages-title">Stages</h2>
    <p class="summary" role="status" aria-live="polite">${done} of ${stages.length} stages succeeded · cluster ${cluster.status}</p>
    <${ErrorNote} error=${error} />
    <ol class="stages">
      ${stages.map(
        (s) => html`<li class=${`stage stage-${s.status.toLowerCase()}`} data-stage=${s.name}>
          <div class="stage-head">
            <span class="stage-symbol" aria-hidden="true">${SYMBOL[s.status] || '?'}</span>
            <span class="stage-name">${s.name}</span>
            <${Badge} status=${s.status} />
            ${s.attempts > 1 ? html`<span class="muted">attempt ${s.attempts}</span>` : null}
            <span class="muted">${duration(s.startedAt, s.endedAt)}</span>
            ${s.teardownStatus
              ? html`<span class="teardown">teardown <${Badge} status=${s.teardownStatus} /></span>`
              : null}
          </div>
          ${s.observedStatus ? html`<p class="observed">${s.observedStatus}</p>` : null}
          ${s.error
            ? html`<p class="stage-error"><strong>${s.error.code}</strong>: ${s.error.message}</p>`
            : null}
          ${s.status === 'FAILED'
            ? html`<button type="button" class="primary" disabled=${retrying !== null} onClick=${() => retry(s.name)}>
                ${retrying === s.name ? 'Retrying…' : `Retry ${s.name}`}
              </button>`
            : null}
        </li>`,
      )}
    </ol>
  </section>`;
}

function Operations({ operations, region }) {
  return html`<section class="panel" aria-labelledby="ops-title">
    <h2 id="ops-title">Operations</h2>
    <${Table}
      caption="Operations"
      empty="No operations."
      rows=${operations}
      columns=${[
        ['Type', (o) => o.type + (o.stage ? ` (${o.stage})` : '')],
        ['Status', (o) => html`<${Badge} status=${o.status} />`],
        ['Started', (o) => time(o.startedAt || o.createdAt)],
        ['Ended', (o) => time(o.endedAt)],
        ['Error', (o) => (o.error ? `${o.error.code}: ${o.error.message}` : '')],
        [
          'Execution',
          (o) =>
            o.executionArn
              ? html`<a href=${executionLink(region, o.executionArn)} target="_blank" rel="noopener noreferrer">
                  Step Functions<span class="visually-hidden"> execution of ${o.operationId} (opens a new tab)</span></a>`
              : '—',
        ],
      ]}
    />
  </section>`;
}

function Drift({ drift }) {
  const d = drift || { items: [] };
  return html`<section class="panel" aria-labelledby="drift-title">
    <h2 id="drift-title">Drift</h2>
    <p>${d.checkedAt ? `Last checked ${time(d.checkedAt)}.` : 'Not checked yet.'}
      ${d.items.length ? ' Repair what is repairable with instantstart clusters reconcile.' : ''}</p>
    ${d.checkedAt && html`<${Table}
      caption="Drift: what changed outside the control plane"
      empty="Nothing differs from the records."
      rows=${d.items}
      columns=${[
        ['Resource', (i) => `${i.resourceType} ${i.name}`],
        ['Field', (i) => i.field],
        ['Expected', (i) => i.expected || '—'],
        ['Observed', (i) => i.observed || '—'],
        ['Since', (i) => time(i.since)],
        ['Repairable', (i) => (i.repairable ? 'yes' : 'no')],
        ['What happened', (i) => i.message],
      ]}
    />`}
  </section>`;
}

function Overview({ api, cluster, operations, region, onChanged }) {
  const n = nodesReady(cluster);
  return html`<div class="overview">
    <${StageProgress} cluster=${cluster} api=${api} region=${region} onChanged=${onChanged} />
    <section class="panel" aria-labelledby="facts-title">
      <h2 id="facts-title">Cluster</h2>
      <dl class="facts">
        <dt>Region / zone</dt><dd>${cluster.region} / ${cluster.availabilityZone}</dd>
        <dt>EKS cluster</dt><dd>${(cluster.eks && cluster.eks.clusterName) || '—'} ${cluster.eks && cluster.eks.status ? `(${cluster.eks.status})` : ''}</dd>
        <dt>HyperPod cluster</dt><dd>${(cluster.hyperPod && cluster.hyperPod.clusterName) || '—'} ${cluster.hyperPod && cluster.hyperPod.status ? `(${cluster.hyperPod.status})` : ''}</dd>
        <dt>Nodes ready</dt><dd>${n ? `${n.ready}/${n.target}` : '—'}</dd>
        <dt>Created</dt><dd>${time(cluster.createdAt)}</dd>
      </dl>
    </section>
    <${Drift} drift=${cluster.drift} />
    <${Operations} operations=${operations} region=${region} />
  </div>`;
}

function InstanceGroups({ api, tag }) {
  const [state] = usePoll(() => api.instanceGroups(tag), 10000, [tag]);
  return html`<section class="panel" aria-labelledby="tab-title">
    <h2 id="tab-title">Instance groups</h2>
    <${ErrorNote} error=${state.error} />
    <${Table}
      caption="Instance groups"
      empty=${state.loading ? 'Loading…' : 'No instance groups.'}
      rows=${state.data && state.data.instanceGroups}
      columns=${[
        ['Group', (g) => g.instanceGroupName],
        ['Type', (g) => g.instanceType || '—'],
        ['Capacity', (g) => g.capacityType || '—'],
        ['Status', (g) => g.status || '—'],
        ['Current / target', (g) => `${g.currentCount ?? 0}/${g.targetCount ?? '—'}`],
        ['Subnets', (g) => (g.subnetIds || []).join(', ')],
      ]}
    />
  </section>`;
}

function Nodes({ api, tag }) {
  const [state, refresh] = usePoll(() => api.nodes(tag), 5000, [tag]);
  const [pending, setPending] = useState(null); // { action, node }
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const act = async () => {
    const { action, node } = pending;
    setPending(null);
    setError(null);
    try {
      const operation = await api.nodeAction(tag, action, [node.instanceId]);
      setResult(`${action === 'reboot' ? 'Reboot' : 'Replacement'} of ${node.instanceId} started: operation ${operation.operationId}.`);
      refresh();
    } catch (e) {
      setError(e);
    }
  };
  return html`<section class="panel" aria-labelledby="tab-title">
    <h2 id="tab-title">Nodes</h2>
    ${result ? html`<p class="notice" role="status">${result}</p>` : null}
    <${ErrorNote} error=${error || state.error} />
    <${Table}
      caption="Nodes"
      empty=${state.loading ? 'Loading…' : 'No nodes yet.'}
      rows=${state.data && state.data.nodes}
      columns=${[
        ['Instance', (n) => n.instanceId],
        ['Group', (n) => n.instanceGroupName],
        ['Type', (n) => n.instanceType],
        ['Status', (n) => n.instanceStatus],
        ['Health', (n) => n.healthStatus || '—'],
        ['Kubernetes node', (n) => n.kubernetesNodeName],
        [
          'Actions',
          (n) => html`<div class="actions compact">
            <button type="button" onClick=${() => setPending({ action: 'reboot', node: n })}>Reboot<span class="visually-hidden"> ${n.instanceId}</span></button>
            <button type="button" onClick=${() => setPending({ action: 'replace', node: n })}>Replace<span class="visually-hidden"> ${n.instanceId}</span></button>
          </div>`,
        ],
      ]}
    />
    <${ConfirmDialog}
      open=${pending !== null}
      title=${pending ? `${pending.action === 'reboot' ? 'Reboot' : 'Replace'} node ${pending.node.instanceId} of cluster ${tag}?` : ''}
      confirmLabel=${pending ? `${pending.action === 'reboot' ? 'Reboot' : 'Replace'} node` : ''}
      danger=${true}
      onConfirm=${act}
      onCancel=${() => setPending(null)}
    >
      ${pending && pending.action === 'reboot'
        ? html`<p>HyperPod reboots the instance; its Kubernetes node is NotReady until it is back. Pods on it are interrupted.</p>`
        : html`<p>HyperPod terminates the instance and launches a new one with a new instance id; its Kubernetes node is removed.</p>`}
    <//>
  </section>`;
}

function Events({ api, tag }) {
  const [level, setLevel] = useState('');
  const [state, refresh] = usePoll(() => api.events(tag, level || undefined), 10000, [tag, level]);
  return html`<section class="panel" aria-labelledby="tab-title">
    <h2 id="tab-title">Events</h2>
    <div class="toolbar">
      <label for="event-level">Level</label>
      <select id="event-level" value=${level} onChange=${(e) => setLevel(e.currentTarget.value)}>
        <option value="">All levels</option><option>Info</option><option>Warn</option><option>Error</option>
      </select>
      <button type="button" onClick=${refresh}>Refresh</button>
    </div>
    <${ErrorNote} error=${state.error} />
    <${Table}
      caption="HyperPod cluster events, newest first"
      empty=${state.loading ? 'Loading…' : 'No events.'}
      rows=${state.data && state.data.events}
      columns=${[
        ['Time', (e) => time(e.eventTime)],
        ['Level', (e) => html`<span class=${`level level-${(e.eventLevel || '').toLowerCase()}`}>${e.eventLevel || '—'}</span>`],
        ['Resource', (e) => [e.resourceType, e.instanceGroupName, e.instanceId].filter(Boolean).join(' · ')],
        ['Description', (e) => e.description || ''],
      ]}
    />
  </section>`;
}

function Features({ api, tag }) {
  const [state, refresh] = usePoll(() => api.features(tag), 0, [tag]);
  const [wanted, setWanted] = useState({});
  const [reviewing, setReviewing] = useState(false);
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const features = (state.data && state.data.features) || {};
  const diff = Object.fromEntries(
    Object.entries(wanted)
      .filter(([name, on]) => features[name] && features[name].enabled !== on)
      .map(([name, on]) => [name, { enabled: on }]),
  );
  const apply = async () => {
    setReviewing(false);
    setError(null);
    try {
      const operation = await api.updateFeatures(tag, diff);
      setResult(`Feature change started: operation ${operation.operationId}.`);
      setWanted({});
      refresh();
    } catch (e) {
      setError(e);
    }
  };
  const names = FEATURE_KEYS.filter((k) => k in features);
  return html`<section class="panel" aria-labelledby="tab-title">
    <h2 id="tab-title">Features</h2>
    <p class="lead">Switches change nothing until you apply: the request sends only the features you changed.</p>
    ${result ? html`<p class="notice" role="status">${result}</p>` : null}
    <${ErrorNote} error=${error || state.error} />
    <ul class="features">
      ${names.map((name) => {
        const f = features[name];
        const on = name in wanted ? wanted[name] : f.enabled;
        return html`<li class="feature">
          <input type="checkbox" role="switch" id=${`feature-${name}`} checked=${on}
            onChange=${(e) => setWanted((w) => ({ ...w, [name]: e.currentTarget.checked }))} />
          <label for=${`feature-${name}`}>${name}</label>
          <span class="muted">${f.enabled ? 'on' : 'off'}${f.status ? ` · ${f.status}` : ''}${f.version ? ` · ${f.version}` : ''}</span>
        </li>`;
      })}
    </ul>
    <div class="actions">
      <button type="button" class="primary" disabled=${!Object.keys(diff).length} onClick=${() => setReviewing(true)}>
        Review ${Object.keys(diff).length} change${Object.keys(diff).length === 1 ? '' : 's'}
      </button>
    </div>
    <${ConfirmDialog}
      open=${reviewing}
      title=${`Change features of cluster ${tag}?`}
      confirmLabel="Apply"
      onConfirm=${apply}
      onCancel=${() => setReviewing(false)}
    >
      <p>PATCH /clusters/${tag}/features with:</p>
      <pre class="code">${JSON.stringify(diff, null, 2)}</pre>
    <//>
  </section>`;
}

function TrainingJobs({ api, tag }) {
  const [state] = usePoll(() => api.trainingJobs(tag), 10000, [tag]);
  const [logs, setLogs] = useState(null);
  const [error, setError] = useState(null);
  const show = async (job) => {
    setError(null);
    try {
      setLogs({ job: job.name, ...(await api.trainingJobLogs(tag, job.name, job.namespace)) });
    } catch (e) {
      setError(e);
    }
  };
  return html`<section class="panel" aria-labelledby="tab-title">
    <h2 id="tab-title">Training jobs</h2>
    <${ErrorNote} error=${error || state.error} />
    <${Table}
      caption="Training jobs"
      empty=${state.loading ? 'Loading…' : 'No training jobs. Submit one with `instantstart jobs create` or the API.'}
      rows=${state.data && state.data.trainingJobs}
      columns=${[
        ['Job', (j) => j.name],
        ['Recipe', (j) => j.recipe || j.kind],
        ['Status', (j) => html`<${Badge} status=${j.status} />`],
        ['Restarts', (j) => j.restarts],
        ['Created', (j) => time(j.createdAt)],
        ['Logs', (j) => html`<button type="button" onClick=${() => show(j)}>Logs<span class="visually-hidden"> of ${j.name}</span></button>`],
      ]}
    />
    ${logs
      ? html`<h3>Logs of ${logs.job} <span class="muted">(pod ${logs.pod}${logs.truncated ? ', last lines' : ''})</span></h3>
          <pre class="logs" tabindex="0" aria-label=${`Logs of ${logs.job}`}>${logs.text}</pre>`
      : null}
  </section>`;
}

function Inference({ api, tag }) {
  const [state] = usePoll(() => api.inferenceEndpoints(tag), 10000, [tag]);
  const [endpoint, setEndpoint] = useState('');
  const [payload, setPayload] = useState('{\n  "inputs": "What is SageMaker HyperPod?"\n}');
  const [payloadError, setPayloadError] = useState(null);
  const [answer, setAnswer] = useState(null);
  const [error, setError] = useState(null);
  const endpoints = (state.data && state.data.endpoints) || [];
  const chosen = endpoint || (endpoints[0] && endpoints[0].name) || '';
  const invoke = async (event) => {
    event.preventDefault();
    setError(null);
    setAnswer(null);
    let body;
    try {
      body = JSON.parse(payload);
      if (!body || typeof body !== 'object' || Array.isArray(body)) throw new Error('must be a JSON object');
      setPayloadError(null);
    } catch (e) {
      setPayloadError(`body ${e.message}`);
      return;
    }
    try {
      setAnswer(await api.invokeEndpoint(tag, chosen, body));
    } catch (e) {
      setError(e);
    }
  };
  return html`<section class="panel" aria-labelledby="tab-title">
    <h2 id="tab-title">Inference endpoints</h2>
    <${ErrorNote} error=${state.error} />
    <${Table}
      caption="Inference endpoints"
      empty=${state.loading ? 'Loading…' : 'No inference endpoints.'}
      rows=${endpoints}
      columns=${[
        ['Name', (e) => e.name],
        ['Kind', (e) => e.kind],
        ['State', (e) => e.state || '—'],
        ['Replicas', (e) => `${e.readyReplicas ?? 0}/${e.replicas ?? '—'}`],
        ['SageMaker endpoint', (e) => e.endpointName || '—'],
      ]}
    />
    ${endpoints.length
      ? html`<form class="invoke" onSubmit=${invoke}>
          <h3>Invoke</h3>
          <label for="invoke-endpoint">Endpoint</label>
          <select id="invoke-endpoint" value=${chosen} onChange=${(e) => setEndpoint(e.currentTarget.value)}>
            ${endpoints.map((e) => html`<option value=${e.name}>${e.name}</option>`)}
          </select>
          <label for="invoke-body">Request body (JSON)</label>
          <textarea id="invoke-body" rows="5" spellcheck="false" aria-invalid=${payloadError ? 'true' : 'false'}
            aria-describedby=${payloadError ? 'invoke-body-error' : undefined}
            value=${payload} onInput=${(e) => setPayload(e.currentTarget.value)}></textarea>
          ${payloadError ? html`<p class="field-error" id="invoke-body-error">${payloadError}</p>` : null}
          <button type="submit" class="primary">Invoke</button>
          <${ErrorNote} error=${error} />
          ${answer
            ? html`<pre class="code" aria-label="Answer">${answer.text ?? JSON.stringify(answer.body, null, 2)}</pre>`
            : null}
        </form>`
      : null}
  </section>`;
}

function ClusterPage({ api, config, tag, tab, onSignIn }) {
  const heading = useFocusHeading();
  const [deleting, setDeleting] = useState(false);
  const [actionError, setActionError] = useState(null);
  const [state, refresh] = usePoll(
    async () => {
      const [cluster, ops] = await Promise.allSettled([api.getCluster(tag), api.listOperations(tag)]);
      const operations = ops.status === 'fulfilled' ? ops.value.operations || [] : [];
      if (cluster.status === 'fulfilled') return { cluster: cluster.value, operations };
      // a deleted cluster is gone from GET /clusters/{tag}; its operations stay listed
      if (cluster.reason instanceof ApiError && cluster.reason.status === 404) return { cluster: null, operations };
      throw cluster.reason;
    },
    (data) => {
      if (!data) return 3000;
      if (!data.cluster) return 0;
      const running = data.operations.some((o) => !OPERATION_ENDED.has(o.status));
      return running || !SETTLED.has(data.cluster.status) ? 1500 : 8000;
    },
    [tag],
  );
  const gone = Boolean(state.data && !state.data.cluster);
  const deleted = gone && state.data.operations.some((o) => o.type === 'DELETE_CLUSTER' && o.status === 'SUCCEEDED');
  const cluster = state.data && state.data.cluster;
  const confirmDelete = async () => {
    setDeleting(false);
    setActionError(null);
    try {
      await api.deleteCluster(tag);
      refresh();
    } catch (e) {
      setActionError(e);
    }
  };
  const Tab = {
    overview: () =>
      html`<${Overview} api=${api} cluster=${cluster} operations=${state.data.operations} region=${config.region || cluster.region} onChanged=${refresh} />`,
    'instance-groups': () => html`<${InstanceGroups} api=${api} tag=${tag} />`,
    nodes: () => html`<${Nodes} api=${api} tag=${tag} />`,
    events: () => html`<${Events} api=${api} tag=${tag} />`,
    features: () => html`<${Features} api=${api} tag=${tag} />`,
    'training-jobs': () => html`<${TrainingJobs} api=${api} tag=${tag} />`,
    inference: () => html`<${Inference} api=${api} tag=${tag} />`,
  }[tab];
  return html`<section aria-labelledby="page-title">
    <div class="page-head">
      <h1 id="page-title" ref=${heading} tabindex="-1">
        <span class="muted">Cluster</span> ${tag} ${cluster ? html`<${Badge} status=${cluster.status} />` : null}
      </h1>
      <div class="actions">
        <button type="button" onClick=${refresh}>Refresh</button>
        ${cluster && cluster.status !== 'DELETING' && cluster.status !== 'DELETED'
          ? html`<button type="button" class="danger" onClick=${() => setDeleting(true)}>Delete cluster</button>`
          : null}
      </div>
    </div>
    ${gone
      ? html`<p class="notice" role="status">
            ${deleted ? `Cluster ${tag} was deleted.` : `There is no cluster ${tag}.`} <a href="#/">Back to the clusters</a>
          </p>
          ${state.data.operations.length
            ? html`<${Operations} operations=${state.data.operations} region=${config.region} />`
            : null}`
      : html`<${ErrorNote} error=${actionError || state.error} onSignIn=${onSignIn} />`}
    ${cluster && !gone
      ? html`<nav class="tabs" aria-label="Cluster sections">
            ${TABS.map(
              ([id, label]) => html`<a href=${`#/clusters/${encodeURIComponent(tag)}/${id}`}
                aria-current=${id === tab ? 'page' : undefined}>${label}</a>`,
            )}
          </nav>
          ${Tab ? Tab() : html`<p>Unknown section ${tab}.</p>`}`
      : state.loading
        ? html`<p role="status">Loading ${tag}…</p>`
        : null}
    <${ConfirmDialog}
      open=${deleting}
      title=${`Delete cluster ${tag}?`}
      confirmLabel=${`Delete ${tag}`}
      danger=${true}
      onConfirm=${confirmDelete}
      onCancel=${() => setDeleting(false)}
    >
      <p>
        Deletes the HyperPod cluster, the EKS cluster, the network and everything else cluster ${tag} created, stage by
        stage in reverse order. Running jobs and endpoints on it stop.
      </p>
    <//>
  </section>`;
}

// ------------------------------------------------------------------ shell
function App({ config, rules }) {
  const [session, setSession] = useState(currentSession());
  const [notice, setNotice] = useState(null);
  const route = useRoute();
  const onSignIn = useCallback(() => {
    signOut();
    setNotice('Your credentials were refused or have expired: sign in again.');
    setSession(null);
  }, []);
  if (!session) {
    return html`<${SignIn} config=${config} notice=${notice} onSignedIn=${(s) => {
      setNotice(null);
      setSession(s);
    }} />`;
  }
  const api = makeApi(config, session.credentials);
  let page;
  if (route.page === 'create') page = html`<${CreateCluster} api=${api} rules=${rules} onSignIn=${onSignIn} />`;
  else if (route.page === 'cluster')
    page = html`<${ClusterPage} key=${route.tag} api=${api} config=${config} tag=${route.tag} tab=${route.tab} onSignIn=${onSignIn} />`;
  else page = html`<${ClusterList} api=${api} onSignIn=${onSignIn} />`;
  return html`<header class="top">
      <a class="brand" href="#/">InstantStart</a>
      <nav aria-label="Main">
        <a href="#/" aria-current=${route.page === 'list' ? 'page' : undefined}>Clusters</a>
        <a href="#/create" aria-current=${route.page === 'create' ? 'page' : undefined}>Create cluster</a>
      </nav>
      <div class="who">
        <span>${session.user} · ${config.region}</span>
        <button type="button" class="link-button" onClick=${() => {
          signOut();
          setSession(null);
        }}>Sign out</button>
      </div>
    </header>
    <main id="main" tabindex="-1">${page}</main>`;
}

async function start() {
  const root = document.getElementById('root');
  try {
    const [config, rules] = await Promise.all([
      loadConfig(),
      fetch('./rules.json', { cache: 'no-store' }).then((r) => r.json()),
    ]);
    root.textContent = '';
    render(html`<${App} config=${config} rules=${rules} />`, root);
  } catch (error) {
    root.textContent = `The console could not start: ${error.message}`;
  }
}

start();
