"""Simulated training operators: the HyperPod training operator (``HyperPodPyTorchJob``) and KubeRay's RayJob.

Both live with their operator: they act only while the operator's Deployment exists in the cluster
(``hp-training-operator-controller-manager``, which the EKS add-on
``amazon-sagemaker-hyperpod-training-operator`` installs when ACTIVE, together with the CRD; ``kuberay-operator``
for RayJob, installed by the product's kubeRay feature with the ``ray.io/v1`` CRDs). Without it a job is stored
and nothing happens, as on a real cluster whose operator is missing. A job labelled ``kueue.x-k8s.io/queue-name``
starts only once Kueue admits it (:mod:`instantstart_sandbox.kube.kueue`: never while its LocalQueue is missing).

HyperPodPyTorchJob (``sagemaker.amazonaws.com/v1``, https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-usage.html):

- one pod per replica, ``<job>-pod-<rank>`` with ranks counted across ``spec.replicaSpecs`` in order, from the
  replica's pod template, owned by the job (deleting the job deletes them), labelled :data:`JOB_NAME_LABEL`,
  :data:`REPLICA_SPEC_LABEL` and :data:`RANK_LABEL` (the sandbox's label names). The operator adds the node
  selector ``sagemaker.amazonaws.com/node-health-status: Schedulable`` so pods land only on healthy HyperPod
  nodes; the scheduler also honours the template's nodeSelector/affinity (instance type) and the
  ``nvidia.com/gpu`` / ``vpc.amazonaws.com/efa`` requests against node allocatable;
- ``status``: ``startTime``, ``conditions`` (``Created``; then one of ``Running``, ``Restarting`` (reason
  ``PodLevelRestart`` or ``JobLevelRestart``), ``Succeeded``, ``Failed`` is True), ``restartCount`` (every restart
  of the job's lifetime), ``restartStatus{currentEvalPeriod, restartCount, fullJobRestartCount}`` (the current
  ``evalPeriodSeconds`` window), ``jobPods`` (references), ``masterAddr``/``masterPort``, ``completionTime``;
- each pod "trains" for :func:`training_seconds` simulated seconds once Running (annotation
  :data:`TRAINING_SECONDS_ANNOTATION` on the job, else env ``SANDBOX_TRAINING_SECONDS`` of the pod's first
  container, else :data:`DEFAULT_TRAINING_SECONDS`) and writes deterministic log lines (rank, step, loss;
  :func:`training_log_lines`) timed over that run, then exits 0; the job Succeeds when every pod has;
- faults: a pod that fails (``fail_pod`` or exit code != 0), is deleted, or whose node turns NotReady or gets a
  health label other than ``Schedulable`` is a fault. The restart budget follows ``runPolicy``: with
  ``restartPolicy``, the faulty pods are restarted (pod-level restart) up to ``numRestartBeforeFullJobRestart``
  times, then all pods are replaced (full job restart) up to ``maxFullJobRestarts`` times, both counted per
  ``evalPeriodSeconds`` window; without ``restartPolicy`` every restart is a full job restart; ``jobMaxRetryCount``
  (0 when absent) caps all restarts of the job's lifetime. When the budget is spent the job is Failed with reason
  ``MaxRestartsExceeded`` (the harsher reading: a job without a ``runPolicy`` fails at its first fault).
  A pod-level restart of a pod whose container exited on a healthy node restarts the container in place, as the
  operator restarts "individual processes or containers": same pod and node, the pod's
  ``status.containerStatuses[].restartCount`` + 1 and the exit in ``lastState``. A pod whose node is unhealthy,
  NotReady or gone, a deleted pod, and every pod of a full job restart are replaced by a new pod (its own
  ``restartCount`` starts at 0, as any new pod's). The job's ``status.restartCount`` counts every restart.
  ``cleanPodPolicy`` (default ``All``; ``OnlyComplete``: the pods that completed; ``None``) is applied when the
  job ends; ``ttlSecondsAfterFinished`` (when > 0) deletes the job that long after it ended.

RayJob (``ray.io/v1``, https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html;
a name over :data:`MAX_RAYJOB_NAME` characters or not a DNS-1035 label is ``ValidationFailed`` as KubeRay's
``ValidateRayJobMetadata`` answers):
a RayCluster ``<rayjob>-raycluster`` from ``spec.rayClusterSpec`` (owned by the RayJob) with a head pod
``<cluster>-head`` and ``replicas`` worker pods ``<cluster>-<group>-worker-<i>`` per worker group (owned by the
RayCluster, labels ``ray.io/cluster``, ``ray.io/node-type``, ``ray.io/group``); ``status.jobDeploymentStatus``
Initializing -> Running -> Complete and ``status.jobStatus`` PENDING -> RUNNING -> SUCCEEDED; the entrypoint runs
for :func:`training_seconds` once every pod runs and writes its log on the head pod; then
``shutdownAfterJobFinishes`` deletes the RayCluster (and its pods) and ``ttlSecondsAfterFinished`` deletes the
RayJob that long after it finished.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from typing import TYPE_CHECKING, Any

from instantstart_sandbox.kube import kueue
from instantstart_sandbox.kube.controllers import EXIT_CODE_ANNOTATION, node_ready
from instantstart_sandbox.kube.errors import KubeError, not_found
from instantstart_sandbox.kube.patches import clone
from instantstart_sandbox.kube.store import _parse_time, rfc3339

if TYPE_CHECKING:
    from instantstart_sandbox.kube.controllers import SimulatedControllers
    from instantstart_sandbox.kube.resources import ResourceType
    from instantstart_sandbox.kube.store import KubeCluster

log = logging.getLogger(__name__)
Obj = dict[str, Any]

HPPJ_API_VERSION = "sagemaker.amazonaws.com/v1"
HPPJ_KIND = "HyperPodPyTorchJob"
OPERATOR_DEPLOYMENT = "hp-training-operator-controller-manager"
KUBERAY_DEPLOYMENT = "kuberay-operator"
MAX_RAYJOB_NAME = 47
"""KubeRay's ``MaxRayJobNameLength``: ``MaxRayClusterNameLength`` (53) minus the 6 characters of the RayCluster's
generated suffix."""
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
SCHEDULABLE = "Schedulable"
JOB_NAME_LABEL = "sagemaker.amazonaws.com/job-name"
REPLICA_SPEC_LABEL = "sagemaker.amazonaws.com/replica-spec-name"
RANK_LABEL = "sagemaker.amazonaws.com/rank"
TRAINING_SECONDS_ANNOTATION = "sandbox.instantstart.io/training-seconds"
TRAINING_SECONDS_ENV = "SANDBOX_TRAINING_SECONDS"
TRAINING_STEPS_ENV = "SANDBOX_TRAINING_STEPS"
DEFAULT_TRAINING_SECONDS = 300.0
DEFAULT_TRAINING_STEPS = 10
MASTER_PORT = "23456"
FAILED_REASON = "MaxRestartsExceeded"
_TERMINAL = ("Succeeded", "Failed")
_STATES = ("Running", "Restarting", "Succeeded", "Failed")


def _env(container: Obj, name: str) -> str | None:
    return next((e.get("value") for e in container.get("env") or [] if e.get("name") == name), None)


def _first_container(obj: Obj) -> Obj:
    spec = obj.get("spec") or {}
    if obj.get("kind") == HPPJ_KIND:
        reps = spec.get("replicaSpecs") or [{}]
        containers = (((reps[0].get("template") or {}).get("spec") or {}).get("containers")) or [{}]
    elif obj.get("kind") == "RayJob":
        head = ((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}
        containers = (head.get("spec") or {}).get("containers") or [{}]
    else:
        containers = (obj.get("spec") or {}).get("containers") or [{}]
    return dict(containers[0])


def training_seconds(obj: Obj) -> float:
    """Simulated seconds a job's workload runs: annotation :data:`TRAINING_SECONDS_ANNOTATION`, else env
    ``SANDBOX_TRAINING_SECONDS`` of the first container (job template or pod), else :data:`DEFAULT_TRAINING_SECONDS`."""
    for value in (
        ((obj.get("metadata") or {}).get("annotations") or {}).get(TRAINING_SECONDS_ANNOTATION),
        _env(_first_container(obj), TRAINING_SECONDS_ENV),
    ):
        try:
            if value is not None and float(value) >= 0:
                return float(value)
        except ValueError:
            continue
    return DEFAULT_TRAINING_SECONDS


def _training_steps(obj: Obj) -> int:
    value = _env(_first_container(obj), TRAINING_STEPS_ENV)
    return int(value) if value and value.isdigit() and int(value) > 0 else DEFAULT_TRAINING_STEPS


def step_loss(rank: int, step: int) -> float:
    """The deterministic loss rank ``rank`` logs at ``step`` (decreasing with the step)."""
    return round(2.5 * math.exp(-0.25 * step) + 0.3 + 0.001 * rank, 4)


def training_log_lines(job: str, rank: int, world_size: int, attempt: int, steps: int) -> list[str]:
    """The log lines one pod of a training job writes over its run: a start line, one ``step i/n loss x`` line
    per step, and a completion line (entry :math:`k` is written at ``k / (len - 1)`` of the run)."""
    lines = [
        f"[rank {rank}] HyperPodElasticAgent: starting job {job} attempt {attempt}: world_size={world_size} rank={rank}"
    ]
    lines += [f"[rank {rank}] step {i}/{steps} loss {step_loss(rank, i):.4f}" for i in range(1, steps + 1)]
    lines.append(f"[rank {rank}] training complete: {steps} steps, final loss {step_loss(rank, steps):.4f}")
    return lines


def _pod_spec(template: Obj) -> Obj:
    """A pod spec from a template, with resource quantities as strings (as the API server serves them)."""
    spec: Obj = clone(template.get("spec") or {})
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = c.get("resources") or {}
        for part in ("requests", "limits"):
            if isinstance(res.get(part), dict):
                res[part] = {k: str(v) for k, v in res[part].items()}
    return spec


def _cond(ctype: str, status: bool, reason: str, message: str, now: str) -> Obj:
    return {
        "type": ctype,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
        "lastProbeTime": now,
    }


def _container_restarts(pod: Obj) -> int:
    """``status.containerStatuses[0].restartCount`` of a pod (0 before it started)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return int(statuses[0].get("restartCount") or 0)


