"""botocore's transport to the sandbox's AWS endpoint: in process when the endpoint is served here.

The sandbox's functions, its Step Functions engine, its deployer and its tests run in the process that holds
moto's state and serves it over HTTP (:class:`~instantstart_sandbox.aws.server.AwsSandboxServer`). Their
botocore requests to that server do not need the loopback socket: :func:`install` makes botocore hand a request
whose URL starts with a registered endpoint (:func:`register`) straight to the WSGI application the server runs
(moto behind :class:`~instantstart_sandbox.aws.extension.AwsExtension`). The application sees the same signed
request (method, URI, headers and body) and botocore parses the same status, headers and body: only the socket,
the HTTP server's request parsing and its thread are left out. One DynamoDB ``GetItem`` costs about 2.7 ms of
CPU this way against 6.4 ms over HTTP. Clients in other processes (the CLI, the MCP proxy) still use HTTP.

The application runs in the calling thread but in an empty :mod:`contextvars` context, as a server thread would:
the caller's context variables (the in-process function being invoked, the IAM audit's caller) do not leak into
moto or the extension.

:func:`install` also turns an answer that carries
:data:`~instantstart_sandbox.aws.faults.CONNECTION_FAULT_HEADER` into the exception botocore raises for a
timed-out connection, for requests over either transport.
"""

from __future__ import annotations

import contextvars
import io
import logging
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from instantstart_sandbox.aws.faults import CONNECTION_FAULT_HEADER
from instantstart_sandbox.aws.protocol import WSGIApplication

__all__ = ["install", "register", "registered", "unregister"]

log = logging.getLogger(__name__)

_APPS: dict[str, WSGIApplication] = {}
"""Endpoint origin (``http://127.0.0.1:4566``) -> the WSGI application that answers it in process."""
_LOCK = threading.Lock()
_installed = False
_DROPPED_HEADERS = frozenset({"content-length", "transfer-encoding", "expect", "connection"})
"""Request headers that describe the HTTP connection, not the request: a WSGI server consumes them."""


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def register(endpoint_url: str, app: WSGIApplication) -> None:
    """Answer botocore requests to ``endpoint_url`` (``http://127.0.0.1:<port>``) with ``app`` in process.

    The same port on ``localhost`` is registered too (moto's Step Functions engine calls back to
    ``localhost:$MOTO_PORT``). Takes effect once :func:`install` ran.
    """
    parts = urlsplit(endpoint_url)
    with _LOCK:
        _APPS[_origin(endpoint_url)] = app
        if parts.hostname in ("127.0.0.1", "localhost") and parts.port:
            for host in ("127.0.0.1", "localhost"):
                _APPS[f"{parts.scheme}://{host}:{parts.port}"] = app


def unregister(endpoint_url: str) -> None:
    """Stop answering ``endpoint_url`` in process (its requests go over HTTP again)."""
    parts = urlsplit(endpoint_url)
    with _LOCK:
        _APPS.pop(_origin(endpoint_url), None)
        if parts.hostname in ("127.0.0.1", "localhost") and parts.port:
            for host in ("127.0.0.1", "localhost"):
                _APPS.pop(f"{parts.scheme}://{host}:{parts.port}", None)


def registered(url: str) -> bool:
    """Whether a request to ``url`` is answered in process."""
    return _origin(url) in _APPS


def _environ(request: Any) -> dict[str, Any]:
    """The WSGI environ werkzeug's HTTP server would build for botocore's ``AWSPreparedRequest``."""
    from werkzeug.test import EnvironBuilder

    body = request.body
    if body is None:
        body = b""
    elif isinstance(body, str):
        body = body.encode()
    elif not isinstance(body, bytes | bytearray):
        body = body.read()
    headers: list[tuple[str, str]] = []
    for name, value in request.headers.items():
        if name.lower() in _DROPPED_HEADERS:
            continue
        headers.append((name, value.decode("latin-1") if isinstance(value, bytes) else str(value)))
    parts = urlsplit(request.url)
    environ: dict[str, Any] = EnvironBuilder(
        method=request.method,
        base_url=f"{parts.scheme}://{parts.netloc}",
        path=parts.path or "/",
        query_string=parts.query,
        headers=headers,
        data=bytes(body),
    ).get_environ()
    raw_uri = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    environ["REQUEST_URI"] = raw_uri  # as werkzeug's server: the undecoded request target
    environ["RAW_URI"] = raw_uri
    return environ


def _call(app: WSGIApplication, request: Any) -> Any:
    """Run ``app`` on ``request``; botocore's ``AWSResponse`` of its answer.

    When ``app`` raises, the answer is an empty HTTP 500, which botocore turns into a ``ClientError`` (a server
    answers 500 too, with a page botocore cannot parse).
    """
    from botocore.awsrequest import AWSResponse
    from botocore.compat import HTTPHeaders
    from werkzeug.test import run_wsgi_app

    environ = _environ(request)

    def run() -> tuple[int, list[tuple[str, str]], bytes]:
        try:
            app_iter, status, response_headers = run_wsgi_app(app, environ, buffered=True)
            try:
                body = b"".join(app_iter)
            finally:
                close = getattr(app_iter, "close", None)
                if close is not None:
                    close()
            return int(status.split(None, 1)[0]), list(response_headers.items()), body
        except Exception:
            log.exception("in-process AWS request %s %s failed", request.method, request.url)
            return 500, [("Content-Length", "0")], b""  # botocore reads an empty 5xx as a generic error

    status, pairs, body = contextvars.Context().run(run)
    headers: dict[str, str] = {}
    for name, value in pairs:  # repeated fields are joined, as urllib3 joins them
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return AWSResponse(request.url, status, HTTPHeaders.from_dict(headers), _RawResponse(body))


class _RawResponse(io.BytesIO):
    """The ``raw`` of an in-process ``AWSResponse``: what botocore reads a body from (``stream`` and ``read``)."""

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterable[bytes]:
        while True:
            chunk = self.read(amt or 65536)
            if not chunk:
                return
            yield chunk


def install() -> None:
    """Patch botocore's HTTP session (``URLLib3Session.send``) in this process (idempotent).

    A request to a registered endpoint is answered in process; any other goes over HTTP as before. Patching the
    innermost layer keeps every wrapper of ``Endpoint._send`` (the IAM audit's caller headers) in the path of both
    transports, whatever order they were installed in. An answer that carries
    :data:`~instantstart_sandbox.aws.faults.CONNECTION_FAULT_HEADER` raises ``ConnectTimeoutError`` or
    ``ReadTimeoutError`` where botocore's HTTP layer raises a real one, so the retry handler, the caller's
    ``except`` clauses and its error names see exactly what a timed-out connection gives.
    """
    global _installed
    with _LOCK:
        if _installed:
            return
        from botocore import httpsession
        from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

        cls: Any = httpsession.URLLib3Session
        original = cls.send

        def send(self: Any, request: Any) -> Any:
            app = _APPS.get(_origin(request.url)) if _APPS else None
            response = original(self, request) if app is None else _call(app, request)
            kind = response.headers.get(CONNECTION_FAULT_HEADER)
            if kind == "connect-timeout":
                raise ConnectTimeoutError(endpoint_url=request.url)
            if kind == "read-timeout":
                raise ReadTimeoutError(endpoint_url=request.url)
            return response

        cls.send = send
        _installed = True
