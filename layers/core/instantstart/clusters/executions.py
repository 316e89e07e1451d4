"""How an operation starts: its id and record, the one-operation-per-cluster guard, its Step Functions execution.

:func:`launch` starts the execution named after the operation id
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html) and, when Step Functions
refuses, rolls the operation's records back; :func:`start_operation_on` and :func:`start_on_live_cluster` record
an operation on an existing cluster first (one transaction, conditional on its status). :func:`execution_arn` and
:func:`operation_execution_arn` name the execution of an operation. The use cases of
:mod:`instantstart.clusters.service` and the day-2 changes (:mod:`instantstart.clusters.changes`) start their
operations here; every public name is also importable from :mod:`instantstart.clusters.service`.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import records, views
from instantstart.errors import Conflict, PayloadTooLarge, UpstreamUnavailable
from instantstart.models.cluster import RevokedGrant, StageError
from instantstart.models.common import ClusterStatus, OperationType, StageName
from instantstart.models.operation import OperationView
from instantstart.models.records import ClusterRecord, OperationRecord
from instantstart.naming import TAG_KEY
from instantstart.runtime import Runtime
from instantstart.store.table import ConditionFailed, ItemTooLarge, StoreError

logger = logging.getLogger(__name__)

NOT_STARTED = StageError(code="ExecutionNotStarted", message="Step Functions did not start the workflow")
"""The error recorded on an operation whose execution Step Functions did not start (its records rolled back)."""


_RESERVED: ContextVar[list[str] | None] = ContextVar("reserved_operation_id", default=None)
"""The operation id a request reserved before it wrote anything (:func:`reserving_operation_id`), taken by the first
:func:`new_operation_id` of that request."""


@contextmanager
def reserving_operation_id(operation_id: str) -> Iterator[None]:
    """Make the first :func:`new_operation_id` of the block answer ``operation_id`` (made by :func:`new_operation_id`
    and recorded by the caller beforehand, e.g. in the request's ``Idempotency-Key`` record: a retry of a request whose
    invocation died finds the operation it wrote under that id). Later calls make new ids."""
    token = _RESERVED.set([operation_id])
    try:
        yield
    finally:
        _RESERVED.reset(token)


def new_operation_id() -> str:
    """A new operation id, also the Step Functions execution name (``op-`` + 32 hex, 35 chars); inside
    :func:`reserving_operation_id`, its reserved id the first time.

    The hex is a time-ordered UUID (version 7, RFC 9562: 48-bit Unix milliseconds, then random bits),
    so ids of one cluster sort in the order they were made; the per-cluster listing breaks ties
    between operations of the same second with it (:func:`instantstart.store.keys.operation_index_sk`).
    """
    reserved = _RESERVED.get()
    if reserved:
        return reserved.pop()
    millis = time.time_ns() // 1_000_000 & (1 << 48) - 1
    rand = int.from_bytes(os.urandom(10), "big")
    value = millis << 80 | 0x7 << 76 | (rand >> 62 & 0xFFF) << 64 | 0b10 << 62 | rand & (1 << 62) - 1
    return f"op-{uuid.UUID(int=value).hex}"


def new_operation(
    op_type: OperationType, tag: str, generation: int, now: str, stage: StageName | None = None
) -> OperationRecord:
    """A PENDING operation record of ``op_type`` on generation ``generation`` of cluster ``tag``, with a new id."""
    return OperationRecord(
        operation_id=new_operation_id(),
        type=op_type,
        cluster_tag=tag,
        generation=generation,
        stage=stage,
        created_at=now,
        updated_at=now,
    )


def started_anyway(rt: Runtime, state_machine_arn: str, operation_id: str) -> str | None:
    """The ARN of the execution named ``operation_id`` when it exists although ``StartExecution`` raised (the call
    reached Step Functions and its answer was lost: a timeout, a reset connection), else None.

    The name is the operation's own id, so an execution with it is this operation's. Calls Step Functions
    ``DescribeExecution``; any error there counts as not started.
    """
    arn = execution_arn(state_machine_arn, operation_id)
    try:
        rt.client("stepfunctions").describe_execution(executionArn=arn)
    except (ClientError, BotoCoreError):
        return None
    return arn


def launch(
    rt: Runtime,
    operation: OperationRecord,
    *,
    state_machine_arn: str,
    start_stage: StageName,
    undo_to: ClusterStatus,
    undo_operation_id: str | None,
    started_status: ClusterStatus,
    abandon: Callable[[], None] | None = None,
) -> OperationView:
    """Start the execution of ``operation``; if Step Functions refuses, undo its records (nothing half-written).

    The undo puts the cluster back (``undo_to``, ``undo_operation_id``, from ``started_status``); ``abandon``
    replaces it for an operation that did not take the cluster's lock (it ends the operation and releases its guard,
    raising ``ConditionFailed`` when the operation began meanwhile).

    Once the execution exists the answer is the operation, whatever fails after: a request whose workflow runs
    is never answered as failed (its client would retry with the same ``Idempotency-Key`` and, the failure not
    being stored, start nothing or be refused, while the first workflow runs unanswered). So a ``StartExecution``
    error is checked with ``DescribeExecution`` before the records are rolled back, a rollback that finds the
    operation already begun (its execution started) keeps it, and the ARN's recording is best effort (it is
    derived from the operation id when missing, :func:`execution_arn`).

    Raises:
        UpstreamUnavailable: Step Functions did not start the execution (the records were rolled back).
    """
    payload = records.execution_input(
        operation_id=operation.operation_id,
        operation_type=operation.type,
        tag=operation.cluster_tag,
        generation=operation.generation,
        start_stage=start_stage,
    )
    try:
        out = rt.client("stepfunctions").start_execution(
            stateMachineArn=state_machine_arn, name=operation.operation_id, input=json.dumps(payload.to_wire())
        )
        arn = str(out["executionArn"])
    except Exception as exc:
        found = started_anyway(rt, state_machine_arn, operation.operation_id)
        if found is None:
            try:
                if abandon is not None:
                    abandon()
                else:
                    rt.store.abandon_operation(
                        operation,
                        error=NOT_STARTED,
                        now=records.now(),
                        cluster_status=undo_to,
                        current_operation_id=undo_operation_id,
                        expected_cluster_status=started_status,
                    )
            except ConditionFailed:  # its execution began it meanwhile: it runs
                found = execution_arn(state_machine_arn, operation.operation_id)
        if found is None:
            code = error_code(exc) or type(exc).__name__
            raise UpstreamUnavailable(
                f"Step Functions did not start the workflow ({code}: {error_message(exc)}); "
                "nothing was changed, retry later"
            ) from exc
        arn = found
    try:
        recorded = rt.store.record_execution_arn(operation.operation_id, arn)
    except (ClientError, BotoCoreError, StoreError):
        logger.warning("operation %s: execution %s started, its ARN not recorded", operation.operation_id, arn)
        recorded = operation.model_copy(update={"execution_arn": arn})
    return views.operation_view(recorded)


def running_operation(rt: Runtime, cluster: ClusterRecord) -> OperationRecord | None:
    """The cluster's current operation while it is PENDING or RUNNING, else None (DynamoDB ``GetItem``)."""
    if not cluster.current_operation_id:
        return None
    op = rt.store.get_operation(cluster.current_operation_id)
    return op if op and not op.status.terminal else None


