"""The MCP server in process, with the sandbox HTTP API behind it: tools, schemas, the transcript flow,
API errors as tool errors, the read-only guard rail and the delete confirmation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from instantstart_client.api import ApiError, InstantStartClient
from mcp_proxy.tools import definitions, write_tools
from tests.mcp.conftest import GROUP, McpConnect, ScaledSleep, call, poll_operation, text_of

pytestmark = pytest.mark.anyio


async def test_the_server_lists_one_tool_per_operation_of_the_document_and_the_composite_ones(
    mcp_client: McpConnect,
) -> None:
    """Given the document the client ships, the server lists every operation's tool, wait_seconds, nothing else."""
    async with mcp_client(allow_write=False) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == {d.name for d in definitions()} | {"wait_seconds"}
    for spec in definitions():
        assert listed[spec.name].meta == {
            "instantstart/toolset": spec.toolset,
            "instantstart/operation": spec.operation_id,
        }, spec.name


async def test_tools_publish_described_typed_parameters_and_result_schemas(mcp_client: McpConnect) -> None:
    """Every parameter has a description and a type; limits come from the API's document; results have schemas."""
    async with mcp_client(allow_write=False) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    for tool in tools.values():
        assert tool.description and tool.output_schema, tool.name
        assert tool.output_schema.get("type") == "object", tool.name
        assert tool.annotations is not None and tool.annotations.read_only_hint is (tool.name not in write_tools())
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
            assert {"type", "anyOf", "$ref", "oneOf"} & set(prop), f"{tool.name}.{name} has no type"
            if name not in tool.input_schema.get("required", []):
                assert "default" in prop, f"{tool.name}.{name} is optional without a default"
    assert tools["cluster_delete"].annotations and tools["cluster_delete"].annotations.destructive_hint is True

    create = tools["cluster_create"].input_schema
    assert set(create["required"]) == {"clusterTag", "availabilityZone", "instanceGroups"}
    assert create["properties"]["clusterTag"]["pattern"] == "^[a-z](?:[a-z0-9-]{1,22})[a-z0-9]$"
    assert create["properties"]["instanceGroups"]["minItems"] == 1
    assert create["properties"]["instanceGroups"]["items"] == {"$ref": "#/$defs/InstanceGroupRequest"}
    group = create["$defs"]["InstanceGroupRequest"]
    assert set(group["required"]) == {"instanceCount"}
    assert group["properties"]["instanceCount"]["maximum"] == 6758
    assert create["$defs"]["CapacityType"]["enum"] == ["OnDemand", "Spot", "TrainingPlan"]
    assert group["properties"]["capacityType"]["default"] == "OnDemand"
    assert group["properties"]["instanceGroupName"]["default"] == "accel"
    assert all(ref.startswith("#/$defs/") for ref in _refs(tools["training_job_create"].input_schema))

    stage = tools["cluster_retry_stage"].input_schema
    assert stage["$defs"]["StageName"]["enum"] == ["network", "access", "dependencies", "hyperpod", "storage", "verify"]
    seconds = tools["wait_seconds"].input_schema["properties"]["seconds"]
    assert (seconds["type"], seconds["minimum"], seconds["maximum"]) == ("integer", 1, 300)
    delete = tools["cluster_delete"].input_schema
    assert set(delete["required"]) == {"clusterTag", "confirmClusterTag"}
    assert set(tools["node_delete"].input_schema["required"]) == {"clusterTag", "nodeIds", "confirmClusterTag"}
    assert tools["node_reboot"].input_schema["properties"]["nodeIds"]["maxItems"] == 25
    assert tools["cluster_get_status"].output_schema["properties"]["status"]


async def test_the_skills_ship_as_instructions_prompts_and_resources(mcp_client: McpConnect) -> None:
    """The workflow rules reach the agent at initialisation and as prompts/resources."""
    async with mcp_client(allow_write=False) as client:
        assert client.instructions and "wait_seconds" in client.instructions and "--allow-write" in client.instructions
        prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
        assert prompts == {
            "instantstart_workflow_rules",
            "create_hyperpod_cluster",
            "retry_failed_stage",
            "delete_cluster",
            "troubleshoot_node",
        }
        rendered = await client.get_prompt("create_hyperpod_cluster", {"clusterTag": "mcpflow"})
        text = " ".join(getattr(message.content, "text", "") for message in rendered.messages)
        for rule in ("never stop early", "Never ask about CIDRs", "cluster_list_all", "tensor-parallel", "mcpflow"):
            assert rule.lower() in text.lower(), rule
        resources = {str(resource.uri) for resource in (await client.list_resources()).resources}
        assert "skill://instantstart/workflow-rules" in resources
        content = await client.read_resource("skill://instantstart/delete-cluster")
        assert "confirmClusterTag" in getattr(content.contents[0], "text", "")


