"""How the training use cases read a cluster's Kubernetes API: within the read budget, a job by name and kind."""

from __future__ import annotations

from typing import Any

from instantstart.clusters.kube_reads import read_kubernetes as read_kubernetes  # re-exported
from instantstart.errors import NotFound
from instantstart.kube.reads import KUBERNETES_READ_SECONDS
from instantstart.runtime import Runtime
from instantstart.training import builders

# -- reads through the API's view entry -------------------------------------------------------------------------------
LOG_MAX_BYTES = 256 * 1024
"""Most bytes of log text one answer carries (the tail is kept)."""
LOG_DEFAULT_TAIL_LINES = 1000
"""Lines of log read when neither tailLines nor sinceSeconds is given."""
OPERATOR_JOB_NAME_LABEL = "sagemaker.amazonaws.com/job-name"
"""The label the HyperPod training operator puts on a job's pods (the job's name)."""
OPERATOR_RANK_LABEL = "sagemaker.amazonaws.com/rank"
"""The label the HyperPod training operator puts on a job's pods (the pod's rank, 0 first)."""
OPERATION_ANNOTATION = "instantstart/operation-id"
"""Annotation naming the operation that created a job (a redelivered apply recognises its own job)."""
JOB_KINDS = (
    (builders.PYTORCH_JOB_API_VERSION, builders.PYTORCH_JOB_KIND),
    (builders.RAY_JOB_API_VERSION, builders.RAY_JOB_KIND),
)


def _list_kind(
    dyn: Any, api_version: str, kind: str, namespace: str | None = None, selector: str | None = None
) -> list[dict[str, Any]]:
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    from instantstart.kube import client as kube

    try:
        return kube.list_objects(dyn, api_version, kind, namespace, selector, timeout=KUBERNETES_READ_SECONDS)
    except ResourceNotFoundError:  # the kind is not served (operator not installed): no such jobs
        return []


def _get_job(dyn: Any, name: str, namespace: str) -> dict[str, Any] | None:
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    for api_version, kind in JOB_KINDS:
        try:
            resource = dyn.resources.get(api_version=api_version, kind=kind)
            return dict(
                resource.get(name=name, namespace=namespace, _request_timeout=KUBERNETES_READ_SECONDS).to_dict()
            )
        except (NotFoundError, ResourceNotFoundError):
            continue
    return None


def _not_found(tag: str, name: str, namespace: str) -> NotFound:
    return NotFound(
        f"training job {namespace}/{name} does not exist on cluster '{tag}'",
        code="TrainingJobNotFound",
        details=[{"field": "name", "namespace": namespace}],
    )


def find_job(rt: Runtime, tag: str, name: str, namespace: str) -> dict[str, Any]:
    """The custom resource of job ``namespace/name`` (a HyperPodPyTorchJob or a RayJob), read through the API role's
    view entry within the read budget.

    Raises:
        NotFound: ``TrainingJobNotFound`` naming the job and its namespace.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    job = read_kubernetes(rt, tag, lambda dyn: _get_job(dyn, name, namespace))
    if job is None:
        raise _not_found(tag, name, namespace)
    return dict(job)
