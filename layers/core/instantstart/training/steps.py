"""The training area's part of the steps function (:mod:`instantstart.clusters.registry`): the
``CREATE_TRAINING_JOB`` and ``DELETE_TRAINING_JOB`` changes (:data:`instantstart.training.service.CHANGES`), whose
module is imported on first use; the training workloads that depend on the training operator, KubeRay, task
governance and FSx (:mod:`instantstart.training.dependents`), which ``PATCH features`` names or removes.
"""

from __future__ import annotations

from collections.abc import Callable

from instantstart.clusters.registry import REGISTRY
from instantstart.models.common import OperationType
from instantstart.runtime import Runtime

REGISTRY.add_changes(
    "instantstart.training.service", (OperationType.CREATE_TRAINING_JOB, OperationType.DELETE_TRAINING_JOB)
)

DEPENDED_ON = ("trainingOperator", "kubeRay", "taskGovernance", "fsx")
"""The features training workloads depend on (:data:`instantstart.training.dependents.FINDERS`)."""


def _dependents_of(feature: str) -> Callable[[Runtime, str, bool], list[str]]:
    def hook(rt: Runtime, tag: str, remove: bool) -> list[str]:
        """The training workloads depending on ``feature`` (:func:`instantstart.training.dependents.dependents`)."""
        from instantstart.training import dependents

        return dependents.dependents(feature, rt, tag, remove)

    return hook


for _feature in DEPENDED_ON:
    REGISTRY.add_dependents(_feature, _dependents_of(_feature))
