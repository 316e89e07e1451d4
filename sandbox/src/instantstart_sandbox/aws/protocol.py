"""Request routing and response shaping by the botocore service models.

The extension sits in front of moto's WSGI app. For each request it finds the service (from the
SigV4 credential scope) and the operation (``X-Amz-Target`` for JSON protocols, ``Action`` for query
protocols, method + ``requestUri`` template for REST protocols), parses the input members it needs,
and writes answers and errors in the protocol shape botocore expects.
"""

from __future__ import annotations

import io
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote
from xml.sax.saxutils import escape

import botocore.session
from botocore.exceptions import ClientError
from botocore.model import OperationModel, ServiceModel, Shape

WSGIEnviron = dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApplication = Callable[[WSGIEnviron, StartResponse], Iterable[bytes]]

# SigV4 signing name -> botocore service name, where they differ (or are ambiguous).
SIGNING_NAME_TO_SERVICE: dict[str, str] = {
    "states": "stepfunctions",
    "monitoring": "cloudwatch",
    "execute-api": "apigatewayv2",
    "email": "ses",
    "elasticfilesystem": "efs",
    "elasticloadbalancing": "elbv2",
    "es": "opensearch",
    "servicequotas": "service-quotas",
}
SERVICE_ALIASES: dict[str, str] = {"states": "stepfunctions", "sfn": "stepfunctions", "eventbridge": "events"}


