"""Lambda's Runtime API (``2018-06-01``) for one execution environment, served on a loopback port.

The function's process runs AWS's runtime interface client (``awslambdaric``), which polls
``GET /2018-06-01/runtime/invocation/next`` and answers on ``POST .../invocation/{AwsRequestId}/response`` or
``.../error``; an initialisation failure (the handler's module does not import) arrives on ``POST
/2018-06-01/runtime/init/error``. One server per environment (Lambda gives each its own), so the address
(``AWS_LAMBDA_RUNTIME_API``) tells which environment is asking.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PREFIX = "/2018-06-01/runtime"


@dataclass
class Invocation:
    """One event handed to the environment and what came back: ``payload`` (bytes of the answer) and ``errored``
    (the runtime answered on ``/error``)."""

    request_id: str
    event: bytes
    function_arn: str
    deadline_ms: int
    payload: bytes = b""
    errored: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    """The runtime took the event (``/next`` returned it)."""


class RuntimeApi:
    """The Runtime API of one environment: :meth:`hand` queues an invocation for the runtime's next ``/next``.

    ``init_error`` holds the body of ``/init/error`` once the runtime reported one (``ready`` is set either way when
    the runtime first asks for an event or reports an init error).
    """

    def __init__(self) -> None:
        self.pending: queue.Queue[Invocation | None] = queue.Queue()
        self.current: Invocation | None = None
        self.init_error: bytes | None = None
        self.ready = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall between them

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                if self.path != f"{PREFIX}/invocation/next":
                    return self._answer(404, {"errorType": "InvalidRequest", "errorMessage": self.path})
                api.ready.set()
                invocation = api.pending.get()
                if invocation is None:  # closed: this runtime's process is gone
                    return self._answer(410, {"errorType": "Gone", "errorMessage": "environment closed"})
                api.current = invocation
                invocation.started.set()
                headers = {
                    "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                    "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
                    "Lambda-Runtime-Invoked-Function-Arn": invocation.function_arn,
                    "Lambda-Runtime-Trace-Id": f"Root=1-00000000-{invocation.request_id.replace('-', '')[:24]}",
                }
                self._send(200, invocation.event, headers)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = self.path.removeprefix(PREFIX).strip("/").split("/")
                if parts == ["init", "error"]:
                    api.init_error = body
                    api.ready.set()
                    return self._answer(202, {"status": "OK"})
                invocation = api.current
                if len(parts) != 3 or parts[0] != "invocation" or parts[2] not in ("response", "error"):
                    return self._answer(404, {"errorType": "InvalidRequest", "errorMessage": self.path})
                if invocation is None or invocation.request_id != parts[1]:
                    return self._answer(400, {"errorType": "InvalidRequestID", "errorMessage": parts[1]})
                invocation.payload = body
                invocation.errored = parts[2] == "error"
                api.current = None
                invocation.done.set()
                self._answer(202, {"status": "OK"})

            def _answer(self, status: int, document: dict[str, Any]) -> None:
                self._send(status, json.dumps(document).encode(), {})

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the runtime was killed
                    self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                return None  # a killed runtime's connection: nothing to report

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        """What ``AWS_LAMBDA_RUNTIME_API`` holds (``host:port``)."""
        self._thread = threading.Thread(target=self._server.serve_forever, name="lambda-runtime-api", daemon=True)
        self._thread.start()

    def hand(self, invocation: Invocation) -> None:
        """Queue ``invocation`` for the runtime's next ``GET .../invocation/next``."""
        self.pending.put(invocation)

    def close(self) -> None:
        """Stop serving (a poll still waiting is answered 410)."""
        self.pending.put(None)
        self._server.shutdown()
        self._server.server_close()
