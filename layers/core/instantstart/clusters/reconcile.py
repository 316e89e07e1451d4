"""Reconciliation on AWS events (EventBridge): wakes waiting workflows and refreshes observed state.

Events arrive twice, late and out of order. :func:`once` runs a handler at most once per EventBridge event id
(a conditional write of the id, kept :data:`EVENT_KEEP_SECONDS`), so a redelivered event does nothing; and every
handler is idempotent besides: waking a wait is harmless (a stale task token is ignored), an observation older
than the recorded one is dropped (``Store.record_hyperpod_observation``), and an event for a cluster without a
running operation only records what it saw. Each handler returns a small :class:`Reconciled` result.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from pydantic import Field

from instantstart.clusters import records, waits
from instantstart.clusters.changes import wake_running_change
from instantstart.models.cluster import StageError
from instantstart.models.common import ApiModel, ClusterStatus, OperationStatus, StageName
from instantstart.models.records import ClusterRecord
from instantstart.models.workflow import StepError
from instantstart.naming import tag_from_eks_cluster_name, tag_from_hyperpod_cluster_name
from instantstart.runtime import Runtime
from instantstart.store.table import ConditionFailed

logger = logging.getLogger(__name__)


class Reconciled(ApiModel):
    """What a reconciler did with one event."""

    action: str = Field(
        description="ignored, recorded, resumed, woken, recovered, already-ended, reconciled, unknown-node, conflict "
        "or duplicate (an event id already handled)"
    )
    cluster_tag: str | None = None
    status: str | None = None
    operation_id: str | None = None
    instance_id: str | None = None


EVENT_KEEP_SECONDS = 86_400
"""How long a handled event id is remembered (seconds): EventBridge retries a delivery for up to 24 hours."""


def once(
    rt: Runtime, event_id: str | None, handle: Callable[[], Reconciled], *, clock: Callable[[], float] = time.time
) -> Reconciled:
    """Run ``handle`` unless EventBridge event ``event_id`` was handled before (then ``action="duplicate"``).

    The id is claimed with a conditional DynamoDB ``PutItem`` (``Store.claim_event``) before ``handle`` runs;
    if ``handle`` raises, the claim is released so the redelivery EventBridge makes runs it. An event
    without an id is handled.
    """
    if not event_id:
        return handle()
    if not rt.store.claim_event(event_id, now=int(clock()), keep_seconds=EVENT_KEEP_SECONDS):
        logger.info("event %s was already handled", event_id)
        return Reconciled(action="duplicate")
    try:
        return handle()
    except BaseException:
        rt.store.release_event(event_id)
        raise


def _our_cluster(rt: Runtime, detail: dict[str, Any]) -> tuple[str | None, ClusterRecord | None]:
    """The tag and live record of the HyperPod cluster ``detail["ClusterName"]`` names (``None``: not ours, or
    DELETED)."""
    tag = tag_from_hyperpod_cluster_name(str(detail.get("ClusterName", "")))
    cluster = rt.store.get_cluster(tag) if tag else None
    if cluster is not None and cluster.status is ClusterStatus.DELETED:
        cluster = None
    return tag, cluster


def on_hyperpod_state_change(rt: Runtime, detail: dict[str, Any], event_time: str | None = None) -> Reconciled:
    """Handle a "SageMaker HyperPod Cluster State Change" event (``detail`` as EventBridge delivers it).

    Records the observed status (unless a newer observation is recorded) and wakes the ``hyperpod``
    stage's wait (:mod:`instantstart.clusters.waits`), which checks AWS at once. Events about clusters
    this control plane did not create are ignored.
    """
    status = str(detail.get("ClusterStatus", ""))
    tag, cluster = _our_cluster(rt, detail)
    if not tag or not cluster:
        return Reconciled(action="ignored", cluster_tag=tag, status=status)
    if detail.get("ClusterArn") and detail.get("InstanceGroups") is not None:
        from instantstart.clusters.stages import hyperpod  # a stage module: imported by the events that use it

        hyperpod.observe(
            rt,
            tag,
            cluster.generation,
            {**detail, "ClusterStatus": status},
            cluster.request.instance_groups,
            event_time=event_time,
        )
    if not waits.wake(rt, tag, cluster.generation, StageName.HYPERPOD, waits.HYPERPOD_CLUSTER):
        if wake_running_change(rt, cluster):
            return Reconciled(action="woken", cluster_tag=tag, status=status)
        return Reconciled(action="recorded", cluster_tag=tag, status=status)
    logger.info("woke the HyperPod stage of %s on %s", tag, status)
    return Reconciled(action="resumed", cluster_tag=tag, status=status)


def on_cluster_event(rt: Runtime, detail: dict[str, Any]) -> Reconciled:
    """Handle a "SageMaker HyperPod Cluster Event" (an instance launched, failed to launch, ...).

    Wakes the ``verify`` stage's wait so it re-checks the nodes now; for a DEGRADED cluster (a create
    that ran out of time waiting for capacity) checks whether the nodes have arrived and, if so, turns
    it READY (:func:`recover_degraded`).

    ``detail`` as AWS's cluster events reference shapes it: the record is under ``detail.EventDetails``
    (``EventId``, ``ClusterName``, ``InstanceGroupName``, ``EventLevel``, ...; sample:
    ``events/eventbridge_hyperpod_cluster_event.json``), not at the top of ``detail``.
    """
    tag, cluster = _our_cluster(rt, cluster_event_record(detail))
    if not tag or not cluster:
        return Reconciled(action="ignored", cluster_tag=tag)
    return _capacity_changed(rt, cluster)


def cluster_event_record(detail: dict[str, Any]) -> dict[str, Any]:
    """The ``ClusterEventDetail`` of a "SageMaker HyperPod Cluster Event"'s ``detail`` (``detail.EventDetails``;
    ``{}`` when absent)."""
    record = detail.get("EventDetails")
    return record if isinstance(record, dict) else {}


def on_addon_health_change(rt: Runtime, detail: dict[str, Any]) -> Reconciled:
    """Handle an "EKS Addon Health Restored" event: wake ``verify``, or recover a DEGRADED cluster.

    Deployment add-ons turn ACTIVE only after nodes can run them, often after the last HyperPod event.
    """
    tag = tag_from_eks_cluster_name(str(detail.get("clusterName", "")))
    cluster = rt.store.get_cluster(tag) if tag else None
    if not tag or cluster is None or cluster.status is ClusterStatus.DELETED:
        return Reconciled(action="ignored", cluster_tag=tag)
    return _capacity_changed(rt, cluster)


def _capacity_changed(rt: Runtime, cluster: ClusterRecord) -> Reconciled:
    """Something the ``verify`` stage checks may have changed: wake a running day-2 change of an instance group;
    recover a DEGRADED cluster, else wake ``verify``."""
    if wake_running_change(rt, cluster):
        return Reconciled(action="woken", cluster_tag=cluster.cluster_tag, operation_id=cluster.current_operation_id)
    if cluster.status is ClusterStatus.DEGRADED:
        return recover_degraded(rt, cluster)
    if waits.wake(rt, cluster.cluster_tag, cluster.generation, StageName.VERIFY, waits.NODES):
        return Reconciled(action="woken", cluster_tag=cluster.cluster_tag)
    return Reconciled(action="recorded", cluster_tag=cluster.cluster_tag)


def recover_degraded(rt: Runtime, cluster: ClusterRecord) -> Reconciled:
    """A DEGRADED cluster whose groups reached their targets (and add-ons are ACTIVE) becomes READY.

    No user action is needed: HyperPod kept provisioning after the create ran out of time.
    """
    from instantstart.clusters.stages import verify

    reached, summary = verify.capacity_reached(rt, cluster.cluster_tag, cluster.generation)
    if not reached:
        return Reconciled(action="recorded", cluster_tag=cluster.cluster_tag, status=summary)
    try:
        rt.store.recover_degraded(
            cluster.cluster_tag,
            cluster.generation,
            observed_status=f"{summary} (the nodes arrived after the create ended)",
            now=records.now(),
        )
    except ConditionFailed:
        return Reconciled(action="already-ended", cluster_tag=cluster.cluster_tag)
    logger.info("cluster %s recovered: DEGRADED -> READY", cluster.cluster_tag)
    return Reconciled(action="recovered", cluster_tag=cluster.cluster_tag, status=ClusterStatus.READY.value)


EXECUTION_END_ERRORS = {
    "ABORTED": ("ExecutionAborted", OperationStatus.CANCELLED),
    "TIMED_OUT": ("ExecutionTimedOut", OperationStatus.FAILED),
    "FAILED": ("ExecutionFailed", OperationStatus.FAILED),
}
"""Execution end status -> (error code when the execution gives none, operation status)."""

LIVE = (OperationStatus.PENDING, OperationStatus.RUNNING)


def on_execution_status_change(rt: Runtime, detail: dict[str, Any]) -> Reconciled:
    """Handle a "Step Functions Execution Status Change" event of a workflow that ended abnormally.

    A workflow records its own failures; this closes what it cannot record itself: an execution
    stopped (ABORTED: by ``POST /operations/{operationId}/cancel`` or by an operator in Step Functions),
    timed out, or failed inside its own failure path. ABORTED is a cancellation, recorded by the one
    cancellation path (:func:`instantstart.clusters.records.record_cancellation`: operation CANCELLED,
    its running stages CANCELLED); TIMED_OUT and FAILED end the operation FAILED and its running stages
    FAILED. Either way the cluster ends FAILED, so nothing is left "running" for ever and the cluster
    can be retried or deleted. An operation that already ended is left alone.
    """
    operation_id = str(detail.get("name", ""))
    status = str(detail.get("status", ""))
    op = rt.store.get_operation(operation_id) if operation_id else None
    if op is None or status not in EXECUTION_END_ERRORS:
        return Reconciled(action="ignored", operation_id=operation_id)
    default_code, op_status = EXECUTION_END_ERRORS[status]
    if detail.get("cause"):  # a Lambda's failure: the AWS code and message inside its JSON, as the failure path reads
        error = records.parse_error(
            StepError(Error=str(detail.get("error") or default_code), Cause=str(detail["cause"]))
        )
    else:
        error = StageError(
            code=str(detail.get("error") or default_code),
            message=f"execution {detail.get('executionArn', operation_id)} {status}",
        )
    if op_status is OperationStatus.CANCELLED and op.status in (OperationStatus.CANCELLED, *LIVE):
        ended_before = op.status.terminal
        try:
            records.record_cancellation(rt, op, error)
        except ConditionFailed:
            return Reconciled(action="already-ended", operation_id=operation_id)
        if ended_before:
            return Reconciled(action="already-ended", operation_id=operation_id)
        logger.info("reconciled operation %s after execution %s", operation_id, status)
        return Reconciled(action="reconciled", operation_id=operation_id)
    if op.status.terminal:
        return Reconciled(action="already-ended", operation_id=operation_id)
    records.fail_running_stages(
        rt, tag=op.cluster_tag, generation=op.generation, operation_id=operation_id, error=error
    )
    try:
        records.finish_operation(
            rt,
            operation_id=operation_id,
            tag=op.cluster_tag,
            status=op_status,
            cluster_status=records.cluster_status_after_end(rt, op, ClusterStatus.FAILED),
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
    happens, and the ``verify`` stage's wait is woken, as is the wait of a running day-2 operation (a node
    reboot, replacement or health check it waits on). The write is conditional on the record's
    ``updatedAt`` and retried, so concurrent findings for different nodes are all kept.
    """
    tag, cluster = _our_cluster(rt, detail)
    instance_id = str(detail.get("InstanceId", ""))
    summary = detail.get("HealthSummary") or {}
    for _ in range(5):
        if not tag or not cluster:
            return Reconciled(action="ignored", cluster_tag=tag, instance_id=instance_id)
        waits.wake(rt, tag, cluster.generation, StageName.VERIFY, waits.NODES)
        wake_running_change(rt, cluster)
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
            tag, cluster = _our_cluster(rt, detail)  # another writer changed the record: read it again
            continue
        return Reconciled(action="recorded", cluster_tag=tag, instance_id=instance_id)
    return Reconciled(action="conflict", cluster_tag=tag, instance_id=instance_id)
