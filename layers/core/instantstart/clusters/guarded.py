"""Operations that do not take their cluster's lock: a model download holds a guard of its own instead.

The cluster's lock (``currentOperationId``, :func:`instantstart.clusters.executions.start_operation_on`) keeps one
operation that changes the cluster at a time. A model download only creates a Kubernetes Job and writes the cluster's
storage: it may run for an hour while the cluster is scaled, changed or used. So it is recorded without becoming the
cluster's current operation and holds a guard (``records.OperationGuardRecord``, :mod:`instantstart.store.guards`)
on what must not be done twice at once (one model at one destination); the guard goes with the operation's end
(:func:`instantstart.clusters.records.finish_operation`, :func:`~instantstart.clusters.records.record_cancellation`).
A cluster delete ends the guarded operations still running (:func:`end_guarded_operations`).
"""

from __future__ import annotations

import logging

from botocore.exceptions import ClientError

from instantstart.aws.transient import transient_reason
from instantstart.clusters import records
from instantstart.clusters.executions import NOT_STARTED, launch, operation_execution_arn, request_too_large
from instantstart.errors import Conflict
from instantstart.models.cluster import StageError
from instantstart.models.common import ClusterStatus, OperationStatus, StageName
from instantstart.models.operation import OperationView
from instantstart.models.records import ClusterRecord, OperationGuardRecord, OperationRecord
from instantstart.runtime import Runtime
from instantstart.store.table import ConditionFailed, ItemTooLarge

logger = logging.getLogger(__name__)

GUARDED_CLUSTER_STATUSES = (ClusterStatus.READY, ClusterStatus.DEGRADED)
"""The cluster statuses in which an operation that does not take the cluster's lock (a model download) may start:
the cluster is usable, whatever day-2 operation runs (day-2 operations keep READY or DEGRADED); not while it is
created, retried, FAILED, deleted or DELETED."""


def guarded_in_progress(cluster: ClusterRecord, running: OperationRecord, subject: str) -> Conflict:
    """The 409 ``OperationInProgress`` of a guarded start refused because ``running`` holds the same guard (e.g. a
    download of the same model to the same destination): names the operation, what it holds and its cancel route,
    in the message and in the details (``operationId``, ``operationType``, ``operationStatus``, ``cancel``)."""
    cancel = f"POST /operations/{running.operation_id}/cancel"
    return Conflict(
        f"operation {running.operation_id} ({running.type.value}) of {subject} is {running.status.value} on cluster "
        f"'{cluster.cluster_tag}'; one runs at a time: wait for it to finish or stop it with {cancel}",
        code="OperationInProgress",
        details=[
            {
                "field": "clusterTag",
                "operationId": running.operation_id,
                "operationType": running.type.value,
                "operationStatus": running.status.value,
                "cancel": cancel,
            }
        ],
    )


def cluster_not_usable(cluster: ClusterRecord) -> Conflict:
    """The 409 ``ClusterNotReady`` of a guarded start on a cluster that is not READY or DEGRADED (names its status)."""
    return Conflict(
        f"cluster '{cluster.cluster_tag}' is {cluster.status.value}; this needs a READY or DEGRADED cluster",
        code="ClusterNotReady",
        details=[{"field": "clusterTag", "status": cluster.status.value}],
    )


def _concurrent() -> Conflict:
    return Conflict(
        "the request conflicts with a concurrent change; read the state and retry",
        code="Conflict",
        details=[{"field": "clusterTag"}],
    )


