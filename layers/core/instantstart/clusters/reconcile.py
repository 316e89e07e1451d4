"""Reconciliation on AWS events (EventBridge): completes waiting stages and refreshes observed state."""

from __future__ import annotations

import logging
from typing import Any

from instantstart.clusters import provision, workflow
from instantstart.clusters.events import publish
from instantstart.errors import Conflict
from instantstart.models.common import ClusterStatus, OperationStatus, StageName, StageStatus, iso, utcnow
from instantstart.naming import tag_from_hyperpod_cluster_name
from instantstart.runtime import Runtime
from instantstart.store import keys
from instantstart.store.table import ConditionFailed

logger = logging.getLogger(__name__)

TERMINAL_HYPERPOD_STATUSES = ("InService", "Failed")


def on_hyperpod_state_change(rt: Runtime, detail: dict[str, Any]) -> dict[str, Any]:
    """Handle a "SageMaker HyperPod Cluster State Change" event.

    Records the observed status; on InService/Failed sends the HyperPod stage's stored task token
    (``SendTaskSuccess``/``SendTaskFailure``), so the waiting execution continues at once.
    Events about clusters this control plane did not create are ignored.

    Returns ``{"clusterTag", "status", "action"}`` where action is ``ignored``, ``recorded`` or ``resumed``.
    """
    name = str(detail.get("ClusterName", ""))
    status = str(detail.get("ClusterStatus", ""))
    tag = tag_from_hyperpod_cluster_name(name)
    cluster = rt.store.get_cluster(tag) if tag else None
    if not tag or not cluster:
        return {"clusterTag": tag, "status": status, "action": "ignored"}
    generation = int(cluster["generation"])
    if detail.get("ClusterArn") and detail.get("InstanceGroups") is not None:
        provision.record_hyperpod(
            rt,
            tag,
            generation,
            {**detail, "ClusterName": name, "ClusterStatus": status},
            cluster.get("request", {}).get("instanceGroups", []),
        )
    stage = rt.store.get_stage(tag, generation, StageName.HYPERPOD) or {}
    token = stage.get("taskToken")
    if status not in TERMINAL_HYPERPOD_STATUSES or not token:
        return {"clusterTag": tag, "status": status, "action": "recorded"}
    provision.complete_hyperpod_task(rt, token, {**detail, "ClusterStatus": status})
    logger.info("resumed HyperPod stage of %s on %s", tag, status)
    return {"clusterTag": tag, "status": status, "action": "resumed"}


EXECUTION_END_ERRORS = {
    "ABORTED": ("ExecutionAborted", OperationStatus.CANCELLED),
    "TIMED_OUT": ("ExecutionTimedOut", OperationStatus.FAILED),
    "FAILED": ("ExecutionFailed", OperationStatus.FAILED),
}
"""Execution end status -> (error code when the execution gives none, operation status)."""


def on_execution_status_change(rt: Runtime, detail: dict[str, Any]) -> dict[str, Any]:
    """Handle a "Step Functions Execution Status Change" event of a workflow that ended abnormally.

    A workflow records its own failures; this closes what it cannot record itself: an execution
    stopped by an operator (ABORTED), timed out, or failed inside its own failure path. The operation
    becomes CANCELLED or FAILED, a RUNNING stage FAILED, and the cluster FAILED, so nothing is left
    "running" for ever and the cluster can be retried or deleted. An operation that already ended is
    left alone. Returns ``{"operationId", "action"}`` with action ``ignored``, ``already-ended`` or ``reconciled``.
    """
    operation_id = str(detail.get("name", ""))
    status = str(detail.get("status", ""))
    op = rt.store.get_operation(operation_id) if operation_id else None
    if op is None or status not in EXECUTION_END_ERRORS:
        return {"operationId": operation_id, "action": "ignored"}
    if OperationStatus(op["status"]).terminal:
        return {"operationId": operation_id, "action": "already-ended"}
    default_code, op_status = EXECUTION_END_ERRORS[status]
    error = {
        "code": str(detail.get("error") or default_code),
        "message": str(detail.get("cause") or f"execution {detail.get('executionArn', operation_id)} {status}"),
    }
    tag, generation = op["clusterTag"], int(op["generation"])
    now = iso(utcnow())
    for stage in rt.store.get_stages(tag, generation):
        if stage.get("status") != StageStatus.RUNNING.value or stage.get("operationId") != operation_id:
            continue
        try:
            item = rt.store.update(
                keys.cluster_pk(tag),
                stage["SK"],
                {"status": StageStatus.FAILED.value, "error": error, "endedAt": now, "updatedAt": now},
                expected_status=[StageStatus.RUNNING.value],
                removes=["taskToken"],
            )
            publish(rt, "Stage State Change", workflow.stage_event_detail(item))
        except ConditionFailed:
            pass
    try:
        workflow.finish_operation(
            rt, operation_id=operation_id, tag=tag, status=op_status, cluster_status=ClusterStatus.FAILED, error=error
        )
    except Conflict:
        return {"operationId": operation_id, "action": "already-ended"}
    logger.info("reconciled operation %s after execution %s", operation_id, status)
    return {"operationId": operation_id, "action": "reconciled"}


def on_node_health_event(rt: Runtime, detail: dict[str, Any]) -> dict[str, Any]:
    """Handle a "SageMaker HyperPod Cluster Node Health Event": record the node's health finding.

    The cluster's ``nodes`` view gets the finding (``healthStatus``, ``healthStatusReason``,
    ``repairAction``) for the node of ``detail.InstanceId``, so the API shows node recovery as it
    happens. The write is conditional on the record's ``updatedAt`` and retried, so concurrent
    findings for different nodes are all kept. Returns ``{"clusterTag", "instanceId", "action"}``.
    """
    tag = tag_from_hyperpod_cluster_name(str(detail.get("ClusterName", "")))
    instance_id = str(detail.get("InstanceId", ""))
    summary = detail.get("HealthSummary") or {}
    for _ in range(5):
        cluster = rt.store.get_cluster(tag) if tag else None
        if not tag or not cluster:
            return {"clusterTag": tag, "instanceId": instance_id, "action": "ignored"}
        nodes = list(cluster.get("nodes", []))
        index = next((i for i, n in enumerate(nodes) if n.get("instanceId") == instance_id), None)
        if index is None:
            return {"clusterTag": tag, "instanceId": instance_id, "action": "unknown-node"}
        nodes[index] = {
            **nodes[index],
            "healthStatus": summary.get("HealthStatus"),
            "healthStatusReason": summary.get("HealthStatusReason"),
            "repairAction": summary.get("RepairAction"),
        }
        try:
            rt.store.transact(
                [
                    {
                        "update": (keys.cluster_pk(tag), keys.META),
                        "set": {"nodes": nodes, "updatedAt": iso(utcnow())},
                        "extra_condition": "#ua = :ua",
                        "extra_names": {"#ua": "updatedAt"},
                        "extra_values": {":ua": cluster["updatedAt"]},
                    }
                ]
            )
        except Conflict:
            continue  # another writer changed the record: read it again
        return {"clusterTag": tag, "instanceId": instance_id, "action": "recorded"}
    return {"clusterTag": tag, "instanceId": instance_id, "action": "conflict"}
