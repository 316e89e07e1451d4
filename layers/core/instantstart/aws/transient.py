"""The one list of transient failures: what is worth retrying, and what the API answers 503 for.

Used by the Step Functions builder (``statemachines/build.py``: the ``Retry`` of every task) and by the HTTP API
(``functions/api/api_errors.py``: a transient failure of any AWS or Kubernetes call in a route is 503
``ServiceUnavailable`` with ``Retry-After``, never a bare 500).
"""

from __future__ import annotations

from typing import Final

TRANSIENT_ERROR_CODES: Final[tuple[str, ...]] = (
    "ThrottlingException",
    "Throttling",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "SlowDown",
    "ThrottledException",
    "RequestThrottledException",
    "RequestThrottled",
    "PriorRequestNotComplete",
    "ProvisionedThroughputExceededException",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "InternalServerError",
    "InternalFailure",
    "ServerException",
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "KubernetesServiceUnavailable",
    "KubernetesTooManyRequests",
    "KubernetesInternalServerError",
    # DynamoDB: a transaction cancelled for a conflicting write (not a failed condition, which the store
    # raises as ConditionFailed) or TransactWriteItems' own conflict error
    "TransactionConflictException",
    "TransactionCanceledException",
)
"""AWS error codes, botocore exception names and the Kubernetes classifications (``Kubernetes<Reason>``) that a
retry may cure: throttling, a service's own 5xx, a connection that failed or timed out, a conflicting transaction."""

TRANSIENT_HTTP_STATUSES: Final[frozenset[int]] = frozenset({429, 500, 502, 503, 504})
"""HTTP statuses of an AWS or Kubernetes answer that a retry may cure."""

RETRY_AFTER_SECONDS: Final[int] = 5
"""The ``Retry-After`` of the API's 503 answers: seconds a caller waits before trying again."""

_CONNECTION_ERRORS: Final[frozenset[str]] = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
        "ProxyConnectionError",
        "SSLError",
        "HTTPClientError",
    }
)
"""botocore exceptions of a request that did not get an answer (the class names: botocore is not imported)."""


def transient_reason(exc: BaseException) -> str | None:
    """Why ``exc`` is transient (its AWS code, botocore exception name or Kubernetes status), else ``None``.

    ``exc``: a botocore ``ClientError`` (its ``Error.Code`` or HTTP status), a botocore connection error, or a
    Kubernetes ``ApiException`` (its ``status``); nothing is imported, so a caller pays for neither library.
    """
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = str(response.get("Error", {}).get("Code") or "")
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in TRANSIENT_ERROR_CODES:
            return code
        if isinstance(status, int) and status in TRANSIENT_HTTP_STATUSES:
            return f"{code or 'HTTP'} {status}"
        return None
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _CONNECTION_ERRORS:
        return type(exc).__name__
    module = type(exc).__module__ or ""
    status = getattr(exc, "status", None)
    if module.startswith("kubernetes") and isinstance(status, int) and status in TRANSIENT_HTTP_STATUSES:
        return f"Kubernetes {status}"
    return None
