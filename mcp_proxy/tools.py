"""The MCP tools: one per HTTP API operation (plus ``wait_seconds``), each a call of ``InstantStartClient``.

Rules every tool follows:

- It calls the HTTP API through :class:`instantstart_client.api.InstantStartClient` (SigV4, botocore credential
  chain) and nothing else: no boto3 service calls, no kubectl, no logic the API lacks.
- Its result is the API's JSON answer as structured content (and as JSON text), described by an
  ``outputSchema`` derived from the API's response model.
- An API answer of 4xx/5xx becomes a tool error (``isError``) whose text is the API's
  ``{"error": {"code", "message", "details"}}`` JSON, verbatim.
- Every call returns within 55 s, under the 60 s timeout MCP clients commonly apply: ``wait_seconds``
  waits at most ``WAIT_PER_CALL_MAX_SECONDS`` per call and says how much of the request is left, and the
  API requests of one call (attempts, backoff waits, pages) share a time bound of
  :data:`CALL_BUDGET_SECONDS`; a slow API makes the call answer "did not answer within N s; call again".
- A call the proxy refuses itself (read-only mode, a delete confirmation that does not match, a wait
  outside the accepted range, the API unreachable or unconfigured) raises the SDK's ``ToolError``, whose message
  the agent reads and which says what to do next.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, cast

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from instantstart_client.api import (
    ApiConnectionError,
    ApiError,
    ApiTimeoutError,
    ConfigurationError,
    InstantStartClient,
)
from instantstart_client.shapes import InstanceGroupSpec
from mcp_proxy import schemas
from mcp_proxy.schemas import (
    ActivationStateParam,
    AutoScalingEnabledParam,
    AutoScalingGroupsParam,
    AutoScalingLimitsParam,
    AvailabilityZoneParam,
    ClusterTagParam,
    ComputeQuotaConfigChangeParam,
    ComputeQuotaConfigParam,
    ComputeQuotaNameParam,
    ComputeQuotaTargetChangeParam,
    ComputeQuotaTargetParam,
    ConsolidateAfterParam,
    DeleteNodeIdsParam,
    EksClusterNameParam,
    EventLevelParam,
    EventsInstanceGroupParam,
    EventsMaxResultsParam,
    EventsNextTokenParam,
    GovernanceTargetVersionParam,
    HealthCheckGroupsParam,
    HyperPodClusterNameParam,
    HyperPodOperationIdParam,
    HyperPodOperationStatusParam,
    HyperPodOperationTypeParam,
    IdempotencyKeyParam,
    ImportAvailabilityZoneParam,
    ImportInstanceGroupsParam,
    InstanceCountParam,
    InstanceGroupNameParam,
    InstanceGroupNamesParam,
    InstanceGroupsParam,
    KubernetesVersionParam,
    LabelsParam,
    NewGroupCapacityParam,
    NewGroupCountParam,
    NewGroupNameParam,
    NewGroupTypeParam,
    NodeIdsParam,
    NodesMaxResultsParam,
    NodesNextTokenParam,
    OperationIdParam,
    OperationsMaxResultsParam,
    OperationsNextTokenParam,
    SchedulerConfigParam,
    StageParam,
    WaitSecondsParam,
)

ALLOW_WRITE_ENV = "INSTANTSTART_ALLOW_WRITE"
"""Environment variable that enables write tools when set to ``true`` (or ``1``/``yes``/``on``)."""

OPERATION_TOOLS: Mapping[str, str] = {
    "ListClusters": "cluster_list_all",
    "CreateCluster": "cluster_create",
    "ImportCluster": "cluster_import",
    "GetCluster": "cluster_get_status",
    "ListStages": "cluster_get_stages",
    "ListClusterEvents": "cluster_list_events",
    "RetryStage": "cluster_retry_stage",
    "DeleteCluster": "cluster_delete",
    "GetOperation": "operation_get",
    "CancelOperation": "operation_cancel",
    "ListClusterOperations": "cluster_list_operations",
    "ListAvailabilityZones": "catalog_list_availability_zones",
    "ListInstanceTypes": "catalog_list_instance_types",
    "ListInstanceGroups": "instance_group_list",
    "AddInstanceGroup": "instance_group_add",
    "UpdateInstanceGroup": "instance_group_update",
    "DeleteInstanceGroup": "instance_group_delete",
    "ListTrainingPlans": "catalog_list_training_plans",
    "SearchTrainingPlanOfferings": "catalog_search_training_plan_offerings",
    "ListClusterNodes": "node_list",
    "RebootClusterNodes": "node_reboot",
    "ReplaceClusterNodes": "node_replace",
    "DeleteClusterNodes": "node_delete",
    "UpdateClusterSoftware": "cluster_update_software",
    "StartClusterHealthCheck": "cluster_start_health_check",
    "ListHyperPodOperations": "hyperpod_operation_list",
    "GetHyperPodOperation": "hyperpod_operation_get",
    "GetAutoScaling": "autoscaling_get",
    "UpdateAutoScaling": "autoscaling_update",
    "GetClusterFeatures": "cluster_get_features",
    "UpdateClusterFeatures": "cluster_update_features",
    "GetSchedulerConfig": "scheduler_config_get",
    "PutSchedulerConfig": "scheduler_config_put",
    "ListComputeQuotas": "compute_quota_list",
    "CreateComputeQuota": "compute_quota_create",
    "UpdateComputeQuota": "compute_quota_update",
    "DeleteComputeQuota": "compute_quota_delete",
    "CreateTrainingJob": "training_job_create",
    "ListTrainingJobs": "training_job_list",
    "GetTrainingJob": "training_job_get",
    "GetTrainingJobLogs": "training_job_logs",
    "DeleteTrainingJob": "training_job_delete",
    "GetMlflow": "mlflow_get",
    "UpdateMlflow": "mlflow_connect",
    "DeleteMlflow": "mlflow_disconnect",
    "ListTrainingJobRuns": "mlflow_list_job_runs",
    "DownloadModel": "model_download",
    "ListModels": "model_list",
    "CreateInferenceDeployment": "inference_deployment_create",
    "ListInferenceDeployments": "inference_deployment_list",
    "GetInferenceDeployment": "inference_deployment_get",
    "ScaleInferenceDeployment": "inference_deployment_scale",
    "DeleteInferenceDeployment": "inference_deployment_delete",
    "CreateInferenceRouter": "inference_deployment_router",
    "InvokeInferenceDeployment": "inference_deployment_invoke",
    "CreateInferenceEndpoint": "inference_endpoint_create",
    "ListInferenceEndpoints": "inference_endpoint_list",
    "GetInferenceEndpoint": "inference_endpoint_get",
    "DeleteInferenceEndpoint": "inference_endpoint_delete",
    "InvokeInferenceEndpoint": "inference_endpoint_invoke",
}
"""OpenAPI ``operationId`` (``api_schema/openapi.json``) -> the tool that calls it. A test fails when an
operation of the contract has no entry, so every new route gets its tool in the same change."""

WRITE_TOOLS = frozenset(
    {
        "cluster_create",
        "cluster_import",
        "cluster_retry_stage",
        "cluster_delete",
        "operation_cancel",
        "instance_group_add",
        "instance_group_update",
        "instance_group_delete",
        "node_reboot",
        "node_replace",
        "node_delete",
        "cluster_update_software",
        "cluster_start_health_check",
        "autoscaling_update",
        "cluster_update_features",
        "scheduler_config_put",
        "compute_quota_create",
        "compute_quota_update",
        "compute_quota_delete",
        "training_job_create",
        "training_job_delete",
        "mlflow_connect",
        "mlflow_disconnect",
        "model_download",
        "inference_deployment_create",
        "inference_deployment_scale",
        "inference_deployment_delete",
        "inference_deployment_router",
        "inference_deployment_invoke",
        "inference_endpoint_create",
        "inference_endpoint_invoke",
        "inference_endpoint_delete",
    }
)
"""Tools that change AWS resources: listed always, refused unless writes are enabled."""

PROGRESS_INTERVAL_SECONDS = 10.0
"""``wait_seconds`` reports progress this often (keeps clients with idle timeouts informed)."""

Sleep = Callable[[float], Awaitable[None]]
ClientFactory = Callable[[], InstantStartClient]


def env_allows_write(environ: Mapping[str, str]) -> bool:
    """True when ``INSTANTSTART_ALLOW_WRITE`` is ``true``, ``1``, ``yes`` or ``on`` (any case)."""
    return environ.get(ALLOW_WRITE_ENV, "").strip().lower() in {"true", "1", "yes", "on"}


def read_only_message(tool: str) -> str:
    """The refusal of a write tool in read-only mode, saying exactly how to enable writes."""
    return (
        f"{tool} was refused: this InstantStart MCP server is read-only (the default), so write tools "
        "(cluster_create, cluster_retry_stage, cluster_delete, operation_cancel, instance_group_add, "
        "instance_group_update, instance_group_delete) do nothing and nothing was sent "
        f"({', '.join(sorted(WRITE_TOOLS))}) do nothing and nothing was sent "
        "to the API. "
        "To enable them, restart the server with --allow-write (`instantstart-mcp --allow-write`) or set "
        f"{ALLOW_WRITE_ENV}=true in its environment (the `env` of its entry in your MCP client configuration), "
        "then call the tool again."
    )


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def ok(data: Mapping[str, Any]) -> CallToolResult:
    """A successful result: ``data`` as structured content and as JSON text."""
    payload = dict(data)
    return CallToolResult(content=[TextContent(type="text", text=_json_text(payload))], structured_content=payload)


def api_error_result(exc: ApiError) -> CallToolResult:
    """The tool error of a 4xx/5xx answer: its text is the API's ``{"error": ...}`` JSON.

    The body is :meth:`ApiError.error_response` (``instantstart_client.shapes.ErrorResponse``): the API's own
    body verbatim, or that shape built from the code and message the client parsed (API Gateway's own
    ``{"message": "Forbidden"}``, a non-JSON body; the code is then the HTTP reason phrase).
    """
    return CallToolResult(content=[TextContent(type="text", text=_json_text(exc.error_response()))], is_error=True)


@dataclass(frozen=True)
class ToolSpec:
    """How one tool is published: name, title, result schema and behaviour hints."""

    name: str
    title: str
    output_schema: dict[str, Any]
    annotations: ToolAnnotations


def _read(name: str, title: str, schema: dict[str, Any], *, open_world: bool = True) -> ToolSpec:
    return ToolSpec(name, title, schema, ToolAnnotations(title=title, read_only_hint=True, open_world_hint=open_world))


def _write(name: str, title: str, schema: dict[str, Any], *, destructive: bool, idempotent: bool) -> ToolSpec:
    hints = ToolAnnotations(
        title=title,
        read_only_hint=False,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=True,
    )
    return ToolSpec(name, title, schema, hints)


def _without_nulls(value: Any) -> Any:
    """``value`` without null members (the API reads a missing member as "not given")."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


