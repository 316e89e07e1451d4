"""The inference area's part of the steps function (:mod:`instantstart.clusters.registry`): the model download,
deployment and router changes (:data:`instantstart.inference.service.CHANGES`) and the endpoint changes
(:data:`instantstart.inference.endpoints.CHANGES`), each module imported on first use.
"""

from __future__ import annotations

from instantstart.clusters.registry import REGISTRY
from instantstart.models.common import OperationType

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
