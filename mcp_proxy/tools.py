"""The MCP tools: one per HTTP API operation, built from the OpenAPI document (:mod:`mcp_proxy.document`), plus the
few composite tools of :mod:`mcp_proxy.composite` (``wait_seconds``, ``cluster_list_all``).

Rules every tool follows:

- It calls the HTTP API through :class:`instantstart_client.api.InstantStartClient` (SigV4, botocore credential
  chain; a generated tool through ``call_operation`` with its operation's id) and nothing else: no boto3 service
  calls, no kubectl, no logic the API lacks.
- Its result is the API's JSON answer as structured content (and as JSON text), described by an
  ``outputSchema`` built from the operation's success response.
- An API answer of 4xx/5xx becomes a tool error (``isError``) whose text is the API's
  ``{"error": {"code", "message", "details"}}`` JSON, verbatim.
- Every call returns within 55 s, under the 60 s timeout MCP clients commonly apply: ``wait_seconds``
  waits at most ``WAIT_PER_CALL_MAX_SECONDS`` per call and says how much of the request is left, and the
  API requests of one call (attempts, backoff waits, pages) share a time bound of
  :data:`CALL_BUDGET_SECONDS`; a slow API makes the call answer "did not answer within N s; call again".
- A call the proxy refuses itself (read-only mode for a tool whose operation is not read-only, a delete
  confirmation that does not match, an unknown or missing argument, a wait outside the accepted range, the API
  unreachable or unconfigured) raises the SDK's ``ToolError``, whose message the agent reads and which says what
  to do next.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from instantstart_client.api import (
    ApiConnectionError,
    ApiError,
    ApiTimeoutError,
    ConfigurationError,
    InstantStartClient,
)
from instantstart_client.operations import document
from mcp_proxy.document import CONFIRM_PARAMETER, IDEMPOTENCY_PARAMETER, ToolDefinition, tool_definitions

ALLOW_WRITE_ENV = "INSTANTSTART_ALLOW_WRITE"
"""Environment variable that enables write tools when set to ``true`` (or ``1``/``yes``/``on``)."""

CALL_BUDGET_SECONDS = 50.0
"""Seconds the API requests of one tool call may take in all (attempts, backoff waits and pages included):
with the proxy's own work the call answers within 55 s, before MCP clients' common 60 s timeout."""

ClientFactory = Callable[[], InstantStartClient]


@functools.cache
def definitions() -> tuple[ToolDefinition, ...]:
    """The tool of every operation of the document the client package ships (built once)."""
    return tuple(tool_definitions(document()))


def definition(name: str) -> ToolDefinition:
    """The tool definition named ``name``.

    Raises:
        KeyError: no operation declares this tool.
    """
    for found in definitions():
        if found.name == name:
            return found
    raise KeyError(name)


def write_tools() -> tuple[str, ...]:
    """The tools whose operation is not read-only, sorted: listed always, refused unless writes are enabled."""
    return tuple(sorted(d.name for d in definitions() if not d.read_only))


def env_allows_write(environ: Mapping[str, str]) -> bool:
    """True when ``INSTANTSTART_ALLOW_WRITE`` is ``true``, ``1``, ``yes`` or ``on`` (any case)."""
    return environ.get(ALLOW_WRITE_ENV, "").strip().lower() in {"true", "1", "yes", "on"}


def read_only_message(tool: str) -> str:
    """The refusal of a write tool in read-only mode: nothing was sent, which tools are writes, how to enable them."""
    writes = write_tools()
    return (
        f"{tool} was refused and nothing was sent to the API: this InstantStart MCP server is read-only (the "
        f"default), so its {len(writes)} write tools ({', '.join(writes)}) are refused. To enable them, restart "
        f"the server with --allow-write (`instantstart-mcp --allow-write`) or set {ALLOW_WRITE_ENV}=true in its "
        "environment (the `env` of its entry in your MCP client configuration), then call the tool again."
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


class _NoArguments(ArgModelBase):
    """The SDK's argument model of a tool whose arguments the proxy reads itself (:class:`OperationTool`)."""


class OperationTool(Tool):
    """An SDK tool with a JSON input schema of its own: its function gets the call's arguments as one dict.

    The SDK's ``Tool.from_function`` derives the input schema from a Python signature and validates with
    pydantic; an operation's schema comes from the document, and its constraints are the API's to enforce, so
    :meth:`run` passes the arguments through and keeps the SDK's error wrapping.
    """

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        """Call the tool's function with ``arguments`` on a worker thread.

        Raises:
            ToolError: the function refused the call (its message after ``Error executing tool <name>: ``).
            UnexpectedToolError: anything else it raised (the text stays on the server).
        """
        try:
            result = await anyio.to_thread.run_sync(functools.partial(self.fn, dict(arguments)))
        except MCPError:
            raise
        except ToolError as exc:
            raise ToolError(f"Error executing tool {self.name}: {exc}") from exc
        except Exception as exc:
            raise UnexpectedToolError(f"Error executing tool {self.name}") from exc
        return self.fn_metadata.convert_result(result) if convert_result else result


def _expects_json(schema: Mapping[str, Any]) -> bool:
    """The parameter takes an object or an array (so a JSON string of one is parsed first)."""
    types = {schema.get("type")} | {
        branch.get("type") for branch in schema.get("anyOf", []) if isinstance(branch, dict)
    }
    return bool(types & {"object", "array"}) or "$ref" in schema or "oneOf" in schema


