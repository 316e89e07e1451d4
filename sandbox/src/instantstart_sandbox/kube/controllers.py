"""Simulated cluster controllers: what makes the emulated API server *behave* like a cluster.

They react to store changes (level-based: each reconcile reads the current state and converges):

- scheduler + kubelet: pods get a fitting Ready node (nodeSelector, required node affinity, taints,
  resource requests, bound PVCs), then run (Running/Ready); Job pods (or pods annotated
  ``sandbox.instantstart.io/run-seconds``) complete, with ``sandbox.instantstart.io/exit-code``;
- Deployment -> ReplicaSet -> Pods, StatefulSet (ordinal pods, volumeClaimTemplates),
  DaemonSet (one pod per eligible Ready node), Job (pods until ``completions`` succeed) and their
  status/conditions;
- PV controller: PVCs bind to the PV named in ``spec.volumeName`` or to a fitting Available PV,
  dynamic provisioning for StorageClasses, reclaim on PVC deletion; pod GC for deleted nodes.

With a :class:`~instantstart_sandbox.clock.SimClock` each step happens after a small simulated delay
(:data:`DEFAULT_DELAYS`), otherwise immediately in the thread that made the change.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from instantstart_sandbox.kube.errors import KubeError
from instantstart_sandbox.kube.patches import clone
from instantstart_sandbox.kube.quantity import parse_quantity
from instantstart_sandbox.kube.resources import ResourceType
from instantstart_sandbox.kube.selectors import Requirement, match_labels, requirements_from_label_selector

if TYPE_CHECKING:
    from instantstart_sandbox.clock import SimClock
    from instantstart_sandbox.kube.store import KubeCluster

log = logging.getLogger(__name__)
Obj = dict[str, Any]

RUN_SECONDS_ANNOTATION = "sandbox.instantstart.io/run-seconds"
EXIT_CODE_ANNOTATION = "sandbox.instantstart.io/exit-code"

# Simulated seconds each step takes when a clock is given.
DEFAULT_DELAYS = {
    "reconcile": 0.5,  # controller reaction (Deployment -> ReplicaSet -> Pods, status)
    "schedule": 1.0,  # scheduler binding a pod to a node
    "start": 4.0,  # image pull + container start
    "job_run": 10.0,  # a Job pod's run time
    "bind": 1.0,  # PV controller binding / provisioning
}
_HASH_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_DS_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
_KCM = "kube-controller-manager"


def template_hash(template: Any) -> str:
    """A stable 10-character hash of a pod template (the ``pod-template-hash`` label)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_HASH_CHARS[b % len(_HASH_CHARS)] for b in digest[:10])


