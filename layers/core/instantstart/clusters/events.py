"""Events the control plane publishes on its own EventBridge bus for users' automation.

``source: instantstart``; detail-types ``Operation State Change``, ``Stage State Change`` and ``Cluster Drift
Detected`` (:mod:`instantstart.clusters.drift`: new differences between the records and AWS).
Calls EventBridge ``PutEvents`` (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html).
Publishing is best effort: a failed publish is logged and never fails the workflow.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from instantstart.models.common import ApiModel
from instantstart.models.drift import DriftItem
from instantstart.models.records import ClusterRecord, OperationRecord, StageRecord
from instantstart.runtime import Runtime

SOURCE = "instantstart"
logger = logging.getLogger(__name__)


class EventDetail(ApiModel):
    """Base of the public event details (camelCase)."""


class StageStateChange(EventDetail):
    """Detail of a ``Stage State Change`` event."""

    cluster_tag: str
    generation: int
    stage: str
    status: str
    attempts: int
    error: dict[str, str] | None = None

    @classmethod
    def of(cls, stage: StageRecord) -> StageStateChange:
        """The event detail of a stage record."""
        return cls(
            cluster_tag=stage.cluster_tag,
            generation=stage.generation,
            stage=stage.name.value,
            status=stage.status.value,
            attempts=stage.attempts,
            error=stage.error.model_dump() if stage.error else None,
        )


class OperationStateChange(EventDetail):
    """Detail of an ``Operation State Change`` event."""

    operation_id: str
    type: str
    status: str
    cluster_tag: str
    error: dict[str, str] | None = None

    @classmethod
    def of(cls, op: OperationRecord) -> OperationStateChange:
        """The event detail of an operation record."""
        return cls(
            operation_id=op.operation_id,
            type=op.type.value,
            status=op.status.value,
            cluster_tag=op.cluster_tag,
            error=op.error.model_dump() if op.error else None,
        )


class ClusterDriftDetected(EventDetail):
    """Detail of a ``Cluster Drift Detected`` event: what newly differs between the records and AWS (``newItems``)
    and how much differs in all (``driftCount``); ``GET /clusters/{clusterTag}`` has every item."""

    cluster_tag: str
    generation: int
    new_items: list[dict[str, Any]]
    drift_count: int
    repairable: bool

    @classmethod
    def of(
        cls, cluster: ClusterRecord, new: list[DriftItem], stored: list[DriftItem], more: int
    ) -> ClusterDriftDetected:
        """The event detail of a drift check that found ``new`` items (``stored`` and ``more``: all it found)."""
        return cls(
            cluster_tag=cluster.cluster_tag,
            generation=cluster.generation,
            new_items=[i.to_api() for i in new],
            drift_count=len(stored) + more,
            repairable=any(i.repairable for i in stored),
        )


DETAIL_TYPES: dict[type[EventDetail], str] = {
    StageStateChange: "Stage State Change",
    OperationStateChange: "Operation State Change",
    ClusterDriftDetected: "Cluster Drift Detected",
}
"""The EventBridge ``detail-type`` of each detail."""


def publish(rt: Runtime, detail: EventDetail) -> None:
    """Put one event on the control plane's bus (best effort)."""
    detail_type = DETAIL_TYPES[type(detail)]
    try:
        out = rt.client("events").put_events(
            Entries=[
                {
                    "Source": SOURCE,
                    "DetailType": detail_type,
                    "Detail": json.dumps(detail.to_api()),
                    "EventBusName": rt.settings.EVENT_BUS_NAME,
                }
            ]
        )
        if out.get("FailedEntryCount"):
            logger.warning("event not published: %s", out["Entries"])
    except Exception:
        logger.exception("event not published: %s", detail_type)
