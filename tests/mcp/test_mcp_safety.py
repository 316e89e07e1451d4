"""Given a READY cluster and an MCP proxy started without ``--allow-write``, when an agent calls every tool with
valid arguments, then no call reaches a write route of the API and the sandbox records no AWS write; and with writes
allowed, a destructive tool whose confirmation does not equal the cluster tag never acts.

Every tool the server lists must have arguments in :data:`ARGUMENTS`, so a new tool cannot skip this check.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.aws.calls import RESOURCE_SERVICES
from instantstart_sandbox.runner import Sandbox
from mcp_proxy.server import build_server
from mcp_proxy.tools import definitions, write_tools
from tests.integration.conftest import ready_cluster
from tests.mcp.conftest import GROUP, ScaledSleep, text_of

TAG = "mcpsafe"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311"
pytestmark = pytest.mark.anyio
WORKFLOW_SERVICES = (*RESOURCE_SERVICES, "stepfunctions")
"""Writes to these change a customer's resources or start a workflow that would."""


class RecordingClient(InstantStartClient):
    """The API client the proxy uses, recording each request's method and path before sending it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[str, str]] = []

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, object | None] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Record ``(method, path)``, then send as the client does."""
        self.sent.append((method, path))
        return super().request(method, path, params=params, body=body, headers=headers)


def arguments(tag: str, confirm: str, node_id: str, operation_id: str) -> dict[str, dict[str, Any]]:
    """Valid arguments of every tool for cluster ``tag`` (``confirm``: what destructive tools get as the
    confirmation)."""
    job = {
        "recipe": "pytorch",
        "name": "safety-job",
        "instanceType": GROUP["instanceType"],
        "nodes": 1,
        "image": IMAGE,
        "script": "/s3/code/train.py",
    }
    deployment = {
        "name": "safety-vllm",
        "engine": "vllm",
        "modelPath": "/s3/models/Qwen/Qwen2.5-0.5B-Instruct",
        "instanceType": GROUP["instanceType"],
        "gpus": 1,
    }
    endpoint = {
        "name": "safety-ep",
        "instanceType": GROUP["instanceType"],
        "modelSource": {"type": "s3", "modelLocation": "models/Qwen/Qwen2.5-0.5B-Instruct"},
        "worker": {"image": IMAGE, "resources": {"gpus": 1}},
    }
    quota = {"computeQuotaConfig": {"computeQuotaResources": [{"instanceType": GROUP["instanceType"], "count": 1}]}}
    t = {"clusterTag": tag}
    return {
        "cluster_list_all": {},
        "cluster_create": {"clusterTag": "mcpsafe2", "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]},
        "cluster_import": {"eksClusterName": "someone-elses-eks", "clusterTag": "mcpsafe3"},
        "cluster_get_status": t,
        "cluster_get_stages": t,
        "cluster_list_events": t,
        "cluster_list_operations": t,
        "cluster_retry_stage": {**t, "stage": "verify"},
        "cluster_reconcile": t,
        "cluster_delete": {**t, "confirmClusterTag": confirm},
        "operation_get": {"operationId": operation_id},
        "operation_cancel": {"operationId": operation_id},
        "instance_group_list": t,
        "instance_group_add": {**t, "instanceType": GROUP["instanceType"], "instanceCount": 1},
        "instance_group_update": {**t, "instanceGroupName": "accel", "instanceCount": 2},
        "instance_group_delete": {**t, "instanceGroupName": "accel", "confirmClusterTag": confirm},
        "catalog_list_availability_zones": {},
        "catalog_list_instance_types": {"availabilityZone": "us-west-2c"},
        "catalog_list_training_plans": {},
        "catalog_search_training_plan_offerings": {"instanceType": GROUP["instanceType"], "instanceCount": 1},
        "node_list": t,
        "node_reboot": {**t, "nodeIds": [node_id]},
        "node_replace": {**t, "nodeIds": [node_id]},
        "node_delete": {**t, "nodeIds": [node_id], "confirmClusterTag": confirm},
        "cluster_update_software": t,
        "cluster_start_health_check": {
            **t,
            "instanceGroups": [{"instanceGroupName": "accel", "deepHealthChecks": ["InstanceStress"]}],
        },
        "hyperpod_operation_list": t,
        "hyperpod_operation_get": {**t, "hyperPodOperationId": "0123456789ab"},
        "autoscaling_get": t,
        "autoscaling_update": {**t, "enabled": False},
        "cluster_get_features": t,
        "cluster_update_features": {**t, "features": {"observability": {"enabled": True}}},
        "wait_seconds": {"seconds": 1},
        "training_job_create": {**t, "job": job},
        "training_job_list": t,
        "training_job_get": {**t, "name": "safety-job"},
        "training_job_logs": {**t, "name": "safety-job"},
        "training_job_delete": {**t, "name": "safety-job", "confirmClusterTag": confirm},
        "scheduler_config_get": t,
        "scheduler_config_put": {**t, "schedulerConfig": {"fairShare": "Enabled"}},
        "compute_quota_list": t,
        "compute_quota_create": {**t, **quota, "computeQuotaTarget": {"teamName": "team-a", "fairShareWeight": 1}},
        "compute_quota_update": {**t, "computeQuotaName": "team-a", "activationState": "Disabled"},
        "compute_quota_delete": {**t, "computeQuotaName": "team-a", "confirmClusterTag": confirm},
        "mlflow_get": t,
        "mlflow_list_job_runs": {**t, "name": "safety-job"},
        "mlflow_connect": {**t, "create": {"kind": "app"}},
        "mlflow_disconnect": t,
        "model_download": {**t, "download": {"source": "huggingface", "modelId": "Qwen/Qwen2.5-0.5B-Instruct"}},
        "model_list": t,
        "inference_deployment_create": {**t, "deployment": deployment},
        "inference_deployment_list": t,
        "inference_deployment_get": {**t, "name": "safety-vllm"},
        "inference_deployment_scale": {**t, "name": "safety-vllm", "replicas": 2},
        "inference_deployment_delete": {**t, "name": "safety-vllm", "confirmClusterTag": confirm},
        "inference_deployment_router": {**t, "name": "safety-vllm", "router": {}},
        "inference_deployment_invoke": {**t, "name": "safety-vllm", "body": {"prompt": "hi"}},
        "inference_endpoint_create": {**t, "endpoint": endpoint},
        "inference_endpoint_list": t,
        "inference_endpoint_get": {**t, "name": "safety-ep"},
        "inference_endpoint_invoke": {**t, "name": "safety-ep", "body": {"prompt": "hi"}},
        "inference_endpoint_delete": {**t, "name": "safety-ep", "confirmClusterTag": confirm},
    }


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient) -> dict[str, Any]:
    """The ``mcpsafe`` cluster, READY, with one ml.g6.4xlarge node."""
    return ready_cluster(api, TAG, [GROUP])


