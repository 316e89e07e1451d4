"""The real HTTP API function in process, behind an ``httpx2`` transport, for the client's unit tests.

:class:`InProcessApi` plays API Gateway (HTTP API, ``AWS_IAM`` authorization, payload 2.0) in front of
``functions/api/api_app.lambda_handler``: it checks each request's SigV4 signature (403 like API
Gateway when it is wrong), matches it against the routes of ``template.yaml`` (API Gateway's own 404
otherwise), turns it into a v2.0 event (``rawPath``, ``rawQueryString``, lower-case ``headers``,
``body``/``isBase64Encoded``, ``requestContext.http.method``, ``pathParameters``...) and answers with
the handler's ``statusCode``/``headers``/``body``. AWS behind the handler is moto (the caller's
``mock_aws``), so nothing leaves the process. Every request is recorded for the tests' assertions.

Step Functions executions do not run in moto, so :class:`WorkflowDriver` moves an operation's records
the way the workflow steps do, one step per ``GET /operations/{id}`` (stage RUNNING, then SUCCEEDED or
FAILED, then the next stage; the cluster ends READY, FAILED or DELETED). Every call into the core's
record bookkeeping lives in :class:`WorkflowDriver` and nowhere else in the tests.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

import httpx2
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from instantstart_client.api import InstantStartClient

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-west-2"
ACCOUNT = "123456789012"  # moto's default account
API_ID = "a1b2c3d4e5"
API_URL = f"https://{API_ID}.execute-api.{REGION}.amazonaws.com"
STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{{}}"
CREATE_SM, DELETE_SM = "instantstart-create-cluster", "instantstart-delete-cluster"
UPDATE_SM = "instantstart-update-cluster"
STEPS_FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:instantstart-steps"

_AUTH_PATTERN = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<akid>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})"
)


@dataclass
class LambdaContext:
    """The Lambda context the handler's Powertools decorators read."""

    function_name: str = "instantstart-ApiFunction"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:instantstart-ApiFunction"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/instantstart-ApiFunction"
    log_stream_name: str = "2026/11/29/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left (29 s: API Gateway's integration timeout)."""
        return 29_000


# -- requests and signatures ----------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as the API received it.

    Attributes:
        method: HTTP method.
        target: the request target as sent (path plus raw, still percent-encoded, query string).
        headers: header pairs in the order and case received.
        body: raw body bytes.
    """

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (case-insensitive), or None."""
        lname = name.lower()
        return next((v for k, v in self.headers if k.lower() == lname), None)

    @property
    def path(self) -> str:
        """The path, without the query string."""
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, str]:
        """Query parameters, decoded (last value wins)."""
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.target).query, keep_blank_values=True).items()}

    def json(self) -> Any:
        """The body parsed as JSON (None for an empty body)."""
        return json.loads(self.body) if self.body else None


class SignatureMismatch(AssertionError):
    """A request's SigV4 ``Authorization`` header is missing, malformed or wrong."""


