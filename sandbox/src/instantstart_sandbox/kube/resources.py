"""The resource table: which kinds the emulated API server serves, and under which paths.

Built-in kinds are one line each in :data:`BUILTIN_RESOURCES`; custom resources are registered at
runtime when a CustomResourceDefinition is created (see :mod:`instantstart_sandbox.kube.store`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ScalePaths:
    """Where a scalable kind keeps its replica counts (dotted paths) and its selector."""

    spec_replicas: str = "spec.replicas"
    status_replicas: str = "status.replicas"
    # For built-ins: a dotted path to a LabelSelector object; for CRDs: to a selector string.
    selector: str | None = "spec.selector"
    selector_is_string: bool = False


@dataclass(frozen=True)
class ResourceType:
    """One served resource (a plural under one group/version).

    ``subresources`` is a subset of ``{"status", "scale", "log"}``. ``keep_status_on_create`` means a
    create keeps the posted status (Nodes are registered by the kubelet with their status).
    ``delete_returns_object`` mirrors kinds whose DELETE answers with the object instead of a Status.
    ``schema`` is the CRD ``openAPIV3Schema`` for custom resources (``None`` for built-ins).
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    categories: tuple[str, ...] = ()
    scale: ScalePaths | None = None
    keep_status_on_create: bool = False
    delete_returns_object: bool = False
    name_rule: str = "subdomain"  # subdomain | label | dns1035 | path (kube/limits.py)
    field_selectors: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    review: bool = False  # create-only: answered with a status, never stored
    crd: str | None = None
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    served: bool = True
    storage: bool = True

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        """Lower-case singular name, as discovery reports it."""
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        """The kind of a list response (``PodList``)."""
        return f"{self.kind}List"

    @property
    def storage_key(self) -> tuple[str, str]:
        """Objects are stored once per group/resource, whatever version was used to write them."""
        return (self.group, self.plural)

    @property
    def qualified(self) -> str:
        """``plural`` or ``plural.group`` as used in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_SCALE = ScalePaths()


def _r(
    api_version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    **kw: Any,
) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        short_names=short,
        subresources=frozenset(sub),
        **kw,
    )


# One line per served built-in resource.
# fmt: off
BUILTIN_RESOURCES: tuple[ResourceType, ...] = (
    # core/v1
    _r("v1", "namespaces", "Namespace", False, ("ns",), ("status",), name_rule="label",
       field_selectors=("status.phase",)),
    _r("v1", "nodes", "Node", False, ("no",), ("status",), keep_status_on_create=True,
       field_selectors=("spec.unschedulable",)),
    _r("v1", "pods", "Pod", True, ("po",), ("status", "log"), categories=("all",),
       delete_returns_object=True, field_selectors=_POD_FIELDS),
    _r("v1", "services", "Service", True, ("svc",), ("status",), categories=("all",),
       delete_returns_object=True, name_rule="dns1035"),
    _r("v1", "serviceaccounts", "ServiceAccount", True, ("sa",), delete_returns_object=True),
    _r("v1", "configmaps", "ConfigMap", True, ("cm",)),
    _r("v1", "secrets", "Secret", True, (), field_selectors=("type",)),
    _r("v1", "persistentvolumes", "PersistentVolume", False, ("pv",), ("status",),
       delete_returns_object=True),
    _r("v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), ("status",),
       delete_returns_object=True),
    _r("v1", "events", "Event", True, ("ev",), name_rule="path", field_selectors=_EVENT_FIELDS),
    _r("v1", "endpoints", "Endpoints", True, ("ep",)),
    _r("v1", "limitranges", "LimitRange", True, ("limits",)),
    _r("v1", "resourcequotas", "ResourceQuota", True, ("quota",), ("status",),
       delete_returns_object=True),
    _r("v1", "podtemplates", "PodTemplate", True, (), delete_returns_object=True),
    _r("v1", "replicationcontrollers", "ReplicationController", True, ("rc",), ("status", "scale"),
       categories=("all",), scale=_SCALE),
    # apps/v1
    _r("apps/v1", "deployments", "Deployment", True, ("deploy",), ("status", "scale"),
       categories=("all",), scale=_SCALE),
    _r("apps/v1", "daemonsets", "DaemonSet", True, ("ds",), ("status",), categories=("all",)),
    _r("apps/v1", "replicasets", "ReplicaSet", True, ("rs",), ("status", "scale"),
       categories=("all",), scale=_SCALE, field_selectors=("status.replicas",)),
    _r("apps/v1", "statefulsets", "StatefulSet", True, ("sts",), ("status", "scale"),
       categories=("all",), scale=_SCALE),
    _r("apps/v1", "controllerrevisions", "ControllerRevision", True),
    # batch/v1
    _r("batch/v1", "jobs", "Job", True, (), ("status",), categories=("all",),
       field_selectors=("status.successful",)),
    _r("batch/v1", "cronjobs", "CronJob", True, ("cj",), ("status",), categories=("all",)),
    # autoscaling / policy / networking / discovery
    _r("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ("hpa",),
       ("status",), categories=("all",)),
    _r("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ("status",)),
    _r("networking.k8s.io/v1", "ingresses", "Ingress", True, ("ing",), ("status",)),
    _r("networking.k8s.io/v1", "ingressclasses", "IngressClass", False),
    _r("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
    _r("discovery.k8s.io/v1", "endpointslices", "EndpointSlice", True),
    _r("node.k8s.io/v1", "runtimeclasses", "RuntimeClass", False),
    # rbac.authorization.k8s.io/v1 (names may carry ':')
    _r("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False, name_rule="path"),
    _r("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False,
       name_rule="path"),
    _r("rbac.authorization.k8s.io/v1", "roles", "Role", True, name_rule="path"),
    _r("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", True, name_rule="path"),
    # apiextensions / storage / coordination / scheduling / admission
    _r("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition", False,
       ("crd", "crds"), ("status",)),
    _r("storage.k8s.io/v1", "storageclasses", "StorageClass", False, ("sc",),
       delete_returns_object=True),
    _r("storage.k8s.io/v1", "csidrivers", "CSIDriver", False, (), delete_returns_object=True),
    _r("storage.k8s.io/v1", "csinodes", "CSINode", False, (), delete_returns_object=True),
    _r("storage.k8s.io/v1", "volumeattachments", "VolumeAttachment", False, (), ("status",),
       delete_returns_object=True),
    _r("coordination.k8s.io/v1", "leases", "Lease", True),
    _r("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    _r("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations",
       "MutatingWebhookConfiguration", False),
    _r("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration", False),
    # create-only reviews, answered and not stored (everyone authenticated is a cluster admin here)
    _r("authorization.k8s.io/v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
       verbs=("create",), review=True),
    _r("authorization.k8s.io/v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False,
       verbs=("create",), review=True),
    _r("authentication.k8s.io/v1", "selfsubjectreviews", "SelfSubjectReview", False,
       verbs=("create",), review=True),
)
# fmt: on


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key implementing Kubernetes version priority (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > foo)."""
    m = _VERSION_RE.match(version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, version)


