"""What every route module shares: the request's runtime, the answers and the OpenAPI responses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header, Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from instantstart.models.cluster import ClusterTag
from instantstart.models.errors import ErrorResponse, pattern_rule
from instantstart.models.operation import OperationView
from instantstart.runtime import Runtime

_REQUEST: ContextVar[tuple[Runtime, Any]] = ContextVar("api_request")
"""The runtime and idempotency records of the request being served (:func:`serving`)."""


IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9._:-]+$"
IDEMPOTENCY_KEY_RULE = "letters, digits, '.', '_', ':' or '-' only (e.g. a UUID)"
"""The Idempotency-Key pattern in words."""

ClusterTagPath = Annotated[ClusterTag, Path(alias="clusterTag")]
"""The ``clusterTag`` path parameter of every route under ``/clusters/{clusterTag}``."""

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=128,
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Optional: the same key with the same body returns the same operation; "
        "with a different body the answer is 409.",
        examples=["3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c"],
        json_schema_extra=pattern_rule(IDEMPOTENCY_KEY_RULE),
    ),
]


@contextmanager
def serving(runtime: Runtime, idempotency: Any) -> Iterator[None]:
    """Give the routes this request's runtime and idempotency records (built at cold start) while it is served.

    A context variable, not the resolver's context: the route modules are imported after the handler, once per
    process, and must read the dependencies of the handler that serves the request.
    """
    token = _REQUEST.set((runtime, idempotency))
    try:
        yield
    finally:
        _REQUEST.reset(token)


def runtime() -> Runtime:
    """The runtime of the request being served."""
    return _REQUEST.get()[0]


def idempotency() -> Any:
    """The ``api_idempotency.Idempotency`` of the request being served."""
    return _REQUEST.get()[1]


def _json(model: BaseModel, status: int = 200, headers: dict[str, str] | None = None) -> Response[Any]:
    # Powertools validates the body against the route's response model and serialises it by alias.
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=model, headers=headers)


def _accepted(op: OperationView) -> Response[Any]:
    return _json(op, 202, {"Location": op.status_url})


def written_operation(operation_id: str) -> dict[str, Any] | None:
    """The view of operation ``operation_id`` as the API answers it, or None when it was never written: what a
    request whose invocation died answered, found by the operation id it reserved (``api_idempotency``)."""
    from instantstart.clusters import service
    from instantstart.errors import NotFound

    try:
        return service.get_operation(runtime(), operation_id).to_api()
    except NotFound:
        return None


def _idempotent(route: str, key: str | None, body: Any, call: Any) -> Response[Any]:
    """202 with the operation ``call`` starts, once per ``Idempotency-Key`` (a repeat replays the stored answer, or
    after the first invocation died, the operation it wrote)."""
    from api_idempotency import run_idempotent

    op = run_idempotent(idempotency(), route=route, key=key, body=body, call=call, recover=written_operation)
    return _accepted(OperationView.model_validate(op))


def _idempotent_202(
    route: str, key: str | None, body: Any, model: type[BaseModel], call: Any, recover: Any = None
) -> Response[Any]:
    """202 with ``call``'s answer, run once per ``Idempotency-Key`` (a repeat replays the stored answer, or after the
    first invocation died, ``recover(operation_id)``: its answer rebuilt from the operation it wrote)."""
    from api_idempotency import run_idempotent

    answer = run_idempotent(idempotency(), route=route, key=key, body=body, call=call, recover=recover)
    return _json(model.model_validate(answer), 202)


_ERROR_MEANINGS = {
    400: "Malformed request (body not JSON, bad nextToken)",
    404: "Unknown cluster or operation",
    409: "Conflict with the current state (names it)",
    413: "The body is above the route's bound (names the field and the bound), or too large to store "
    "(RequestTooLarge: names the limit and the measured size in bytes); nothing was changed",
    415: "Body is not application/json",
    422: "A field failed validation: each detail names the field and states its rule (range, allowed values, "
    "length, format in words)",
    502: "The AWS service behind the route failed the call (its code and message verbatim)",
    503: "An AWS dependency is unavailable; nothing was changed",
}


def _errors(*codes: int) -> dict[int, OpenAPIResponse]:
    """OpenAPI responses for the error answers of a route (the API's error shape, not Powertools')."""
    return {
        code: {"description": _ERROR_MEANINGS[code], "content": {"application/json": {"model": ErrorResponse}}}
        for code in codes
    }


def _ok(model: type[BaseModel]) -> dict[int, OpenAPIResponse]:
    """The 200 response of a read route."""
    return {200: {"description": "OK", "content": {"application/json": {"model": model}}}}


def accepted_response(model: type[BaseModel]) -> dict[int, OpenAPIResponse]:
    """The 202 response of a route that starts an operation and answers ``model``, and its 413 ``RequestTooLarge``
    (the operation's record, which carries the request, would not fit DynamoDB's item size)."""
    return {
        202: {"description": "Operation accepted", "content": {"application/json": {"model": model}}},
        **_errors(413),
    }


_ACCEPTED: dict[int, OpenAPIResponse] = accepted_response(OperationView)


FACES_EXTENSION = "x-instantstart"
"""The OpenAPI extension of every operation: what the MCP proxy and the CLI build from it (:func:`faces`)."""


def faces(
    tool: str,
    title: str,
    guidance: str,
    *,
    toolset: str,
    cli: str | tuple[str, ...] | None = None,
    no_cli: str | None = None,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = True,
    body: str | None = None,
    confirm: bool = False,
    wrap: str | None = None,
    hand_written: str | None = None,
) -> dict[str, Any]:
    """The ``openapi_extensions`` of a route: ``{"x-instantstart": {"mcp": {...}, "cli": {...}}}``.

    Args:
        tool: the MCP tool that calls the operation, e.g. ``"cluster_create"``.
        title: the tool's title.
        guidance: what an agent reads before calling it (the tool's description).
        toolset: the area the tool belongs to (``clusters``, ``inference``, ...).
        cli: the CLI command(s) that call the operation (``"clusters create"``); or ``no_cli`` with the reason
            the CLI has none.
        read_only: the tool changes nothing (allowed in the proxy's read-only mode); otherwise a write tool.
        destructive: a write that may remove or replace something (MCP ``destructiveHint``).
        idempotent: repeating the call with the same arguments has no further effect (MCP ``idempotentHint``).
        open_world: the tool reaches AWS (MCP ``openWorldHint``).
        body: the tool parameter carrying the whole request body (``"job"``); None: the body's top-level
            properties are the tool's parameters.
        confirm: the tool requires ``confirmClusterTag`` equal to ``clusterTag`` (a typed confirmation).
        wrap: the member under which a JSON-array answer is returned (MCP results are objects).
        hand_written: the tool is not built from the operation but written by hand in the proxy; why.

    Raises:
        ValueError: both or neither of ``cli`` and ``no_cli``, or a read-only tool marked destructive.
    """
    if (cli is None) == (no_cli is None):
        raise ValueError(f"{tool}: give exactly one of cli (the command) and no_cli (why there is none)")
    if read_only and (destructive or idempotent):
        raise ValueError(f"{tool}: a read-only tool carries no destructive or idempotent hint")
    mcp: dict[str, Any] = {
        "tool": tool,
        "title": title,
        "toolset": toolset,
        "guidance": guidance,
        "readOnly": read_only,
        "openWorld": open_world,
    }
    if not read_only:
        mcp.update(destructive=destructive, idempotent=idempotent)
    if body is not None:
        mcp["bodyParameter"] = body
    if confirm:
        mcp["confirmClusterTag"] = True
    if wrap is not None:
        mcp["wrapArray"] = wrap
    if hand_written is not None:
        mcp["handWritten"] = hand_written
    commands = (cli,) if isinstance(cli, str) else cli
    face_cli: dict[str, Any] = {"commands": list(commands)} if commands is not None else {"absent": no_cli}
    return {FACES_EXTENSION: {"mcp": mcp, "cli": face_cli}}


def faces_without_tool(
    reason: str, *, cli: str | tuple[str, ...] | None = None, no_cli: str | None = None
) -> dict[str, Any]:
    """The ``openapi_extensions`` of a route that deliberately has no MCP tool: ``reason`` says why.

    Raises:
        ValueError: an empty reason, or both or neither of ``cli`` and ``no_cli``.
    """
    if not reason.strip():
        raise ValueError("a route without an MCP tool says why")
    if (cli is None) == (no_cli is None):
        raise ValueError("give exactly one of cli (the command) and no_cli (why there is none)")
    commands = (cli,) if isinstance(cli, str) else cli
    face_cli: dict[str, Any] = {"commands": list(commands)} if commands is not None else {"absent": no_cli}
    return {FACES_EXTENSION: {"mcp": {"absent": reason}, "cli": face_cli}}
