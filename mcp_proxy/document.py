"""The MCP tools as the OpenAPI document declares them: one :class:`ToolDefinition` per operation.

The document is the one the client package ships (``instantstart_client/openapi.json``, a copy of
``api_schema/openapi.json``); each operation's ``x-instantstart.mcp`` extension (written by the route,
``functions/api/api_routes/common.py::faces``) names its tool, title, hints, toolset and guidance and says how the
request body maps to tool parameters. From the operation itself come:

- the parameters: its path and query parameters by their OpenAPI names, the ``Idempotency-Key`` header as
  ``idempotencyKey``, and the request body's top-level properties (or the whole body as one named parameter, e.g.
  ``job``), with ``$ref``s resolved into the tool's own ``$defs``; a typed ``confirmClusterTag`` where the extension
  asks for one. Parameter schemas *advertise* the API's constraints (pattern, length, range, enum, default); the
  proxy does not enforce them: a value the API rejects comes back as the API's own ``{"error": ...}`` JSON.
- the output schema: the success response's top-level members with their types and the first sentence of their
  descriptions only (no nested shapes, nothing required), so ``tools/list`` stays small and a newer API that adds
  a field breaks no client.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_types import ToolAnnotations

EXTENSION = "x-instantstart"
"""The operation's vendor extension holding what the faces need."""
IDEMPOTENCY_HEADER = "idempotency-key"
IDEMPOTENCY_PARAMETER = "idempotencyKey"
"""The tool parameter carrying the ``Idempotency-Key`` header."""
CONFIRM_PARAMETER = "confirmClusterTag"
CONFIRM_DESCRIPTION = (
    "The cluster tag again (required, no default), exactly as the user typed it to confirm; the call is refused "
    "unless it equals clusterTag. Never fill it in without the user's explicit confirmation."
)
_COMPONENTS = "#/components/schemas/"
_DEFS = "#/$defs/"
_HTTP_METHODS = ("get", "put", "post", "delete", "patch")
_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains")


@dataclass(frozen=True)
class ToolDefinition:
    """One MCP tool of one operation.

    Attributes:
        name: the tool's name (``x-instantstart.mcp.tool``).
        operation_id: the operation it calls.
        route: ``METHOD path`` of the operation.
        title: the tool's title.
        description: the agent guidance.
        toolset: the API area the tool belongs to.
        read_only: it changes nothing (allowed in read-only mode).
        annotations: the MCP behaviour hints.
        input_schema: the JSON schema of its arguments.
        output_schema: the JSON schema of its structured result.
        path_parameters: its path parameters (tool names = OpenAPI names).
        query_parameters: its query parameters.
        body_parameter: the tool parameter that is the whole body, or None.
        body_properties: the body's top-level properties when they are tool parameters.
        takes_body: the operation has a request body.
        idempotency_key: it takes ``idempotencyKey`` (the operation declares the header).
        confirm: it requires ``confirmClusterTag`` equal to ``clusterTag``.
        wrap: the member a JSON-array answer is returned under, or None.
        hand_written: why the proxy writes the tool by hand (then it is not built from the operation), or None.
    """

    name: str
    operation_id: str
    route: str
    title: str
    description: str
    toolset: str
    read_only: bool
    annotations: ToolAnnotations
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    path_parameters: tuple[str, ...]
    query_parameters: tuple[str, ...]
    body_parameter: str | None
    body_properties: tuple[str, ...]
    takes_body: bool
    idempotency_key: bool
    confirm: bool
    wrap: str | None
    hand_written: str | None

    @property
    def required(self) -> tuple[str, ...]:
        """The names of its required parameters."""
        return tuple(self.input_schema.get("required", ()))


