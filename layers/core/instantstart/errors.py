"""Domain errors. Handlers map them to HTTP answers in one error map; steps raise them to Step Functions.

Every error carries a stable ``code`` and a human ``message``; validation errors carry field details.
"""

from __future__ import annotations

import json
from typing import Any


class InstantStartError(Exception):
    """Base of every domain error.

    Attributes:
        code: stable machine-readable code (e.g. ``ClusterNotFound``).
        message: human-readable message naming the field/resource and, where useful, allowed values.
        details: list of ``{"field": ..., "message": ...}`` dicts.
        retry_after_seconds: when set, the seconds after which a retry may succeed (the answer's ``Retry-After``).
    """

    code = "InternalError"
    retry_after_seconds: int | None = None
    """When set, the answer carries ``Retry-After`` with it (seconds)."""

    def __init__(self, message: str, *, code: str | None = None, details: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details or []


class InvalidRequest(InstantStartError):
    """Malformed request (bad JSON, wrong content): HTTP 400."""

    code = "BadRequest"


class ValidationFailed(InstantStartError):
    """A field failed validation (pattern, range, enum): HTTP 422, details name the fields."""

    code = "ValidationError"


class NotFound(InstantStartError):
    """An unknown cluster, stage or operation: HTTP 404."""

    code = "NotFound"


class Conflict(InstantStartError):
    """The request conflicts with current state (live cluster, running operation): HTTP 409."""

    code = "Conflict"


class UpstreamUnavailable(InstantStartError):
    """An AWS dependency is unavailable or throttling after retries: HTTP 503."""

    code = "ServiceUnavailable"


class StageFailed(Exception):
    """A stage failed with an AWS error code and message, raised from a Step Functions task.

    The Lambda error type seen by Step Functions is the class name, so ``Retry``/``Catch`` can match it;
    the error message is JSON ``{"code", "message"}`` with the AWS code and message verbatim.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(json.dumps({"code": code, "message": message}))
        self.code = code
        self.message = message


class PollTimeout(StageFailed):
    """A bounded poll loop ran out of attempts."""


_AWS_ERROR_TYPES: dict[str, type[StageFailed]] = {}


def aws_error(code: str, message: str, *, name: str | None = None) -> StageFailed:
    """An exception whose class name is the AWS error code (e.g. ``ThrottlingException``).

    Step Functions matches ``Retry.ErrorEquals`` on the Lambda ``errorType``, which is the exception's
    class name, so transient AWS codes can be retried by name and every other code caught verbatim.
    A code that is not an identifier (S3's ``403``) names the class ``AwsError`` but is recorded verbatim.
    ``name`` overrides the class name (a classification such as ``RolePropagationDelay`` for Retry to
    match) while ``code`` and ``message`` stay the AWS ones, recorded verbatim.
    """
    name = name or code
    name = name if name.isidentifier() else "AwsError"
    cls = _AWS_ERROR_TYPES.get(name)
    if cls is None:
        cls = type(name, (StageFailed,), {"__module__": __name__})
        _AWS_ERROR_TYPES[name] = cls
    return cls(code, message)


class PayloadTooLarge(InstantStartError):
    """A body above the route's bound: HTTP 413, details name the field and the bound."""

    code = "PayloadTooLarge"


class BadGateway(InstantStartError):
    """An AWS service behind the route failed the call (e.g. the model's own error): HTTP 502, message verbatim."""

    code = "BadGateway"