@pytest.fixture
def proxy(sandbox: Sandbox, scaled_sleep: ScaledSleep) -> Any:
    """``async with proxy(allow_write=...) as (client, recorder)``: an MCP client of a fresh server whose API
    client records every request."""

    @asynccontextmanager
    async def connect(*, allow_write: bool) -> AsyncIterator[tuple[Client, RecordingClient]]:
        recorder = RecordingClient(sandbox.api_url, region=sandbox.region)
        async with Client(build_server(client=recorder, allow_write=allow_write, sleep=scaled_sleep)) as client:
            yield client, recorder

    return connect


async def test_without_allow_write_every_tool_with_valid_arguments_causes_no_write(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox, proxy: Any
) -> None:
    node_id = api.list_cluster_nodes(TAG)["nodes"][0]["instanceId"]
    operation_id = api.list_cluster_operations(TAG)["operations"][0]["operationId"]
    calls = sandbox.aws.extension.calls
    before = len(calls.writes(*WORKFLOW_SERVICES))

    async with proxy(allow_write=False) as (client, recorder):
        listed = {tool.name for tool in (await client.list_tools()).tools}
        table = arguments(TAG, TAG, node_id, operation_id)
        assert set(table) == listed, f"tools without arguments here: {sorted(listed - set(table))}"
        results = {name: await client.call_tool(name, args) for name, args in table.items()}

    refused = {name for name, result in results.items() if result.is_error and "read-only" in text_of(result)}
    assert refused == set(write_tools())
    # Besides GETs, only the read-only POSTs of the document (a model's invoke changes nothing in AWS).
    read_only_routes = {tuple(d.route.split(" ", 1)) for d in definitions() if d.read_only}
    posts = {(m, p) for m, p in recorder.sent if m != "GET"}
    allowed = {(m, t) for m, t in read_only_routes if m != "GET"}
    assert all(any(_matches(sent, route) for route in allowed) for sent in posts), posts
    assert len(recorder.sent) >= len(listed) - len(write_tools()) - 1, "the read tools reached the API"
    assert calls.writes(*WORKFLOW_SERVICES)[before:] == []
    assert api.get_cluster(TAG)["status"] == "READY"


def _matches(sent: tuple[str, str], route: tuple[str, str]) -> bool:
    """``sent`` (method, path) is a request of ``route`` (method, path template)."""
    method, path = sent
    template = route[1].split("/")
    return (
        method == route[0]
        and len(path.split("/")) == len(template)
        and all(t.startswith("{") or t == w for t, w in zip(template, path.split("/"), strict=True))
    )


async def test_a_destructive_tool_whose_confirmation_is_not_the_tag_never_acts(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox, proxy: Any
) -> None:
    node_id = api.list_cluster_nodes(TAG)["nodes"][0]["instanceId"]
    operation_id = api.list_cluster_operations(TAG)["operations"][0]["operationId"]
    table = arguments(TAG, TAG.upper(), node_id, operation_id)
    destructive = {name: args for name, args in table.items() if "confirmClusterTag" in args}
    calls = sandbox.aws.extension.calls
    before = len(calls.writes(*WORKFLOW_SERVICES))

    async with proxy(allow_write=True) as (client, recorder):
        results = {name: await client.call_tool(name, args) for name, args in destructive.items()}

    assert set(destructive) == {
        "cluster_delete",
        "instance_group_delete",
        "node_delete",
        "training_job_delete",
        "compute_quota_delete",
        "inference_deployment_delete",
        "inference_endpoint_delete",
    }
    for name, result in results.items():
        assert result.is_error and "does not equal clusterTag" in text_of(result), (name, text_of(result))
    assert recorder.sent == []
    assert calls.writes(*WORKFLOW_SERVICES)[before:] == []
    assert api.get_cluster(TAG)["status"] == "READY"
    assert node_id in {n["instanceId"] for n in api.list_cluster_nodes(TAG)["nodes"]}
