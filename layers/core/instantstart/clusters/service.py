"""Cluster use cases behind the HTTP API: create, list, get, delete, retry a stage, read, list and cancel operations.

Each write validates, records its intent in one DynamoDB transaction conditional on the current
state, then starts the Step Functions execution named after the operation id
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html). A lost race
in the store (:class:`~instantstart.store.table.ConditionFailed`) becomes the API's ``Conflict`` here.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.capacity.preflight import check_some_instances, preflight
from instantstart.capacity.training_plans import check_training_plans
from instantstart.clusters import importing, records, views
from instantstart.clusters.catalog import check_availability_zone, list_availability_zones
from instantstart.clusters.stages import hyperpod
from instantstart.errors import Conflict, InvalidRequest, NotFound, UpstreamUnavailable
from instantstart.models.capacity import AvailabilityZoneChange
from instantstart.models.cluster import (
    ClusterList,
    ClusterView,
    CreateClusterRequest,
    ImportClusterRequest,
    StageError,
    StageList,
)
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType, StageName
from instantstart.models.operation import OperationList, OperationView
from instantstart.models.records import ClusterRecord, OperationRecord, StageRecord
from instantstart.runtime import Runtime
from instantstart.store.table import RETRYABLE_STAGE, ConditionFailed, InvalidPageToken, StoreError

logger = logging.getLogger(__name__)

NOT_STARTED = StageError(code="ExecutionNotStarted", message="Step Functions did not start the workflow")


def new_operation_id() -> str:
    """A new operation id, also the Step Functions execution name (``op-`` + 32 hex, 35 chars).

    The hex is a time-ordered UUID (version 7, RFC 9562: 48-bit Unix milliseconds, then random bits),
    so ids of one cluster sort in the order they were made; the per-cluster listing breaks ties
    between operations of the same second with it (:func:`instantstart.store.keys.operation_index_sk`).
    """
    millis = time.time_ns() // 1_000_000 & (1 << 48) - 1
    rand = int.from_bytes(os.urandom(10), "big")
    value = millis << 80 | 0x7 << 76 | (rand >> 62 & 0xFFF) << 64 | 0b10 << 62 | rand & (1 << 62) - 1
    return f"op-{uuid.UUID(int=value).hex}"


def _new_operation(
    op_type: OperationType, tag: str, generation: int, now: str, stage: StageName | None = None
) -> OperationRecord:
    return OperationRecord(
        operation_id=new_operation_id(),
        type=op_type,
        cluster_tag=tag,
        generation=generation,
        stage=stage,
        created_at=now,
        updated_at=now,
    )


def _started_anyway(rt: Runtime, state_machine_arn: str, operation_id: str) -> str | None:
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


def _launch(
    rt: Runtime,
    operation: OperationRecord,
    *,
    state_machine_arn: str,
    start_stage: StageName,
    undo_to: ClusterStatus,
    undo_operation_id: str | None,
    started_status: ClusterStatus,
) -> OperationView:
    """Start the execution of ``operation``; if Step Functions refuses, undo its records (nothing half-written).

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
        found = _started_anyway(rt, state_machine_arn, operation.operation_id)
        if found is None:
            try:
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


def _free_tag(rt: Runtime, tag: str) -> ClusterRecord | None:
    """The tag's last (DELETED) cluster, or None; a create or import may take the tag.

    Raises:
        Conflict: ``ClusterAlreadyExists``, a live (not DELETED) cluster has the tag.
    """
    existing = rt.store.get_cluster(tag)
    if existing and existing.status is not ClusterStatus.DELETED:
        raise Conflict(
            f"cluster '{tag}' already exists with status {existing.status.value}; "
            "delete it first or choose another clusterTag",
            code="ClusterAlreadyExists",
            details=[{"field": "clusterTag", "status": existing.status.value}],
        )
    return existing


