"""The MCP proxy's tool parameters advertise exactly the constraints the HTTP API publishes.

The proxy is a separate deployable: its input schemas are checked here against ``api_schema/openapi.json``.
Every parameter of every tool maps to the API field or parameter it is sent as, and its pattern, length,
range, item limits, enum and default equal the API's.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_proxy.server import build_server

COMPARED = ("pattern", "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems", "enum", "default")

POST_CLUSTERS = ("POST", "/clusters")
POST_IMPORT = ("POST", "/clusters/import")
CLUSTER = "/clusters/{clusterTag}"
OFFERINGS = "/catalog/training-plan-offerings"
RETRY = "/clusters/{clusterTag}/stages/{stage}/retry"
EVENTS = "/clusters/{clusterTag}/events"
OPERATIONS = "/clusters/{clusterTag}/operations"
GROUPS = "/clusters/{clusterTag}/instance-groups"
GROUP = "/clusters/{clusterTag}/instance-groups/{instanceGroupName}"
NODES = "/clusters/{clusterTag}/nodes"
SOFTWARE_UPDATE = "/clusters/{clusterTag}/software-update"
HEALTH_CHECKS = "/clusters/{clusterTag}/health-checks"
HP_OPERATIONS = "/clusters/{clusterTag}/hyperpod-operations"
HP_OPERATION = "/clusters/{clusterTag}/hyperpod-operations/{hyperPodOperationId}"
AUTOSCALING = "/clusters/{clusterTag}/autoscaling"
FEATURES = "/clusters/{clusterTag}/features"
POLICY = "/clusters/{clusterTag}/scheduler-config"
QUOTAS = "/clusters/{clusterTag}/compute-quotas"
QUOTA = "/clusters/{clusterTag}/compute-quotas/{computeQuotaName}"
JOBS = "/clusters/{clusterTag}/training-jobs"
JOB = "/clusters/{clusterTag}/training-jobs/{name}"
JOB_LOGS = "/clusters/{clusterTag}/training-jobs/{name}/logs"
MLFLOW = "/clusters/{clusterTag}/mlflow"
JOB_RUNS = "/clusters/{clusterTag}/training-jobs/{name}/runs"
MODELS = "/clusters/{clusterTag}/models"
DEPLOYMENTS = "/clusters/{clusterTag}/inference/deployments"
DEPLOYMENT = "/clusters/{clusterTag}/inference/deployments/{name}"
ROUTER = "/clusters/{clusterTag}/inference/deployments/{name}/router"
ENDPOINTS = "/clusters/{clusterTag}/inference/endpoints"
ENDPOINT = "/clusters/{clusterTag}/inference/endpoints/{name}"
INVOKE = "/clusters/{clusterTag}/inference/endpoints/{name}/invoke"
DEPLOYMENT_INVOKE = "/clusters/{clusterTag}/inference/deployments/{name}/invoke"

API_FIELD_OF: dict[tuple[str, str], tuple[str, str, str, str]] = {
    ("mlflow_get", "clusterTag"): ("GET", MLFLOW, "path", "clusterTag"),
    ("mlflow_list_job_runs", "clusterTag"): ("GET", JOB_RUNS, "path", "clusterTag"),
    ("mlflow_list_job_runs", "name"): ("GET", JOB_RUNS, "path", "name"),
    ("mlflow_list_job_runs", "namespace"): ("GET", JOB_RUNS, "query", "namespace"),
    ("mlflow_connect", "clusterTag"): ("PUT", MLFLOW, "path", "clusterTag"),
    ("mlflow_connect", "trackingServerArn"): ("PUT", MLFLOW, "body", "trackingServerArn"),
    ("mlflow_connect", "mlflowAppArn"): ("PUT", MLFLOW, "body", "mlflowAppArn"),
    ("mlflow_connect", "namespace"): ("PUT", MLFLOW, "body", "namespace"),
    ("mlflow_connect", "idempotencyKey"): ("PUT", MLFLOW, "header", "Idempotency-Key"),
    ("mlflow_disconnect", "clusterTag"): ("DELETE", MLFLOW, "path", "clusterTag"),
    ("mlflow_disconnect", "idempotencyKey"): ("DELETE", MLFLOW, "header", "Idempotency-Key"),
    ("autoscaling_get", "clusterTag"): ("GET", AUTOSCALING, "path", "clusterTag"),
    ("autoscaling_update", "clusterTag"): ("PUT", AUTOSCALING, "path", "clusterTag"),
    ("autoscaling_update", "enabled"): ("PUT", AUTOSCALING, "body", "enabled"),
    ("autoscaling_update", "instanceGroups"): ("PUT", AUTOSCALING, "body", "instanceGroups"),
    ("autoscaling_update", "limits"): ("PUT", AUTOSCALING, "body", "limits"),
    ("autoscaling_update", "consolidateAfter"): ("PUT", AUTOSCALING, "body", "consolidateAfter"),
    ("autoscaling_update", "idempotencyKey"): ("PUT", AUTOSCALING, "header", "Idempotency-Key"),
    ("cluster_create", "clusterTag"): (*POST_CLUSTERS, "body", "clusterTag"),
    ("cluster_create", "availabilityZone"): (*POST_CLUSTERS, "body", "availabilityZone"),
    ("cluster_create", "instanceGroups"): (*POST_CLUSTERS, "body", "instanceGroups"),
    ("cluster_create", "kubernetesVersion"): (*POST_CLUSTERS, "body", "kubernetesVersion"),
    ("cluster_create", "idempotencyKey"): (*POST_CLUSTERS, "header", "Idempotency-Key"),
    ("cluster_import", "eksClusterName"): (*POST_IMPORT, "body", "eksClusterName"),
    ("cluster_import", "clusterTag"): (*POST_IMPORT, "body", "clusterTag"),
    ("cluster_import", "hyperPodClusterName"): (*POST_IMPORT, "body", "hyperPodClusterName"),
    ("cluster_import", "availabilityZone"): (*POST_IMPORT, "body", "availabilityZone"),
    ("cluster_import", "instanceGroups"): (*POST_IMPORT, "body", "instanceGroups"),
    ("cluster_import", "idempotencyKey"): (*POST_IMPORT, "header", "Idempotency-Key"),
    ("cluster_get_status", "clusterTag"): ("GET", CLUSTER, "path", "clusterTag"),
    ("cluster_get_stages", "clusterTag"): ("GET", f"{CLUSTER}/stages", "path", "clusterTag"),
    ("cluster_list_events", "clusterTag"): ("GET", EVENTS, "path", "clusterTag"),
    ("cluster_list_events", "maxResults"): ("GET", EVENTS, "query", "maxResults"),
    ("cluster_list_events", "nextToken"): ("GET", EVENTS, "query", "nextToken"),
    ("cluster_list_events", "level"): ("GET", EVENTS, "query", "level"),
    ("cluster_list_events", "instanceGroupName"): ("GET", EVENTS, "query", "instanceGroupName"),
    ("cluster_retry_stage", "clusterTag"): ("POST", RETRY, "path", "clusterTag"),
    ("cluster_retry_stage", "stage"): ("POST", RETRY, "path", "stage"),
    ("cluster_retry_stage", "idempotencyKey"): ("POST", RETRY, "header", "Idempotency-Key"),
    ("cluster_delete", "clusterTag"): ("DELETE", CLUSTER, "path", "clusterTag"),
    ("cluster_delete", "idempotencyKey"): ("DELETE", CLUSTER, "header", "Idempotency-Key"),
    ("operation_get", "operationId"): ("GET", "/operations/{operationId}", "path", "operationId"),
    ("operation_cancel", "operationId"): ("POST", "/operations/{operationId}/cancel", "path", "operationId"),
    ("cluster_list_operations", "clusterTag"): ("GET", OPERATIONS, "path", "clusterTag"),
    ("cluster_list_operations", "maxResults"): ("GET", OPERATIONS, "query", "maxResults"),
    ("cluster_list_operations", "nextToken"): ("GET", OPERATIONS, "query", "nextToken"),
    ("instance_group_list", "clusterTag"): ("GET", GROUPS, "path", "clusterTag"),
    ("instance_group_add", "clusterTag"): ("POST", GROUPS, "path", "clusterTag"),
    ("instance_group_add", "idempotencyKey"): ("POST", GROUPS, "header", "Idempotency-Key"),
    ("cluster_get_features", "clusterTag"): ("GET", FEATURES, "path", "clusterTag"),
    ("cluster_update_features", "clusterTag"): ("PATCH", FEATURES, "path", "clusterTag"),
    ("cluster_update_features", "idempotencyKey"): ("PATCH", FEATURES, "header", "Idempotency-Key"),
    ("instance_group_add", "instanceGroupName"): ("POST", GROUPS, "body", "instanceGroupName"),
    ("instance_group_add", "instanceType"): ("POST", GROUPS, "body", "instanceType"),
    ("instance_group_add", "instanceCount"): ("POST", GROUPS, "body", "instanceCount"),
    ("instance_group_add", "capacityType"): ("POST", GROUPS, "body", "capacityType"),
    ("instance_group_update", "clusterTag"): ("PATCH", GROUP, "path", "clusterTag"),
    ("instance_group_update", "instanceGroupName"): ("PATCH", GROUP, "path", "instanceGroupName"),
    ("instance_group_update", "instanceCount"): ("PATCH", GROUP, "body", "instanceCount"),
    ("instance_group_update", "labels"): ("PATCH", GROUP, "body", "labels"),
    ("instance_group_update", "idempotencyKey"): ("PATCH", GROUP, "header", "Idempotency-Key"),
    ("instance_group_delete", "clusterTag"): ("DELETE", GROUP, "path", "clusterTag"),
    ("instance_group_delete", "instanceGroupName"): ("DELETE", GROUP, "path", "instanceGroupName"),
    ("instance_group_delete", "idempotencyKey"): ("DELETE", GROUP, "header", "Idempotency-Key"),
    ("catalog_search_training_plan_offerings", "instanceType"): ("GET", OFFERINGS, "query", "instanceType"),
    ("catalog_search_training_plan_offerings", "instanceCount"): ("GET", OFFERINGS, "query", "instanceCount"),
    ("catalog_search_training_plan_offerings", "durationHours"): ("GET", OFFERINGS, "query", "durationHours"),
    ("catalog_search_training_plan_offerings", "startAfter"): ("GET", OFFERINGS, "query", "startAfter"),
    ("node_list", "clusterTag"): ("GET", NODES, "path", "clusterTag"),
    ("node_list", "maxResults"): ("GET", NODES, "query", "maxResults"),
    ("node_list", "nextToken"): ("GET", NODES, "query", "nextToken"),
    ("node_list", "instanceGroupName"): ("GET", NODES, "query", "instanceGroupName"),
    **{
        (f"node_{verb}", name): ("POST", f"{NODES}/{verb}", where, api_name)
        for verb in ("reboot", "replace", "delete")
        for name, where, api_name in (
            ("clusterTag", "path", "clusterTag"),
            ("nodeIds", "body", "nodeIds"),
            ("idempotencyKey", "header", "Idempotency-Key"),
        )
    },
    ("cluster_update_software", "clusterTag"): ("POST", SOFTWARE_UPDATE, "path", "clusterTag"),
    ("cluster_update_software", "instanceGroupNames"): ("POST", SOFTWARE_UPDATE, "body", "instanceGroupNames"),
    ("cluster_update_software", "idempotencyKey"): ("POST", SOFTWARE_UPDATE, "header", "Idempotency-Key"),
    ("cluster_start_health_check", "clusterTag"): ("POST", HEALTH_CHECKS, "path", "clusterTag"),
    ("cluster_start_health_check", "instanceGroups"): ("POST", HEALTH_CHECKS, "body", "instanceGroups"),
    ("cluster_start_health_check", "idempotencyKey"): ("POST", HEALTH_CHECKS, "header", "Idempotency-Key"),
    ("hyperpod_operation_list", "clusterTag"): ("GET", HP_OPERATIONS, "path", "clusterTag"),
    ("hyperpod_operation_list", "maxResults"): ("GET", HP_OPERATIONS, "query", "maxResults"),
    ("hyperpod_operation_list", "nextToken"): ("GET", HP_OPERATIONS, "query", "nextToken"),
    ("hyperpod_operation_list", "status"): ("GET", HP_OPERATIONS, "query", "status"),
    ("hyperpod_operation_list", "type"): ("GET", HP_OPERATIONS, "query", "type"),
    ("hyperpod_operation_get", "clusterTag"): ("GET", HP_OPERATION, "path", "clusterTag"),
    ("hyperpod_operation_get", "operationId"): ("GET", HP_OPERATION, "path", "hyperPodOperationId"),
    ("scheduler_config_get", "clusterTag"): ("GET", POLICY, "path", "clusterTag"),
    ("scheduler_config_put", "clusterTag"): ("PUT", POLICY, "path", "clusterTag"),
    ("scheduler_config_put", "schedulerConfig"): ("PUT", POLICY, "body", "schedulerConfig"),
    ("scheduler_config_put", "targetVersion"): ("PUT", POLICY, "body", "targetVersion"),
    ("compute_quota_list", "clusterTag"): ("GET", QUOTAS, "path", "clusterTag"),
    ("compute_quota_create", "clusterTag"): ("POST", QUOTAS, "path", "clusterTag"),
    ("compute_quota_create", "computeQuotaConfig"): ("POST", QUOTAS, "body", "computeQuotaConfig"),
    ("compute_quota_create", "computeQuotaTarget"): ("POST", QUOTAS, "body", "computeQuotaTarget"),
    ("compute_quota_create", "idempotencyKey"): ("POST", QUOTAS, "header", "Idempotency-Key"),
    ("compute_quota_update", "clusterTag"): ("PATCH", QUOTA, "path", "clusterTag"),
    ("compute_quota_update", "computeQuotaName"): ("PATCH", QUOTA, "path", "computeQuotaName"),
    ("compute_quota_update", "computeQuotaConfig"): ("PATCH", QUOTA, "body", "computeQuotaConfig"),
    ("compute_quota_update", "computeQuotaTarget"): ("PATCH", QUOTA, "body", "computeQuotaTarget"),
    ("compute_quota_update", "activationState"): ("PATCH", QUOTA, "body", "activationState"),
    ("compute_quota_update", "targetVersion"): ("PATCH", QUOTA, "body", "targetVersion"),
    ("compute_quota_delete", "clusterTag"): ("DELETE", QUOTA, "path", "clusterTag"),
    ("compute_quota_delete", "computeQuotaName"): ("DELETE", QUOTA, "path", "computeQuotaName"),
    ("compute_quota_delete", "idempotencyKey"): ("DELETE", QUOTA, "header", "Idempotency-Key"),
    ("training_job_create", "clusterTag"): ("POST", JOBS, "path", "clusterTag"),
    ("training_job_create", "idempotencyKey"): ("POST", JOBS, "header", "Idempotency-Key"),
    ("training_job_list", "clusterTag"): ("GET", JOBS, "path", "clusterTag"),
    ("training_job_list", "namespace"): ("GET", JOBS, "query", "namespace"),
    ("training_job_list", "maxResults"): ("GET", JOBS, "query", "maxResults"),
    ("training_job_list", "nextToken"): ("GET", JOBS, "query", "nextToken"),
    ("training_job_get", "clusterTag"): ("GET", JOB, "path", "clusterTag"),
    ("training_job_get", "name"): ("GET", JOB, "path", "name"),
    ("training_job_get", "namespace"): ("GET", JOB, "query", "namespace"),
    ("training_job_logs", "clusterTag"): ("GET", JOB_LOGS, "path", "clusterTag"),
    ("training_job_logs", "name"): ("GET", JOB_LOGS, "path", "name"),
    ("training_job_logs", "namespace"): ("GET", JOB_LOGS, "query", "namespace"),
    ("training_job_logs", "pod"): ("GET", JOB_LOGS, "query", "pod"),
    ("training_job_logs", "container"): ("GET", JOB_LOGS, "query", "container"),
    ("training_job_logs", "tailLines"): ("GET", JOB_LOGS, "query", "tailLines"),
    ("training_job_logs", "sinceSeconds"): ("GET", JOB_LOGS, "query", "sinceSeconds"),
    ("training_job_delete", "clusterTag"): ("DELETE", JOB, "path", "clusterTag"),
    ("training_job_delete", "name"): ("DELETE", JOB, "path", "name"),
    ("training_job_delete", "namespace"): ("DELETE", JOB, "query", "namespace"),
    ("training_job_delete", "idempotencyKey"): ("DELETE", JOB, "header", "Idempotency-Key"),
    ("model_download", "clusterTag"): ("POST", MODELS, "path", "clusterTag"),
    ("model_download", "idempotencyKey"): ("POST", MODELS, "header", "Idempotency-Key"),
    ("model_list", "clusterTag"): ("GET", MODELS, "path", "clusterTag"),
    ("inference_deployment_create", "clusterTag"): ("POST", DEPLOYMENTS, "path", "clusterTag"),
    ("inference_deployment_create", "idempotencyKey"): ("POST", DEPLOYMENTS, "header", "Idempotency-Key"),
    ("inference_deployment_list", "clusterTag"): ("GET", DEPLOYMENTS, "path", "clusterTag"),
    ("inference_deployment_get", "clusterTag"): ("GET", DEPLOYMENT, "path", "clusterTag"),
    ("inference_deployment_get", "name"): ("GET", DEPLOYMENT, "path", "name"),
    ("inference_deployment_scale", "clusterTag"): ("PATCH", DEPLOYMENT, "path", "clusterTag"),
    ("inference_deployment_scale", "name"): ("PATCH", DEPLOYMENT, "path", "name"),
    ("inference_deployment_scale", "replicas"): ("PATCH", DEPLOYMENT, "body", "replicas"),
    ("inference_deployment_scale", "idempotencyKey"): ("PATCH", DEPLOYMENT, "header", "Idempotency-Key"),
    ("inference_deployment_delete", "clusterTag"): ("DELETE", DEPLOYMENT, "path", "clusterTag"),
    ("inference_deployment_delete", "name"): ("DELETE", DEPLOYMENT, "path", "name"),
    ("inference_deployment_delete", "idempotencyKey"): ("DELETE", DEPLOYMENT, "header", "Idempotency-Key"),
    ("inference_deployment_router", "clusterTag"): ("POST", ROUTER, "path", "clusterTag"),
    ("inference_deployment_router", "name"): ("POST", ROUTER, "path", "name"),
    ("inference_deployment_router", "idempotencyKey"): ("POST", ROUTER, "header", "Idempotency-Key"),
    ("inference_endpoint_create", "clusterTag"): ("POST", ENDPOINTS, "path", "clusterTag"),
    ("inference_endpoint_create", "idempotencyKey"): ("POST", ENDPOINTS, "header", "Idempotency-Key"),
    ("inference_endpoint_list", "clusterTag"): ("GET", ENDPOINTS, "path", "clusterTag"),
    ("inference_endpoint_get", "clusterTag"): ("GET", ENDPOINT, "path", "clusterTag"),
    ("inference_endpoint_get", "name"): ("GET", ENDPOINT, "path", "name"),
    ("inference_endpoint_invoke", "clusterTag"): ("POST", INVOKE, "path", "clusterTag"),
    ("inference_endpoint_invoke", "name"): ("POST", INVOKE, "path", "name"),
    ("inference_endpoint_invoke", "body"): ("POST", INVOKE, "body", "body"),
    ("inference_endpoint_invoke", "idempotencyKey"): ("POST", INVOKE, "header", "Idempotency-Key"),
    ("inference_deployment_invoke", "clusterTag"): ("POST", DEPLOYMENT_INVOKE, "path", "clusterTag"),
    ("inference_deployment_invoke", "name"): ("POST", DEPLOYMENT_INVOKE, "path", "name"),
    ("inference_deployment_invoke", "body"): ("POST", DEPLOYMENT_INVOKE, "body", "body"),
    ("inference_deployment_invoke", "route"): ("POST", DEPLOYMENT_INVOKE, "body", "route"),
    ("inference_deployment_invoke", "via"): ("POST", DEPLOYMENT_INVOKE, "body", "via"),
    ("inference_deployment_invoke", "idempotencyKey"): ("POST", DEPLOYMENT_INVOKE, "header", "Idempotency-Key"),
    ("inference_endpoint_delete", "clusterTag"): ("DELETE", ENDPOINT, "path", "clusterTag"),
    ("inference_endpoint_delete", "name"): ("DELETE", ENDPOINT, "path", "name"),
    ("inference_endpoint_delete", "idempotencyKey"): ("DELETE", ENDPOINT, "header", "Idempotency-Key"),
    ("catalog_list_instance_types", "availabilityZone"): (
        "GET",
        "/catalog/instance-types",
        "query",
        "availabilityZone",
    ),
}
"""(tool, parameter) -> (method, path, where, name) of the API field it is sent as."""

MCP_ONLY = {
    ("cluster_delete", "confirmClusterTag"): "the user's typed confirmation, compared with clusterTag by the proxy",
    ("node_delete", "confirmClusterTag"): "the user's typed confirmation, compared with clusterTag by the proxy",
    ("wait_seconds", "seconds"): "a wait between polls inside the proxy; no API call",
    ("instance_group_delete", "confirmClusterTag"): "the user's typed confirmation, compared with clusterTag",
    ("cluster_update_features", "features"): "the whole PATCH body (its keys are the API's feature fields)",
    ("compute_quota_delete", "confirmClusterTag"): "the user's typed confirmation, compared with clusterTag",
    ("training_job_create", "job"): "the whole POST body, one shape per recipe (the API's oneOf, inlined)",
    ("training_job_delete", "confirmClusterTag"): "the user's typed confirmation, compared with clusterTag",
    ("mlflow_connect", "create"): "the PUT body's create object (kind, size, mlflowVersion), sent as given",
    ("model_download", "download"): "the whole POST body (its schema is the API's, inlined)",
    ("inference_deployment_create", "deployment"): "the whole POST body (its schema is the API's, inlined)",
    ("inference_deployment_router", "router"): "the whole POST body (its schema is the API's, inlined)",
    ("inference_deployment_delete", "confirmClusterTag"): "the user's typed confirmation, compared with clusterTag",
    ("inference_endpoint_create", "endpoint"): "the whole POST body (its schema is the API's, inlined)",
    ("inference_endpoint_delete", "confirmClusterTag"): "the user's typed confirmation, compared with clusterTag",
}


@pytest.fixture(scope="module")
def tool_inputs() -> dict[str, dict[str, Any]]:
    """The input schema of every tool, as an MCP client lists them."""

    async def listed() -> dict[str, dict[str, Any]]:
        async with Client(build_server(api_url="http://127.0.0.1:9", region="us-west-2", allow_write=True)) as client:
            return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    return anyio.run(listed)


def mcp_resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """An MCP parameter schema with its local ``$ref`` and non-null ``anyOf`` branch merged in."""
    out = dict(schema)
    branches = out.pop("anyOf", None)
    if isinstance(branches, list):
        concrete = [b for b in branches if b.get("type") != "null"]
        assert len(concrete) == 1
        out = {**mcp_resolve(concrete[0], root), **out}
    ref = out.pop("$ref", None)
    if isinstance(ref, str):
        out = {**mcp_resolve(root["$defs"][ref.rsplit("/", 1)[-1]], root), **out}
    return out


def api_field(openapi: Any, method: str, path: str, where: str, name: str) -> dict[str, Any]:
    if where == "body":
        schema = openapi.body(method, path)
        prop = openapi.resolve(schema["properties"][name])
        return {**prop, "default": schema["properties"][name].get("default")}
    return dict(openapi.parameter(method, path, where, name))


def constraints(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: schema.get(key) for key in COMPARED}


def test_given_the_tools_then_every_parameter_is_mapped_to_an_api_field_or_is_proxy_only(
    tool_inputs: dict[str, dict[str, Any]],
) -> None:
    params = {(tool, name) for tool, schema in tool_inputs.items() for name in schema.get("properties", {})}

    assert params == set(API_FIELD_OF) | set(MCP_ONLY)


@pytest.mark.parametrize(("tool", "param"), sorted(API_FIELD_OF), ids=lambda v: str(v))
def test_given_a_tool_parameter_then_its_constraints_equal_the_api_fields(
    openapi: Any, tool_inputs: dict[str, dict[str, Any]], tool: str, param: str
) -> None:
    root = tool_inputs[tool]
    mcp = mcp_resolve(root["properties"][param], root)
    api = api_field(openapi, *API_FIELD_OF[(tool, param)])

    assert constraints(mcp) == constraints(api)


def test_given_the_instance_group_item_then_each_field_advertises_the_api_constraints(
    openapi: Any, tool_inputs: dict[str, dict[str, Any]]
) -> None:
    root = tool_inputs["cluster_create"]
    item = mcp_resolve(mcp_resolve(root["properties"]["instanceGroups"], root)["items"], root)
    api_item = openapi.resolve(openapi.body(*POST_CLUSTERS)["properties"]["instanceGroups"]["items"])

    assert set(item["properties"]) == set(api_item["properties"])
    assert set(item.get("required", [])) == set(api_item.get("required", []))
    for name, schema in item["properties"].items():
        api = {**openapi.resolve(api_item["properties"][name]), "default": api_item["properties"][name].get("default")}
        assert constraints(mcp_resolve(schema, root)) == constraints(api), name
