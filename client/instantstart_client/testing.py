"""Test doubles for consumers of the InstantStart HTTP API (the CLI, the demo, the MCP proxy).

:class:`FakeInstantStartApi` is a small stateful HTTP server on ``127.0.0.1`` that speaks the API
contract (routes, status codes, error shape, pagination, idempotency keys) and walks a created
cluster's stages from PENDING to SUCCEEDED, one step per ``GET /operations/{id}``. It records every
request and, given the credentials, rejects requests whose SigV4 signature is wrong with API
Gateway's 403, so every test that talks to it also checks signing. :func:`verify_sigv4` recomputes a
recorded request's signature with botocore.

It is a double of the contract for unit tests, not an emulation of AWS: the offline sandbox
(``sandbox/``) runs the real control plane.
"""

from __future__ import annotations

import base64
import copy
import hmac
import json
import re
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

STAGE_NAMES = ("network", "access", "dependencies", "hyperpod", "storage", "verify")
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
_AUTH_PATTERN = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<akid>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})"
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class RecordedRequest:
    """One request as the server received it.

    Attributes:
        method: HTTP method.
        target: the request target as sent (path plus raw query string).
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
    """A recorded request's SigV4 ``Authorization`` header is missing, malformed or wrong."""


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
    """Recompute the SigV4 signature of ``request`` with botocore and compare it with the one sent.

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
        method=request.method,
        url=f"http://{headers['host']}{request.target}",
        data=request.body,
        headers=headers,
    )
    aws_request.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(access_key, secret_key, token), service, region)
    canonical = signer.canonical_request(aws_request)
    expected = signer.signature(signer.string_to_sign(aws_request, canonical), aws_request)
    if not hmac.compare_digest(expected, match["signature"]):
        raise SignatureMismatch(f"signature mismatch; canonical request was:\n{canonical}")


@dataclass
class CannedResponse:
    """A scripted answer: status, JSON body (or raw bytes), headers."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The API's error shape ``{"error": {"code", "message", "details"}}``."""
    return {"error": {"code": code, "message": message, "details": details or []}}


@dataclass
class _Op:
    record: dict[str, Any]
    stages: list[str]
    kind: str


