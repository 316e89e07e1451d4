"""Routes of the HTTP API. Thin: parse, call one core function, map the result."""

from __future__ import annotations

from typing import Annotated, Any, cast

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, Field

from instantstart.capacity import training_plans
from instantstart.clusters import (
    autoscaling,
    catalog,
    events_feed,
    hyperpod_operations,
    instance_groups,
    nodes,
    service,
    task_governance,
)
from instantstart.clusters.catalog import AvailabilityZone
from instantstart.features import service as features
from instantstart.inference import endpoints as inference_endpoints
from instantstart.inference import invoke as inference_invoke
from instantstart.inference import service as inference
from instantstart.mlflow import runs as mlflow_runs
from instantstart.mlflow import service as mlflow
from instantstart.models.autoscaling import AutoScalingView, UpdateAutoScalingRequest
from instantstart.models.capacity import TrainingPlanList, TrainingPlanOfferingList
from instantstart.models.cluster import (
    AVAILABILITY_ZONE_PATTERN,
    AVAILABILITY_ZONE_RULE,
    INSTANCE_GROUP_NAME_PATTERN,
    INSTANCE_GROUP_NAME_RULE,
    INSTANCE_TYPE_PATTERN,
    INSTANCE_TYPE_RULE,
    ClusterList,
    ClusterTag,
    ClusterView,
    CreateClusterRequest,
    ImportClusterRequest,
    StageList,
)
from instantstart.models.cluster_events import (
    EVENTS_DEFAULT_PAGE_SIZE,
    EVENTS_MAX_PAGE_SIZE,
    EVENTS_TOKEN_MAX_LENGTH,
    ClusterEventLevel,
    ClusterEventList,
)
from instantstart.models.common import ApiModel, StageName
from instantstart.models.errors import ErrorResponse, pattern_rule
from instantstart.models.features import FeatureList, FeatureUpdateResult, UpdateFeaturesRequest
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
from instantstart.models.inference import (
    DEPLOYMENT_NAME_MAX,
    DEPLOYMENT_NAME_PATTERN,
    DEPLOYMENT_NAME_RULE,
    CreateInferenceDeploymentRequest,
    CreateRouterRequest,
    DownloadModelRequest,
    InferenceDeploymentAccepted,
    InferenceDeploymentList,
    InferenceDeploymentView,
    InvokeDeploymentRequest,
    InvokeDeploymentView,
    ModelDownloadAccepted,
    ModelList,
    ScaleInferenceDeploymentRequest,
)
from instantstart.models.inference_endpoints import (
    ENDPOINT_NAME_MAX,
    ENDPOINT_NAME_PATTERN,
    ENDPOINT_NAME_RULE,
    CreateInferenceEndpointRequest,
    InferenceEndpointAccepted,
    InferenceEndpointList,
    InferenceEndpointView,
    InvokeEndpointRequest,
    InvokeEndpointView,
)
from instantstart.models.instance_groups import AddInstanceGroupRequest, InstanceGroupList, UpdateInstanceGroupRequest
from instantstart.models.mlflow import MlflowRunList, MlflowView, UpdateMlflowRequest
from instantstart.models.nodes import (
    NODES_DEFAULT_PAGE_SIZE,
    NODES_MAX_PAGE_SIZE,
    NODES_TOKEN_MAX_LENGTH,
    ClusterNodeList,
    DeleteNodesRequest,
    NodeAction,
    RebootOrReplaceNodesRequest,
)
from instantstart.models.operation import OperationId, OperationList, OperationView
from instantstart.models.task_governance import (
    COMPUTE_QUOTA_NAME_PATTERN,
    COMPUTE_QUOTA_NAME_RULE,
    ComputeQuotaList,
    ComputeQuotaView,
    CreateComputeQuotaRequest,
    PutSchedulerConfigRequest,
    SchedulerConfigView,
    UpdateComputeQuotaRequest,
)
from instantstart.models.training_jobs import (
    CONTAINER_NAME_MAX,
    CONTAINER_NAME_PATTERN,
    CONTAINER_NAME_RULE,
    JOB_NAME_MAX,
    JOB_NAME_PATTERN,
    JOB_NAME_RULE,
    LIST_DEFAULT_PAGE_SIZE,
    LIST_MAX_PAGE_SIZE,
    LIST_TOKEN_MAX_LENGTH,
    LOG_MAX_SINCE_SECONDS,
    LOG_MAX_TAIL_LINES,
    NAMESPACE_PATTERN,
    NAMESPACE_RULE,
    POD_NAME_MAX,
    POD_NAME_PATTERN,
    POD_NAME_RULE,
    CreateTrainingJobRequest,
    TrainingJobAccepted,
    TrainingJobList,
    TrainingJobLogs,
    TrainingJobRequest,
    TrainingJobView,
)
from instantstart.runtime import Runtime
from instantstart.training import service as training

router = APIGatewayHttpRouter()

IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9._:-]+$"
IDEMPOTENCY_KEY_RULE = "letters, digits, '.', '_', ':' or '-' only (e.g. a UUID)"
"""The Idempotency-Key pattern in words."""

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=128,
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Optional: the same key with the same body returns the same operation; "
        "with a different body the answer is 409.",
        examples=["3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c"],
        json_schema_extra=pattern_rule(IDEMPOTENCY_KEY_RULE),
    ),
]


def runtime() -> Runtime:
    """The runtime the handler put in the resolver's context for this request (built at cold start)."""
    return cast(Runtime, router.context["runtime"])


def _json(model: BaseModel, status: int = 200, headers: dict[str, str] | None = None) -> Response[Any]:
    # Powertools validates the body against the route's response model and serialises it by alias.
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=model, headers=headers)


def _accepted(op: OperationView) -> Response[Any]:
    return _json(op, 202, {"Location": op.status_url})


def _idempotent(route: str, key: str | None, body: Any, call: Any) -> Response[Any]:
    from api_idempotency import run_idempotent

    op = run_idempotent(router.context["idempotency"], route=route, key=key, body=body, call=call)
    return _accepted(OperationView.model_validate(op))


def _idempotent_202(route: str, key: str | None, body: Any, model: type[BaseModel], call: Any) -> Response[Any]:
    """202 with ``call``'s answer, run once per ``Idempotency-Key`` (a repeat replays the stored answer)."""
    from api_idempotency import run_idempotent

    answer = run_idempotent(router.context["idempotency"], route=route, key=key, body=body, call=call)
    return _json(model.model_validate(answer), 202)


_ERROR_MEANINGS = {
    400: "Malformed request (body not JSON, bad nextToken)",
    404: "Unknown cluster or operation",
    409: "Conflict with the current state (names it)",
    413: "The body is above the route's bound (names the field and the bound)",
    415: "Body is not application/json",
    422: "A field failed validation: each detail names the field and states its rule (range, allowed values, "
    "length, format in words)",
    502: "The AWS service behind the route failed the call (its code and message verbatim)",
    503: "An AWS dependency is unavailable; nothing was changed",
}


def _errors(*codes: int) -> dict[int, OpenAPIResponse]:
    """OpenAPI responses for the error answers of a route (the API's error shape, not Powertools')."""
    return {
        code: {"description": _ERROR_MEANINGS[code], "content": {"application/json": {"model": ErrorResponse}}}
        for code in codes
    }


