"""Cluster operations behind the HTTP API: create, list, get, delete, retry a stage, read operations.

Each function validates, writes its records in one DynamoDB transaction conditional on the current
state, then starts the Step Functions execution named after the operation id
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import workflow
from instantstart.errors import Conflict, NotFound, UpstreamUnavailable, ValidationFailed
from instantstart.models.cluster import (
    ClusterList,
    ClusterSummary,
    ClusterView,
    CreateClusterRequest,
    EksView,
    HyperPodView,
    NodeView,
    StageList,
    StageView,
    StorageView,
)
from instantstart.models.common import (
    ClusterStatus,
    OperationStatus,
    OperationType,
    StageName,
    StageStatus,
    iso,
    utcnow,
)
from instantstart.models.operation import OperationView
from instantstart.naming import eks_cluster_name, hyperpod_cluster_name
from instantstart.runtime import Runtime
from instantstart.store import keys

LIVE_STATUSES = (ClusterStatus.CREATING, ClusterStatus.READY, ClusterStatus.FAILED, ClusterStatus.DELETING)


def new_operation_id() -> str:
    """A new operation id, also the Step Functions execution name (``op-`` + 32 hex, 35 chars)."""
    return f"op-{uuid.uuid4().hex}"


def _operation_item(
    *,
    operation_id: str,
    op_type: OperationType,
    tag: str,
    generation: int,
    now: str,
    stage: StageName | None = None,
) -> dict[str, Any]:
    return {
        "PK": keys.operation_pk(operation_id),
        "SK": keys.META,
        "GSI1PK": keys.cluster_pk(tag),
        "GSI1SK": keys.operation_index_sk(now),
        "operationId": operation_id,
        "type": op_type.value,
        "status": OperationStatus.PENDING.value,
        "clusterTag": tag,
        "generation": generation,
        "stage": stage.value if stage else None,
        "createdAt": now,
        "updatedAt": now,
    }


def operation_view(item: dict[str, Any]) -> OperationView:
    """The API view of an operation record."""
    return OperationView(
        operation_id=item["operationId"],
        type=OperationType(item["type"]),
        status=OperationStatus(item["status"]),
        cluster_tag=item["clusterTag"],
        status_url=f"/operations/{item['operationId']}",
        created_at=item["createdAt"],
        updated_at=item["updatedAt"],
        started_at=item.get("startedAt"),
        ended_at=item.get("endedAt"),
        stage=item.get("stage"),
        execution_arn=item.get("executionArn"),
        error=item.get("error"),
    )


def check_availability_zone(rt: Runtime, zone: str) -> str:
    """The zone name if it is an available zone of this Region.

    Calls EC2 ``DescribeAvailabilityZones``.

    Raises:
        ValidationFailed: the zone is not in the Region (details name ``availabilityZone`` and list the zones).
    """
    zones = list_availability_zones(rt)
    names = [z["zoneName"] for z in zones]
    if zone not in names:
        raise ValidationFailed(
            f"availabilityZone '{zone}' is not an available zone of {rt.region}; allowed values: {', '.join(names)}",
            details=[{"field": "availabilityZone", "message": "not in this Region", "allowedValues": names}],
        )
    return zone


def _start_execution(rt: Runtime, state_machine_arn: str, operation_id: str, payload: dict[str, Any]) -> str:
    sfn = rt.client("stepfunctions")
    out = sfn.start_execution(stateMachineArn=state_machine_arn, name=operation_id, input=json.dumps(payload))
    return str(out["executionArn"])


def _launch(
    rt: Runtime,
    *,
    state_machine_arn: str,
    operation_id: str,
    payload: dict[str, Any],
    rollback: list[dict[str, Any]],
) -> None:
    """Start the execution; if Step Functions refuses, undo the records written for it (nothing half-written)."""
    try:
        arn = _start_execution(rt, state_machine_arn, operation_id, payload)
    except Exception as exc:
        rt.store.transact(rollback)
        code = error_code(exc) or type(exc).__name__
        raise UpstreamUnavailable(
            f"Step Functions did not start the workflow ({code}: {error_message(exc)}); "
            "nothing was changed, retry later"
        ) from exc
    rt.store.update(keys.operation_pk(operation_id), keys.META, {"executionArn": arn})


def create_cluster(rt: Runtime, request: CreateClusterRequest) -> OperationView:
    """Create a cluster: records (cluster CREATING, six PENDING stages, operation PENDING) then the execution.

    Raises:
        ValidationFailed: the zone is not in the Region.
        Conflict: the tag already has a live (not DELETED) cluster, or a concurrent create won.
        UpstreamUnavailable: Step Functions refused to start (the records are rolled back).
    """
    tag = request.cluster_tag
    check_availability_zone(rt, request.availability_zone)
    existing = rt.store.get_cluster(tag)
    if existing and existing["status"] != ClusterStatus.DELETED.value:
        raise Conflict(
            f"cluster '{tag}' already exists with status {existing['status']}; "
            "delete it first or choose another clusterTag",
            code="ClusterAlreadyExists",
            details=[{"field": "clusterTag", "status": existing["status"]}],
        )
    generation = int(existing["generation"]) + 1 if existing else 1
    operation_id = new_operation_id()
    now = iso(utcnow()) or ""
    cluster_item: dict[str, Any] = {
        "PK": keys.cluster_pk(tag),
        "SK": keys.META,
        "GSI1PK": keys.CLUSTERS_INDEX_PK,
        "GSI1SK": keys.cluster_index_sk(tag),
        "clusterTag": tag,
        "generation": generation,
        "status": ClusterStatus.CREATING.value,
        "availabilityZone": request.availability_zone,
        "region": rt.region,
        "request": request.to_api(),
        "createdAt": now,
        "updatedAt": now,
        "currentOperationId": operation_id,
    }
    if existing:
        condition = "#s = :deleted AND #gen = :gen"
        cond_names = {"#s": "status", "#gen": "generation"}
        cond_values: dict[str, Any] = {
            ":deleted": ClusterStatus.DELETED.value,
            ":gen": existing["generation"],
        }
    else:
        condition, cond_names, cond_values = "attribute_not_exists(PK)", {}, {}
    writes: list[dict[str, Any]] = [
        {"put": cluster_item, "condition": condition, "names": cond_names, "values": cond_values},
        {
            "put": _operation_item(
                operation_id=operation_id,
                op_type=OperationType.CREATE_CLUSTER,
                tag=tag,
                generation=generation,
                now=now,
            ),
            "condition": "attribute_not_exists(PK)",
        },
    ]
    for stage in StageName:
        writes.append(
            {
                "put": {
                    "PK": keys.cluster_pk(tag),
                    "SK": keys.stage_sk(generation, stage),
                    "clusterTag": tag,
                    "generation": generation,
                    "name": stage.value,
                    "order": stage.order,
                    "status": StageStatus.PENDING.value,
                    "attempts": 0,
                    "resources": {},
                    "createdAt": now,
                    "updatedAt": now,
                },
                "condition": "attribute_not_exists(PK)",
            }
        )
    try:
        rt.store.transact(writes)
    except Conflict as exc:
        current = rt.store.get_cluster(tag) or {}
        raise Conflict(
            f"cluster '{tag}' is being created by another request (status {current.get('status', 'CREATING')})",
            code="ClusterAlreadyExists",
            details=[{"field": "clusterTag", "status": current.get("status")}],
        ) from exc
    rollback: list[dict[str, Any]] = [
        _not_started(operation_id, now),
        {
            "update": (keys.cluster_pk(tag), keys.META),
            "set": {"status": ClusterStatus.DELETED.value, "updatedAt": now},
            "expected_status": [ClusterStatus.CREATING.value],
        },
    ]
    payload = workflow.execution_input(
        operation_id=operation_id,
        operation_type=OperationType.CREATE_CLUSTER,
        tag=tag,
        generation=generation,
        start_stage=StageName.NETWORK,
    )
    _launch(
        rt,
        state_machine_arn=rt.settings.CREATE_CLUSTER_STATE_MACHINE_ARN,
        operation_id=operation_id,
        payload=payload,
        rollback=rollback,
    )
    return get_operation(rt, operation_id)


def _live_cluster(rt: Runtime, tag: str) -> dict[str, Any]:
    item = rt.store.get_cluster(tag)
    if not item or item["status"] == ClusterStatus.DELETED.value:
        raise NotFound(f"cluster '{tag}' does not exist", code="ClusterNotFound", details=[{"field": "clusterTag"}])
    return item


def _running_operation(rt: Runtime, cluster: dict[str, Any]) -> dict[str, Any] | None:
    op_id = cluster.get("currentOperationId")
    if not op_id:
        return None
    op = rt.store.get_operation(op_id)
    if op and not OperationStatus(op["status"]).terminal:
        return op
    return None


def delete_cluster(rt: Runtime, tag: str) -> OperationView:
    """Start teardown of a READY or FAILED cluster, in reverse stage order.

    Raises:
        NotFound: no live cluster with this tag.
        Conflict: an operation is running (names its status), or a concurrent request won.
        UpstreamUnavailable: Step Functions refused to start (the records are rolled back).
    """
    cluster = _live_cluster(rt, tag)
    running = _running_operation(rt, cluster)
    if running or cluster["status"] not in (ClusterStatus.READY.value, ClusterStatus.FAILED.value):
        status = running["status"] if running else cluster["status"]
        raise Conflict(
            f"cluster '{tag}' is {cluster['status']} and operation "
            f"{cluster.get('currentOperationId')} is {status}; wait for it to finish before deleting",
            code="OperationInProgress",
            details=[{"field": "clusterTag", "status": cluster["status"], "operationStatus": status}],
        )
    return _start_on_live_cluster(
        rt,
        cluster,
        op_type=OperationType.DELETE_CLUSTER,
        new_status=ClusterStatus.DELETING,
        state_machine_arn=rt.settings.DELETE_CLUSTER_STATE_MACHINE_ARN,
        start_stage=StageName.VERIFY,
    )


def retry_stage(rt: Runtime, tag: str, stage_name: str) -> OperationView:
    """Run a FAILED stage and every later stage again (earlier stages are kept).

    Raises:
        NotFound: no live cluster, or ``stage_name`` is not a stage (details list the stages).
        Conflict: the stage is not FAILED (names its status) or an operation is running.
    """
    try:
        stage = StageName(stage_name)
    except ValueError as exc:
        allowed = ", ".join(s.value for s in StageName)
        raise NotFound(
            f"stage '{stage_name}' does not exist; allowed values: {allowed}",
            code="StageNotFound",
            details=[{"field": "stage", "allowedValues": [s.value for s in StageName]}],
        ) from exc
    cluster = _live_cluster(rt, tag)
    generation = int(cluster["generation"])
    item = rt.store.get_stage(tag, generation, stage) or {}
    running = _running_operation(rt, cluster)
    if running:
        raise Conflict(
            f"operation {running['operationId']} is {running['status']} on cluster '{tag}'; wait for it to finish",
            code="OperationInProgress",
            details=[{"field": "clusterTag", "operationStatus": running["status"]}],
        )
    if item.get("status") != StageStatus.FAILED.value or cluster["status"] != ClusterStatus.FAILED.value:
        raise Conflict(
            f"stage '{stage.value}' is {item.get('status')} (cluster {cluster['status']}); "
            "only a FAILED stage can be retried",
            code="StageNotFailed",
            details=[{"field": "stage", "status": item.get("status")}],
        )
    return _start_on_live_cluster(
        rt,
        cluster,
        op_type=OperationType.RETRY_STAGE,
        new_status=ClusterStatus.CREATING,
        state_machine_arn=rt.settings.CREATE_CLUSTER_STATE_MACHINE_ARN,
        start_stage=stage,
        failed_stage=stage,
    )


def _not_started(operation_id: str, now: str) -> dict[str, Any]:
    """Rollback write: the operation FAILED because its execution never started."""
    return {
        "update": (keys.operation_pk(operation_id), keys.META),
        "set": {
            "status": OperationStatus.FAILED.value,
            "updatedAt": now,
            "endedAt": now,
            "error": {"code": "ExecutionNotStarted", "message": "Step Functions did not start the workflow"},
        },
        "expected_status": [OperationStatus.PENDING.value],
    }


def _start_on_live_cluster(
    rt: Runtime,
    cluster: dict[str, Any],
    *,
    op_type: OperationType,
    new_status: ClusterStatus,
    state_machine_arn: str,
    start_stage: StageName,
    failed_stage: StageName | None = None,
) -> OperationView:
    """Start an operation on an existing cluster: one transaction, then the execution (or a rollback).

    The transaction moves the cluster from its current status to ``new_status`` (conditional on that
    status and the generation, so a concurrent request loses with 409), checks that ``failed_stage``
    is still FAILED when given, and writes the PENDING operation.
    """
    tag = cluster["clusterTag"]
    generation = int(cluster["generation"])
    previous_status = cluster["status"]
    operation_id = new_operation_id()
    now = iso(utcnow()) or ""
    writes: list[dict[str, Any]] = [
        {
            "update": (keys.cluster_pk(tag), keys.META),
            "set": {"status": new_status.value, "currentOperationId": operation_id, "updatedAt": now},
            "expected_status": [previous_status],
            "extra_condition": "#gen = :gen",
            "extra_names": {"#gen": "generation"},
            "extra_values": {":gen": generation},
        },
        {
            "put": _operation_item(
                operation_id=operation_id, op_type=op_type, tag=tag, generation=generation, now=now, stage=failed_stage
            ),
            "condition": "attribute_not_exists(PK)",
        },
    ]
    if failed_stage is not None:
        writes.append(
            {
                "update": (keys.cluster_pk(tag), keys.stage_sk(generation, failed_stage)),
                "set": {"retryRequestedAt": now},
                "expected_status": [StageStatus.FAILED.value],
            }
        )
    rt.store.transact(writes)
    rollback = [
        {
            "update": (keys.cluster_pk(tag), keys.META),
            "set": {
                "status": previous_status,
                "currentOperationId": cluster.get("currentOperationId"),
                "updatedAt": now,
            },
            "expected_status": [new_status.value],
        },
        _not_started(operation_id, now),
    ]
    payload = workflow.execution_input(
        operation_id=operation_id, operation_type=op_type, tag=tag, generation=generation, start_stage=start_stage
    )
    _launch(rt, state_machine_arn=state_machine_arn, operation_id=operation_id, payload=payload, rollback=rollback)
    return get_operation(rt, operation_id)


def get_operation(rt: Runtime, operation_id: str) -> OperationView:
    """One operation.

    Raises:
        NotFound: unknown operation id.
    """
    item = rt.store.get_operation(operation_id)
    if not item:
        raise NotFound(
            f"operation '{operation_id}' does not exist",
            code="OperationNotFound",
            details=[{"field": "operationId"}],
        )
    return operation_view(item)


def _stage_view(item: dict[str, Any]) -> StageView:
    return StageView(
        name=StageName(item["name"]),
        order=int(item["order"]),
        status=StageStatus(item["status"]),
        attempts=int(item.get("attempts", 0)),
        started_at=item.get("startedAt"),
        ended_at=item.get("endedAt"),
        observed_status=item.get("observedStatus"),
        resources=item.get("resources", {}),
        error=item.get("error"),
        teardown_status=item.get("teardownStatus"),
    )


def get_stages(rt: Runtime, tag: str) -> StageList:
    """The stages of the cluster's current generation, in order.

    Raises:
        NotFound: no live cluster with this tag.
    """
    cluster = _live_cluster(rt, tag)
    return StageList(stages=[_stage_view(i) for i in rt.store.get_stages(tag, int(cluster["generation"]))])


def get_cluster(rt: Runtime, tag: str) -> ClusterView:
    """The cluster with its stages and what they last observed (EKS, HyperPod, nodes, storage).

    Raises:
        NotFound: no live cluster with this tag.
    """
    item = _live_cluster(rt, tag)
    stages = [_stage_view(i) for i in rt.store.get_stages(tag, int(item["generation"]))]
    eks = item.get("eks")
    hyper_pod = item.get("hyperPod")
    storage = item.get("storage")
    return ClusterView(
        cluster_tag=tag,
        generation=int(item["generation"]),
        status=ClusterStatus(item["status"]),
        availability_zone=item["availabilityZone"],
        region=item["region"],
        created_at=item["createdAt"],
        updated_at=item["updatedAt"],
        current_operation_id=item.get("currentOperationId"),
        stages=stages,
        eks=EksView.model_validate(eks) if eks else EksView(cluster_name=eks_cluster_name(tag)),
        hyper_pod=HyperPodView.model_validate(hyper_pod) if hyper_pod else _planned_hyperpod(tag, item),
        nodes=[NodeView.model_validate(n) for n in item.get("nodes", [])],
        storage=StorageView.model_validate(storage) if storage else None,
    )


def _planned_hyperpod(tag: str, item: dict[str, Any]) -> HyperPodView:
    groups = item.get("request", {}).get("instanceGroups", [])
    return HyperPodView.model_validate(
        {
            "clusterName": hyperpod_cluster_name(tag),
            "instanceGroups": [
                {
                    "instanceGroupName": g["instanceGroupName"],
                    "instanceType": g["instanceType"],
                    "instanceCount": g["instanceCount"],
                    "capacityType": g.get("capacityType", "OnDemand"),
                }
                for g in groups
            ],
        }
    )


def list_clusters(rt: Runtime, max_results: int, next_token: str | None) -> ClusterList:
    """A page of live clusters (DELETED ones are left out), ordered by tag.

    Raises:
        InvalidRequest: ``next_token`` was not issued by this API.
    """
    items, token = rt.store.list_clusters(max_results, next_token)
    clusters = [
        ClusterSummary(
            cluster_tag=i["clusterTag"],
            status=ClusterStatus(i["status"]),
            availability_zone=i["availabilityZone"],
            created_at=i["createdAt"],
            updated_at=i["updatedAt"],
            eks_cluster_name=eks_cluster_name(i["clusterTag"]),
            hyper_pod_cluster_name=hyperpod_cluster_name(i["clusterTag"]),
        )
        for i in items
        if i["status"] != ClusterStatus.DELETED.value
    ]
    return ClusterList(clusters=clusters, next_token=token)


def list_availability_zones(rt: Runtime) -> list[dict[str, str]]:
    """Available zones of the Region as ``[{"zoneName", "zoneId"}]`` (EC2 ``DescribeAvailabilityZones``)."""
    out = rt.client("ec2").describe_availability_zones(
        Filters=[
            {"Name": "state", "Values": ["available"]},
            {"Name": "zone-type", "Values": ["availability-zone"]},
        ]
    )
    return [{"zoneName": z["ZoneName"], "zoneId": z["ZoneId"]} for z in out["AvailabilityZones"]]


def list_instance_types(rt: Runtime, zone: str) -> list[str]:
    """HyperPod ``ClusterInstanceType`` values whose EC2 type is offered in ``zone``, sorted.

    Calls EC2 ``DescribeInstanceTypeOfferings`` with ``LocationType=availability-zone``.

    Raises:
        ValidationFailed: the zone is not in the Region.
    """
    from instantstart.models.cluster import hyperpod_instance_types

    check_availability_zone(rt, zone)
    ec2 = rt.client("ec2")
    offered: set[str] = set()
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    for page in paginator.paginate(LocationType="availability-zone", Filters=[{"Name": "location", "Values": [zone]}]):
        offered.update(o["InstanceType"] for o in page["InstanceTypeOfferings"])
    return sorted(t for t in hyperpod_instance_types() if t.removeprefix("ml.") in offered)
