"""Defaulting and validation of built-in kinds, the part of kube-apiserver a client notices:
defaulted fields, initial status, allocated cluster IPs, ``422 Invalid`` for broken specs."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from instantstart_sandbox.kube.selectors import match_labels, requirements_from_label_selector

Causes = list[dict[str, str]]
Prepare = Callable[[dict[str, Any], dict[str, Any] | None, "Allocator"], Causes]


class Allocator:
    """Cluster-wide allocations made while defaulting (service cluster IPs, node ports)."""

    def __init__(self) -> None:
        self._next_ip = 10
        self._next_port = 30000

    def cluster_ip(self) -> str:
        """Next free ClusterIP from the EKS default service CIDR 10.100.0.0/16."""
        self._next_ip += 1
        return f"10.100.{(self._next_ip >> 8) & 255}.{self._next_ip & 255}"

    def node_port(self) -> int:
        """Next NodePort from 30000-32767."""
        self._next_port += 1
        return 30000 + (self._next_port - 30000) % 2768


def _cause(field: str, message: str, reason: str = "FieldValueInvalid") -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def _required(field: str) -> dict[str, str]:
    return _cause(field, "Required value", "FieldValueRequired")


def default_pod_spec(spec: dict[str, Any], path: str = "spec") -> Causes:
    """Default a PodSpec in place (restartPolicy, dnsPolicy, image pull policy, ...)."""
    causes: Causes = []
    containers = spec.get("containers")
    if not containers:
        causes.append(_required(f"{path}.containers"))
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    for group in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(group) or []):
            if not c.get("name"):
                causes.append(_required(f"{path}.{group}[{i}].name"))
            if not c.get("image"):
                causes.append(_required(f"{path}.{group}[{i}].image"))
            image = str(c.get("image") or "")
            tag = image.rsplit("/", 1)[-1]
            latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
            c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("resources", {})
            for port in c.get("ports") or []:
                port.setdefault("protocol", "TCP")
    return causes


def qos_class(spec: dict[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort from the containers' requests and limits."""
    containers = spec.get("containers") or []
    any_set = False
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in lim or req.get(name, lim[name]) != lim[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _pod(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    spec = obj.setdefault("spec", {})
    causes = default_pod_spec(spec)
    spec.setdefault(
        "tolerations",
        [
            {
                "key": f"node.kubernetes.io/{k}",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
            for k in ("not-ready", "unreachable")
        ],
    )
    if old is None:
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
    return causes


def _template_workload(obj: dict[str, Any], old: dict[str, Any] | None, selector_required: bool) -> Causes:
    spec = obj.setdefault("spec", {})
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {})
    causes = default_pod_spec(template.setdefault("spec", {}), "spec.template.spec")
    selector = spec.get("selector")
    labels = template["metadata"].get("labels") or {}
    if selector_required:
        if not selector:
            causes.append(_required("spec.selector"))
        else:
            reqs = requirements_from_label_selector(selector) or []
            if not reqs:
                causes.append(_cause("spec.selector", "Invalid value: empty selector is invalid"))
            elif not match_labels(reqs, labels):
                causes.append(
                    _cause(
                        "spec.template.metadata.labels",
                        f"Invalid value: {labels!r}: `selector` does not match template `labels`",
                    )
                )
        if old is not None and old.get("spec", {}).get("selector") != selector:
            causes.append(_cause("spec.selector", "Invalid value: field is immutable"))
    return causes


def _deployment(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        strategy.setdefault("type", "RollingUpdate")
        strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
    return _template_workload(obj, old, True)


def _replicaset(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    obj.setdefault("spec", {}).setdefault("replicas", 1)
    return _template_workload(obj, old, True)


def _statefulset(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    return _template_workload(obj, old, True)


def _daemonset(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    spec = obj.setdefault("spec", {})
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    return _template_workload(obj, old, True)


def _job(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    spec = obj.setdefault("spec", {})
    meta = obj["metadata"]
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    if old is None and not spec.get("manualSelector"):
        uid = meta["uid"]
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        labels = tmeta.setdefault("labels", {})
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": meta["name"],
                "controller-uid": uid,
                "job-name": meta["name"],
            }
        )
    if old is not None and "selector" not in spec and "selector" in old.get("spec", {}):
        spec["selector"] = old["spec"]["selector"]
    causes = default_pod_spec(template.setdefault("spec", {}), "spec.template.spec")
    if template["spec"].get("restartPolicy") not in ("OnFailure", "Never"):
        causes.append(
            _cause(
                "spec.template.spec.restartPolicy",
                f'Unsupported value: "{template["spec"].get("restartPolicy")}": supported values: "OnFailure", "Never"',
                "FieldValueNotSupported",
            )
        )
    if old is not None and old.get("spec", {}).get("template") != template:
        causes.append(_cause("spec.template", "Invalid value: field is immutable"))
    return causes


def _service(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    spec = obj.setdefault("spec", {})
    causes: Causes = []
    stype = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if stype != "ExternalName":
        if old is not None and old.get("spec", {}).get("clusterIP"):
            spec.setdefault("clusterIP", old["spec"]["clusterIP"])
        if not spec.get("clusterIP"):
            spec["clusterIP"] = alloc.cluster_ip()
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        if not spec.get("ports") and spec["clusterIP"] != "None":
            causes.append(_required("spec.ports"))
    for i, port in enumerate(spec.get("ports") or []):
        port.setdefault("protocol", "TCP")
        if "port" not in port:
            causes.append(_required(f"spec.ports[{i}].port"))
        port.setdefault("targetPort", port.get("port"))
        if stype in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
            port["nodePort"] = alloc.node_port()
    if stype in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if old is None:
        obj["status"] = {"loadBalancer": {}}
    return causes


def _secret(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
    return []


def _namespace(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    if old is None:
        obj["status"] = {"phase": "Active"}
    return []


def _pvc(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    spec = obj.setdefault("spec", {})
    causes: Causes = []
    spec.setdefault("volumeMode", "Filesystem")
    if not spec.get("accessModes"):
        causes.append(_required("spec.accessModes"))
    if not (spec.get("resources") or {}).get("requests", {}).get("storage"):
        causes.append(_required("spec.resources[storage]"))
    if old is None:
        obj["status"] = {"phase": "Pending"}
    return causes


def _pv(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    spec = obj.setdefault("spec", {})
    causes: Causes = []
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    if not spec.get("accessModes"):
        causes.append(_required("spec.accessModes"))
    if not (spec.get("capacity") or {}).get("storage"):
        causes.append(_required("spec.capacity"))
    if old is None:
        obj["status"] = {"phase": "Available"}
    return causes


def _node(obj: dict[str, Any], old: dict[str, Any] | None, alloc: Allocator) -> Causes:
    status = obj.setdefault("status", {})
    if "allocatable" not in status and "capacity" in status:
        status["allocatable"] = dict(status["capacity"])
    return []


# Status of a new object (Go zero values that are serialized without omitempty; clients require them).
INITIAL_STATUS: dict[str, dict[str, Any]] = {
    "apps/Deployment": {},
    "apps/StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "apps/ReplicaSet": {"replicas": 0},
    "apps/DaemonSet": {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
    "batch/Job": {},
    "/ReplicationController": {"replicas": 0},
    "autoscaling/HorizontalPodAutoscaler": {"desiredReplicas": 0},
    "policy/PodDisruptionBudget": {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    },
    "storage.k8s.io/VolumeAttachment": {"attached": False},
}

# kind (group/Kind) -> defaulting/validation hook
PREPARE: dict[str, Prepare] = {
    "/Pod": _pod,
    "/Service": _service,
    "/Secret": _secret,
    "/Namespace": _namespace,
    "/PersistentVolumeClaim": _pvc,
    "/PersistentVolume": _pv,
    "/Node": _node,
    "apps/Deployment": _deployment,
    "apps/ReplicaSet": _replicaset,
    "apps/StatefulSet": _statefulset,
    "apps/DaemonSet": _daemonset,
    "batch/Job": _job,
}