def verify_sigv4(
    request: RecordedRequest,
    *,
    access_key: str,
    secret_key: str,
    region: str,
    token: str | None = None,
    service: str = "execute-api",
    max_skew: timedelta = timedelta(minutes=5),
) -> None:
    """Recompute the SigV4 signature of ``request`` with botocore's signer and compare it with the one sent.

    Checks the credential scope (access key, date, region, service), that ``host`` and ``x-amz-date``
    (and ``x-amz-security-token`` when ``token`` is given) are signed, that ``X-Amz-Date`` is within
    ``max_skew`` of now, and the signature over the method, path, query, signed headers and body.

    Raises:
        SignatureMismatch: with the reason.
    """
    auth = request.header("Authorization") or ""
    match = _AUTH_PATTERN.fullmatch(auth)
    if match is None:
        raise SignatureMismatch(f"malformed Authorization header: {auth!r}")
    if match["akid"] != access_key or match["region"] != region or match["service"] != service:
        raise SignatureMismatch(f"unexpected credential scope in {auth!r}")
    amz_date = request.header("X-Amz-Date") or ""
    try:
        signed_at = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError as exc:
        raise SignatureMismatch(f"bad X-Amz-Date {amz_date!r}") from exc
    if amz_date[:8] != match["date"] or abs(datetime.now(UTC) - signed_at) > max_skew:
        raise SignatureMismatch(f"X-Amz-Date {amz_date} does not match the scope date or is skewed")
    signed = match["signed"].split(";")
    required = {"host", "x-amz-date"} | ({"x-amz-security-token"} if token else set())
    if not required <= set(signed):
        raise SignatureMismatch(f"SignedHeaders {signed} lack {sorted(required - set(signed))}")
    if token and request.header("X-Amz-Security-Token") != token:
        raise SignatureMismatch("X-Amz-Security-Token differs from the session token")
    headers = {}
    for name in signed:
        value = request.header(name)
        if value is None:
            raise SignatureMismatch(f"signed header {name} was not received")
        headers[name] = value
    aws_request = AWSRequest(
        method=request.method, url=f"https://{headers['host']}{request.target}", data=request.body, headers=headers
    )
    aws_request.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(access_key, secret_key, token), service, region)
    canonical = signer.canonical_request(aws_request)
    expected = signer.signature(signer.string_to_sign(aws_request, canonical), aws_request)
    if not hmac.compare_digest(expected, match["signature"]):
        raise SignatureMismatch(f"signature mismatch; canonical request was:\n{canonical}")


# -- API Gateway ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One ``HttpApi`` event of the template: method, path template, its matcher."""

    method: str
    path: str
    pattern: re.Pattern[str]

    @property
    def route_key(self) -> str:
        """``"GET /clusters/{clusterTag}"``."""
        return f"{self.method} {self.path}"