TOOL_SPECS: tuple[ToolSpec, ...] = (
    _write(
        "model_download",
        "Download a model into the cluster's storage",
        schemas.MODEL_DOWNLOAD_ACCEPTED_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _read("model_list", "List the models in the cluster's storage", schemas.MODELS_SCHEMA),
    _write(
        "inference_deployment_create",
        "Deploy a model with vLLM or SGLang",
        schemas.INFERENCE_DEPLOYMENT_ACCEPTED_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _read("inference_deployment_list", "List inference deployments", schemas.INFERENCE_DEPLOYMENTS_SCHEMA),
    _read("inference_deployment_get", "Get an inference deployment", schemas.INFERENCE_DEPLOYMENT_SCHEMA),
    _write(
        "inference_deployment_scale",
        "Scale an inference deployment",
        schemas.INFERENCE_DEPLOYMENT_ACCEPTED_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _write(
        "inference_deployment_delete",
        "Delete an inference deployment",
        schemas.INFERENCE_DEPLOYMENT_ACCEPTED_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _write(
        "inference_deployment_router",
        "Put the SGLang router in front of a deployment",
        schemas.INFERENCE_DEPLOYMENT_ACCEPTED_SCHEMA,
        destructive=False,
        idempotent=True,
    ),
    _write(
        "inference_deployment_invoke",
        "Call a self-managed deployment's model",
        schemas.INVOKE_DEPLOYMENT_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _write(
        "inference_endpoint_create",
        "Deploy a model as a managed endpoint (HyperPod inference operator)",
        schemas.INFERENCE_ENDPOINT_ACCEPTED_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _read("inference_endpoint_list", "List managed inference endpoints", schemas.INFERENCE_ENDPOINTS_SCHEMA),
    _read("inference_endpoint_get", "Get a managed inference endpoint", schemas.INFERENCE_ENDPOINT_SCHEMA),
    _write(
        "inference_endpoint_invoke",
        "Call a managed endpoint's model",
        schemas.INVOKE_ENDPOINT_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _write(
        "inference_endpoint_delete",
        "Delete a managed inference endpoint",
        schemas.INFERENCE_ENDPOINT_ACCEPTED_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _read("cluster_list_all", "List all clusters", schemas.CLUSTER_LIST_SCHEMA),
    _write(
        "cluster_create", "Create a HyperPod cluster", schemas.OPERATION_SCHEMA, destructive=False, idempotent=False
    ),
    _write(
        "cluster_import",
        "Import an existing EKS cluster",
        schemas.OPERATION_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _read("cluster_get_status", "Get a cluster's status", schemas.CLUSTER_SCHEMA),
    _read("cluster_get_stages", "Get a cluster's stages", schemas.STAGES_SCHEMA),
    _read("cluster_list_events", "List a cluster's HyperPod events", schemas.EVENTS_SCHEMA),
    _read("cluster_list_operations", "List a cluster's operations", schemas.OPERATIONS_SCHEMA),
    _write(
        "cluster_retry_stage", "Retry a failed stage", schemas.OPERATION_SCHEMA, destructive=False, idempotent=False
    ),
    _write("cluster_delete", "Delete a cluster", schemas.OPERATION_SCHEMA, destructive=True, idempotent=True),
    _read("operation_get", "Get an operation", schemas.OPERATION_SCHEMA),
    _write(
        "operation_cancel", "Cancel a running operation", schemas.OPERATION_SCHEMA, destructive=True, idempotent=True
    ),
    _read("instance_group_list", "List a cluster's instance groups", schemas.INSTANCE_GROUPS_SCHEMA),
    _write(
        "instance_group_add", "Add an instance group", schemas.OPERATION_SCHEMA, destructive=False, idempotent=False
    ),
    _write(
        "instance_group_update",
        "Scale or relabel an instance group",
        schemas.OPERATION_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _write(
        "instance_group_delete", "Remove an instance group", schemas.OPERATION_SCHEMA, destructive=True, idempotent=True
    ),
    _read("catalog_list_availability_zones", "List Availability Zones", schemas.ZONES_SCHEMA),
    _read("catalog_list_instance_types", "List instance types in a zone", schemas.INSTANCE_TYPES_SCHEMA),
    _read("catalog_list_training_plans", "List training plans", schemas.TRAINING_PLANS_SCHEMA),
    _read(
        "catalog_search_training_plan_offerings",
        "Search training plan offerings",
        schemas.TRAINING_PLAN_OFFERINGS_SCHEMA,
    ),
    _read("node_list", "List a cluster's nodes", schemas.NODES_SCHEMA),
    _write("node_reboot", "Reboot nodes", schemas.OPERATION_SCHEMA, destructive=False, idempotent=False),
    _write("node_replace", "Replace nodes", schemas.OPERATION_SCHEMA, destructive=True, idempotent=False),
    _write("node_delete", "Delete nodes", schemas.OPERATION_SCHEMA, destructive=True, idempotent=False),
    _write(
        "cluster_update_software",
        "Update the nodes' software",
        schemas.OPERATION_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _write(
        "cluster_start_health_check",
        "Run deep health checks",
        schemas.OPERATION_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _read("hyperpod_operation_list", "List HyperPod operations", schemas.HYPERPOD_OPERATIONS_SCHEMA),
    _read("hyperpod_operation_get", "Get a HyperPod operation", schemas.HYPERPOD_OPERATION_SCHEMA),
    _read("autoscaling_get", "Get a cluster's managed Karpenter", schemas.AUTOSCALING_SCHEMA),
    _write(
        "autoscaling_update",
        "Turn managed Karpenter on or off",
        schemas.OPERATION_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _read("cluster_get_features", "Get a cluster's managed features", schemas.FEATURES_SCHEMA),
    _write(
        "cluster_update_features",
        "Turn managed features on or off",
        schemas.FEATURE_UPDATE_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _read("wait_seconds", "Wait between status polls", schemas.WAIT_SCHEMA, open_world=False),
    _write(
        "training_job_create",
        "Create a training job from a recipe",
        schemas.TRAINING_JOB_ACCEPTED_SCHEMA,
        destructive=False,
        idempotent=False,
    ),
    _read("training_job_list", "List a cluster's training jobs", schemas.TRAINING_JOBS_SCHEMA),
    _read("training_job_get", "Get a training job", schemas.TRAINING_JOB_SCHEMA),
    _read("training_job_logs", "Read a training job's logs", schemas.TRAINING_JOB_LOGS_SCHEMA),
    _write(
        "training_job_delete",
        "Delete a training job and its pods",
        schemas.TRAINING_JOB_ACCEPTED_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _read("scheduler_config_get", "Get the task governance scheduler config", schemas.SCHEDULER_CONFIG_SCHEMA),
    _write(
        "scheduler_config_put",
        "Create or replace the scheduler config",
        schemas.SCHEDULER_CONFIG_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _read("compute_quota_list", "List a cluster's compute quotas", schemas.COMPUTE_QUOTAS_SCHEMA),
    _write(
        "compute_quota_create",
        "Create a team's compute quota",
        schemas.COMPUTE_QUOTA_SCHEMA,
        destructive=False,
        idempotent=True,
    ),
    _write(
        "compute_quota_update",
        "Change a team's compute quota",
        schemas.COMPUTE_QUOTA_SCHEMA,
        destructive=True,
        idempotent=False,
    ),
    _write(
        "compute_quota_delete",
        "Delete a team's compute quota",
        schemas.COMPUTE_QUOTA_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
    _read("mlflow_get", "Get a cluster's MLflow connection", schemas.MLFLOW_SCHEMA),
    _read("mlflow_list_job_runs", "List a training job's MLflow runs", schemas.MLFLOW_RUNS_SCHEMA),
    _write(
        "mlflow_connect",
        "Connect or create SageMaker managed MLflow",
        schemas.MLFLOW_UPDATE_SCHEMA,
        destructive=False,
        idempotent=True,
    ),
    _write(
        "mlflow_disconnect",
        "Disconnect SageMaker managed MLflow",
        schemas.MLFLOW_UPDATE_SCHEMA,
        destructive=True,
        idempotent=True,
    ),
)
"""Every tool, in the order they are listed."""


CALL_BUDGET_SECONDS = 50.0
"""Seconds the API requests of one tool call may take in all (attempts, backoff waits and pages included):
with the proxy's own work the call answers within 55 s, before MCP clients' common 60 s timeout."""


class InstantStartTools:
    """The tool implementations, bound to one API client and one write policy.

    Args:
        client_factory: builds the API client on the first call (so a missing URL or missing
            credentials become a readable tool error rather than a server that does not start).
        allow_write: enable ``cluster_create``, ``cluster_retry_stage``, ``cluster_delete`` and ``operation_cancel``.
        sleep: the awaitable sleep of ``wait_seconds`` (default ``anyio.sleep``: real seconds).
        progress_interval: seconds between progress notifications of ``wait_seconds``.
        call_budget: seconds the API requests of one tool call may take in all (default
            :data:`CALL_BUDGET_SECONDS`).
    """

    def __init__(
        self,
        client_factory: ClientFactory,
        *,
        allow_write: bool,
        sleep: Sleep | None = None,
        progress_interval: float = PROGRESS_INTERVAL_SECONDS,
        call_budget: float = CALL_BUDGET_SECONDS,
    ) -> None:
        self._client_factory = client_factory
        self._client: InstantStartClient | None = None
        self._lock = threading.Lock()
        self.allow_write = allow_write
        self._sleep: Sleep = sleep or anyio.sleep
        self._progress_interval = progress_interval
        self._call_budget = call_budget

    # -- plumbing -------------------------------------------------------------------------------------

    def client(self) -> InstantStartClient:
        """The API client, created on first use.

        Raises:
            ToolError: no API URL, no region (the message names the settings).
        """
        with self._lock:
            if self._client is None:
                try:
                    self._client = self._client_factory()
                except ConfigurationError as exc:
                    raise ToolError(f"the InstantStart API client is not configured: {exc}") from exc
            return self._client

    def _call(self, request: Callable[[InstantStartClient], Mapping[str, Any]]) -> CallToolResult:
        """Run one call's API requests within the call budget; map the answer and failures to results/tool errors."""
        client = self.client()
        try:
            with client.time_bound(self._call_budget):
                return ok(request(client))
        except ApiError as exc:
            return api_error_result(exc)
        except ApiTimeoutError as exc:
            raise ToolError(
                f"the InstantStart API did not answer within {exc.budget:g} s; call the tool again (a create, "
                "retry or delete may have started: list the cluster's operations before starting another)."
            ) from exc
        except ApiConnectionError as exc:
            raise ToolError(
                f"the InstantStart API could not be reached after retries: {exc.message}. Check the API URL "
                f"({client.api_url}) and the network, then call the tool again."
            ) from exc
        except ConfigurationError as exc:
            raise ToolError(f"the InstantStart API client is not configured: {exc}") from exc

    def _require_write(self, tool: str) -> None:
        if not self.allow_write:
            raise ToolError(read_only_message(tool))

    # -- clusters -------------------------------------------------------------------------------------

    def cluster_list_all(self) -> CallToolResult:
        """List every cluster of the control plane (all pages): tag, status, zone, EKS and HyperPod names.

        Call this first, before creating anything, to see which tags exist. Read-only.
        """

        def request(client: InstantStartClient) -> dict[str, Any]:
            clusters = list(client.iter_clusters())
            return {"clusters": clusters, "count": len(clusters)}

        return self._call(request)

    def cluster_create(
        self,
        clusterTag: ClusterTagParam,
        availabilityZone: AvailabilityZoneParam,
        instanceGroups: InstanceGroupsParam,
        kubernetesVersion: KubernetesVersionParam = None,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Start creating a HyperPod cluster on a new EKS cluster (POST /clusters); returns the operation.

        The control plane runs the stages network -> access -> dependencies -> hyperpod -> storage ->
        verify (about 30-40 minutes): VPC and subnets, EKS, add-ons, HyperPod capacity with automatic
        node recovery, S3 storage, node verification. Do not ask the user about CIDRs, subnets, route
        tables or installation order. Before calling, use cluster_list_all, catalog_list_availability_zones
        and catalog_list_instance_types and get the user's choice of tag, zone, instance type and count and
        capacity type. After calling, poll to a terminal state: wait_seconds (30-50) then operation_get
        with the returned operationId (or cluster_get_stages for stage progress), reporting progress,
        until status is SUCCEEDED, FAILED or CANCELLED; never stop early. Write tool: needs --allow-write.
        """
        self._require_write("cluster_create")

        groups = cast(list[InstanceGroupSpec], [group.to_api() for group in instanceGroups])

        def request(client: InstantStartClient) -> Mapping[str, Any]:
            return client.create_cluster(
                clusterTag,
                availabilityZone,
                groups,
                kubernetes_version=kubernetesVersion,
                idempotency_key=idempotencyKey,
            )

        return self._call(request)

    def cluster_import(
        self,
        eksClusterName: EksClusterNameParam,
        clusterTag: ClusterTagParam,
        hyperPodClusterName: HyperPodClusterNameParam = None,
        availabilityZone: ImportAvailabilityZoneParam = None,
        instanceGroups: ImportInstanceGroupsParam = None,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Bring an existing EKS cluster (and its HyperPod cluster) under management (POST /clusters/import);
        returns the IMPORT_CLUSTER operation.

        The API inspects the EKS cluster and records the stages whose resources exist as SUCCEEDED and imported;
        only the missing ones run (e.g. the HyperPod cluster, storage, verify). It refuses a CONFIG_MAP-only
        cluster and Kubernetes versions HyperPod does not support (422 naming eksClusterName). A later
        cluster_delete removes only what the control plane created; its answer lists what it left (retained).
        Ask the user for the EKS cluster name, the tag, and either the HyperPod cluster to import or the
        instance type and count for a new one. Poll the operation to a terminal state like cluster_create.
        Write tool: needs --allow-write.
        """
        self._require_write("cluster_import")
        groups = cast(list[InstanceGroupSpec], [group.to_api() for group in instanceGroups]) if instanceGroups else None

        def request(client: InstantStartClient) -> Mapping[str, Any]:
            return client.import_cluster(
                eksClusterName,
                clusterTag,
                hyper_pod_cluster_name=hyperPodClusterName,
                availability_zone=availabilityZone,
                instance_groups=groups,
                idempotency_key=idempotencyKey,
            )

        return self._call(request)

    def cluster_get_status(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """Get one cluster (GET /clusters/{clusterTag}): status (CREATING, READY, DEGRADED, FAILED, DELETING, DELETED),
        every stage with its status and error, the current operation id, and the observed EKS cluster,
        HyperPod cluster and instance groups, Kubernetes nodes and S3 storage.

        Use it to verify a READY cluster and build the final summary for the user. Read-only.
        """
        return self._call(lambda client: client.get_cluster(clusterTag))

    def cluster_get_stages(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """Get the stages of a cluster in order (GET /clusters/{clusterTag}/stages): name, status (PENDING,
        RUNNING, SUCCEEDED, FAILED, CANCELLED), attempts, start/end times, the AWS status observed, resources and
        the AWS error of a failed stage, verbatim.

        Use it while polling to report which stage is running. Read-only.
        """
        return self._call(lambda client: {"clusterTag": clusterTag, "stages": client.get_stages(clusterTag)})

    def cluster_list_events(
        self,
        clusterTag: ClusterTagParam,
        maxResults: EventsMaxResultsParam = schemas.EVENTS_DEFAULT_PAGE_SIZE,
        nextToken: EventsNextTokenParam = None,
        level: EventLevelParam = None,
        instanceGroupName: EventsInstanceGroupParam = None,
    ) -> CallToolResult:
        """List SageMaker HyperPod's own events of a cluster, newest first (GET /clusters/{clusterTag}/events):
        time, level (Info, Warn, Error), resource type, instance group, instance id and SageMaker's
        description verbatim (provisioning, scaling, node replacement, capacity errors).

        Use it when a hyperpod or verify stage is slow or FAILED, or a node is unhealthy, to tell the user
        what HyperPod reported (level Error first). Empty while the HyperPod cluster does not exist yet.
        One page per call: when nextToken is not null, call again with it (and the same filters) for
        older events; with a level filter a page may be short or empty while nextToken is set. Read-only.
        """
        return self._call(
            lambda client: client.list_cluster_events(
                clusterTag,
                max_results=maxResults,
                next_token=nextToken,
                level=level,
                instance_group_name=instanceGroupName,
            )
        )

    def cluster_list_operations(
        self,
        clusterTag: ClusterTagParam,
        maxResults: OperationsMaxResultsParam = schemas.OPERATIONS_DEFAULT_PAGE_SIZE,
        nextToken: OperationsNextTokenParam = None,
    ) -> CallToolResult:
        """List this control plane's operations on a cluster, newest first (GET /clusters/{clusterTag}/operations):
        creates, stage retries and deletes with their status, times and the error that ended them, for every
        generation of the tag (also after the cluster was DELETED).

        Use it to tell the user what was done to a cluster and to find a running operation's operationId
        (to follow it with operation_get or stop it with operation_cancel). One page per call: when nextToken
        is not null, call again with it for older operations. Read-only.
        """
        return self._call(
            lambda client: client.list_cluster_operations(clusterTag, max_results=maxResults, next_token=nextToken)
        )

    def cluster_retry_stage(
        self,
        clusterTag: ClusterTagParam,
        stage: StageParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Run a FAILED stage again, and every stage after it (POST /clusters/{clusterTag}/stages/{stage}/retry).

        Earlier stages are kept. Only a FAILED or CANCELLED stage can be retried (the API answers 409 naming
        the stage's status otherwise). Show the user the stage's error first; if it is a capacity or quota
        problem, the user decides whether to retry. Returns the RETRY_STAGE operation: poll it to a
        terminal state like cluster_create. Write tool: needs --allow-write.
        """
        self._require_write("cluster_retry_stage")
        return self._call(lambda client: client.retry_stage(clusterTag, stage, idempotency_key=idempotencyKey))

    def cluster_delete(
        self,
        clusterTag: ClusterTagParam,
        confirmClusterTag: Annotated[
            str,
            Field(
                description="The cluster tag again (required, no default), exactly as the user typed it to "
                "confirm the deletion; the call is refused unless it equals clusterTag. Never fill it in "
                "without the user's explicit confirmation."
            ),
        ],
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Delete a cluster and every AWS and Kubernetes resource it created (DELETE /clusters/{clusterTag}).

        Destructive and irreversible: first show the user what will be deleted (cluster_get_status) and
        ask them to confirm by typing the tag; pass what they typed as confirmClusterTag. Returns the
        DELETE_CLUSTER operation: poll it to a terminal state like cluster_create. Write tool: needs
        --allow-write.
        """
        self._require_write("cluster_delete")
        if confirmClusterTag != clusterTag:
            raise ToolError(
                f"cluster_delete was refused: confirmClusterTag {confirmClusterTag!r} does not equal clusterTag "
                f"{clusterTag!r}, so nothing was deleted. Ask the user to confirm deleting cluster "
                f"{clusterTag!r} and all its AWS and Kubernetes resources by typing its tag, then call "
                "cluster_delete again with confirmClusterTag set to exactly what they typed."
            )
        return self._call(lambda client: client.delete_cluster(clusterTag, idempotency_key=idempotencyKey))

    # -- operations -----------------------------------------------------------------------------------

    def operation_get(self, operationId: OperationIdParam) -> CallToolResult:
        """Get a long-running operation (GET /operations/{operationId}): type, status (PENDING, RUNNING,
        SUCCEEDED, FAILED, CANCELLED), cluster tag, times and the error that ended it.

        SUCCEEDED, FAILED and CANCELLED are terminal; until then keep polling with wait_seconds between
        calls. Read-only.
        """
        return self._call(lambda client: client.get_operation(operationId))

    def operation_cancel(self, operationId: OperationIdParam) -> CallToolResult:
        """Cancel a PENDING or RUNNING operation (POST /operations/{operationId}/cancel): its workflow is stopped,
        the operation ends CANCELLED, the stage it was running CANCELLED and the cluster FAILED.

        Use it only when the user asks to stop a create, retry or delete (for example to delete a cluster whose
        create is still running: cluster_delete answers 409 while an operation runs). Afterwards the cluster can
        be deleted with cluster_delete (it tears down whatever was created) or the CANCELLED stage retried with
        cluster_retry_stage. Cancelling a CANCELLED operation returns it again; an operation that already ended
        SUCCEEDED or FAILED is a 409 naming its status. Write tool: needs --allow-write.
        """
        self._require_write("operation_cancel")
        return self._call(lambda client: client.cancel_operation(operationId))

    # -- instance groups ------------------------------------------------------------------------------

    def instance_group_list(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """List a cluster's instance groups as HyperPod reports them now (GET /clusters/{clusterTag}/instance-groups):
        each group's instance type, target and current count, capacity type, training plan, status and subnets.

        Call it before scaling, adding or removing a group, and show the user the current counts. Read-only.
        """
        return self._call(lambda client: client.list_instance_groups(clusterTag))

    def instance_group_add(
        self,
        clusterTag: ClusterTagParam,
        instanceType: NewGroupTypeParam,
        instanceCount: NewGroupCountParam,
        instanceGroupName: NewGroupNameParam = schemas.DEFAULT_INSTANCE_GROUP_NAME,
        capacityType: NewGroupCapacityParam = schemas.DEFAULT_CAPACITY_TYPE,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Add an instance group to a READY cluster (POST /clusters/{clusterTag}/instance-groups), in the cluster
        zone's compute subnet. Instance type and count are the user's decisions (offer only types from
        catalog_list_instance_types). Returns the ADD_INSTANCE_GROUP operation: poll it with operation_get and
        wait_seconds until SUCCEEDED, FAILED or CANCELLED. One operation per cluster at a time (409 names the
        running one). Write tool: needs --allow-write.
        """
        self._require_write("instance_group_add")
        group = {
            "instanceGroupName": instanceGroupName,
            "instanceType": instanceType,
            "instanceCount": instanceCount,
            "capacityType": capacityType,
        }
        return self._call(
            lambda client: client.add_instance_group(clusterTag, group, idempotency_key=idempotencyKey)  # type: ignore[arg-type]
        )

    def instance_group_update(
        self,
        clusterTag: ClusterTagParam,
        instanceGroupName: InstanceGroupNameParam,
        instanceCount: InstanceCountParam = None,
        labels: LabelsParam = None,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Scale an instance group (instanceCount, 0 allowed) or replace its Kubernetes labels
        (PATCH /clusters/{clusterTag}/instance-groups/{instanceGroupName}).

        Scaling down removes pending instances first, then the newest: confirm with the user before lowering a
        count, since work on removed nodes stops. Instance type, capacity type, training plan and subnet cannot
        change (409 names the field: add a new group instead). Returns the SCALE_INSTANCE_GROUP or
        UPDATE_INSTANCE_GROUP operation: poll it to a terminal state. Write tool: needs --allow-write.
        """
        self._require_write("instance_group_update")
        changes: dict[str, Any] = {}
        if instanceCount is not None:
            changes["instanceCount"] = instanceCount
        if labels is not None:
            changes["labels"] = labels
        return self._call(
            lambda client: client.update_instance_group(
                clusterTag, instanceGroupName, changes, idempotency_key=idempotencyKey
            )
        )

    def instance_group_delete(
        self,
        clusterTag: ClusterTagParam,
        instanceGroupName: InstanceGroupNameParam,
        confirmClusterTag: Annotated[
            str,
            Field(
                description="The cluster tag again (required, no default), exactly as the user typed it to "
                "confirm removing the group; the call is refused unless it equals clusterTag. Never fill it in "
                "without the user's explicit confirmation."
            ),
        ],
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Remove an instance group and all its instances
        (DELETE /clusters/{clusterTag}/instance-groups/{instanceGroupName}).

        Destructive: first show the user the group (instance_group_list) and ask them to confirm by typing the
        cluster tag; pass what they typed as confirmClusterTag. The last group cannot be removed (409). Returns
        the DELETE_INSTANCE_GROUP operation: poll it to a terminal state. Write tool: needs --allow-write.
        """
        self._require_write("instance_group_delete")
        if confirmClusterTag != clusterTag:
            raise ToolError(
                f"instance_group_delete was refused: confirmClusterTag {confirmClusterTag!r} does not equal "
                f"clusterTag {clusterTag!r}, so nothing was removed. Ask the user to confirm removing instance group "
                f"{instanceGroupName!r} of {clusterTag!r} by typing the cluster tag, then call instance_group_delete "
                "again with confirmClusterTag set to exactly what they typed."
            )
        return self._call(
            lambda client: client.delete_instance_group(clusterTag, instanceGroupName, idempotency_key=idempotencyKey)
        )

    # -- managed Karpenter --------------------------------------------------------------------------------

    def autoscaling_get(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """Show a cluster's managed Karpenter (GET /clusters/{clusterTag}/autoscaling): HyperPod's AutoScaling
        mode, status and failure message now, its ClusterRole, and the NodePool / HyperpodNodeClass (groups,
        limits, consolidateAfter) the last change applied. Read-only.
        """
        return self._call(lambda client: client.get_autoscaling(clusterTag))

    def autoscaling_update(
        self,
        clusterTag: ClusterTagParam,
        enabled: AutoScalingEnabledParam,
        instanceGroups: AutoScalingGroupsParam = None,
        limits: AutoScalingLimitsParam = None,
        consolidateAfter: ConsolidateAfterParam = None,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Turn managed Karpenter on or off (PUT /clusters/{clusterTag}/autoscaling).

        On: Karpenter adds nodes to instanceGroups for Pending pods and removes empty or underutilised ones. First
        show the user instance_group_list: each group must be at 0 instances (scale it with instance_group_update),
        On-Demand, without deep health checks, all in one zone, at most 10; a broken rule is a 4xx whose code
        names it (e.g. KarpenterGroupNotAtZero) and whose details name the group. Ask the user for limits (e.g.
        the most GPUs Karpenter may buy). Off: Karpenter's nodes are removed with its NodePool: confirm with the
        user first. Returns the UPDATE_AUTOSCALING operation: poll it with operation_get and wait_seconds until
        SUCCEEDED, FAILED or CANCELLED. Write tool: needs --allow-write.
        """
        self._require_write("autoscaling_update")
        return self._call(
            lambda client: client.update_autoscaling(
                clusterTag,
                enabled=enabled,
                instance_groups=instanceGroups,
                limits=limits,
                consolidate_after=consolidateAfter,
                idempotency_key=idempotencyKey,
            )
        )

    # -- managed features -------------------------------------------------------------------------------

    def cluster_get_features(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """Get a cluster's managed features (GET /clusters/{clusterTag}/features): for trainingOperator,
        inferenceOperator, observability (HyperPod observability with its Prometheus workspace, CloudWatch Container
        Insights), taskGovernance, tieredCheckpointing, fsx and kubeRay, whether each is on as AWS reports
        it now, what was last applied (desired), the add-on version and status, and what it installed (add-ons with
        who needs each, IAM roles, pod identity associations, Kubernetes objects, buckets).

        Call it before cluster_update_features and show the user the current state. Read-only.
        """
        return self._call(lambda client: client.get_features(clusterTag))

    # -- training jobs --------------------------------------------------------------------------------
    def training_job_create(
        self, clusterTag: ClusterTagParam, job: schemas.TrainingJobParam, idempotencyKey: IdempotencyKeyParam = None
    ) -> CallToolResult:
        """Create a training job (POST /clusters/{clusterTag}/training-jobs): one tool, the job's recipe field picks
        its shape. Read the instantstart-training-jobs skill first (which recipe, how many nodes, restarts). Returns the
        job's name and its CREATE_TRAINING_JOB operation: poll it with operation_get, then follow the job with
        training_job_get and training_job_logs. A 409 FeatureNotEnabled names the feature to turn on
        (cluster_update_features). Write tool: needs --allow-write.
        """
        self._require_write("training_job_create")
        return self._call(lambda client: client.create_training_job(clusterTag, job, idempotency_key=idempotencyKey))

    def training_job_list(
        self,
        clusterTag: ClusterTagParam,
        namespace: schemas.JobsNamespaceFilterParam = None,
        maxResults: schemas.JobsMaxResultsParam = schemas.JOBS_DEFAULT_PAGE_SIZE,
        nextToken: schemas.JobsNextTokenParam = None,
    ) -> CallToolResult:
        """List the cluster's training jobs with status, restarts and age, newest first. Read-only."""
        return self._call(
            lambda client: client.list_training_jobs(
                clusterTag, namespace=namespace, max_results=maxResults, next_token=nextToken
            )
        )

    def training_job_get(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.TrainingJobNameParam,
        namespace: schemas.JobNamespaceParam = "default",
    ) -> CallToolResult:
        """A training job: spec summary, status, conditions, restart history, pods (node, phase, restarts).
        Read-only."""
        return self._call(lambda client: client.get_training_job(clusterTag, name, namespace=namespace))

    def training_job_logs(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.TrainingJobNameParam,
        namespace: schemas.JobNamespaceParam = "default",
        pod: schemas.JobPodParam = None,
        container: schemas.JobContainerParam = None,
        tailLines: schemas.TailLinesParam = None,
        sinceSeconds: schemas.SinceSecondsParam = None,
    ) -> CallToolResult:
        """Log text of one pod of a training job (rank 0 by default), bounded in size (the tail is kept; truncated
        says so). To follow a running job, call again with sinceSeconds set to the seconds since the last call.
        Read-only."""
        return self._call(
            lambda client: client.get_training_job_logs(
                clusterTag,
                name,
                namespace=namespace,
                pod=pod,
                container=container,
                tail_lines=tailLines,
                since_seconds=sinceSeconds,
            )
        )

    def training_job_delete(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.TrainingJobNameParam,
        confirmClusterTag: Annotated[
            str,
            Field(
                description="The cluster tag again, exactly as the user typed it to confirm deleting the job; the "
                "call is refused unless it equals clusterTag. Never fill it in without the user's confirmation."
            ),
        ],
        namespace: schemas.JobNamespaceParam = "default",
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Delete a training job and its pods (DELETE .../training-jobs/{name}); destructive: its running processes
        stop. Returns the DELETE_TRAINING_JOB operation. Write tool: needs --allow-write.
        """
        self._require_write("training_job_delete")
        if confirmClusterTag != clusterTag:
            raise ToolError(
                f"training_job_delete was refused: confirmClusterTag {confirmClusterTag!r} does not equal clusterTag "
                f"{clusterTag!r}, so nothing was deleted. Ask the user to confirm deleting job {name!r} by typing the "
                "cluster tag, then call again with confirmClusterTag set to exactly what they typed."
            )
        return self._call(
            lambda client: client.delete_training_job(
                clusterTag, name, namespace=namespace, idempotency_key=idempotencyKey
            )
        )

    # -- models and self-managed inference ---------------------------------------------------------------
    def model_download(
        self,
        clusterTag: ClusterTagParam,
        download: schemas.ModelDownloadParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Download a Hugging Face model into the cluster's storage (POST /clusters/{clusterTag}/models) as a
        Kubernetes Job. Returns the model's path for pods (modelPath) and its DOWNLOAD_MODEL operation: poll it with
        operation_get (result.downloadedBytes/downloadedFiles show progress) until SUCCEEDED. A 409 FeatureNotEnabled
        names fsx when the destination is fsx and the feature is off. Write tool: needs --allow-write.
        """
        self._require_write("model_download")
        return self._call(lambda client: client.download_model(clusterTag, download, idempotency_key=idempotencyKey))

    def model_list(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """The models in the cluster's bucket under models/ (read from S3): modelId, modelPath for
        inference_deployment_create, size in bytes, files. Read-only."""
        return self._call(lambda client: client.list_models(clusterTag))

    def inference_deployment_create(
        self,
        clusterTag: ClusterTagParam,
        deployment: schemas.InferenceDeploymentParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Deploy a stored model with vLLM or SGLang (POST /clusters/{clusterTag}/inference/deployments): a Deployment
        and a Service (ClusterIP unless asked). Read the instantstart-inference skill first. A 422 on instanceType
        lists the cluster's types (details[0].allowedValues). Returns the CREATE_INFERENCE_DEPLOYMENT operation; then
        follow readiness with inference_deployment_get. Write tool: needs --allow-write.
        """
        self._require_write("inference_deployment_create")
        return self._call(
            lambda client: client.create_inference_deployment(clusterTag, deployment, idempotency_key=idempotencyKey)
        )

    def inference_deployment_list(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """The cluster's self-managed inference deployments: engine, model, status, replicas ready/desired.
        Read-only."""
        return self._call(lambda client: client.list_inference_deployments(clusterTag))

    def inference_deployment_get(
        self, clusterTag: ClusterTagParam, name: schemas.InferenceDeploymentNameParam
    ) -> CallToolResult:
        """An inference deployment: status, replicas, pods (node, phase, ready, bound model), its Service URL and
        router. Read-only."""
        return self._call(lambda client: client.get_inference_deployment(clusterTag, name))

    def inference_deployment_scale(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.InferenceDeploymentNameParam,
        replicas: schemas.InferenceReplicasParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Scale an inference deployment (PATCH .../inference/deployments/{name}); idle pods are removed before pods
        serving a bound model. Returns the UPDATE_INFERENCE_DEPLOYMENT operation. Write tool: needs --allow-write.
        """
        self._require_write("inference_deployment_scale")
        return self._call(
            lambda client: client.scale_inference_deployment(clusterTag, name, replicas, idempotency_key=idempotencyKey)
        )

    def inference_deployment_delete(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.InferenceDeploymentNameParam,
        confirmClusterTag: Annotated[
            str,
            Field(
                description="The cluster tag again, exactly as the user typed it to confirm deleting the deployment; "
                "the call is refused unless it equals clusterTag. Never fill it in without the user's confirmation."
            ),
        ],
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Delete an inference deployment, its Service and router (DELETE .../inference/deployments/{name});
        destructive: the model stops serving. Returns the DELETE_INFERENCE_DEPLOYMENT operation. Write tool: needs
        --allow-write.
        """
        self._require_write("inference_deployment_delete")
        if confirmClusterTag != clusterTag:
            raise ToolError(
                f"inference_deployment_delete was refused: confirmClusterTag {confirmClusterTag!r} does not equal "
                f"clusterTag {clusterTag!r}, so nothing was deleted. Ask the user to confirm deleting deployment "
                f"{name!r} by typing the cluster tag, then call again with confirmClusterTag set to what they typed."
            )
        return self._call(
            lambda client: client.delete_inference_deployment(clusterTag, name, idempotency_key=idempotencyKey)
        )

    def inference_endpoint_create(
        self,
        clusterTag: ClusterTagParam,
        endpoint: schemas.InferenceEndpointParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Deploy a model as a managed endpoint of the HyperPod inference operator (POST
        /clusters/{clusterTag}/inference/endpoints): an InferenceEndpointConfig (or JumpStartModel) and a SageMaker
        endpoint. Needs the inferenceOperator feature (409 FeatureNotEnabled names it). A 422 on instanceType lists
        the cluster's types; a field the cluster's served API version does not know is a 422 naming it. Returns the
        CREATE_INFERENCE_ENDPOINT operation (SUCCEEDED at DeploymentComplete). Write tool: needs --allow-write.
        """
        self._require_write("inference_endpoint_create")
        return self._call(
            lambda client: client.create_inference_endpoint(clusterTag, endpoint, idempotency_key=idempotencyKey)
        )

    def inference_endpoint_list(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """The cluster's managed inference endpoints: kind, state, replicas, SageMaker endpoint name. Read-only."""
        return self._call(lambda client: client.list_inference_endpoints(clusterTag))

    def inference_endpoint_get(
        self, clusterTag: ClusterTagParam, name: schemas.InferenceEndpointNameParam
    ) -> CallToolResult:
        """A managed endpoint: the operator's state, conditions and message, the SageMaker endpoint (ARNs, status),
        the worker pods and their Kubernetes events (why a deployment is stuck). Read-only."""
        return self._call(lambda client: client.get_inference_endpoint(clusterTag, name))

    def inference_endpoint_invoke(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.InferenceEndpointNameParam,
        body: schemas.InvokeBodyParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Call the model of a managed endpoint (SageMaker InvokeEndpoint, JSON: at most 1 MiB sent, the answer cut
        at 256 KiB). Every call without a repeated idempotencyKey reaches the model and is billed. Write tool: needs
        --allow-write."""
        self._require_write("inference_endpoint_invoke")
        return self._call(
            lambda client: client.invoke_inference_endpoint(clusterTag, name, body, idempotency_key=idempotencyKey)
        )

    def inference_endpoint_delete(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.InferenceEndpointNameParam,
        confirmClusterTag: Annotated[
            str,
            Field(
                description="The cluster tag again, exactly as the user typed it to confirm deleting the endpoint; "
                "the call is refused unless it equals clusterTag. Never fill it in without the user's confirmation."
            ),
        ],
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Delete a managed endpoint (DELETE .../inference/endpoints/{name}); the operator removes the SageMaker
        endpoint, config and model. Returns the DELETE_INFERENCE_ENDPOINT operation. Write tool: needs --allow-write.
        """
        self._require_write("inference_endpoint_delete")
        if confirmClusterTag != clusterTag:
            raise ToolError(
                f"inference_endpoint_delete was refused: confirmClusterTag {confirmClusterTag!r} does not equal "
                f"clusterTag {clusterTag!r}, so nothing was deleted. Ask the user to confirm deleting endpoint "
                f"{name!r} by typing the cluster tag, then call again with confirmClusterTag set to what they typed."
            )
        return self._call(
            lambda client: client.delete_inference_endpoint(clusterTag, name, idempotency_key=idempotencyKey)
        )

    def inference_deployment_router(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.InferenceDeploymentNameParam,
        router: schemas.InferenceRouterParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Put the SGLang cache-aware router in front of an SGLang deployment (POST .../deployments/{name}/router),
        optionally with a KEDA ScaledObject on the workers. 409 RouterNeedsSGLang for vLLM, 409 KedaNotInstalled when
        KEDA is missing. Returns the CREATE_INFERENCE_ROUTER operation. Write tool: needs --allow-write.
        """
        self._require_write("inference_deployment_router")
        return self._call(
            lambda client: client.create_inference_router(clusterTag, name, router, idempotency_key=idempotencyKey)
        )

    def inference_deployment_invoke(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.InferenceDeploymentNameParam,
        body: schemas.InvokeBodyParam,
        route: schemas.InvokeRouteParam = "v1/completions",
        via: schemas.InvokeViaParam = None,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Call the model of a self-managed vLLM/SGLang deployment: its OpenAI-compatible route (v1/completions by
        default, v1/chat/completions with messages) through the Kubernetes service proxy, via its SGLang router when
        it has one. body.model defaults to the served model name; at most 1 MiB sent, the answer cut at 256 KiB.
        409 InferenceDeploymentNotReady while no replica is ready (check inference_deployment_get), 502 ModelError
        with the engine's own error. Every call without a repeated idempotencyKey reaches the engine. Write tool:
        needs --allow-write."""
        self._require_write("inference_deployment_invoke")
        return self._call(
            lambda client: client.invoke_inference_deployment(
                clusterTag, name, body, route=route, via=via, idempotency_key=idempotencyKey
            )
        )

    def cluster_update_features(
        self,
        clusterTag: ClusterTagParam,
        features: schemas.FeaturesParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Turn managed features on or off (PATCH /clusters/{clusterTag}/features). Only the features given act.

        Which features, and on or off, are the user's decisions: read the instantstart-managed-features skill for
        what each costs and needs, and confirm before turning one off (off removes the add-on and the roles it
        created; shared add-ons stay while anything else needs them). When AWS already matches, the answer lists
        every feature "unchanged" and nothing was started. Otherwise it is an UPDATE_FEATURES operation: poll it
        with operation_get and wait_seconds to a terminal state; its features map says changed, unchanged or
        failed (AWS error verbatim) per feature. Write tool: needs --allow-write.
        """
        self._require_write("cluster_update_features")
        return self._call(lambda client: client.update_features(clusterTag, features, idempotency_key=idempotencyKey))

    # -- nodes and HyperPod operations (day 2) ----------------------------------------------------------

    def node_list(
        self,
        clusterTag: ClusterTagParam,
        maxResults: NodesMaxResultsParam = schemas.NODES_DEFAULT_PAGE_SIZE,
        nextToken: NodesNextTokenParam = None,
        instanceGroupName: EventsInstanceGroupParam = None,
    ) -> CallToolResult:
        """List a cluster's nodes (GET /clusters/{clusterTag}/nodes): instance id, group, type, SageMaker's instance
        status and message, launch time, Kubernetes node name and the node-health-status label as last observed
        (Schedulable, Unschedulable, UnschedulablePendingReboot, UnschedulablePendingReplacement; null = never seen).

        Use it to find the instance ids for node_reboot, node_replace and node_delete, and to follow them. One page
        per call: when nextToken is not null, call again with it (and the same instanceGroupName). Read-only.
        """
        return self._call(
            lambda client: client.list_cluster_nodes(
                clusterTag, max_results=maxResults, next_token=nextToken, instance_group_name=instanceGroupName
            )
        )

    def node_reboot(
        self, clusterTag: ClusterTagParam, nodeIds: NodeIdsParam, idempotencyKey: IdempotencyKeyParam = None
    ) -> CallToolResult:
        """Reboot nodes of a cluster (POST /clusters/{clusterTag}/nodes/reboot, BatchRebootClusterNodes).

        For a node that is hung or unresponsive but whose hardware is believed fine: same instance id, the node is
        NotReady/UnschedulablePendingReboot for a few minutes, then Schedulable. Running jobs on it are
        interrupted: tell the user first. Returns the REBOOT_CLUSTER_NODES operation: poll it with operation_get and
        wait_seconds until SUCCEEDED (every node back Running, Ready and Schedulable), FAILED or CANCELLED; its
        result.failed lists nodes HyperPod refused (code and message verbatim). One operation per cluster at a time
        (409 names the running one). Write tool: needs --allow-write.
        """
        self._require_write("node_reboot")
        return self._call(
            lambda client: client.reboot_cluster_nodes(clusterTag, list(nodeIds), idempotency_key=idempotencyKey)
        )

    def node_replace(
        self, clusterTag: ClusterTagParam, nodeIds: NodeIdsParam, idempotencyKey: IdempotencyKeyParam = None
    ) -> CallToolResult:
        """Replace nodes of a cluster with new instances (POST /clusters/{clusterTag}/nodes/replace).

        For faulty hardware (failed deep health check, GPU/ECC errors, a reboot that did not help): the instance
        is terminated (its local data is lost) and a new instance with a new id joins the same group. Confirm with
        the user first. Returns the REPLACE_CLUSTER_NODES operation: poll it with operation_get and wait_seconds
        until SUCCEEDED (old ids gone, the group back at its target), FAILED or CANCELLED; result.failed lists
        refused nodes. One operation per cluster at a time. Write tool: needs --allow-write.
        """
        self._require_write("node_replace")
        return self._call(
            lambda client: client.replace_cluster_nodes(clusterTag, list(nodeIds), idempotency_key=idempotencyKey)
        )

    def node_delete(
        self,
        clusterTag: ClusterTagParam,
        nodeIds: DeleteNodeIdsParam,
        confirmClusterTag: Annotated[
            str,
            Field(
                description="The cluster tag again (required, no default), exactly as the user typed it to confirm "
                "deleting these nodes; the call is refused unless it equals clusterTag."
            ),
        ],
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Delete nodes of a cluster (POST /clusters/{clusterTag}/nodes/delete, BatchDeleteClusterNodes).

        Destructive: the instances are terminated and their group's count is lowered, so no replacement comes.
        Show the user the nodes (node_list) and ask them to confirm by typing the cluster tag; pass it as
        confirmClusterTag. Returns the DELETE_CLUSTER_NODES operation: poll it with operation_get and wait_seconds
        until SUCCEEDED (the nodes gone, the group's target lowered), FAILED or CANCELLED. Write tool: needs
        --allow-write.
        """
        self._require_write("node_delete")
        if confirmClusterTag != clusterTag:
            raise ToolError(
                f"node_delete was refused: confirmClusterTag {confirmClusterTag!r} does not equal clusterTag "
                f"{clusterTag!r}, so no node was deleted. Ask the user to confirm deleting nodes {list(nodeIds)} of "
                f"cluster {clusterTag!r} by typing its tag, then call node_delete again with confirmClusterTag set "
                "to exactly what they typed."
            )
        return self._call(
            lambda client: client.delete_cluster_nodes(clusterTag, list(nodeIds), idempotency_key=idempotencyKey)
        )

    def cluster_update_software(
        self,
        clusterTag: ClusterTagParam,
        instanceGroupNames: InstanceGroupNamesParam = None,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Update the AMI of a cluster's nodes to the latest HyperPod release (POST /clusters/{clusterTag}/
        software-update, UpdateClusterSoftware). The cluster must be READY or DEGRADED.

        Nodes are patched and restarted: running jobs are interrupted, so confirm with the user first. Returns the
        UPDATE_CLUSTER_SOFTWARE operation: poll it with operation_get and wait_seconds until SUCCEEDED (HyperPod
        InService again with the update Succeeded), FAILED (HyperPod's words) or CANCELLED. One operation per
        cluster at a time (409 names the running one). Write tool: needs --allow-write.
        """
        self._require_write("cluster_update_software")
        body: dict[str, Any] = {"instanceGroupNames": list(instanceGroupNames)} if instanceGroupNames else {}
        return self._call(
            lambda client: client.update_cluster_software(clusterTag, body, idempotency_key=idempotencyKey)
        )

    def cluster_start_health_check(
        self,
        clusterTag: ClusterTagParam,
        instanceGroups: HealthCheckGroupsParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Run deep health checks on instance groups (POST /clusters/{clusterTag}/health-checks,
        StartClusterHealthCheck): a DeepHealthCheck HyperPod operation.

        Checked nodes are unschedulable while the checks run (minutes to hours); a node that fails is replaced.
        Confirm with the user first. Returns the START_CLUSTER_HEALTH_CHECK operation: poll it with operation_get
        and wait_seconds until SUCCEEDED (every node passed), FAILED (a node failed: the error is HyperPod's failure
        message, result.failed lists the nodes) or CANCELLED; result.hyperPodOperationId is HyperPod's
        DeepHealthCheck operation (hyperpod_operation_get shows its events). Write tool: needs --allow-write.
        """
        self._require_write("cluster_start_health_check")
        groups = [group.to_api() for group in instanceGroups]
        return self._call(
            lambda client: client.start_cluster_health_check(clusterTag, groups, idempotency_key=idempotencyKey)
        )

    def hyperpod_operation_list(
        self,
        clusterTag: ClusterTagParam,
        maxResults: OperationsMaxResultsParam = schemas.OPERATIONS_DEFAULT_PAGE_SIZE,
        nextToken: NodesNextTokenParam = None,
        status: HyperPodOperationStatusParam = None,
        type: HyperPodOperationTypeParam = None,
    ) -> CallToolResult:
        """List SageMaker HyperPod's own operations on a cluster, newest first (GET /clusters/{clusterTag}/
        hyperpod-operations): Scaling and DeepHealthCheck operations with status and creation time. Not the
        control plane's operations (cluster_list_operations). Read-only.
        """
        return self._call(
            lambda client: client.list_hyperpod_operations(
                clusterTag, max_results=maxResults, next_token=nextToken, status=status, type=type
            )
        )

    def hyperpod_operation_get(
        self, clusterTag: ClusterTagParam, operationId: HyperPodOperationIdParam
    ) -> CallToolResult:
        """Get one HyperPod operation (GET /clusters/{clusterTag}/hyperpod-operations/{operationId}): type, status,
        scaling or deep-health-check details and its newest HyperPod events (SageMaker's descriptions verbatim).
        Read-only.
        """
        return self._call(lambda client: client.get_hyperpod_operation(clusterTag, operationId))

    # -- catalog --------------------------------------------------------------------------------------

    def catalog_list_availability_zones(self) -> CallToolResult:
        """List the Availability Zones of the API's Region (GET /catalog/availability-zones): zone names and
        ids, and the Region.

        Call before asking the user for a zone, and offer only these. Read-only.
        """
        return self._call(
            lambda client: {"availabilityZones": client.list_availability_zones(), "region": client.region}
        )

    def catalog_list_instance_types(self, availabilityZone: AvailabilityZoneParam) -> CallToolResult:
        """List the HyperPod instance types offered in an Availability Zone (GET /catalog/instance-types).

        Call after the user chose a zone and before asking for an instance type; offer only these.
        Read-only.
        """
        return self._call(
            lambda client: {
                "availabilityZone": availabilityZone,
                "instanceTypes": client.list_instance_types(availabilityZone),
            }
        )

    def catalog_list_training_plans(self) -> CallToolResult:
        """List the account's SageMaker training plans (GET /catalog/training-plans): status, zone, instance
        type and count, start and end.

        Call before offering capacityType TrainingPlan: offer only Active or Scheduled plans of the chosen
        instance type with enough available instances; the cluster is created in the plan's zone. Read-only.
        """
        return self._call(lambda client: {"trainingPlans": client.list_training_plans()})

    def catalog_search_training_plan_offerings(
        self,
        instanceType: schemas.OfferingInstanceTypeParam,
        instanceCount: schemas.OfferingInstanceCountParam,
        durationHours: schemas.OfferingDurationHoursParam = None,
        startAfter: schemas.OfferingStartAfterParam = None,
    ) -> CallToolResult:
        """Search purchasable training plan offerings for HyperPod clusters
        (GET /catalog/training-plan-offerings): zone, start, end, duration and upfront fee.

        Read-only: buying a plan is a purchase the user makes in SageMaker, never through this server.
        """
        return self._call(
            lambda client: {
                "trainingPlanOfferings": client.search_training_plan_offerings(
                    instance_type=instanceType,
                    instance_count=instanceCount,
                    duration_hours=durationHours,
                    start_after=startAfter,
                )
            }
        )

    # -- waiting --------------------------------------------------------------------------------------

    async def wait_seconds(self, seconds: WaitSecondsParam, ctx: Context) -> CallToolResult:
        """Wait between status polls, reporting progress; then check the operation again.

        One call waits at most 50 s, so it ends before the usual 60 s MCP tool-call timeout: use 30-50
        between status polls of a long-running operation (wait_seconds, then operation_get or
        cluster_get_stages, and repeat until a terminal state). A larger request (it accepts 1-300) returns
        early with waitedSeconds and remainingSeconds: call it again for the rest. Outside the accepted
        range the call is a tool error. Read-only.
        """
        if not schemas.WAIT_MIN_SECONDS <= seconds <= schemas.WAIT_MAX_SECONDS:
            raise ToolError(
                f"seconds must be between {schemas.WAIT_MIN_SECONDS} and {schemas.WAIT_MAX_SECONDS} inclusive, "
                f"got {seconds}; one call waits at most {schemas.WAIT_PER_CALL_MAX_SECONDS} s, so use "
                f"{schemas.WAIT_RECOMMENDED} and check the status between calls."
            )
        target = min(seconds, schemas.WAIT_PER_CALL_MAX_SECONDS)
        waited = 0.0
        while waited < target:
            step = min(self._progress_interval, target - waited)
            await self._sleep(step)
            waited += step
            await ctx.report_progress(waited, target, f"waited {waited:g} of {target} s")
        remaining = seconds - target
        if remaining:
            message = (
                f"Waited {target} of {seconds} s and returned early: one call waits at most "
                f"{schemas.WAIT_PER_CALL_MAX_SECONDS} s so it ends before MCP clients time the call out. Check the "
                f"status now, or call wait_seconds again with seconds={remaining} to wait the rest."
            )
        else:
            message = f"Waited {target} s; check the status now (operation_get or cluster_get_stages)."
        return ok(
            {"waitedSeconds": target, "requestedSeconds": seconds, "remainingSeconds": remaining, "message": message}
        )

    # -- task governance ------------------------------------------------------------------------------

    def scheduler_config_get(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """Get the cluster's task governance scheduler config (GET /clusters/{clusterTag}/scheduler-config):
        priority classes, fair share, version and SageMaker's status (Creating, Created, Updating, Updated, *Failed
        with failureReason). 404 SchedulerConfigNotFound when there is none. Read-only.
        """
        return self._call(lambda client: client.get_scheduler_config(clusterTag))

    def scheduler_config_put(
        self,
        clusterTag: ClusterTagParam,
        schedulerConfig: SchedulerConfigParam,
        targetVersion: GovernanceTargetVersionParam = None,
    ) -> CallToolResult:
        """Create or replace the cluster's scheduler config (PUT /clusters/{clusterTag}/scheduler-config).

        Needs the taskGovernance feature (409 FeatureNotEnabled names it and PATCH /clusters/{clusterTag}/features).
        Show the user the current policy first (scheduler_config_get) and pass its clusterSchedulerConfigVersion as
        targetVersion: a 409 ConflictException means someone changed it meanwhile. The answer is Creating/Updating:
        poll scheduler_config_get with wait_seconds until Created/Updated (report a *Failed failureReason
        verbatim). Write tool: needs --allow-write.
        """
        self._require_write("scheduler_config_put")
        body: dict[str, Any] = {"schedulerConfig": schedulerConfig}
        if targetVersion is not None:
            body["targetVersion"] = targetVersion
        return self._call(lambda client: client.put_scheduler_config(clusterTag, _without_nulls(body)))

    def compute_quota_list(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """List the cluster's compute quotas (GET /clusters/{clusterTag}/compute-quotas): per team its resources,
        sharing strategy, fair-share weight, version and status. Read-only.
        """
        return self._call(lambda client: client.list_compute_quotas(clusterTag))

    def compute_quota_create(
        self,
        clusterTag: ClusterTagParam,
        computeQuotaConfig: ComputeQuotaConfigParam,
        computeQuotaTarget: ComputeQuotaTargetParam,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Create a team's compute quota (POST /clusters/{clusterTag}/compute-quotas), named <clusterTag>-<teamName>.

        Needs the taskGovernance feature. The team and its guaranteed instances are the user's decisions. One quota
        per team (409). The answer is Creating: poll compute_quota_list until Created. Write tool: needs
        --allow-write.
        """
        self._require_write("compute_quota_create")
        body = {"computeQuotaConfig": computeQuotaConfig, "computeQuotaTarget": computeQuotaTarget}
        return self._call(
            lambda client: client.create_compute_quota(clusterTag, _without_nulls(body), idempotency_key=idempotencyKey)
        )

    def compute_quota_update(
        self,
        clusterTag: ClusterTagParam,
        computeQuotaName: ComputeQuotaNameParam,
        computeQuotaConfig: ComputeQuotaConfigChangeParam = None,
        computeQuotaTarget: ComputeQuotaTargetChangeParam = None,
        activationState: ActivationStateParam = None,
        targetVersion: GovernanceTargetVersionParam = None,
    ) -> CallToolResult:
        """Change a team's compute quota (PATCH /clusters/{clusterTag}/compute-quotas/{computeQuotaName}): only the
        members given. Pass the computeQuotaVersion you showed the user as targetVersion (409 when it changed). The
        team cannot change. The answer is Updating: poll compute_quota_list until Updated. Write tool: needs
        --allow-write.
        """
        self._require_write("compute_quota_update")
        body: dict[str, Any] = {}
        if computeQuotaConfig is not None:
            body["computeQuotaConfig"] = computeQuotaConfig
        if computeQuotaTarget is not None:
            body["computeQuotaTarget"] = computeQuotaTarget
        if activationState is not None:
            body["activationState"] = activationState
        if targetVersion is not None:
            body["targetVersion"] = targetVersion
        return self._call(
            lambda client: client.update_compute_quota(clusterTag, computeQuotaName, _without_nulls(body))
        )

    def compute_quota_delete(
        self,
        clusterTag: ClusterTagParam,
        computeQuotaName: ComputeQuotaNameParam,
        confirmClusterTag: Annotated[
            str,
            Field(
                description="The cluster tag again (required, no default), exactly as the user typed it to confirm "
                "deleting the quota; the call is refused unless it equals clusterTag. Never fill it in without the "
                "user's explicit confirmation."
            ),
        ],
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Delete a team's compute quota (DELETE /clusters/{clusterTag}/compute-quotas/{computeQuotaName}); its
        team queues go with it and the team's tasks lose their guarantee.

        Destructive: show the user the quota (compute_quota_list) and ask them to confirm by typing the cluster tag;
        pass it as confirmClusterTag. Poll compute_quota_list until it is gone. Write tool: needs --allow-write.
        """
        self._require_write("compute_quota_delete")
        if confirmClusterTag != clusterTag:
            raise ToolError(
                f"compute_quota_delete was refused: confirmClusterTag {confirmClusterTag!r} does not equal clusterTag "
                f"{clusterTag!r}, so nothing was deleted. Ask the user to confirm deleting compute quota "
                f"{computeQuotaName!r} of {clusterTag!r} by typing the cluster tag, then call compute_quota_delete "
                "again with confirmClusterTag set to exactly what they typed."
            )
        return self._call(
            lambda client: client.delete_compute_quota(clusterTag, computeQuotaName, idempotency_key=idempotencyKey)
        )

    # -- managed MLflow ---------------------------------------------------------------------------------

    def mlflow_get(self, clusterTag: ClusterTagParam) -> CallToolResult:
        """Get a cluster's SageMaker managed MLflow connection (GET /clusters/{clusterTag}/mlflow): the tracking
        server or app ARN, whether the control plane created it, its status read from SageMaker now, its URL and
        artifact store, and how training pods log to it (namespace, service account instantstart-mlflow, IAM role,
        and the environment they get: MLFLOW_TRACKING_URI = the ARN, for the sagemaker-mlflow plugin). Read-only.
        """
        return self._call(lambda client: client.get_mlflow(clusterTag))

    def mlflow_list_job_runs(
        self,
        clusterTag: ClusterTagParam,
        name: schemas.TrainingJobNameParam,
        namespace: schemas.JobNamespaceParam = "default",
    ) -> CallToolResult:
        """List a training job's MLflow runs (GET /clusters/{clusterTag}/training-jobs/{name}/runs): the runs of
        experiment clusterTag tagged instantstart.job=name, newest first, with status, params and the latest value of
        each metric. 404 TrainingJobNotFound when no job of that name is in the namespace; 409 MlflowNotConnected when
        the cluster has no MLflow (see mlflow_get). Read-only.
        """
        return self._call(lambda client: client.list_training_job_runs(clusterTag, name, namespace=namespace))

    def mlflow_connect(
        self,
        clusterTag: ClusterTagParam,
        trackingServerArn: schemas.MlflowTrackingServerArnParam = None,
        mlflowAppArn: schemas.MlflowAppArnParam = None,
        create: schemas.MlflowCreateParam = None,
        namespace: schemas.MlflowNamespaceParam = None,
        idempotencyKey: IdempotencyKeyParam = None,
    ) -> CallToolResult:
        """Connect an existing tracking server or MLflow app, or create one for the cluster
        (PUT /clusters/{clusterTag}/mlflow). Give exactly one of trackingServerArn, mlflowAppArn or create.

        Read the instantstart-mlflow skill first. Creating costs money while it exists (ask the user; size Small
        unless they say otherwise); connecting an existing one does not create a server. Either way training pods
        of the namespace get an IAM role through EKS Pod Identity to log to it. Returns the UPDATE_MLFLOW
        operation: poll it with operation_get and wait_seconds until SUCCEEDED, FAILED or CANCELLED (creating takes
        about 20 minutes). When already so, the answer is the connection itself. Refusals name the field (an ARN of
        another Region or account, a missing or failed server, another connection). Write tool: needs
        --allow-write.
        """
        self._require_write("mlflow_connect")
        body: dict[str, Any] = {
            k: v
            for k, v in (
                ("trackingServerArn", trackingServerArn),
                ("mlflowAppArn", mlflowAppArn),
                ("create", create),
                ("namespace", namespace),
            )
            if v is not None
        }
        return self._call(lambda client: client.update_mlflow(clusterTag, body, idempotency_key=idempotencyKey))

    def mlflow_disconnect(
        self, clusterTag: ClusterTagParam, idempotencyKey: IdempotencyKeyParam = None
    ) -> CallToolResult:
        """Disconnect the cluster's MLflow (DELETE /clusters/{clusterTag}/mlflow): removes the pod identity, and the
        tracking server or app only when the control plane created it (a connected existing one is never deleted;
        its runs stay in it). A created server's runs are lost with it: confirm with the user first. Returns the
        UPDATE_MLFLOW operation, or the view when not connected. Write tool: needs --allow-write.
        """
        self._require_write("mlflow_disconnect")
        return self._call(lambda client: client.delete_mlflow(clusterTag, idempotency_key=idempotencyKey))

    # -- publishing -----------------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """The SDK ``Tool`` of every spec in :data:`TOOL_SPECS`, with its published output schema."""
        published: list[Tool] = []
        for spec in TOOL_SPECS:
            fn = getattr(self, spec.name)
            tool = Tool.from_function(
                fn,
                name=spec.name,
                title=spec.title,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=spec.annotations,
            )
            # The result is the API's JSON, returned as a CallToolResult: the schema is published for
            # clients (which validate it) and not re-validated here.
            tool.fn_metadata.output_schema = spec.output_schema
            published.append(tool)
        return published