def operation_in_progress(cluster: ClusterRecord, running: OperationRecord) -> Conflict:
    """The 409 ``OperationInProgress`` of a request refused because ``running`` holds the cluster: names the
    operation, its status and its cancel route (``POST /operations/{operationId}/cancel``), in the message and in
    the details (``operationId``, ``operationStatus``, ``cancel``)."""
    cancel = f"POST /operations/{running.operation_id}/cancel"
    return Conflict(
        f"operation {running.operation_id} ({running.type.value}) is {running.status.value} on cluster "
        f"'{cluster.cluster_tag}'; one operation runs on a cluster at a time: wait for it to finish or stop it "
        f"with {cancel}",
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


def refuse_while_running(rt: Runtime, cluster: ClusterRecord) -> None:
    """The early, read-only form of the one-operation-per-cluster guard (a clear answer before any AWS read).

    The lock itself is the conditional write of :func:`start_operation_on` / :func:`start_on_live_cluster`;
    this read only spares a request's checks when an operation already runs.

    Raises:
        Conflict: ``OperationInProgress``, naming the running operation and its cancel route.
    """
    running = running_operation(rt, cluster)
    if running:
        raise operation_in_progress(cluster, running)


def lost_start(rt: Runtime, cluster: ClusterRecord) -> Conflict:
    """The 409 of a start whose conditional write failed (the cluster as read before it is ``cluster``).

    When another operation became the cluster's current one meanwhile (a concurrent start won), the answer is
    ``OperationInProgress`` naming that operation and its cancel route (it may have ended since: its status is
    given); otherwise (the status, generation or stage moved on) a ``Conflict`` asking to read and retry.
    Reads the cluster and that operation again (DynamoDB ``GetItem``).
    """
    fresh = rt.store.get_cluster(cluster.cluster_tag)
    winner_id = fresh.current_operation_id if fresh else None
    winner = rt.store.get_operation(winner_id) if winner_id else None
    if fresh and winner and (winner_id != cluster.current_operation_id or not winner.status.terminal):
        return operation_in_progress(fresh, winner)
    return Conflict(
        "the request conflicts with a concurrent change; read the state and retry",
        code="Conflict",
        details=[{"field": "clusterTag"}],
    )


def request_too_large(exc: ItemTooLarge) -> PayloadTooLarge:
    """The 413 ``RequestTooLarge`` of a request whose record the store refused (:class:`ItemTooLarge`: it would not
    fit DynamoDB's 400 KB item size with the room the workflow's later updates need); names the limit and the
    measured size, in bytes, on ``body``. Nothing was written."""
    message = (
        f"the request is too large to store: its record measures {exc.size} bytes, above the limit of {exc.limit} "
        "bytes (DynamoDB's 400 KB item size less the room the operation's later updates need); shorten the "
        "request's longest fields (e.g. command, args, env)"
    )
    return PayloadTooLarge(
        message,
        code="RequestTooLarge",
        details=[{"field": "body", "limit": exc.limit, "size": exc.size, "message": message}],
    )


def start_operation_on(
    rt: Runtime,
    cluster: ClusterRecord,
    operation: OperationRecord,
    *,
    new_status: ClusterStatus,
    state_machine_arn: str,
) -> OperationView:
    """Record ``operation`` as the cluster's current one (one transaction), then start its execution (or roll back).

    The transaction is the one-operation-per-cluster lock: it is conditional on the cluster's current operation
    being the one read in ``cluster`` (none, or one that ended), so of concurrent starts exactly one is recorded.

    Raises:
        Conflict: ``OperationInProgress`` when a concurrent start won (names its operation and cancel route),
            else ``Conflict`` when the cluster changed first.
        PayloadTooLarge: ``RequestTooLarge`` when the operation record (the request it carries) is too large to
            store (:func:`request_too_large`); nothing was written.
        UpstreamUnavailable: Step Functions refused to start (the records are rolled back).
    """
    try:
        rt.store.start_operation(
            operation,
            cluster_status=new_status,
            from_status=cluster.status,
            expected_operation_id=cluster.current_operation_id,
        )
    except ConditionFailed as exc:
        raise lost_start(rt, cluster) from exc
    except ItemTooLarge as exc:
        raise request_too_large(exc) from exc
    return launch(
        rt,
        operation,
        state_machine_arn=state_machine_arn,
        start_stage=StageName.HYPERPOD,
        undo_to=cluster.status,
        undo_operation_id=cluster.current_operation_id,
        started_status=new_status,
    )


def _grants_to_revoke(rt: Runtime, cluster: ClusterRecord) -> list[RevokedGrant]:
    """What the delete of ``cluster`` takes back from foreign resources: the access stage's grants on entries it
    did not create and the import's tag on an imported HyperPod cluster (DynamoDB read of the access stage)."""
    from instantstart.clusters.stages.access import revoked_grants
    from instantstart.models.resources import AccessResources

    grants = records.stage_resources(rt, cluster.cluster_tag, cluster.generation, StageName.ACCESS, AccessResources)
    out = revoked_grants(grants.grants or [])
    if cluster.imported is not None and cluster.imported.hyper_pod_cluster_name:
        out.append(
            RevokedGrant(
                resource_type="HyperPodCluster", name=cluster.imported.hyper_pod_cluster_name, grant=f"tag {TAG_KEY}"
            )
        )
    return out


def start_on_live_cluster(
    rt: Runtime,
    cluster: ClusterRecord,
    *,
    op_type: OperationType,
    new_status: ClusterStatus,
    state_machine_arn: str,
    start_stage: StageName,
    retry_stage: StageName | None = None,
) -> OperationView:
    """Start an operation on an existing cluster: one transaction, then the execution (or a rollback).

    The transaction moves the cluster from its current status to ``new_status`` (conditional on that
    status and the generation), checks that ``retry_stage`` is still FAILED when given, and writes the
    PENDING operation.

    The same lock as :func:`start_operation_on`: conditional on the cluster's current operation being the one
    read in ``cluster`` (none, or one that ended).

    Raises:
        Conflict: ``OperationInProgress`` when a concurrent start won, else ``Conflict`` when the cluster or the
            stage changed first.
    """
    operation = new_operation(op_type, cluster.cluster_tag, cluster.generation, records.now(), retry_stage)
    if op_type is OperationType.DELETE_CLUSTER and cluster.imported is not None:
        operation = operation.model_copy(update={"retained": list(cluster.imported.retained)})
    if op_type is OperationType.DELETE_CLUSTER and (grants := _grants_to_revoke(rt, cluster)):
        operation = operation.model_copy(update={"revoked_grants": grants})
    try:
        rt.store.start_operation(
            operation,
            cluster_status=new_status,
            from_status=cluster.status,
            expected_operation_id=cluster.current_operation_id,
            retry_stage=retry_stage,
        )
    except ConditionFailed as exc:
        raise lost_start(rt, cluster) from exc
    except ItemTooLarge as exc:
        raise request_too_large(exc) from exc
    return launch(
        rt,
        operation,
        state_machine_arn=state_machine_arn,
        start_stage=start_stage,
        undo_to=cluster.status,
        undo_operation_id=cluster.current_operation_id,
        started_status=new_status,
    )


def execution_arn(state_machine_arn: str, execution_name: str) -> str:
    """The ARN of execution ``execution_name`` of a state machine.

    ``arn:<partition>:states:<region>:<account>:stateMachine:<sm>`` -> ``...:execution:<sm>:<execution_name>``.
    """
    prefix, _, name = state_machine_arn.rpartition(":stateMachine:")
    return f"{prefix}:execution:{name}:{execution_name}"


def operation_execution_arn(rt: Runtime, op: OperationRecord) -> str:
    """The operation's execution ARN: as recorded, or (between StartExecution and its recording) derived. An import
    runs on the create workflow (``clusters/service.py::import_cluster``) although ``OperationType.day2`` counts it."""
    if op.execution_arn:
        return op.execution_arn
    machine = (
        rt.settings.DELETE_CLUSTER_STATE_MACHINE_ARN
        if op.type is OperationType.DELETE_CLUSTER
        else rt.settings.UPDATE_CLUSTER_STATE_MACHINE_ARN
        if op.type.day2 and op.type is not OperationType.IMPORT_CLUSTER
        else rt.settings.CREATE_CLUSTER_STATE_MACHINE_ARN
    )
    return execution_arn(machine, op.operation_id)
