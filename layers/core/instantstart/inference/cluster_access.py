"""What the inference use cases share: the cluster's bucket, its admin Kubernetes client, object reads, and the
changes' payload models."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import records
from instantstart.clusters.kube_reads import read_kubernetes
from instantstart.clusters.records import cluster_bucket as cluster_bucket  # re-exported
from instantstart.errors import NotFound, UpstreamUnavailable
from instantstart.inference import builders, rules
from instantstart.kube.reads import KUBERNETES_READ_SECONDS
from instantstart.models.common import ApiModel
from instantstart.models.inference import (
    INFERENCE_NAMESPACE,
    CreateInferenceDeploymentRequest,
    CreateRouterRequest,
    DownloadModelRequest,
)
from instantstart.runtime import Runtime

OPERATION_ANNOTATION = "instantstart/operation-id"


class DownloadModelChange(ApiModel):
    """``change`` of a DOWNLOAD_MODEL operation: the request as accepted and the cluster's bucket."""

    request: DownloadModelRequest
    bucket: str | None = None


class CreateDeploymentChange(ApiModel):
    """``change`` of a CREATE_INFERENCE_DEPLOYMENT operation: the request and the instance type's memory (MiB)."""

    request: CreateInferenceDeploymentRequest
    memory_mib: int


class ScaleDeploymentChange(ApiModel):
    """``change`` of an UPDATE_INFERENCE_DEPLOYMENT operation: the deployment and the replicas wanted."""

    name: str
    replicas: int


class DeleteDeploymentChange(ApiModel):
    """``change`` of a DELETE_INFERENCE_DEPLOYMENT operation: the deployment."""

    name: str


class RouterChange(ApiModel):
    """``change`` of a CREATE_INFERENCE_ROUTER operation: the deployment, its workers' port and the request."""

    name: str
    worker_port: int
    request: CreateRouterRequest


# -- shared ----------------------------------------------------------------------------------------------------------
def _admin(rt: Runtime, tag: str) -> Any:
    from instantstart.kube import client as kube

    return kube.connect(records.eks_name(rt, tag), rt.region)


def _list(dyn: Any, api_version: str, kind: str, selector: str | None = None) -> list[dict[str, Any]]:
    from instantstart.kube import client as kube

    return kube.list_objects(dyn, api_version, kind, INFERENCE_NAMESPACE, selector, timeout=KUBERNETES_READ_SECONDS)


def get_object(dyn: Any, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
    """Object ``name`` of ``kind`` in the inference namespace (Kubernetes GET, read timeout), None when absent."""
    from kubernetes.dynamic.exceptions import NotFoundError

    resource = dyn.resources.get(api_version=api_version, kind=kind)
    try:
        return dict(
            resource.get(name=name, namespace=INFERENCE_NAMESPACE, _request_timeout=KUBERNETES_READ_SECONDS).to_dict()
        )
    except NotFoundError:
        return None


def _require_fsx_claim(rt: Runtime, tag: str, field: str) -> None:
    found = read_kubernetes(rt, tag, lambda dyn: get_object(dyn, "v1", "PersistentVolumeClaim", builders.FSX_CLAIM))
    if found is None:
        raise rules.fsx_not_enabled(tag, field)


def _describe_cluster(rt: Runtime, tag: str) -> dict[str, Any]:
    try:
        return dict(rt.client("sagemaker").describe_cluster(ClusterName=records.hyperpod_name(rt, tag)))
    except ClientError as exc:
        raise UpstreamUnavailable(
            f"SageMaker DescribeCluster failed ({error_code(exc)}: {error_message(exc)})"
        ) from exc


def deployment_not_found(tag: str, name: str) -> NotFound:
    """The 404 ``InferenceDeploymentNotFound`` naming ``name``."""
    return NotFound(
        f"inference deployment {INFERENCE_NAMESPACE}/{name} does not exist on cluster '{tag}'",
        code="InferenceDeploymentNotFound",
        details=[{"field": "name", "value": name}],
    )


def made_here(deployment: dict[str, Any] | None) -> bool:
    """Whether ``deployment`` is the worker Deployment of an inference deployment made through this API (labels)."""
    labels = ((deployment or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(builders.LABEL_ROLE) == "worker" and builders.LABEL_DEPLOYMENT in labels


def _pods_of(dyn: Any, name: str) -> list[dict[str, Any]]:
    return _list(dyn, "v1", "Pod", f"{builders.LABEL_DEPLOYMENT}={name},{builders.LABEL_ROLE}=worker")


def _keda_served(dyn: Any) -> bool:
    """Whether KEDA's ``ScaledObject`` is served now (fresh API discovery: :func:`instantstart.kube.client.served`)."""
    from instantstart.kube import client as kube

    return kube.served(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND, timeout=KUBERNETES_READ_SECONDS)
