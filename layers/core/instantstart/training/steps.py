"""The training area's part of the steps function (:mod:`instantstart.clusters.registry`): the
``CREATE_TRAINING_JOB`` and ``DELETE_TRAINING_JOB`` changes (:data:`instantstart.training.service.CHANGES`), whose
module is imported on first use.
"""

from __future__ import annotations

from instantstart.clusters.registry import REGISTRY
from instantstart.models.common import OperationType

REGISTRY.add_changes(
    "instantstart.training.service", (OperationType.CREATE_TRAINING_JOB, OperationType.DELETE_TRAINING_JOB)
)
