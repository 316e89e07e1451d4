"""Local data plane of the HTTP API: HTTP requests -> API Gateway v2 payload events -> the API function.

Routes come from the deployed template (``Deployment.routes``). Like API Gateway with ``AWS_IAM``
authorization, every request must be SigV4-signed for ``execute-api``; the signature is verified
against the sandbox credentials (403 ``{"message": "Forbidden"}`` otherwise). The function is
invoked through the Lambda ``Invoke`` API of the emulated AWS; an invocation past the 30 s integration timeout is
answered 503 ``{"message": "Service Unavailable"}`` (:func:`instantstart_sandbox.aws.limits.call_integration`).
Paths under ``/console/`` are the web console's (:mod:`instantstart_sandbox.console`), answered before the signature
check as CloudFront answers them in production.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from instantstart_sandbox.aws import limits
from instantstart_sandbox.console import ConsoleSite
from instantstart_sandbox.deploy import Route

access_log = logging.getLogger("instantstart_sandbox.httpapi.access")

_AUTH_RE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<akid>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,\s*"
    r"SignedHeaders=(?P<signed>[^,]+),\s*Signature=(?P<sig>[0-9a-f]+)"
)


def _compile(path: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{([A-Za-z0-9_]+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))
    return re.compile(f"^{pattern}$")


MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
"""API Gateway HTTP APIs' request payload quota (10 MB): a larger body is answered 413 before any authorizer."""


def verify_sigv4(
    method: str, url: str, headers: dict[str, str], body: bytes, credentials: dict[str, str], region: str
) -> str | None:
    """None when the request carries a valid SigV4 signature for ``execute-api``, else the reason."""
    auth = headers.get("authorization", "")
    match = _AUTH_RE.match(auth)
    if not match:
        return "Missing Authentication Token"
    if match["service"] != "execute-api" or match["region"] != region:
        return f"Credential should be scoped to correct service: 'execute-api' in {region}"
    if match["akid"] != credentials["access_key"]:
        return "The security token included in the request is invalid."
    amz_date = headers.get("x-amz-date", "")
    try:
        signed_at = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "Missing or invalid X-Amz-Date"
    if abs((datetime.now(UTC) - signed_at).total_seconds()) > 300:
        return "Signature expired"
    signed = match["signed"].split(";")
    request = AWSRequest(method=method, url=url, data=body, headers={h: headers.get(h, "") for h in signed})
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(
        Credentials(credentials["access_key"], credentials["secret_key"], credentials.get("token")),
        "execute-api",
        region,
    )
    canonical = signer.canonical_request(request)
    string_to_sign = signer.string_to_sign(request, canonical)
    expected = signer.signature(string_to_sign, request)
    if expected != match["sig"]:
        return "The request signature we calculated does not match the signature you provided."
    return None


class _ApiServer(ThreadingHTTPServer):
    """One thread per connection; a listen backlog of 128 (``http.server``'s default, 5, resets the connections of
    a burst of concurrent clients, which API Gateway accepts)."""

    daemon_threads = True
    request_queue_size = 128


