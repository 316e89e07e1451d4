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
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast
from urllib.parse import quote, urlsplit

import botocore.session
import httpx2
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.stop import stop_base

from instantstart_client import __version__
from instantstart_client.shapes import (
    AutoScaling,
    AvailabilityZone,
    Cluster,
    ClusterEventPage,
    ClusterNodePage,
    ClusterPage,
    ClusterSummary,
    ErrorDetail,
    ErrorResponse,
    HyperPodOperation,
    HyperPodOperationPage,
    InstanceGroupList,
    InstanceGroupSpec,
    Operation,
    OperationPage,
    Stage,
    TrainingPlan,
    TrainingPlanOffering,
)

log = logging.getLogger(__name__)

API_URL_ENV = "INSTANTSTART_API_URL"
REGION_ENV = "AWS_REGION"
SIGNING_SERVICE = "execute-api"
RETRYABLE_STATUSES = frozenset({429, 503})
"""HTTP statuses retried with backoff: throttled and upstream unavailable (design, section 3)."""
RETRYABLE_CODES = frozenset({"IdempotencyKeyInProgress"})
"""Error codes retried whatever the status: a 409 saying the first request with this key is still
running (an earlier attempt of ours that timed out on the wire); the retry then replays its result."""

_EXECUTE_API_HOST = re.compile(r"\.execute-api\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?$")
_QUERY_SAFE = "-_.~"
"""Characters SigV4 leaves unencoded; encoding the rest ourselves makes the sent query canonical."""


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


def region_from_api_url(api_url: str) -> str | None:
    """The region of an ``https://{id}.execute-api.{region}.amazonaws.com`` URL, or None for others."""
    host = urlsplit(api_url).hostname or ""
    match = _EXECUTE_API_HOST.search(host)
    return match.group(1) if match else None


