"""The transport core of the client: URL and region, SigV4 signing, sending, retries with backoff, time bounds.

Every route method of :class:`instantstart_client.api.InstantStartClient` (the area mixins) is a call by operation
id (``operations.py::OperationsApi.call_operation``), which binds the path, query, body and ``Idempotency-Key`` from
the OpenAPI document and sends through :meth:`ApiTransport.request`."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import botocore.session
import httpx2
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.stop import stop_base

from instantstart_client import __version__
from instantstart_client.api.errors import (
    ApiConnectionError,
    ApiError,
    ApiTimeoutError,
    ConfigurationError,
    _is_transient,
)

log = logging.getLogger("instantstart_client.api")  # the name it had before the split into a package

API_URL_ENV = "INSTANTSTART_API_URL"
REGION_ENV = "AWS_REGION"
SIGNING_SERVICE = "execute-api"

_EXECUTE_API_HOST = re.compile(r"\.execute-api\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?$")
_QUERY_SAFE = "-_.~"
"""Characters SigV4 leaves unencoded; encoding the rest ourselves makes the sent query canonical."""


def region_from_api_url(api_url: str) -> str | None:
    """The region of an ``https://{id}.execute-api.{region}.amazonaws.com`` URL, or None for others."""
    host = urlsplit(api_url).hostname or ""
    match = _EXECUTE_API_HOST.search(host)
    return match.group(1) if match else None


class ApiTransport:
    """The plumbing of :class:`instantstart_client.api.InstantStartClient` (its constructor documents the
    arguments): signed requests with retries, on which calls by operation id build."""

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
