"""Records of stages and operations: what every workflow step writes at the edges of a stage.

Steps call these so DynamoDB, the API, the MCP tools and the Step Functions console agree, and every
change is published as a ``Stage State Change`` / ``Operation State Change`` event. Each write is
conditional on the expected current status (see :class:`instantstart.store.table.Store`).
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import TypeVar

from pydantic import BaseModel

from instantstart.clusters.events import OperationStateChange, StageStateChange, publish
from instantstart.models.cluster import StageError
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType, StageName, iso, utcnow
from instantstart.models.records import ClusterRecord, OperationRecord, StageRecord
from instantstart.models.workflow import ExecutionInput, LoopConfig, StageStarted, StepError, StepResult
from instantstart.naming import storage_bucket_name
from instantstart.runtime import Runtime
from instantstart.store.table import ConditionFailed

R = TypeVar("R", bound=BaseModel)


def now() -> str:
    """The current time as ISO-8601 UTC with a ``Z`` suffix (the records' timestamp format)."""
    return iso(utcnow()) or ""


def execution_input(
    *, operation_id: str, operation_type: OperationType, tag: str, generation: int, start_stage: StageName
) -> ExecutionInput:
    """Input of a create/retry/delete execution: ids plus the loop configuration (realistic seconds).

    The node wait's bound is its time budget in rounds of its poll interval (a wake by an event counts
    as a round too, so the budget never runs longer than ``nodeWaitSeconds``).
    """
    config = LoopConfig()
    config.max_polls.nodes = max(1, -(-config.node_wait_seconds // config.poll_seconds.nodes))
    return ExecutionInput(
        operation_id=operation_id,
        operation_type=operation_type,
        cluster_tag=tag,
        generation=generation,
        start_stage=start_stage,
        config=config,
    )


def live_cluster(rt: Runtime, tag: str) -> ClusterRecord:
    """The live (not DELETED) cluster record of ``tag``, for the API's use cases.

    Raises:
        NotFound: ``ClusterNotFound`` naming ``clusterTag``.
    """
    from instantstart.errors import NotFound

    record = rt.store.get_cluster(tag)
    if record is None or record.status is ClusterStatus.DELETED:
        raise NotFound(f"cluster '{tag}' does not exist", code="ClusterNotFound", details=[{"field": "clusterTag"}])
    return record


def cluster_record(rt: Runtime, tag: str) -> ClusterRecord:
    """The cluster record a step works on.

    Raises:
        StageFailed: the record is missing (``ClusterNotFound``).
    """
    from instantstart.errors import StageFailed

    record = rt.store.get_cluster(tag)
    if record is None:
        raise StageFailed("ClusterNotFound", f"cluster record '{tag}' is missing")
    return record


def _names(rt: Runtime, tag: str, generation: int | None) -> tuple[str, str]:
    """``(EKS cluster name, HyperPod cluster name)`` of cluster ``tag``: the imported cluster's, else
    ``eks-cluster-<tag>`` / ``hp-cluster-<tag>``.

    A generation's names never change (a create or an import writes them with the generation), so with
    ``generation`` they are read once per process (``Runtime.cluster_names``); without it, or while the
    record is of another generation, they are read from the cluster record (DynamoDB ``GetItem``) each time.
    """
    from instantstart.naming import eks_cluster_name, hyperpod_cluster_name

    if generation is not None and (known := rt.cluster_names.get((tag, generation))):
        return known
    record = rt.store.get_cluster(tag)
    if record is None:
        return eks_cluster_name(tag), hyperpod_cluster_name(tag)
    names = (record.eks_cluster_name, record.hyper_pod_cluster_name)
    if generation is not None and record.generation == generation:
        rt.remember_cluster_names(tag, generation, names)
    return names


def eks_name(rt: Runtime, tag: str, generation: int | None = None) -> str:
    """The EKS cluster name of cluster ``tag``: the imported cluster's, else ``eks-cluster-<tag>``.

    ``generation`` (a step's payload has it): read once per process and generation.
    """
    return _names(rt, tag, generation)[0]


def hyperpod_name(rt: Runtime, tag: str, generation: int | None = None) -> str:
    """The HyperPod cluster name of cluster ``tag``: the imported one, else ``hp-cluster-<tag>``.

    ``generation`` (a step's payload has it): read once per process and generation.
    """
    return _names(rt, tag, generation)[1]


def stage_imported(rt: Runtime, tag: str, generation: int, stage: StageName) -> bool:
    """True when ``stage``'s resources existed before ``POST /clusters/import`` (its teardown deletes nothing)."""
    record = rt.store.get_stage(tag, generation, stage)
    return bool(record and record.imported)


def begin_stage(rt: Runtime, *, operation_id: str, tag: str, generation: int, stage: StageName) -> StageStarted:
    """Mark ``stage`` RUNNING (from PENDING or FAILED), count the attempt, and the operation RUNNING.

    A redelivered task finding the stage already RUNNING for this operation writes nothing (it publishes the event
    again: the attempt that wrote the record may have died before publishing); a stage that already SUCCEEDED is
    not run again (``skip``: a retry walks the graph past it).

    Raises:
        ConditionFailed: the stage is RUNNING for another operation.
    """
    existing = rt.store.get_stage(tag, generation, stage)
    if existing is not None and existing.status.value == "SUCCEEDED":
        mark_operation_running(rt, operation_id)
        return StageStarted(stage=stage, skip=True)
    try:
        record = rt.store.begin_stage(tag, generation, stage, operation_id=operation_id, now=now())
        publish(rt, StageStateChange.of(record))
    except ConditionFailed:
        current = rt.store.get_stage(tag, generation, stage)
        if not (current and current.status.value == "RUNNING" and current.operation_id == operation_id):
            raise
        publish(rt, StageStateChange.of(current))  # at least once: the attempt that wrote it may have died first
    mark_operation_running(rt, operation_id)
    return StageStarted(stage=stage)


def mark_operation_running(rt: Runtime, operation_id: str) -> None:
    """PENDING -> RUNNING for the operation (no-op when it already runs or ended)."""
    with suppress(ConditionFailed):
        publish(rt, OperationStateChange.of(rt.store.mark_operation_running(operation_id, now())))


def update_stage_resources(
    rt: Runtime,
    *,
    tag: str,
    generation: int,
    stage: StageName,
    resources: BaseModel,
    observed_status: str | None = None,
) -> StageRecord:
    """Merge the fields set in ``resources`` (a stage's resources model) into the stage record.

    Only fields that are not None are written, key by key, so parallel steps of one stage never lose
    each other's ids. ``observed_status`` is the last AWS/Kubernetes status the step saw.
    """
    entries = resources.model_dump(mode="json", by_alias=True, exclude_none=True)
    return rt.store.merge_stage_resources(tag, generation, stage, entries, now=now(), observed_status=observed_status)


def stage_resources(rt: Runtime, tag: str, generation: int, stage: StageName, model: type[R]) -> R:
    """The resources recorded by ``stage``, read into its resources ``model`` (missing fields are None)."""
    record = rt.store.get_stage(tag, generation, stage)
    return model.model_validate(record.resources if record else {})


def cluster_bucket(rt: Runtime, tag: str) -> str:
    """The bucket of live cluster ``tag``: the storage stage's ``bucketName``, else its name by rule (DynamoDB reads).

    Raises:
        NotFound: no live cluster ``tag``.
    """
    from instantstart.models.resources import StorageResources  # not on the steps' cold start path

    cluster = live_cluster(rt, tag)
    recorded = stage_resources(rt, tag, cluster.generation, StageName.STORAGE, StorageResources).bucket_name
    return recorded or storage_bucket_name(tag, rt.account_id, rt.region)


def complete_stage(
    rt: Runtime,
    *,
    tag: str,
    generation: int,
    stage: StageName,
    observed_status: str | None = None,
    operation_id: str | None = None,
) -> StepResult:
    """RUNNING -> SUCCEEDED for ``stage``; publishes a Stage State Change event.

    With ``operation_id``, a stage this operation already completed is a redelivery (an attempt died after the
    write): nothing is written, the event is published again.

    Raises:
        ConditionFailed: the stage is not RUNNING (nor SUCCEEDED by ``operation_id``).
    """
    try:
        record = rt.store.complete_stage(tag, generation, stage, now=now(), observed_status=observed_status)
    except ConditionFailed:
        current = rt.store.get_stage(tag, generation, stage)
        if operation_id is None or not (
            current and current.status.value == "SUCCEEDED" and current.operation_id == operation_id
        ):
            raise
        record = current
    publish(rt, StageStateChange.of(record))
    return StepResult(status=record.status.value)


def parse_error(error: StepError | None) -> StageError:
    """The AWS code and message of a Step Functions ``Catch`` result (``{"Error", "Cause"}``).

    Lambda failures carry a JSON ``Cause`` with ``errorType``/``errorMessage``; our steps put the AWS
    code and message verbatim into ``errorMessage`` as JSON (:class:`instantstart.errors.StageFailed`).
    """
    error = error or StepError()
    code = str(error.Error or "States.Runtime")
    message = str(error.Cause or "")
    try:
        cause = json.loads(message)
    except ValueError:
        return StageError(code=code, message=message)
    if isinstance(cause, dict) and "errorMessage" in cause:
        message = str(cause["errorMessage"])
        try:
            inner = json.loads(message)
        except ValueError:
            inner = None
        if isinstance(inner, dict) and "code" in inner and "message" in inner:
            return StageError(code=str(inner["code"]), message=str(inner["message"]))
        code = str(cause.get("errorType") or code)
    return StageError(code=code, message=message)


def fail_stage(
    rt: Runtime, *, tag: str, generation: int, stage: StageName, error: StageError, operation_id: str | None = None
) -> None:
    """RUNNING/PENDING -> FAILED for ``stage`` with ``error`` verbatim (no-op if it is in another status)."""
    try:
        record = rt.store.fail_stage(tag, generation, stage, error=error, now=now(), operation_id=operation_id)
    except ConditionFailed:
        return
    publish(rt, StageStateChange.of(record))


INSUFFICIENT_CAPACITY = "InsufficientCapacity"


def cluster_status_after(stage: StageName | None, error: StageError) -> ClusterStatus:
    """The cluster's status after a failed create: DEGRADED when only nodes are missing, else FAILED.

    ``verify`` failing with ``InsufficientCapacity`` leaves a usable cluster with fewer nodes than asked
    (HyperPod keeps provisioning; a reconciler turns it READY when they arrive).
    """
    if stage is StageName.VERIFY and error.code == INSUFFICIENT_CAPACITY:
        return ClusterStatus.DEGRADED
    return ClusterStatus.FAILED


STAGE_INTERRUPTED = "StageInterrupted"
"""The error code of a stage that stopped because another stage of its operation failed: not a cause of its own."""


def root_failure(
    rt: Runtime, *, tag: str, generation: int, operation_id: str, stage: StageName, error: StageError
) -> tuple[StageName, StageError]:
    """The failure an operation ends with: ``stage`` and its ``error``, unless that is only an interruption
    (:data:`STAGE_INTERRUPTED`, e.g. a Parallel branch that found its stage already FAILED) while another stage of
    the operation is FAILED with an error of its own: then that stage and its error, the root cause.

    This keeps the first failure when the branch that met it could not finish recording it (its failure path was
    stopped or failed after failing its stage) and a sibling branch ends the operation instead. Reads the generation's
    stage records (DynamoDB ``Query``) only for an interruption.
    """
    if error.code != STAGE_INTERRUPTED:
        return stage, error
    for record in rt.store.get_stages(tag, generation):
        mine = record.status.value == "FAILED" and record.operation_id == operation_id
        if mine and record.error is not None and record.error.code != STAGE_INTERRUPTED:
            return record.name, record.error
    return stage, error


def fail_running_stages(rt: Runtime, *, tag: str, generation: int, operation_id: str, error: StageError) -> None:
    """Every stage still RUNNING for ``operation_id`` -> FAILED with ``error`` (branches Step Functions stopped)."""
    for stage in rt.store.get_stages(tag, generation):
        if stage.status.value == "RUNNING" and stage.operation_id == operation_id:
            fail_stage(rt, tag=tag, generation=generation, stage=stage.name, error=error, operation_id=operation_id)


CANCELLED_CLUSTER_STATUS = ClusterStatus.FAILED
"""The cluster's status after a cancelled create, retry or delete: one from which it can be retried or deleted."""

CANCEL_ROUNDS = 5
"""How many times :func:`record_cancellation` reads the stages again after its transaction met a stage that moved."""


def cancel_running_stages(rt: Runtime, *, tag: str, generation: int, operation_id: str, error: StageError) -> None:
    """Every stage still RUNNING for ``operation_id`` -> CANCELLED with ``error`` (no-op for the others)."""
    for stage in rt.store.get_stages(tag, generation):
        if stage.status.value == "RUNNING" and stage.operation_id == operation_id:
            with suppress(ConditionFailed):  # it ended meanwhile: what it recorded stays
                record = rt.store.cancel_stage(
                    tag, generation, stage.name, operation_id=operation_id, error=error, now=now()
                )
                publish(rt, StageStateChange.of(record))


def cluster_status_after_end(rt: Runtime, operation: OperationRecord, default: ClusterStatus) -> ClusterStatus:
    """The cluster's status when ``operation`` ends abnormally (cancelled, failed, timed out): ``default`` for a
    create, retry or delete; a day-2 change of an instance group leaves the cluster's status as it is (READY or
    DEGRADED: the cluster stays usable)."""
    if operation.type.day2:
        cluster = rt.store.get_cluster(operation.cluster_tag)
        if cluster is not None:
            return cluster.status
    return default


def record_cancellation(rt: Runtime, operation: OperationRecord, error: StageError) -> OperationRecord:
    """The single cancellation path: the operation CANCELLED with ``error``, its cluster FAILED (a day-2 change of
    an instance group: unchanged, :func:`cluster_status_after_end`), its running stages CANCELLED. An operation
    that does not lock the cluster (a model download) leaves the cluster record alone and releases its guard. Used by
    ``POST /operations/{operationId}/cancel`` after ``StopExecution`` and by the reconciler of an ABORTED execution,
    whichever comes first; the second finds the operation CANCELLED and changes nothing
    but stages still RUNNING.

    One transaction ends the operation (conditional on it being PENDING or RUNNING), moves the cluster and cancels
    the stages it runs, conditional on the other stages being as read (a stage that began or ended meanwhile makes
    it read again, up to :data:`CANCEL_ROUNDS` times): nobody ever reads the operation CANCELLED beside a stage of
    it still RUNNING. From then on a step of the stopped execution still in flight cannot begin a stage or end the
    operation (their writes are conditional on a live operation); a stage it completed before stays SUCCEEDED.

    Returns:
        The CANCELLED operation record.

    Raises:
        ConditionFailed: the operation had already ended with another status (the record says which), or the
            transaction kept failing (see above).
    """
    for _ in range(CANCEL_ROUNDS):
        cancelling = rt.store.stage_cancellation(
            operation.cluster_tag,
            operation.generation,
            operation_id=operation.operation_id,
            error=error,
            now=now(),
        )
        try:
            if operation.type.locks_cluster:
                op = rt.store.finish_operation(
                    operation.operation_id,
                    operation.cluster_tag,
                    status=OperationStatus.CANCELLED,
                    cluster_status=cluster_status_after_end(rt, operation, CANCELLED_CLUSTER_STATUS),
                    now=now(),
                    error=error,
                    cancelling=cancelling,
                )
            else:
                op = rt.store.finish_guarded_operation(
                    operation, status=OperationStatus.CANCELLED, now=now(), error=error, cancelling=cancelling
                )
        except ConditionFailed:
            current = rt.store.get_operation(operation.operation_id)
            if current is None or (current.status.terminal and current.status is not OperationStatus.CANCELLED):
                raise
            if current.status is OperationStatus.CANCELLED:  # cancelled by the other path: finish its stages
                cancel_running_stages(
                    rt,
                    tag=current.cluster_tag,
                    generation=current.generation,
                    operation_id=current.operation_id,
                    error=current.error or error,
                )
                return current
            continue  # a stage began or ended since it was read: read again
        publish(rt, OperationStateChange.of(op))
        for name in cancelling.stages:
            stage = rt.store.get_stage(op.cluster_tag, op.generation, name)
            if stage is not None:
                publish(rt, StageStateChange.of(stage))
        return op
    raise ConditionFailed(
        f"operation {operation.operation_id}: its stages kept moving over {CANCEL_ROUNDS} attempts to cancel it, "
        "or its cluster moved on to another operation"
    )


def record_failure(
    rt: Runtime,
    *,
    operation_id: str,
    tag: str,
    generation: int,
    stage: StageName | None,
    error: StepError | None,
    cluster_status: ClusterStatus | None = None,
    note: str | None = None,
) -> StepResult:
    """The single failure path: the stage FAILED (error verbatim), the operation FAILED, the cluster FAILED
    (or DEGRADED: :func:`cluster_status_after`; ``cluster_status`` overrides it). ``note`` (what a day-2
    change's recovery did) ends the error's message, after AWS's own words.

    The operation records its root cause (:func:`root_failure`): a stage that was only interrupted because another
    stage failed hands the operation that stage's error.

    Stages that were RUNNING beside it for this operation (parallel branches Step Functions stopped)
    are FAILED too; stages after it stay PENDING; nothing earlier is rolled back. An operation that
    already ended is left as it is.
    """
    parsed = parse_error(error)
    if note:
        parsed = parsed.model_copy(update={"message": f"{parsed.message} ({note})"})
    if stage is not None:
        fail_stage(rt, tag=tag, generation=generation, stage=stage, error=parsed)
        interrupted = StageError(code=STAGE_INTERRUPTED, message=f"stopped because stage {stage.value} failed")
        fail_running_stages(rt, tag=tag, generation=generation, operation_id=operation_id, error=interrupted)
        stage, parsed = root_failure(
            rt, tag=tag, generation=generation, operation_id=operation_id, stage=stage, error=parsed
        )
    cluster_status = cluster_status or cluster_status_after(stage, parsed)
    with suppress(ConditionFailed):  # the operation already ended: nothing more to record
        finish_operation(
            rt,
            operation_id=operation_id,
            tag=tag,
            status=OperationStatus.FAILED,
            error=parsed,
            cluster_status=cluster_status,
        )
    return StepResult(status=f"{parsed.code}: {parsed.message}"[:256])


def finish_operation(
    rt: Runtime,
    *,
    operation_id: str,
    tag: str,
    status: OperationStatus,
    cluster_status: ClusterStatus,
    error: StageError | None = None,
) -> StepResult:
    """End the operation (``status``) and move the cluster to ``cluster_status`` in one transaction.

    An operation that does not lock the cluster (``OperationType.locks_cluster`` False: a model download) ends
    without writing the cluster record (``cluster_status`` is not used): its guard is released in the same
    transaction, and whatever operation holds the cluster meanwhile keeps it. Reads the operation first (DynamoDB
    ``GetItem``).

    An operation that already ended with ``status`` is a redelivery (an attempt died after the transaction):
    nothing is written, the event is published again.

    Raises:
        ConditionFailed: the operation already ended with another status, or is no longer the cluster's current
            operation.
    """
    try:
        found = rt.store.get_operation(operation_id)
        if found is not None and not found.type.locks_cluster:
            op = rt.store.finish_guarded_operation(found, status=status, now=now(), error=error)
        else:
            op = rt.store.finish_operation(
                operation_id, tag, status=status, cluster_status=cluster_status, now=now(), error=error
            )
    except ConditionFailed:
        current = rt.store.get_operation(operation_id)
        if current is None or current.status is not status:
            raise
        op = current
    publish(rt, OperationStateChange.of(op))
    return StepResult(status=status.value)