def operations(document: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """``(method, path, operation)`` of every operation of ``document``, in document order."""
    for path, item in (document.get("paths") or {}).items():
        for method in _HTTP_METHODS:
            operation = item.get(method)
            if isinstance(operation, Mapping) and "operationId" in operation:
                yield method.upper(), path, operation


def clean(schema: Any) -> Any:
    """A copy of a document schema for a tool: component ``$ref``s pointed at ``$defs``, pydantic's titles dropped.

    Property maps are walked as maps, so a property named ``title`` stays.
    """
    if not isinstance(schema, Mapping):
        return copy.deepcopy(schema)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace(_COMPONENTS, _DEFS)
        elif key == "discriminator" and isinstance(value, Mapping):
            mapping = {k: str(v).replace(_COMPONENTS, _DEFS) for k, v in (value.get("mapping") or {}).items()}
            out[key] = {**value, "mapping": mapping} if mapping else dict(value)
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: clean(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [clean(sub) for sub in value]
        elif key in _SCHEMA_VALUES and isinstance(value, Mapping):
            out[key] = clean(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _refs(node: Any) -> set[str]:
    """Component names that ``node`` references (``$ref`` and discriminator mappings, either prefix)."""
    found: set[str] = set()
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.rsplit("/", 1)[-1])
            elif key == "mapping" and isinstance(value, Mapping):
                found |= {str(v).rsplit("/", 1)[-1] for v in value.values()}
            else:
                found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def definitions(node: Any, components: Mapping[str, Any]) -> dict[str, Any]:
    """The cleaned component schemas ``node`` reaches, transitively, by name (for a tool's ``$defs``)."""
    reached: dict[str, Any] = {}
    todo = _refs(node)
    while todo:
        name = todo.pop()
        if name in reached or name not in components:
            continue
        reached[name] = clean(components[name])
        todo |= _refs(reached[name]) - set(reached)
    return dict(sorted(reached.items()))


def resolve(schema: Mapping[str, Any], components: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` itself, or the component it references (followed while it is a bare ``$ref``)."""
    seen: set[str] = set()
    while isinstance(schema.get("$ref"), str):
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        if name in seen or name not in components:
            break
        seen.add(name)
        schema = components[name]
    return schema


def _shallow(schema: Mapping[str, Any], components: Mapping[str, Any]) -> dict[str, Any]:
    """The type (and enum) of a member, without its nested shape."""
    schema = resolve(schema, components)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return {"anyOf": [_shallow(branch, components) for branch in schema[key]]}
    out = {key: copy.deepcopy(schema[key]) for key in ("type", "enum") if key in schema}
    return out


def first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of ``text`` (at most ``limit`` characters): what a result member is, briefly."""
    sentence = text.split(". ", 1)[0].strip()
    sentence = sentence if sentence.endswith(".") or len(sentence) == len(text.strip()) else sentence + "."
    return sentence if len(sentence) <= limit else sentence[: limit - 3].rstrip() + "..."


def output_schema(schema: Mapping[str, Any], components: Mapping[str, Any], wrap: str | None) -> dict[str, Any]:
    """The result schema of one success answer: its top-level members' types and descriptions.

    Args:
        schema: the answer's schema in the document (usually a ``$ref``).
        components: ``components.schemas`` of the document.
        wrap: the member a JSON-array answer is returned under.
    """
    body = resolve(schema, components)
    if body.get("type") == "array":
        return {"type": "object", "properties": {str(wrap): {"type": "array", "description": body.get("description")}}}
    properties: dict[str, Any] = {}
    for name, member in (body.get("properties") or {}).items():
        entry = _shallow(member, components)
        description = member.get("description") or resolve(member, components).get("description")
        if description:
            entry["description"] = first_sentence(str(description))
        properties[name] = entry
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if body.get("description"):
        result["description"] = body["description"]
    return result


def _success_schemas(operation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    schemas = []
    for code, response in sorted((operation.get("responses") or {}).items()):
        schema = ((response.get("content") or {}).get("application/json") or {}).get("schema")
        if str(code).startswith("2") and isinstance(schema, Mapping) and schema not in schemas:
            schemas.append(schema)
    return schemas


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional parameter: ``default`` null when the document gives none (null = not sent)."""
    return schema if "default" in schema else {**schema, "default": None}


def _annotations(mcp: Mapping[str, Any]) -> ToolAnnotations:
    title = str(mcp["title"])
    if mcp.get("readOnly"):
        return ToolAnnotations(title=title, read_only_hint=True, open_world_hint=bool(mcp.get("openWorld", True)))
    return ToolAnnotations(
        title=title,
        read_only_hint=False,
        destructive_hint=bool(mcp.get("destructive")),
        idempotent_hint=bool(mcp.get("idempotent")),
        open_world_hint=bool(mcp.get("openWorld", True)),
    )


def tool_definition(
    method: str, path: str, operation: Mapping[str, Any], components: Mapping[str, Any]
) -> ToolDefinition:
    """The tool of one operation, from its parameters, body, success answer and ``x-instantstart.mcp``.

    Raises:
        ValueError: the operation has no ``x-instantstart.mcp``, or two of its parameters share a name.
    """
    operation_id = str(operation["operationId"])
    mcp = (operation.get(EXTENSION) or {}).get("mcp")
    if not isinstance(mcp, Mapping):
        raise ValueError(f"{operation_id} ({method} {path}) has no {EXTENSION}.mcp extension")
    properties: dict[str, Any] = {}
    required: list[str] = []
    path_parameters: list[str] = []
    query_parameters: list[str] = []
    takes_key = False

    def add(name: str, schema: dict[str, Any], is_required: bool) -> None:
        if name in properties:
            raise ValueError(f"{operation_id}: two parameters are named {name!r}")
        properties[name] = schema if is_required else _optional(schema)
        if is_required:
            required.append(name)

    for parameter in operation.get("parameters") or []:
        place, name = parameter.get("in"), str(parameter.get("name"))
        schema = clean(parameter.get("schema") or {})
        if parameter.get("description"):
            schema["description"] = parameter["description"]
        if place == "header":
            if name.lower() == IDEMPOTENCY_HEADER:
                takes_key = True
                add(IDEMPOTENCY_PARAMETER, schema, False)
            continue
        (path_parameters if place == "path" else query_parameters).append(name)
        add(name, schema, bool(parameter.get("required")))

    body_parameter = mcp.get("bodyParameter")
    body_properties: list[str] = []
    request_body = operation.get("requestBody")
    if isinstance(request_body, Mapping):
        body_schema = request_body["content"]["application/json"]["schema"]
        body = resolve(body_schema, components)
        if body_parameter:
            schema = {"type": "object", **clean(body)}
            schema["description"] = str(body.get("description") or f"The request body of {method} {path}.")
            add(str(body_parameter), schema, bool(request_body.get("required")))
        else:
            needed = set(body.get("required") or ())
            for name, member in (body.get("properties") or {}).items():
                body_properties.append(name)
                add(name, clean(member), name in needed)
    if mcp.get("confirmClusterTag"):
        add(CONFIRM_PARAMETER, {"type": "string", "description": CONFIRM_DESCRIPTION}, True)

    input_schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    defs = definitions(properties, components)
    if defs:
        input_schema["$defs"] = defs
    wrap = mcp.get("wrapArray")
    outputs = [output_schema(schema, components, wrap) for schema in _success_schemas(operation)]
    result = outputs[0] if len(outputs) == 1 else {"type": "object", "anyOf": outputs}
    return ToolDefinition(
        name=str(mcp["tool"]),
        operation_id=operation_id,
        route=f"{method} {path}",
        title=str(mcp["title"]),
        description=str(mcp.get("guidance") or operation.get("summary") or ""),
        toolset=str(mcp.get("toolset", "")),
        read_only=bool(mcp.get("readOnly")),
        annotations=_annotations(mcp),
        input_schema=input_schema,
        output_schema=result,
        path_parameters=tuple(path_parameters),
        query_parameters=tuple(query_parameters),
        body_parameter=str(body_parameter) if body_parameter else None,
        body_properties=tuple(body_properties),
        takes_body=isinstance(request_body, Mapping),
        idempotency_key=takes_key,
        confirm=bool(mcp.get("confirmClusterTag")),
        wrap=str(wrap) if wrap else None,
        hand_written=str(mcp["handWritten"]) if mcp.get("handWritten") else None,
    )


def tool_definitions(document: Mapping[str, Any]) -> list[ToolDefinition]:
    """The tool of every operation of ``document``, in document order (but those whose ``x-instantstart.mcp``
    says ``absent``, with the reason: ``api_routes.common.faces_without_tool``).

    Raises:
        ValueError: an operation without ``x-instantstart.mcp``, or two operations naming the same tool.
    """
    components = (document.get("components") or {}).get("schemas") or {}
    found = [
        tool_definition(method, path, op, components)
        for method, path, op in operations(document)
        if not ((op.get(EXTENSION) or {}).get("mcp") or {}).get("absent")
    ]
    names = [definition.name for definition in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"operations share the MCP tool name(s) {', '.join(duplicates)}")
    return found
