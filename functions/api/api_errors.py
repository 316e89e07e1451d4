"""The one error map of the HTTP API: domain errors and validation failures to ``{"error": ...}`` answers."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from instantstart.errors import (
    Conflict,
    InstantStartError,
    InvalidRequest,
    NotFound,
    UpstreamUnavailable,
    ValidationFailed,
)
from instantstart.models.cluster import CLUSTER_TAG_RULE

STATUS_BY_ERROR: dict[type[InstantStartError], int] = {
    InvalidRequest: 400,
    NotFound: 404,
    Conflict: 409,
    ValidationFailed: 422,
    UpstreamUnavailable: 503,
}


def error_response(status: int, code: str, message: str, details: list[dict[str, Any]] | None = None) -> Response[Any]:
    """A JSON error answer ``{"error": {"code", "message", "details"}}``."""
    body = {"error": {"code": code, "message": message, "details": details or []}}
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=json.dumps(body))


def unsupported_media_type(event: dict[str, Any]) -> dict[str, Any] | None:
    """The 415 answer (API Gateway v2 proxy shape) for a body that is not ``application/json``, else None.

    A missing Content-Type is read as JSON. Checked before routing: Powertools would otherwise parse
    form bodies and answer other types in its own error shape.
    """
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    content_type = headers.get("content-type", "")
    if not event.get("body") or not content_type or content_type.split(";")[0].strip().lower() == "application/json":
        return None
    body = {
        "error": {
            "code": "UnsupportedMediaType",
            "message": f"Content-Type '{content_type}' is not supported; send application/json",
            "details": [{"field": "Content-Type", "allowedValues": ["application/json"]}],
        }
    }
    return {
        "statusCode": 415,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def from_domain_error(exc: InstantStartError) -> Response[Any]:
    """The answer of a domain error (status by its class; 500 only for unexpected errors)."""
    status = next((s for cls, s in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 500)
    return error_response(status, exc.code, exc.message, exc.details)


_TAG_ERRORS = ("string_pattern_mismatch", "string_too_short", "string_too_long")


def _field(loc: tuple[Any, ...]) -> str:
    parts = [p for p in loc if p not in ("body", "query", "path", "header")]
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "body"


def from_validation_error(exc: RequestValidationError) -> Response[Any]:
    """400 for a body that is not JSON (or missing), 422 with one detail per invalid field otherwise."""
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "BadRequest", "the request body is not valid JSON")
    if any(e.get("loc") == ("body",) and e.get("type") in ("missing", "model_attributes_type") for e in errors):
        return error_response(400, "BadRequest", "the request body must be a JSON object")
    details = []
    for e in errors:
        message = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
        field = _field(tuple(e.get("loc", ())))
        if field == "clusterTag" and e.get("type") in (
            "string_pattern_mismatch",
            "string_too_short",
            "string_too_long",
        ):
            message = f"clusterTag must be {CLUSTER_TAG_RULE}"
        detail: dict[str, Any] = {"field": field, "message": message, "type": e.get("type")}
        ctx = e.get("ctx") or {}
        if "expected" in ctx:
            detail["allowedValues"] = str(ctx["expected"])
        if "pattern" in ctx:
            detail["pattern"] = str(ctx["pattern"])
        details.append(detail)
    summary = "; ".join(f"{d['field']}: {d['message']}" for d in details)
    return error_response(422, "ValidationError", f"invalid request: {summary}", details)
