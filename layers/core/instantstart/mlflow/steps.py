"""The MLflow area's part of the steps function (:mod:`instantstart.clusters.registry`): the ``UPDATE_MLFLOW``
change (:data:`instantstart.mlflow.service.CHANGES`) and the release of the MLflow server or app created for a
cluster when it is deleted.

Imports nothing of the area at import time: the registry imports the change's module on first use, and the
teardown hooks import theirs when they run.
"""

from __future__ import annotations

from instantstart.clusters.registry import REGISTRY, Teardown
from instantstart.models.common import OperationType
from instantstart.runtime import Runtime


def start_release(rt: Runtime, tag: str) -> list[str]:
    """Ask SageMaker to delete the MLflow server or app created for the cluster, without waiting (a running server
    writes to the bucket; :func:`instantstart.mlflow.service.start_release`); returns nothing to wait for: the
    dependencies stage's :func:`release` waits."""
    from instantstart.mlflow import service

    service.start_release(rt, tag)
    return []


def release(rt: Runtime, tag: str) -> list[str]:
    """One round of removing what the cluster's MLflow connection created, then the recorded connection
    (:func:`instantstart.mlflow.service.teardown`: SageMaker, EKS and IAM calls); what is still going."""
    from instantstart.mlflow import service

    return service.teardown(rt, tag)


REGISTRY.add_changes("instantstart.mlflow.service", (OperationType.UPDATE_MLFLOW,))
REGISTRY.add_teardown(Teardown.BUCKET, start_release)
REGISTRY.add_teardown(Teardown.NETWORK, release)