class FakeInstantStartApi:
    """A stateful fake of the InstantStart HTTP API on ``127.0.0.1`` (use as a context manager).

    Args:
        zones: ``(zoneName, zoneId)`` pairs of ``GET /catalog/availability-zones``.
        instance_types: types offered in every zone.
        fail_stage: a stage that fails (``fail_times`` times) with ``fail_error`` ``(code, message)``.
        credentials: ``(access_key, secret_key, token)``; when given, requests with a wrong SigV4
            signature are answered 403 like API Gateway.
        region: region the signatures are checked for.
        page_size: default page size of ``GET /clusters``.

    Every ``GET /operations/{id}`` of a running operation advances it one step: the first stage not
    yet SUCCEEDED goes PENDING → RUNNING → SUCCEEDED (or FAILED), and the cluster's ``eks``,
    ``hyperPod``, ``nodes`` and ``storage`` appear as their stages succeed.
    """

    def __init__(
        self,
        *,
        zones: Iterable[tuple[str, str]] = (
            ("us-west-2a", "usw2-az1"),
            ("us-west-2b", "usw2-az2"),
            ("us-west-2c", "usw2-az3"),
        ),
        instance_types: Iterable[str] = ("ml.g5.8xlarge", "ml.g6.4xlarge", "ml.p5.48xlarge"),
        fail_stage: str | None = None,
        fail_times: int = 1,
        fail_error: tuple[str, str] = (
            "ResourceLimitExceeded",
            "The account-level service limit 'ml.g6.4xlarge for cluster usage' is 0 Instances.",
        ),
        credentials: tuple[str, str, str | None] | None = None,
        region: str = "us-west-2",
        page_size: int = 50,
    ) -> None:
        self.zones = list(zones)
        self.instance_types = list(instance_types)
        self.fail_stage = fail_stage
        self.fail_remaining = fail_times if fail_stage else 0
        self.fail_error = fail_error
        self.credentials = credentials
        self.region = region
        self.page_size = page_size
        self.requests: list[RecordedRequest] = []
        self.clusters: dict[str, dict[str, Any]] = {}
        self.operations: dict[str, _Op] = {}
        self.idempotency: dict[str, tuple[str, Any, str]] = {}
        self._injected: dict[tuple[str, str], list[CannedResponse]] = {}
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> FakeInstantStartApi:
        """Serve on an ephemeral port of 127.0.0.1 in a daemon thread."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go in separate writes

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorded = RecordedRequest(self.command, self.path, list(self.headers.items()), body)
                answer = fake.handle(recorded)
                payload = answer.raw if answer.raw is not None else b""
                if answer.raw is None and answer.body is not None:
                    payload = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                if answer.raw is None and answer.body is not None:
                    self.send_header("Content-Type", "application/json")
                for key, value in answer.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-instantstart-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeInstantStartApi:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:43125``."""
        if self._server is None:
            raise RuntimeError("the fake API is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- scripting ----------------------------------------------------------------------------------

    def inject(self, method: str, path: str, *responses: CannedResponse) -> None:
        """Answer the next requests to ``method path`` (no query) with ``responses``, in order."""
        with self._lock:
            self._injected.setdefault((method.upper(), path), []).extend(responses)

    def requests_to(self, method: str, path: str) -> list[RecordedRequest]:
        """Recorded requests with this method and path (query ignored)."""
        return [r for r in self.requests if r.method == method.upper() and r.path == path]

    def add_cluster(
        self,
        tag: str,
        *,
        status: str = "READY",
        availability_zone: str = "us-west-2c",
        instance_type: str = "ml.g6.4xlarge",
        instance_count: int = 1,
        failed_stage: str | None = None,
    ) -> dict[str, Any]:
        """Seed a cluster: READY (every stage SUCCEEDED, resources present), FAILED at ``failed_stage``, or
        another status with PENDING stages."""
        with self._lock:
            cluster = self._new_cluster(tag, availability_zone, instance_type, instance_count, "OnDemand")
            cluster["status"] = status
            for stage in cluster["stages"]:
                if status == "READY" or (
                    failed_stage and STAGE_NAMES.index(stage["name"]) < STAGE_NAMES.index(failed_stage)
                ):
                    self._start_stage(cluster, stage)
                    self._finish_stage(cluster, stage)
                elif stage["name"] == failed_stage:
                    self._start_stage(cluster, stage)
                    stage.update(
                        status="FAILED",
                        endedAt=_now(),
                        error={"code": self.fail_error[0], "message": self.fail_error[1]},
                    )
            self.clusters[tag] = cluster
            return cluster

    # -- request handling ---------------------------------------------------------------------------

    def handle(self, request: RecordedRequest) -> CannedResponse:
        """Record ``request`` and answer it (injected answers first, then the stateful routes)."""
        with self._lock:
            self.requests.append(request)
            if self.credentials is not None:
                access_key, secret_key, token = self.credentials
                try:
                    verify_sigv4(request, access_key=access_key, secret_key=secret_key, token=token, region=self.region)
                except SignatureMismatch as exc:
                    return CannedResponse(403, {"message": f"Forbidden: {str(exc).splitlines()[0]}"})
            queue = self._injected.get((request.method, request.path))
            if queue:
                return queue.pop(0)
            try:
                answer = self._route(request)
            except (KeyError, ValueError, TypeError) as exc:
                return CannedResponse(400, error_body("BadRequest", f"malformed request: {exc}"))
            # A snapshot, so later state changes do not race the serialisation in the handler thread.
            return CannedResponse(answer.status, copy.deepcopy(answer.body), dict(answer.headers), answer.raw)

    def _route(self, request: RecordedRequest) -> CannedResponse:
        method, parts = request.method, [unquote(p) for p in request.path.strip("/").split("/")]
        if parts == ["clusters"]:
            if method == "GET":
                return self._list_clusters(request)
            if method == "POST":
                return self._create_cluster(request)
        if len(parts) == 2 and parts[0] == "clusters":
            if method == "GET":
                return self._get_cluster(parts[1])
            if method == "DELETE":
                return self._idempotent(request, lambda: self._delete_cluster(parts[1]))
        if len(parts) == 3 and parts[0] == "clusters" and parts[2] == "stages" and method == "GET":
            found = self._cluster_or_404(parts[1])
            if isinstance(found, CannedResponse):
                return found
            return CannedResponse(200, {"stages": found["stages"]})
        if (
            len(parts) == 5
            and parts[0] == "clusters"
            and parts[2] == "stages"
            and parts[4] == "retry"
            and method == "POST"
        ):
            return self._idempotent(request, lambda: self._retry_stage(parts[1], parts[3]))
        if len(parts) == 2 and parts[0] == "operations" and method == "GET":
            return self._get_operation(parts[1])
        if parts == ["catalog", "availability-zones"] and method == "GET":
            return CannedResponse(200, {"availabilityZones": [{"zoneName": n, "zoneId": i} for n, i in self.zones]})
        if parts == ["catalog", "instance-types"] and method == "GET":
            zone = request.query.get("availabilityZone")
            if zone not in {n for n, _ in self.zones}:
                return CannedResponse(
                    422,
                    error_body(
                        "ValidationError",
                        f"availabilityZone '{zone}' is not offered",
                        [{"field": "availabilityZone", "message": "unknown zone"}],
                    ),
                )
            return CannedResponse(200, {"instanceTypes": self.instance_types})
        return CannedResponse(404, error_body("NotFound", f"no route {method} {request.path}"))

    def _idempotent(self, request: RecordedRequest, action: Any) -> CannedResponse:
        key = request.header("Idempotency-Key")
        fingerprint = f"{request.method} {request.path}"
        if key and key in self.idempotency:
            seen_fingerprint, seen_body, operation_id = self.idempotency[key]
            if (seen_fingerprint, seen_body) != (fingerprint, request.json()):
                return CannedResponse(
                    409,
                    error_body(
                        "IdempotencyKeyReused",
                        "Idempotency-Key was already used with a different request body; use a new key",
                        [{"field": "Idempotency-Key"}],
                    ),
                )
            return self._operation_answer(self.operations[operation_id].record)
        answer: CannedResponse = action()
        if key and answer.status == 202:
            self.idempotency[key] = (fingerprint, request.json(), answer.body["operationId"])
        return answer

    def _list_clusters(self, request: RecordedRequest) -> CannedResponse:
        query = request.query
        size = int(query.get("maxResults") or self.page_size)
        if not 1 <= size <= 100:
            return CannedResponse(
                422,
                error_body(
                    "ValidationError",
                    "maxResults must be 1-100",
                    [{"field": "maxResults", "message": "1-100"}],
                ),
            )
        tags = sorted(self.clusters)
        start = 0
        token = query.get("nextToken")
        if token:
            try:
                after = base64.b64decode(token.removeprefix("v1+"), validate=True).decode()
            except ValueError:
                return CannedResponse(
                    422,
                    error_body(
                        "ValidationError",
                        "nextToken is invalid",
                        [{"field": "nextToken", "message": "invalid"}],
                    ),
                )
            start = next((i for i, t in enumerate(tags) if t > after), len(tags))
        page = tags[start : start + size]
        next_token = None
        if start + size < len(tags):
            # '+', '/' and '=' make the client percent-encode the token (SigV4 canonical query).
            next_token = "v1+" + base64.b64encode(page[-1].encode()).decode()
        summaries = [
            {
                "clusterTag": c["clusterTag"],
                "status": c["status"],
                "availabilityZone": c["availabilityZone"],
                "createdAt": c["createdAt"],
                "updatedAt": c["updatedAt"],
                "eksClusterName": f"eks-cluster-{c['clusterTag']}",
                "hyperPodClusterName": f"hp-cluster-{c['clusterTag']}",
            }
            for c in (self.clusters[t] for t in page)
        ]
        return CannedResponse(200, {"clusters": summaries, "nextToken": next_token})

    def _create_cluster(self, request: RecordedRequest) -> CannedResponse:
        body = request.json()
        details = []
        for name in ("clusterTag", "availabilityZone", "instanceGroups"):
            if name not in (body or {}):
                details.append({"field": name, "message": "field required"})
        for index, group in enumerate((body or {}).get("instanceGroups") or []):
            if group.get("instanceType") not in self.instance_types:
                details.append(
                    {
                        "field": f"instanceGroups[{index}].instanceType",
                        "message": f"allowed values: {', '.join(self.instance_types)}",
                    }
                )
            if not isinstance(group.get("instanceCount"), int) or group["instanceCount"] < 1:
                details.append({"field": f"instanceGroups[{index}].instanceCount", "message": "must be >= 1"})
        if details:
            return CannedResponse(422, error_body("ValidationError", "the request has invalid fields", details))

        def create() -> CannedResponse:
            tag = body["clusterTag"]
            existing = self.clusters.get(tag)
            if existing is not None and existing["status"] != "DELETED":
                return CannedResponse(
                    409, error_body("Conflict", f"cluster '{tag}' already exists ({existing['status']})")
                )
            group = body["instanceGroups"][0]
            cluster = self._new_cluster(
                tag,
                body["availabilityZone"],
                group["instanceType"],
                group["instanceCount"],
                group.get("capacityType", "OnDemand"),
            )
            if existing is not None:
                cluster["generation"] = existing["generation"] + 1
            self.clusters[tag] = cluster
            return self._start_operation(cluster, "CREATE_CLUSTER", list(STAGE_NAMES))

        return self._idempotent(request, create)

    def _delete_cluster(self, tag: str) -> CannedResponse:
        found = self._cluster_or_404(tag)
        if isinstance(found, CannedResponse):
            return found
        if found["status"] in ("CREATING", "DELETING"):
            return CannedResponse(409, error_body("Conflict", f"cluster '{tag}' is {found['status']}"))
        found["status"] = "DELETING"
        return self._start_operation(found, "DELETE_CLUSTER", [])

    def _retry_stage(self, tag: str, stage_name: str) -> CannedResponse:
        found = self._cluster_or_404(tag)
        if isinstance(found, CannedResponse):
            return found
        stage = next((s for s in found["stages"] if s["name"] == stage_name), None)
        if stage is None:
            return CannedResponse(404, error_body("NotFound", f"cluster '{tag}' has no stage '{stage_name}'"))
        if stage["status"] != "FAILED":
            return CannedResponse(409, error_body("Conflict", f"stage '{stage_name}' is {stage['status']}, not FAILED"))
        names = list(STAGE_NAMES[STAGE_NAMES.index(stage_name) :])
        for other in found["stages"]:
            if other["name"] in names:
                other.update(status="PENDING", error=None, endedAt=None, observedStatus=None)
        found["status"] = "CREATING"
        answer = self._start_operation(found, "RETRY_STAGE", names)
        self.operations[answer.body["operationId"]].record["stage"] = stage_name
        return answer

    def _get_cluster(self, tag: str) -> CannedResponse:
        found = self._cluster_or_404(tag)
        if isinstance(found, CannedResponse):
            return found
        return CannedResponse(200, {k: v for k, v in found.items() if not k.startswith("_")})

    def _get_operation(self, operation_id: str) -> CannedResponse:
        op = self.operations.get(operation_id)
        if op is None:
            return CannedResponse(404, error_body("NotFound", f"operation '{operation_id}' does not exist"))
        if op.record["status"] in ("PENDING", "RUNNING"):
            self._advance(op)
        return CannedResponse(200, op.record)

    # -- state machine ------------------------------------------------------------------------------

    def _cluster_or_404(self, tag: str) -> dict[str, Any] | CannedResponse:
        cluster = self.clusters.get(tag)
        if cluster is None:
            return CannedResponse(404, error_body("NotFound", f"cluster '{tag}' does not exist"))
        return cluster

    def _new_cluster(self, tag: str, zone: str, instance_type: str, count: int, capacity_type: str) -> dict[str, Any]:
        now = _now()
        return {
            "clusterTag": tag,
            "generation": 1,
            "status": "CREATING",
            "availabilityZone": zone,
            "region": self.region,
            "createdAt": now,
            "updatedAt": now,
            "currentOperationId": None,
            "stages": [
                {
                    "name": name,
                    "order": order,
                    "status": "PENDING",
                    "attempts": 0,
                    "startedAt": None,
                    "endedAt": None,
                    "observedStatus": None,
                    "resources": {},
                    "error": None,
                }
                for order, name in enumerate(STAGE_NAMES, start=1)
            ],
            "eks": None,
            "hyperPod": None,
            "nodes": [],
            "storage": None,
            "_spec": {"instanceType": instance_type, "instanceCount": count, "capacityType": capacity_type},
        }

    def _start_operation(self, cluster: dict[str, Any], kind: str, stages: list[str]) -> CannedResponse:
        operation_id = str(uuid.uuid4())
        now = _now()
        record = {
            "operationId": operation_id,
            "type": kind,
            "status": "PENDING",
            "clusterTag": cluster["clusterTag"],
            "statusUrl": f"/operations/{operation_id}",
            "createdAt": now,
            "updatedAt": now,
            "endedAt": None,
            "error": None,
        }
        self.operations[operation_id] = _Op(record=record, stages=stages, kind=kind)
        cluster["currentOperationId"] = operation_id
        cluster["updatedAt"] = now
        return self._operation_answer(record)

    def _operation_answer(self, record: dict[str, Any]) -> CannedResponse:
        return CannedResponse(202, dict(record), {"Location": record["statusUrl"]})

    def _start_stage(self, cluster: dict[str, Any], stage: dict[str, Any]) -> None:
        stage.update(status="RUNNING", attempts=stage["attempts"] + 1, startedAt=_now(), endedAt=None)
        stage["observedStatus"] = OBSERVED_RUNNING[stage["name"]]

    def _finish_stage(self, cluster: dict[str, Any], stage: dict[str, Any]) -> None:
        tag, spec = cluster["clusterTag"], cluster["_spec"]
        stage.update(status="SUCCEEDED", endedAt=_now(), observedStatus=OBSERVED_DONE[stage["name"]], error=None)
        name = stage["name"]
        if name == "network":
            cluster["eks"] = {
                "clusterName": f"eks-cluster-{tag}",
                "clusterArn": f"arn:aws:eks:{self.region}:111122223333:cluster/eks-cluster-{tag}",
                "status": "ACTIVE",
                "kubernetesVersion": "1.32",
                "endpoint": f"https://{tag}.eks.example",
                "vpcId": "vpc-0abc",
            }
            stage["resources"] = {"stackName": f"instantstart-{tag}-network"}
        elif name == "hyperpod":
            cluster["hyperPod"] = {
                "clusterName": f"hp-cluster-{tag}",
                "clusterArn": f"arn:aws:sagemaker:{self.region}:111122223333:cluster/hp{tag}",
                "status": "InService",
                "instanceGroups": [
                    {
                        "instanceGroupName": "accel",
                        "instanceType": spec["instanceType"],
                        "instanceCount": spec["instanceCount"],
                        "currentCount": spec["instanceCount"],
                        "status": "InService",
                        "capacityType": spec["capacityType"],
                    }
                ],
            }
            cluster["nodes"] = [
                {
                    "nodeName": f"hyperpod-i-0{index:016x}",
                    "instanceType": spec["instanceType"],
                    "instanceGroupName": "accel",
                    "ready": True,
                    "healthStatus": "Schedulable",
                }
                for index in range(spec["instanceCount"])
            ]
        elif name == "storage":
            cluster["storage"] = {
                "bucketName": f"instantstart-{tag}-data",
                "persistentVolumeClaim": "s3-claim",
                "namespace": "default",
                "phase": "Bound",
            }

    def _advance(self, op: _Op) -> None:
        record = op.record
        cluster = self.clusters[record["clusterTag"]]
        now = _now()
        record["updatedAt"] = cluster["updatedAt"] = now
        if record["status"] == "PENDING":
            record["status"] = "RUNNING"
            return
        if op.kind == "DELETE_CLUSTER":
            cluster.update(status="DELETED", currentOperationId=None, eks=None, hyperPod=None, nodes=[], storage=None)
            record.update(status="SUCCEEDED", endedAt=now)
            return
        for stage in cluster["stages"]:
            if stage["name"] not in op.stages or stage["status"] == "SUCCEEDED":
                continue
            if stage["status"] == "PENDING":
                self._start_stage(cluster, stage)
                return
            if stage["name"] == self.fail_stage and self.fail_remaining > 0:
                self.fail_remaining -= 1
                code, message = self.fail_error
                stage.update(status="FAILED", endedAt=now, error={"code": code, "message": message})
                cluster.update(status="FAILED", currentOperationId=None)
                record.update(status="FAILED", endedAt=now, error={"code": code, "message": message})
                return
            self._finish_stage(cluster, stage)
            return
        cluster.update(status="READY", currentOperationId=None)
        record.update(status="SUCCEEDED", endedAt=now)
