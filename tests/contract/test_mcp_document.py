"""The MCP proxy's tools state what the OpenAPI document states (the proxy reads the document; it imports nothing
of the core): each parameter is a path or query parameter, the ``Idempotency-Key`` header, a member of the request
body or the whole body, with the document's schema; every ``$ref`` resolves inside the tool; each result schema has
the success answer's top-level members.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_proxy.document import CONFIRM_PARAMETER, IDEMPOTENCY_PARAMETER, ToolDefinition, clean, resolve
from mcp_proxy.tools import definitions

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = json.loads((ROOT / "api_schema" / "openapi.json").read_text())
COMPONENTS = DOCUMENT["components"]["schemas"]
ADDED_BY_THE_PROXY = ("description", "default", "type")
"""What a tool may add to the document's schema of a parameter (its description, ``default: null`` = not sent)."""


def operation(spec: ToolDefinition) -> dict[str, Any]:
    method, path = spec.route.split(" ", 1)
    return dict(DOCUMENT["paths"][path][method.lower()])


def source_of(spec: ToolDefinition, name: str) -> dict[str, Any]:
    """The document's schema of the field tool parameter ``name`` is sent as."""
    op = operation(spec)
    for parameter in op.get("parameters", []):
        if parameter["name"] == name or (name == IDEMPOTENCY_PARAMETER and parameter["name"] == "idempotency-key"):
            return dict(parameter["schema"])
    body = resolve(op["requestBody"]["content"]["application/json"]["schema"], COMPONENTS)
    if name == spec.body_parameter:
        return dict(body)
    return dict(body["properties"][name])


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        return {str(v) for k, v in node.items() if k == "$ref"} | {r for v in node.values() for r in _refs(v)}
    return {r for v in node for r in _refs(v)} if isinstance(node, list) else set()


@pytest.mark.parametrize("spec", [d for d in definitions() if not d.hand_written], ids=lambda d: d.name)
def test_each_parameter_is_a_field_of_the_operation_with_its_schema(spec: ToolDefinition) -> None:
    properties = spec.input_schema["properties"]
    for name, schema in properties.items():
        if name == CONFIRM_PARAMETER:
            assert spec.confirm and name in spec.required
            continue
        expected = clean(source_of(spec, name))
        assert {k: v for k, v in schema.items() if k not in ADDED_BY_THE_PROXY} == {
            k: v for k, v in expected.items() if k not in ADDED_BY_THE_PROXY
        }, f"{spec.name}.{name}"
        if "default" in expected:
            assert schema["default"] == expected["default"], f"{spec.name}.{name}"
    op = operation(spec)
    fields = {p["name"] for p in op.get("parameters", []) if p["in"] != "header"}
    assert fields <= set(properties), "every path and query parameter is a tool parameter"
    declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "header"}
    assert (IDEMPOTENCY_PARAMETER in properties) == ("idempotency-key" in declared)


@pytest.mark.parametrize("spec", definitions(), ids=lambda d: d.name)
def test_every_ref_of_a_tool_resolves_in_its_own_defs(spec: ToolDefinition) -> None:
    text = json.dumps(spec.input_schema)
    assert "#/components/" not in text
    defs = spec.input_schema.get("$defs", {})
    assert {ref.removeprefix("#/$defs/") for ref in _refs(spec.input_schema)} <= set(defs)


@pytest.mark.parametrize("spec", definitions(), ids=lambda d: d.name)
def test_the_result_schema_has_the_success_answers_top_level_members(spec: ToolDefinition) -> None:
    op = operation(spec)
    members: set[str] = set()
    for code, response in op["responses"].items():
        if code.startswith("2") and "content" in response:
            members |= set(resolve(response["content"]["application/json"]["schema"], COMPONENTS)["properties"])
    branches = spec.output_schema.get("anyOf", [spec.output_schema])
    published = {name for branch in branches for name in branch["properties"]}
    assert published == members
    assert all("required" not in branch for branch in branches), "members the API may leave out are not required"
    assert len(json.dumps(spec.output_schema)) < 6_000, "the members' types and descriptions only"


def test_the_proxy_reads_the_document_the_client_ships() -> None:
    from instantstart_client.operations import document

    assert json.loads(json.dumps(dict(document()), default=dict)) == DOCUMENT
    assert len(definitions()) == sum(1 for item in DOCUMENT["paths"].values() for _ in item)