async def test_the_transcript_flow_creates_a_cluster_polled_to_ready_then_deletes_it(
    mcp_client: McpConnect, scaled_sleep: ScaledSleep, api: InstantStartClient
) -> None:
    """Given the agent's flow of the article: inspect, create, poll with wait_seconds to READY, verify;
    then delete with the user's typed confirmation and poll until the cluster is gone."""
    tag = "mcpflow"
    async with mcp_client(allow_write=True) as client:
        listing = await call(client, "cluster_list_all")
        assert listing["count"] == len(listing["clusters"])
        assert tag not in {c["clusterTag"] for c in listing["clusters"]}
        zones = await call(client, "catalog_list_availability_zones")
        assert "us-west-2c" in {zone["zoneName"] for zone in zones["availabilityZones"]}
        offered = await call(client, "catalog_list_instance_types", availabilityZone="us-west-2c")
        assert "ml.g6.4xlarge" in offered["instanceTypes"]

        operation = await call(
            client, "cluster_create", clusterTag=tag, availabilityZone="us-west-2c", instanceGroups=[GROUP]
        )
        assert operation["type"] == "CREATE_CLUSTER" and operation["clusterTag"] == tag
        assert operation["status"] in ("PENDING", "RUNNING")

        seen: set[tuple[str, str]] = set()

        async def report(_: dict[str, Any]) -> None:
            stages = await call(client, "cluster_get_stages", clusterTag=tag)
            seen.update((stage["name"], stage["status"]) for stage in stages["stages"])

        done = await poll_operation(client, operation["operationId"], on_poll=report)
        assert done["status"] == "SUCCEEDED", done
        assert scaled_sleep.total >= 120 and all(step <= 10 for step in scaled_sleep.calls)
        assert len({name for name, status in seen if status == "SUCCEEDED"}) == 6
        assert any(status in ("RUNNING", "PENDING") for _, status in seen), "progress was visible while polling"

        cluster = await call(client, "cluster_get_status", clusterTag=tag)
        assert cluster["status"] == "READY"
        assert cluster["hyperPod"]["clusterName"] == f"hp-cluster-{tag}"
        assert cluster["nodes"] and all(node["ready"] for node in cluster["nodes"])
        assert cluster["storage"]["phase"] == "Bound"
        assert cluster == dict(api.get_cluster(tag)), "the tool answers what the API answers"
        listed = await call(client, "cluster_list_all")
        assert {c["clusterTag"]: c["status"] for c in listed["clusters"]}[tag] == "READY"

        refused = await client.call_tool("cluster_delete", {"clusterTag": tag, "confirmClusterTag": "mcpflo"})
        assert refused.is_error and "confirmClusterTag" in text_of(refused)
        assert api.get_cluster(tag)["status"] == "READY", "a mismatched confirmation deletes nothing"

        deletion = await call(client, "cluster_delete", clusterTag=tag, confirmClusterTag=tag)
        assert deletion["type"] == "DELETE_CLUSTER"
        gone = await poll_operation(client, deletion["operationId"], on_poll=_nothing)
        assert gone["status"] == "SUCCEEDED", gone
        assert tag not in {c["clusterTag"] for c in (await call(client, "cluster_list_all"))["clusters"]}


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    return [r for v in node for r in _refs(v)] if isinstance(node, list) else []


async def _nothing(_: dict[str, Any]) -> None:
    return None


