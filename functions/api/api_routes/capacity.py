"""Routes of a cluster's instance groups and managed Karpenter autoscaling (day 2).

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api_routes.common import (
    _ACCEPTED,
    ClusterTagPath,
    IdempotencyKey,
    _errors,
    _idempotent,
    _json,
    _ok,
    faces,
    runtime,
)
from instantstart.clusters import (
    autoscaling,
    instance_groups,
)
from instantstart.models.autoscaling import AutoScalingView, UpdateAutoScalingRequest
from instantstart.models.cluster import (
    INSTANCE_GROUP_NAME_PATTERN,
    INSTANCE_GROUP_NAME_RULE,
)
from instantstart.models.errors import pattern_rule
from instantstart.models.instance_groups import AddInstanceGroupRequest, InstanceGroupList, UpdateInstanceGroupRequest
from instantstart.models.operation import OperationView

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="capacity")


InstanceGroupName = Annotated[
    str,
    Path(
        alias="instanceGroupName",
        pattern=INSTANCE_GROUP_NAME_PATTERN,
        max_length=63,
        description="HyperPod InstanceGroupName of the group.",
        examples=["accel"],
        json_schema_extra=pattern_rule(INSTANCE_GROUP_NAME_RULE),
    ),
]


@router.get(
    "/clusters/<clusterTag>/instance-groups",
    operation_id="ListInstanceGroups",
    summary="List a cluster's instance groups as HyperPod reports them",
    description="SageMaker DescribeCluster of the cluster's HyperPod cluster, now: each group's instance type, "
    "target and current count, capacity type, training plan, status and subnets. Empty while the HyperPod cluster "
    "does not exist yet.",
    responses={**_ok(InstanceGroupList), **_errors(404, 422, 503)},
    tags=["instance-groups"],
    openapi_extensions=_faces(
        "instance_group_list",
        "List a cluster's instance groups",
        (
            "List a cluster's instance groups as HyperPod reports them now (GET "
            "/clusters/{clusterTag}/instance-groups): each group's instance type, target and current count, capacity "
            "type, training plan, status and subnets.\n\n"
            "Call it before scaling, adding or removing a group, and show the user the current counts. Read-only."
        ),
        cli="groups list",
        read_only=True,
    ),
)
def list_instance_groups(cluster_tag: ClusterTagPath) -> Response[InstanceGroupList]:
    """The cluster's instance groups."""
    return _json(instance_groups.list_instance_groups(runtime(), cluster_tag))