class HttpApiServer:
    """Serves the template's HTTP API routes on 127.0.0.1.

    Args:
        routes: from the deployment.
        lambda_client: boto3 Lambda client of the sandbox (the function is invoked through ``Invoke``).
        credentials: ``{"access_key", "secret_key"}`` callers must sign with.
        region, account_id: for the signature scope and the request context.
        console: the web console served at ``/console/`` (none: those paths are API paths like any other).
    """

    def __init__(
        self,
        routes: list[Route],
        lambda_client: Any,
        credentials: dict[str, str],
        region: str,
        account_id: str,
        console: ConsoleSite | None = None,
    ):
        self.console = console
        self.routes = [(r, _compile(r.path)) for r in routes]
        self.lambda_client = lambda_client
        self.credentials = credentials
        self.region = region
        self.account_id = account_id
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:PORT``."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self, port: int = 0) -> None:
        """Start serving in a background thread."""
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                started = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = api.handle(self.command, self.path, dict(self.headers.items()), body)
                # An access log like API Gateway's: method, path, status, latency (and the error code of a 4xx/5xx).
                code = ""
                if status >= 400:
                    try:
                        code = " " + str(json.loads(payload).get("error", {}).get("code", ""))
                    except (ValueError, AttributeError):
                        code = ""
                access_log.info(
                    "%s %s %d%s %.0fms", self.command, self.path, status, code, (time.monotonic() - started) * 1000
                )
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _handle

            def __getattr__(self, name: str) -> Any:
                # any other method reaches the router too: one no route has is API Gateway's 404, not http.server's 501
                if name.startswith("do_"):
                    return self._handle
                raise AttributeError(name)

        self._server = _ApiServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="http-api", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving."""
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """Answer one request as API Gateway would: auth, route match, Lambda proxy integration."""
        lower = {k.lower(): v for k, v in headers.items()}
        if len(body) > MAX_PAYLOAD_BYTES:
            return 413, {"Content-Type": "application/json"}, b'{"message":"Request Entity Too Large"}'
        parts = urlsplit(raw_path)
        if self.console is not None and self.console.handles(parts.path):
            return self.console.answer(method, parts.path, lower)
        host = lower.get("host", "127.0.0.1")
        problem = verify_sigv4(method, f"http://{host}{raw_path}", lower, body, self.credentials, self.region)
        if problem:
            status = 403
            return (
                status,
                {"Content-Type": "application/json", "x-amzn-ErrorType": "ForbiddenException"},
                json.dumps({"message": problem}).encode(),
            )
        for route, pattern in self.routes:
            match = pattern.match(parts.path)
            if route.method == method and match:
                return self._invoke(route, match.groupdict(), parts.path, parts.query, lower, body)
        return 404, {"Content-Type": "application/json"}, b'{"message":"Not Found"}'

    def _invoke(
        self,
        route: Route,
        params: dict[str, str],
        path: str,
        query: str,
        headers: dict[str, str],
        body: bytes,
    ) -> tuple[int, dict[str, str], bytes]:
        now = time.time()
        event: dict[str, Any] = {
            "version": "2.0",
            "routeKey": route.route_key,
            "rawPath": path,
            "rawQueryString": query,
            "headers": headers,
            "requestContext": {
                "accountId": self.account_id,
                "apiId": "sandbox",
                "authorizer": {
                    "iam": {
                        "accessKey": self.credentials["access_key"],
                        "accountId": self.account_id,
                        "callerId": self.credentials["access_key"],
                        "userArn": f"arn:aws:iam::{self.account_id}:user/sandbox",
                        "userId": self.credentials["access_key"],
                    }
                },
                "domainName": headers.get("host", "127.0.0.1"),
                "domainPrefix": "sandbox",
                "http": {
                    "method": route.method,
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                    "userAgent": headers.get("user-agent", ""),
                },
                "requestId": str(uuid.uuid4()),
                "routeKey": route.route_key,
                "stage": "$default",
                "time": datetime.now(UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
                "timeEpoch": int(now * 1000),
            },
            "isBase64Encoded": False,
        }
        if query:
            event["queryStringParameters"] = dict(parse_qsl(query, keep_blank_values=True))
        if params:
            event["pathParameters"] = params
        if body:
            try:
                event["body"] = body.decode()
            except UnicodeDecodeError:
                event["body"] = base64.b64encode(body).decode()
                event["isBase64Encoded"] = True
        payload_in = json.dumps(event).encode()
        try:  # API Gateway's 30 s integration timeout: 503 while the function keeps running
            out = limits.call_integration(
                lambda: self.lambda_client.invoke(FunctionName=route.function_name, Payload=payload_in)
            )
        except limits.IntegrationTimeout:
            return 503, {"Content-Type": "application/json"}, b'{"message":"Service Unavailable"}'
        payload = out["Payload"].read()
        if out.get("FunctionError"):
            return 500, {"Content-Type": "application/json"}, b'{"message":"Internal Server Error"}'
        result = json.loads(payload or b"null")
        if not isinstance(result, dict) or "statusCode" not in result:
            return 200, {"Content-Type": "application/json"}, json.dumps(result).encode()
        response_body = result.get("body") or ""
        data = base64.b64decode(response_body) if result.get("isBase64Encoded") else str(response_body).encode()
        headers_out = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
        headers_out.setdefault("Content-Type", "application/json")
        return int(result["statusCode"]), headers_out, data
