"""What depends on a feature of the training area: the workloads that would be left without their operator, queue or
storage if the feature went away.

``PATCH /clusters/{tag}/features`` turning one of these features off is refused with 409 ``FeatureHasDependents``
naming them, unless the feature's body has ``removeDependents: true``, in which case the operation deletes them first
and turns the feature off once none is left (:meth:`instantstart.clusters.registry.StepRegistry.dependents`):

* ``trainingOperator``: every HyperPodPyTorchJob (the operator reconciles them; without it their pods are never
  restarted and the CRD's finalizer is never removed);
* ``kubeRay``: every RayJob, RayCluster and RayService (deleting the operator deletes the CRDs and, through
  garbage collection, these with their pods);
* ``taskGovernance``: every training job submitted to a team's Kueue queue (label ``kueue.x-k8s.io/queue-name``:
  without Kueue nothing admits them, they stay suspended);
* ``fsx``: every training job whose pods mount claim ``fsx-claim`` (the claim and its file system are removed).

Each dependent is named ``Kind namespace/name``. Reads go through the API's view entry within the read budget
(``remove`` False); removal is one round of deletes as cluster admin (foreground, so the pods go first), answering
what is still there. Kubernetes list and delete (``kubernetes`` dynamic client).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from instantstart.runtime import Runtime
from instantstart.training import builders

RAY_KINDS = ("RayJob", "RayCluster", "RayService")
"""The KubeRay kinds whose objects depend on the KubeRay operator (``ray.io/v1``)."""

Found = list[tuple[str, str, dict[str, Any]]]
"""``(apiVersion, kind, object)`` of each dependent."""


def _list(dyn: Any, api_version: str, kind: str) -> Found:
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    from instantstart.kube import client as kube
    from instantstart.kube.reads import KUBERNETES_READ_SECONDS

    try:
        objects = kube.list_objects(dyn, api_version, kind, None, None, timeout=KUBERNETES_READ_SECONDS)
    except ResourceNotFoundError:  # the kind is not served (its operator is not installed): none depend on it
        return []
    return [(api_version, kind, o) for o in objects]


def _jobs(dyn: Any) -> Found:
    return [
        *_list(dyn, builders.PYTORCH_JOB_API_VERSION, builders.PYTORCH_JOB_KIND),
        *_list(dyn, builders.RAY_JOB_API_VERSION, builders.RAY_JOB_KIND),
    ]


def _mounts(value: Any, claim: str) -> bool:
    """Whether a job's JSON names PersistentVolumeClaim ``claim`` anywhere (its pod templates' volumes)."""
    if isinstance(value, dict):
        if value.get("claimName") == claim:
            return True
        return any(_mounts(v, claim) for v in value.values())
    if isinstance(value, list):
        return any(_mounts(v, claim) for v in value)
    return False


def _queued(obj: dict[str, Any]) -> bool:
    return builders.KUEUE_QUEUE in ((obj.get("metadata") or {}).get("labels") or {})


FINDERS: dict[str, Callable[[Any], Found]] = {
    "trainingOperator": lambda dyn: _list(dyn, builders.PYTORCH_JOB_API_VERSION, builders.PYTORCH_JOB_KIND),
    "kubeRay": lambda dyn: [f for kind in RAY_KINDS for f in _list(dyn, builders.RAY_JOB_API_VERSION, kind)],
    "taskGovernance": lambda dyn: [f for f in _jobs(dyn) if _queued(f[2])],
    "fsx": lambda dyn: [f for f in _jobs(dyn) if _mounts(f[2].get("spec"), builders.FSX_CLAIM)],
}
"""Each feature training workloads depend on -> how they are found on a cluster's Kubernetes API (each registered
in :mod:`instantstart.training.steps`)."""


def label(kind: str, obj: dict[str, Any]) -> str:
    """``Kind namespace/name`` of one dependent."""
    meta = obj.get("metadata") or {}
    return f"{kind} {meta.get('namespace') or 'default'}/{meta.get('name')}"


def _delete(dyn: Any, found: Found) -> None:
    from instantstart.kube import client as kube

    for api_version, kind, obj in found:
        meta = obj.get("metadata") or {}
        if not meta.get("deletionTimestamp"):
            kube.delete(
                dyn, api_version, kind, str(meta.get("name")), meta.get("namespace"), propagation_policy="Foreground"
            )


def dependents(feature: str, rt: Runtime, tag: str, remove: bool) -> list[str]:
    """The workloads of cluster ``tag`` that depend on ``feature`` (a key of :data:`FINDERS`), ``Kind namespace/name``
    each, sorted.

    ``remove`` False: read through the API's view entry. ``remove`` True: one round of foreground deletes as cluster
    admin; what is still there after it (an object whose finalizers still run is listed until it is gone).

    Raises:
        KeyError: ``feature`` is not a key of :data:`FINDERS`.
        UpstreamUnavailable: (read) Kubernetes could not be read in time.
    """
    find = FINDERS[feature]
    if not remove:
        from instantstart.clusters.kube_reads import read_kubernetes

        found: Found = read_kubernetes(rt, tag, find)
        return sorted(label(kind, obj) for _, kind, obj in found)
    from instantstart.clusters.kube_reads import admin_or_none

    dyn = admin_or_none(rt, tag, "removing training dependents")
    if dyn is None:
        return []
    _delete(dyn, find(dyn))
    return sorted(label(kind, obj) for _, kind, obj in find(dyn))