@router.post(
    "/clusters/<clusterTag>/instance-groups",
    operation_id="AddInstanceGroup",
    summary="Add an instance group to a READY or DEGRADED cluster (asynchronous)",
    description="Starts an ADD_INSTANCE_GROUP operation: UpdateCluster with the new group in the cluster zone's "
    "compute subnet, then waits until HyperPod reports it InService at its count. One operation per cluster at a "
    "time (409 names the running one).",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["instance-groups"],
    openapi_extensions=_faces(
        "instance_group_add",
        "Add an instance group",
        (
            "Add an instance group to a READY cluster (POST /clusters/{clusterTag}/instance-groups), in the cluster "
            "zone's compute subnet. Instance type and count are the user's decisions (offer only types from "
            "catalog_list_instance_types). Returns the ADD_INSTANCE_GROUP operation: poll it with operation_get and "
            "wait_seconds until SUCCEEDED, FAILED or CANCELLED. One operation per cluster at a time (409 names the "
            "running one). Write tool: needs --allow-write."
        ),
        cli="groups add",
    ),
)
def add_instance_group(
    cluster_tag: ClusterTagPath,
    request: AddInstanceGroupRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Start adding a group."""
    return _idempotent(
        f"POST /clusters/{cluster_tag}/instance-groups",
        idempotency_key,
        request.to_api(),
        lambda: instance_groups.add_instance_group(runtime(), cluster_tag, request).to_api(),
    )


@router.patch(
    "/clusters/<clusterTag>/instance-groups/<instanceGroupName>",
    operation_id="UpdateInstanceGroup",
    summary="Scale an instance group or change its labels (asynchronous)",
    description="instanceCount (0 allowed) starts a SCALE_INSTANCE_GROUP operation (BatchAddClusterNodes / "
    "BatchDeleteClusterNodes in continuous provisioning: pending nodes are removed first, then the newest); labels "
    "start an UPDATE_INSTANCE_GROUP (UpdateCluster with the group's whole specification). instanceType, "
    "capacityType, trainingPlanArn and subnetId cannot change: a different value answers 409 naming the field.",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["instance-groups"],
    openapi_extensions=_faces(
        "instance_group_update",
        "Scale or relabel an instance group",
        (
            "Scale an instance group (instanceCount, 0 allowed) or replace its Kubernetes labels (PATCH "
            "/clusters/{clusterTag}/instance-groups/{instanceGroupName}).\n\n"
            "Scaling down removes pending instances first, then the newest: confirm with the user before lowering a "
            "count, since work on removed nodes stops. Instance type, capacity type, training plan and subnet cannot "
            "change (409 names the field: add a new group instead). Returns the SCALE_INSTANCE_GROUP or "
            "UPDATE_INSTANCE_GROUP operation: poll it to a terminal state. Write tool: needs --allow-write."
        ),
        cli=("groups scale", "groups update"),
        destructive=True,
        idempotent=True,
    ),
)
def update_instance_group(
    cluster_tag: ClusterTagPath,
    instance_group_name: InstanceGroupName,
    request: UpdateInstanceGroupRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Start a change of one group."""
    return _idempotent(
        f"PATCH /clusters/{cluster_tag}/instance-groups/{instance_group_name}",
        idempotency_key,
        request.model_dump(mode="json", by_alias=True, exclude_none=True),
        lambda: instance_groups.update_instance_group(runtime(), cluster_tag, instance_group_name, request).to_api(),
    )


@router.delete(
    "/clusters/<clusterTag>/instance-groups/<instanceGroupName>",
    operation_id="DeleteInstanceGroup",
    summary="Remove an instance group and its instances (asynchronous)",
    description="Starts a DELETE_INSTANCE_GROUP operation (UpdateCluster InstanceGroupsToDelete) and waits until "
    "HyperPod no longer reports the group. The cluster's last group cannot be removed (409).",
    responses={**_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["instance-groups"],
    openapi_extensions=_faces(
        "instance_group_delete",
        "Remove an instance group",
        (
            "Remove an instance group and all its instances (DELETE "
            "/clusters/{clusterTag}/instance-groups/{instanceGroupName}).\n\n"
            "Destructive: first show the user the group (instance_group_list) and ask them to confirm by typing the "
            "cluster tag; pass what they typed as confirmClusterTag. The last group cannot be removed (409). Returns "
            "the DELETE_INSTANCE_GROUP operation: poll it to a terminal state. Write tool: needs --allow-write."
        ),
        cli="groups delete",
        destructive=True,
        idempotent=True,
        confirm=True,
    ),
)
def delete_instance_group(
    cluster_tag: ClusterTagPath,
    instance_group_name: InstanceGroupName,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Start removing one group."""
    return _idempotent(
        f"DELETE /clusters/{cluster_tag}/instance-groups/{instance_group_name}",
        idempotency_key,
        {"clusterTag": cluster_tag, "instanceGroupName": instance_group_name},
        lambda: instance_groups.delete_instance_group(runtime(), cluster_tag, instance_group_name).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/autoscaling",
    operation_id="GetAutoScaling",
    summary="Managed Karpenter of a cluster: HyperPod's AutoScaling and the NodePool applied",
    description="SageMaker DescribeCluster's AutoScaling (mode, status, failure message) and ClusterRole, now; "
    "the NodePool / HyperpodNodeClass (groups, limits, consolidateAfter) the last successful PUT applied.",
    responses={**_ok(AutoScalingView), **_errors(404, 422, 503)},
    tags=["autoscaling"],
    openapi_extensions=_faces(
        "autoscaling_get",
        "Get a cluster's managed Karpenter",
        (
            "Show a cluster's managed Karpenter (GET /clusters/{clusterTag}/autoscaling): HyperPod's AutoScaling "
            "mode, status and failure message now, its ClusterRole, and the NodePool / HyperpodNodeClass (groups, "
            "limits, consolidateAfter) the last change applied. Read-only."
        ),
        cli="autoscaling get",
        read_only=True,
    ),
)
def get_autoscaling(cluster_tag: ClusterTagPath) -> Response[AutoScalingView]:
    """The cluster's managed Karpenter."""
    return _json(autoscaling.get_autoscaling(runtime(), cluster_tag))


@router.put(
    "/clusters/<clusterTag>/autoscaling",
    operation_id="UpdateAutoScaling",
    summary="Turn managed Karpenter on or off (asynchronous)",
    description="Starts an UPDATE_AUTOSCALING operation. On: the cluster's ClusterRole (IAM), UpdateCluster "
    "AutoScaling {Mode: Enable, AutoScalerType: Karpenter}, then a HyperpodNodeClass of instanceGroups and a "
    "NodePool (consolidation on, limits). The groups are checked first, each rule a 4xx naming it and the group: "
    "they exist (404 InstanceGroupNotFound), are at 0 instances (409 KarpenterGroupNotAtZero), On-Demand (409 "
    "KarpenterGroupNotOnDemand), without onStartDeepHealthChecks (409 KarpenterGroupHasDeepHealthChecks), in one "
    "zone (409 KarpenterGroupsInSeveralZones), at most 10 (422). Off reverses exactly that.",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["autoscaling"],
    openapi_extensions=_faces(
        "autoscaling_update",
        "Turn managed Karpenter on or off",
        (
            "Turn managed Karpenter on or off (PUT /clusters/{clusterTag}/autoscaling).\n\n"
            "On: Karpenter adds nodes to instanceGroups for Pending pods and removes empty or underutilised ones. "
            "First show the user instance_group_list: each group must be at 0 instances (scale it with "
            "instance_group_update), On-Demand, without deep health checks, all in one zone, at most 10; a broken "
            "rule is a 4xx whose code names it (e.g. KarpenterGroupNotAtZero) and whose details name the group. Ask "
            "the user for limits (e.g. the most GPUs Karpenter may buy). Off: Karpenter's nodes are removed with its "
            "NodePool: confirm with the user first. Returns the UPDATE_AUTOSCALING operation: poll it with "
            "operation_get and wait_seconds until SUCCEEDED, FAILED or CANCELLED. Write tool: needs --allow-write."
        ),
        cli=("autoscaling enable", "autoscaling disable"),
        destructive=True,
        idempotent=True,
    ),
)
def update_autoscaling(
    cluster_tag: ClusterTagPath,
    request: UpdateAutoScalingRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Start turning managed Karpenter on or off."""
    return _idempotent(
        f"PUT /clusters/{cluster_tag}/autoscaling",
        idempotency_key,
        request.model_dump(mode="json", by_alias=True, exclude_none=True),
        lambda: autoscaling.update_autoscaling(runtime(), cluster_tag, request).to_api(),
    )