@lru_cache(maxsize=1)
def template_routes() -> tuple[Route, ...]:
    """The API function's routes, read from ``template.yaml`` (the one list API Gateway is built from)."""
    import cfnlint.decode

    template, errors = cfnlint.decode.decode(str(ROOT / "template.yaml"))
    assert not errors and template is not None, errors
    routes = []
    for resource in template["Resources"].values():
        for event in (resource.get("Properties") or {}).get("Events", {}).values():
            if event.get("Type") == "HttpApi":
                path = str(event["Properties"]["Path"])
                regex = re.sub(r"\\\{([A-Za-z0-9_]+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))
                routes.append(Route(str(event["Properties"]["Method"]).upper(), path, re.compile(f"^{regex}$")))
    assert routes, "template.yaml declares no HttpApi routes"
    return tuple(routes)


def api_gateway_event(request: RecordedRequest, route: Route, params: dict[str, str], stage: str) -> dict[str, Any]:
    """The API Gateway HTTP API payload 2.0 event of ``request`` matched to ``route``.

    ``rawPath`` keeps the stage prefix (API Gateway does so for a named stage); header names are lower
    case and repeated headers joined with commas; a body that is not UTF-8 is base64 (``isBase64Encoded``).
    """
    parts = urlsplit(request.target)
    headers: dict[str, str] = {}
    for key, value in request.headers:
        name = key.lower()
        headers[name] = f"{headers[name]},{value}" if name in headers else value
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.route_key,
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        "headers": headers,
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": API_ID,
            "authorizer": {
                "iam": {
                    "accessKey": headers.get("authorization", "").split("Credential=")[-1].split("/")[0],
                    "accountId": ACCOUNT,
                    "callerId": "AIDACKCEVSQ6C2EXAMPLE",
                    "cognitoIdentity": None,
                    "principalOrgId": None,
                    "userArn": f"arn:aws:iam::{ACCOUNT}:user/unit-test",
                    "userId": "AIDACKCEVSQ6C2EXAMPLE",
                }
            },
            "domainName": headers.get("host", f"{API_ID}.execute-api.{REGION}.amazonaws.com"),
            "domainPrefix": API_ID,
            "http": {
                "method": request.method,
                "path": parts.path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.10",
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": base64.b64encode(uuid.uuid4().bytes[:10]).decode(),
            "routeKey": route.route_key,
            "stage": stage,
            "time": datetime.now(UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }
    if parts.query:
        query: dict[str, str] = {}
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            query[key] = f"{query[key]},{value}" if key in query else value
        event["queryStringParameters"] = query
    if params:
        event["pathParameters"] = params
    if request.body:
        try:
            event["body"] = request.body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(request.body).decode()
            event["isBase64Encoded"] = True
    return event


Answer = tuple[int, dict[str, str], bytes]
"""Status, headers, body of one HTTP answer."""


class InProcessApi(httpx2.BaseTransport):
    """API Gateway in front of the real API handler, as an ``httpx2`` transport (and, on demand, on loopback).

    Args:
        handler: ``api_app.lambda_handler``.
        driver: moves operations; called with the operation id before each ``GET /operations/{id}``
            is answered (set ``advance_on_poll`` False to freeze operations).
        credentials: ``(access_key, secret_key, token)`` callers must sign with; None: the ones in the
            environment when the request arrives (moto's ``mock_aws`` sets its own dummy keys there).
        check_signatures: False lets unsigned or wrongly signed requests through.
        stage: API Gateway stage; a named stage is the first segment of every path (``/prod/clusters``).

    Attributes:
        requests: every request received, in order (also those API Gateway refused).
        served_url: the 127.0.0.1 URL while :meth:`serve` runs, else None.
    """

    def __init__(
        self,
        handler: Callable[[dict[str, Any], Any], dict[str, Any]],
        driver: WorkflowDriver,
        *,
        credentials: tuple[str, str, str | None] | None = None,
        check_signatures: bool = True,
        stage: str = "$default",
    ) -> None:
        self.handler = handler
        self.driver = driver
        self.credentials = credentials
        self.check_signatures = check_signatures
        self.stage = stage
        self.advance_on_poll = True
        self.requests: list[RecordedRequest] = []
        self.served_url: str | None = None
        self._lock = threading.RLock()

    @property
    def url(self) -> str:
        """Base URL of the API (with the stage path for a named stage)."""
        return API_URL if self.stage == "$default" else f"{API_URL}/{self.stage}"

    def client(self, **kwargs: Any) -> InstantStartClient:
        """An :class:`InstantStartClient` of this API (no backoff sleeps unless ``sleep`` is given).

        ``transport`` may wrap this API (a test's proxy in front of it); ``api_url`` defaults to :attr:`url`.
        """
        kwargs.setdefault("sleep", lambda seconds: None)
        kwargs.setdefault("transport", self)
        return InstantStartClient(kwargs.pop("api_url", self.url), **kwargs)

    def requests_to(self, method: str, path: str) -> list[RecordedRequest]:
        """Recorded requests with this method and path (query ignored)."""
        return [r for r in self.requests if r.method == method.upper() and r.path == path]

    # -- answering ---------------------------------------------------------------------------------

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """The ``httpx2`` transport entry point: answer ``request`` in process."""
        recorded = RecordedRequest(
            request.method,
            request.url.raw_path.decode("ascii"),
            [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw],
            request.read(),
        )
        status, headers, body = self.answer(recorded)
        return httpx2.Response(status, headers=headers, content=body, request=request)

    def answer(self, request: RecordedRequest) -> Answer:
        """Record ``request`` and answer it as API Gateway and the API function would."""
        with self._lock:
            self.requests.append(request)
            if self.check_signatures:
                access_key, secret_key, token = self.credentials or (
                    os.environ.get("AWS_ACCESS_KEY_ID", ""),
                    os.environ.get("AWS_SECRET_ACCESS_KEY", ""),
                    os.environ.get("AWS_SESSION_TOKEN"),
                )
                try:
                    verify_sigv4(request, access_key=access_key, secret_key=secret_key, token=token, region=REGION)
                except SignatureMismatch as exc:
                    message = "The request signature we calculated does not match the signature you provided."
                    return _json_answer(403, {"message": f"{message} ({str(exc).splitlines()[0]})"})
            path = request.path
            if self.stage != "$default":
                prefix = f"/{self.stage}"
                if not path.startswith(prefix + "/"):
                    return _json_answer(404, {"message": "Not Found"})
                path = path.removeprefix(prefix)
            for route in template_routes():
                match = route.pattern.match(path)
                if match and route.method == request.method:
                    break
            else:
                return _json_answer(404, {"message": "Not Found"})
            if self.advance_on_poll and route.path == "/operations/{operationId}" and request.method == "GET":
                self.driver.step(match["operationId"])
            return self.invoke(api_gateway_event(request, route, match.groupdict(), self.stage))

    def invoke(self, event: dict[str, Any]) -> Answer:
        """Call the handler with ``event`` and return its proxy result as an HTTP answer."""
        result = self.handler(event, LambdaContext())
        body = result.get("body") or ""
        data = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode()
        headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
        for key, values in (result.get("multiValueHeaders") or {}).items():
            headers[str(key)] = ",".join(str(v) for v in values)
        return int(result["statusCode"]), headers, data

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """Set-up shortcut: one unsigned, unrecorded request straight to the handler; ``(status, JSON)``."""
        status, _, payload = self.exchange(method, path, body)
        return status, json.loads(payload) if payload else None

    def exchange(self, method: str, path: str, body: Any = None) -> Answer:
        """One unsigned, unrecorded request straight to the handler; ``(status, headers, body bytes)``."""
        data = json.dumps(body).encode() if body is not None else b""
        headers = [("host", urlsplit(API_URL).netloc)] + ([("content-type", "application/json")] if data else [])
        request = RecordedRequest(method, path, headers, data)
        route = next(r for r in template_routes() if r.method == method and r.pattern.match(urlsplit(path).path))
        match = route.pattern.match(urlsplit(path).path)
        assert match is not None
        return self.invoke(api_gateway_event(request, route, match.groupdict(), "$default"))

    # -- seeding -----------------------------------------------------------------------------------

    def create_cluster(
        self,
        tag: str,
        *,
        availability_zone: str = "us-west-2c",
        instance_type: str = "ml.g6.4xlarge",
        instance_count: int = 1,
    ) -> dict[str, Any]:
        """``POST /clusters`` (unrecorded); returns the 202 operation. The cluster is CREATING."""
        status, op = self.call(
            "POST",
            "/clusters",
            {
                "clusterTag": tag,
                "availabilityZone": availability_zone,
                "instanceGroups": [
                    {
                        "instanceGroupName": "accel",
                        "instanceType": instance_type,
                        "instanceCount": instance_count,
                        "capacityType": "OnDemand",
                    }
                ],
            },
        )
        assert status == 202, op
        return dict(op)

    def add_cluster(self, tag: str, *, failed_stage: str | None = None, **spec: Any) -> dict[str, Any]:
        """A cluster created through the API and driven to READY, or to FAILED at ``failed_stage``.

        The failure is the driver's default error (HyperPod's ``ResourceLimitExceeded``).
        Returns the ``GET /clusters/{tag}`` answer.

        The first such cluster of a process is made through the API and the driver; what that left in moto
        (every item of the table, the create execution's name and input) is kept, and a later call with the
        same arguments, on an empty table and with no fault pending, writes those items and starts that
        execution instead of driving every step again (:class:`_CreatedCluster`). The answer is read
        through the API either way.
        """
        key = (tag, failed_stage, json.dumps(spec, sort_keys=True))
        replay = _CREATED.get(key) if not self.driver.pending_faults() else None
        if replay is None or not replay.replay(self.driver.runtime):
            fresh = not self.driver.pending_faults() and _CreatedCluster.table_is_empty(self.driver.runtime)
            op = self.create_cluster(tag, **spec)
            if failed_stage is not None:
                self.driver.fail(failed_stage)
            self.driver.run(op["operationId"])
            if fresh:
                _CREATED[key] = _CreatedCluster.capture(self.driver.runtime, op["operationId"])
        status, cluster = self.call("GET", f"/clusters/{tag}")
        assert status == 200 and cluster["status"] == ("FAILED" if failed_stage else "READY"), cluster
        return dict(cluster)

    # -- loopback ----------------------------------------------------------------------------------

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Serve this API on an ephemeral 127.0.0.1 port (for a console script in a child process).

        Yields the base URL, e.g. ``http://127.0.0.1:43125``.
        """
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = api.answer(
                    RecordedRequest(self.command, self.path, list(self.headers.items()), body)
                )
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        self.served_url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self.served_url
        finally:
            self.served_url = None
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def _json_answer(status: int, body: Any) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


# -- the workflows' record keeping ----------------------------------------------------------------

OBSERVED_RUNNING = {
    "network": "CREATE_IN_PROGRESS",
    "access": "PENDING",
    "dependencies": "CREATING",
    "hyperpod": "Creating",
    "storage": "Pending",
    "verify": "WAITING_FOR_NODES",
}
OBSERVED_DONE = {
    "network": "CREATE_COMPLETE",
    "access": "ACTIVE",
    "dependencies": "ACTIVE",
    "hyperpod": "InService",
    "storage": "Bound",
    "verify": "READY",
}
DEFAULT_FAILURE = (
    "ResourceLimitExceeded",
    "The account-level service limit 'ml.g6.4xlarge for cluster usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 1 Instances.",
)


@dataclass(frozen=True)
class _CreatedCluster:
    """What :meth:`InProcessApi.add_cluster` left in moto from an empty table: the table's items (DynamoDB JSON)
    and the create execution (name, input) the API started."""

    items: tuple[dict[str, Any], ...]
    execution_name: str
    execution_input: str

    @staticmethod
    def table_is_empty(runtime: Any) -> bool:
        """Whether the control plane's table holds no item (DynamoDB ``Scan`` with ``Limit`` 1)."""
        return not runtime.client("dynamodb").scan(TableName=runtime.store.table_name, Limit=1)["Items"]

    @classmethod
    def capture(cls, runtime: Any, operation_id: str) -> _CreatedCluster:
        """Every item of the table (``Scan``) and the input of execution ``operation_id`` (``DescribeExecution``)."""
        ddb = runtime.client("dynamodb")
        pages = ddb.get_paginator("scan").paginate(TableName=runtime.store.table_name)
        items = [item for page in pages for item in page["Items"]]
        arn = STATE_MACHINE_ARN.format(CREATE_SM).replace(":stateMachine:", ":execution:") + f":{operation_id}"
        described = runtime.client("stepfunctions").describe_execution(executionArn=arn)
        return cls(tuple(items), operation_id, described["input"])

    def replay(self, runtime: Any) -> bool:
        """Write the kept items into the (empty) table and start the create execution again; False (nothing
        written) when the table is not empty."""
        if not self.table_is_empty(runtime):
            return False
        ddb = runtime.client("dynamodb")
        for start in range(0, len(self.items), 25):
            batch = [{"PutRequest": {"Item": item}} for item in self.items[start : start + 25]]
            ddb.batch_write_item(RequestItems={runtime.store.table_name: batch})
        runtime.client("stepfunctions").start_execution(
            stateMachineArn=STATE_MACHINE_ARN.format(CREATE_SM), name=self.execution_name, input=self.execution_input
        )
        return True


_CREATED: dict[tuple[str, str | None, str], _CreatedCluster] = {}
"""Clusters :meth:`InProcessApi.add_cluster` made in this process, by its arguments."""


@dataclass
class _Fault:
    code: str
    message: str
    remaining: int


class WorkflowDriver:
    """Moves operations' records as the create, retry and delete workflows do, through the real steps.

    The ONLY place the unit tests drive the core's workflow: the bookkeeping at the edges of stages and
    operations runs through the steps function's own dispatch (:func:`instantstart.clusters.steps.run_step`
    with the actions the state machines use), and what a stage's AWS steps would observe is recorded
    through the store (``Store.record_observations``, ``Store.merge_stage_resources``).

    One :meth:`step` of a create or retry: the first stage of the operation not yet SUCCEEDED goes
    RUNNING (a new attempt), or from RUNNING to SUCCEEDED — recording what the real step observes
    (``eks`` after network, ``hyperPod`` after hyperpod, ``storage``, ``nodes`` after verify) — or to
    FAILED with the error of a fault set by :meth:`fail` (the workflow's failure path). When every
    stage SUCCEEDED, the operation SUCCEEDS and the cluster is READY. A delete tears the stages down in
    reverse order (``teardownStatus`` RUNNING, SUCCEEDED) and ends with the cluster DELETED.

    Args:
        runtime: the :class:`instantstart.runtime.Runtime` the API handler uses.
    """

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self._faults: dict[str, _Fault] = {}

    def pending_faults(self) -> bool:
        """Whether a fault set by :meth:`fail` is still to be met."""
        return any(fault.remaining > 0 for fault in self._faults.values())

    def fail(
        self, stage: str, code: str = DEFAULT_FAILURE[0], message: str = DEFAULT_FAILURE[1], times: int = 1
    ) -> None:
        """Make the next ``times`` attempts of ``stage`` fail with AWS error ``code``/``message``."""
        self._faults[stage] = _Fault(code, message, times)

    def run(self, operation_id: str, max_steps: int = 100) -> str:
        """Step ``operation_id`` until it ends; returns its final status."""
        for _ in range(max_steps):
            status = self.step(operation_id)
            if status in ("SUCCEEDED", "FAILED", "CANCELLED"):
                return status
        raise AssertionError(f"operation {operation_id} did not end within {max_steps} steps")

    def _run(self, action: str, op: Any, **extra: Any) -> None:
        from instantstart.clusters.steps import run_step

        run_step(
            self.runtime,
            {
                "action": action,
                "operationId": op.operation_id,
                "operationType": op.type.value,
                "clusterTag": op.cluster_tag,
                "generation": op.generation,
                **extra,
            },
        )

    def step(self, operation_id: str) -> str | None:
        """Move ``operation_id`` one step (nothing for an unknown or ended one); returns its status after."""
        from instantstart.models.common import OperationType, StageName

        store = self.runtime.store
        op = store.get_operation(operation_id)
        if op is None or op.status.terminal:
            return None if op is None else op.status.value
        if op.type is OperationType.DELETE_CLUSTER:
            self._teardown_step(op)
        else:
            stages = list(StageName)
            self._create_step(op, stages[stages.index(op.stage or stages[0]) :])
        after = store.get_operation(operation_id)
        return after.status.value if after else None

    def _create_step(self, op: Any, stages: list[Any]) -> None:
        from instantstart.models.common import StageStatus

        rt = self.runtime
        for stage in stages:
            record = rt.store.get_stage(op.cluster_tag, op.generation, stage)
            status = record.status if record else None
            if status is StageStatus.SUCCEEDED:
                continue
            if status in (StageStatus.PENDING, StageStatus.FAILED, StageStatus.CANCELLED):
                self._run("begin_stage", op, stage=stage.value)
                rt.store.merge_stage_resources(
                    op.cluster_tag,
                    op.generation,
                    stage,
                    {},
                    now=_now(),
                    observed_status=OBSERVED_RUNNING[stage.value],
                )
                return
            fault = self._faults.get(stage.value)
            if fault is not None and fault.remaining > 0:
                fault.remaining -= 1
                self._run("record_failure", op, stage=stage.value, error={"Error": fault.code, "Cause": fault.message})
                return
            self._observe(op.cluster_tag, op.generation, stage)
            self._run("complete_stage", op, stage=stage.value)
            rt.store.merge_stage_resources(
                op.cluster_tag, op.generation, stage, {}, now=_now(), observed_status=OBSERVED_DONE[stage.value]
            )
            return
        self._run("complete_create", op)

    def _observe(self, tag: str, generation: int, stage: Any) -> None:
        """What the stage's real steps record when it succeeds (resource ids and the cluster views)."""
        from instantstart.models.cluster import EksView, HyperPodView, InstanceGroupView, NodeView, StorageView
        from instantstart.naming import eks_cluster_name, hyperpod_cluster_name, storage_bucket_name

        rt = self.runtime
        cluster = rt.store.get_cluster(tag)
        groups = cluster.request.instance_groups if cluster else []
        resources: dict[str, Any] = {}
        name = stage.value
        if name == "network":
            vpc_id = f"vpc-{uuid.uuid4().hex[:17]}"
            resources = {"vpcId": vpc_id}
            eks = EksView(
                cluster_name=eks_cluster_name(tag),
                cluster_arn=f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{eks_cluster_name(tag)}",
                status="ACTIVE",
                kubernetes_version="1.32",
                endpoint=f"https://{uuid.uuid4().hex[:32].upper()}.gr7.{REGION}.eks.amazonaws.com",
                vpc_id=vpc_id,
            )
            rt.store.record_observations(tag, now=_now(), eks=eks)
        elif name == "hyperpod":
            arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/{uuid.uuid4().hex[:12]}"
            resources = {"hyperPodClusterArn": arn}
            view = HyperPodView(
                cluster_name=hyperpod_cluster_name(tag),
                cluster_arn=arn,
                status="InService",
                instance_groups=[
                    InstanceGroupView(
                        instance_group_name=g.instance_group_name,
                        instance_type=g.instance_type,
                        instance_count=g.instance_count,
                        current_count=g.instance_count,
                        status="InService",
                        capacity_type=g.capacity_type,
                    )
                    for g in groups
                ],
            )
            rt.store.record_observations(tag, now=_now(), hyper_pod=view)
        elif name == "storage":
            bucket = storage_bucket_name(tag, ACCOUNT, REGION)
            resources = {"bucketName": bucket}
            storage = StorageView(
                bucket_name=bucket, persistent_volume_claim="s3-claim", namespace="default", phase="Bound"
            )
            rt.store.record_observations(tag, now=_now(), storage=storage)
        elif name == "verify":
            nodes = []
            for g in groups:
                for _ in range(g.instance_count):
                    instance_id = f"i-0{uuid.uuid4().hex[:16]}"
                    nodes.append(
                        NodeView(
                            node_name=f"hyperpod-{instance_id}",
                            instance_id=instance_id,
                            instance_type=g.instance_type,
                            instance_group_name=g.instance_group_name,
                            ready=True,
                            health_status="Schedulable",
                        )
                    )
            resources = {"readyNodes": len(nodes), "expectedNodes": len(nodes), "pvcPhase": "Bound"}
            rt.store.record_observations(tag, now=_now(), nodes=nodes)
        if resources:
            rt.store.merge_stage_resources(tag, generation, stage, resources, now=_now())

    def _teardown_step(self, op: Any) -> None:
        from instantstart.models.common import StageName, StageStatus

        rt = self.runtime
        for stage in reversed(list(StageName)):
            record = rt.store.get_stage(op.cluster_tag, op.generation, stage)
            teardown = record.teardown_status if record else None
            if teardown is None:
                self._run("begin_teardown", op, stage=stage.value)
                return
            if teardown is StageStatus.RUNNING:
                self._run("complete_teardown", op, stage=stage.value)
                return
        self._run("complete_delete", op)


def _now() -> str:
    from instantstart.clusters.records import now

    return now()