class Registry:
    """Lookup of served resources by path (group, version, plural) and by kind (group, version, kind)."""

    def __init__(self) -> None:
        # CRD registration happens on writer threads while request threads read: guard the maps.
        self._lock = threading.Lock()
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str, str], ResourceType] = {}
        for rt in BUILTIN_RESOURCES:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        """Serve ``rt`` (replacing a previous registration of the same path)."""
        with self._lock:
            self._by_path[(rt.group, rt.version, rt.plural)] = rt
            self._by_kind[(rt.group, rt.version, rt.kind)] = rt

    def remove_crd(self, crd_name: str) -> None:
        """Stop serving every resource registered by the CRD ``crd_name``."""
        with self._lock:
            for key, rt in list(self._by_path.items()):
                if rt.crd == crd_name:
                    del self._by_path[key]
                    self._by_kind.pop((rt.group, rt.version, rt.kind), None)

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The resource served at ``/apis/{group}/{version}/{plural}`` (or ``/api/v1/...``)."""
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The resource for ``apiVersion``/``kind`` (e.g. ``apps/v1``, ``Deployment``)."""
        group, _, version = api_version.rpartition("/")
        return self._by_kind.get((group, version, kind))

    def storage_types(self, storage_key: tuple[str, str]) -> list[ResourceType]:
        """All registrations sharing one storage (the versions of one group/resource)."""
        return [rt for rt in self.all() if rt.storage_key == storage_key]

    def all(self) -> list[ResourceType]:
        """Every served resource."""
        with self._lock:
            return list(self._by_path.values())

    def group_versions(self) -> dict[str, list[str]]:
        """``{group: [versions by priority]}`` (core group ``""`` included)."""
        out: dict[str, set[str]] = {}
        for rt in self.all():
            out.setdefault(rt.group, set()).add(rt.version)
        return {g: sorted(vs, key=version_priority) for g, vs in out.items()}

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        """Resources served under one group/version, sorted by plural."""
        return sorted(
            (rt for rt in self.all() if rt.group == group and rt.version == version),
            key=lambda r: r.plural,
        )