def node_ready(node: Obj) -> bool:
    """Whether the node's ``Ready`` condition is ``True``."""
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _match_node_term(term: Obj, node: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    ops = {
        "In": "in",
        "NotIn": "notin",
        "Exists": "exists",
        "DoesNotExist": "!exists",
        "Gt": "gt",
        "Lt": "lt",
    }
    reqs = [
        Requirement(e["key"], ops[e["operator"]], tuple(e.get("values") or ()))
        for e in term.get("matchExpressions") or []
    ]
    if not match_labels(reqs, labels):
        return False
    for f in term.get("matchFields") or []:
        if f.get("key") == "metadata.name":
            inside = node["metadata"]["name"] in (f.get("values") or [])
            if inside != (f.get("operator") == "In"):
                return False
    return bool(reqs or term.get("matchFields"))


def node_matches(pod_spec: Obj, node: Obj) -> str | None:
    """Why ``node`` cannot take a pod with ``pod_spec`` (selector/affinity/taints), or ``None``."""
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return "node(s) didn't match Pod's node affinity/selector"
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if terms and not any(_match_node_term(t, node) for t in terms):
        return "node(s) didn't match Pod's node affinity/selector"
    tolerations = pod_spec.get("tolerations") or []
    taints = list((node.get("spec") or {}).get("taints") or [])
    if (node.get("spec") or {}).get("unschedulable"):
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    return None


def pod_requests(pod_spec: Obj) -> dict[str, Decimal]:
    """Summed container requests (limits stand in for missing requests), plus one ``pods`` slot."""
    total: dict[str, Decimal] = {"pods": Decimal(1)}
    for c in pod_spec.get("containers") or []:
        res = c.get("resources") or {}
        merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, qty in merged.items():
            try:
                total[name] = total.get(name, Decimal(0)) + parse_quantity(qty)
            except ValueError:
                continue
    return total


def _owner(obj: Obj) -> Obj | None:
    return next((r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


def _owner_ref(owner: Obj) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod_ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _conditions(old: list[Obj] | None, new: list[tuple[str, str, str, str]], now: str, update_time: bool) -> list[Obj]:
    """Conditions keeping ``lastTransitionTime`` (and ``lastUpdateTime``) when nothing changed."""
    prev = {c["type"]: c for c in old or []}
    out = []
    for ctype, status, reason, message in new:
        p = prev.get(ctype)
        same = p is not None and (p.get("status"), p.get("reason"), p.get("message")) == (
            status,
            reason,
            message,
        )
        cond: Obj = {"type": ctype, "status": status, "reason": reason, "message": message}
        if update_time:
            cond["lastUpdateTime"] = p.get("lastUpdateTime", now) if same and p else now
        cond["lastTransitionTime"] = (
            p.get("lastTransitionTime", now) if p is not None and p.get("status") == status else now
        )
        out.append(cond)
    return out


def _nonzero(status: Obj, *keys: str) -> Obj:
    """Drop ``omitempty`` integer fields that are zero, like the real API does."""
    for key in keys:
        if not status.get(key):
            status.pop(key, None)
    return status


POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: dict[str, Any]) -> int:
    """The pod's ``controller.kubernetes.io/pod-deletion-cost`` (an int32; missing or invalid: 0)."""
    raw = (pod["metadata"].get("annotations") or {}).get(POD_DELETION_COST)
    try:
        return int(str(raw)) if raw is not None else 0
    except ValueError:
        return 0


class SimulatedControllers:
    """The controllers of one cluster; created by :meth:`KubeApiServer.add_cluster`.

    Args:
        cluster: the store to watch and drive.
        clock: when given, every step is delayed by :data:`DEFAULT_DELAYS` simulated seconds.
        delays: overrides of :data:`DEFAULT_DELAYS`.
    """

    def __init__(
        self, cluster: KubeCluster, clock: SimClock | None = None, delays: dict[str, float] | None = None
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.delays = {**DEFAULT_DELAYS, **(delays or {})}
        self._lock = threading.RLock()
        self._pending: set[tuple[str, str, str]] = set()
        self._stopped = False
        self._next_ip = 0
        self._events: dict[tuple[str, str, str], str] = {}
        self.image_pull_checks: list[Callable[[Obj, Obj], str | None]] = []
        """``(pod, container) -> error text | None``: add-on hooks that make an image pull fail (ErrImagePull)."""
        self.readiness_gates: list[Callable[[Obj], bool]] = []
        """``pod -> True`` when an add-on controller marks the pod Ready later (:meth:`set_pod_ready`)."""
        self.run_owners: list[Callable[[Obj], bool]] = []
        """``pod -> True`` when an add-on controller ends the pod's run itself (no Job run-time timer)."""
        cluster.add_listener(self._on_event)

    def stop(self) -> None:
        """Stop reacting (pending timers become no-ops)."""
        self._stopped = True

    # -- scheduling of work -------------------------------------------------------------------
    def _later(self, stage: str, ns: str, name: str, delay: float, fn: Callable[[str, str], None]) -> None:
        if self._stopped:
            return
        token = (stage, ns, name)
        if self.clock is None:
            self._run(token, fn)
            return
        with self._lock:
            if token in self._pending:
                return
            self._pending.add(token)
        self.clock.call_later(delay, lambda: self._run(token, fn))

    def schedule(self, stage: str, ns: str, name: str, delay: float, fn: Callable[[str, str], None]) -> None:
        """Run ``fn(ns, name)`` after ``delay`` simulated seconds (at once without a clock), under the
        controllers' lock; a second request for the same ``(stage, ns, name)`` while one is pending is
        dropped. For add-on controllers (:mod:`instantstart_sandbox.kube.training`)."""
        self._later(stage, ns, name, delay, fn)

    def _run(self, token: tuple[str, str, str], fn: Callable[[str, str], None]) -> None:
        with self._lock:
            self._pending.discard(token)
            if self._stopped:
                return
            try:
                fn(token[1], token[2])
            except KubeError as exc:
                # A concurrent change (404/409) is reconciled by the event it produced.
                log.debug("sandbox controller %s: %s", token, exc.message)

    def _on_event(self, etype: str, rt: ResourceType, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is None:
            return
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        key = rt.storage_key
        d = self.delays
        deleted = etype == "DELETED"
        if key == ("apps", "deployments") and not deleted:
            self._later("deployment", ns, name, d["reconcile"], self.reconcile_deployment)
        elif key == ("apps", "replicasets"):
            if not deleted:
                self._later("replicaset", ns, name, d["reconcile"], self.reconcile_replicaset)
            self._owner_changed(obj)
        elif key == ("apps", "statefulsets") and not deleted:
            self._later("statefulset", ns, name, d["reconcile"], self.reconcile_statefulset)
        elif key == ("apps", "daemonsets") and not deleted:
            self._later("daemonset", ns, name, d["reconcile"], self.reconcile_daemonset)
        elif key == ("batch", "jobs") and not deleted:
            self._later("job", ns, name, d["reconcile"], self.reconcile_job)
        elif key == ("", "pods"):
            self._on_pod(obj, deleted)
        elif key == ("", "nodes"):
            self._on_node(obj, deleted)
        elif key in (
            ("", "persistentvolumeclaims"),
            ("", "persistentvolumes"),
            ("storage.k8s.io", "storageclasses"),
        ):
            self._later("volumes", "", "", d["bind"], self.reconcile_volumes)
            if key == ("", "persistentvolumeclaims") and (obj.get("status") or {}).get("phase") == "Bound":
                self._reschedule_pending()

    def _owner_changed(self, obj: Obj) -> None:
        ref = _owner(obj)
        if ref is None:
            return
        ns = obj["metadata"].get("namespace", "")
        handlers = {
            "Deployment": ("deployment", self.reconcile_deployment),
            "ReplicaSet": ("replicaset", self.reconcile_replicaset),
            "StatefulSet": ("statefulset", self.reconcile_statefulset),
            "DaemonSet": ("daemonset", self.reconcile_daemonset),
            "Job": ("job", self.reconcile_job),
        }
        if ref.get("kind") in handlers:
            stage, fn = handlers[ref["kind"]]
            self._later(stage, ns, ref["name"], self.delays["reconcile"], fn)

    def _on_pod(self, pod: Obj, deleted: bool) -> None:
        self._owner_changed(pod)
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        ns, name = meta.get("namespace", ""), meta["name"]
        if deleted:
            self._reschedule_pending()
            return
        if meta.get("deletionTimestamp") or _terminal(pod):
            return
        phase = status.get("phase")
        if not spec.get("nodeName"):
            self._later("schedule", ns, name, self.delays["schedule"], self.schedule_pod)
        elif phase in (None, "Pending"):
            self._later("start", ns, name, self.delays["start"], self.start_pod)
        elif phase == "Running" and self._run_seconds(pod) is not None:
            self._later("finish", ns, name, self._run_seconds(pod) or 0.0, self.finish_pod)

    def _on_node(self, node: Obj, deleted: bool) -> None:
        for ds in self.cluster.peek_list("apps/v1", "DaemonSet"):
            m = ds["metadata"]
            self._later("daemonset", m["namespace"], m["name"], self.delays["reconcile"], self.reconcile_daemonset)
        if deleted:
            # pod GC: pods bound to a node that no longer exists are deleted
            for pod in self.cluster.peek_list("v1", "Pod", field_selector=f"spec.nodeName={node['metadata']['name']}"):
                self.cluster.delete("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], missing_ok=True)
        else:
            self._reschedule_pending()
            name = node["metadata"]["name"]
            if node_ready(node):
                for pod in self.cluster.peek_list(
                    "v1", "Pod", field_selector=f"spec.nodeName={name},status.phase=Pending"
                ):
                    m = pod["metadata"]
                    self._later("start", m["namespace"], m["name"], self.delays["start"], self.start_pod)

    def _reschedule_pending(self) -> None:
        for pod in self.cluster.peek_list("v1", "Pod", field_selector="spec.nodeName=,status.phase=Pending"):
            m = pod["metadata"]
            if not m.get("deletionTimestamp"):
                self._later("schedule", m["namespace"], m["name"], self.delays["schedule"], self.schedule_pod)

    def _run_seconds(self, pod: Obj) -> float | None:
        if any(owner(pod) for owner in self.run_owners):
            return None
        value = (pod["metadata"].get("annotations") or {}).get(RUN_SECONDS_ANNOTATION)
        if value is not None:
            try:
                return float(value)
            except ValueError:
                return None
        ref = _owner(pod)
        return self.delays["job_run"] if ref and ref.get("kind") == "Job" else None

    def event(self, obj: Obj, reason: str, message: str, component: str, warning: bool = False) -> None:
        """Record a core/v1 Event about ``obj`` (repeats of the same reason and message count up)."""
        meta = obj["metadata"]
        ns = meta.get("namespace") or "default"
        now = self.cluster.timestamp()
        key = (meta["uid"], reason, message)
        existing = self._events.get(key)
        if existing is not None:
            current = self.cluster.peek("v1", "Event", existing, ns)
            if current is not None:
                self.cluster.patch(
                    "v1",
                    "Event",
                    existing,
                    ns,
                    {"count": int(current.get("count", 1)) + 1, "lastTimestamp": now},
                    field_manager=component,
                )
                return
        involved = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if meta.get("namespace"):
            involved["namespace"] = meta["namespace"]
        created = self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{meta['name']}.", "namespace": ns},
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "type": "Warning" if warning else "Normal",
                "source": {"component": component},
                "reportingComponent": component,
                "reportingInstance": "",
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            },
            component,
        )
        self._events[key] = created["metadata"]["name"]

    def set_status(self, obj: Obj, status: Obj, manager: str = _KCM) -> None:
        """Write ``status`` on ``obj`` through its status subresource as ``manager`` (no write when unchanged);
        the one status writer of every sandbox controller (built-in kinds, training and inference operators)."""
        if obj.get("status") == status:
            return
        meta = obj["metadata"]
        self.cluster.patch(
            obj["apiVersion"],
            obj["kind"],
            meta["name"],
            meta.get("namespace"),
            [{"op": "add", "path": "/status", "value": status}],
            "json",
            manager,
            "status",
        )

    # -- scheduler and kubelet ----------------------------------------------------------------
    def _node_usage(self) -> dict[str, dict[str, Decimal]]:
        usage: dict[str, dict[str, Decimal]] = {}
        for pod in self.cluster.peek_list("v1", "Pod"):
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or _terminal(pod):
                continue
            acc = usage.setdefault(node, {})
            for res, qty in pod_requests(pod.get("spec") or {}).items():
                acc[res] = acc.get(res, Decimal(0)) + qty
        return usage

    def pick_node(self, pod: Obj) -> tuple[str | None, str]:
        """The node the scheduler would choose for ``pod`` and, when none fits, the reason text."""
        nodes = self.cluster.peek_list("v1", "Node")
        usage = self._node_usage()
        spec = pod.get("spec") or {}
        wanted = pod_requests(spec)
        reasons: dict[str, int] = {}
        fits: list[tuple[Decimal, str]] = []
        for node in nodes:
            reason = None if node_ready(node) else "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
            reason = reason or node_matches(spec, node)
            if reason is None:
                alloc = (node.get("status") or {}).get("allocatable") or {}
                used = usage.get(node["metadata"]["name"], {})
                for res, qty in wanted.items():
                    if res not in alloc:
                        if res in ("cpu", "memory", "ephemeral-storage", "pods") or qty == 0:
                            continue
                        reason = f"Insufficient {res}"
                        break
                    try:
                        capacity = parse_quantity(alloc[res])
                    except ValueError:
                        continue
                    if used.get(res, Decimal(0)) + qty > capacity:
                        reason = f"Insufficient {res}"
                        break
            if reason:
                reasons[reason] = reasons.get(reason, 0) + 1
            else:
                fits.append(
                    (
                        usage.get(node["metadata"]["name"], {}).get("pods", Decimal(0)),
                        node["metadata"]["name"],
                    )
                )
        if fits:
            return min(fits)[1], ""
        detail = " ".join(f"{n} {r}." for r, n in sorted(reasons.items()))
        return None, f"0/{len(nodes)} nodes are available: {detail}".strip()

    def _unschedulable(self, pod: Obj, message: str) -> None:
        status = clone(pod.get("status") or {})
        status["phase"] = "Pending"
        status["conditions"] = _conditions(
            status.get("conditions"),
            [("PodScheduled", "False", "Unschedulable", message)],
            self.cluster.timestamp(),
            False,
        )
        if status != pod.get("status"):
            self.event(pod, "FailedScheduling", message, "default-scheduler", warning=True)
        self.set_status(pod, status, "kube-scheduler")

    def schedule_pod(self, ns: str, name: str) -> None:
        """Bind a pending pod to a fitting node, or mark it Unschedulable with the reason."""
        pod = self.cluster.peek("v1", "Pod", name, ns)
        if pod is None or pod["metadata"].get("deletionTimestamp") or (pod.get("spec") or {}).get("nodeName"):
            return
        if _terminal(pod):
            return
        node, message = self.pick_node(pod)
        if node is None:
            self._unschedulable(pod, message)
            return
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            pvc = self.cluster.peek("v1", "PersistentVolumeClaim", claim, ns)
            if pvc is None:
                self._unschedulable(pod, f'persistentvolumeclaim "{claim}" not found')
                return
            if (pvc.get("status") or {}).get("phase") != "Bound":
                sc = self._storage_class(pvc)
                if sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer":
                    anns = pvc["metadata"].get("annotations") or {}
                    if "volume.kubernetes.io/selected-node" not in anns:
                        self.cluster.patch(
                            "v1",
                            "PersistentVolumeClaim",
                            claim,
                            ns,
                            {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": node}}},
                            field_manager="kube-scheduler",
                        )
                    self._unschedulable(pod, "waiting for first consumer volume binding")
                    return
                self._unschedulable(pod, "pod has unbound immediate PersistentVolumeClaims")
                return
        pod = self.cluster.patch("v1", "Pod", name, ns, {"spec": {"nodeName": node}}, field_manager="kube-scheduler")
        status = clone(pod.get("status") or {})
        status["conditions"] = _conditions(
            status.get("conditions"), [("PodScheduled", "True", "", "")], self.cluster.timestamp(), False
        )
        for c in status["conditions"]:
            if not c["reason"]:
                c.pop("reason")
                c.pop("message")
        self.event(pod, "Scheduled", f"Successfully assigned {ns}/{name} to {node}", "default-scheduler")
        self.set_status(pod, status, "kube-scheduler")

    def _pod_ip(self) -> str:
        self._next_ip += 1
        n = self._next_ip
        return f"10.1.{(n >> 8) & 255}.{n & 255}"

    def start_pod(self, ns: str, name: str) -> None:
        """The kubelet starts a scheduled pod: Running, Ready, container statuses, IPs."""
        pod = self.cluster.peek("v1", "Pod", name, ns)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        spec, status = pod.get("spec") or {}, clone(pod.get("status") or {})
        if not spec.get("nodeName") or status.get("phase") not in (None, "Pending"):
            return
        node = self.cluster.peek("v1", "Node", spec["nodeName"])
        if node is None or not node_ready(node):
            return
        now = self.cluster.timestamp()
        if self._pull_failed(pod, status, now):
            return
        addresses = (node.get("status") or {}).get("addresses") or []
        host_ip = next((a["address"] for a in addresses if a.get("type") == "InternalIP"), "10.0.0.1")
        pod_ip = host_ip if spec.get("hostNetwork") else self._pod_ip()
        uid = pod["metadata"]["uid"]

        def container_status(c: Obj, running: bool) -> Obj:
            image = c.get("image", "")
            digest = hashlib.sha256(image.encode()).hexdigest()
            cid = hashlib.sha256(f"{uid}/{c['name']}".encode()).hexdigest()
            state: Obj = (
                {"running": {"startedAt": now}}
                if running
                else {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": now,
                        "finishedAt": now,
                        "containerID": f"containerd://{cid}",
                    }
                }
            )
            return {
                "name": c["name"],
                "image": image,
                "imageID": f"{image.split(':')[0]}@sha256:{digest}",
                "containerID": f"containerd://{cid}",
                "ready": running,
                "started": running,
                "restartCount": 0,
                "state": state,
                "lastState": {},
            }

        status.update(
            {
                "phase": "Running",
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": status.get("startTime", now),
                "containerStatuses": [container_status(c, True) for c in spec.get("containers") or []],
            }
        )
        if spec.get("initContainers"):
            status["initContainerStatuses"] = [container_status(c, False) for c in spec["initContainers"]]
        status["conditions"] = _conditions(
            status.get("conditions"),
            [
                ("PodReadyToStartContainers", "True", "", ""),
                ("Initialized", "True", "", ""),
                ("Ready", "True", "", ""),
                ("ContainersReady", "True", "", ""),
                ("PodScheduled", "True", "", ""),
            ],
            now,
            False,
        )
        for c in status["conditions"]:
            c.pop("reason")
            c.pop("message")
        if any(gate(pod) for gate in self.readiness_gates):
            self._not_ready(status, now)
        for c in spec.get("containers") or []:
            self.event(pod, "Pulled", f'Container image "{c.get("image", "")}" already present on machine', "kubelet")
            self.event(pod, "Started", f"Started container {c['name']}", "kubelet")
        self.set_status(pod, status, "kubelet")

    @staticmethod
    def _not_ready(status: Obj, now: str) -> None:
        for cs in status.get("containerStatuses") or []:
            cs["ready"] = False
        for c in status.get("conditions") or []:
            if c["type"] in ("Ready", "ContainersReady"):
                waiting = [cs["name"] for cs in status.get("containerStatuses") or []]
                c.update(
                    {
                        "status": "False",
                        "reason": "ContainersNotReady",
                        "message": f"containers with unready status: [{' '.join(waiting)}]",
                        "lastTransitionTime": now,
                    }
                )

    def set_pod_ready(self, ns: str, name: str, ready: bool) -> None:
        """Set a Running pod's ``Ready``/``ContainersReady`` conditions and container ``ready`` flags (a
        readiness probe's verdict, for add-on controllers whose :attr:`readiness_gates` held the pod)."""
        pod = self.cluster.peek("v1", "Pod", name, ns)
        if pod is None or (pod.get("status") or {}).get("phase") != "Running":
            return
        now = self.cluster.timestamp()
        status = clone(pod["status"])
        if ready:
            for cs in status.get("containerStatuses") or []:
                cs["ready"] = True
            for c in status.get("conditions") or []:
                if c["type"] in ("Ready", "ContainersReady") and c.get("status") != "True":
                    c.pop("reason", None)
                    c.pop("message", None)
                    c.update({"status": "True", "lastTransitionTime": now})
        else:
            self._not_ready(status, now)
        self.set_status(pod, status, "kubelet")

    def _pull_failed(self, pod: Obj, status: Obj, now: str) -> bool:
        """Apply :attr:`image_pull_checks`: a failing pull keeps the pod Pending (ErrImagePull, then
        ImagePullBackOff) with Warning events; it is retried when the pod is started again."""
        spec = pod.get("spec") or {}
        failures = [
            (c, err) for c in spec.get("containers") or [] for check in self.image_pull_checks if (err := check(pod, c))
        ]
        if not failures:
            return False
        old = {cs.get("name"): cs for cs in status.get("containerStatuses") or []}
        statuses = []
        for c in spec.get("containers") or []:
            err = next((e for fc, e in failures if fc is c), None)
            waiting: Obj = {"reason": "ContainerCreating"}
            if err is not None:
                seen = ((old.get(c["name"]) or {}).get("state") or {}).get("waiting", {}).get("reason")
                reason = "ImagePullBackOff" if seen in ("ErrImagePull", "ImagePullBackOff") else "ErrImagePull"
                message = f'Back-off pulling image "{c.get("image", "")}"' if reason == "ImagePullBackOff" else err
                waiting = {"reason": reason, "message": message}
            statuses.append(
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {"waiting": waiting},
                    "lastState": {},
                }
            )
        for c, err in failures:
            image = c.get("image", "")
            self.event(pod, "Pulling", f'Pulling image "{image}"', "kubelet")
            self.event(pod, "Failed", f'Failed to pull image "{image}": {err}', "kubelet", warning=True)
            self.event(pod, "Failed", "Error: ErrImagePull", "kubelet", warning=True)
            self.event(pod, "BackOff", f'Back-off pulling image "{image}"', "kubelet")
        new = clone(status)
        new.update({"phase": "Pending", "containerStatuses": statuses})
        names = " ".join(c["name"] for c, _ in failures)
        new["conditions"] = _conditions(
            status.get("conditions"),
            [
                ("PodReadyToStartContainers", "True", "", ""),
                ("Initialized", "True", "", ""),
                ("Ready", "False", "ContainersNotReady", f"containers with unready status: [{names}]"),
                ("ContainersReady", "False", "ContainersNotReady", f"containers with unready status: [{names}]"),
                ("PodScheduled", "True", "", ""),
            ],
            now,
            False,
        )
        for c in new["conditions"]:
            if not c["reason"]:
                c.pop("reason")
                c.pop("message")
        self.set_status(pod, new, "kubelet")
        return True

    def finish_pod(self, ns: str, name: str) -> None:
        """A run-to-completion pod ends: Succeeded (exit 0) or Failed (the exit-code annotation)."""
        pod = self.cluster.peek("v1", "Pod", name, ns)
        if pod is None or (pod.get("status") or {}).get("phase") != "Running":
            return
        try:
            code = int((pod["metadata"].get("annotations") or {}).get(EXIT_CODE_ANNOTATION, "0"))
        except ValueError:
            code = 1
        now = self.cluster.timestamp()
        status = clone(pod["status"])
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        for cs in status.get("containerStatuses") or []:
            started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
            cs.update(
                {
                    "ready": False,
                    "started": False,
                    "state": {
                        "terminated": {
                            "exitCode": code,
                            "reason": "Completed" if code == 0 else "Error",
                            "startedAt": started,
                            "finishedAt": now,
                            "containerID": cs.get("containerID", ""),
                        }
                    },
                }
            )
        reason = "PodCompleted" if code == 0 else "PodFailed"
        for c in status.get("conditions") or []:
            if c["type"] in ("Ready", "ContainersReady", "PodReadyToStartContainers"):
                c.update({"status": "False", "reason": reason, "lastTransitionTime": now})
                if c["type"] == "PodReadyToStartContainers":
                    c.pop("reason", None)
        self.set_status(pod, status, "kubelet")

    # -- workload controllers -----------------------------------------------------------------
    def _owned(self, kind: str, api_version: str, owner: Obj) -> list[Obj]:
        uid = owner["metadata"]["uid"]
        return [
            o
            for o in self.cluster.peek_list(api_version, kind, owner["metadata"].get("namespace"))
            if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])
        ]

    def _new_pod(
        self,
        owner: Obj,
        template: Obj,
        *,
        name: str | None = None,
        generate_name: str | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        node_name: str | None = None,
        extra_tolerations: list[Obj] | None = None,
    ) -> Obj:
        tmeta = clone(template.get("metadata") or {})
        spec = clone(template.get("spec") or {})
        meta: Obj = {
            "namespace": owner["metadata"]["namespace"],
            "labels": {**(tmeta.get("labels") or {}), **(labels or {})},
            "ownerReferences": [_owner_ref(owner)],
        }
        if tmeta.get("annotations") or annotations:
            meta["annotations"] = {**(tmeta.get("annotations") or {}), **(annotations or {})}
        if name:
            meta["name"] = name
        else:
            meta["generateName"] = generate_name
        if node_name:
            spec["nodeName"] = node_name
        if extra_tolerations:
            spec["tolerations"] = [*(spec.get("tolerations") or []), *extra_tolerations]
        pod = self.cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}, _KCM)
        component = {
            "ReplicaSet": "replicaset-controller",
            "Job": "job-controller",
            "DaemonSet": "daemonset-controller",
            "StatefulSet": "statefulset-controller",
        }.get(owner["kind"], _KCM)
        self.event(owner, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", component)
        return pod

    def reconcile_replicaset(self, ns: str, name: str) -> None:
        """Keep ``spec.replicas`` live pods; report replicas/ready/available."""
        rs = self.cluster.peek("apps/v1", "ReplicaSet", name, ns)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        want = int(rs["spec"].get("replicas", 1))
        pods = [
            p for p in self._owned("Pod", "v1", rs) if not p["metadata"].get("deletionTimestamp") and not _terminal(p)
        ]
        for _ in range(want - len(pods)):
            pods.append(self._new_pod(rs, rs["spec"]["template"], generate_name=f"{name}-"))
        if len(pods) > want:
            # Kubernetes' order of deletion (ActivePodsWithRanks): unscheduled, then Pending before Running, not
            # ready before ready, then the lower controller.kubernetes.io/pod-deletion-cost first.
            pods.sort(
                key=lambda p: (
                    bool(p["spec"].get("nodeName")),
                    _PHASE_RANK.get(str((p.get("status") or {}).get("phase") or "Pending"), 0),
                    _pod_ready(p),
                    _deletion_cost(p),
                    p["metadata"]["creationTimestamp"],
                )
            )
            for pod in pods[: len(pods) - want]:
                self.cluster.delete("v1", "Pod", pod["metadata"]["name"], ns, missing_ok=True)
            pods = pods[len(pods) - want :]
        ready = sum(1 for p in pods if _pod_ready(p))
        status = _nonzero(
            {
                "replicas": len(pods),
                "fullyLabeledReplicas": len(pods),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "observedGeneration": rs["metadata"]["generation"],
            },
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
        )
        self.set_status(rs, status)

    def reconcile_deployment(self, ns: str, name: str) -> None:
        """Roll the pod template out through a ReplicaSet per template; report status and conditions."""
        dep = self.cluster.peek("apps/v1", "Deployment", name, ns)
        if dep is None or dep["metadata"].get("deletionTimestamp"):
            return
        spec = dep["spec"]
        want = int(spec.get("replicas", 1))
        template = spec["template"]
        h = template_hash(template)
        owned = self._owned("ReplicaSet", "apps/v1", dep)
        current = next((rs for rs in owned if rs["metadata"]["name"] == f"{name}-{h}"), None)
        revisions = [
            int((rs["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", "0")) for rs in owned
        ]
        if not spec.get("paused"):
            if current is None:
                tmpl = clone(template)
                tmpl.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = h
                selector = clone(spec["selector"])
                selector.setdefault("matchLabels", {})["pod-template-hash"] = h
                current = self.cluster.create(
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "metadata": {
                            "name": f"{name}-{h}",
                            "namespace": ns,
                            "labels": dict(tmpl["metadata"]["labels"]),
                            "annotations": {
                                "deployment.kubernetes.io/revision": str(max(revisions, default=0) + 1),
                                "deployment.kubernetes.io/desired-replicas": str(want),
                            },
                            "ownerReferences": [_owner_ref(dep)],
                        },
                        "spec": {"replicas": want, "selector": selector, "template": tmpl},
                    },
                    _KCM,
                )
                self.event(
                    dep,
                    "ScalingReplicaSet",
                    f"Scaled up replica set {name}-{h} from 0 to {want}",
                    "deployment-controller",
                )
                owned.append(current)
            elif current["spec"].get("replicas") != want:
                current = self.cluster.patch(
                    "apps/v1",
                    "ReplicaSet",
                    current["metadata"]["name"],
                    ns,
                    {"spec": {"replicas": want}},
                    field_manager=_KCM,
                )
            for rs in owned:
                if rs["metadata"]["name"] != current["metadata"]["name"] and rs["spec"].get("replicas"):
                    self.cluster.patch(
                        "apps/v1",
                        "ReplicaSet",
                        rs["metadata"]["name"],
                        ns,
                        {"spec": {"replicas": 0}},
                        field_manager=_KCM,
                    )
        owned = self._owned("ReplicaSet", "apps/v1", dep)
        total = sum(int((rs.get("status") or {}).get("replicas", 0)) for rs in owned)
        ready = sum(int((rs.get("status") or {}).get("readyReplicas", 0)) for rs in owned)
        available = sum(int((rs.get("status") or {}).get("availableReplicas", 0)) for rs in owned)
        updated = int(((current or {}).get("status") or {}).get("replicas", 0)) if current else 0
        max_unavailable = self._max_unavailable(spec, want)
        is_available = available >= want - max_unavailable
        complete = updated == want and available == want and total == want
        now = self.cluster.timestamp()
        old = dep.get("status") or {}
        rs_name = (current or {}).get("metadata", {}).get("name", "")
        conditions = _conditions(
            old.get("conditions"),
            [
                (
                    "Available",
                    "True" if is_available else "False",
                    "MinimumReplicasAvailable" if is_available else "MinimumReplicasUnavailable",
                    "Deployment has minimum availability."
                    if is_available
                    else "Deployment does not have minimum availability.",
                ),
                (
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
                    f'ReplicaSet "{rs_name}" has successfully progressed.'
                    if complete
                    else f'ReplicaSet "{rs_name}" is progressing.',
                ),
            ],
            now,
            True,
        )
        status = _nonzero(
            {
                "observedGeneration": dep["metadata"]["generation"],
                "replicas": total,
                "updatedReplicas": updated,
                "readyReplicas": ready,
                "availableReplicas": available,
                "unavailableReplicas": max(0, want - available),
                "conditions": conditions,
            },
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
        )
        self.set_status(dep, status)

    @staticmethod
    def _max_unavailable(spec: Obj, want: int) -> int:
        strategy = spec.get("strategy") or {}
        if strategy.get("type") == "Recreate":
            return 0
        value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", "25%")
        if isinstance(value, str) and value.endswith("%"):
            return int(want * int(value[:-1]) // 100)
        return int(value)

    def reconcile_statefulset(self, ns: str, name: str) -> None:
        """Ordinal pods ``<name>-<i>`` (OrderedReady: one at a time), their PVCs, and status."""
        sts = self.cluster.peek("apps/v1", "StatefulSet", name, ns)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts["spec"]
        want = int(spec.get("replicas", 1))
        revision = f"{name}-{template_hash(spec['template'])}"
        pods = {
            p["metadata"]["name"]: p
            for p in self._owned("Pod", "v1", sts)
            if not p["metadata"].get("deletionTimestamp")
        }
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        for i in range(want):
            pod_name = f"{name}-{i}"
            if pod_name in pods:
                if ordered and not _pod_ready(pods[pod_name]):
                    break
                continue
            template = clone(spec["template"])
            tspec = template.setdefault("spec", {})
            tspec["hostname"] = pod_name
            if spec.get("serviceName"):
                tspec["subdomain"] = spec["serviceName"]
            for vct in spec.get("volumeClaimTemplates") or []:
                claim = f"{vct['metadata']['name']}-{pod_name}"
                if self.cluster.peek("v1", "PersistentVolumeClaim", claim, ns) is None:
                    self.cluster.create(
                        {
                            "apiVersion": "v1",
                            "kind": "PersistentVolumeClaim",
                            "metadata": {
                                "name": claim,
                                "namespace": ns,
                                "labels": dict((spec.get("selector") or {}).get("matchLabels") or {}),
                            },
                            "spec": clone(vct.get("spec") or {}),
                        },
                        _KCM,
                    )
                vols = tspec.setdefault("volumes", [])
                if not any(v.get("name") == vct["metadata"]["name"] for v in vols):
                    vols.append({"name": vct["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim}})
            pods[pod_name] = self._new_pod(
                sts,
                template,
                name=pod_name,
                labels={
                    "statefulset.kubernetes.io/pod-name": pod_name,
                    "apps.kubernetes.io/pod-index": str(i),
                    "controller-revision-hash": revision,
                },
            )
            if ordered:
                break
        for pod_name in list(pods):
            ordinal = pod_name.rsplit("-", 1)[-1]
            if ordinal.isdigit() and int(ordinal) >= want:
                self.cluster.delete("v1", "Pod", pod_name, ns, missing_ok=True)
                del pods[pod_name]
        ready = sum(1 for p in pods.values() if _pod_ready(p))
        status = _nonzero(
            {
                "observedGeneration": sts["metadata"]["generation"],
                "replicas": len(pods),
                "readyReplicas": ready,
                "currentReplicas": len(pods),
                "updatedReplicas": len(pods),
                "availableReplicas": ready,
                "currentRevision": revision,
                "updateRevision": revision,
                "collisionCount": 0,
            },
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
        )
        self.set_status(sts, status)

    def reconcile_daemonset(self, ns: str, name: str) -> None:
        """One pod per eligible Ready node (selector, affinity, taints); status counts."""
        ds = self.cluster.peek("apps/v1", "DaemonSet", name, ns)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return
        template = ds["spec"]["template"]
        tspec = {**(template.get("spec") or {})}
        tspec["tolerations"] = [*(tspec.get("tolerations") or []), *_DS_TOLERATIONS]
        eligible = {
            n["metadata"]["name"]
            for n in self.cluster.peek_list("v1", "Node")
            if node_ready(n) and node_matches(tspec, n) is None
        }
        pods = [p for p in self._owned("Pod", "v1", ds) if not p["metadata"].get("deletionTimestamp")]
        by_node = {p["spec"].get("nodeName"): p for p in pods}
        revision = template_hash(template)
        for node in sorted(eligible - set(by_node)):
            by_node[node] = self._new_pod(
                ds,
                template,
                generate_name=f"{name}-",
                node_name=node,
                extra_tolerations=_DS_TOLERATIONS,
                labels={
                    "controller-revision-hash": revision,
                    "pod-template-generation": str(ds["metadata"]["generation"]),
                },
            )
        for node, pod in list(by_node.items()):
            if node not in eligible:
                self.cluster.delete("v1", "Pod", pod["metadata"]["name"], ns, missing_ok=True)
                del by_node[node]
        scheduled = len(by_node)
        ready = sum(1 for p in by_node.values() if _pod_ready(p))
        status = _nonzero(
            {
                "currentNumberScheduled": scheduled,
                "desiredNumberScheduled": len(eligible),
                "numberMisscheduled": 0,
                "numberReady": ready,
                "numberAvailable": ready,
                "numberUnavailable": len(eligible) - ready,
                "updatedNumberScheduled": scheduled,
                "observedGeneration": ds["metadata"]["generation"],
            },
            "numberAvailable",
            "numberUnavailable",
            "updatedNumberScheduled",
        )
        self.set_status(ds, status)

    def reconcile_job(self, ns: str, name: str) -> None:
        """Run pods until ``completions`` succeed (Complete) or ``backoffLimit`` is exceeded (Failed)."""
        job = self.cluster.peek("batch/v1", "Job", name, ns)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        spec, old = job["spec"], job.get("status") or {}
        if any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in old.get("conditions") or []
        ):
            return
        now = self.cluster.timestamp()
        pods = [p for p in self._owned("Pod", "v1", job) if not p["metadata"].get("deletionTimestamp")]
        succeeded = sum(1 for p in pods if p["status"].get("phase") == "Succeeded")
        failed = sum(1 for p in pods if p["status"].get("phase") == "Failed")
        active = [p for p in pods if not _terminal(p)]
        completions = spec.get("completions")
        target = int(completions) if completions is not None else 1
        status: Obj = {
            "startTime": old.get("startTime", now),
            "uncountedTerminatedPods": {},
            "terminating": 0,
        }
        conditions: list[tuple[str, str, str, str]] = []
        if spec.get("suspend"):
            conditions.append(("Suspended", "True", "JobSuspended", "Job suspended"))
            status.pop("startTime")
        elif succeeded >= target:
            conditions += [
                (
                    "SuccessCriteriaMet",
                    "True",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
                ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
            ]
            status["completionTime"] = now
            if not old.get("completionTime"):
                self.event(job, "Completed", "Job completed", "job-controller")
        elif failed > int(spec.get("backoffLimit", 6)):
            conditions += [
                (
                    "FailureTarget",
                    "True",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                ),
                ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
            ]
            for pod in active:
                self.cluster.delete("v1", "Pod", pod["metadata"]["name"], ns, missing_ok=True)
            active = []
            self.event(
                job,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                "job-controller",
                warning=True,
            )
        else:
            parallelism = int(spec.get("parallelism", 1))
            missing = min(parallelism, target - succeeded) - len(active)
            indexed = spec.get("completionMode") == "Indexed"
            done = {
                (p["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index")
                for p in pods
                if p["status"].get("phase") == "Succeeded" or not _terminal(p)
            }
            for _ in range(max(0, missing)):
                if indexed:
                    idx = next(str(i) for i in range(target) if str(i) not in done)
                    done.add(idx)
                    active.append(
                        self._new_pod(
                            job,
                            spec["template"],
                            generate_name=f"{name}-{idx}-",
                            annotations={"batch.kubernetes.io/job-completion-index": idx},
                            labels={"batch.kubernetes.io/job-completion-index": idx},
                        )
                    )
                else:
                    active.append(self._new_pod(job, spec["template"], generate_name=f"{name}-"))
        status.update(
            {
                "active": len(active),
                "ready": sum(1 for p in active if _pod_ready(p)),
                "succeeded": succeeded,
                "failed": failed,
            }
        )
        if conditions:
            status["conditions"] = _conditions(old.get("conditions"), conditions, now, False)
            for c in status["conditions"]:
                c["lastProbeTime"] = c["lastTransitionTime"]
        if old.get("completionTime") and "completionTime" in status:
            status["completionTime"] = old["completionTime"]
        self.set_status(job, _nonzero(status, "active", "succeeded", "failed"))

    # -- volumes ------------------------------------------------------------------------------
    def _storage_class(self, pvc: Obj) -> Obj | None:
        name = self._class_of(pvc)
        return self.cluster.peek("storage.k8s.io/v1", "StorageClass", name) if name else None

    def _class_of(self, pvc: Obj) -> str:
        cls = (pvc.get("spec") or {}).get("storageClassName")
        if cls is not None:
            return str(cls)
        for sc in self.cluster.peek_list("storage.k8s.io/v1", "StorageClass"):
            if (sc["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true":
                return str(sc["metadata"]["name"])
        return ""

    @staticmethod
    def _pv_fits(pv: Obj, pvc: Obj, cls: str) -> bool:
        pv_spec, pvc_spec = pv.get("spec") or {}, pvc.get("spec") or {}
        if (pv_spec.get("storageClassName") or "") != cls:
            return False
        if not set(pvc_spec.get("accessModes") or []) <= set(pv_spec.get("accessModes") or []):
            return False
        if pv_spec.get("volumeMode", "Filesystem") != pvc_spec.get("volumeMode", "Filesystem"):
            return False
        sel = requirements_from_label_selector(pvc_spec.get("selector"))
        if sel is not None and not match_labels(sel, pv["metadata"].get("labels")):
            return False
        try:
            want = parse_quantity(((pvc_spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))
            have = parse_quantity((pv_spec.get("capacity") or {}).get("storage", "0"))
        except ValueError:
            return False
        return have >= want

    @staticmethod
    def _claimable(pv: Obj, pvc: Obj) -> bool:
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref:
            return (pv.get("status") or {}).get("phase") == "Available"
        if ref.get("uid") and ref["uid"] != pvc["metadata"]["uid"]:
            return False
        return bool(ref.get("name") == pvc["metadata"]["name"] and ref.get("namespace") == pvc["metadata"]["namespace"])

    def _bind(self, pv: Obj, pvc: Obj, chosen_by_controller: bool) -> None:
        meta = pvc["metadata"]
        claim_ref = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
        }
        if (pv["spec"].get("claimRef") or {}).get("uid") != meta["uid"]:
            pv = self.cluster.patch(
                "v1",
                "PersistentVolume",
                pv["metadata"]["name"],
                None,
                {"spec": {"claimRef": claim_ref}},
                field_manager=_KCM,
            )
        self.set_status(pv, {**(pv.get("status") or {}), "phase": "Bound"})
        anns = {"pv.kubernetes.io/bind-completed": "yes"}
        if chosen_by_controller:
            anns["pv.kubernetes.io/bound-by-controller"] = "yes"
        patch: Obj = {"metadata": {"annotations": anns}}
        if not (pvc.get("spec") or {}).get("volumeName"):
            patch["spec"] = {"volumeName": pv["metadata"]["name"]}
        pvc = self.cluster.patch(
            "v1", "PersistentVolumeClaim", meta["name"], meta["namespace"], patch, field_manager=_KCM
        )
        self.set_status(
            pvc,
            {
                "phase": "Bound",
                "accessModes": list(pv["spec"].get("accessModes") or []),
                "capacity": dict(pv["spec"].get("capacity") or {}),
            },
        )

    def _provision(self, pvc: Obj, sc: Obj) -> None:
        meta = pvc["metadata"]
        pv_name = f"pvc-{meta['uid']}"
        if self.cluster.peek("v1", "PersistentVolume", pv_name) is not None:
            return
        spec = pvc.get("spec") or {}
        driver = sc.get("provisioner", "")
        handle = "fs-" if "fsx" in driver else "vol-"
        handle += hashlib.sha256(meta["uid"].encode()).hexdigest()[:17]
        self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv_name, "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
                "spec": {
                    "accessModes": list(spec.get("accessModes") or []),
                    "capacity": {
                        "storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
                    },
                    "storageClassName": sc["metadata"]["name"],
                    "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy", "Delete"),
                    "volumeMode": spec.get("volumeMode", "Filesystem"),
                    "csi": {
                        "driver": driver,
                        "volumeHandle": handle,
                        "volumeAttributes": dict(sc.get("parameters") or {}),
                    },
                    "claimRef": {
                        "apiVersion": "v1",
                        "kind": "PersistentVolumeClaim",
                        "name": meta["name"],
                        "namespace": meta["namespace"],
                        "uid": meta["uid"],
                    },
                },
            },
            "persistentvolume-provisioner",
        )

    def reconcile_volumes(self, _ns: str = "", _name: str = "") -> None:
        """Bind claims to volumes, provision for StorageClasses, release volumes of deleted claims."""
        pvs = {pv["metadata"]["name"]: pv for pv in self.cluster.peek_list("v1", "PersistentVolume")}
        pvcs = self.cluster.peek_list("v1", "PersistentVolumeClaim")
        claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in pvcs}
        for pvc in sorted(pvcs, key=lambda c: c["metadata"]["creationTimestamp"]):
            meta, spec = pvc["metadata"], pvc.get("spec") or {}
            if meta.get("deletionTimestamp"):
                continue
            cls = self._class_of(pvc)
            volume = spec.get("volumeName")
            if volume:
                pv = pvs.get(volume)
                if pv is None:
                    continue
                bound_here = (pv["spec"].get("claimRef") or {}).get("uid") == meta["uid"]
                if (
                    (pvc.get("status") or {}).get("phase") == "Bound"
                    and bound_here
                    and (pv.get("status") or {}).get("phase") == "Bound"
                ):
                    continue
                if (bound_here or self._claimable(pv, pvc)) and self._pv_fits(pv, pvc, cls):
                    self._bind(pv, pvc, False)
                continue
            candidates = [pv for pv in pvs.values() if self._claimable(pv, pvc) and self._pv_fits(pv, pvc, cls)]
            if candidates:
                best = min(candidates, key=lambda pv: parse_quantity(pv["spec"]["capacity"]["storage"]))
                self._bind(best, pvc, True)
                pvs[best["metadata"]["name"]] = (
                    self.cluster.peek("v1", "PersistentVolume", best["metadata"]["name"]) or best
                )
                continue
            sc = self._storage_class(pvc) if cls else None
            if sc is not None and sc.get("provisioner") and sc["provisioner"] != "kubernetes.io/no-provisioner":
                wait = sc.get("volumeBindingMode") == "WaitForFirstConsumer"
                if not wait or "volume.kubernetes.io/selected-node" in (meta.get("annotations") or {}):
                    self._provision(pvc, sc)
        for pv in pvs.values():
            ref = (pv.get("spec") or {}).get("claimRef")
            if not ref or (pv.get("status") or {}).get("phase") != "Bound":
                continue
            claim = claims.get((ref.get("namespace"), ref.get("name")))
            if claim is None or claim["metadata"]["uid"] != ref.get("uid"):
                if pv["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
                    self.cluster.delete("v1", "PersistentVolume", pv["metadata"]["name"], missing_ok=True)
                else:
                    self.set_status(pv, {**(pv.get("status") or {}), "phase": "Released"})