def _pre_parse(arguments: dict[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """Objects and arrays some clients send as JSON text, parsed (as the SDK does for its own tools)."""
    parsed = dict(arguments)
    for name, value in arguments.items():
        if isinstance(value, str) and name in properties and _expects_json(properties[name]):
            try:
                decoded = json.loads(value)
            except ValueError:
                continue
            if isinstance(decoded, dict | list):
                parsed[name] = decoded
    return parsed


class InstantStartTools:
    """The tools, bound to one API client and one write policy.

    Args:
        client_factory: builds the API client on the first call (so a missing URL or missing
            credentials become a readable tool error rather than a server that does not start).
        allow_write: enable the write tools (:func:`write_tools`).
        call_budget: seconds the API requests of one tool call may take in all (default
            :data:`CALL_BUDGET_SECONDS`).
    """

    def __init__(
        self, client_factory: ClientFactory, *, allow_write: bool, call_budget: float = CALL_BUDGET_SECONDS
    ) -> None:
        self._client_factory = client_factory
        self._client: InstantStartClient | None = None
        self._lock = threading.Lock()
        self.allow_write = allow_write
        self._call_budget = call_budget

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

    def call(self, request: Callable[[InstantStartClient], Any], wrap: str | None = None) -> CallToolResult:
        """Run one call's API requests within the call budget; map the answer and failures to results/tool errors.

        Args:
            request: the API requests of the call; its answer becomes the result (an array under ``wrap``,
                nothing as ``{}``).
            wrap: the member a JSON-array answer is returned under.

        Raises:
            ToolError: the API did not answer within the budget, could not be reached, or is not configured.
        """
        client = self.client()
        try:
            with client.time_bound(self._call_budget):
                answer = request(client)
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
        if isinstance(answer, list):
            return ok({wrap or "items": answer})
        return ok(answer if isinstance(answer, Mapping) else {})

    def require_write(self, tool: str) -> None:
        """Refuse a write tool in read-only mode.

        Raises:
            ToolError: writes are not enabled (:func:`read_only_message`).
        """
        if not self.allow_write:
            raise ToolError(read_only_message(tool))

    def invoke(self, spec: ToolDefinition, arguments: Mapping[str, Any]) -> CallToolResult:
        """One call of a generated tool: check the arguments, the write policy and the confirmation, then call
        the operation (``InstantStartClient.call_operation``).

        Raises:
            ToolError: an unknown or missing argument; a write tool in read-only mode; ``confirmClusterTag``
                not equal to ``clusterTag`` (nothing is sent in any of these); and as :meth:`call`.
        """
        properties = spec.input_schema["properties"]
        unknown = sorted(set(arguments) - set(properties))
        if unknown:
            raise ToolError(
                f"{spec.name} has no parameter {', '.join(map(repr, unknown))}; its parameters are: "
                f"{', '.join(properties)}."
            )
        given = {k: v for k, v in _pre_parse(dict(arguments), properties).items() if v is not None}
        missing = [name for name in spec.required if name not in given]
        if missing:
            raise ToolError(f"{spec.name} needs {', '.join(missing)} (required); nothing was sent.")
        if not spec.read_only:
            self.require_write(spec.name)
        if spec.confirm and given.get(CONFIRM_PARAMETER) != given.get("clusterTag"):
            raise ToolError(_confirmation_refused(spec, given))
        parameters = {k: given[k] for k in (*spec.path_parameters, *spec.query_parameters) if k in given}
        body: Any = None
        if spec.body_parameter is not None:
            body = given.get(spec.body_parameter)
        elif spec.takes_body:
            body = {k: given[k] for k in spec.body_properties if k in given}
        key = given.get(IDEMPOTENCY_PARAMETER) if spec.idempotency_key else None
        return self.call(
            lambda client: client.call_operation(spec.operation_id, parameters, body=body, idempotency_key=key),
            spec.wrap,
        )

    def tools(self, definitions_: Sequence[ToolDefinition] | None = None) -> list[Tool]:
        """The SDK tool of every generated definition (the composite ones excluded), in document order."""
        built: list[Tool] = []
        for spec in definitions() if definitions_ is None else definitions_:
            if spec.hand_written:
                continue
            built.append(
                OperationTool(
                    fn=functools.partial(self.invoke, spec),
                    name=spec.name,
                    title=spec.title,
                    description=spec.description,
                    parameters=spec.input_schema,
                    fn_metadata=FuncMetadata(arg_model=_NoArguments, output_schema=spec.output_schema),
                    is_async=False,
                    context_kwarg=None,
                    annotations=spec.annotations,
                    meta={"instantstart/toolset": spec.toolset, "instantstart/operation": spec.operation_id},
                )
            )
        return built


def _confirmation_refused(spec: ToolDefinition, given: Mapping[str, Any]) -> str:
    target = ", ".join(f"{k}={given[k]!r}" for k in spec.path_parameters if k in given)
    return (
        f"{spec.name} was refused: {CONFIRM_PARAMETER} {given.get(CONFIRM_PARAMETER)!r} does not equal clusterTag "
        f"{given.get('clusterTag')!r}, so nothing was deleted. Ask the user to confirm ({spec.title.lower()}: "
        f"{target}) by typing the cluster tag, then call {spec.name} again with {CONFIRM_PARAMETER} set to exactly "
        "what they typed."
    )