def _ok(model: type[BaseModel]) -> dict[int, OpenAPIResponse]:
    """The 200 response of a read route."""
    return {200: {"description": "OK", "content": {"application/json": {"model": model}}}}


_ACCEPTED: dict[int, OpenAPIResponse] = {
    202: {"description": "Operation accepted", "content": {"application/json": {"model": OperationView}}}
}


class AvailabilityZoneList(ApiModel):
    """Body of ``GET /catalog/availability-zones``."""

    availability_zones: list[AvailabilityZone] = Field(description="The zones of the API's Region.")


class InstanceTypeList(ApiModel):
    """Body of ``GET /catalog/instance-types``."""

    instance_types: list[str] = Field(
        description="HyperPod instance types offered in the zone.", examples=[["ml.g5.8xlarge", "ml.g6.4xlarge"]]
    )


@router.post(
    "/clusters",
    operation_id="CreateCluster",
    summary="Create a HyperPod cluster (staged, asynchronous)",
    responses={**_ACCEPTED, **_errors(400, 409, 415, 422, 503)},
    tags=["clusters"],
)
def create_cluster(request: CreateClusterRequest, idempotency_key: IdempotencyKey = None) -> Response[OperationView]:
    """Start the create-cluster workflow; answers the operation to poll."""
    return _idempotent(
        "POST /clusters",
        idempotency_key,
        request.to_api(),
        lambda: service.create_cluster(runtime(), request).to_api(),
    )