def _placed_and_checked(
    rt: Runtime, request: CreateClusterRequest
) -> tuple[CreateClusterRequest, AvailabilityZoneChange | None]:
    """``request`` moved to its training plans' zone when they pin one (and that move), after the preflight
    checks passed.

    Calls SageMaker ``DescribeTrainingPlan``, EC2 ``DescribeInstanceTypeOfferings`` / ``DescribeSubnets`` and
    Service Quotas (:func:`check_training_plans`, :func:`preflight`).

    Raises:
        Conflict: training plans and a pinned subnet are in different zones.
        ValidationFailed: a failed preflight check (422 with the numbers).
    """
    placement = check_training_plans(rt.client("sagemaker"), rt.client("ec2"), request)
    if placement.change is not None:
        request = request.model_copy(update={"availability_zone": placement.availability_zone})
    preflight(
        rt.client("ec2"),
        rt.client("service-quotas"),
        rt.client("sagemaker"),
        request,
        [z.zone_name for z in list_availability_zones(rt)],
    )
    return request, placement.change


def create_cluster(rt: Runtime, request: CreateClusterRequest) -> OperationView:
    """Create a cluster: records (cluster CREATING, six PENDING stages, operation PENDING) then the execution.

    Before any AWS write: the training plans of TrainingPlan groups are checked and the cluster is placed
    in their zone (:func:`instantstart.capacity.training_plans.check_training_plans`; the answer's
    ``availabilityZoneChange`` says when that is not the requested zone), then the preflight runs in that
    zone (:func:`instantstart.capacity.preflight.preflight`: zones, offerings, service quotas).

    Raises:
        ValidationFailed: every group asks for 0 instances; the zone is not in the Region; a training plan
            does not fit; a preflight check failed.
        Conflict: the tag already has a live (not DELETED) cluster, or a concurrent create won; training plans
            and a pinned subnet are in different zones.
        UpstreamUnavailable: Step Functions refused to start (the records are rolled back).
    """
    tag = request.cluster_tag
    check_some_instances(request)
    check_availability_zone(rt, request.availability_zone)
    existing = _free_tag(rt, tag)
    request, zone_change = _placed_and_checked(rt, request)
    generation = existing.generation + 1 if existing else 1
    now = records.now()
    operation = _new_operation(OperationType.CREATE_CLUSTER, tag, generation, now)
    cluster = ClusterRecord(
        cluster_tag=tag,
        generation=generation,
        status=ClusterStatus.CREATING,
        availability_zone=request.availability_zone,
        region=rt.region,
        request=request,
        created_at=now,
        updated_at=now,
        current_operation_id=operation.operation_id,
    )
    try:
        rt.store.create_cluster(
            cluster,
            [StageRecord.pending(tag, generation, stage, now) for stage in StageName],
            operation,
            replaces_generation=existing.generation if existing else None,
        )
    except ConditionFailed as exc:
        current = rt.store.get_cluster(tag)
        status = current.status.value if current else ClusterStatus.CREATING.value
        raise Conflict(
            f"cluster '{tag}' is being created by another request (status {status})",
            code="ClusterAlreadyExists",
            details=[{"field": "clusterTag", "status": status}],
        ) from exc
    view = _launch(
        rt,
        operation,
        state_machine_arn=rt.settings.CREATE_CLUSTER_STATE_MACHINE_ARN,
        start_stage=StageName.NETWORK,
        undo_to=ClusterStatus.DELETED,
        undo_operation_id=None,
        started_status=ClusterStatus.CREATING,
    )
    return view.model_copy(update={"availability_zone_change": zone_change})


def _imported_by(rt: Runtime, eks_cluster_name: str) -> str | None:
    """The tag of a live cluster that imported EKS cluster ``eks_cluster_name``, if any (every page of the list)."""
    token: str | None = None
    while True:
        page, token = rt.store.list_clusters(100, token)
        for record in page:
            if record.status is not ClusterStatus.DELETED and record.eks_cluster_name == eks_cluster_name:
                return record.cluster_tag
        if not token:
            return None