def start_guarded_operation_on(
    rt: Runtime,
    cluster: ClusterRecord,
    operation: OperationRecord,
    *,
    guard: str,
    subject: str,
    state_machine_arn: str,
) -> OperationView:
    """Record ``operation`` holding the guard ``guard`` (its sort key, ``store.keys.guard_sk``; ``subject`` says
    what it guards, for the 409 of a second start) without taking the cluster's lock (the cluster record is not
    written), then start its execution; if Step Functions refuses, the operation ends FAILED and the guard is
    released.

    The transaction (:meth:`instantstart.store.guards.GuardStore.start_guarded_operation`) is the guard's lock: of
    concurrent starts of the same guard exactly one is recorded; it also requires the cluster to be READY or
    DEGRADED at the operation's generation (:data:`GUARDED_CLUSTER_STATUSES`). A guard left by an operation that
    ended is taken over.

    Raises:
        Conflict: ``OperationInProgress`` naming the live operation that holds the guard; ``ClusterNotReady`` when
            the cluster is not usable; ``Conflict`` when the records changed meanwhile (read and retry).
        PayloadTooLarge: ``RequestTooLarge``; nothing was written.
        UpstreamUnavailable: Step Functions refused to start (the operation FAILED, its guard released).
    """
    operation = operation.model_copy(update={"guard": guard})
    record = OperationGuardRecord(
        cluster_tag=operation.cluster_tag,
        guard=guard,
        operation_id=operation.operation_id,
        operation_type=operation.type,
        created_at=operation.created_at,
        subject=subject,
    )
    stale: str | None = None
    for _ in range(2):
        try:
            rt.store.start_guarded_operation(
                operation, record, cluster_statuses=GUARDED_CLUSTER_STATUSES, stale_operation_id=stale
            )
            break
        except ConditionFailed as exc:
            fresh = rt.store.get_cluster(cluster.cluster_tag)
            if fresh is None or fresh.status not in GUARDED_CLUSTER_STATUSES or fresh.generation != cluster.generation:
                raise cluster_not_usable(fresh or cluster) from exc
            held = rt.store.get_guard(cluster.cluster_tag, guard)
            holder = rt.store.get_operation(held.operation_id) if held else None
            if holder is not None and not holder.status.terminal:
                raise guarded_in_progress(fresh, holder, subject) from exc
            if held is None or held.operation_id == stale:
                raise _concurrent() from exc
            stale = held.operation_id  # its operation ended without releasing it: take it over
        except ItemTooLarge as exc:
            raise request_too_large(exc) from exc
    else:
        raise _concurrent()

    def abandon() -> None:
        rt.store.finish_guarded_operation(
            operation, status=OperationStatus.FAILED, now=records.now(), error=NOT_STARTED, only_pending=True
        )

    return launch(
        rt,
        operation,
        state_machine_arn=state_machine_arn,
        start_stage=StageName.HYPERPOD,
        undo_to=cluster.status,
        undo_operation_id=cluster.current_operation_id,
        started_status=cluster.status,
        abandon=abandon,
    )


CLUSTER_DELETED = "ClusterDeleted"
"""The error code of a guarded operation that a cluster delete ended."""


def end_guarded_operations(rt: Runtime, tag: str) -> list[OperationRecord]:
    """End every guarded operation of cluster ``tag`` that has not ended (a cluster delete: nothing of it may run
    on, nor any guard stay): stop its execution (Step Functions ``StopExecution``; one already ended or never
    started is no failure) and record it CANCELLED with ``ClusterDeleted``, its guard released
    (:func:`instantstart.clusters.records.record_cancellation`). A guard whose operation already ended (or has no
    record) is deleted with no other change. Returns the operations it ended.

    Raises:
        ClientError: a transient Step Functions error (throttling, 5xx): the delete's step retries it. Any other
            refusal (no such execution, one that ended) still records the cancellation.
    """
    ended: list[OperationRecord] = []
    for guard in rt.store.list_guards(tag):
        op = rt.store.get_operation(guard.operation_id)
        if op is None or op.status.terminal:
            rt.store.release_guard(tag, guard.guard, guard.operation_id)
            continue
        message = f"the cluster '{tag}' is being deleted: {op.type.value} {op.operation_id} stopped"
        arn = op.execution_arn or (
            operation_execution_arn(rt, op) if rt.settings.UPDATE_CLUSTER_STATE_MACHINE_ARN else None
        )
        try:
            if arn:  # else its ARN was never recorded (the start's answer was lost): the record alone stops its steps
                rt.client("stepfunctions").stop_execution(executionArn=arn, error=CLUSTER_DELETED, cause=message)
        except ClientError as exc:
            if transient_reason(exc):
                raise
            # not started, or ended meanwhile (whatever Step Functions answers for that): the CANCELLED record makes
            # the writes of any step still in flight fail (they are conditional on a live operation)
            logger.info("operation %s: StopExecution refused (%s), recorded as cancelled", op.operation_id, exc)
        try:
            ended.append(records.record_cancellation(rt, op, StageError(code=CLUSTER_DELETED, message=message)))
        except ConditionFailed:  # it ended meanwhile (its own end released the guard)
            logger.info("operation %s ended before the delete stopped it", op.operation_id)
    return ended