async def test_a_failed_stage_is_shown_and_retried_to_ready(
    mcp_client: McpConnect, sandbox: Any, api: InstantStartClient, no_faults: None
) -> None:
    """Given SageMaker refuses CreateCluster once (a service quota), the hyperpod stage fails with the AWS code
    and message verbatim; retrying a stage that did not fail is the API's 409 JSON; retrying hyperpod ends READY."""
    tag, instance_type = "mcpretry", "ml.g5.8xlarge"
    message = (
        f"The account-level service limit '{instance_type} for cluster usage' is 0 Instances, with current "
        "utilization of 0 Instances and a request delta of 1 Instances. Please use AWS Service Quotas to "
        "request an increase for this quota."
    )
    sandbox.aws.extension.faults.inject("sagemaker", "CreateCluster", "ResourceLimitExceeded", message, times=1)
    group = {"instanceType": instance_type, "instanceCount": 1}
    async with mcp_client(allow_write=True) as client:
        created = await call(
            client, "cluster_create", clusterTag=tag, availabilityZone="us-west-2c", instanceGroups=[group]
        )
        failed = await poll_operation(client, created["operationId"], on_poll=_nothing)
        assert failed["status"] == "FAILED"
        assert failed["error"] == {"code": "ResourceLimitExceeded", "message": message}
        stages = {s["name"]: s for s in (await call(client, "cluster_get_stages", clusterTag=tag))["stages"]}
        assert stages["hyperpod"]["status"] == "FAILED"
        assert stages["hyperpod"]["error"] == {"code": "ResourceLimitExceeded", "message": message}
        assert stages["verify"]["status"] == "PENDING"

        conflict = await client.call_tool("cluster_retry_stage", {"clusterTag": tag, "stage": "verify"})
        assert conflict.is_error
        body = json.loads(text_of(conflict))
        assert "PENDING" in body["error"]["message"]
        with pytest.raises(ApiError) as direct:
            api.retry_stage(tag, "verify")
        assert direct.value.status == 409 and body == direct.value.body

        retry = await call(client, "cluster_retry_stage", clusterTag=tag, stage="hyperpod")
        assert retry["type"] == "RETRY_STAGE" and retry["stage"] == "hyperpod"
        done = await poll_operation(client, retry["operationId"], on_poll=_nothing)
        assert done["status"] == "SUCCEEDED", done
        ready = await call(client, "cluster_get_status", clusterTag=tag)
        assert ready["status"] == "READY"
        stages = {s["name"]: s for s in ready["stages"]}
        assert stages["hyperpod"]["attempts"] == 2 and stages["hyperpod"]["error"] is None
        assert stages["network"]["attempts"] == 1, "stages that succeeded are not run again"


async def test_api_4xx_answers_are_tool_errors_whose_text_is_the_api_json(
    mcp_client: McpConnect, api: InstantStartClient
) -> None:
    """A 404, a 422 with field details, and a 422 for a value the proxy advertised but left to the API."""
    async with mcp_client(allow_write=True) as client:
        missing = await client.call_tool("cluster_get_status", {"clusterTag": "mcpnothere"})
        assert missing.is_error and missing.structured_content is None
        with pytest.raises(ApiError) as direct:
            api.get_cluster("mcpnothere")
        assert direct.value.status == 404
        assert json.loads(text_of(missing)) == direct.value.body, "verbatim API JSON"
        assert json.loads(text_of(missing))["error"]["code"].endswith("NotFound")

        invalid = await client.call_tool(
            "cluster_create",
            {
                "clusterTag": "mcpbad",
                "availabilityZone": "us-west-2c",
                "instanceGroups": [{"instanceType": "ml.nope.xlarge", "instanceCount": 1}],
            },
        )
        assert invalid.is_error
        error = json.loads(text_of(invalid))["error"]
        assert error["code"] == "ValidationError"
        assert any("instanceType" in str(detail.get("field")) for detail in error["details"]), error
        assert "ml.nope.xlarge" in json.dumps(error)

        unknown_zone = await client.call_tool("catalog_list_instance_types", {"availabilityZone": "Zone 9"})
        assert unknown_zone.is_error
        assert json.loads(text_of(unknown_zone))["error"]["code"] == "ValidationError"

        unknown_id = "op-" + "0" * 32
        operation = await client.call_tool("operation_get", {"operationId": unknown_id})
        assert operation.is_error
        with pytest.raises(ApiError) as direct:
            api.get_operation(unknown_id)
        assert direct.value.status == 404 and json.loads(text_of(operation)) == direct.value.body

        malformed = await client.call_tool("operation_get", {"operationId": "no-such-operation"})
        assert malformed.is_error
        [detail] = json.loads(text_of(malformed))["error"]["details"]
        assert detail["field"] == "operationId" and "op- followed by 32 lowercase hex digits" in detail["message"]

    with pytest.raises(ApiError) as direct:
        api.get_cluster("mcpbad")
    assert direct.value.status == 404, "the rejected create made nothing"


