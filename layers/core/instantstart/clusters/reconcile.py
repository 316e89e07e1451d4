"""Reconciliation on AWS events (EventBridge): completes waiting stages and refreshes observed state.

Each handler returns a small :class:`Reconciled` result saying what it did (for logs and tests).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field

from instantstart.clusters import hyperpod_completion, records
from instantstart.models.cluster import StageError
from instantstart.models.common import ApiModel, ClusterStatus, OperationStatus, StageStatus
from instantstart.naming import tag_from_hyperpod_cluster_name
from instantstart.runtime import Runtime
from instantstart.store.table import ConditionFailed

logger = logging.getLogger(__name__)


class Reconciled(ApiModel):
    """What a reconciler did with one event."""

    action: str = Field(description="ignored, recorded, resumed, already-ended, reconciled, unknown-node or conflict")
    cluster_tag: str | None = None
    status: str | None = None
    operation_id: str | None = None
    instance_id: str | None = None


def on_hyperpod_state_change(rt: Runtime, detail: dict[str, Any]) -> Reconciled:
    """Handle a "SageMaker HyperPod Cluster State Change" event (``detail`` as EventBridge delivers it).

    Records the observed status; on InService/Failed resumes the ``hyperpod`` stage's wait
    (:func:`instantstart.clusters.hyperpod_completion.resume_waiting_stage`), so the execution continues
    at once. Events about clusters this control plane did not create are ignored.
    """
    name = str(detail.get("ClusterName", ""))
    status = str(detail.get("ClusterStatus", ""))
    tag = tag_from_hyperpod_cluster_name(name)
    cluster = rt.store.get_cluster(tag) if tag else None
    if not tag or not cluster:
        return Reconciled(action="ignored", cluster_tag=tag, status=status)
    if detail.get("ClusterArn") and detail.get("InstanceGroups") is not None:
        hyperpod_completion.observe(
            rt,
            tag,
            cluster.generation,
            {**detail, "ClusterName": name, "ClusterStatus": status},
            cluster.request.instance_groups,
        )
    failure = detail.get("FailureMessage")
    if not hyperpod_completion.resume_waiting_stage(rt, tag, cluster.generation, status, failure):
        return Reconciled(action="recorded", cluster_tag=tag, status=status)
    logger.info("resumed HyperPod stage of %s on %s", tag, status)
    return Reconciled(action="resumed", cluster_tag=tag, status=status)


EXECUTION_END_ERRORS = {
    "ABORTED": ("ExecutionAborted", OperationStatus.CANCELLED),
    "TIMED_OUT": ("ExecutionTimedOut", OperationStatus.FAILED),
    "FAILED": ("ExecutionFailed", OperationStatus.FAILED),
}
"""Execution end status -> (error code when the execution gives none, operation status)."""


def on_execution_status_change(rt: Runtime, detail: dict[str, Any]) -> Reconciled:
    """Handle a "Step Functions Execution Status Change" event of a workflow that ended abnormally.

    A workflow records its own failures; this closes what it cannot record itself: an execution
    stopped by an operator (ABORTED), timed out, or failed inside its own failure path. The operation
    becomes CANCELLED or FAILED, a stage it was running FAILED, and the cluster FAILED, so nothing is
    left "running" for ever and the cluster can be retried or deleted. An operation that already
    ended is left alone.
    """
    operation_id = str(detail.get("name", ""))
    status = str(detail.get("status", ""))
    op = rt.store.get_operation(operation_id) if operation_id else None
    if op is None or status not in EXECUTION_END_ERRORS:
        return Reconciled(action="ignored", operation_id=operation_id)
    if op.status.terminal:
        return Reconciled(action="already-ended", operation_id=operation_id)
    default_code, op_status = EXECUTION_END_ERRORS[status]
    error = StageError(
        code=str(detail.get("error") or default_code),
        message=str(detail.get("cause") or f"execution {detail.get('executionArn', operation_id)} {status}"),
    )
    for stage in rt.store.get_stages(op.cluster_tag, op.generation):
        if stage.status is StageStatus.RUNNING and stage.operation_id == operation_id:
            records.fail_stage(
                rt,
                tag=op.cluster_tag,
                generation=op.generation,
                stage=stage.name,
                error=error,
                operation_id=operation_id,
            )
    try:
        records.finish_operation(
            rt,
            operation_id=operation_id,
            tag=op.cluster_tag,
            status=op_status,
            cluster_status=ClusterStatus.FAILED,
            error=error,
        )
    except ConditionFailed:
        return Reconciled(action="already-ended", operation_id=operation_id)
    logger.info("reconciled operation %s after execution %s", operation_id, status)
    return Reconciled(action="reconciled", operation_id=operation_id)


def on_node_health_event(rt: Runtime, detail: dict[str, Any]) -> Reconciled:
    """Handle a "SageMaker HyperPod Cluster Node Health Event": record the node's health finding.

    The cluster's ``nodes`` view gets the finding (``healthStatus``, ``healthStatusReason``,
    ``repairAction``) for the node of ``detail.InstanceId``, so the API shows node recovery as it
    happens. The write is conditional on the record's ``updatedAt`` and retried, so concurrent
    findings for different nodes are all kept.
    """
    tag = tag_from_hyperpod_cluster_name(str(detail.get("ClusterName", "")))
    instance_id = str(detail.get("InstanceId", ""))
    summary = detail.get("HealthSummary") or {}
    for _ in range(5):
        cluster = rt.store.get_cluster(tag) if tag else None
        if not tag or not cluster:
            return Reconciled(action="ignored", cluster_tag=tag, instance_id=instance_id)
        nodes = list(cluster.nodes)
        index = next((i for i, n in enumerate(nodes) if n.instance_id == instance_id), None)
        if index is None:
            return Reconciled(action="unknown-node", cluster_tag=tag, instance_id=instance_id)
        nodes[index] = nodes[index].model_copy(
            update={
                "health_status": summary.get("HealthStatus"),
                "health_status_reason": summary.get("HealthStatusReason"),
                "repair_action": summary.get("RepairAction"),
            }
        )
        try:
            rt.store.record_observations(tag, now=records.now(), nodes=nodes, if_updated_at=cluster.updated_at)
        except ConditionFailed:
            continue  # another writer changed the record: read it again
        return Reconciled(action="recorded", cluster_tag=tag, instance_id=instance_id)
    return Reconciled(action="conflict", cluster_tag=tag, instance_id=instance_id)
