"""Routes of clusters, their stages and HyperPod events.

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
    _accepted,
    _errors,
    _idempotent,
    _json,
    _ok,
    faces,
    idempotency,
    runtime,
    written_operation,
)
from instantstart.clusters import (
    events_feed,
    repair,
    service,
)
from instantstart.models.cluster import (
    INSTANCE_GROUP_NAME_PATTERN,
    INSTANCE_GROUP_NAME_RULE,
    ClusterList,
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
from instantstart.models.drift import ReconcileAnswer
from instantstart.models.errors import pattern_rule
from instantstart.models.operation import OperationView

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="clusters")


@router.post(
    "/clusters",
    operation_id="CreateCluster",
    summary="Create a HyperPod cluster (staged, asynchronous)",
    responses={**_ACCEPTED, **_errors(400, 409, 415, 422, 503)},
    tags=["clusters"],
    openapi_extensions=_faces(
        "cluster_create",
        "Create a HyperPod cluster",
        (
            "Start creating a HyperPod cluster on a new EKS cluster (POST /clusters); returns the operation.\n\n"
            "The control plane runs the stages network -> access -> dependencies -> hyperpod -> storage -> verify "
            "(about 30-40 minutes): VPC and subnets, EKS, add-ons, HyperPod capacity with automatic node recovery, S3 "
            "storage, node verification. Do not ask the user about CIDRs, subnets, route tables or installation "
            "order. Before calling, use cluster_list_all, catalog_list_availability_zones and "
            "catalog_list_instance_types and get the user's choice of tag, zone, instance type and count and capacity "
            "type. After calling, poll to a terminal state: wait_seconds (30-50) then operation_get with the returned "
            "operationId (or cluster_get_stages for stage progress), reporting progress, until status is SUCCEEDED, "
            "FAILED or CANCELLED; never stop early. Write tool: needs --allow-write."
        ),
        cli="clusters create",
    ),
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
    openapi_extensions=_faces(
        "cluster_import",
        "Import an existing EKS cluster",
        (
            "Bring an existing EKS cluster (and its HyperPod cluster) under management (POST /clusters/import); "
            "returns the IMPORT_CLUSTER operation.\n\n"
            "The API inspects the EKS cluster and records the stages whose resources exist as SUCCEEDED and imported; "
            "only the missing ones run (e.g. the HyperPod cluster, storage, verify). It refuses a CONFIG_MAP-only "
            "cluster and Kubernetes versions HyperPod does not support (422 naming eksClusterName). A later "
            "cluster_delete removes only what the control plane created; its answer lists what it left (retained). "
            "Ask the user for the EKS cluster name, the tag, and either the HyperPod cluster to import or the "
            "instance type and count for a new one. Poll the operation to a terminal state like cluster_create. Write "
            "tool: needs --allow-write."
        ),
        cli="clusters import",
    ),
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
    openapi_extensions=_faces(
        "cluster_list_all",
        "List all clusters",
        (
            "List every cluster of the control plane (all pages): tag, status, zone, EKS and HyperPod names.\n\n"
            "Call this first, before creating anything, to see which tags exist. Read-only."
        ),
        cli="clusters list",
        read_only=True,
        hand_written="reads every page (GET /clusters until nextToken is null) and counts the clusters",
    ),
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
    openapi_extensions=_faces(
        "cluster_get_status",
        "Get a cluster's status",
        (
            "Get one cluster (GET /clusters/{clusterTag}): status (CREATING, READY, DEGRADED, FAILED, DELETING, "
            "DELETED), every stage with its status and error, the current operation id, and the observed EKS cluster, "
            "HyperPod cluster and instance groups, Kubernetes nodes and S3 storage.\n\n"
            "Use it to verify a READY cluster and build the final summary for the user. Read-only."
        ),
        cli="clusters get",
        read_only=True,
    ),
)
def get_cluster(cluster_tag: ClusterTagPath) -> Response[ClusterView]:
    """The cluster view."""
    return _json(service.get_cluster(runtime(), cluster_tag))


@router.delete(
    "/clusters/<clusterTag>",
    operation_id="DeleteCluster",
    summary="Delete a cluster (teardown in reverse stage order)",
    responses={**_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["clusters"],
    openapi_extensions=_faces(
        "cluster_delete",
        "Delete a cluster",
        (
            "Delete a cluster and every AWS and Kubernetes resource it created (DELETE /clusters/{clusterTag}).\n\n"
            "Destructive and irreversible: first show the user what will be deleted (cluster_get_status) and ask them "
            "to confirm by typing the tag; pass what they typed as confirmClusterTag. Returns the DELETE_CLUSTER "
            "operation: poll it to a terminal state like cluster_create. Write tool: needs --allow-write."
        ),
        cli="clusters delete",
        destructive=True,
        idempotent=True,
        confirm=True,
    ),
)
def delete_cluster(cluster_tag: ClusterTagPath, idempotency_key: IdempotencyKey = None) -> Response[OperationView]:
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
    openapi_extensions=_faces(
        "cluster_get_stages",
        "Get a cluster's stages",
        (
            "Get the stages of a cluster in order (GET /clusters/{clusterTag}/stages): name, status (PENDING, "
            "RUNNING, SUCCEEDED, FAILED, CANCELLED), attempts, start/end times, the AWS status observed, resources "
            "and the AWS error of a failed stage, verbatim.\n\n"
            "Use it while polling to report which stage is running. Read-only."
        ),
        cli="clusters stages",
        read_only=True,
    ),
)
def get_stages(cluster_tag: ClusterTagPath) -> Response[StageList]:
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
    openapi_extensions=_faces(
        "cluster_list_events",
        "List a cluster's HyperPod events",
        (
            "List SageMaker HyperPod's own events of a cluster, newest first (GET /clusters/{clusterTag}/events): "
            "time, level (Info, Warn, Error), resource type, instance group, instance id and SageMaker's description "
            "verbatim (provisioning, scaling, node replacement, capacity errors).\n\n"
            "Use it when a hyperpod or verify stage is slow or FAILED, or a node is unhealthy, to tell the user what "
            "HyperPod reported (level Error first). Empty while the HyperPod cluster does not exist yet. One page per "
            "call: when nextToken is not null, call again with it (and the same filters) for older events; with a "
            "level filter a page may be short or empty while nextToken is set. Read-only."
        ),
        cli="clusters events",
        read_only=True,
    ),
)
def list_cluster_events(
    cluster_tag: ClusterTagPath,
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
    openapi_extensions=_faces(
        "cluster_retry_stage",
        "Retry a failed stage",
        (
            "Run a FAILED stage again, and every stage after it (POST /clusters/{clusterTag}/stages/{stage}/retry).\n\n"
            "Earlier stages are kept. Only a FAILED or CANCELLED stage can be retried (the API answers 409 naming the "
            "stage's status otherwise). Show the user the stage's error first; if it is a capacity or quota problem, "
            "the user decides whether to retry. Returns the RETRY_STAGE operation: poll it to a terminal state like "
            "cluster_create. Write tool: needs --allow-write."
        ),
        cli="clusters retry",
    ),
)
def retry_stage(
    cluster_tag: ClusterTagPath,
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


@router.post(
    "/clusters/<clusterTag>/reconcile",
    operation_id="ReconcileCluster",
    summary="Check a cluster for drift now and repair what is the control plane's own",
    description="Reads AWS for the cluster (EKS cluster and version, add-ons and their health, the HyperPod cluster "
    "and its instance groups, the IAM roles and S3 bucket the control plane created), compares with the records "
    "and stores the result as the cluster's drift (GET /clusters/{clusterTag}, drift). No drift: 200 saying so, no "
    "operation. Drift the control plane can repair (today: an add-on it installed, deleted outside): 202 with a "
    "RECONCILE_CLUSTER operation that re-creates it; other drift stays reported. Drift none of which it may repair "
    "(a resource without its ownership tags, a group scaled outside, a deleted HyperPod cluster): 409 "
    "DriftNotRepairable naming each resource and why. One operation per cluster: 409 OperationInProgress while "
    "another runs; 409 ClusterNotReady unless READY or DEGRADED.",
    responses={
        **_ok(ReconcileAnswer),
        **_ACCEPTED,
        **_errors(404, 409, 422, 503),
    },
    tags=["clusters"],
    openapi_extensions=_faces(
        "cluster_reconcile",
        "Check drift and repair a cluster",
        (
            "Check a cluster for drift now and repair what the control plane owns (POST "
            "/clusters/{clusterTag}/reconcile).\n\n"
            "Drift is what changed outside the control plane (deleted or scaled in the AWS console, an add-on "
            "removed, the EKS version upgraded). cluster_get_status shows the drift the last check recorded. No "
            "drift: answers so, no operation. Repairable drift (an add-on it installed, deleted): returns a "
            "RECONCILE_CLUSTER operation; poll it to a terminal state with operation_get. Drift it must not touch "
            "(resources without its ownership tags, changes it only reports): 409 DriftNotRepairable naming each "
            "resource and why; tell the user what to do from each item's message. Write tool: needs --allow-write."
        ),
        cli="clusters reconcile",
        idempotent=True,
    ),
)
def reconcile_cluster(
    cluster_tag: ClusterTagPath, idempotency_key: IdempotencyKey = None
) -> Response[OperationView | ReconcileAnswer]:
    """Check drift now; 202 with the repair operation, or 200 when nothing differs."""
    from api_idempotency import run_idempotent

    answer = run_idempotent(
        idempotency(),
        route=f"POST /clusters/{cluster_tag}/reconcile",
        key=idempotency_key,
        body={"clusterTag": cluster_tag},
        call=lambda: repair.reconcile_cluster(runtime(), cluster_tag).to_api(),
        recover=written_operation,
    )
    if "operationId" in answer:
        return _accepted(OperationView.model_validate(answer))
    return _json(ReconcileAnswer.model_validate(answer))