def import_cluster(rt: Runtime, request: ImportClusterRequest) -> OperationView:
    """Import an existing EKS cluster (and its HyperPod cluster): records, then the create workflow from the first
    missing stage (``IMPORT_CLUSTER`` operation; stages already SUCCEEDED are skipped, ``verify`` always runs).

    Before any write: the refusal rules of :func:`instantstart.clusters.importing.inspect`; without
    ``hyperPodClusterName`` also the zone, training-plan and preflight checks of ``POST /clusters`` for the
    HyperPod cluster that will be created. The cluster record carries ``imported`` (the foreign resources and what
    DELETE leaves); imported stages are SUCCEEDED with ``imported: true``. An imported HyperPod cluster is tagged
    ``instantstart:cluster-tag`` first (:func:`instantstart.clusters.stages.hyperpod.adopt_imported`), which is what
    lets the workflows scale and repair it.

    Raises:
        NotFound: unknown ``eksClusterName`` / ``hyperPodClusterName``.
        ValidationFailed: CONFIG_MAP-only authentication, an unsupported Kubernetes version, a HyperPod cluster of
            another EKS cluster, missing ``instanceGroups``, a failed preflight check.
        Conflict: a live cluster has the tag, the EKS cluster is already managed or not ACTIVE, a HyperPod cluster
            is attached but not named.
        UpstreamUnavailable: Step Functions refused to start (the records are rolled back).
    """
    tag = request.cluster_tag
    existing = _free_tag(rt, tag)
    found = importing.inspect(
        rt.client("eks"),
        rt.client("ec2"),
        rt.client("sagemaker"),
        request,
        principal_arn=rt.settings.CONTROL_PLANE_ROLE_ARN,
        imported_by=_imported_by(rt, request.eks_cluster_name),
    )
    create = importing.create_request(request, found)
    if found.hyperpod is None:
        check_availability_zone(rt, create.availability_zone)
        create, _ = _placed_and_checked(rt, create)
    else:
        hyperpod.adopt_imported(rt.client("sagemaker"), str(found.hyperpod["ClusterArn"]), tag)
    generation = existing.generation + 1 if existing else 1
    now = records.now()
    operation = _new_operation(OperationType.IMPORT_CLUSTER, tag, generation, now)
    cluster = ClusterRecord(
        cluster_tag=tag,
        generation=generation,
        status=ClusterStatus.CREATING,
        availability_zone=create.availability_zone,
        region=rt.region,
        request=create,
        created_at=now,
        updated_at=now,
        current_operation_id=operation.operation_id,
        imported=importing.imported_view(request, found, principal_arn=rt.settings.CONTROL_PLANE_ROLE_ARN),
    )
    stages = importing.plan_stages(
        request, found, generation=generation, now=now, principal_arn=rt.settings.CONTROL_PLANE_ROLE_ARN
    )
    try:
        rt.store.create_cluster(
            cluster, stages, operation, replaces_generation=existing.generation if existing else None
        )
    except ConditionFailed as exc:
        raise Conflict(
            f"cluster '{tag}' is being created by another request",
            code="ClusterAlreadyExists",
            details=[{"field": "clusterTag"}],
        ) from exc
    return _launch(
        rt,
        operation,
        state_machine_arn=rt.settings.CREATE_CLUSTER_STATE_MACHINE_ARN,
        start_stage=importing.first_missing_stage(stages),
        undo_to=ClusterStatus.DELETED,
        undo_operation_id=None,
        started_status=ClusterStatus.CREATING,
    )


