"""Routes of a cluster's task governance: scheduler config and compute quotas.

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel

from api_routes.common import (
    ClusterTagPath,
    IdempotencyKey,
    _errors,
    _idempotent_202,
    _json,
    _ok,
    faces,
    runtime,
)
from instantstart.clusters import (
    task_governance,
)
from instantstart.models.errors import pattern_rule
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

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="governance")


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
    openapi_extensions=_faces(
        "scheduler_config_get",
        "Get the task governance scheduler config",
        (
            "Get the cluster's task governance scheduler config (GET /clusters/{clusterTag}/scheduler-config): "
            "priority classes, fair share, version and SageMaker's status (Creating, Created, Updating, Updated, "
            "*Failed with failureReason). 404 SchedulerConfigNotFound when there is none. Read-only."
        ),
        cli="governance policy",
        read_only=True,
    ),
)
def get_scheduler_config(cluster_tag: ClusterTagPath) -> Response[SchedulerConfigView]:
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
    openapi_extensions=_faces(
        "scheduler_config_put",
        "Create or replace the scheduler config",
        (
            "Create or replace the cluster's scheduler config (PUT /clusters/{clusterTag}/scheduler-config).\n\n"
            "Needs the taskGovernance feature (409 FeatureNotEnabled names it and PATCH "
            "/clusters/{clusterTag}/features). Show the user the current policy first (scheduler_config_get) and pass "
            "its clusterSchedulerConfigVersion as targetVersion: a 409 ConflictException means someone changed it "
            "meanwhile. The answer is Creating/Updating: poll scheduler_config_get with wait_seconds until "
            "Created/Updated (report a *Failed failureReason verbatim). Write tool: needs --allow-write."
        ),
        cli="governance set-policy",
        destructive=True,
        idempotent=True,
    ),
)
def put_scheduler_config(
    cluster_tag: ClusterTagPath, request: PutSchedulerConfigRequest
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
    openapi_extensions=_faces(
        "compute_quota_list",
        "List a cluster's compute quotas",
        (
            "List the cluster's compute quotas (GET /clusters/{clusterTag}/compute-quotas): per team its resources, "
            "sharing strategy, fair-share weight, version and status. Read-only."
        ),
        cli="governance quotas",
        read_only=True,
    ),
)
def list_compute_quotas(cluster_tag: ClusterTagPath) -> Response[ComputeQuotaList]:
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
    openapi_extensions=_faces(
        "compute_quota_create",
        "Create a team's compute quota",
        (
            "Create a team's compute quota (POST /clusters/{clusterTag}/compute-quotas), named "
            "<clusterTag>-<teamName>.\n\n"
            "Needs the taskGovernance feature. The team and its guaranteed instances are the user's decisions. One "
            "quota per team (409). The answer is Creating: poll compute_quota_list until Created. Write tool: needs "
            "--allow-write."
        ),
        cli="governance create-quota",
        idempotent=True,
    ),
)
def create_compute_quota(
    cluster_tag: ClusterTagPath,
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
    openapi_extensions=_faces(
        "compute_quota_update",
        "Change a team's compute quota",
        (
            "Change a team's compute quota (PATCH /clusters/{clusterTag}/compute-quotas/{computeQuotaName}): only the "
            "members given. Pass the computeQuotaVersion you showed the user as targetVersion (409 when it changed). "
            "The team cannot change. The answer is Updating: poll compute_quota_list until Updated. Write tool: needs "
            "--allow-write."
        ),
        cli="governance update-quota",
        destructive=True,
    ),
)
def update_compute_quota(
    cluster_tag: ClusterTagPath,
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
    openapi_extensions=_faces(
        "compute_quota_delete",
        "Delete a team's compute quota",
        (
            "Delete a team's compute quota (DELETE /clusters/{clusterTag}/compute-quotas/{computeQuotaName}); its "
            "team queues go with it and the team's tasks lose their guarantee.\n\n"
            "Destructive: show the user the quota (compute_quota_list) and ask them to confirm by typing the cluster "
            "tag; pass it as confirmClusterTag. Poll compute_quota_list until it is gone. Write tool: needs "
            "--allow-write."
        ),
        cli="governance delete-quota",
        destructive=True,
        idempotent=True,
        confirm=True,
    ),
)
def delete_compute_quota(
    cluster_tag: ClusterTagPath,
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
