"""Stage and operation bookkeeping shared by the create, retry and delete workflows.

Steps call these at the edges of each stage so DynamoDB, the API, the MCP tools and the Step
Functions console agree. Every write is conditional on the expected current status.
"""

from __future__ import annotations

import json
from typing import Any

from instantstart.clusters.events import publish
from instantstart.models.common import (
    ClusterStatus,
    OperationStatus,
    OperationType,
    StageName,
    StageStatus,
    iso,
    utcnow,
)
from instantstart.runtime import Runtime
from instantstart.store import keys
from instantstart.store.table import ConditionFailed

DEFAULT_POLL_SECONDS: dict[str, int] = {
    "natGateway": 15,
    "eksCluster": 30,
    "kubernetesAccess": 10,
    "addon": 15,
    "hyperPodCluster": 60,
    "storage": 5,
    "verify": 15,
    "deletion": 30,
}
"""Realistic poll intervals (seconds) of each wait loop, passed to the ASL as execution input."""

DEFAULT_MAX_POLLS: dict[str, int] = {
    "natGateway": 40,
    "eksCluster": 60,
    "kubernetesAccess": 30,
    "addon": 60,
    "hyperPodCluster": 60,
    "storage": 60,
    "verify": 40,
    "deletion": 120,
}
"""Bounds of each poll loop: interval x bound is the stage's time budget."""

HYPERPOD_EVENT_TIMEOUT_SECONDS = 900
"""How long the HyperPod stage waits for the EventBridge state-change event before polling."""


def execution_input(
    *, operation_id: str, operation_type: OperationType, tag: str, generation: int, start_stage: StageName
) -> dict[str, Any]:
    """Input of a create/retry/delete execution: ids plus the loop configuration (realistic seconds)."""
    return {
        "operationId": operation_id,
        "operationType": operation_type.value,
        "clusterTag": tag,
        "generation": generation,
        "startStage": start_stage.value,
        "config": {
            "pollSeconds": DEFAULT_POLL_SECONDS,
            "maxPolls": DEFAULT_MAX_POLLS,
            "hyperPodEventTimeoutSeconds": HYPERPOD_EVENT_TIMEOUT_SECONDS,
        },
    }


def _now() -> str:
    return iso(utcnow()) or ""


def stage_event_detail(item: dict[str, Any]) -> dict[str, Any]:
    """The public detail of a Stage State Change event."""
    return {
        "clusterTag": item.get("clusterTag"),
        "generation": item.get("generation"),
        "stage": item.get("name"),
        "status": item.get("status"),
        "attempts": item.get("attempts"),
        "error": item.get("error"),
    }


def begin_stage(rt: Runtime, *, operation_id: str, tag: str, generation: int, stage: StageName) -> dict[str, Any]:
    """Mark ``stage`` RUNNING (from PENDING or FAILED), count the attempt, and the operation RUNNING.

    A redelivered task finding the stage already RUNNING for this operation is a no-op.
    Returns ``{"stage": name}`` for the execution's ``$.currentStage``.
    """
    now = _now()
    pk, sk = keys.cluster_pk(tag), keys.stage_sk(generation, stage)
    try:
        current = rt.store.get(pk, sk) or {}
        item = rt.store.update(
            pk,
            sk,
            {
                "status": StageStatus.RUNNING.value,
                "attempts": int(current.get("attempts", 0)) + 1,
                "startedAt": now,
                "updatedAt": now,
                "operationId": operation_id,
            },
            expected_status=[StageStatus.PENDING.value, StageStatus.FAILED.value],
            removes=["error", "endedAt"],
        )
        publish(rt, "Stage State Change", stage_event_detail(item))
    except ConditionFailed:
        current = rt.store.get(pk, sk) or {}
        if not (current.get("status") == StageStatus.RUNNING.value and current.get("operationId") == operation_id):
            raise
    mark_operation_running(rt, operation_id)
    return {"stage": stage.value}


def mark_operation_running(rt: Runtime, operation_id: str) -> None:
    """PENDING -> RUNNING for the operation (no-op when already RUNNING)."""
    now = _now()
    try:
        item = rt.store.update(
            keys.operation_pk(operation_id),
            keys.META,
            {"status": OperationStatus.RUNNING.value, "startedAt": now, "updatedAt": now},
            expected_status=[OperationStatus.PENDING.value],
        )
        publish(rt, "Operation State Change", operation_event_detail(item))
    except ConditionFailed:
        pass


def operation_event_detail(item: dict[str, Any]) -> dict[str, Any]:
    """The public detail of an Operation State Change event."""
    return {
        "operationId": item.get("operationId"),
        "type": item.get("type"),
        "status": item.get("status"),
        "clusterTag": item.get("clusterTag"),
        "error": item.get("error"),
    }


def update_stage_resources(
    rt: Runtime,
    *,
    tag: str,
    generation: int,
    stage: StageName,
    resources: dict[str, Any],
    observed_status: str | None = None,
) -> dict[str, Any]:
    """Merge ``resources`` into the stage record (ids the stage produced) and its observed AWS status."""
    updates: dict[str, Any] = {"updatedAt": _now()}
    if observed_status is not None:
        updates["observedStatus"] = observed_status
    # Per-key writes: parallel steps of one stage (add-ons, Kubernetes objects) never lose each other's ids.
    return rt.store.merge_map(keys.cluster_pk(tag), keys.stage_sk(generation, stage), "resources", resources, updates)


