"""The tools built from the OpenAPI document are the tools of before (``tools_before.json``, taken from the
hand-written proxy before issue 32): the same names, titles, annotations, required parameters, and each parameter's
type, enum, bounds, pattern and default. Every difference is listed here with its reason; a new one fails.

Also prints the size of ``tools/list`` (before: 642,671 bytes of JSON for 61 tools).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from instantstart_client.api import InstantStartClient
from mcp_proxy.server import build_server

pytestmark = pytest.mark.anyio

BEFORE = json.loads((Path(__file__).parent / "tools_before.json").read_text())
KEYS = ("type", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern", "default", "minItems", "maxItems")
TOOLS_LIST_BYTES_BEFORE = 642_671
TOOLS_LIST_MAX_BYTES = 340_000
"""``tools/list`` may not grow back: about half of before (output schemas are the answers' top-level members)."""

INVOKE = "invoking a model changes nothing in AWS (issue 34): read-only, so a read-only agent can test an endpoint"
ANNOTATIONS_CHANGED = {"inference_deployment_invoke": INVOKE, "inference_endpoint_invoke": INVOKE}
"""Tools whose annotations differ from before, and why."""

RENAMED = {
    ("hyperpod_operation_get", "operationId"): (
        "hyperPodOperationId",
        "the API's name: HyperPod's operation id, not the control plane's operationId (op-...) of operation_get",
    )
}
"""(tool, old parameter) -> (new parameter, why)."""

NOW_OPTIONAL = {
    ("instance_group_add", "instanceType"): "the API takes instanceType or instanceTypes (a flexible group)",
}
"""Parameters required before and optional now, and why."""

API_FIELD = "a field of the API's request body the hand-written tool left out (issue 34: no API field unreachable)"
ADDED = {
    "cluster_update_software": {"deploymentConfig": API_FIELD, "imageId": API_FIELD},
    "compute_quota_create": {"activationState": API_FIELD, "description": API_FIELD},
    "compute_quota_update": {"description": API_FIELD},
    "scheduler_config_put": {"description": API_FIELD},
    "mlflow_connect": {"enabled": API_FIELD},
    "instance_group_add": {
        name: API_FIELD
        for name in (
            "autoPatch",
            "dedicatedSubnet",
            "efaOnly",
            "instanceStorageConfigs",
            "instanceTypes",
            "labels",
            "minInstanceCount",
            "onStartDeepHealthChecks",
            "subnetId",
            "taints",
            "threadsPerCore",
            "trainingPlanArn",
        )
    },
    "instance_group_update": {
        name: "the API's field: a change of it is refused with a 409 naming it (add a new group instead)"
        for name in ("capacityType", "instanceType", "subnetId", "trainingPlanArn")
    },
    "operation_cancel": {"idempotencyKey": "the operation declares the Idempotency-Key header"},
}
"""Parameters new since before, per tool, and why."""

NEW_TOOLS = {
    "cluster_reconcile": "issue 28: POST /clusters/{clusterTag}/reconcile (drift checked now, the control plane's own "
    "repaired) is new since before",
}
"""Tools new since before (operations added after issue 32's rebuild), and why."""


def reduced(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A parameter's type, enum, bounds, pattern and default (``$ref``s followed, nested shapes left out)."""
    if "$ref" in schema:
        target = defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    out = {key: schema[key] for key in KEYS if key in schema}
    if "items" in schema:
        out["items"] = reduced(schema["items"], defs)
    if "anyOf" in schema:
        out["anyOf"] = [reduced(branch, defs) for branch in schema["anyOf"]]
    return out


def covers(new: Any, old: Any) -> bool:
    """``new`` states everything ``old`` stated, the same (it may state more: the API's own constraints)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return all(key in new and covers(new[key], value) for key, value in old.items())
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(covers(n, o) for n, o in zip(new, old, strict=True))
    return bool(old == new)


async def test_the_tools_built_from_the_document_are_the_tools_of_before() -> None:
    server = build_server(client=InstantStartClient("http://127.0.0.1:9", region="us-west-2"), allow_write=False)
    async with Client(server) as client:
        listed = (await client.list_tools()).tools
    size = len(json.dumps([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]))
    print(f"tools/list: {size:,} bytes for {len(listed)} tools (before: {TOOLS_LIST_BYTES_BEFORE:,} for 61)")
    assert size <= TOOLS_LIST_MAX_BYTES
    tools = {tool.name: tool for tool in listed}
    assert set(tools) == set(BEFORE) | set(NEW_TOOLS)

    differences = []
    for name, before in BEFORE.items():
        tool = tools[name]
        assert tool.title == before["title"], name
        assert tool.annotations is not None
        annotations = tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
        if (annotations != before["annotations"]) != (name in ANNOTATIONS_CHANGED):
            differences.append(f"{name}: annotations {before['annotations']} -> {annotations}")
        defs = tool.input_schema.get("$defs", {})
        properties = {k: reduced(v, defs) for k, v in tool.input_schema.get("properties", {}).items()}
        renamed = {old: new for (tool_name, old), (new, _) in RENAMED.items() if tool_name == name}
        expected_required = {renamed.get(p, p) for p in before["required"]} - {
            p for (tool_name, p) in NOW_OPTIONAL if tool_name == name
        }
        if set(tool.input_schema.get("required", [])) != expected_required:
            differences.append(f"{name}: required {before['required']} -> {tool.input_schema.get('required')}")
        for parameter, old in before["parameters"].items():
            new = properties.get(renamed.get(parameter, parameter))
            if (name, parameter) in NOW_OPTIONAL and new is not None:
                new = next(b for b in new.get("anyOf", [new]) if b.get("type") != "null")
            if new is None or not covers(new, old):
                differences.append(f"{name}.{parameter}: {old} -> {new}")
        added = set(properties) - set(before["parameters"]) - set(renamed.values())
        if added != set(ADDED.get(name, {})):
            differences.append(f"{name}: new parameters {sorted(added)}, listed {sorted(ADDED.get(name, {}))}")
    assert differences == []
