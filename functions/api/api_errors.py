"""The one error map of the HTTP API: domain errors and validation failures to ``{"error": ...}`` answers.

Every answer is built from :class:`instantstart.models.errors.ErrorResponse`, the model the OpenAPI
document references. A 422 states each field's rule in the user's terms, derived from the field's own
JSON schema (the route's parameters and body in the OpenAPI document): both bounds of a range, the
allowed values of an enum, a length range, and a pattern's rule in words (``x-patternRule``, set next
to the pattern in the models), never a bare regular expression.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from pydantic.alias_generators import to_camel

from instantstart.errors import (
    BadGateway,
    Conflict,
    InstantStartError,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    UpstreamUnavailable,
    ValidationFailed,
)
from instantstart.models.errors import PATTERN_RULE_KEY, ErrorResponse

STATUS_BY_ERROR: dict[type[InstantStartError], int] = {
    InvalidRequest: 400,
    NotFound: 404,
    Conflict: 409,
    PayloadTooLarge: 413,
    ValidationFailed: 422,
    BadGateway: 502,
    UpstreamUnavailable: 503,
}

_LOCATIONS = ("body", "query", "path", "header")
_CUSTOM_MESSAGE_TYPES = ("value_error", "assertion_error")
_SCHEMA_DETAIL_KEYS = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern")


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, object]:
    """The JSON body ``{"error": {"code", "message", "details"}}`` (validated by :class:`ErrorResponse`)."""
    return ErrorResponse.of(code, message, details).to_api()


def error_response(status: int, code: str, message: str, details: list[dict[str, Any]] | None = None) -> Response[Any]:
    """A JSON error answer ``{"error": {"code", "message", "details"}}``."""
    body = json.dumps(error_body(code, message, details))
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def unsupported_media_type(event: dict[str, Any]) -> dict[str, Any] | None:
    """The 415 answer (API Gateway v2 proxy shape) for a body that is not ``application/json``, else None.

    A missing Content-Type is read as JSON. Checked before routing: Powertools would otherwise parse
    form bodies and answer other types in its own error shape.
    """
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    content_type = headers.get("content-type", "")
    if not event.get("body") or not content_type or content_type.split(";")[0].strip().lower() == "application/json":
        return None
    body = error_body(
        "UnsupportedMediaType",
        f"Content-Type '{content_type}' is not supported; send application/json",
        [{"field": "Content-Type", "allowedValues": ["application/json"]}],
    )
    return {
        "statusCode": 415,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def normalize_media_type(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` with its Content-Type's media type in lower case (media types are case-insensitive, RFC 9110
    8.3.1; Powertools compares ``application/json`` case-sensitively). Parameters such as ``charset`` are kept."""
    headers = event.get("headers")
    if not isinstance(headers, dict):
        return event
    for name, value in headers.items():
        if str(name).lower() == "content-type" and isinstance(value, str):
            media_type, sep, parameters = value.partition(";")
            headers[name] = media_type.strip().lower() + sep + parameters
    return event


def from_unexpected(exc: Exception, request_id: str | None) -> Response[Any]:
    """The answer of an exception no route expected: never a bare 500.

    A transient failure of an AWS or Kubernetes call (throttling, a service's 5xx, a connection error:
    :func:`instantstart.aws.transient.transient_reason`) is 503 ``ServiceUnavailable`` with ``Retry-After``; a
    Powertools ``ServiceError`` keeps its status in the API's error shape; anything else is 500 ``InternalError``
    naming the request id (the id in the function's logs, where the exception is logged).
    """
    from aws_lambda_powertools.event_handler.exceptions import ServiceError

    from instantstart.aws.transient import RETRY_AFTER_SECONDS, transient_reason

    reason = transient_reason(exc)
    if reason is not None:
        answer = error_response(
            503,
            "ServiceUnavailable",
            f"an AWS dependency is unavailable or throttling ({reason}); nothing was changed by this request's "
            f"failed call: retry after {RETRY_AFTER_SECONDS} s",
        )
        answer.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return answer
    if isinstance(exc, ServiceError):
        code = HTTPStatus(exc.status_code).phrase.replace(" ", "") if exc.status_code in _PHRASES else "Error"
        return error_response(exc.status_code, code, str(exc.msg))
    return error_response(
        500, "InternalError", f"the control plane failed unexpectedly (request id {request_id or 'unknown'})"
    )


_PHRASES = {status.value for status in HTTPStatus}


