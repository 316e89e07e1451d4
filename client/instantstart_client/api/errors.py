"""The errors the client raises: configuration, connection (and time bound), and the API's own error answers."""

from __future__ import annotations

from typing import Any, cast

import httpx2

from instantstart_client.shapes import ErrorDetail, ErrorResponse

RETRYABLE_STATUSES = frozenset({429, 503})
"""HTTP statuses retried with backoff: throttled and upstream unavailable (design, section 3)."""
RETRYABLE_CODES = frozenset({"IdempotencyKeyInProgress"})
"""Error codes retried whatever the status: a 409 saying the first request with this key is still
running (an earlier attempt of ours that timed out on the wire); the retry then replays its result."""


class InstantStartClientError(Exception):
    """Base of every error this client raises."""


class ConfigurationError(InstantStartClientError):
    """The API URL, the region or AWS credentials could not be determined."""


class ApiConnectionError(InstantStartClientError):
    """The API could not be reached (DNS, connect, TLS, timeout), after retries.

    Attributes:
        method: HTTP method of the request.
        url: URL of the request.
    """

    def __init__(self, message: str, *, method: str, url: str) -> None:
        super().__init__(message)
        self.message = message
        self.method = method
        self.url = url


class ApiTimeoutError(ApiConnectionError):
    """The API did not answer within the time bound of :meth:`InstantStartClient.time_bound`.

    Attributes:
        budget: the bound in seconds.
    """

    def __init__(self, budget: float, *, method: str, url: str) -> None:
        super().__init__(f"the API did not answer within {budget:g} s ({method} {url})", method=method, url=url)
        self.budget = budget


class ApiError(InstantStartClientError):
    """The API answered with a non-2xx status.

    Attributes:
        status: HTTP status (400, 404, 409, 422, 429, 503, or 403 from API Gateway's IAM check).
        code: ``error.code`` of the body (e.g. ``ValidationError``, ``NotFound``, ``Conflict``); for
            bodies without the API error shape (API Gateway's own ``{"message": ...}``), the HTTP
            reason phrase without spaces (``Forbidden``).
        message: ``error.message`` (names the field and the allowed values), or the raw message.
        details: ``error.details``: list of ``{"field", "message", ...}`` dicts (may be empty).
        body: the parsed JSON body (dict/list), or the raw text when the body is not JSON.
        retry_after: seconds from a ``Retry-After`` header, when the server sent one.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
        body: Any = None,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.body = body
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """True for answers worth retrying: 429, 503, and 409 ``IdempotencyKeyInProgress``."""
        return self.status in RETRYABLE_STATUSES or self.code in RETRYABLE_CODES

    def error_response(self) -> ErrorResponse:
        """The answer's body in the API's error shape (``shapes.ErrorResponse``).

        The API's own ``{"error": {...}}`` body is returned verbatim; any other body (API Gateway's own
        ``{"message": "Forbidden"}``, a non-JSON answer) is given that shape from the parsed ``code``,
        ``message`` and ``details`` (the code is the HTTP reason phrase, so the status stays readable).
        """
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            return cast(ErrorResponse, self.body)
        details = [cast(ErrorDetail, d) for d in self.details]
        return {"error": {"code": self.code, "message": self.message, "details": details}}

    @classmethod
    def from_response(cls, response: httpx2.Response) -> ApiError:
        """Build the error of a non-2xx ``response``, tolerating bodies that are not the API's shape."""
        status = response.status_code
        fallback_code = httpx2.codes.get_reason_phrase(status).replace(" ", "").replace("-", "") or (f"Http{status}")
        body: Any
        try:
            body = response.json()
        except ValueError:
            body = response.text
        code, message, details = fallback_code, "", []
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            err = body["error"]
            code = str(err.get("code") or fallback_code)
            message = str(err.get("message") or "")
            raw_details = err.get("details") or []
            details = [d for d in raw_details if isinstance(d, dict)] if isinstance(raw_details, list) else []
        elif isinstance(body, dict) and isinstance(body.get("message"), str):
            message = body["message"]  # API Gateway's own answers: {"message": "Forbidden"}
        elif isinstance(body, str):
            message = body.strip()[:500]
        return cls(
            status,
            code,
            message or httpx2.codes.get_reason_phrase(status),
            details,
            body,
            retry_after=_retry_after_seconds(response.headers.get("retry-after")),
        )


def _retry_after_seconds(value: str | None) -> float | None:
    """Seconds of a numeric ``Retry-After`` header (HTTP dates are ignored), or None."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiTimeoutError):  # the time bound ran out: another attempt would pass it
        return False
    return isinstance(exc, ApiConnectionError) or (isinstance(exc, ApiError) and exc.transient)