def stage_resources(rt: Runtime, tag: str, generation: int, stage: StageName) -> dict[str, Any]:
    """The resource ids recorded by ``stage`` (empty if none)."""
    item = rt.store.get_stage(tag, generation, stage) or {}
    return dict(item.get("resources", {}))


def complete_stage(
    rt: Runtime, *, tag: str, generation: int, stage: StageName, observed_status: str | None = None
) -> dict[str, Any]:
    """RUNNING -> SUCCEEDED for ``stage``; publishes a Stage State Change event."""
    now = _now()
    updates: dict[str, Any] = {"status": StageStatus.SUCCEEDED.value, "endedAt": now, "updatedAt": now}
    if observed_status is not None:
        updates["observedStatus"] = observed_status
    item = rt.store.update(
        keys.cluster_pk(tag),
        keys.stage_sk(generation, stage),
        updates,
        expected_status=[StageStatus.RUNNING.value],
        removes=["taskToken"],
    )
    publish(rt, "Stage State Change", stage_event_detail(item))
    return {"stage": stage.value, "status": StageStatus.SUCCEEDED.value}


def parse_error(error: dict[str, Any] | None) -> dict[str, str]:
    """``{"code", "message"}`` from a Step Functions ``Catch`` result (``{"Error", "Cause"}``).

    Lambda failures carry a JSON ``Cause`` with ``errorType``/``errorMessage``; our steps put the AWS
    code and message verbatim into ``errorMessage`` as JSON.
    """
    error = error or {}
    code = str(error.get("Error") or "States.Runtime")
    message = str(error.get("Cause") or "")
    try:
        cause = json.loads(message)
    except ValueError:
        return {"code": code, "message": message}
    if isinstance(cause, dict) and "errorMessage" in cause:
        message = str(cause["errorMessage"])
        try:
            inner = json.loads(message)
        except ValueError:
            inner = None
        if isinstance(inner, dict) and "code" in inner and "message" in inner:
            return {"code": str(inner["code"]), "message": str(inner["message"])}
        code = str(cause.get("errorType") or code)
    return {"code": code, "message": message}


def record_failure(
    rt: Runtime,
    *,
    operation_id: str,
    tag: str,
    generation: int,
    stage: StageName | None,
    error: dict[str, Any] | None,
    cluster_status: ClusterStatus = ClusterStatus.FAILED,
) -> dict[str, Any]:
    """The single failure path: the stage FAILED (error verbatim), the operation FAILED, the cluster FAILED.

    Stages after the failed one stay PENDING; nothing earlier is rolled back.
    """
    parsed = parse_error(error)
    now = _now()
    if stage is not None:
        try:
            item = rt.store.update(
                keys.cluster_pk(tag),
                keys.stage_sk(generation, stage),
                {"status": StageStatus.FAILED.value, "error": parsed, "endedAt": now, "updatedAt": now},
                expected_status=[StageStatus.RUNNING.value, StageStatus.PENDING.value],
                removes=["taskToken"],
            )
            publish(rt, "Stage State Change", stage_event_detail(item))
        except ConditionFailed:
            pass
    finish_operation(
        rt,
        operation_id=operation_id,
        tag=tag,
        status=OperationStatus.FAILED,
        error=parsed,
        cluster_status=cluster_status,
    )
    return {"error": parsed}


def finish_operation(
    rt: Runtime,
    *,
    operation_id: str,
    tag: str,
    status: OperationStatus,
    cluster_status: ClusterStatus,
    error: dict[str, str] | None = None,
) -> dict[str, Any]:
    """End the operation (``status``) and move the cluster to ``cluster_status`` in one transaction."""
    now = _now()
    op_updates: dict[str, Any] = {"status": status.value, "endedAt": now, "updatedAt": now}
    if error:
        op_updates["error"] = error
    cluster_updates: dict[str, Any] = {"status": cluster_status.value, "updatedAt": now}
    rt.store.transact(
        [
            {
                "update": (keys.operation_pk(operation_id), keys.META),
                "set": op_updates,
                "expected_status": [OperationStatus.PENDING.value, OperationStatus.RUNNING.value],
            },
            {
                "update": (keys.cluster_pk(tag), keys.META),
                "set": cluster_updates,
                "expected_status": [ClusterStatus.CREATING.value, ClusterStatus.DELETING.value],
                "extra_condition": "#opid = :opid",
                "extra_names": {"#opid": "currentOperationId"},
                "extra_values": {":opid": operation_id},
            },
        ]
    )
    op = rt.store.get_operation(operation_id) or {}
    publish(rt, "Operation State Change", operation_event_detail(op))
    return {"status": status.value}


def update_cluster_view(rt: Runtime, tag: str, **views: Any) -> None:
    """Record what a stage observed on the cluster record (``eks``, ``hyperPod``, ``nodes``, ``storage``)."""
    rt.store.update(keys.cluster_pk(tag), keys.META, {**views, "updatedAt": _now()})
