"""The inference area's part of the steps function (:mod:`instantstart.clusters.registry`): the model download,
deployment and router changes (:data:`instantstart.inference.service.CHANGES`) and the endpoint changes
(:data:`instantstart.inference.endpoints.CHANGES`), each module imported on first use; the inference operator's
dependents (the managed endpoints, which ``PATCH features`` names or removes) and what a cluster deletion removes of
them (:mod:`instantstart.inference.teardown`).
"""

from __future__ import annotations

from instantstart.clusters.registry import REGISTRY, Teardown
from instantstart.models.common import OperationType
from instantstart.runtime import Runtime

REGISTRY.add_changes(
    "instantstart.inference.service",
    (
        OperationType.DOWNLOAD_MODEL,
        OperationType.CREATE_INFERENCE_DEPLOYMENT,
        OperationType.UPDATE_INFERENCE_DEPLOYMENT,
        OperationType.DELETE_INFERENCE_DEPLOYMENT,
        OperationType.CREATE_INFERENCE_ROUTER,
    ),
)
REGISTRY.add_changes(
    "instantstart.inference.endpoints",
    (OperationType.CREATE_INFERENCE_ENDPOINT, OperationType.DELETE_INFERENCE_ENDPOINT),
)


def _dependents(rt: Runtime, tag: str, remove: bool) -> list[str]:
    """The inference operator's dependents (:func:`instantstart.inference.teardown.dependents`)."""
    from instantstart.inference import teardown

    return teardown.dependents(rt, tag, remove)


def start_endpoint_removal(rt: Runtime, tag: str) -> list[str]:
    """Delete the cluster's managed endpoint resources while the operator still runs
    (:func:`instantstart.inference.teardown.start_removal`: Kubernetes calls); nothing to wait for."""
    from instantstart.inference import teardown

    return teardown.start_removal(rt, tag)


def delete_endpoint_resources(rt: Runtime, tag: str) -> list[str]:
    """One round of deleting what SageMaker still holds of the cluster's endpoints, by their ownership tags
    (:func:`instantstart.inference.teardown.remove_sagemaker_resources`: SageMaker calls); what is still there."""
    from instantstart.inference import teardown

    return teardown.remove_sagemaker_resources(rt, tag)


def stop_model_downloads(rt: Runtime, tag: str) -> list[str]:
    """Stop the cluster's running model downloads and delete their Jobs (they write to the bucket; they do not hold
    the cluster's lock, so the delete started beside them: :func:`instantstart.inference.downloads.stop_downloads`);
    nothing to wait for."""
    from instantstart.inference import downloads

    return downloads.stop_downloads(rt, tag)


REGISTRY.add_dependents("inferenceOperator", _dependents)
REGISTRY.add_teardown(Teardown.BUCKET, stop_model_downloads)
REGISTRY.add_teardown(Teardown.BUCKET, start_endpoint_removal)
REGISTRY.add_teardown(Teardown.NETWORK, delete_endpoint_resources)