def _run_key(pod: Obj) -> str:
    """One container run of a pod: its uid and how many times its container restarted."""
    return f"{pod['metadata']['uid']}/{_container_restarts(pod)}"


def _state(status: Obj) -> str | None:
    for c in status.get("conditions") or []:
        if c.get("type") in _STATES and c.get("status") == "True":
            return str(c["type"])
    return None


class TrainingControllers:
    """The training operators of one cluster; created with its :class:`SimulatedControllers`.

    Args:
        cluster: the store.
        controllers: the cluster's controllers (scheduler, kubelet), whose timing and lock these share.
    """

    def __init__(self, cluster: KubeCluster, controllers: SimulatedControllers) -> None:
        self.cluster = cluster
        self.controllers = controllers
        self._started: set[str] = set()  # pod / RayJob uids whose run is under way
        self._busy: set[tuple[str, str, str]] = set()
        self._dirty: set[tuple[str, str, str]] = set()
        cluster.add_listener(self._on_event)

    # -- events -----------------------------------------------------------------------------------
    def _soon(self, stage: str, ns: str, name: str, fn: Any) -> None:
        self.controllers.schedule(stage, ns, name, self.controllers.delays["reconcile"], fn)

    def _on_event(self, etype: str, rt: ResourceType, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is None:
            return
        key, meta = rt.storage_key, obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        if key == ("sagemaker.amazonaws.com", "hyperpodpytorchjobs") and etype != "DELETED":
            self._soon("hppj", ns, name, self.reconcile_job)
        elif key == ("ray.io", "rayjobs") and etype != "DELETED":
            self._soon("rayjob", ns, name, self.reconcile_rayjob)
        elif key in (("", "pods"), ("ray.io", "rayclusters")):
            ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
            if ref is None:
                return
            if ref.get("kind") == HPPJ_KIND:
                self._soon("hppj", ns, ref["name"], self.reconcile_job)
            elif ref.get("kind") == "RayJob":
                self._soon("rayjob", ns, ref["name"], self.reconcile_rayjob)
            elif ref.get("kind") == "RayCluster":
                rc = self.cluster.peek("ray.io/v1", "RayCluster", ref["name"], ns) if self._has("RayCluster") else None
                owner = next((r for r in (rc or {"metadata": {}})["metadata"].get("ownerReferences") or []), None)
                if owner is not None and owner.get("kind") == "RayJob":
                    self._soon("rayjob", ns, owner["name"], self.reconcile_rayjob)
        elif key == ("", "nodes") or (key == ("apps", "deployments") and name == OPERATOR_DEPLOYMENT):
            for job in self._jobs():
                m = job["metadata"]
                self._soon("hppj", m["namespace"], m["name"], self.reconcile_job)
        elif key in (("kueue.x-k8s.io", "localqueues"), ("kueue.x-k8s.io", "clusterqueues")) or (
            key == ("apps", "deployments") and name == kueue.CONTROLLER
        ):
            for job in self._jobs():
                m = job["metadata"]
                self._soon("hppj", m["namespace"], m["name"], self.reconcile_job)
            for job in self.cluster.peek_list("ray.io/v1", "RayJob") if self._has("RayJob") else []:
                m = job["metadata"]
                self._soon("rayjob", m["namespace"], m["name"], self.reconcile_rayjob)
        elif key == ("apps", "deployments") and name == KUBERAY_DEPLOYMENT and self._has("RayJob"):
            for job in self.cluster.peek_list("ray.io/v1", "RayJob"):
                m = job["metadata"]
                self._soon("rayjob", m["namespace"], m["name"], self.reconcile_rayjob)

    def _has(self, kind: str) -> bool:
        api = HPPJ_API_VERSION if kind == HPPJ_KIND else "ray.io/v1"
        try:
            self.cluster.resource_type(api, kind)
        except KubeError:
            return False
        return True

    def _jobs(self) -> list[Obj]:
        return self.cluster.peek_list(HPPJ_API_VERSION, HPPJ_KIND) if self._has(HPPJ_KIND) else []

    def _operator(self, name: str) -> bool:
        return any(d["metadata"]["name"] == name for d in self.cluster.peek_list("apps/v1", "Deployment"))

    def _owned_pods(self, owner: Obj) -> dict[str, Obj]:
        uid = owner["metadata"]["uid"]
        return {
            p["metadata"]["name"]: p
            for p in self.cluster.peek_list("v1", "Pod", owner["metadata"]["namespace"])
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        }

    @staticmethod
    def _ref(owner: Obj) -> Obj:
        return {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    # -- HyperPodPyTorchJob -----------------------------------------------------------------------
    @staticmethod
    def _ranks(job: Obj) -> list[tuple[int, str, Obj]]:
        out: list[tuple[int, str, Obj]] = []
        for rs in (job.get("spec") or {}).get("replicaSpecs") or []:
            for _ in range(int(rs.get("replicas", 1))):
                out.append((len(out), str(rs.get("name", "")), rs.get("template") or {}))
        return out

    def _new_job_pod(self, job: Obj, rank: int, replica: str, template: Obj) -> None:
        name = job["metadata"]["name"]
        meta = template.get("metadata") or {}
        spec = _pod_spec(template)
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), HEALTH_LABEL: SCHEDULABLE}
        spec["restartPolicy"] = "Never"
        world = len(self._ranks(job))
        for c in spec.get("containers") or []:
            env = [e for e in c.get("env") or [] if e.get("name") not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")]
            c["env"] = [
                *env,
                {"name": "RANK", "value": str(rank)},
                {"name": "WORLD_SIZE", "value": str(world)},
                {"name": "MASTER_ADDR", "value": f"{name}-pod-0"},
            ]
        self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-pod-{rank}",
                    "namespace": job["metadata"]["namespace"],
                    "labels": {
                        **(meta.get("labels") or {}),
                        JOB_NAME_LABEL: name,
                        REPLICA_SPEC_LABEL: replica,
                        RANK_LABEL: str(rank),
                    },
                    "annotations": dict(meta.get("annotations") or {}),
                    "ownerReferences": [self._ref(job)],
                },
                "spec": spec,
            },
            OPERATOR_DEPLOYMENT,
        )

    def _pod_fault(self, pod: Obj) -> str | None:
        """Why a job pod counts as failed (its exit, its node's health), or None."""
        status = pod.get("status") or {}
        if status.get("phase") == "Failed":
            code = next(
                (
                    ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
                    for cs in status.get("containerStatuses") or []
                ),
                None,
            )
            return f"pod {pod['metadata']['name']} failed with exit code {code}"
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or status.get("phase") == "Succeeded":
            return None
        node = self.cluster.peek("v1", "Node", node_name)
        if node is None:
            return f"node {node_name} of pod {pod['metadata']['name']} is gone"
        health = (node["metadata"].get("labels") or {}).get(HEALTH_LABEL, SCHEDULABLE)
        if health != SCHEDULABLE:
            return f"node {node_name} of pod {pod['metadata']['name']} is {health}"
        if not node_ready(node):
            return f"node {node_name} of pod {pod['metadata']['name']} is NotReady"
        return None

    def _once(self, kind: str, ns: str, name: str, fn: Any) -> None:
        """Run ``fn(ns, name)``; a nested request for the same object (a change it made, without a clock)
        runs it again after it returns instead of inside it."""
        key = (kind, ns, name)
        if key in self._busy:
            self._dirty.add(key)
            return
        self._busy.add(key)
        try:
            while True:
                self._dirty.discard(key)
                fn(ns, name)
                if key not in self._dirty:
                    break
        finally:
            self._busy.discard(key)

    def reconcile_job(self, ns: str, name: str) -> None:
        """Converge one HyperPodPyTorchJob: pods, runs, faults and restarts, status (see the module docstring)."""
        self._once("hppj", ns, name, self._reconcile_job)

    def _reconcile_job(self, ns: str, name: str) -> None:
        job = self.cluster.peek(HPPJ_API_VERSION, HPPJ_KIND, name, ns) if self._has(HPPJ_KIND) else None
        if job is None or job["metadata"].get("deletionTimestamp") or not self._operator(OPERATOR_DEPLOYMENT):
            return
        if not (job.get("status") or {}).get("jobPods") and not kueue.admitted(self.cluster, self.controllers, job):
            return  # queued in Kueue and not admitted: suspended, no pod (kube/kueue.py)
        now_epoch = self.cluster.now()
        now = rfc3339(now_epoch)
        spec, status = job.get("spec") or {}, clone(job.get("status") or {})
        run_policy = spec.get("runPolicy") or {}
        state = _state(status)
        if state in _TERMINAL:
            self._finished(job, status, run_policy, now_epoch)
            return
        ranks = self._ranks(job)
        pods = self._owned_pods(job)
        if not status.get("startTime"):
            status.update(
                {
                    "startTime": now,
                    "conditions": [_cond("Created", True, "JobCreated", f"HyperPodPyTorchJob {name} is created", now)],
                    "restartCount": 0,
                    "restartStatus": {"currentEvalPeriod": int(now_epoch), "restartCount": 0, "fullJobRestartCount": 0},
                }
            )
        started = bool(status.get("jobPods"))
        faults = [f for p in pods.values() if (f := self._pod_fault(p))]
        missing = [(r, rep, t) for r, rep, t in ranks if f"{name}-pod-{r}" not in pods]
        if started and missing:
            faults += [f"pod {name}-pod-{r} was deleted" for r, _, _ in missing]
        if faults:
            self._restart(job, status, run_policy, pods, ranks, faults, now_epoch)
            return
        for rank, replica, template in missing:
            self._new_job_pod(job, rank, replica, template)
        pods = self._owned_pods(job)
        status["jobPods"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": n, "namespace": ns, "uid": p["metadata"]["uid"]}
            for n, p in sorted(pods.items(), key=lambda kv: int(kv[1]["metadata"]["labels"].get(RANK_LABEL, 0)))
        ]
        rank0 = pods.get(f"{name}-pod-0")
        if rank0 is not None and (rank0.get("status") or {}).get("podIP"):
            status["masterAddr"] = rank0["status"]["podIP"]
            status["masterPort"] = MASTER_PORT
        phases = [(p.get("status") or {}).get("phase") for p in pods.values()]
        for pod in pods.values():
            if (pod.get("status") or {}).get("phase") == "Running":
                self._start_run(job, pod, len(ranks))
        if len(pods) == len(ranks) and ranks and all(ph == "Succeeded" for ph in phases):
            self._transition(status, "Succeeded", "JobSucceeded", f"HyperPodPyTorchJob {name} succeeded", now)
            status["completionTime"] = now
            self.controllers.event(job, "JobSucceeded", f"HyperPodPyTorchJob {name} succeeded", OPERATOR_DEPLOYMENT)
        elif (
            state != "Running"
            and len(pods) == len(ranks)
            and ranks
            and all(ph in ("Running", "Succeeded") for ph in phases)
        ):
            self._transition(status, "Running", "JobRunning", f"all {len(ranks)} pods are running", now)
        self.controllers.set_status(job, status, OPERATOR_DEPLOYMENT)
        if _state(status) in _TERMINAL:
            self._soon("hppj", ns, name, self.reconcile_job)

    @staticmethod
    def _transition(status: Obj, state: str, reason: str, message: str, now: str) -> None:
        conds = [c for c in status.get("conditions") or [] if c.get("type") != state]
        for c in conds:
            if c.get("type") in _STATES and c.get("status") == "True":
                c.update({"status": "False", "lastTransitionTime": now})
        status["conditions"] = [*conds, _cond(state, True, reason, message, now)]

    def _restart(
        self,
        job: Obj,
        status: Obj,
        run_policy: Obj,
        pods: dict[str, Obj],
        ranks: list[tuple[int, str, Obj]],
        faults: list[str],
        now_epoch: float,
    ) -> None:
        name, now = job["metadata"]["name"], rfc3339(now_epoch)
        policy = run_policy.get("restartPolicy")
        window = status.setdefault("restartStatus", {"currentEvalPeriod": int(now_epoch)})
        window.setdefault("restartCount", 0)
        window.setdefault("fullJobRestartCount", 0)
        if policy and now_epoch - float(window.get("currentEvalPeriod", now_epoch)) >= float(
            policy.get("evalPeriodSeconds", 0) or math.inf
        ):
            window.update({"currentEvalPeriod": int(now_epoch), "restartCount": 0, "fullJobRestartCount": 0})
        total = int(status.get("restartCount", 0))
        max_total = run_policy.get("jobMaxRetryCount")
        what = "; ".join(sorted(faults))
        kind: str | None = None
        if max_total is not None and total >= int(max_total):
            kind = None
        elif policy:
            if window["restartCount"] < int(policy.get("numRestartBeforeFullJobRestart", 0) or 0):
                kind = "PodLevelRestart"
            elif window["fullJobRestartCount"] < int(policy.get("maxFullJobRestarts", 0) or 0):
                kind = "JobLevelRestart"
        elif max_total is not None:
            kind = "JobLevelRestart"
        if kind is None:
            message = f"restart budget exhausted after {total} restarts: {what}"
            self._transition(status, "Failed", FAILED_REASON, message, now)
            status["completionTime"] = now
            self.controllers.set_status(job, status, OPERATOR_DEPLOYMENT)
            self.controllers.event(job, FAILED_REASON, message, OPERATOR_DEPLOYMENT, warning=True)
            self._soon("hppj", job["metadata"]["namespace"], name, self.reconcile_job)
            return
        status["restartCount"] = total + 1
        if kind == "PodLevelRestart":
            window["restartCount"] += 1
            redo = {
                r for r, _, _ in ranks if (p := pods.get(f"{name}-pod-{r}")) is None or self._pod_fault(p) is not None
            }
        else:
            window["restartCount"] = 0
            window["fullJobRestartCount"] += 1
            redo = {r for r, _, _ in ranks}
        message = f"{kind} {status['restartCount']}: {what}"
        self._transition(status, "Restarting", kind, message, now)
        self.controllers.set_status(job, status, OPERATOR_DEPLOYMENT)
        self.controllers.event(job, kind, message, OPERATOR_DEPLOYMENT, warning=True)
        ns = job["metadata"]["namespace"]
        for rank, replica, template in ranks:
            if rank not in redo:
                continue
            old = pods.get(f"{name}-pod-{rank}")
            if old is not None and kind == "PodLevelRestart" and self._restartable_in_place(old):
                self._restart_container(old, now)
                continue
            if old is not None:
                self._started.discard(_run_key(old))
                self.cluster.delete("v1", "Pod", old["metadata"]["name"], ns, missing_ok=True)
            self._new_job_pod(job, rank, replica, template)

    def _restartable_in_place(self, pod: Obj) -> bool:
        """A pod whose container exited (Failed) on a node that is still Ready and ``Schedulable``: the operator
        restarts its container in place instead of replacing the pod."""
        if (pod.get("status") or {}).get("phase") != "Failed":
            return False
        node = self.cluster.peek("v1", "Node", (pod.get("spec") or {}).get("nodeName") or "")
        if node is None or not node_ready(node):
            return False
        return bool((node["metadata"].get("labels") or {}).get(HEALTH_LABEL, SCHEDULABLE) == SCHEDULABLE)

    def _restart_container(self, pod: Obj, now: str) -> None:
        """Restart the containers of ``pod`` where it is, as the kubelet does: ``restartCount`` + 1, the exit in
        ``lastState``, Running again (same pod, uid and node)."""
        status = clone(pod.get("status") or {})
        status["phase"] = "Running"
        for cs in status.get("containerStatuses") or []:
            cs.update(
                {
                    "restartCount": int(cs.get("restartCount") or 0) + 1,
                    "lastState": dict(cs.get("state") or {}),
                    "state": {"running": {"startedAt": now}},
                    "ready": True,
                    "started": True,
                }
            )
        for c in status.get("conditions") or []:
            if c.get("type") in ("Ready", "ContainersReady", "PodReadyToStartContainers"):
                c.update({"status": "True", "lastTransitionTime": now})
                c.pop("reason", None)
        self.controllers.set_status(pod, status, "kubelet")
        for c in (pod.get("spec") or {}).get("containers") or []:
            self.controllers.event(pod, "Started", f"Started container {c['name']}", "kubelet")

    def _start_run(self, job: Obj, pod: Obj, world: int) -> None:
        uid, key = pod["metadata"]["uid"], _run_key(pod)
        if key in self._started:
            return
        self._started.add(key)
        attempt_of_pod = _container_restarts(pod)
        seconds = training_seconds(job)
        steps = _training_steps(job)
        rank = int(pod["metadata"]["labels"].get(RANK_LABEL, 0))
        attempt = int(job.get("status", {}).get("restartCount", 0)) + 1
        begin = self.cluster.now()
        lines = training_log_lines(job["metadata"]["name"], rank, world, attempt, steps)
        entries = [(begin + seconds * k / (len(lines) - 1), line) for k, line in enumerate(lines)]
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name", "")
        self.cluster.set_pod_log_entries(ns, name, container, entries)
        self.controllers.schedule(
            f"train-{key}", ns, name, seconds, lambda n, p: self._end_run(n, p, uid, 0, attempt_of_pod)
        )

    def _end_run(self, ns: str, name: str, uid: str, exit_code: int, restarts: int | None = None) -> None:
        """End the run of pod ``uid`` (of its container run ``restarts``, when given: a run restarted since
        is not ended by the timer of the one before)."""
        pod = self.cluster.peek("v1", "Pod", name, ns)
        if pod is None or pod["metadata"]["uid"] != uid or (pod.get("status") or {}).get("phase") != "Running":
            return
        if restarts is not None and _container_restarts(pod) != restarts:
            return
        if exit_code:
            container = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name", "")
            now = self.cluster.now()
            self.cluster.truncate_pod_log(ns, name, container, now)
            rank = (pod["metadata"].get("labels") or {}).get(RANK_LABEL, "0")
            self.cluster.append_pod_log(
                ns, name, container, f"[rank {rank}] ERROR: worker exited with code {exit_code}"
            )
        self.cluster.patch(
            "v1",
            "Pod",
            name,
            ns,
            {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: str(exit_code)}}},
            field_manager="kubelet",
        )
        self.controllers.finish_pod(ns, name)

    def fail_pod(self, namespace: str, pod: str, exit_code: int = 1) -> None:
        """Make a running pod's container exit with ``exit_code`` now (a training process crash): the pod
        turns Failed, its log ends with an error line, and its job's operator restarts it per ``runPolicy``.

        Raises:
            KubeError: 404 when the pod does not exist; 409 when it is not Running.
        """
        with self.controllers._lock:
            found = self.cluster.peek("v1", "Pod", pod, namespace)
            if found is None:
                raise not_found("pods", pod)
            if (found.get("status") or {}).get("phase") != "Running":
                raise KubeError(409, f"pod {pod} is not Running", "Conflict")
            self._end_run(namespace, pod, found["metadata"]["uid"], exit_code or 1)

    def _finished(self, job: Obj, status: Obj, run_policy: Obj, now_epoch: float) -> None:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        policy = run_policy.get("cleanPodPolicy", "All")
        for pod in self._owned_pods(job).values():
            phase = (pod.get("status") or {}).get("phase")
            if policy == "All" or (policy == "OnlyComplete" and phase in _TERMINAL):
                self._started.discard(_run_key(pod))
                self.cluster.delete("v1", "Pod", pod["metadata"]["name"], ns, missing_ok=True)
        ttl = run_policy.get("ttlSecondsAfterFinished")
        done = status.get("completionTime")
        if isinstance(ttl, int) and ttl > 0 and done:
            left = _parse_time(done) + ttl - now_epoch
            if left <= 0:
                self.cluster.delete(HPPJ_API_VERSION, HPPJ_KIND, name, ns, missing_ok=True)
            else:
                self.controllers.schedule("hppj-ttl", ns, name, left, self.reconcile_job)

    # -- RayJob -------------------------------------------------------------------------------------
    def _ray_pods(self, rayjob: Obj, cluster_name: str) -> list[tuple[str, str, str, Obj]]:
        """(pod name, node type, group, template) of the RayCluster of ``rayjob``."""
        spec = (rayjob.get("spec") or {}).get("rayClusterSpec") or {}
        out = [(f"{cluster_name}-head", "head", "headgroup", (spec.get("headGroupSpec") or {}).get("template") or {})]
        for group in spec.get("workerGroupSpecs") or []:
            gname = str(group.get("groupName", "workers"))
            count = int(group.get("replicas", group.get("minReplicas", 1)) or 0)
            for i in range(count):
                out.append((f"{cluster_name}-{gname}-worker-{i}", "worker", gname, group.get("template") or {}))
        return out

    def reconcile_rayjob(self, ns: str, name: str) -> None:
        """Converge one RayJob: its RayCluster and pods, the job run, shutdown and TTL (module docstring)."""
        self._once("rayjob", ns, name, self._reconcile_rayjob)

    def _reconcile_rayjob(self, ns: str, name: str) -> None:
        if not self._has("RayJob") or not self._operator(KUBERAY_DEPLOYMENT):
            return
        job = self.cluster.peek("ray.io/v1", "RayJob", name, ns)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        if self._invalid_rayjob(job):
            return
        if not (job.get("status") or {}).get("rayClusterName") and not kueue.admitted(
            self.cluster, self.controllers, job
        ):
            return  # queued in Kueue and not admitted: suspended, no Ray cluster (kube/kueue.py)
        spec, status = job.get("spec") or {}, clone(job.get("status") or {})
        now_epoch = self.cluster.now()
        now = rfc3339(now_epoch)
        cluster_name = status.get("rayClusterName") or f"{name}-raycluster"
        if status.get("jobDeploymentStatus") in ("Complete", "Failed"):
            if spec.get("shutdownAfterJobFinishes"):
                if self._has("RayCluster"):
                    self.cluster.delete("ray.io/v1", "RayCluster", cluster_name, ns, missing_ok=True)
                for pod in self._owned_pods(job).values():
                    self.cluster.delete("v1", "Pod", pod["metadata"]["name"], ns, missing_ok=True)
                ttl = spec.get("ttlSecondsAfterFinished")
                if isinstance(ttl, int) and ttl >= 0 and status.get("endTime"):
                    left = _parse_time(status["endTime"]) + ttl - now_epoch
                    if left <= 0:
                        self.cluster.delete("ray.io/v1", "RayJob", name, ns, missing_ok=True)
                    else:
                        self.controllers.schedule("rayjob-ttl", ns, name, left, self.reconcile_rayjob)
            return
        if not status.get("jobDeploymentStatus"):
            digest = hashlib.sha256(job["metadata"]["uid"].encode()).hexdigest()[:8]
            status.update(
                {
                    "jobDeploymentStatus": "Initializing",
                    "jobStatus": "PENDING",
                    "jobId": f"{name}-{digest}",
                    "rayClusterName": cluster_name,
                    "startTime": now,
                }
            )
        owner = job
        if self._has("RayCluster"):
            rc = self.cluster.peek("ray.io/v1", "RayCluster", cluster_name, ns)
            if rc is None:
                rc = self.cluster.create(
                    {
                        "apiVersion": "ray.io/v1",
                        "kind": "RayCluster",
                        "metadata": {
                            "name": cluster_name,
                            "namespace": ns,
                            "labels": {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": name},
                            "ownerReferences": [self._ref(job)],
                        },
                        "spec": clone(spec.get("rayClusterSpec") or {}),
                    },
                    KUBERAY_DEPLOYMENT,
                )
            owner = rc
        pods = self._owned_pods(owner)
        wanted = self._ray_pods(job, cluster_name)
        for pod_name, node_type, group, template in wanted:
            if pod_name in pods:
                continue
            meta = template.get("metadata") or {}
            self.cluster.create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": pod_name,
                        "namespace": ns,
                        "labels": {
                            **(meta.get("labels") or {}),
                            "ray.io/cluster": cluster_name,
                            "ray.io/node-type": node_type,
                            "ray.io/group": group,
                        },
                        "annotations": dict(meta.get("annotations") or {}),
                        "ownerReferences": [self._ref(owner)],
                    },
                    "spec": _pod_spec(template),
                },
                KUBERAY_DEPLOYMENT,
            )
        pods = self._owned_pods(owner)
        running = len(pods) == len(wanted) and all(
            (p.get("status") or {}).get("phase") == "Running" for p in pods.values()
        )
        if owner is not job:
            rc_status = {
                "state": "ready" if running else "",
                "desiredWorkerReplicas": len(wanted) - 1,
                "availableWorkerReplicas": sum(
                    1
                    for p in pods.values()
                    if p["metadata"]["labels"].get("ray.io/node-type") == "worker"
                    and (p.get("status") or {}).get("phase") == "Running"
                ),
            }
            rc_status = {k: v for k, v in rc_status.items() if v != ""}
            self.controllers.set_status(owner, rc_status, KUBERAY_DEPLOYMENT)
        if running and status["jobDeploymentStatus"] == "Initializing":
            status.update({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"})
            self._start_ray_run(job, pods[f"{cluster_name}-head"])
        self.controllers.set_status(job, status, KUBERAY_DEPLOYMENT)

    def _invalid_rayjob(self, job: Obj) -> bool:
        """KubeRay's ``ValidateRayJobMetadata``: a name over :data:`MAX_RAYJOB_NAME` characters or not a DNS-1035
        label is ``jobDeploymentStatus: ValidationFailed`` with a Warning event ``InvalidRayJobMetadata``."""
        name = str(job["metadata"]["name"])
        if len(name) > MAX_RAYJOB_NAME:
            message = f"The RayJob metadata is invalid: RayJob name should be no more than {MAX_RAYJOB_NAME} characters"
        elif not _DNS1035.fullmatch(name):
            message = "The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label"
        else:
            return False
        status = clone(job.get("status") or {})
        if status.get("jobDeploymentStatus") != "ValidationFailed":
            status.update({"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed", "message": message})
            self.controllers.set_status(job, status, KUBERAY_DEPLOYMENT)
            self.controllers.event(job, "InvalidRayJobMetadata", message, KUBERAY_DEPLOYMENT, warning=True)
        return True

    def _start_ray_run(self, job: Obj, head: Obj) -> None:
        uid = job["metadata"]["uid"]
        if uid in self._started:
            return
        self._started.add(uid)
        seconds, steps = training_seconds(job), _training_steps(job)
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        entrypoint = (job.get("spec") or {}).get("entrypoint", "")
        lines = [f"[ray] job {name} submitted: {entrypoint}"]
        lines += [f"[ray] (TaskRunner) step {i}/{steps} loss {step_loss(0, i):.4f}" for i in range(1, steps + 1)]
        lines.append(f"[ray] job {name} succeeded")
        begin = self.cluster.now()
        container = ((head.get("spec") or {}).get("containers") or [{}])[0].get("name", "")
        self.cluster.set_pod_log_entries(
            ns,
            head["metadata"]["name"],
            container,
            [(begin + seconds * k / (len(lines) - 1), line) for k, line in enumerate(lines)],
        )
        self.controllers.schedule("rayjob-done", ns, name, seconds, lambda n, p: self._ray_done(n, p, uid))

    def _ray_done(self, ns: str, name: str, uid: str) -> None:
        job = self.cluster.peek("ray.io/v1", "RayJob", name, ns)
        if job is None or job["metadata"]["uid"] != uid:
            return
        status = clone(job.get("status") or {})
        status.update(
            {"jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Complete", "endTime": rfc3339(self.cluster.now())}
        )
        self.controllers.set_status(job, status, KUBERAY_DEPLOYMENT)
        self._soon("rayjob", ns, name, self.reconcile_rayjob)
