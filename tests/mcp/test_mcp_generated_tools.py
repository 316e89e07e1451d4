"""A generated tool sends what the agent gave as the operation's request: path and query parameters, the body
(its top-level members, or one named parameter), the Idempotency-Key header; and refuses, before sending anything,
an argument the operation does not have or a required one left out. No sandbox: the client records the request and
answers what the API would.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from mcp import Client

from instantstart_client.api import InstantStartClient
from mcp_proxy.server import build_server
from tests.mcp.conftest import text_of

pytestmark = pytest.mark.anyio
OPERATION = {"operationId": "op-" + "a" * 32, "type": "CREATE_TRAINING_JOB", "status": "PENDING"}


class AnsweringClient(InstantStartClient):
    """Records each request and answers ``answer`` without a network."""

    def __init__(self, answer: Any = None) -> None:
        super().__init__("http://127.0.0.1:9", region="us-west-2")
        self.answer = OPERATION if answer is None else answer
        self.sent: list[dict[str, Any]] = []

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, object | None] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Record the request; the canned answer."""
        self.sent.append({"method": method, "path": path, "params": params, "body": body, "headers": headers})
        return self.answer


async def call(client: AnsweringClient, tool: str, arguments: dict[str, Any]) -> Any:
    async with Client(build_server(client=client, allow_write=True)) as mcp:
        return await mcp.call_tool(tool, arguments)


async def test_a_named_body_parameter_is_the_request_body_and_the_key_its_header() -> None:
    client = AnsweringClient()
    job = {"recipe": "pytorch", "name": "j1", "instanceType": "ml.g6.4xlarge", "nodes": 1}
    result = await call(client, "training_job_create", {"clusterTag": "demo", "job": job, "idempotencyKey": "k-1"})
    assert not result.is_error and result.structured_content == OPERATION
    [sent] = client.sent
    assert (sent["method"], sent["path"], sent["body"]) == ("POST", "/clusters/demo/training-jobs", job)
    assert sent["headers"] == {"Idempotency-Key": "k-1"}


async def test_flattened_members_form_the_body_without_the_ones_left_out() -> None:
    client = AnsweringClient()
    result = await call(
        client, "instance_group_update", {"clusterTag": "demo", "instanceGroupName": "accel", "instanceCount": 3}
    )
    assert not result.is_error
    [sent] = client.sent
    assert (sent["method"], sent["path"]) == ("PATCH", "/clusters/demo/instance-groups/accel")
    assert sent["body"] == {"instanceCount": 3}


async def test_query_parameters_are_sent_and_an_array_given_as_json_text_is_parsed() -> None:
    client = AnsweringClient({"events": [], "nextToken": None})
    await call(client, "cluster_list_events", {"clusterTag": "demo", "level": "Error", "maxResults": 5})
    assert client.sent[0]["params"] == {"maxResults": 5, "level": "Error"}
    await call(client, "node_reboot", {"clusterTag": "demo", "nodeIds": '["i-0123456789abcdef0"]'})
    assert client.sent[1]["body"] == {"nodeIds": ["i-0123456789abcdef0"]}


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"clusterTag": "demo", "operationId": "x"}, ["has no parameter 'operationId'", "hyperPodOperationId"]),
        ({"clusterTag": "demo"}, ["needs hyperPodOperationId", "nothing was sent"]),
    ],
)
async def test_an_unknown_or_missing_argument_is_refused_before_any_request(
    arguments: dict[str, Any], words: list[str]
) -> None:
    client = AnsweringClient()
    result = await call(client, "hyperpod_operation_get", arguments)
    assert result.is_error and all(word in text_of(result) for word in words), text_of(result)
    assert client.sent == []


async def test_invoking_a_model_is_allowed_read_only_while_a_write_is_refused() -> None:
    client = AnsweringClient({"statusCode": 200, "body": {"text": "hi"}})
    async with Client(build_server(client=client, allow_write=False)) as mcp:
        invoked = await mcp.call_tool(
            "inference_endpoint_invoke", {"clusterTag": "demo", "name": "ep", "body": {"inputs": "hi"}}
        )
        refused = await mcp.call_tool("inference_deployment_scale", {"clusterTag": "demo", "name": "d", "replicas": 2})
    assert not invoked.is_error, text_of(invoked)
    assert refused.is_error and "read-only" in text_of(refused)
    assert [(s["method"], s["path"]) for s in client.sent] == [("POST", "/clusters/demo/inference/endpoints/ep/invoke")]
    assert json.loads(text_of(invoked)) == client.answer