class AwsError(Exception):
    """An AWS API error to answer in the protocol shape of the service.

    Args:
        code: the AWS error code (``ResourceNotFoundException``, ``ValidationException``, ...).
        message: the human message, as the real service words it.
        status: the HTTP status code.
        extra: additional members of the error body (rest-json services echo e.g. ``clusterName``).
    """

    def __init__(self, code: str, message: str, status: int = 400, **extra: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.extra = extra


@dataclass
class AwsRequest:
    """One parsed AWS API request.

    ``params`` holds the operation's input members by their model names (top level only); values
    are as decoded from JSON, query string or URI.
    """

    service: str  # botocore service name
    operation: str
    model: OperationModel
    environ: WSGIEnviron
    body: bytes
    params: dict[str, Any] = field(default_factory=dict)
    region: str = "us-east-1"

    @property
    def protocol(self) -> str:
        """The botocore protocol of the service (json, rest-json, query, ec2, rest-xml)."""
        return str(self.model.service_model.protocol)


@dataclass
class RawResponse:
    """A WSGI response captured from an application."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body or b"{}")

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (case-insensitive), or None."""
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


class ServiceModels:
    """Loads and caches botocore service models and compiled REST URI templates (thread-safe)."""

    def __init__(self) -> None:
        self._session = botocore.session.get_session()
        self._lock = threading.Lock()
        self._models: dict[str, ServiceModel | None] = {}
        self._routes: dict[str, list[tuple[str, re.Pattern[str], list[str], list[str], int, str]]] = {}

    def service_model(self, name: str) -> ServiceModel | None:
        """The botocore model of ``name`` (service name or signing name), or None when unknown."""
        name = SERVICE_ALIASES.get(name, SIGNING_NAME_TO_SERVICE.get(name, name))
        with self._lock:
            if name not in self._models:
                try:
                    self._models[name] = self._session.get_service_model(name)
                except Exception:  # noqa: BLE001 - an unknown service just isn't routed
                    self._models[name] = None
            return self._models[name]

    def service_name(self, name: str) -> str:
        """Canonical botocore service name for a service or signing name."""
        model = self.service_model(name)
        return model.service_name if model is not None else name

    def rest_routes(self, model: ServiceModel) -> list[tuple[str, re.Pattern[str], list[str], list[str], int, str]]:
        """Compiled (method, path regex, required query keys, required headers as WSGI keys, specificity, operation)
        per operation (``CopyObject`` is ``PutObject``'s route plus its required ``x-amz-copy-source`` header)."""
        with self._lock:
            routes = self._routes.get(model.service_name)
            if routes is None:
                routes = []
                for op_name in model.operation_names:
                    http = model.operation_model(op_name).http
                    uri = http.get("requestUri", "/")
                    path, _, query = uri.partition("?")
                    pattern = ""
                    literal = 0
                    for part in re.split(r"(\{[^}]+\})", path):
                        if part.startswith("{"):
                            label = part[1:-1]
                            greedy = label.endswith("+")
                            label = label.rstrip("+")
                            group = re.sub(r"\W", "_", label)
                            pattern += f"(?P<{group}>.+)" if greedy else f"(?P<{group}>[^/]+)"
                        else:
                            pattern += re.escape(part)
                            literal += len(part)
                    if not pattern.endswith("/"):
                        pattern += "/?"
                    required = [q.split("=")[0] for q in query.split("&") if q]
                    shape = model.operation_model(op_name).input_shape
                    headers = (
                        [
                            "HTTP_" + str(member.serialization.get("name", name)).upper().replace("-", "_")
                            for name, member in shape.members.items()
                            if member.serialization.get("location") == "header" and name in shape.required_members
                        ]
                        if shape is not None
                        else []
                    )
                    routes.append(
                        (http.get("method", "POST"), re.compile(f"^{pattern}$"), required, headers, literal, op_name)
                    )
                self._routes[model.service_name] = routes
            return routes


MODELS = ServiceModels()
"""The process-wide cache of botocore service models."""


def read_body(environ: WSGIEnviron) -> bytes:
    """Read the request body and put it back so the wrapped app can read it again."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    if length > 0:
        body = stream.read(length)
    elif environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked" or environ.get("wsgi.input_terminated"):
        body = stream.read()
    else:
        body = b""
    body = bytes(body)
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body


def signing_scope(environ: WSGIEnviron) -> tuple[str, str] | None:
    """(region, signing name) from the SigV4 credential scope of ``Authorization``, or None."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    match = re.search(r"Credential=[^/,\s]+/\d{8}/([^/]+)/([^/]+)/aws4_request", auth)
    if match is None:
        return None
    return match.group(1), match.group(2)


def raw_path_and_query(environ: WSGIEnviron) -> tuple[str, str]:
    """The undecoded request path and query string (URI labels may contain encoded ``/``)."""
    raw = environ.get("REQUEST_URI") or environ.get("RAW_URI")
    if raw:
        if "://" in raw:  # absolute-form request target
            raw = "/" + raw.split("://", 1)[1].partition("/")[2]
        path, _, query = raw.partition("?")
        return path, query
    return environ.get("PATH_INFO", "/"), environ.get("QUERY_STRING", "")


def resolve_operation(models: ServiceModels, service: str, environ: WSGIEnviron, body: bytes) -> str | None:
    """The operation name of a request to ``service``, or None when it does not match the model."""
    model = models.service_model(service)
    if model is None:
        return None
    protocol = model.protocol
    if protocol == "json":
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        op = target.rpartition(".")[2]
        return op if op in model.operation_names else None
    if protocol in ("query", "ec2"):
        _, query = raw_path_and_query(environ)
        fields = parse_qs(query)
        if not fields.get("Action"):
            fields = parse_qs(body.decode("utf-8", "replace"))
        actions = fields.get("Action") or []
        return actions[0] if actions and actions[0] in model.operation_names else None
    if protocol in ("rest-json", "rest-xml"):
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path, query = raw_path_and_query(environ)
        query_keys = set(parse_qs(query, keep_blank_values=True))
        best: tuple[int, str] | None = None
        for op_method, regex, required, headers, literal, op_name in models.rest_routes(model):
            if op_method != method or not regex.match(path):
                continue
            if not all(key in query_keys for key in required) or not all(h in environ for h in headers):
                continue
            score = literal * 10 + len(required) + len(headers)
            if best is None or score > best[0]:
                best = (score, op_name)
        return best[1] if best else None
    return None


def _convert(shape: Shape | None, value: Any) -> Any:
    if shape is None:
        return value
    if shape.type_name in ("integer", "long"):
        return int(value)
    if shape.type_name in ("float", "double"):
        return float(value)
    if shape.type_name == "boolean":
        return str(value).lower() == "true" if not isinstance(value, bool) else value
    return value


def parse_params(req: AwsRequest) -> dict[str, Any]:
    """Top-level input members of ``req`` by model name (JSON body, URI labels, query string)."""
    input_shape = req.model.input_shape
    if input_shape is None:
        return {}
    protocol = req.protocol
    if protocol == "json":
        return dict(json.loads(req.body or b"{}"))
    if protocol in ("query", "ec2"):
        _, query = raw_path_and_query(req.environ)
        fields = parse_qs(query)
        fields.update(parse_qs(req.body.decode("utf-8", "replace")))
        return {key: values[0] if len(values) == 1 else values for key, values in fields.items()}
    params: dict[str, Any] = {}
    if protocol == "rest-json" and req.body:
        try:
            body = json.loads(req.body)
        except ValueError:
            body = {}
        if isinstance(body, dict):
            for name, member in input_shape.members.items():
                key = member.serialization.get("name", name)
                if key in body and not member.serialization.get("location"):
                    params[name] = body[key]
    path, query = raw_path_and_query(req.environ)
    query_fields = parse_qs(query, keep_blank_values=True)
    labels: dict[str, str] = {}
    for op_method, regex, _, _, _, op_name in MODELS.rest_routes(req.model.service_model):
        if op_name == req.operation and op_method == req.environ.get("REQUEST_METHOD", "GET").upper():
            match = regex.match(path)
            if match:
                labels = {k: unquote(v) for k, v in match.groupdict().items()}
                break
    for name, member in input_shape.members.items():
        location = member.serialization.get("location")
        loc_name = member.serialization.get("name", name)
        if location == "uri":
            group = re.sub(r"\W", "_", loc_name)
            if group in labels:
                params[name] = labels[group]
        elif location == "querystring" and loc_name in query_fields:
            values = query_fields[loc_name]
            if member.type_name == "list":
                params[name] = [_convert(getattr(member, "member", None), v) for v in values]
            else:
                params[name] = _convert(member, values[0])
        elif location == "header":
            header = "HTTP_" + loc_name.upper().replace("-", "_")
            if header in req.environ:
                params[name] = _convert(member, req.environ[header])
    return params


def _json_default(value: Any) -> Any:
    if hasattr(value, "timestamp"):
        return value.timestamp()
    raise TypeError(f"not JSON serializable: {type(value)!r}")


def json_response(req: AwsRequest, output: dict[str, Any]) -> RawResponse:
    """An answer of a JSON or rest-json operation."""
    body = json.dumps(output, default=_json_default).encode()
    if req.protocol == "json":
        version = req.model.service_model.metadata.get("jsonVersion", "1.1")
        content_type = f"application/x-amz-json-{version}"
        status = 200
    else:
        content_type = "application/json"
        status = int(req.model.http.get("responseCode", 200))
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("x-amzn-RequestId", str(uuid.uuid4())),
    ]
    return RawResponse(status, headers, body)