def from_domain_error(exc: InstantStartError) -> Response[Any]:
    """The answer of a domain error (status by its class; 500 only for unexpected errors), with ``Retry-After`` when
    the error names when to retry (``retry_after_seconds``, e.g. 409 ``IdempotencyKeyInProgress``)."""
    status = next((s for cls, s in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 500)
    answer = error_response(status, exc.code, exc.message, exc.details)
    if exc.retry_after_seconds is not None:
        answer.headers["Retry-After"] = str(exc.retry_after_seconds)
    return answer


@dataclass(frozen=True)
class RequestRules:
    """The JSON schemas one route validates, to state a failed field's rule.

    Attributes:
        operation: the route's OpenAPI operation object (``parameters``, ``requestBody``).
        schemas: the document's ``components.schemas`` (targets of ``$ref``).
    """

    operation: Mapping[str, Any] = field(default_factory=dict)
    schemas: Mapping[str, Any] = field(default_factory=dict)

    def resolve(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """``schema`` with its ``$ref`` target and non-null ``anyOf`` branch merged in (its own keys win)."""
        out = dict(schema)
        branches = out.get("anyOf")
        if isinstance(branches, list):
            concrete = [b for b in branches if b.get("type") != "null"]
            if len(concrete) == 1:
                out = {**self.resolve(concrete[0]), **{k: v for k, v in out.items() if k != "anyOf"}}
        ref = out.get("$ref")
        if isinstance(ref, str):
            target = self.schemas.get(ref.rsplit("/", 1)[-1], {})
            out = {**self.resolve(target), **{k: v for k, v in out.items() if k != "$ref"}}
        return out

    def _root(self, loc: Sequence[Any]) -> dict[str, Any] | None:
        if not loc:
            return None
        where = loc[0]
        if where == "body":
            content = self.operation.get("requestBody", {}).get("content", {})
            schema = content.get("application/json", {}).get("schema")
            return self.resolve(schema) if schema else None
        if where in _LOCATIONS and len(loc) > 1:
            name = str(loc[1]).lower()
            for param in self.operation.get("parameters", []):
                if param.get("in") == where and str(param.get("name", "")).lower() == name:
                    return self.resolve(param.get("schema", {}))
        return None

    def user_loc(self, loc: Sequence[Any]) -> tuple[Any, ...]:
        """``loc`` without the tags pydantic adds for a discriminated union (``("body", "pytorch", "name")`` ->
        ``("body", "name")``): the user sent ``{"recipe": "pytorch", "name": ...}``, so the field is ``name``."""
        schema = self._root(loc)
        out: list[Any] = list(loc[:1] if loc and loc[0] == "body" else loc[:2])
        for part in loc[len(out) :]:
            branch = _discriminated_branch(schema, part)
            if branch is not None:
                schema = self.resolve(branch)
                continue
            out.append(part)
            if schema is None:
                continue
            if isinstance(part, int):
                items = schema.get("items")
                schema = self.resolve(items) if isinstance(items, Mapping) else None
            elif isinstance(schema.get("properties"), Mapping):
                prop = schema["properties"].get(part)
                schema = self.resolve(prop) if prop is not None else None
        return tuple(out)

    def schema_at(self, loc: Sequence[Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The resolved schema of the field at a pydantic error ``loc``, and of its parent object.

        Returns:
            ``(field schema, parent schema)``; either is None when the location is not in the document
            (e.g. an unknown body field has no schema but its parent object has).
        """
        schema = self._root(loc)
        parent: dict[str, Any] | None = None
        path = loc[1:] if loc and loc[0] == "body" else loc[2:]
        for part in path:
            if schema is None:
                return None, None
            branch = _discriminated_branch(schema, part)
            if branch is not None:
                schema = self.resolve(branch)
            elif isinstance(part, int):
                items = schema.get("items")
                parent, schema = schema, (self.resolve(items) if isinstance(items, Mapping) else None)
            elif isinstance(schema.get("properties"), Mapping):
                prop = schema["properties"].get(part)
                parent, schema = schema, (self.resolve(prop) if prop is not None else None)
            # other parts (pydantic's union or validator tags) do not move in the schema
        return schema, parent


def _discriminated_branch(schema: Mapping[str, Any] | None, part: Any) -> dict[str, Any] | None:
    """The ``$ref`` of the ``oneOf`` branch a discriminator tag ``part`` names (None: ``part`` is no such tag)."""
    if schema is None or not isinstance(part, str):
        return None
    mapping = (schema.get("discriminator") or {}).get("mapping") or {}
    target = mapping.get(part)
    return {"$ref": target} if isinstance(target, str) else None


def field_name(loc: Sequence[Any]) -> str:
    """The user's name of the field at a pydantic ``loc``: a JSON path into the body, or the parameter name.

    Header names are shown in their usual capitalisation (``Idempotency-Key``).
    """
    if loc and loc[0] == "header" and len(loc) > 1:
        return "-".join(word.capitalize() for word in str(loc[1]).split("-"))
    parts = [p for p in loc if p not in _LOCATIONS]
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            # pydantic names a field validated from its default (validate_default) by its Python name: show the
            # API's camelCase name (API fields are all camelCase, so a snake_case part is always such a name).
            out += ("." if out else "") + (to_camel(p) if isinstance(p, str) and "_" in p else str(p))
    return out or "body"


def _number(value: Any) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else str(number)


def _range(noun: str, low: Any, high: Any, unit: str = "") -> str:
    """``noun`` with its bounds in words (``an integer between 1 and 100``, ``3-24 characters long``)."""
    suffix = f" {unit}" if unit else ""
    if low is not None and high is not None:
        if unit and _number(low) == _number(high):
            return f"{noun}exactly {_number(low)}{suffix}".strip()
        if unit:
            return f"{noun}{_number(low)}-{_number(high)}{suffix}".strip()
        return f"{noun} between {_number(low)} and {_number(high)}"
    of = "" if unit else " of"
    if low is not None:
        return f"{noun}{of} at least {_number(low)}{suffix}".strip()
    if high is not None:
        return f"{noun}{of} at most {_number(high)}{suffix}".strip()
    return noun


def rule_of(schema: Mapping[str, Any]) -> str:
    """The rule of a field in words, from its resolved JSON schema (a phrase completing "<field> must be ...").

    States the allowed values of an enum, both bounds of a number range, the length range of a string,
    the item range of a list and a pattern by its rule in words (never the regular expression).
    """
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "one of: " + ", ".join(str(v) for v in enum)
    kind = schema.get("type")
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        return _range(noun, schema.get("minimum"), schema.get("maximum"))
    if kind == "string":
        words = schema.get(PATTERN_RULE_KEY)
        if not words:
            words = "text in the format the API documentation describes" if "pattern" in schema else "a string"
        length = _range("", schema.get("minLength"), schema.get("maxLength"), "characters long")
        return f"{words}, {length}" if length else str(words)
    if kind == "array":
        items = _range("", schema.get("minItems"), schema.get("maxItems"), "items")
        return f"a list of {items}" if items else "a list"
    if kind == "object":
        return "a JSON object"
    if kind == "boolean":
        return "true or false"
    return ""


def _got(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return f"'{shown}'"
    return "a list" if isinstance(value, list) else "an object"


def _union_tag_detail(error: Mapping[str, Any], rules: RequestRules) -> dict[str, Any] | None:
    """The detail of a missing or unknown discriminator (e.g. ``recipe``), naming the allowed values."""
    loc = tuple(error.get("loc", ()))
    schema, _ = rules.schema_at(loc)
    discriminator = (schema or {}).get("discriminator") or {}
    key, mapping = discriminator.get("propertyName"), discriminator.get("mapping") or {}
    if not isinstance(key, str) or not mapping:
        return None
    name = field_name((*rules.user_loc(loc), key))
    allowed = [str(tag) for tag in mapping]
    if error.get("type") == "union_tag_not_found":
        message = f"{name} is required: one of {', '.join(allowed)}"
    else:
        tag = (error.get("ctx") or {}).get("tag")
        message = f"{name} must be one of {', '.join(allowed)}; got {_got(tag)}"
    return {"field": name, "message": message, "type": str(error.get("type")), "allowedValues": allowed}


def _detail(error: Mapping[str, Any], rules: RequestRules) -> dict[str, Any]:
    loc = tuple(error.get("loc", ()))
    kind = str(error.get("type", ""))
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tagged = _union_tag_detail(error, rules)
        if tagged is not None:
            return tagged
    name = field_name(rules.user_loc(loc))
    schema, parent = rules.schema_at(loc)
    rule = rule_of(schema) if schema else ""
    if kind == "extra_forbidden":
        allowed = sorted((parent or {}).get("properties", {}))
        message = f"{name} is not a field of this request"
        if allowed:
            message += f"; allowed fields: {', '.join(allowed)}"
    elif kind == "missing":
        message = f"{name} is required" + (f": {rule}" if rule else "")
    elif kind in _CUSTOM_MESSAGE_TYPES or not rule:
        # A validator's own message (already in the user's terms), or a field the document does not describe.
        text = str(error.get("msg", "invalid value")).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        message = f"{name}: {text}"
    else:
        message = f"{name} must be {rule}"
        if "input" in error:
            message += f"; got {_got(error['input'])}"
    detail: dict[str, Any] = {"field": name, "message": message, "type": kind}
    if schema:
        if isinstance(schema.get("enum"), list):
            detail["allowedValues"] = [str(v) for v in schema["enum"]]
        for key in _SCHEMA_DETAIL_KEYS:
            if key in schema:
                value = schema[key]
                detail[key] = int(value) if isinstance(value, float) and value.is_integer() else value
    return detail


def from_validation_error(exc: RequestValidationError, rules: RequestRules | None = None) -> Response[Any]:
    """400 for a body that is not JSON (or missing), 422 with one detail per invalid field otherwise.

    Args:
        exc: the request validation failure Powertools raised.
        rules: the schemas of the route (see :class:`RequestRules`); without them the details carry
            the validators' own messages.

    Each 422 detail has ``field``, ``message`` (the field's name and rule in words, and the value sent),
    ``type`` (pydantic's error type) and the machine-readable rule: ``allowedValues``, ``minimum``/``maximum``,
    ``minLength``/``maxLength``, ``minItems``/``maxItems``, ``pattern``.
    """
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "BadRequest", "the request body is not valid JSON")
    if any(e.get("loc") == ("body",) and e.get("type") in ("missing", "model_attributes_type") for e in errors):
        return error_response(400, "BadRequest", "the request body must be a JSON object")
    details = [_detail(e, rules or RequestRules()) for e in errors]
    summary = "; ".join(d["message"] for d in details)
    return error_response(422, "ValidationError", f"invalid request: {summary}", details)
