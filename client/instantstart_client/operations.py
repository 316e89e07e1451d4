"""The operations of the HTTP API, read from the OpenAPI document the client package ships.

``instantstart_client/openapi.json`` is a copy of ``api_schema/openapi.json`` that ``make openapi`` writes (and
``api_schema/generate.py --check`` holds equal to the routes). It is loaded once, on first use, with
:mod:`importlib.resources`, so the client calls every operation by its ``operationId`` without importing the core.

Example::

    op = operation("ListClusterEvents")
    op.method, op.path            # "GET", "/clusters/{clusterTag}/events"
    op.bind({"clusterTag": "demo", "maxResults": 20})
    # -> ("/clusters/demo/events", {"maxResults": 20})
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

DOCUMENT_RESOURCE = "openapi.json"
"""The document's file name inside the ``instantstart_client`` package."""
IDEMPOTENCY_HEADER = "Idempotency-Key"
EXTENSION = "x-instantstart"
"""The vendor extension an operation may carry (read through :attr:`Operation.extension`)."""

_HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_TEMPLATE_PARAMETER = re.compile(r"\{([^{}/]+)\}")


class UnknownOperationError(KeyError):
    """No operation of the API has this ``operationId`` (a :class:`KeyError` whose message lists the known ids)."""

    def __init__(self, operation_id: str, known: list[str]) -> None:
        super().__init__(operation_id)
        self.operation_id = operation_id
        self.message = f"unknown operation {operation_id!r}; the API's operations are: {', '.join(sorted(known))}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class QueryParameter:
    """One query parameter of an operation: its OpenAPI name, whether it is required, the server's default."""

    name: str
    required: bool
    default: Any = None


def quote_segment(value: object) -> str:
    """``value`` as one path segment: every reserved character percent-encoded (``/`` too), ``.``/``..`` as ``%2E``.

    The segment can never change the route: a ``/`` cannot split it and a dot segment cannot climb a level (HTTP
    clients remove ``.`` and ``..`` segments before sending).

    Raises:
        ValueError: ``value`` is empty (the route would change to its parent).
    """
    text = str(value)
    if not text:
        raise ValueError("a path parameter cannot be empty")
    quoted = quote(text, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


@dataclass(frozen=True)
class Operation:
    """One operation of the API document.

    Attributes:
        operation_id: its ``operationId``, e.g. ``"GetCluster"``.
        method: HTTP method, upper case.
        path: path template, e.g. ``"/clusters/{clusterTag}"``.
        path_parameters: names of the template's parameters, in path order.
        query_parameters: the query parameters the operation declares.
        takes_body: it declares a JSON ``requestBody``.
        body_required: that body is required.
        accepts_idempotency_key: it declares the ``Idempotency-Key`` header.
        raw: the operation object of the document as is (``x-instantstart`` included when present).
    """

    operation_id: str
    method: str
    path: str
    path_parameters: tuple[str, ...]
    query_parameters: tuple[QueryParameter, ...]
    takes_body: bool
    body_required: bool
    accepts_idempotency_key: bool
    raw: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def extension(self) -> Mapping[str, Any]:
        """The operation's ``x-instantstart`` extension (empty when it has none)."""
        value = self.raw.get(EXTENSION)
        return value if isinstance(value, Mapping) else {}

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Every argument name :meth:`bind` accepts: the path parameters, then the query parameters."""
        return self.path_parameters + tuple(q.name for q in self.query_parameters)

    def bind(self, arguments: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """The request path and query of a call with ``arguments`` (path and query parameters by OpenAPI name).

        Path parameters are quoted with :func:`quote_segment`; query parameters whose value is None are left out
        (the server applies its default).

        Returns:
            ``(path, query)``, e.g. ``("/clusters/demo/events", {"maxResults": 20})``.

        Raises:
            ValueError: an argument the operation does not declare (names it and the allowed names), or a path
                parameter missing, None or empty.
        """
        given = dict(arguments or {})
        allowed = self.parameter_names
        unknown = sorted(name for name in given if name not in allowed)
        if unknown:
            raise ValueError(
                f"{self.operation_id} has no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters are: {', '.join(allowed) or '(none)'}"
            )
        missing = [name for name in self.path_parameters if given.get(name) is None]
        if missing:
            raise ValueError(f"{self.operation_id} requires the path parameter(s) {', '.join(missing)}")
        try:
            path = _TEMPLATE_PARAMETER.sub(lambda m: quote_segment(given[m.group(1)]), self.path)
        except ValueError as exc:
            raise ValueError(f"{self.operation_id}: {exc}") from exc
        query = {q.name: given[q.name] for q in self.query_parameters if given.get(q.name) is not None}
        return path, query


def _parse(method: str, path: str, raw: Mapping[str, Any]) -> Operation:
    parameters = [p for p in raw.get("parameters") or [] if isinstance(p, Mapping)]
    by_place: dict[str, list[Mapping[str, Any]]] = {}
    for parameter in parameters:
        by_place.setdefault(str(parameter.get("in")), []).append(parameter)
    query = tuple(
        QueryParameter(
            name=str(p["name"]),
            required=bool(p.get("required", False)),
            default=(p.get("schema") or {}).get("default"),
        )
        for p in by_place.get("query", [])
    )
    headers = {str(p.get("name", "")).lower() for p in by_place.get("header", [])}
    body = raw.get("requestBody")
    return Operation(
        operation_id=str(raw["operationId"]),
        method=method.upper(),
        path=path,
        path_parameters=tuple(_TEMPLATE_PARAMETER.findall(path)),
        query_parameters=query,
        takes_body=isinstance(body, Mapping),
        body_required=isinstance(body, Mapping) and bool(body.get("required", False)),
        accepts_idempotency_key=IDEMPOTENCY_HEADER.lower() in headers,
        raw=MappingProxyType(dict(raw)),
    )


@functools.cache
def document() -> Mapping[str, Any]:
    """The OpenAPI document the package ships (parsed once; do not mutate it)."""
    text = resources.files("instantstart_client").joinpath(DOCUMENT_RESOURCE).read_text(encoding="utf-8")
    return MappingProxyType(json.loads(text))


@functools.cache
def operations() -> Mapping[str, Operation]:
    """Every operation of the shipped document by ``operationId`` (read-only; built once).

    Raises:
        ValueError: two operations of the document share an ``operationId``.
    """
    found: dict[str, Operation] = {}
    for path, item in (document().get("paths") or {}).items():
        for method in _HTTP_METHODS:
            raw = item.get(method)
            if not isinstance(raw, Mapping) or "operationId" not in raw:
                continue
            op = _parse(method, path, raw)
            if op.operation_id in found:
                raise ValueError(f"operationId {op.operation_id!r} is used twice in {DOCUMENT_RESOURCE}")
            found[op.operation_id] = op
    return MappingProxyType(found)


def operation(operation_id: str) -> Operation:
    """The operation with this ``operationId``.

    Raises:
        UnknownOperationError: (a :class:`KeyError`) no operation has this id; the message lists the known ones.
    """
    ops = operations()
    try:
        return ops[operation_id]
    except KeyError:
        raise UnknownOperationError(operation_id, list(ops)) from None