class InstantStartClient:
    """Client of the InstantStart HTTP API; one method per route.

    Args:
        api_url: base URL of the API (``https://{id}.execute-api.{region}.amazonaws.com`` plus a stage
            path if the API has one); default ``$INSTANTSTART_API_URL``.
        region: signing region; default ``$AWS_REGION``, else the region in an execute-api host name,
            else the botocore session's region (``AWS_DEFAULT_REGION``, profile).
        session: botocore session whose credential chain signs requests (default: a new session,
            honouring ``AWS_PROFILE`` and the usual environment variables).
        timeout: seconds for connect/read/write of one attempt.
        max_attempts: attempts per request for 429, 503, 409 IdempotencyKeyInProgress and connection
            errors (1 disables retries).
        backoff_initial: seconds of the first backoff window; windows double per attempt (full jitter).
        backoff_max: ceiling of one backoff wait in seconds (also caps ``Retry-After``).
        transport: an ``httpx2`` transport (tests, proxies); default: the standard HTTP transport.
        sleep: the function that waits between attempts (default ``time.sleep``).

    Raises:
        ConfigurationError: no API URL or no region could be determined.

    Credentials are resolved on the first request (so ``--help`` and argument errors need none) and
    raise :class:`ConfigurationError` when the chain finds nothing.
    """

    def __init__(
        self,
        api_url: str | None = None,
        region: str | None = None,
        session: botocore.session.Session | None = None,
        timeout: float = 30,
        *,
        max_attempts: int = 5,
        backoff_initial: float = 0.5,
        backoff_max: float = 20.0,
        transport: httpx2.BaseTransport | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        url = (api_url or os.environ.get(API_URL_ENV) or "").strip()
        if not url:
            raise ConfigurationError(f"no API URL: pass --api-url / api_url or set {API_URL_ENV}")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigurationError(f"API URL must be an http(s) URL, got {url!r}")
        self._base = url.rstrip("/")
        self._session = session or botocore.session.Session()
        resolved_region = (
            region
            or os.environ.get(REGION_ENV)
            or region_from_api_url(url)
            or self._session.get_config_variable("region")
        )
        if not resolved_region:
            raise ConfigurationError(
                f"no AWS region: pass --region / region, set {REGION_ENV}, or use an execute-api URL"
            )
        self._region: str = str(resolved_region)
        self._credentials: Credentials | None = None
        self._max_attempts = max(1, max_attempts)
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._sleep: Callable[[float], None] = sleep or time.sleep
        self._timeout = timeout
        self._bound = threading.local()  # .deadline (time.monotonic()) and .budget of time_bound, per thread
        self._http = httpx2.Client(
            timeout=timeout,
            transport=transport,
            headers={"User-Agent": f"instantstart-client/{__version__}"},
            follow_redirects=False,
        )

    # -- plumbing ---------------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        """Base URL requests are sent to (no trailing slash)."""
        return self._base

    @property
    def region(self) -> str:
        """Region requests are signed for."""
        return self._region

    def close(self) -> None:
        """Close the underlying HTTP connection pool."""
        self._http.close()

    def __enter__(self) -> InstantStartClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _resolve_credentials(self) -> Credentials:
        if self._credentials is None:
            creds = self._session.get_credentials()
            if creds is None:
                raise ConfigurationError(
                    "no AWS credentials found (environment, shared credentials/config files, SSO, "
                    "container or instance metadata); configure credentials allowed to call execute-api"
                )
            self._credentials = creds
        return self._credentials

    def _url(self, path: str, params: Mapping[str, object | None] | None) -> str:
        url = self._base + path
        if params:
            pairs = sorted(
                (quote(str(k), safe=_QUERY_SAFE), quote(str(v), safe=_QUERY_SAFE))
                for k, v in params.items()
                if v is not None
            )
            if pairs:
                url += "?" + "&".join(f"{k}={v}" for k, v in pairs)
        return url

    @contextlib.contextmanager
    def time_bound(self, seconds: float) -> Iterator[None]:
        """Bound the total time of every request made inside the block (this thread) to ``seconds``.

        The requests share one deadline: each attempt's read timeout is at most the time left, no
        backoff wait runs past it, and a request the deadline cuts short raises
        :class:`ApiTimeoutError` (an :class:`ApiConnectionError`). A nested bound never extends an outer one.

        Raises:
            ValueError: ``seconds`` is not positive.
        """
        if seconds <= 0:
            raise ValueError("seconds must be > 0")
        outer = getattr(self._bound, "deadline", None), getattr(self._bound, "budget", None)
        deadline = time.monotonic() + seconds
        if outer[0] is None or deadline < outer[0]:
            self._bound.deadline, self._bound.budget = deadline, seconds
        try:
            yield
        finally:
            self._bound.deadline, self._bound.budget = outer

    def _remaining(self) -> float | None:
        """Seconds left of the current :meth:`time_bound` (None: no bound)."""
        deadline = getattr(self._bound, "deadline", None)
        return None if deadline is None else deadline - time.monotonic()

    def _wait(self, state: RetryCallState) -> float:
        """Full-jitter exponential backoff, at least the server's ``Retry-After`` (capped)."""
        window = min(self._backoff_max, self._backoff_initial * 2 ** (state.attempt_number - 1))
        wait = random.uniform(0, window)
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ApiError) and exc.retry_after is not None:
            wait = max(wait, min(exc.retry_after, self._backoff_max))
        return wait

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.info("attempt %d failed (%s); retrying in %.2fs", state.attempt_number, exc, wait)

    def _send_once(self, method: str, url: str, data: bytes, headers: Mapping[str, str]) -> httpx2.Response:
        """Sign and send one attempt; map transport failures to :class:`ApiConnectionError`."""
        creds = self._resolve_credentials().get_frozen_credentials()
        aws_request = AWSRequest(method=method, url=url, data=data, headers=dict(headers))
        SigV4Auth(creds, SIGNING_SERVICE, self._region).add_auth(aws_request)
        remaining = self._remaining()
        timeout = self._timeout if remaining is None else min(self._timeout, remaining)
        if timeout <= 0:
            raise ApiTimeoutError(self._bound.budget, method=method, url=url)
        try:
            response = self._http.request(
                method, url, headers=dict(aws_request.headers.items()), content=data or None, timeout=timeout
            )
        except httpx2.TimeoutException as exc:
            if remaining is not None and timeout >= remaining:
                raise ApiTimeoutError(self._bound.budget, method=method, url=url) from exc
            raise ApiConnectionError(
                f"cannot reach {url}: {type(exc).__name__}: {exc}", method=method, url=url
            ) from exc
        except httpx2.TransportError as exc:
            raise ApiConnectionError(
                f"cannot reach {url}: {type(exc).__name__}: {exc}", method=method, url=url
            ) from exc
        if not response.is_success:
            raise ApiError.from_response(response)
        return response

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, object | None] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one signed request (retrying transient failures) and return the parsed JSON body.

        Args:
            method: HTTP method.
            path: path below the API URL, starting with ``/``; segments already percent-encoded.
            params: query parameters; None values are left out.
            body: JSON-serialisable body, or None for no body.
            headers: extra headers (they are signed).

        Returns:
            The parsed JSON of a 2xx answer, or None for an empty body.

        Raises:
            ApiError: non-2xx answer (after retries for 429/503).
            ApiConnectionError: the API could not be reached after retries.
            ApiTimeoutError: the :meth:`time_bound` ran out before an answer.
            ConfigurationError: no AWS credentials.
        """
        url = self._url(path, params)
        send_headers = {"Accept": "application/json"}
        data = b""
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            send_headers["Content-Type"] = "application/json"
        send_headers.update(headers or {})
        remaining = self._remaining()
        stop: stop_base = stop_after_attempt(self._max_attempts)
        if remaining is not None:  # no backoff wait that ends past the deadline
            stop = stop | stop_before_delay(max(0.0, remaining))
        retrying = Retrying(
            stop=stop,
            wait=self._wait,
            retry=retry_if_exception(_is_transient),
            before_sleep=self._log_retry,
            reraise=True,
            sleep=self._sleep,
        )
        response = retrying(self._send_once, method, url, data, send_headers)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ApiError(
                response.status_code,
                "InvalidResponse",
                f"{method} {path} answered {response.status_code} with a body that is not JSON",
                body=response.text,
            ) from exc

    @staticmethod
    def _segment(value: str) -> str:
        return quote(value, safe="")

    @staticmethod
    def _idempotency_headers(key: str | None) -> dict[str, str]:
        # A key per call even when the caller gave none: retries of this call are then deduplicated
        # by the server instead of starting a second operation.
        return {"Idempotency-Key": key or str(uuid.uuid4())}

    # -- routes -----------------------------------------------------------------------------------

    def list_clusters(self, max_results: int | None = None, next_token: str | None = None) -> ClusterPage:
        """``GET /clusters``: one page of clusters.

        Returns:
            ``{"clusters": [ClusterSummary], "nextToken": str | None}``; ClusterSummary is
            ``{clusterTag, status, availabilityZone, createdAt, updatedAt, eksClusterName,
            hyperPodClusterName}``.

        Raises:
            ApiError: 422 for an out-of-range ``maxResults`` or a bad ``nextToken``.
        """
        page = self.request("GET", "/clusters", params={"maxResults": max_results, "nextToken": next_token})
        return cast(ClusterPage, page)

    def iter_clusters(self, page_size: int | None = None) -> Iterator[ClusterSummary]:
        """Every cluster, following ``nextToken`` page by page (lazily).

        Raises:
            ApiError: as :meth:`list_clusters`; also ``InvalidResponse`` if the server repeats a token.
        """
        token: str | None = None
        seen: set[str] = set()
        while True:
            page = self.list_clusters(max_results=page_size, next_token=token)
            yield from page.get("clusters") or []
            token = page.get("nextToken")
            if not token:
                return
            if token in seen:
                raise ApiError(200, "InvalidResponse", f"GET /clusters repeated nextToken {token!r}")
            seen.add(token)

    def create_cluster(
        self,
        cluster_tag: str,
        availability_zone: str,
        instance_groups: Sequence[InstanceGroupSpec],
        *,
        kubernetes_version: str | None = None,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``POST /clusters``: start creating a cluster (stages network → ... → verify).

        Args:
            cluster_tag: the cluster's tag (names ``eks-cluster-<tag>``, ``hp-cluster-<tag>``).
            availability_zone: zone of the HyperPod compute subnet, e.g. ``us-west-2c``.
            instance_groups: ``[{"instanceGroupName", "instanceType", "instanceCount", "capacityType"}]``.
            kubernetes_version: EKS version (server default when None).
            idempotency_key: ``Idempotency-Key``; the same key and body returns the same operation
                (generated per call when None, which still makes this call's retries safe).

        Returns:
            The Operation (``type`` ``CREATE_CLUSTER``) from the 202 answer.

        Raises:
            ApiError: 422 validation (field details), 409 the tag is in use or the key was used with a
                different body, 429/503 after retries.
        """
        body: dict[str, Any] = {
            "clusterTag": cluster_tag,
            "availabilityZone": availability_zone,
            "instanceGroups": [dict(g) for g in instance_groups],
        }
        if kubernetes_version is not None:
            body["kubernetesVersion"] = kubernetes_version
        op = self.request("POST", "/clusters", body=body, headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def import_cluster(
        self,
        eks_cluster_name: str,
        cluster_tag: str,
        *,
        hyper_pod_cluster_name: str | None = None,
        availability_zone: str | None = None,
        instance_groups: Sequence[InstanceGroupSpec] | None = None,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``POST /clusters/import``: bring an existing EKS cluster (and its HyperPod cluster) under management.

        Stages whose resources exist are recorded SUCCEEDED and ``imported``; the missing ones run (an
        ``IMPORT_CLUSTER`` operation). A later delete removes only what the control plane created.

        Args:
            eks_cluster_name: the existing EKS cluster.
            cluster_tag: the tag to manage it under.
            hyper_pod_cluster_name: an existing HyperPod cluster orchestrated by it, imported with it.
            availability_zone: without ``hyper_pod_cluster_name``: zone of the compute subnet (server default:
                the zone of the cluster's first subnet).
            instance_groups: without ``hyper_pod_cluster_name`` (required then): the groups of the HyperPod
                cluster the control plane creates.
            idempotency_key: ``Idempotency-Key`` (generated per call when None).

        Returns:
            The Operation (``type`` ``IMPORT_CLUSTER``) from the 202 answer.

        Raises:
            ApiError: 404 unknown EKS or HyperPod cluster, 422 CONFIG_MAP-only authentication or an unsupported
                Kubernetes version (details name the field), 409 the tag is in use.
        """
        body: dict[str, Any] = {"eksClusterName": eks_cluster_name, "clusterTag": cluster_tag}
        if hyper_pod_cluster_name is not None:
            body["hyperPodClusterName"] = hyper_pod_cluster_name
        if availability_zone is not None:
            body["availabilityZone"] = availability_zone
        if instance_groups is not None:
            body["instanceGroups"] = [dict(g) for g in instance_groups]
        op = self.request("POST", "/clusters/import", body=body, headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def get_cluster(self, cluster_tag: str) -> Cluster:
        """``GET /clusters/{clusterTag}``: the cluster with its stages, EKS, HyperPod, nodes, storage.

        Raises:
            ApiError: 404 ``NotFound`` for an unknown tag.
        """
        return cast(Cluster, self.request("GET", f"/clusters/{self._segment(cluster_tag)}"))

    def get_stages(self, cluster_tag: str) -> list[Stage]:
        """``GET /clusters/{clusterTag}/stages``: the stages of the cluster's current generation, in order.

        Returns:
            ``[Stage]``; Stage is ``{name, order, status, attempts, startedAt, endedAt, observedStatus,
            resources, error}``.

        Raises:
            ApiError: 404 for an unknown tag.
        """
        answer = self.request("GET", f"/clusters/{self._segment(cluster_tag)}/stages")
        return cast(list[Stage], (answer or {}).get("stages") or [])

    def list_cluster_events(
        self,
        cluster_tag: str,
        *,
        max_results: int | None = None,
        next_token: str | None = None,
        level: str | None = None,
        instance_group_name: str | None = None,
    ) -> ClusterEventPage:
        """``GET /clusters/{clusterTag}/events``: one page of the cluster's HyperPod events, newest first.

        Args:
            cluster_tag: the cluster's tag (events of ``hp-cluster-<tag>``).
            max_results: most events on the page, 1-100 (server default 20 when None).
            next_token: ``nextToken`` of the previous page, asked with the same filters.
            level: only events of this level: ``Info``, ``Warn`` or ``Error``.
            instance_group_name: only events of this instance group.

        Returns:
            ``{"clusterTag", "hyperPodClusterName", "events": [ClusterEvent], "nextToken"}``; ClusterEvent is
            ``{eventId, eventTime, eventLevel, description, instanceGroupName, instanceId, resourceType,
            operationId}``. Empty while the HyperPod cluster does not exist yet. With ``level`` a page may be
            short (even empty) while ``nextToken`` is set.

        Raises:
            ApiError: 404 ``ClusterNotFound``; 400 for a ``nextToken`` the API did not issue for this listing;
                422 for a bad level, range or group name; 503 when SageMaker is unavailable.
        """
        params = {
            "maxResults": max_results,
            "nextToken": next_token,
            "level": level,
            "instanceGroupName": instance_group_name,
        }
        page = self.request("GET", f"/clusters/{self._segment(cluster_tag)}/events", params=params)
        return cast(ClusterEventPage, page)

    def retry_stage(self, cluster_tag: str, stage: str, *, idempotency_key: str | None = None) -> Operation:
        """``POST /clusters/{clusterTag}/stages/{stage}/retry``: run a FAILED stage and the ones after it.

        Returns:
            The Operation (``type`` ``RETRY_STAGE``) from the 202 answer.

        Raises:
            ApiError: 404 unknown cluster; 422 unknown stage name (lists the stages); 409 when the stage
                is not FAILED (the message names its status) or another operation is running.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/stages/{self._segment(stage)}/retry"
        op = self.request("POST", path, headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def delete_cluster(self, cluster_tag: str, *, idempotency_key: str | None = None) -> Operation:
        """``DELETE /clusters/{clusterTag}``: start deleting the cluster's AWS and Kubernetes resources.

        Returns:
            The Operation (``type`` ``DELETE_CLUSTER``) from the 202 answer.

        Raises:
            ApiError: 404 unknown tag; 409 while another operation is running.
        """
        path = f"/clusters/{self._segment(cluster_tag)}"
        op = self.request("DELETE", path, headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def get_operation(self, operation_id: str) -> Operation:
        """``GET /operations/{operationId}``.

        Returns:
            ``{operationId, type, status, clusterTag, statusUrl, createdAt, updatedAt, endedAt, error}``;
            status is PENDING, RUNNING, SUCCEEDED, FAILED or CANCELLED.

        Raises:
            ApiError: 404 for an unknown id.
        """
        return cast(Operation, self.request("GET", f"/operations/{self._segment(operation_id)}"))

    def cancel_operation(self, operation_id: str, *, idempotency_key: str | None = None) -> Operation:
        """``POST /operations/{operationId}/cancel``: stop a PENDING or RUNNING operation's workflow.

        The operation ends CANCELLED, the stage it was running CANCELLED and the cluster FAILED, from which
        the cluster can be deleted (:meth:`delete_cluster` tears down whatever exists) or the stage retried.
        Cancelling a CANCELLED operation answers it again.

        Returns:
            The CANCELLED Operation from the 202 answer.

        Raises:
            ApiError: 404 ``OperationNotFound``; 409 ``OperationAlreadyEnded`` when it ended SUCCEEDED or FAILED
                (``details[0]["status"]`` names it); 503 when Step Functions did not stop it (nothing changed).
        """
        path = f"/operations/{self._segment(operation_id)}/cancel"
        op = self.request("POST", path, headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def list_cluster_operations(
        self, cluster_tag: str, *, max_results: int | None = None, next_token: str | None = None
    ) -> OperationPage:
        """``GET /clusters/{clusterTag}/operations``: one page of the control plane's operations on the cluster.

        Args:
            cluster_tag: the cluster's tag (operations of every generation; also listed after it was DELETED).
            max_results: most operations on the page, 1-100 (server default 20 when None).
            next_token: ``nextToken`` of the previous page.

        Returns:
            ``{"clusterTag", "operations": [Operation], "nextToken"}``, newest first.

        Raises:
            ApiError: 404 ``ClusterNotFound`` for a tag never used; 400 for a ``nextToken`` the API did not issue
                for this listing; 422 for an out-of-range ``maxResults``.
        """
        params = {"maxResults": max_results, "nextToken": next_token}
        page = self.request("GET", f"/clusters/{self._segment(cluster_tag)}/operations", params=params)
        return cast(OperationPage, page)

    def list_instance_groups(self, cluster_tag: str) -> InstanceGroupList:
        """``GET /clusters/{clusterTag}/instance-groups``: the groups as HyperPod reports them now.

        Returns:
            ``{"clusterTag", "hyperPodClusterName", "hyperPodStatus", "instanceGroups": [{"instanceGroupName",
            "instanceType", "targetCount", "currentCount", "capacityType", "trainingPlanArn", "status", "subnetIds",
            "labels"}]}``.

        Raises:
            ApiError: 404 ``ClusterNotFound``.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/instance-groups"
        return cast(InstanceGroupList, self.request("GET", path))

    def add_instance_group(
        self, cluster_tag: str, group: InstanceGroupSpec, *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/instance-groups``: start adding a group (``ADD_INSTANCE_GROUP``).

        Raises:
            ApiError: 404 unknown cluster; 409 an operation is running (names it), the name is taken, or the
                cluster is not READY/DEGRADED; 422 a field breaks its rule.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/instance-groups"
        op = self.request("POST", path, body=dict(group), headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def update_instance_group(
        self,
        cluster_tag: str,
        instance_group_name: str,
        changes: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``PATCH /clusters/{clusterTag}/instance-groups/{instanceGroupName}``: scale or relabel a group.

        Args:
            changes: ``{"instanceCount": n}`` (0 allowed) and/or ``{"labels": {...}}``; ``instanceType``,
                ``capacityType``, ``trainingPlanArn`` and ``subnetId`` only with their current values.

        Returns:
            The Operation (``SCALE_INSTANCE_GROUP`` or ``UPDATE_INSTANCE_GROUP``) from the 202 answer.

        Raises:
            ApiError: 404 unknown cluster or group; 409 ``ImmutableField`` (``details[0]["field"]`` names it) or an
                operation is running; 422 a field breaks its rule.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/instance-groups/{self._segment(instance_group_name)}"
        op = self.request("PATCH", path, body=dict(changes), headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def delete_instance_group(
        self, cluster_tag: str, instance_group_name: str, *, idempotency_key: str | None = None
    ) -> Operation:
        """``DELETE /clusters/{clusterTag}/instance-groups/{instanceGroupName}``: remove a group and its instances.

        Raises:
            ApiError: 404 unknown cluster or group; 409 ``LastInstanceGroup`` or an operation is running.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/instance-groups/{self._segment(instance_group_name)}"
        op = self.request("DELETE", path, headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def get_autoscaling(self, cluster_tag: str) -> AutoScaling:
        """``GET /clusters/{clusterTag}/autoscaling``: managed Karpenter of the cluster.

        Returns:
            ``{"clusterTag", "mode", "status", "failureMessage", "clusterRoleArn", "nodePool", "nodeClass",
            "instanceGroups", "limits", "consolidateAfter", ...}``: HyperPod's AutoScaling now, and what the last
            autoscaling operation applied.

        Raises:
            ApiError: 404 unknown cluster.
        """
        return cast(AutoScaling, self.request("GET", f"/clusters/{self._segment(cluster_tag)}/autoscaling"))

    def update_autoscaling(
        self,
        cluster_tag: str,
        *,
        enabled: bool,
        instance_groups: list[str] | None = None,
        limits: Mapping[str, str | int] | None = None,
        consolidate_after: str | None = None,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``PUT /clusters/{clusterTag}/autoscaling``: turn managed Karpenter on (with these groups) or off.

        Args:
            enabled: True for on (``instance_groups`` required), False for off (no other argument).
            instance_groups: 1-10 groups Karpenter scales: each at 0 instances, On-Demand, no on-start deep health
                checks, all in one zone.
            limits: the NodePool's resource limits, e.g. ``{"nvidia.com/gpu": 64}``.
            consolidate_after: Karpenter duration before an empty or underutilised node is removed (default 30s).

        Returns:
            The ``UPDATE_AUTOSCALING`` Operation from the 202 answer.

        Raises:
            ApiError: 404 unknown cluster or group; 409 a rule is broken (``code`` names it, e.g.
                ``KarpenterGroupNotAtZero``, and ``details[0]["instanceGroupName"]`` the group) or an operation
                runs; 422 a field breaks its rule.
        """
        body: dict[str, Any] = {"enabled": enabled}
        if instance_groups is not None:
            body["instanceGroups"] = list(instance_groups)
        if limits is not None:
            body["limits"] = dict(limits)
        if consolidate_after is not None:
            body["consolidateAfter"] = consolidate_after
        path = f"/clusters/{self._segment(cluster_tag)}/autoscaling"
        op = self.request("PUT", path, body=body, headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, op)

    def get_features(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/features``: each managed feature observed now, desired, and what it installed.

        Returns:
            ``{"clusterTag", "kubernetesVersion", "features": {key: {"enabled", "desired", "version", "status",
            "settings", "managed", "addons", "roles", "podIdentityAssociations", "kubernetesObjects", "buckets"}}}``.

        Raises:
            ApiError: 404 ``ClusterNotFound``.
        """
        return dict(self.request("GET", f"/clusters/{self._segment(cluster_tag)}/features"))

    def update_features(
        self, cluster_tag: str, features: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``PATCH /clusters/{clusterTag}/features``: only the features given act (an explicit diff).

        Args:
            features: e.g. ``{"trainingOperator": {"enabled": true}, "tieredCheckpointing": {"enabled": true,
                "instanceMemoryAllocationPercentage": 20}}``.

        Returns:
            The ``UPDATE_FEATURES`` Operation (202; its ``features`` map holds each feature's outcome), or, when AWS
            already matches the body, ``{"clusterTag", "features": {key: {"result": "unchanged"}}}`` (200).

        Raises:
            ApiError: 404 unknown cluster; 409 an operation is running or the cluster is not READY/DEGRADED;
                422 an unknown feature or a value out of range (``details[0]["field"]`` names it).
        """
        path = f"/clusters/{self._segment(cluster_tag)}/features"
        out = self.request("PATCH", path, body=dict(features), headers=self._idempotency_headers(idempotency_key))
        return dict(out)

    # -- training jobs ---------------------------------------------------------------------------------
    def _job_path(self, cluster_tag: str, name: str | None = None) -> str:
        base = f"/clusters/{self._segment(cluster_tag)}/training-jobs"
        return f"{base}/{self._segment(name)}" if name else base

    def create_training_job(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/training-jobs``: create a job from a recipe (202).

        Args:
            body: ``{"recipe": "pytorch"|"script"|"llamafactory"|"msswift"|"verl", "name", "instanceType",
                "image", "nodes", ...}`` (the recipe's shape in the OpenAPI document).

        Returns:
            ``{"name", "namespace", "kind", "operation": Operation}``: poll the operation, then follow the job.

        Raises:
            ApiError: 409 ``FeatureNotEnabled`` (trainingOperator) or an operation running; 422 a field (unpinned
                image, name, more GPUs or nodes than the cluster has: ``details`` carry the numbers).
        """
        out = self.request(
            "POST", self._job_path(cluster_tag), body=dict(body), headers=self._idempotency_headers(idempotency_key)
        )
        return dict(out)

    def list_training_jobs(
        self,
        cluster_tag: str,
        *,
        namespace: str | None = None,
        max_results: int | None = None,
        next_token: str | None = None,
    ) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/training-jobs``: ``{"trainingJobs": [...], "nextToken"}`` newest first."""
        params = {"namespace": namespace, "maxResults": max_results, "nextToken": next_token}
        return dict(self.request("GET", self._job_path(cluster_tag), params=params))

    def get_training_job(self, cluster_tag: str, name: str, *, namespace: str = "default") -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/training-jobs/{name}``: status, conditions, restart history, pods."""
        return dict(self.request("GET", self._job_path(cluster_tag, name), params={"namespace": namespace}))

    def get_training_job_logs(
        self,
        cluster_tag: str,
        name: str,
        *,
        namespace: str = "default",
        pod: str | None = None,
        container: str | None = None,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
    ) -> dict[str, Any]:
        """``GET .../training-jobs/{name}/logs``: ``{"pod", "container", "text", "truncated"}`` (rank 0 by default)."""
        params = {
            "namespace": namespace,
            "pod": pod,
            "container": container,
            "tailLines": tail_lines,
            "sinceSeconds": since_seconds,
        }
        return dict(self.request("GET", f"{self._job_path(cluster_tag, name)}/logs", params=params))

    def delete_training_job(
        self, cluster_tag: str, name: str, *, namespace: str = "default", idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``DELETE /clusters/{clusterTag}/training-jobs/{name}``: ``{"name", "namespace", "kind", "operation"}``."""
        out = self.request(
            "DELETE",
            self._job_path(cluster_tag, name),
            params={"namespace": namespace},
            headers=self._idempotency_headers(idempotency_key),
        )
        return dict(out)

    # -- models and self-managed inference ------------------------------------------------------------
    def download_model(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/models``: download a Hugging Face model into the cluster's storage (202).

        Args:
            body: ``{"source": "huggingface", "modelId", "revision"?, "destination": "s3"|"fsx", "hfTokenSecret"?:
                {"name", "key"}}`` (a Secret reference, never a token).

        Returns:
            ``{"modelId", "destination", "location", "modelPath", "jobName", "operation": Operation}``; the
            operation's ``result`` carries ``downloadedBytes``/``downloadedFiles`` while it runs.

        Raises:
            ApiError: 409 ``FeatureNotEnabled`` (fsx) or an operation running; 422 a field.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/models"
        return dict(self.request("POST", path, body=dict(body), headers=self._idempotency_headers(idempotency_key)))

    def list_models(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/models``: ``{"bucket", "models": [{"modelId", "destination", "modelPath",
        "sizeBytes", "files", ...}], "fsx": {"listed", "reason", ...}}`` read from the bucket (``models/``, and the FSx
        file system's export under ``fsx/models/``)."""
        return dict(self.request("GET", f"/clusters/{self._segment(cluster_tag)}/models"))

    def _deployment_path(self, cluster_tag: str, name: str | None = None) -> str:
        base = f"/clusters/{self._segment(cluster_tag)}/inference/deployments"
        return f"{base}/{self._segment(name)}" if name else base

    def create_inference_deployment(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/inference/deployments``: a vLLM or SGLang Deployment + Service (202).

        Args:
            body: ``{"name", "engine": "vllm"|"sglang", "modelPath", "servedModelName", "instanceType", "gpus",
                "maxModelLen"?, "replicas", "port"?, "image"?, "service"?: {"type", "exposure"}, "hfTokenSecret"?}``.

        Returns:
            ``{"name", "namespace", "operation": Operation}``.

        Raises:
            ApiError: 409 an operation running, the name taken, fsx off; 422 a field (``instanceType`` lists the
                cluster's types in ``details[0]["allowedValues"]``).
        """
        out = self.request(
            "POST",
            self._deployment_path(cluster_tag),
            body=dict(body),
            headers=self._idempotency_headers(idempotency_key),
        )
        return dict(out)

    def list_inference_deployments(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/inference/deployments``: ``{"deployments": [...]}`` by name."""
        return dict(self.request("GET", self._deployment_path(cluster_tag)))

    def get_inference_deployment(self, cluster_tag: str, name: str) -> dict[str, Any]:
        """``GET .../inference/deployments/{name}``: status, replicas, pods, Service, router."""
        return dict(self.request("GET", self._deployment_path(cluster_tag, name)))

    def scale_inference_deployment(
        self, cluster_tag: str, name: str, replicas: int, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``PATCH .../inference/deployments/{name}`` ``{"replicas"}`` (202); 409 ``BoundPodsWouldBeRemoved``."""
        out = self.request(
            "PATCH",
            self._deployment_path(cluster_tag, name),
            body={"replicas": replicas},
            headers=self._idempotency_headers(idempotency_key),
        )
        return dict(out)

    def delete_inference_deployment(
        self, cluster_tag: str, name: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``DELETE .../inference/deployments/{name}`` (202): the Deployment, Service and router go."""
        out = self.request(
            "DELETE", self._deployment_path(cluster_tag, name), headers=self._idempotency_headers(idempotency_key)
        )
        return dict(out)

    def create_inference_router(
        self, cluster_tag: str, name: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST .../inference/deployments/{name}/router`` (202): the SGLang router, optional KEDA autoscaling.

        Args:
            body: ``{"policy"?, "replicas"?, "autoscaling"?: {"minReplicas", "maxReplicas",
                "prometheusServerAddress", "queueThreshold"}}``.

        Raises:
            ApiError: 409 ``RouterNeedsSGLang`` or ``KedaNotInstalled``.
        """
        out = self.request(
            "POST",
            f"{self._deployment_path(cluster_tag, name)}/router",
            body=dict(body),
            headers=self._idempotency_headers(idempotency_key),
        )
        return dict(out)

    def invoke_inference_deployment(
        self,
        cluster_tag: str,
        name: str,
        body: Mapping[str, Any],
        *,
        route: str | None = None,
        via: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """``POST .../inference/deployments/{name}/invoke``: the engine's answer through the Kubernetes service proxy.

        Args:
            body: the JSON sent to the engine (``model`` defaults to the served model name).
            route: ``v1/completions`` (default) or ``v1/chat/completions``.
            via: ``router`` or ``service`` (default: the router when there is one).

        Returns:
            ``{"service", "port", "route", "contentType", "body", "text", "truncated"}``.

        Raises:
            ApiError: 413 ``body`` above 1 MiB; 409 ``InferenceDeploymentNotReady``; 502 ``ModelError`` (the
                engine's error verbatim); 503 Kubernetes refused the proxy or the engine did not answer in time.
        """
        payload: dict[str, Any] = {"body": dict(body)}
        if route is not None:
            payload["route"] = route
        if via is not None:
            payload["via"] = via
        out = self.request(
            "POST",
            f"{self._deployment_path(cluster_tag, name)}/invoke",
            body=payload,
            headers=self._idempotency_headers(idempotency_key),
        )
        return dict(out)

    # -- managed inference endpoints (the HyperPod inference operator) --------------------------------------------
    def _endpoint_path(self, cluster_tag: str, name: str | None = None) -> str:
        base = f"/clusters/{self._segment(cluster_tag)}/inference/endpoints"
        return f"{base}/{self._segment(name)}" if name else base

    def create_inference_endpoint(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/inference/endpoints``: a managed endpoint of the inference operator (202).

        Args:
            body: ``{"name", "instanceType", "replicas"?, "modelSource"?: {"type": "s3"|"fsx"|"huggingface", ...},
                "worker"?: {"image", "port"?, "volumeMountPath"?, "resources"?, "environment"?}, "jumpStart"?,
                "kvCacheSpec"?, "intelligentRoutingSpec"?, "tls"?, "autoscaling"?, "maxDeployTimeSeconds"?}``.

        Returns:
            ``{"name", "namespace", "kind", "apiVersion", "endpointName", "operation": Operation}``.

        Raises:
            ApiError: 409 ``FeatureNotEnabled`` (inferenceOperator, tieredCheckpointing), an operation running, the
                name taken; 422 a field (``instanceType`` lists the cluster's types; a field the served version
                does not know names it with ``servedVersion``).
        """
        out = self.request(
            "POST",
            self._endpoint_path(cluster_tag),
            body=dict(body),
            headers=self._idempotency_headers(idempotency_key),
        )
        return dict(out)

    def list_inference_endpoints(self, cluster_tag: str) -> dict[str, Any]:
        """``GET .../inference/endpoints``: ``{"endpoints": [{"name", "kind", "state", "endpointName", ...}]}``."""
        return dict(self.request("GET", self._endpoint_path(cluster_tag)))

    def get_inference_endpoint(self, cluster_tag: str, name: str) -> dict[str, Any]:
        """``GET .../inference/endpoints/{name}``: state, conditions, SageMaker endpoint, pods and their events."""
        return dict(self.request("GET", self._endpoint_path(cluster_tag, name)))

    def delete_inference_endpoint(
        self, cluster_tag: str, name: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``DELETE .../inference/endpoints/{name}`` (202): done once SageMaker no longer finds the endpoint."""
        out = self.request(
            "DELETE", self._endpoint_path(cluster_tag, name), headers=self._idempotency_headers(idempotency_key)
        )
        return dict(out)

    def invoke_inference_endpoint(
        self, cluster_tag: str, name: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST .../inference/endpoints/{name}/invoke`` ``{"body": {...}}``: the model's answer.

        Returns:
            ``{"endpointName", "contentType", "invokedProductionVariant", "body", "text", "truncated"}``.

        Raises:
            ApiError: 413 ``body`` above 1 MiB; 409/502 SageMaker's refusal verbatim. The answer is cut at 256 KiB
                (``truncated``); a repeated ``idempotency_key`` replays the first answer.
        """
        out = self.request(
            "POST",
            f"{self._endpoint_path(cluster_tag, name)}/invoke",
            body={"body": dict(body)},
            headers=self._idempotency_headers(idempotency_key),
        )
        return dict(out)

    # -- managed MLflow ---------------------------------------------------------------------------------
    def get_mlflow(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/mlflow``: the cluster's SageMaker managed MLflow connection.

        Returns:
            ``{"clusterTag", "connected", "kind", "arn", "name", "created", "status", "trackingServerUrl",
            "artifactStoreUri", "namespace", "serviceAccountName", "podRoleArn", "environment", ...}``; ``status`` is
            read from SageMaker now (``NotFound`` when the server is gone).

        Raises:
            ApiError: 404 ``ClusterNotFound``.
        """
        return dict(self.request("GET", f"/clusters/{self._segment(cluster_tag)}/mlflow"))

    def update_mlflow(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``PUT /clusters/{clusterTag}/mlflow``: connect, create or disconnect.

        Args:
            body: ``{"trackingServerArn": ...}``, ``{"mlflowAppArn": ...}``, ``{"create": {"kind": "trackingServer" |
                "app", "size"?, "mlflowVersion"?}}`` (each with an optional ``namespace``), or ``{"enabled": false}``.

        Returns:
            The ``UPDATE_MLFLOW`` Operation (202), or the connection view (200) when the request is already so.

        Raises:
            ApiError: 404 unknown cluster or ARN; 409 an operation runs, another connection, a failed server, a name
                taken; 422 an ARN of another Region or account or a malformed body (``details[0]["field"]``).
        """
        path = f"/clusters/{self._segment(cluster_tag)}/mlflow"
        out = self.request("PUT", path, body=dict(body), headers=self._idempotency_headers(idempotency_key))
        return dict(out)

    def delete_mlflow(self, cluster_tag: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
        """``DELETE /clusters/{clusterTag}/mlflow``: disconnect (the server only goes when it was created here).

        Returns:
            The ``UPDATE_MLFLOW`` Operation (202), or ``{"connected": false, ...}`` (200) when not connected.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/mlflow"
        return dict(self.request("DELETE", path, headers=self._idempotency_headers(idempotency_key)))

    def list_training_job_runs(self, cluster_tag: str, job_name: str, *, namespace: str = "default") -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/training-jobs/{name}/runs``: the MLflow runs of job ``namespace/job_name``.

        Returns:
            ``{"clusterTag", "jobName", "experimentName", "mlflowArn", "runs": [{"runId", "runName", "status",
            "startTime", "endTime", "params", "metrics", "tags"}]}`` (newest first; ``metrics`` holds latest values).

        Raises:
            ApiError: 404 unknown cluster or ``TrainingJobNotFound`` (no such job in the namespace); 409
                ``MlflowNotConnected`` / ``MlflowNotReady``; 503 MLflow or Kubernetes did not answer.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/training-jobs/{self._segment(job_name)}/runs"
        return dict(self.request("GET", path, params={"namespace": namespace}))

    # -- task governance -------------------------------------------------------------------------------
    def get_scheduler_config(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/scheduler-config``: the cluster policy as SageMaker describes it now.

        Returns:
            ``{"clusterTag", "name", "clusterSchedulerConfigId", "clusterSchedulerConfigVersion", "status",
            "failureReason", "schedulerConfig": {"priorityClasses", "fairShare", ...}, "managed", ...}``.

        Raises:
            ApiError: 404 ``ClusterNotFound`` or ``SchedulerConfigNotFound``.
        """
        return cast(dict[str, Any], self.request("GET", f"/clusters/{self._segment(cluster_tag)}/scheduler-config"))

    def put_scheduler_config(self, cluster_tag: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``PUT /clusters/{clusterTag}/scheduler-config``: create or replace the cluster policy (202, Creating).

        Args:
            body: ``{"schedulerConfig": {"priorityClasses": [{"name", "weight"}], "fairShare"}, "targetVersion"?}``.

        Raises:
            ApiError: 409 ``FeatureNotEnabled`` (taskGovernance off), ``ConflictException`` (stale targetVersion, still
                settling); 422 a field breaks its rule.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/scheduler-config"
        return cast(dict[str, Any], self.request("PUT", path, body=dict(body)))

    def list_compute_quotas(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/compute-quotas``: ``{"clusterTag", "computeQuotas": [...]}``.

        Raises:
            ApiError: 404 ``ClusterNotFound``.
        """
        return cast(dict[str, Any], self.request("GET", f"/clusters/{self._segment(cluster_tag)}/compute-quotas"))

    def create_compute_quota(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/compute-quotas``: a team's quota, named ``<clusterTag>-<teamName>`` (202).

        Raises:
            ApiError: 409 ``FeatureNotEnabled``, ``ConflictException`` (the team has a quota),
                ``ComputeQuotaAlreadyExists``; 422 a field breaks its rule.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/compute-quotas"
        answer = self.request("POST", path, body=dict(body), headers=self._idempotency_headers(idempotency_key))
        return cast(dict[str, Any], answer)

    def update_compute_quota(
        self, cluster_tag: str, compute_quota_name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``PATCH /clusters/{clusterTag}/compute-quotas/{computeQuotaName}``: change the members given (202).

        Raises:
            ApiError: 404 unknown quota; 409 ``ConflictException`` (stale targetVersion), ``ImmutableField``
                (teamName), ``NotManaged``; 422 a field breaks its rule.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/compute-quotas/{self._segment(compute_quota_name)}"
        return cast(dict[str, Any], self.request("PATCH", path, body=dict(body)))

    def delete_compute_quota(
        self, cluster_tag: str, compute_quota_name: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``DELETE /clusters/{clusterTag}/compute-quotas/{computeQuotaName}``: the quota, Deleting (202).

        Raises:
            ApiError: 404 unknown quota; 409 ``NotManaged``.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/compute-quotas/{self._segment(compute_quota_name)}"
        return cast(dict[str, Any], self.request("DELETE", path, headers=self._idempotency_headers(idempotency_key)))

    def list_availability_zones(self) -> list[AvailabilityZone]:
        """``GET /catalog/availability-zones``: ``[{"zoneName", "zoneId"}]`` of the API's region."""
        answer = self.request("GET", "/catalog/availability-zones")
        return cast(list[AvailabilityZone], (answer or {}).get("availabilityZones") or [])

    def list_instance_types(self, availability_zone: str) -> list[str]:
        """``GET /catalog/instance-types?availabilityZone=``: HyperPod instance types offered in a zone.

        Returns:
            ``["ml.g6.4xlarge", ...]``: ``ClusterInstanceType`` values whose EC2 type the zone offers.

        Raises:
            ApiError: 422 for a malformed or unknown zone.
        """
        answer = self.request("GET", "/catalog/instance-types", params={"availabilityZone": availability_zone})
        return cast(list[str], (answer or {}).get("instanceTypes") or [])

    def list_training_plans(self) -> list[TrainingPlan]:
        """``GET /catalog/training-plans``: the account's SageMaker training plans (status, zone, instance type
        and count, start and end)."""
        answer = self.request("GET", "/catalog/training-plans")
        return cast(list[TrainingPlan], (answer or {}).get("trainingPlans") or [])

    def search_training_plan_offerings(
        self,
        *,
        instance_type: str,
        instance_count: int,
        duration_hours: int | None = None,
        start_after: str | None = None,
    ) -> list[TrainingPlanOffering]:
        """``GET /catalog/training-plan-offerings``: purchasable offerings for HyperPod clusters.

        Args:
            instance_type: e.g. ``ml.p5.48xlarge``.
            instance_count: instances to reserve, 1-256.
            duration_hours: plan duration in hours (None: any).
            start_after: earliest start, ISO-8601 UTC ``2026-11-29T17:04:05Z`` (None: any).

        Raises:
            ApiError: 422 for a type training plans do not reserve, or a value out of range.
        """
        params = {
            "instanceType": instance_type,
            "instanceCount": instance_count,
            "durationHours": duration_hours,
            "startAfter": start_after,
        }
        answer = self.request("GET", "/catalog/training-plan-offerings", params=params)
        return cast(list[TrainingPlanOffering], (answer or {}).get("trainingPlanOfferings") or [])

    # -- nodes and HyperPod operations (day 2) -------------------------------------------------------

    def list_cluster_nodes(
        self,
        cluster_tag: str,
        *,
        max_results: int | None = None,
        next_token: str | None = None,
        instance_group_name: str | None = None,
    ) -> ClusterNodePage:
        """``GET /clusters/{clusterTag}/nodes``: one page of the cluster's nodes, oldest launch first.

        Returns:
            ``{"clusterTag", "hyperPodClusterName", "nodes": [ClusterNode], "nextToken"}``; each node has its
            instance id and status, Kubernetes node name and last observed ``healthStatus`` label (None when never
            observed). Empty while the HyperPod cluster does not exist.

        Raises:
            ApiError: 404 ``ClusterNotFound``; 400 for a ``nextToken`` of another listing; 422 bad range or name.
        """
        params = {"maxResults": max_results, "nextToken": next_token, "instanceGroupName": instance_group_name}
        page = self.request("GET", f"/clusters/{self._segment(cluster_tag)}/nodes", params=params)
        return cast(ClusterNodePage, page)

    def _node_action(self, cluster_tag: str, verb: str, node_ids: list[str], key: str | None) -> Operation:
        path = f"/clusters/{self._segment(cluster_tag)}/nodes/{verb}"
        answer = self.request("POST", path, body={"nodeIds": node_ids}, headers=self._idempotency_headers(key))
        return cast(Operation, answer)

    def reboot_cluster_nodes(
        self, cluster_tag: str, node_ids: list[str], *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/nodes/reboot``: reboot 1-25 nodes (same instance ids).

        Returns:
            The ``REBOOT_CLUSTER_NODES`` Operation from the 202 answer (follow it with :meth:`wait_for_operation`):
            SUCCEEDED once every accepted node is Running and Ready/Schedulable again; ``result.failed`` lists the
            nodes HyperPod refused (code and message verbatim), FAILED when it refused every node.

        Raises:
            ApiError: 422 naming ``nodeIds[i]`` for an id that is not a node of the cluster (nothing done); 409
                when the cluster is not READY/DEGRADED (names the status) or another operation runs (names it).
        """
        return self._node_action(cluster_tag, "reboot", node_ids, idempotency_key)

    def replace_cluster_nodes(
        self, cluster_tag: str, node_ids: list[str], *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/nodes/replace``: replace 1-25 nodes with new instances (new ids).

        Returns:
            The ``REPLACE_CLUSTER_NODES`` Operation: SUCCEEDED once the old ids are gone and the group is back at
            its target with Running nodes.

        Raises:
            ApiError: as :meth:`reboot_cluster_nodes`.
        """
        return self._node_action(cluster_tag, "replace", node_ids, idempotency_key)

    def delete_cluster_nodes(
        self, cluster_tag: str, node_ids: list[str], *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/nodes/delete``: delete nodes; their group's count is lowered (destructive).

        Returns:
            The ``DELETE_CLUSTER_NODES`` Operation: SUCCEEDED once the ids are gone and the targets lowered.

        Raises:
            ApiError: as :meth:`reboot_cluster_nodes`.
        """
        return self._node_action(cluster_tag, "delete", node_ids, idempotency_key)

    def update_cluster_software(
        self, cluster_tag: str, body: Mapping[str, Any] | None = None, *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/software-update``: patch the nodes' AMI (``UpdateClusterSoftware``).

        Args:
            cluster_tag: the cluster.
            body: ``{"instanceGroupNames"?, "deploymentConfig"?, "imageId"?}`` (camelCase); None for every group.
            idempotency_key: optional ``Idempotency-Key``.

        Returns:
            The ``UPDATE_CLUSTER_SOFTWARE`` Operation: SUCCEEDED once HyperPod's cluster and groups are InService
            with the update Succeeded; FAILED with HyperPod's words when it failed or rolled back.

        Raises:
            ApiError: 409 cluster not READY/DEGRADED or an operation runs; 422 unknown group (names the field).
        """
        path = f"/clusters/{self._segment(cluster_tag)}/software-update"
        answer = self.request("POST", path, body=dict(body or {}), headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, answer)

    def start_cluster_health_check(
        self,
        cluster_tag: str,
        instance_groups: Sequence[Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``POST /clusters/{clusterTag}/health-checks``: deep health checks (``StartClusterHealthCheck``).

        Args:
            cluster_tag: the cluster.
            instance_groups: ``[{"instanceGroupName", "deepHealthChecks": [...], "instanceIds"?}]``.
            idempotency_key: optional ``Idempotency-Key``.

        Returns:
            The ``START_CLUSTER_HEALTH_CHECK`` Operation (``result.hyperPodOperationId`` once started): SUCCEEDED
            when HyperPod's DeepHealthCheck operation is Done with every node passed; FAILED with HyperPod's
            failure message when a node failed (``result.failed`` lists them).

        Raises:
            ApiError: 409 cluster not READY/DEGRADED or an operation runs; 422 unknown group or instance.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/health-checks"
        body = {"instanceGroups": [dict(g) for g in instance_groups]}
        answer = self.request("POST", path, body=body, headers=self._idempotency_headers(idempotency_key))
        return cast(Operation, answer)

    def list_hyperpod_operations(
        self,
        cluster_tag: str,
        *,
        max_results: int | None = None,
        next_token: str | None = None,
        status: str | None = None,
        type: str | None = None,
    ) -> HyperPodOperationPage:
        """``GET /clusters/{clusterTag}/hyperpod-operations``: HyperPod's operations, newest first.

        Raises:
            ApiError: 404 ``ClusterNotFound``; 400 foreign ``nextToken``; 422 bad status/type (lists the values).
        """
        params = {"maxResults": max_results, "nextToken": next_token, "status": status, "type": type}
        page = self.request("GET", f"/clusters/{self._segment(cluster_tag)}/hyperpod-operations", params=params)
        return cast(HyperPodOperationPage, page)

    def get_hyperpod_operation(self, cluster_tag: str, operation_id: str) -> HyperPodOperation:
        """``GET /clusters/{clusterTag}/hyperpod-operations/{operationId}``: one operation with its newest events.

        Raises:
            ApiError: 404 ``ClusterNotFound`` or ``HyperPodOperationNotFound``.
        """
        path = f"/clusters/{self._segment(cluster_tag)}/hyperpod-operations/{self._segment(operation_id)}"
        return cast(HyperPodOperation, self.request("GET", path))