@router.post(
    "/clusters/import",
    operation_id="ImportCluster",
    summary="Import an existing EKS cluster (and its HyperPod cluster) (staged, asynchronous)",
    description="Inspects the EKS cluster (version, authentication mode, VPC and subnets, add-ons, the HyperPod "
    "cluster named by hyperPodClusterName), records the stages whose resources exist as SUCCEEDED and imported, and "
    "runs only the missing ones (an IMPORT_CLUSTER operation); verify always runs. Refused: unknown eksClusterName "
    "or hyperPodClusterName (404), CONFIG_MAP-only authentication or a Kubernetes version HyperPod does not support "
    "(422 naming eksClusterName), a HyperPod cluster orchestrated by another EKS cluster (422), a live clusterTag "
    "(409). DELETE of an imported cluster removes only what this control plane created; its answer lists the rest "
    "under retained.",
    responses={**_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["clusters"],
)
def import_cluster(request: ImportClusterRequest, idempotency_key: IdempotencyKey = None) -> Response[OperationView]:
    """Start the import of an existing EKS cluster; answers the operation to poll."""
    return _idempotent(
        "POST /clusters/import",
        idempotency_key,
        request.to_api(),
        lambda: service.import_cluster(runtime(), request).to_api(),
    )


@router.get(
    "/clusters",
    operation_id="ListClusters",
    summary="List clusters",
    responses={**_ok(ClusterList), **_errors(400, 422)},
    tags=["clusters"],
)
def list_clusters(
    max_results: Annotated[
        int, Query(alias="maxResults", ge=1, le=100, description="Page size, 1-100.", examples=[20])
    ] = 20,
    next_token: Annotated[
        str | None,
        Query(
            alias="nextToken",
            max_length=2048,
            description="The nextToken of the previous page; omit for the first page.",
        ),
    ] = None,
) -> Response[ClusterList]:
    """A page of live clusters."""
    return _json(service.list_clusters(runtime(), max_results, next_token))


@router.get(
    "/clusters/<clusterTag>",
    operation_id="GetCluster",
    summary="Get a cluster with its stages and observed state",
    responses={**_ok(ClusterView), **_errors(404, 422)},
    tags=["clusters"],
)
def get_cluster(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[ClusterView]:
    """The cluster view."""
    return _json(service.get_cluster(runtime(), cluster_tag))


@router.delete(
    "/clusters/<clusterTag>",
    operation_id="DeleteCluster",
    summary="Delete a cluster (teardown in reverse stage order)",
    responses={**_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["clusters"],
)
def delete_cluster(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")], idempotency_key: IdempotencyKey = None
) -> Response[OperationView]:
    """Start the delete workflow."""
    return _idempotent(
        f"DELETE /clusters/{cluster_tag}",
        idempotency_key,
        {"clusterTag": cluster_tag},
        lambda: service.delete_cluster(runtime(), cluster_tag).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/stages",
    operation_id="ListStages",
    summary="List the stages of a cluster",
    responses={**_ok(StageList), **_errors(404, 422)},
    tags=["clusters"],
)
def get_stages(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[StageList]:
    """The stages in order."""
    return _json(service.get_stages(runtime(), cluster_tag))


@router.get(
    "/clusters/<clusterTag>/events",
    operation_id="ListClusterEvents",
    summary="List the HyperPod events of a cluster, newest first",
    description="SageMaker HyperPod's own events of the cluster's HyperPod cluster (hp-cluster-<clusterTag>): "
    "provisioning, scaling, node replacement and capacity errors of the cluster, its instance groups and "
    "instances, with SageMaker's descriptions verbatim. Empty while the HyperPod cluster does not exist yet.",
    responses={**_ok(ClusterEventList), **_errors(400, 404, 422, 503)},
    tags=["clusters"],
)
def list_cluster_events(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    max_results: Annotated[
        int,
        Query(
            alias="maxResults",
            ge=1,
            le=EVENTS_MAX_PAGE_SIZE,
            description=f"Most events per page, 1-{EVENTS_MAX_PAGE_SIZE}.",
            examples=[EVENTS_DEFAULT_PAGE_SIZE],
        ),
    ] = EVENTS_DEFAULT_PAGE_SIZE,
    next_token: Annotated[
        str | None,
        Query(
            alias="nextToken",
            max_length=EVENTS_TOKEN_MAX_LENGTH,
            description="The nextToken of the previous page (asked with the same level and instanceGroupName); "
            "omit for the first page.",
        ),
    ] = None,
    level: Annotated[
        ClusterEventLevel | None,
        Query(description="Only events of this level: Info, Warn or Error; omit for every level.", examples=["Error"]),
    ] = None,
    instance_group_name: Annotated[
        str | None,
        Query(
            alias="instanceGroupName",
            pattern=INSTANCE_GROUP_NAME_PATTERN,
            max_length=63,
            description="Only events of this instance group; omit for every group and the cluster's own events.",
            examples=["accel"],
            json_schema_extra=pattern_rule(INSTANCE_GROUP_NAME_RULE),
        ),
    ] = None,
) -> Response[ClusterEventList]:
    """A page of the cluster's HyperPod events."""
    return _json(
        events_feed.list_cluster_events(
            runtime(),
            cluster_tag,
            max_results=max_results,
            next_token=next_token,
            level=level,
            instance_group_name=instance_group_name,
        )
    )


@router.get(
    "/clusters/<clusterTag>/operations",
    operation_id="ListClusterOperations",
    summary="List this control plane's operations on a cluster, newest first",
    description="Creates, retries and deletes of the cluster (every generation of its tag, also after it was "
    "DELETED), from the control plane's records.",
    responses={**_ok(OperationList), **_errors(400, 404, 422)},
    tags=["clusters"],
)
def list_cluster_operations(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    max_results: Annotated[
        int, Query(alias="maxResults", ge=1, le=100, description="Page size, 1-100.", examples=[20])
    ] = 20,
    next_token: Annotated[
        str | None,
        Query(
            alias="nextToken",
            max_length=2048,
            description="The nextToken of the previous page; omit for the first page.",
        ),
    ] = None,
) -> Response[OperationList]:
    """A page of the cluster's operations."""
    return _json(service.list_operations(runtime(), cluster_tag, max_results, next_token))


@router.post(
    "/clusters/<clusterTag>/stages/<stage>/retry",
    operation_id="RetryStage",
    summary="Retry a FAILED stage (it and the later stages run again)",
    responses={**_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["clusters"],
)
def retry_stage(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    stage: Annotated[StageName, Path(description="The FAILED stage to run again.", examples=["hyperpod"])],
    idempotency_key: IdempotencyKey = None,
) -> Response[OperationView]:
    """Start a retry of one stage."""
    return _idempotent(
        f"POST /clusters/{cluster_tag}/stages/{stage.value}/retry",
        idempotency_key,
        {"clusterTag": cluster_tag, "stage": stage.value},
        lambda: service.retry_stage(runtime(), cluster_tag, stage).to_api(),
    )


@router.get(
    "/operations/<operationId>",
    operation_id="GetOperation",
    summary="Get an operation",
    responses={**_ok(OperationView), **_errors(404, 422)},
    tags=["operations"],
)
def get_operation(
    operation_id: Annotated[OperationId, Path(alias="operationId")],
) -> Response[OperationView]:
    """One operation."""
    return _json(service.get_operation(runtime(), operation_id))


@router.post(
    "/operations/<operationId>/cancel",
    operation_id="CancelOperation",
    summary="Cancel a running operation (stops its workflow)",
    description="Stops the operation's Step Functions execution, then records the operation CANCELLED, the stage "
    "it was running CANCELLED and the cluster FAILED: a cancelled create can then be deleted "
    "(DELETE /clusters/{clusterTag}, which tears down whatever exists) or its stage retried. Resources a stopped "
    "step created stay recorded for the delete. Cancelling a CANCELLED operation answers it again; an operation "
    "that ended SUCCEEDED or FAILED answers 409 naming its status.",
    responses={
        202: {"description": "The operation, CANCELLED", "content": {"application/json": {"model": OperationView}}},
        **_errors(404, 409, 422, 503),
    },
    tags=["operations"],
)
def cancel_operation(
    operation_id: Annotated[OperationId, Path(alias="operationId")], idempotency_key: IdempotencyKey = None
) -> Response[OperationView]:
    """Cancel one operation."""
    return _idempotent(
        f"POST /operations/{operation_id}/cancel",
        idempotency_key,
        {"operationId": operation_id},
        lambda: service.cancel_operation(runtime(), operation_id).to_api(),
    )


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
)
def list_instance_groups(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[InstanceGroupList]:
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
)
def add_instance_group(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def update_instance_group(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def delete_instance_group(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def get_autoscaling(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[AutoScalingView]:
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
)
def update_autoscaling(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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


@router.get(
    "/clusters/<clusterTag>/features",
    operation_id="GetClusterFeatures",
    summary="Managed features of a cluster: observed now, desired, and what each installed",
    description="Each feature (trainingOperator, inferenceOperator, observability, taskGovernance, "
    "tieredCheckpointing) as AWS reports it now (EKS DescribeAddon, ListPodIdentityAssociations, IAM roles by "
    "ownership tag, SageMaker DescribeCluster TieredStorageConfig), what PATCH last applied (desired), its version, "
    "and what it installed: add-ons (with who needs each), roles, pod identity associations, Kubernetes objects.",
    responses={**_ok(FeatureList), **_errors(404, 422, 503)},
    tags=["features"],
)
def get_cluster_features(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[FeatureList]:
    """The cluster's managed features."""
    return _json(features.get_features(runtime(), cluster_tag))


@router.patch(
    "/clusters/<clusterTag>/features",
    operation_id="UpdateClusterFeatures",
    summary="Turn managed features on or off (explicit diff; asynchronous when something changes)",
    description="Only the features in the body act. Each is compared with what AWS reports now: when every one "
    "already matches (also for {}), the answer is 200 with each feature unchanged and nothing is written. Otherwise "
    "202: an UPDATE_FEATURES operation installs what is missing (the add-ons a feature requires first, its roles "
    "trusting only its own service accounts, pod identity associations, its add-on at the pinned or newest "
    "compatible version) or removes exactly what the feature created; a shared add-on is removed only when "
    "nothing else needs it. The operation lists each feature changed, unchanged or failed (AWS error verbatim).",
    responses={
        200: {"description": "Nothing to change", "content": {"application/json": {"model": FeatureUpdateResult}}},
        **_ACCEPTED,
        **_errors(400, 404, 409, 415, 422, 503),
    },
    tags=["features"],
)
def update_cluster_features(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    request: UpdateFeaturesRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[Any]:
    """Diff the requested features against AWS; start an operation for what differs."""
    from api_idempotency import run_idempotent

    out = run_idempotent(
        router.context["idempotency"],
        route=f"PATCH /clusters/{cluster_tag}/features",
        key=idempotency_key,
        body=request.wire(),
        call=lambda: features.update_features(runtime(), cluster_tag, request).to_api(),
    )
    if "operationId" in out:
        return _accepted(OperationView.model_validate(out))
    return _json(FeatureUpdateResult.model_validate(out))


_MLFLOW_PUT_DOC = (
    "Connect an existing tracking server (trackingServerArn) or MLflow app (mlflowAppArn) of this account and Region, "
    "or create one for the cluster (create: CreateMlflowTrackingServer / CreateMlflowApp named instantstart-<tag>, "
    "artifact store s3://<cluster bucket>/mlflow/); in both cases training pods get an identity to log to it: the "
    "IAM role instantstart-<tag>-mlflow (sagemaker-mlflow:* on that resource, S3 on its artifact prefix) for the "
    "service account instantstart-mlflow of the training namespace (EKS Pod Identity). 202 with an UPDATE_MLFLOW "
    'operation, which waits until the server is Created. {"enabled": false} disconnects: removes the identity and '
    "the server or app only when it was created here (a connected existing one is never deleted). 200 with the "
    "connection when the request is already so. Refusals name the field: an ARN of another Region or account (422), "
    "a missing one (404), a failed or deleting one, another connection, a name taken (409)."
)


@router.get(
    "/clusters/<clusterTag>/mlflow",
    operation_id="GetMlflow",
    summary="The cluster's SageMaker managed MLflow connection, with the server's status now",
    description="The recorded connection (tracking server or app ARN, whether it was created here, the training "
    "namespace, service account and pod role, the environment training containers get) and its status read from "
    "SageMaker now (DescribeMlflowTrackingServer / DescribeMlflowApp; NotFound when it is gone).",
    responses={**_ok(MlflowView), **_errors(404, 422, 503)},
    tags=["mlflow"],
)
def get_mlflow(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[MlflowView]:
    """The cluster's MLflow connection."""
    return _json(mlflow.get_mlflow(runtime(), cluster_tag))


def _update_mlflow(cluster_tag: str, request: UpdateMlflowRequest, idempotency_key: str | None) -> Response[Any]:
    from api_idempotency import run_idempotent

    out = run_idempotent(
        router.context["idempotency"],
        route=f"PUT /clusters/{cluster_tag}/mlflow",
        key=idempotency_key,
        body=request.model_dump(mode="json", by_alias=True, exclude_none=True),
        call=lambda: mlflow.update_mlflow(runtime(), cluster_tag, request).to_api(),
    )
    if "connected" in out:  # the view (it carries the operationId of the connection, not of a new operation)
        return _json(MlflowView.model_validate(out))
    return _accepted(OperationView.model_validate(out))


@router.put(
    "/clusters/<clusterTag>/mlflow",
    operation_id="UpdateMlflow",
    summary="Connect, create or disconnect SageMaker managed MLflow (asynchronous when something changes)",
    description=_MLFLOW_PUT_DOC,
    responses={
        200: {"description": "Already so; nothing changed", "content": {"application/json": {"model": MlflowView}}},
        **_ACCEPTED,
        **_errors(400, 404, 409, 415, 422, 503),
    },
    tags=["mlflow"],
)
def update_mlflow(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    request: UpdateMlflowRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[Any]:
    """Start connecting, creating or disconnecting the cluster's MLflow."""
    return _update_mlflow(cluster_tag, request, idempotency_key)


@router.delete(
    "/clusters/<clusterTag>/mlflow",
    operation_id="DeleteMlflow",
    summary="Disconnect SageMaker managed MLflow (asynchronous when connected)",
    description='The same as PUT {"enabled": false}: removes the pod identity and the tracking server or app only '
    "when it was created here; a connected existing one is never deleted. 200 when not connected.",
    responses={
        200: {"description": "Not connected", "content": {"application/json": {"model": MlflowView}}},
        **_ACCEPTED,
        **_errors(404, 409, 422, 503),
    },
    tags=["mlflow"],
)
def delete_mlflow(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")], idempotency_key: IdempotencyKey = None
) -> Response[Any]:
    """Start disconnecting the cluster's MLflow."""
    return _update_mlflow(cluster_tag, UpdateMlflowRequest(enabled=False), idempotency_key)


JobNamespace = Annotated[
    str,
    Query(
        alias="namespace",
        pattern=NAMESPACE_PATTERN,
        max_length=63,
        description="Namespace of the job (default: default).",
        json_schema_extra=pattern_rule(NAMESPACE_RULE),
    ),
]


@router.get(
    "/clusters/<clusterTag>/training-jobs/<name>/runs",
    operation_id="ListTrainingJobRuns",
    summary="A training job's MLflow runs (params, latest metrics)",
    description="The runs of experiment <clusterTag> carrying the run tag instantstart.job=<name> on the cluster's "
    "MLflow (MLflow REST runs/search, signed for sagemaker-mlflow), newest first, with their params, the latest value "
    "of each metric and their tags. The job is looked up as GET .../training-jobs/<name> does: 404 "
    "TrainingJobNotFound when no job of that name is in the namespace; a job that never logged answers an empty "
    "list. 409 MlflowNotConnected / MlflowNotReady; 503 when MLflow or Kubernetes does not answer.",
    responses={**_ok(MlflowRunList), **_errors(404, 409, 422, 503)},
    tags=["mlflow"],
)
def list_training_job_runs(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: Annotated[
        str,
        Path(
            pattern=JOB_NAME_PATTERN,
            max_length=JOB_NAME_MAX,
            description="The training job's name (the training jobs' name rule).",
            examples=["llama-sft"],
            json_schema_extra=pattern_rule(JOB_NAME_RULE),
        ),
    ],
    namespace: JobNamespace = "default",
) -> Response[MlflowRunList]:
    """A training job's MLflow runs."""
    return _json(mlflow_runs.list_job_runs(runtime(), cluster_tag, name, namespace))


@router.get(
    "/catalog/availability-zones",
    operation_id="ListAvailabilityZones",
    summary="Availability Zones of the Region",
    responses={**_ok(AvailabilityZoneList), **_errors(422, 503)},
    tags=["catalog"],
)
def list_availability_zones() -> Response[AvailabilityZoneList]:
    """Zones usable for the HyperPod compute subnet."""
    return _json(AvailabilityZoneList(availability_zones=catalog.list_availability_zones(runtime())))


@router.get(
    "/catalog/instance-types",
    operation_id="ListInstanceTypes",
    summary="HyperPod instance types offered in a zone",
    responses={**_ok(InstanceTypeList), **_errors(422, 503)},
    tags=["catalog"],
)
def list_instance_types(
    availability_zone: Annotated[
        str,
        Query(
            alias="availabilityZone",
            pattern=AVAILABILITY_ZONE_PATTERN,
            description="Availability Zone name (GET /catalog/availability-zones).",
            examples=["us-west-2c"],
            json_schema_extra=pattern_rule(AVAILABILITY_ZONE_RULE),
        ),
    ],
) -> Response[InstanceTypeList]:
    """HyperPod ClusterInstanceType values whose EC2 type is offered in the zone."""
    return _json(InstanceTypeList(instance_types=catalog.list_instance_types(runtime(), availability_zone)))


START_AFTER_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
"""An ISO-8601 UTC time with seconds and ``Z``, as the API writes times."""


@router.get(
    "/catalog/training-plans",
    operation_id="ListTrainingPlans",
    summary="The account's SageMaker training plans",
    responses={**_ok(TrainingPlanList), **_errors(422, 503)},
    tags=["catalog"],
)
def list_training_plans() -> Response[TrainingPlanList]:
    """Training plans of the account in the API's Region: status, zone, instance type and count, start and end."""
    plans = training_plans.list_training_plans(runtime().client("sagemaker"))
    return _json(TrainingPlanList(training_plans=plans))


@router.get(
    "/catalog/training-plan-offerings",
    operation_id="SearchTrainingPlanOfferings",
    summary="Training plan offerings for HyperPod clusters",
    responses={**_ok(TrainingPlanOfferingList), **_errors(422, 503)},
    tags=["catalog"],
)
def search_training_plan_offerings(
    instance_type: Annotated[
        str,
        Query(
            alias="instanceType",
            pattern=INSTANCE_TYPE_PATTERN,
            description="Instance type to reserve, e.g. ml.p5.48xlarge (SageMaker ReservedCapacityInstanceType).",
            examples=["ml.p5.48xlarge"],
            json_schema_extra=pattern_rule(INSTANCE_TYPE_RULE),
        ),
    ],
    instance_count: Annotated[
        int,
        Query(alias="instanceCount", ge=1, le=256, description="Instances to reserve, 1-256.", examples=[4]),
    ],
    duration_hours: Annotated[
        int | None,
        Query(alias="durationHours", ge=1, le=87600, description="Plan duration in hours, 1-87600.", examples=[168]),
    ] = None,
    start_after: Annotated[
        str | None,
        Query(
            alias="startAfter",
            pattern=START_AFTER_PATTERN,
            description="Earliest start (ISO-8601 UTC, e.g. 2026-11-29T17:04:05Z).",
            examples=["2026-11-29T17:04:05Z"],
            json_schema_extra=pattern_rule("an ISO-8601 UTC time with seconds and Z, such as 2026-11-29T17:04:05Z"),
        ),
    ] = None,
) -> Response[TrainingPlanOfferingList]:
    """Purchasable training plan offerings for target resource hyperpod-cluster (SearchTrainingPlanOfferings)."""
    start = training_plans.parse_start_after(start_after) if start_after else None
    offerings = training_plans.search_offerings(
        runtime().client("sagemaker"),
        instance_type=instance_type,
        instance_count=instance_count,
        duration_hours=duration_hours,
        start_after=start,
    )
    return _json(TrainingPlanOfferingList(training_plan_offerings=offerings))


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
)
def list_cluster_nodes(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def reboot_cluster_nodes(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def replace_cluster_nodes(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def delete_cluster_nodes(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def update_cluster_software(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def start_cluster_health_check(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def list_hyperpod_operations(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
)
def get_hyperpod_operation(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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


# ---------------------------------------------------------------- task governance (day 2)
_GOVERNANCE_DESCRIPTION = (
    "Needs the taskGovernance feature (the amazon-sagemaker-hyperpod-taskgovernance EKS add-on ACTIVE, checked with "
    "DescribeAddon first): otherwise 409 FeatureNotEnabled naming it and PATCH /clusters/{clusterTag}/features. "
    "SageMaker answers at once with status Creating/Updating/Deleting; the resource settles within about a minute: "
    "poll the GET route until Created/Updated (a *Failed status carries SageMaker's failureReason verbatim). "
)
ComputeQuotaName = Annotated[
    str,
    Path(
        alias="computeQuotaName",
        pattern=COMPUTE_QUOTA_NAME_PATTERN,
        max_length=63,
        description="SageMaker Name of the compute quota (<clusterTag>-<teamName> for quotas created here).",
        examples=["demo-research"],
        json_schema_extra=pattern_rule(COMPUTE_QUOTA_NAME_RULE),
    ),
]


def _governance_202(view: BaseModel, location: str) -> Response[Any]:
    return _json(view, 202, {"Location": location})


@router.get(
    "/clusters/<clusterTag>/scheduler-config",
    operation_id="GetSchedulerConfig",
    summary="Get the cluster's task governance scheduler config (cluster policy)",
    description="SageMaker's cluster scheduler config of the cluster's HyperPod cluster, now "
    "(ListClusterSchedulerConfigs + DescribeClusterSchedulerConfig): priority classes, fair share, version and status. "
    "404 SchedulerConfigNotFound when the cluster has none.",
    responses={**_ok(SchedulerConfigView), **_errors(404, 409, 422, 503)},
    tags=["task-governance"],
)
def get_scheduler_config(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[SchedulerConfigView]:
    """The cluster's scheduler config."""
    return _json(task_governance.get_scheduler_config(runtime(), cluster_tag))


@router.put(
    "/clusters/<clusterTag>/scheduler-config",
    operation_id="PutSchedulerConfig",
    summary="Create or replace the cluster's scheduler config (priority classes, fair share)",
    description=_GOVERNANCE_DESCRIPTION + "CreateClusterSchedulerConfig when the cluster has none, else "
    "UpdateClusterSchedulerConfig with TargetVersion (targetVersion from the body, else the version read): a stale "
    "version answers 409 with SageMaker's message. Each priority class becomes a Kueue WorkloadPriorityClass.",
    responses={
        202: {
            "description": "SageMaker accepted the write",
            "content": {"application/json": {"model": SchedulerConfigView}},
        },
        **_errors(400, 404, 409, 415, 422, 503),
    },
    tags=["task-governance"],
)
def put_scheduler_config(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")], request: PutSchedulerConfigRequest
) -> Response[SchedulerConfigView]:
    """Create or replace the scheduler config."""
    view = task_governance.put_scheduler_config(runtime(), cluster_tag, request)
    return _governance_202(view, f"/clusters/{cluster_tag}/scheduler-config")


@router.get(
    "/clusters/<clusterTag>/compute-quotas",
    operation_id="ListComputeQuotas",
    summary="List the cluster's task governance compute quotas",
    description="SageMaker's compute quotas of the cluster's HyperPod cluster, now (ListComputeQuotas + "
    "DescribeComputeQuota): each team's resources, sharing strategy, fair-share weight, version and status.",
    responses={**_ok(ComputeQuotaList), **_errors(404, 409, 422, 503)},
    tags=["task-governance"],
)
def list_compute_quotas(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[ComputeQuotaList]:
    """The cluster's compute quotas."""
    return _json(task_governance.list_compute_quotas(runtime(), cluster_tag))


_QUOTA_ACCEPTED: dict[int, OpenAPIResponse] = {
    202: {"description": "SageMaker accepted the write", "content": {"application/json": {"model": ComputeQuotaView}}}
}


@router.post(
    "/clusters/<clusterTag>/compute-quotas",
    operation_id="CreateComputeQuota",
    summary="Create a team's compute quota",
    description=_GOVERNANCE_DESCRIPTION + "CreateComputeQuota named <clusterTag>-<teamName> (a retry finds it); one "
    "quota per team (409). The team's tasks run in namespace hyperpod-ns-<teamName> (a Kueue ClusterQueue and "
    "LocalQueue).",
    responses={**_QUOTA_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["task-governance"],
)
def create_compute_quota(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    request: CreateComputeQuotaRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[ComputeQuotaView]:
    """Create a compute quota."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/compute-quotas",
        idempotency_key,
        request.to_api(),
        ComputeQuotaView,
        lambda: task_governance.create_compute_quota(runtime(), cluster_tag, request).to_api(),
    )


@router.patch(
    "/clusters/<clusterTag>/compute-quotas/<computeQuotaName>",
    operation_id="UpdateComputeQuota",
    summary="Change a team's compute quota",
    description=_GOVERNANCE_DESCRIPTION + "UpdateComputeQuota with only the members given and TargetVersion "
    "(targetVersion from the body, else the version read): a stale version answers 409 with SageMaker's message. "
    "teamName cannot change (409 ImmutableField).",
    responses={**_QUOTA_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["task-governance"],
)
def update_compute_quota(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    compute_quota_name: ComputeQuotaName,
    request: UpdateComputeQuotaRequest,
) -> Response[ComputeQuotaView]:
    """Change a compute quota."""
    view = task_governance.update_compute_quota(runtime(), cluster_tag, compute_quota_name, request)
    return _governance_202(view, f"/clusters/{cluster_tag}/compute-quotas")


@router.delete(
    "/clusters/<clusterTag>/compute-quotas/<computeQuotaName>",
    operation_id="DeleteComputeQuota",
    summary="Delete a team's compute quota",
    description="DeleteComputeQuota of a quota created here (409 NotManaged otherwise); answers it Deleting. The "
    "team's ClusterQueue and LocalQueue go with it.",
    responses={**_QUOTA_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["task-governance"],
)
def delete_compute_quota(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    compute_quota_name: ComputeQuotaName,
    idempotency_key: IdempotencyKey = None,
) -> Response[ComputeQuotaView]:
    """Delete a compute quota."""
    return _idempotent_202(
        f"DELETE /clusters/{cluster_tag}/compute-quotas/{compute_quota_name}",
        idempotency_key,
        {"clusterTag": cluster_tag, "computeQuotaName": compute_quota_name},
        ComputeQuotaView,
        lambda: task_governance.delete_compute_quota(runtime(), cluster_tag, compute_quota_name).to_api(),
    )


# -- training jobs ----------------------------------------------------------------------------------------------------
TrainingJobName = Annotated[
    str,
    Path(
        alias="name",
        pattern=JOB_NAME_PATTERN,
        max_length=JOB_NAME_MAX,
        description="Training job name.",
        examples=["llama-sft-1"],
        json_schema_extra=pattern_rule(JOB_NAME_RULE),
    ),
]
_JOB_ACCEPTED: dict[int, OpenAPIResponse] = {
    202: {"description": "Operation accepted", "content": {"application/json": {"model": TrainingJobAccepted}}}
}


@router.post(
    "/clusters/<clusterTag>/training-jobs",
    operation_id="CreateTrainingJob",
    summary="Create a training job from a recipe (asynchronous: the steps apply it)",
    description="One body shape per recipe (pytorch, script, llamafactory, msswift: a HyperPodPyTorchJob; verl: a "
    "KubeRay RayJob). Checked first: the training operator add-on ACTIVE (409 FeatureNotEnabled naming "
    "trainingOperator and the PATCH /clusters/{clusterTag}/features body), task governance for a team, the instance "
    "type's GPUs (EC2 DescribeInstanceTypes) against nprocPerNode and the cluster's groups of that type against "
    "nodes (422 with the numbers). Then a CREATE_TRAINING_JOB operation creates the namespace when missing, "
    "validates the object with a server-side dry run and applies it; it ends once Kubernetes holds the job. "
    "Follow the job with GET /clusters/{clusterTag}/training-jobs/{name}.",
    responses={**_JOB_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["training-jobs"],
)
def create_training_job(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    request: Annotated[CreateTrainingJobRequest, Body()],
    idempotency_key: IdempotencyKey = None,
) -> Response[TrainingJobAccepted]:
    """Check the rules, then start the operation that applies the job."""
    job_request: TrainingJobRequest = request
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/training-jobs",
        idempotency_key,
        job_request.to_api(),
        TrainingJobAccepted,
        lambda: training.create_training_job(runtime(), cluster_tag, job_request).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/training-jobs",
    operation_id="ListTrainingJobs",
    summary="List the training jobs of a cluster (HyperPodPyTorchJobs and RayJobs), newest first",
    description="Read from Kubernetes through the API's read-only access entry within a time budget (503 naming the "
    "reason when Kubernetes does not answer or refuses).",
    responses={**_ok(TrainingJobList), **_errors(400, 404, 422, 503)},
    tags=["training-jobs"],
)
def list_training_jobs(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    namespace: Annotated[
        str | None,
        Query(
            alias="namespace",
            pattern=NAMESPACE_PATTERN,
            max_length=63,
            description="Only this namespace.",
            json_schema_extra=pattern_rule(NAMESPACE_RULE),
        ),
    ] = None,
    max_results: Annotated[
        int,
        Query(alias="maxResults", ge=1, le=LIST_MAX_PAGE_SIZE, description="Most jobs per page."),
    ] = LIST_DEFAULT_PAGE_SIZE,
    next_token: Annotated[
        str | None,
        Query(alias="nextToken", max_length=LIST_TOKEN_MAX_LENGTH, description="nextToken of the previous page."),
    ] = None,
) -> Response[TrainingJobList]:
    """A page of jobs."""
    return _json(
        training.list_training_jobs(
            runtime(), cluster_tag, namespace=namespace, max_results=max_results, next_token=next_token
        )
    )


@router.get(
    "/clusters/<clusterTag>/training-jobs/<name>",
    operation_id="GetTrainingJob",
    summary="A training job: spec summary, status, conditions, restart history, pods",
    responses={**_ok(TrainingJobView), **_errors(404, 422, 503)},
    tags=["training-jobs"],
)
def get_training_job(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: TrainingJobName,
    namespace: JobNamespace = "default",
) -> Response[TrainingJobView]:
    """One job."""
    return _json(training.get_training_job(runtime(), cluster_tag, name, namespace))


@router.get(
    "/clusters/<clusterTag>/training-jobs/<name>/logs",
    operation_id="GetTrainingJobLogs",
    summary="Log text of one pod of a training job (rank 0 by default), bounded size",
    description=f"At most {training.LOG_MAX_BYTES} bytes (the tail is kept; truncated says so). Without tailLines "
    f"and sinceSeconds the last {training.LOG_DEFAULT_TAIL_LINES} lines.",
    responses={**_ok(TrainingJobLogs), **_errors(404, 422, 503)},
    tags=["training-jobs"],
)
def get_training_job_logs(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: TrainingJobName,
    namespace: JobNamespace = "default",
    pod: Annotated[
        str | None,
        Query(
            alias="pod",
            pattern=POD_NAME_PATTERN,
            max_length=POD_NAME_MAX,
            description="Pod (default: rank 0).",
            json_schema_extra=pattern_rule(POD_NAME_RULE),
        ),
    ] = None,
    container: Annotated[
        str | None,
        Query(
            alias="container",
            pattern=CONTAINER_NAME_PATTERN,
            max_length=CONTAINER_NAME_MAX,
            description="Container (default: the job's training container).",
            json_schema_extra=pattern_rule(CONTAINER_NAME_RULE),
        ),
    ] = None,
    tail_lines: Annotated[
        int | None, Query(alias="tailLines", ge=1, le=LOG_MAX_TAIL_LINES, description="Last lines.")
    ] = None,
    since_seconds: Annotated[
        int | None,
        Query(alias="sinceSeconds", ge=1, le=LOG_MAX_SINCE_SECONDS, description="Lines of the last seconds."),
    ] = None,
) -> Response[TrainingJobLogs]:
    """Logs of one pod."""
    return _json(
        training.training_job_logs(
            runtime(),
            cluster_tag,
            name,
            namespace,
            pod=pod,
            container=container,
            tail_lines=tail_lines,
            since_seconds=since_seconds,
        )
    )


@router.delete(
    "/clusters/<clusterTag>/training-jobs/<name>",
    operation_id="DeleteTrainingJob",
    summary="Delete a training job and its pods (asynchronous: the steps delete it)",
    responses={**_JOB_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["training-jobs"],
)
def delete_training_job(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: TrainingJobName,
    namespace: JobNamespace = "default",
    idempotency_key: IdempotencyKey = None,
) -> Response[TrainingJobAccepted]:
    """Start the DELETE_TRAINING_JOB operation."""
    return _idempotent_202(
        f"DELETE /clusters/{cluster_tag}/training-jobs/{name}",
        idempotency_key,
        {"name": name, "namespace": namespace},
        TrainingJobAccepted,
        lambda: training.delete_training_job(runtime(), cluster_tag, name, namespace).to_api(),
    )


# -- model downloads and self-managed inference ---------------------------------------------------------------------
InferenceDeploymentName = Annotated[
    str,
    Path(
        alias="name",
        pattern=DEPLOYMENT_NAME_PATTERN,
        max_length=DEPLOYMENT_NAME_MAX,
        description="Inference deployment name.",
        examples=["qwen-vllm"],
        json_schema_extra=pattern_rule(DEPLOYMENT_NAME_RULE),
    ),
]
_DEPLOYMENT_ACCEPTED: dict[int, OpenAPIResponse] = {
    202: {"description": "Operation accepted", "content": {"application/json": {"model": InferenceDeploymentAccepted}}}
}


@router.post(
    "/clusters/<clusterTag>/models",
    operation_id="DownloadModel",
    summary="Download a Hugging Face model into the cluster's storage (asynchronous: a Kubernetes Job)",
    description="destination s3 writes to s3://<cluster bucket>/models/<modelId>/ (pods see /s3/models/<modelId>); "
    "fsx to /fsx/models/<modelId> and needs the fsx feature with a file system (409 FeatureNotEnabled naming fsx). A "
    "gated model's token only as hfTokenSecret (a Secret's name and key in namespace default), never a value. The "
    "DOWNLOAD_MODEL operation applies the Job and ends when it completes; its result shows the bytes and files "
    "under the prefix so far.",
    responses={
        202: {"description": "Operation accepted", "content": {"application/json": {"model": ModelDownloadAccepted}}},
        **_errors(400, 404, 409, 415, 422, 503),
    },
    tags=["models"],
)
def download_model(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    request: DownloadModelRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[ModelDownloadAccepted]:
    """Start the DOWNLOAD_MODEL operation."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/models",
        idempotency_key,
        request.to_api(),
        ModelDownloadAccepted,
        lambda: inference.download_model(runtime(), cluster_tag, request).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/models",
    operation_id="ListModels",
    summary="Models in the cluster's bucket (models/) and on its FSx for Lustre file system, with size and files",
    description="Read from storage (S3 ListObjectsV2 with Delimiter), not from our records: a model copied there by "
    "other means is listed too. Models on the fsx feature's file system (destination fsx, modelPath "
    "/fsx/models/<id>) are read from s3://<bucket>/fsx/models/, where the feature's data repository association "
    "exports the file system's /models (auto-export, asynchronous: a file appears some time after it is written; FSx "
    "DescribeFileSystems and DescribeDataRepositoryAssociations). fsx.listed false gives the reason they cannot be "
    "listed (no file system, SCRATCH_1 or Lustre before 2.12, the association missing or not AVAILABLE).",
    responses={**_ok(ModelList), **_errors(404, 422, 503)},
    tags=["models"],
)
def list_models(cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")]) -> Response[ModelList]:
    """The stored models."""
    return _json(inference.list_models(runtime(), cluster_tag))


@router.post(
    "/clusters/<clusterTag>/inference/deployments",
    operation_id="CreateInferenceDeployment",
    summary="Deploy a model with vLLM or SGLang (self-managed Deployment + Service; asynchronous)",
    description="Checked first: instanceType is the type of one of the cluster's instance groups (422 listing them), "
    "gpus at most the type's (422; the tensor parallel size is gpus), modelPath under /fsx needs the fsx feature "
    "(409). The Service is ClusterIP unless service.type is LoadBalancer (an internal NLB; internet-facing only with "
    "service.exposure internet-facing). The CREATE_INFERENCE_DEPLOYMENT operation validates both objects with a "
    "server-side dry run and applies them; follow readiness with GET .../inference/deployments/{name}.",
    responses={**_DEPLOYMENT_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["inference"],
)
def create_inference_deployment(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    request: CreateInferenceDeploymentRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceDeploymentAccepted]:
    """Check the rules, then start the operation that applies the deployment."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/inference/deployments",
        idempotency_key,
        request.to_api(),
        InferenceDeploymentAccepted,
        lambda: inference.create_deployment(runtime(), cluster_tag, request).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/inference/deployments",
    operation_id="ListInferenceDeployments",
    summary="The cluster's self-managed inference deployments with status and replicas",
    responses={**_ok(InferenceDeploymentList), **_errors(404, 422, 503)},
    tags=["inference"],
)
def list_inference_deployments(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
) -> Response[InferenceDeploymentList]:
    """Every deployment made here."""
    return _json(inference.list_deployments(runtime(), cluster_tag))


@router.get(
    "/clusters/<clusterTag>/inference/deployments/<name>",
    operation_id="GetInferenceDeployment",
    summary="An inference deployment: spec, status, replicas, pods, Service, router",
    responses={**_ok(InferenceDeploymentView), **_errors(404, 422, 503)},
    tags=["inference"],
)
def get_inference_deployment(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")], name: InferenceDeploymentName
) -> Response[InferenceDeploymentView]:
    """One deployment."""
    return _json(inference.get_deployment(runtime(), cluster_tag, name))


@router.patch(
    "/clusters/<clusterTag>/inference/deployments/<name>",
    operation_id="ScaleInferenceDeployment",
    summary="Scale an inference deployment (asynchronous)",
    description="Scale-in removes idle pods first (controller.kubernetes.io/pod-deletion-cost set from each pod's "
    "instantstart.io/bound-model annotation) and is refused with 409 BoundPodsWouldBeRemoved when replicas is below "
    "the number of pods serving a bound model.",
    responses={**_DEPLOYMENT_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["inference"],
)
def scale_inference_deployment(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: InferenceDeploymentName,
    request: ScaleInferenceDeploymentRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceDeploymentAccepted]:
    """Start the UPDATE_INFERENCE_DEPLOYMENT operation."""
    return _idempotent_202(
        f"PATCH /clusters/{cluster_tag}/inference/deployments/{name}",
        idempotency_key,
        request.to_api(),
        InferenceDeploymentAccepted,
        lambda: inference.scale_deployment(runtime(), cluster_tag, name, request).to_api(),
    )


@router.delete(
    "/clusters/<clusterTag>/inference/deployments/<name>",
    operation_id="DeleteInferenceDeployment",
    summary="Delete an inference deployment, its Service and router (asynchronous)",
    responses={**_DEPLOYMENT_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["inference"],
)
def delete_inference_deployment(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: InferenceDeploymentName,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceDeploymentAccepted]:
    """Start the DELETE_INFERENCE_DEPLOYMENT operation."""
    return _idempotent_202(
        f"DELETE /clusters/{cluster_tag}/inference/deployments/{name}",
        idempotency_key,
        {"name": name},
        InferenceDeploymentAccepted,
        lambda: inference.delete_deployment(runtime(), cluster_tag, name).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/inference/deployments/<name>/router",
    operation_id="CreateInferenceRouter",
    summary="Put the SGLang cache-aware router in front of an SGLang deployment (optional KEDA autoscaling)",
    description="409 RouterNeedsSGLang for a vLLM deployment; with autoscaling, 409 KedaNotInstalled when the "
    "cluster does not serve keda.sh/v1alpha1 ScaledObject. The CREATE_INFERENCE_ROUTER operation applies the "
    "router's ServiceAccount, Role, RoleBinding, Deployment and Service (and the ScaledObject on the workers).",
    responses={**_DEPLOYMENT_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["inference"],
)
def create_inference_router(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: InferenceDeploymentName,
    request: CreateRouterRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceDeploymentAccepted]:
    """Start the CREATE_INFERENCE_ROUTER operation."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/inference/deployments/{name}/router",
        idempotency_key,
        request.to_api(),
        InferenceDeploymentAccepted,
        lambda: inference.create_router(runtime(), cluster_tag, name, request).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/inference/deployments/<name>/invoke",
    operation_id="InvokeInferenceDeployment",
    summary="Call a self-managed model: the engine's OpenAI-compatible route through the Kubernetes service proxy",
    description="body is sent as application/json to route (v1/completions or v1/chat/completions) of the "
    "deployment's Service, or of its SGLang router when it has one (via chooses); body.model defaults to the served "
    "model name. At most 1 MiB serialised (413 naming body); the answer is parsed as JSON when it fits 256 KiB, else "
    "returned cut as text with truncated true. 409 InferenceDeploymentNotReady when no replica is ready, 502 "
    "ModelError with the engine's status and message when it answers an error, 503 when Kubernetes refuses the "
    "proxy or the engine does not answer within 20 s. With an Idempotency-Key a repeated call replays the first "
    "answer instead of calling the model again.",
    responses={**_ok(InvokeDeploymentView), **_errors(400, 404, 409, 413, 415, 422, 502, 503)},
    tags=["inference"],
)
def invoke_inference_deployment(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: InferenceDeploymentName,
    request: InvokeDeploymentRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InvokeDeploymentView]:
    """Invoke the deployment; without an Idempotency-Key every call reaches the engine."""
    from api_idempotency import run_idempotent

    answer = run_idempotent(
        router.context["idempotency"],
        route=f"POST /clusters/{cluster_tag}/inference/deployments/{name}/invoke",
        key=idempotency_key,
        body=request.to_api(),
        call=lambda: inference_invoke.invoke_deployment(runtime(), cluster_tag, name, request).to_api(),
    )
    return _json(InvokeDeploymentView.model_validate(answer))


# -- managed inference endpoints (the HyperPod inference operator) ---------------------------------------------------
InferenceEndpointName = Annotated[
    str,
    Path(
        alias="name",
        pattern=ENDPOINT_NAME_PATTERN,
        max_length=ENDPOINT_NAME_MAX,
        description="Inference endpoint name (the InferenceEndpointConfig or JumpStartModel in namespace default).",
        examples=["qwen-managed"],
        json_schema_extra=pattern_rule(ENDPOINT_NAME_RULE),
    ),
]
_ENDPOINT_ACCEPTED: dict[int, OpenAPIResponse] = {
    202: {"description": "Operation accepted", "content": {"application/json": {"model": InferenceEndpointAccepted}}}
}


@router.post(
    "/clusters/<clusterTag>/inference/endpoints",
    operation_id="CreateInferenceEndpoint",
    summary="Deploy a model as a managed endpoint of the HyperPod inference operator (asynchronous)",
    description="An InferenceEndpointConfig (modelSource + worker) or a JumpStartModel (jumpStart) reconciled by the "
    "inference operator into worker pods and a SageMaker endpoint instantstart-<tag>-<name>. Checked first: the "
    "inferenceOperator feature on (409 FeatureNotEnabled naming it), instanceType one of the cluster's groups (422 "
    "listing them), an L2 tieredstorage cache needs tieredCheckpointing (409), the TLS output in the operator's TLS "
    "bucket (422), and every field known to the API version the cluster serves (read from the CRD; 422 naming the "
    "fields otherwise). The CREATE_INFERENCE_ENDPOINT operation applies the resource and ends at DeploymentComplete "
    "with the SageMaker endpoint InService; DeploymentFailed fails it with the operator's reason and message.",
    responses={**_ENDPOINT_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["inference"],
)
def create_inference_endpoint(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    request: CreateInferenceEndpointRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceEndpointAccepted]:
    """Check the rules, then start the operation that applies the endpoint."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/inference/endpoints",
        idempotency_key,
        request.to_api(),
        InferenceEndpointAccepted,
        lambda: inference_endpoints.create_endpoint(runtime(), cluster_tag, request).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/inference/endpoints",
    operation_id="ListInferenceEndpoints",
    summary="The cluster's managed inference endpoints with their operator state",
    responses={**_ok(InferenceEndpointList), **_errors(404, 422, 503)},
    tags=["inference"],
)
def list_inference_endpoints(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
) -> Response[InferenceEndpointList]:
    """Every InferenceEndpointConfig and JumpStartModel of namespace default."""
    return _json(inference_endpoints.list_endpoints(runtime(), cluster_tag))


@router.get(
    "/clusters/<clusterTag>/inference/endpoints/<name>",
    operation_id="GetInferenceEndpoint",
    summary="A managed endpoint: operator state and conditions, SageMaker endpoint, worker pods and their events",
    responses={**_ok(InferenceEndpointView), **_errors(404, 422, 503)},
    tags=["inference"],
)
def get_inference_endpoint(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")], name: InferenceEndpointName
) -> Response[InferenceEndpointView]:
    """One endpoint."""
    return _json(inference_endpoints.get_endpoint(runtime(), cluster_tag, name))


@router.delete(
    "/clusters/<clusterTag>/inference/endpoints/<name>",
    operation_id="DeleteInferenceEndpoint",
    summary="Delete a managed endpoint and its SageMaker endpoint, config and model (asynchronous)",
    description="The DELETE_INFERENCE_ENDPOINT operation deletes the resource and ends once it is gone and SageMaker "
    "DescribeEndpoint no longer finds the endpoint (the operator's finalizer removes the SageMaker side first).",
    responses={**_ENDPOINT_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["inference"],
)
def delete_inference_endpoint(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: InferenceEndpointName,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceEndpointAccepted]:
    """Start the DELETE_INFERENCE_ENDPOINT operation."""
    return _idempotent_202(
        f"DELETE /clusters/{cluster_tag}/inference/endpoints/{name}",
        idempotency_key,
        {"name": name},
        InferenceEndpointAccepted,
        lambda: inference_endpoints.delete_endpoint(runtime(), cluster_tag, name).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/inference/endpoints/<name>/invoke",
    operation_id="InvokeInferenceEndpoint",
    summary="Call the model: SageMaker Runtime InvokeEndpoint on the endpoint the operator registered",
    description="body is sent as application/json (at most 1 MiB serialised: 413 naming body). The answer is parsed "
    "as JSON when it fits 256 KiB, else returned cut as text with truncated true. SageMaker's refusals come back "
    "verbatim: 409 for its 4xx (e.g. the endpoint not InService), 502 for ModelError and its 5xx. With an "
    "Idempotency-Key a repeated call replays the first answer instead of calling the model again.",
    responses={**_ok(InvokeEndpointView), **_errors(400, 404, 409, 413, 415, 422, 502, 503)},
    tags=["inference"],
)
def invoke_inference_endpoint(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
    name: InferenceEndpointName,
    request: InvokeEndpointRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InvokeEndpointView]:
    """Invoke the endpoint; without an Idempotency-Key every call reaches the model."""
    from api_idempotency import run_idempotent

    answer = run_idempotent(
        router.context["idempotency"],
        route=f"POST /clusters/{cluster_tag}/inference/endpoints/{name}/invoke",
        key=idempotency_key,
        body=request.to_api(),
        call=lambda: inference_endpoints.invoke_endpoint(runtime(), cluster_tag, name, request).to_api(),
    )
    return _json(InvokeEndpointView.model_validate(answer))