def refuse_while_running(rt: Runtime, cluster: ClusterRecord) -> None:
    """The one-operation-per-cluster guard.

    Raises:
        Conflict: ``OperationInProgress``, naming the running operation and its cancel route.
    """
    running = _running_operation(rt, cluster)
    if running:
        raise Conflict(
            f"operation {running.operation_id} ({running.type.value}) is {running.status.value} on cluster "
            f"'{cluster.cluster_tag}'; wait for it to finish or stop it with "
            f"POST /operations/{running.operation_id}/cancel",
            code="OperationInProgress",
            details=[
                {
                    "field": "clusterTag",
                    "operationId": running.operation_id,
                    "operationStatus": running.status.value,
                }
            ],
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

    Raises:
        Conflict: a concurrent request changed the cluster first.
        UpstreamUnavailable: Step Functions refused to start (the records are rolled back).
    """
    try:
        rt.store.start_operation(operation, cluster_status=new_status, from_status=cluster.status)
    except ConditionFailed as exc:
        raise Conflict(
            "the request conflicts with a concurrent change; read the state and retry",
            code="Conflict",
            details=[{"field": "clusterTag"}],
        ) from exc
    return _launch(
        rt,
        operation,
        state_machine_arn=state_machine_arn,
        start_stage=StageName.HYPERPOD,
        undo_to=cluster.status,
        undo_operation_id=cluster.current_operation_id,
        started_status=new_status,
    )


def _running_operation(rt: Runtime, cluster: ClusterRecord) -> OperationRecord | None:
    if not cluster.current_operation_id:
        return None
    op = rt.store.get_operation(cluster.current_operation_id)
    return op if op and not op.status.terminal else None


def _start_on_live_cluster(
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

    Raises:
        Conflict: a concurrent request changed the cluster or the stage first.
    """
    operation = _new_operation(op_type, cluster.cluster_tag, cluster.generation, records.now(), retry_stage)
    if op_type is OperationType.DELETE_CLUSTER and cluster.imported is not None:
        operation = operation.model_copy(update={"retained": list(cluster.imported.retained)})
    try:
        rt.store.start_operation(
            operation, cluster_status=new_status, from_status=cluster.status, retry_stage=retry_stage
        )
    except ConditionFailed as exc:
        raise Conflict(
            "the request conflicts with a concurrent change; read the state and retry",
            code="Conflict",
            details=[{"field": "clusterTag"}],
        ) from exc
    return _launch(
        rt,
        operation,
        state_machine_arn=state_machine_arn,
        start_stage=start_stage,
        undo_to=cluster.status,
        undo_operation_id=cluster.current_operation_id,
        started_status=new_status,
    )


def delete_cluster(rt: Runtime, tag: str) -> OperationView:
    """Start teardown of a READY, DEGRADED or FAILED cluster, in reverse stage order.

    Of an imported cluster only what this control plane created is deleted; the operation's ``retained`` names
    the foreign resources left in place (the cluster record's ``imported.retained``).

    Raises:
        NotFound: no live cluster with this tag.
        Conflict: an operation is running (names its status), or a concurrent request won.
        UpstreamUnavailable: Step Functions refused to start (the records are rolled back).
    """
    cluster = records.live_cluster(rt, tag)
    running = _running_operation(rt, cluster)
    if running or cluster.status not in (ClusterStatus.READY, ClusterStatus.DEGRADED, ClusterStatus.FAILED):
        status = running.status.value if running else cluster.status.value
        raise Conflict(
            f"cluster '{tag}' is {cluster.status.value} and operation "
            f"{cluster.current_operation_id} is {status}; wait for it to finish before deleting, or stop it "
            f"with POST /operations/{cluster.current_operation_id}/cancel and then delete",
            code="OperationInProgress",
            details=[{"field": "clusterTag", "status": cluster.status.value, "operationStatus": status}],
        )
    return _start_on_live_cluster(
        rt,
        cluster,
        op_type=OperationType.DELETE_CLUSTER,
        new_status=ClusterStatus.DELETING,
        state_machine_arn=rt.settings.DELETE_CLUSTER_STATE_MACHINE_ARN,
        start_stage=StageName.VERIFY,
    )


def retry_stage(rt: Runtime, tag: str, stage: StageName) -> OperationView:
    """Run a FAILED (or CANCELLED) stage and every later stage again (earlier stages are kept).

    Raises:
        NotFound: no live cluster.
        Conflict: the stage is not FAILED or CANCELLED (names its status) or an operation is running.
    """
    cluster = records.live_cluster(rt, tag)
    record = rt.store.get_stage(tag, cluster.generation, stage)
    stage_status = record.status.value if record else None
    running = _running_operation(rt, cluster)
    if running:
        raise Conflict(
            f"operation {running.operation_id} is {running.status.value} on cluster '{tag}'; wait for it to finish "
            f"or stop it with POST /operations/{running.operation_id}/cancel",
            code="OperationInProgress",
            details=[{"field": "clusterTag", "operationStatus": running.status.value}],
        )
    retryable = record is not None and record.status in RETRYABLE_STAGE
    if not retryable or cluster.status not in (ClusterStatus.FAILED, ClusterStatus.DEGRADED):
        raise Conflict(
            f"stage '{stage.value}' is {stage_status} (cluster {cluster.status.value}); "
            "only a FAILED or CANCELLED stage can be retried",
            code="StageNotFailed",
            details=[{"field": "stage", "status": stage_status}],
        )
    return _start_on_live_cluster(
        rt,
        cluster,
        op_type=OperationType.RETRY_STAGE,
        new_status=ClusterStatus.CREATING,
        state_machine_arn=rt.settings.CREATE_CLUSTER_STATE_MACHINE_ARN,
        start_stage=stage,
        retry_stage=stage,
    )


def _operation(rt: Runtime, operation_id: str) -> OperationRecord:
    record = rt.store.get_operation(operation_id)
    if record is None:
        raise NotFound(
            f"operation '{operation_id}' does not exist",
            code="OperationNotFound",
            details=[{"field": "operationId"}],
        )
    return record


def get_operation(rt: Runtime, operation_id: str) -> OperationView:
    """One operation.

    Raises:
        NotFound: unknown operation id.
    """
    return views.operation_view(_operation(rt, operation_id))


def execution_arn(state_machine_arn: str, execution_name: str) -> str:
    """The ARN of execution ``execution_name`` of a state machine.

    ``arn:<partition>:states:<region>:<account>:stateMachine:<sm>`` -> ``...:execution:<sm>:<execution_name>``.
    """
    prefix, _, name = state_machine_arn.rpartition(":stateMachine:")
    return f"{prefix}:execution:{name}:{execution_name}"


def _execution_arn(rt: Runtime, op: OperationRecord) -> str:
    """The operation's execution ARN: as recorded, or (between StartExecution and its recording) derived."""
    if op.execution_arn:
        return op.execution_arn
    machine = (
        rt.settings.DELETE_CLUSTER_STATE_MACHINE_ARN
        if op.type is OperationType.DELETE_CLUSTER
        else rt.settings.UPDATE_CLUSTER_STATE_MACHINE_ARN
        if op.type.day2
        else rt.settings.CREATE_CLUSTER_STATE_MACHINE_ARN
    )
    return execution_arn(machine, op.operation_id)


CANCELLED_CODE = "OperationCancelled"
"""Error code of an operation cancelled through the API (also the ``error`` passed to StopExecution)."""


def _already_ended(op: OperationRecord) -> Conflict:
    return Conflict(
        f"operation {op.operation_id} already ended with status {op.status.value}; only a PENDING or RUNNING "
        "operation can be cancelled",
        code="OperationAlreadyEnded",
        details=[{"field": "operationId", "status": op.status.value}],
    )


def cancel_operation(rt: Runtime, operation_id: str) -> OperationView:
    """Cancel a PENDING or RUNNING operation: stop its Step Functions execution, then record the cancellation.

    ``StopExecution`` (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StopExecution.html)
    is synchronous: when it returns, the execution is ABORTED and schedules nothing more. The records are
    then written by :func:`instantstart.clusters.records.record_cancellation` (operation CANCELLED, the
    stage it was running CANCELLED, the cluster FAILED, from which it can be deleted or the stage retried).
    Idempotent: cancelling a CANCELLED operation answers it again. Resources a stopped step created stay
    recorded, so ``DELETE /clusters/{tag}`` tears them down.

    Returns:
        The CANCELLED operation.

    Raises:
        NotFound: unknown operation id.
        Conflict: the operation already ended SUCCEEDED or FAILED (``OperationAlreadyEnded``, names the status),
            also when it ended so while being cancelled.
        UpstreamUnavailable: Step Functions did not stop the execution; nothing was recorded.
    """
    op = _operation(rt, operation_id)
    if op.status is OperationStatus.CANCELLED:
        return views.operation_view(op)
    if op.status.terminal:
        raise _already_ended(op)
    message = f"cancelled with POST /operations/{operation_id}/cancel"
    try:
        rt.client("stepfunctions").stop_execution(
            executionArn=_execution_arn(rt, op), error=CANCELLED_CODE, cause=message
        )
    except Exception as exc:
        code = error_code(exc) or type(exc).__name__
        if code != "ExecutionDoesNotExist":  # not started yet: recording the cancel keeps it from doing anything
            raise UpstreamUnavailable(
                f"Step Functions did not stop the workflow ({code}: {error_message(exc)}); "
                "nothing was changed, retry later"
            ) from exc
    try:
        cancelled = records.record_cancellation(rt, op, StageError(code=CANCELLED_CODE, message=message))
    except ConditionFailed as exc:
        current = _operation(rt, operation_id)
        raise _already_ended(current) from exc
    return views.operation_view(cancelled)


def list_operations(rt: Runtime, tag: str, max_results: int, next_token: str | None) -> OperationList:
    """A page of this control plane's operations on cluster ``tag`` (every generation), newest first.

    A DELETED cluster's operations stay listed (its history); a tag never used is unknown.

    Raises:
        NotFound: no cluster record for ``tag``.
        InvalidRequest: ``next_token`` was not issued by this API for this cluster's operations.
    """
    if rt.store.get_cluster(tag) is None:
        raise NotFound(f"cluster '{tag}' does not exist", code="ClusterNotFound", details=[{"field": "clusterTag"}])
    try:
        page, token = rt.store.list_operations(tag, max_results, next_token)
    except InvalidPageToken as exc:
        raise InvalidRequest(
            "nextToken is not a token returned by this API for this cluster's operations",
            details=[{"field": "nextToken"}],
        ) from exc
    return OperationList(cluster_tag=tag, operations=[views.operation_view(r) for r in page], next_token=token)


def get_stages(rt: Runtime, tag: str) -> StageList:
    """The stages of the cluster's current generation, in order.

    Raises:
        NotFound: no live cluster with this tag.
    """
    cluster = records.live_cluster(rt, tag)
    return StageList(stages=[views.stage_view(s) for s in rt.store.get_stages(tag, cluster.generation)])


def get_cluster(rt: Runtime, tag: str) -> ClusterView:
    """The cluster with its stages and what they last observed (EKS, HyperPod, nodes, storage).

    Raises:
        NotFound: no live cluster with this tag.
    """
    cluster = records.live_cluster(rt, tag)
    return views.cluster_view(cluster, rt.store.get_stages(tag, cluster.generation))


def list_clusters(rt: Runtime, max_results: int, next_token: str | None) -> ClusterList:
    """A page of live clusters (DELETED ones are left out), ordered by tag.

    Raises:
        InvalidRequest: ``next_token`` was not issued by this API.
    """
    try:
        records_page, token = rt.store.list_clusters(max_results, next_token)
    except InvalidPageToken as exc:
        raise InvalidRequest("nextToken is not a token returned by this API", details=[{"field": "nextToken"}]) from exc
    clusters = [views.cluster_summary(r) for r in records_page if r.status is not ClusterStatus.DELETED]
    return ClusterList(clusters=clusters, next_token=token)
