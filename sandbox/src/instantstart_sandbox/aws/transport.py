"""The sandbox's AWS endpoint reached without a socket by the botocore clients of its own process.

The deployed functions run in the sandbox's process, so every AWS call they make would otherwise cross a
loopback HTTP connection twice: urllib3 and ``http.client`` on the client side, a server thread and
werkzeug's request parsing on the other. That plumbing was about a quarter of the sandbox's CPU time.
:func:`install` replaces only botocore's transport (``URLLib3Session.send``, the innermost layer): a
request to a registered endpoint becomes the WSGI ``environ`` werkzeug's server would build, the
endpoint's application (moto behind the sandbox extension) answers it on the calling thread, and the
answer returns as the ``AWSResponse`` urllib3 would give. Everything above stays as on the wire: signing,
serialization, the retry handler, response parsing, the IAM audit's caller header and the connection
faults (both patch ``Endpoint._send``, which still runs).

The application runs in an empty :class:`contextvars.Context`, as a request on a server thread would: the
calling handler's context (its invocation, its caller identity) does not leak into the emulated AWS side.
Other processes (the MCP proxy, the CLI, a browser) still reach the endpoint over HTTP.
"""

from __future__ import annotations

import contextvars
import io
import sys
import threading
from collections.abc import Iterator
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from instantstart_sandbox.aws.protocol import WSGIApplication, WSGIEnviron

_apps: dict[str, WSGIApplication] = {}
"""``host:port`` (as in the request URL) -> the application serving it."""
_lock = threading.Lock()
_installed = False


class _Body(io.BytesIO):
    """The answer's body with the ``stream()`` of urllib3's response (botocore reads ``content`` through it)."""

    def stream(self, amt: int = 2**16, decode_content: bool | None = None) -> Iterator[bytes]:
        """The body in chunks of up to ``amt`` bytes."""
        while chunk := self.read(amt):
            yield chunk


def register(endpoint_url: str, app: WSGIApplication) -> None:
    """Serve requests to ``endpoint_url`` (``http://host:port``) of this process with ``app`` in process.

    ``127.0.0.1`` and ``localhost`` name the same endpoint (moto's Step Functions engine calls back to
    ``localhost:$MOTO_PORT``). Installs the transport (:func:`install`) on first use.
    """
    install()
    parts = urlsplit(endpoint_url)
    port = parts.port
    loopback = {"127.0.0.1", "localhost"}
    hosts = loopback if parts.hostname in loopback else {parts.hostname or ""}
    with _lock:
        for host in hosts:
            _apps[f"{host}:{port}"] = app


def unregister(endpoint_url: str) -> None:
    """Stop serving ``endpoint_url`` in process (its requests go over the network again)."""
    parts = urlsplit(endpoint_url)
    with _lock:
        for key in [k for k in _apps if k.endswith(f":{parts.port}")]:
            del _apps[key]


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if hasattr(body, "read"):
        data = body.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return b"".join(chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk) for chunk in body)


def _wsgi_string(value: str) -> str:
    """A native WSGI string: the UTF-8 bytes seen as latin-1 (PEP 3333), as werkzeug's server builds them."""
    return value.encode("utf-8").decode("latin-1")


def environ_of(request: Any, body: bytes) -> WSGIEnviron:
    """The WSGI ``environ`` werkzeug's development server builds for ``request`` (a botocore ``AWSPreparedRequest``)."""
    url = urlsplit(request.url)
    target = url.path + (f"?{url.query}" if url.query else "")
    environ: WSGIEnviron = {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": url.scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "SERVER_SOFTWARE": "instantstart-sandbox-in-process",
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": _wsgi_string(unquote(url.path)),
        "QUERY_STRING": _wsgi_string(url.query),
        "REQUEST_URI": _wsgi_string(target),
        "RAW_URI": _wsgi_string(target),
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": 0,
        "SERVER_NAME": url.hostname or "",
        "SERVER_PORT": str(url.port or (443 if url.scheme == "https" else 80)),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": url.netloc,
    }
    for name, raw in request.headers.items():
        name = name.decode("latin-1") if isinstance(name, bytes) else str(name)
        if "_" in name:  # werkzeug drops them too (WSGI cannot tell X_Foo from X-Foo)
            continue
        value = raw.decode("latin-1") if isinstance(raw, bytes) else str(raw)
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = f"HTTP_{key}"
        environ[key] = value
    environ["CONTENT_LENGTH"] = str(len(body))
    environ.pop("HTTP_TRANSFER_ENCODING", None)  # the whole body is at hand
    return environ


def _call(app: WSGIApplication, environ: WSGIEnviron) -> tuple[int, list[tuple[str, str]], bytes]:
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answer["status"], answer["headers"] = int(status.split(" ", 1)[0]), headers
        return lambda data: None

    iterable = app(environ, start_response)
    try:
        body = b"".join(iterable)
    finally:
        close = getattr(iterable, "close", None)
        if close is not None:
            close()
    return answer["status"], answer["headers"], body


def send(request: Any, app: WSGIApplication) -> Any:
    """``app``'s answer to ``request`` as botocore's ``AWSResponse`` (status, case-insensitive headers, raw body)."""
    from botocore.awsrequest import AWSResponse, HeadersDict

    environ = environ_of(request, _body_bytes(request.body))
    status, headers, body = contextvars.Context().run(_call, app, environ)
    response = AWSResponse(request.url, status, cast(Any, HeadersDict(headers)), _Body(body))
    if not request.stream_output:
        response.content  # noqa: B018 - read now, as URLLib3Session.send does
    return response


def install() -> None:
    """Route this process's botocore requests to a registered endpoint through :func:`send` (idempotent)."""
    global _installed
    if _installed:
        return
    from botocore.httpsession import URLLib3Session

    cls: Any = URLLib3Session
    original = cls.send

    def _send(self: Any, request: Any) -> Any:
        app = _apps.get(urlsplit(request.url).netloc) if _apps else None
        if app is None:
            return original(self, request)
        return send(request, app)

    cls.send = _send
    _installed = True
