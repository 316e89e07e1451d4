"""Routes of a cluster's nodes and HyperPod operations (software updates, deep health checks).

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
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
    hyperpod_operations,
    nodes,
)
from instantstart.models.cluster import (
    INSTANCE_GROUP_NAME_PATTERN,
    INSTANCE_GROUP_NAME_RULE,
)
from instantstart.models.errors import pattern_rule
from instantstart.models.hyperpod_operations import (
    HYPERPOD_OPERATION_ID_PATTERN,
    HYPERPOD_OPERATION_ID_RULE,
    OPERATIONS_DEFAULT_PAGE_SIZE,
    OPERATIONS_MAX_PAGE_SIZE,
    HealthCheckRequest,
    HyperPodOperationList,
    HyperPodOperationStatus,
    HyperPodOperationType,
    HyperPodOperationView,
    SoftwareUpdateRequest,
)
from instantstart.models.nodes import (
    NODES_DEFAULT_PAGE_SIZE,
    NODES_MAX_PAGE_SIZE,
    NODES_TOKEN_MAX_LENGTH,
    ClusterNodeList,
    DeleteNodesRequest,
    NodeAction,
    RebootOrReplaceNodesRequest,
)
from instantstart.models.operation import OperationView

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="nodes")


# ---------------------------------------------------------------- nodes and HyperPod operations (day 2)
_NODE_ACTION_DESCRIPTION = (
    "Every id must be a node of this cluster (GET /clusters/{clusterTag}/nodes); a foreign or unknown id is a 422 "
    "naming nodeIds[i] and nothing is done. The cluster must be READY or DEGRADED (409 names its status); one "
    "operation per cluster at a time (409 names the running one). Answers 202 with the operation; its workflow makes "
    "the batch call, records HyperPod's per-node answer (result.successful / result.failed, SageMaker's code and "
    "message verbatim; FAILED with the first one when every node was refused) and waits. "
)

NodeListPageToken = Annotated[
    str | None,
    Query(
        alias="nextToken",
        max_length=NODES_TOKEN_MAX_LENGTH,
        description="The nextToken of the previous page (asked with the same filters); omit for the first page.",
    ),
]
InstanceGroupFilter = Annotated[
    str | None,
    Query(
        alias="instanceGroupName",
        pattern=INSTANCE_GROUP_NAME_PATTERN,
        max_length=63,
        description="Only nodes of this instance group; omit for every group.",
        examples=["accel"],
        json_schema_extra=pattern_rule(INSTANCE_GROUP_NAME_RULE),
    ),
]


@router.get(
    "/clusters/<clusterTag>/nodes",
    operation_id="ListClusterNodes",
    summary="List the nodes of a cluster",
    description="SageMaker HyperPod's nodes of the cluster (ListClusterNodes), oldest launch first, each with its "
    "Kubernetes node name and the sagemaker.amazonaws.com/node-health-status label as last observed. Empty while "
    "the HyperPod cluster does not exist.",
    responses={**_ok(ClusterNodeList), **_errors(400, 404, 422, 503)},
    tags=["nodes"],
    openapi_extensions=_faces(
        "node_list",
        "List a cluster's nodes",
        (
            "List a cluster's nodes (GET /clusters/{clusterTag}/nodes): instance id, group, type, SageMaker's "
            "instance status and message, launch time, Kubernetes node name and the node-health-status label as last "
            "observed (Schedulable, Unschedulable, UnschedulablePendingReboot, UnschedulablePendingReplacement; null "
            "= never seen).\n\n"
            "Use it to find the instance ids for node_reboot, node_replace and node_delete, and to follow them. One "
            "page per call: when nextToken is not null, call again with it (and the same instanceGroupName). "
            "Read-only."
        ),
        cli="nodes list",
        read_only=True,
    ),
)
def list_cluster_nodes(
    cluster_tag: ClusterTagPath,
    max_results: Annotated[
        int,
        Query(
            alias="maxResults",
            ge=1,
            le=NODES_MAX_PAGE_SIZE,
            description=f"Most nodes per page, 1-{NODES_MAX_PAGE_SIZE}.",
            examples=[NODES_DEFAULT_PAGE_SIZE],
        ),
    ] = NODES_DEFAULT_PAGE_SIZE,
    next_token: NodeListPageToken = None,
    instance_group_name: InstanceGroupFilter = None,
) -> Response[ClusterNodeList]:
    """A page of the cluster's nodes."""
    return _json(
        nodes.list_cluster_nodes(
            runtime(),
            cluster_tag,
            max_results=max_results,
            next_token=next_token,
            instance_group_name=instance_group_name,
        )
    )


