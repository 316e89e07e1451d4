"""SigV4-signed HTTP client of the InstantStart API (API Gateway HTTP API with ``AWS_IAM`` auth).

Every request is signed for the ``execute-api`` service with the botocore credential chain
(environment, shared config/credentials files, SSO, container and instance metadata), sent with
``httpx2`` and answered as parsed JSON. Non-2xx answers raise :class:`ApiError` carrying the API's
``{"error": {"code", "message", "details"}}`` body. Throttling (429), ``503`` and connection errors
are retried with exponential backoff and full jitter; every attempt is signed again (fresh
``X-Amz-Date``) and POST/DELETE attempts carry the same ``Idempotency-Key``, so a retried create
never starts a second operation. :meth:`InstantStartClient.time_bound` bounds the total time of
every request inside it (attempts and backoff waits share one deadline; the MCP proxy uses it so a
tool call answers before MCP clients time it out).

The CLI, the demo and the MCP proxy all use this one client.

The package: ``transport`` (URL, region, signing, sending, retries, time bounds: ``ApiTransport``), ``errors``,
``operations`` (``OperationsApi.call_operation``: a call by ``operationId`` of the OpenAPI document the package
ships, read by :mod:`instantstart_client.operations`), and one mixin of route methods per area (``clusters``,
``groups``, ``nodes``, ``training``, ``inference``, ``governance``), each method a call by operation id, combined
into :class:`InstantStartClient` in ``client``. Import everything from here.
"""

from __future__ import annotations

from instantstart_client.api.client import InstantStartClient
from instantstart_client.api.errors import (
    RETRYABLE_CODES,
    RETRYABLE_STATUSES,
    ApiConnectionError,
    ApiError,
    ApiTimeoutError,
    ConfigurationError,
    InstantStartClientError,
)
from instantstart_client.api.operations import OperationsApi
from instantstart_client.api.transport import (
    API_URL_ENV,
    REGION_ENV,
    SIGNING_SERVICE,
    ApiTransport,
    region_from_api_url,
)
from instantstart_client.operations import UnknownOperationError, operation, operations

__all__ = [
    "API_URL_ENV",
    "REGION_ENV",
    "RETRYABLE_CODES",
    "RETRYABLE_STATUSES",
    "SIGNING_SERVICE",
    "ApiConnectionError",
    "ApiError",
    "ApiTimeoutError",
    "ApiTransport",
    "ConfigurationError",
    "InstantStartClient",
    "InstantStartClientError",
    "OperationsApi",
    "UnknownOperationError",
    "operation",
    "operations",
    "region_from_api_url",
]