def error_response(protocol: str, service: str, error: AwsError) -> RawResponse:
    """``error`` in the protocol shape of ``service`` (parsed by botocore into a ClientError)."""
    request_id = str(uuid.uuid4())
    code, message = error.code, error.message
    if protocol in ("json", "rest-json", "smithy-rpc-v2-cbor"):
        payload: dict[str, Any] = {"__type": code, "message": message, **error.extra}
        if protocol == "json":
            payload["Message"] = message
        body = json.dumps(payload).encode()
        headers = [
            ("Content-Type", "application/x-amz-json-1.1" if protocol == "json" else "application/json"),
            ("x-amzn-ErrorType", code),
            ("x-amzn-RequestId", request_id),
        ]
        if protocol == "json":
            headers.append(("x-amzn-query-error", f"{code};Sender"))
    elif protocol == "ec2":
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
            f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message>"
            f"</Error></Errors><RequestID>{request_id}</RequestID></Response>"
        ).encode()
        headers = [("Content-Type", "text/xml;charset=UTF-8")]
    elif protocol == "rest-xml" and service == "s3":
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Error>'
            f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message>"
            f"<RequestId>{request_id}</RequestId></Error>"
        ).encode()
        headers = [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)]
    else:
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse><Error><Type>Sender</Type>'
            f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message></Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        ).encode()
        headers = [("Content-Type", "text/xml")]
    headers.append(("Content-Length", str(len(body))))
    return RawResponse(error.status, headers, body)


def call_app(app: WSGIApplication, environ: WSGIEnviron) -> RawResponse:
    """Run ``app`` on ``environ`` and capture its response."""
    captured: dict[str, Any] = {}
    chunks: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
        captured["status"] = int(status.split()[0])
        captured["headers"] = list(headers)
        return chunks.append

    result = app(environ, start_response)
    try:
        chunks.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return RawResponse(captured.get("status", 500), captured.get("headers", []), b"".join(chunks))


def dynamodb_direct(environ: WSGIEnviron) -> RawResponse:
    """DynamoDB's answer to the request in ``environ`` from moto's ``DynamoHandler``, called as moto's Flask route
    calls it, without Flask.

    DynamoDB serves most of the sandbox's requests (every step and API call reads and writes the table), and moto's
    Flask layer (host dispatcher, request context, URL routing, CORS, response object) was about a third of each
    call. moto has one DynamoDB route, ``DynamoHandler.dispatch``; it gets the request moto's Flask app builds
    (``BackendRequest``: a server-mode request), and a ``ClientError`` is answered 400 with its message, as moto's
    Flask view answers it. Any other exception propagates, as it does through moto's Flask app (debug mode): the
    caller sees a 500.
    """
    from moto.dynamodb.responses import DynamoHandler
    from moto.moto_server.werkzeug_app import BackendRequest

    request = BackendRequest(environ)
    try:
        result = DynamoHandler.dispatch(request, request.raw_url, dict(request.headers))
    except ClientError as exc:
        result = 400, {}, exc.response["Error"]["Message"]
    status, headers, content = result if len(result) == 3 else (200, {}, result)
    body = content if isinstance(content, bytes) else str(content).encode()
    return RawResponse(int(status), list(dict(headers).items()), body)


def send(response: RawResponse, start_response: StartResponse) -> list[bytes]:
    """Write ``response`` through WSGI ``start_response``; fixes Content-Length."""
    headers = [(k, v) for k, v in response.headers if k.lower() != "content-length"]
    headers.append(("Content-Length", str(len(response.body))))
    reason = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content"}.get(response.status, "Error")
    start_response(f"{response.status} {reason}", headers)
    return [response.body]


def ec2_xml(operation: str, inner: str) -> bytes:
    """An EC2 query-protocol answer document for ``operation`` with ``inner`` XML members."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<{operation}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        f"<requestId>{uuid.uuid4()}</requestId>{inner}</{operation}Response>"
    ).encode()