@router.post(
    "/clusters/<clusterTag>/nodes/reboot",
    operation_id="RebootClusterNodes",
    summary="Reboot nodes of a cluster (BatchRebootClusterNodes; asynchronous)",
    description=_NODE_ACTION_DESCRIPTION + "REBOOT_CLUSTER_NODES: a rebooted node keeps its instance id: it is "
    "UnschedulablePendingReboot and NotReady, then Schedulable again; the operation SUCCEEDS once every accepted node "
    "is Running and its Kubernetes node Ready and Schedulable.",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["nodes"],
    openapi_extensions=_faces(
        "node_reboot",
        "Reboot nodes",
        (
            "Reboot nodes of a cluster (POST /clusters/{clusterTag}/nodes/reboot, BatchRebootClusterNodes).\n\n"
            "For a node that is hung or unresponsive but whose hardware is believed fine: same instance id, the node "
            "is NotReady/UnschedulablePendingReboot for a few minutes, then Schedulable. Running jobs on it are "
            "interrupted: tell the user first. Returns the REBOOT_CLUSTER_NODES operation: poll it with operation_get "
            "and wait_seconds until SUCCEEDED (every node back Running, Ready and Schedulable), FAILED or CANCELLED; "
            "its result.failed lists nodes HyperPod refused (code and message verbatim). One operation per cluster at "
            "a time (409 names the running one). Write tool: needs --allow-write."
        ),
        cli="nodes reboot",
    ),
)
def reboot_cluster_nodes(
    cluster_tag: ClusterTagPath,
    request: RebootOrReplaceNodesRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Reboot nodes."""
    return _idempotent(
        f"POST /clusters/{cluster_tag}/nodes/reboot",
        idempotency_key,
        request.to_api(),
        lambda: nodes.act_on_nodes(runtime(), cluster_tag, NodeAction.REBOOT, request.node_ids).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/nodes/replace",
    operation_id="ReplaceClusterNodes",
    summary="Replace nodes of a cluster (BatchReplaceClusterNodes; asynchronous)",
    description=_NODE_ACTION_DESCRIPTION + "REPLACE_CLUSTER_NODES: a replaced node's instance is terminated and a "
    "new instance (new id, new Kubernetes node) takes its place in the same group; the operation SUCCEEDS once the "
    "old ids are gone and the group is back at its target with Running nodes.",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["nodes"],
    openapi_extensions=_faces(
        "node_replace",
        "Replace nodes",
        (
            "Replace nodes of a cluster with new instances (POST /clusters/{clusterTag}/nodes/replace).\n\n"
            "For faulty hardware (failed deep health check, GPU/ECC errors, a reboot that did not help): the instance "
            "is terminated (its local data is lost) and a new instance with a new id joins the same group. Confirm "
            "with the user first. Returns the REPLACE_CLUSTER_NODES operation: poll it with operation_get and "
            "wait_seconds until SUCCEEDED (old ids gone, the group back at its target), FAILED or CANCELLED; "
            "result.failed lists refused nodes. One operation per cluster at a time. Write tool: needs --allow-write."
        ),
        cli="nodes replace",
        destructive=True,
    ),
)
def replace_cluster_nodes(
    cluster_tag: ClusterTagPath,
    request: RebootOrReplaceNodesRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Replace nodes."""
    return _idempotent(
        f"POST /clusters/{cluster_tag}/nodes/replace",
        idempotency_key,
        request.to_api(),
        lambda: nodes.act_on_nodes(runtime(), cluster_tag, NodeAction.REPLACE, request.node_ids).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/nodes/delete",
    operation_id="DeleteClusterNodes",
    summary="Delete nodes of a cluster (BatchDeleteClusterNodes; lowers the group's count; asynchronous)",
    description=_NODE_ACTION_DESCRIPTION + "DELETE_CLUSTER_NODES, destructive: the instances are terminated and each "
    "group's target count is lowered by the nodes deleted, so HyperPod launches no replacement; the operation "
    "SUCCEEDS once the ids are gone and the targets lowered.",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["nodes"],
    openapi_extensions=_faces(
        "node_delete",
        "Delete nodes",
        (
            "Delete nodes of a cluster (POST /clusters/{clusterTag}/nodes/delete, BatchDeleteClusterNodes).\n\n"
            "Destructive: the instances are terminated and their group's count is lowered, so no replacement comes. "
            "Show the user the nodes (node_list) and ask them to confirm by typing the cluster tag; pass it as "
            "confirmClusterTag. Returns the DELETE_CLUSTER_NODES operation: poll it with operation_get and "
            "wait_seconds until SUCCEEDED (the nodes gone, the group's target lowered), FAILED or CANCELLED. Write "
            "tool: needs --allow-write."
        ),
        cli="nodes delete",
        destructive=True,
        confirm=True,
    ),
)
def delete_cluster_nodes(
    cluster_tag: ClusterTagPath,
    request: DeleteNodesRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Delete nodes."""
    return _idempotent(
        f"POST /clusters/{cluster_tag}/nodes/delete",
        idempotency_key,
        request.to_api(),
        lambda: nodes.act_on_nodes(runtime(), cluster_tag, NodeAction.DELETE, request.node_ids).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/software-update",
    operation_id="UpdateClusterSoftware",
    summary="Update the nodes' software (UpdateClusterSoftware), optionally rolling (asynchronous)",
    description="Starts an UPDATE_CLUSTER_SOFTWARE operation: UpdateClusterSoftware patches the AMI of every node of "
    "the chosen instance groups (all groups when none are named), then the operation waits until HyperPod's cluster "
    "and groups are InService again with the update Succeeded (FAILED with HyperPod's words when it failed or rolled "
    "back). The cluster must be READY or DEGRADED (409 names its status), one operation per cluster at a time (409 "
    "names the running one); each group must be a group of the cluster (422 names the field).",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["hyperpod-operations"],
    openapi_extensions=_faces(
        "cluster_update_software",
        "Update the nodes' software",
        (
            "Update the AMI of a cluster's nodes to the latest HyperPod release (POST /clusters/{clusterTag}/ "
            "software-update, UpdateClusterSoftware). The cluster must be READY or DEGRADED.\n\n"
            "Nodes are patched and restarted: running jobs are interrupted, so confirm with the user first. Returns "
            "the UPDATE_CLUSTER_SOFTWARE operation: poll it with operation_get and wait_seconds until SUCCEEDED "
            "(HyperPod InService again with the update Succeeded), FAILED (HyperPod's words) or CANCELLED. One "
            "operation per cluster at a time (409 names the running one). Write tool: needs --allow-write."
        ),
        cli="clusters software-update",
    ),
)
def update_cluster_software(
    cluster_tag: ClusterTagPath,
    request: SoftwareUpdateRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Start a software update."""
    return _idempotent(
        f"POST /clusters/{cluster_tag}/software-update",
        idempotency_key,
        request.to_api(),
        lambda: hyperpod_operations.update_software(runtime(), cluster_tag, request).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/health-checks",
    operation_id="StartClusterHealthCheck",
    summary="Run deep health checks on instance groups (StartClusterHealthCheck; asynchronous)",
    description="Starts a START_CLUSTER_HEALTH_CHECK operation: StartClusterHealthCheck runs a DeepHealthCheck "
    "HyperPod operation (result.hyperPodOperationId); the nodes are unschedulable while checked, a node that fails is "
    "replaced. The operation SUCCEEDS when HyperPod's operation is Done with every node passed, and FAILS with "
    "HyperPod's failure message when a node failed (result.failed lists them). The cluster must be READY or DEGRADED "
    "(409 names its status), one operation per cluster at a time (409); groups and instance ids must be the "
    "cluster's (422 names the field).",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["hyperpod-operations"],
    openapi_extensions=_faces(
        "cluster_start_health_check",
        "Run deep health checks",
        (
            "Run deep health checks on instance groups (POST /clusters/{clusterTag}/health-checks, "
            "StartClusterHealthCheck): a DeepHealthCheck HyperPod operation.\n\n"
            "Checked nodes are unschedulable while the checks run (minutes to hours); a node that fails is replaced. "
            "Confirm with the user first. Returns the START_CLUSTER_HEALTH_CHECK operation: poll it with "
            "operation_get and wait_seconds until SUCCEEDED (every node passed), FAILED (a node failed: the error is "
            "HyperPod's failure message, result.failed lists the nodes) or CANCELLED; result.hyperPodOperationId is "
            "HyperPod's DeepHealthCheck operation (hyperpod_operation_get shows its events). Write tool: needs "
            "--allow-write."
        ),
        cli="clusters health-check",
    ),
)
def start_cluster_health_check(
    cluster_tag: ClusterTagPath,
    request: HealthCheckRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Start deep health checks."""
    return _idempotent(
        f"POST /clusters/{cluster_tag}/health-checks",
        idempotency_key,
        request.to_api(),
        lambda: hyperpod_operations.start_health_check(runtime(), cluster_tag, request).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/hyperpod-operations",
    operation_id="ListHyperPodOperations",
    summary="List HyperPod's operations on a cluster, newest first",
    description="SageMaker HyperPod's own cluster operations (ListClusterOperations: Scaling, DeepHealthCheck), "
    "not this control plane's operations (GET /clusters/{clusterTag}/operations). Empty while the HyperPod cluster "
    "does not exist.",
    responses={**_ok(HyperPodOperationList), **_errors(400, 404, 422, 503)},
    tags=["hyperpod-operations"],
    openapi_extensions=_faces(
        "hyperpod_operation_list",
        "List HyperPod operations",
        (
            "List SageMaker HyperPod's own operations on a cluster, newest first (GET /clusters/{clusterTag}/ "
            "hyperpod-operations): Scaling and DeepHealthCheck operations with status and creation time. Not the "
            "control plane's operations (cluster_list_operations). Read-only."
        ),
        cli="clusters hyperpod-operations",
        read_only=True,
    ),
)
def list_hyperpod_operations(
    cluster_tag: ClusterTagPath,
    max_results: Annotated[
        int,
        Query(
            alias="maxResults",
            ge=1,
            le=OPERATIONS_MAX_PAGE_SIZE,
            description=f"Most operations per page, 1-{OPERATIONS_MAX_PAGE_SIZE}.",
            examples=[OPERATIONS_DEFAULT_PAGE_SIZE],
        ),
    ] = OPERATIONS_DEFAULT_PAGE_SIZE,
    next_token: NodeListPageToken = None,
    status: Annotated[
        HyperPodOperationStatus | None,
        Query(description="Only operations of this status; omit for every status.", examples=["InProgress"]),
    ] = None,
    type: Annotated[
        HyperPodOperationType | None,
        Query(description="Only operations of this type; omit for every type.", examples=["DeepHealthCheck"]),
    ] = None,
) -> Response[HyperPodOperationList]:
    """A page of HyperPod operations."""
    return _json(
        hyperpod_operations.list_operations(
            runtime(), cluster_tag, max_results=max_results, next_token=next_token, status=status, type=type
        )
    )


@router.get(
    "/clusters/<clusterTag>/hyperpod-operations/<hyperPodOperationId>",
    operation_id="GetHyperPodOperation",
    summary="Get one HyperPod operation with its events",
    description="DescribeClusterOperation (type, status, creation time, ScalingDetails or DeepHealthCheckDetails) "
    "and the operation's newest HyperPod events.",
    responses={**_ok(HyperPodOperationView), **_errors(404, 422, 503)},
    tags=["hyperpod-operations"],
    openapi_extensions=_faces(
        "hyperpod_operation_get",
        "Get a HyperPod operation",
        (
            "Get one HyperPod operation (GET /clusters/{clusterTag}/hyperpod-operations/{hyperPodOperationId}): type, "
            "status, scaling or deep-health-check details and its newest HyperPod events (SageMaker's descriptions "
            "verbatim). Read-only."
        ),
        cli="clusters hyperpod-operations",
        read_only=True,
    ),
)
def get_hyperpod_operation(
    cluster_tag: ClusterTagPath,
    hyper_pod_operation_id: Annotated[
        str,
        Path(
            alias="hyperPodOperationId",
            pattern=HYPERPOD_OPERATION_ID_PATTERN,
            description="SageMaker's operation id (from GET /clusters/{clusterTag}/hyperpod-operations).",
            examples=["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"],
            json_schema_extra=pattern_rule(HYPERPOD_OPERATION_ID_RULE),
        ),
    ],
) -> Response[HyperPodOperationView]:
    """One HyperPod operation."""
    return _json(hyperpod_operations.get_operation(runtime(), cluster_tag, hyper_pod_operation_id))
