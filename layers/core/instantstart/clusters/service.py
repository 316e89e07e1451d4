"""Cluster use cases behind the HTTP API: create, list, get, delete, retry a stage, read, list and cancel operations.

Each write validates, records its intent in one DynamoDB transaction conditional on the current
state, then starts the Step Functions execution named after the operation id
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html). A lost race
in the store (:class:`~instantstart.store.table.ConditionFailed`) becomes the API's ``Conflict`` here. How an
operation starts (its id, the one-operation-per-cluster guard, the execution started or rolled back) is
:mod:`instantstart.clusters.executions`; its public names are importable from here too.
"""

from __future__ import annotations

from instantstart.aws.clients import error_code, error_message
from instantstart.capacity.preflight import check_some_instances, preflight
from instantstart.capacity.training_plans import check_training_plans
from instantstart.clusters import importing, records, views
from instantstart.clusters.catalog import check_availability_zone, list_availability_zones
from instantstart.clusters.executions import (
    NOT_STARTED,
    execution_arn,
    launch,
    new_operation,
    new_operation_id,
    operation_execution_arn,
    operation_in_progress,
    refuse_while_running,
    request_too_large,
    running_operation,
    start_on_live_cluster,
    start_operation_on,
)
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
from instantstart.store.table import RETRYABLE_STAGE, ConditionFailed, InvalidPageToken, ItemTooLarge

__all__ = [
    "CANCELLED_CODE",
    "NOT_STARTED",
    "cancel_operation",
    "create_cluster",
    "delete_cluster",
    "execution_arn",
    "get_cluster",
    "get_operation",
    "get_stages",
    "import_cluster",
    "list_clusters",
    "list_operations",
    "new_operation_id",
    "operation_in_progress",
    "refuse_while_running",
    "retry_stage",
    "start_operation_on",
]


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
        PayloadTooLarge: ``RequestTooLarge`` when the request is too large to store on the cluster record (limit
            and size in bytes); nothing was written.
        UpstreamUnavailable: Step Functions refused to start (the records are rolled back).
    """
    tag = request.cluster_tag
    check_some_instances(request)
    check_availability_zone(rt, request.availability_zone)
    existing = _free_tag(rt, tag)
    request, zone_change = _placed_and_checked(rt, request)
    generation = existing.generation + 1 if existing else 1
    now = records.now()
    operation = new_operation(OperationType.CREATE_CLUSTER, tag, generation, now)
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
    except ItemTooLarge as exc:
        raise request_too_large(exc) from exc
    view = launch(
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
        PayloadTooLarge: ``RequestTooLarge`` when the request is too large to store on the cluster record (limit
            and size in bytes); nothing was written.
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
    operation = new_operation(OperationType.IMPORT_CLUSTER, tag, generation, now)
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
    except ItemTooLarge as exc:
        raise request_too_large(exc) from exc
    return launch(
        rt,
        operation,
        state_machine_arn=rt.settings.CREATE_CLUSTER_STATE_MACHINE_ARN,
        start_stage=importing.first_missing_stage(stages),
        undo_to=ClusterStatus.DELETED,
        undo_operation_id=None,
        started_status=ClusterStatus.CREATING,
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
    running = running_operation(rt, cluster)
    if running or cluster.status not in (ClusterStatus.READY, ClusterStatus.DEGRADED, ClusterStatus.FAILED):
        status = running.status.value if running else cluster.status.value
        raise Conflict(
            f"cluster '{tag}' is {cluster.status.value} and operation "
            f"{cluster.current_operation_id} is {status}; wait for it to finish before deleting, or stop it "
            f"with POST /operations/{cluster.current_operation_id}/cancel and then delete",
            code="OperationInProgress",
            details=[
                {
                    "field": "clusterTag",
                    "status": cluster.status.value,
                    "operationId": cluster.current_operation_id,
                    "operationStatus": status,
                    "cancel": f"POST /operations/{cluster.current_operation_id}/cancel",
                }
            ],
        )
    return start_on_live_cluster(
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
    running = running_operation(rt, cluster)
    if running:
        raise operation_in_progress(cluster, running)
    retryable = record is not None and record.status in RETRYABLE_STAGE
    if not retryable or cluster.status not in (ClusterStatus.FAILED, ClusterStatus.DEGRADED):
        raise Conflict(
            f"stage '{stage.value}' is {stage_status} (cluster {cluster.status.value}); "
            "only a FAILED or CANCELLED stage can be retried",
            code="StageNotFailed",
            details=[{"field": "stage", "status": stage_status}],
        )
    return start_on_live_cluster(
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
            executionArn=operation_execution_arn(rt, op), error=CANCELLED_CODE, cause=message
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
    """A page of live clusters (DELETED ones are left out), ordered by tag, each with its stages' statuses (one
    DynamoDB ``BatchGetItem`` per 100 stage records: ``Store.get_stages_of``) and node counts per group.

    Raises:
        InvalidRequest: ``next_token`` was not issued by this API.
    """
    try:
        records_page, token = rt.store.list_clusters(max_results, next_token)
    except InvalidPageToken as exc:
        raise InvalidRequest("nextToken is not a token returned by this API", details=[{"field": "nextToken"}]) from exc
    live = [r for r in records_page if r.status is not ClusterStatus.DELETED]
    stages = rt.store.get_stages_of([(r.cluster_tag, r.generation) for r in live]) if live else {}
    clusters = [views.cluster_summary(r, stages.get(r.cluster_tag, [])) for r in live]
    return ClusterList(clusters=clusters, next_token=token)
