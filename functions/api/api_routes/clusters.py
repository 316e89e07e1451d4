"""Routes of clusters, their stages and HyperPod events.

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api_routes.common import (
    _ACCEPTED,
    IdempotencyKey,
    _errors,
    _idempotent,
    _json,
    _ok,
    runtime,
)
from instantstart.clusters import (
    events_feed,
    service,
)
from instantstart.models.cluster import (
    INSTANCE_GROUP_NAME_PATTERN,
    INSTANCE_GROUP_NAME_RULE,
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
from instantstart.models.common import StageName
from instantstart.models.errors import pattern_rule
from instantstart.models.operation import OperationView

router = APIGatewayHttpRouter()


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