async def test_read_only_mode_lists_write_tools_but_refuses_them_saying_how_to_enable(
    mcp_client: McpConnect, api: InstantStartClient
) -> None:
    """Read-only by default: reads work, writes are listed, and refused before reaching the API."""
    async with mcp_client(allow_write=False) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert listed >= set(write_tools())
        assert (await call(client, "cluster_list_all"))["count"] >= 0

        calls = {
            "cluster_create": {"clusterTag": "mcpro", "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]},
            "cluster_retry_stage": {"clusterTag": "mcpro", "stage": "hyperpod"},
            "cluster_delete": {"clusterTag": "mcpro", "confirmClusterTag": "mcpro"},
            "operation_cancel": {"operationId": "op-0123456789abcdef0123456789abcdef"},
            "instance_group_add": {"clusterTag": "mcpro", "instanceType": "ml.g6.4xlarge", "instanceCount": 1},
            "instance_group_update": {"clusterTag": "mcpro", "instanceGroupName": "accel", "instanceCount": 2},
            "instance_group_delete": {
                "clusterTag": "mcpro",
                "instanceGroupName": "accel",
                "confirmClusterTag": "mcpro",
            },
        }
        for tool, arguments in calls.items():
            refused = await client.call_tool(tool, arguments)
            assert refused.is_error, tool
            text = text_of(refused)
            assert "read-only" in text and "--allow-write" in text and "INSTANTSTART_ALLOW_WRITE=true" in text
            assert "NotFound" not in text, "refused before the API was called"
    with pytest.raises(ApiError) as direct:
        api.get_cluster("mcpro")
    assert direct.value.status == 404


async def test_delete_confirmation_must_equal_the_tag(mcp_client: McpConnect) -> None:
    """A mismatched confirmClusterTag is refused by the proxy, before any API call (no 404 for this tag)."""
    async with mcp_client(allow_write=True) as client:
        refused = await client.call_tool("cluster_delete", {"clusterTag": "mcpdel", "confirmClusterTag": "mcpdell"})
        assert refused.is_error
        text = text_of(refused)
        assert "does not equal clusterTag" in text and "nothing was deleted" in text
        assert "NotFound" not in text

        attempted = await client.call_tool("cluster_delete", {"clusterTag": "mcpdel", "confirmClusterTag": "mcpdel"})
        assert attempted.is_error and json.loads(text_of(attempted))["error"]["code"].endswith("NotFound")


@pytest.mark.parametrize("seconds", [0, 301, -5])
async def test_wait_seconds_outside_1_to_300_is_a_tool_error(mcp_client: McpConnect, seconds: int) -> None:
    """1-300 inclusive; anything else is refused with the range in the message."""
    async with mcp_client(allow_write=False) as client:
        result = await client.call_tool("wait_seconds", {"seconds": seconds})
    assert result.is_error and "between 1 and 300 inclusive" in text_of(result)


async def test_wait_seconds_returns_within_55_s_saying_how_long_it_waited_and_to_call_again(
    mcp_client: McpConnect, scaled_sleep: ScaledSleep
) -> None:
    """wait_seconds(120) returns after at most 55 s of (scaled) time, before a client's 60 s timeout, with
    the early-return text and the waited and remaining seconds; a wait that fits one call is waited whole."""
    progress: list[tuple[float, float | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total))

    async with mcp_client(allow_write=False) as client:
        result = await client.call_tool("wait_seconds", {"seconds": 120}, progress_callback=on_progress)
        assert not result.is_error and scaled_sleep.total <= 55
        data = result.structured_content
        assert data is not None
        assert (data["waitedSeconds"], data["requestedSeconds"]) == (scaled_sleep.total, 120)
        assert data["remainingSeconds"] == 120 - data["waitedSeconds"]
        assert f"Waited {data['waitedSeconds']} of 120 s and returned early" in text_of(result)
        assert f"call wait_seconds again with seconds={data['remainingSeconds']}" in text_of(result)
        assert progress and progress[-1] == (data["waitedSeconds"], data["waitedSeconds"])

        whole = await client.call_tool("wait_seconds", {"seconds": 1})
        assert whole.structured_content is not None
        assert (whole.structured_content["waitedSeconds"], whole.structured_content["remainingSeconds"]) == (1, 0)
    assert scaled_sleep.total == data["waitedSeconds"] + 1
