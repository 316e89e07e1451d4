"""SageMaker managed MLflow: tracking servers and MLflow apps on the simulated clock (moto 5.2.5 has neither).

Operations (botocore ``sagemaker`` shapes): Create/Describe/Delete/ListMlflowTrackingServer(s),
CreatePresignedMlflowTrackingServerUrl, Create/Describe/Delete/ListMlflowApp(s), and ListTags of their ARNs.

Rules, as SageMaker states them where the API reference does, else the harsher reading (said so):

- names follow botocore's ``TrackingServerName``/``MlflowAppName`` pattern (``ValidationException``); a tracking
  server name is unique in the account and Region (``ResourceInUse``), an app name too (harsher: the reference says
  the name is not part of the app's ARN and is silent on duplicates);
- ``ArtifactStoreUri`` must be ``s3://<bucket>[/prefix]`` of a bucket that exists (``ValidationException``; the
  ``https`` form of botocore's pattern is refused: harsher), ``RoleArn`` an IAM role that exists
  (``ValidationException``), ``TrackingServerSize`` Small|Medium|Large (default Small), ``MlflowVersion`` one of
  :data:`MLFLOW_VERSIONS` (default :data:`DEFAULT_MLFLOW_VERSION`; an app always runs the default);
- status ``Creating`` for :data:`CREATE_SECONDS` then ``Created``; Delete answers at once and the resource is
  ``Deleting`` for :data:`DELETE_SECONDS`, then gone (``ResourceNotFound``). Deleting a ``Creating`` resource is
  refused with ``ValidationException`` (harsher: the reference does not say);
- a test can make the next creation fail (:meth:`SageMakerMlflow.fail_next_create`): ``CreateFailed`` instead of
  ``Created``.

The MLflow REST API of a server or app (requests signed for ``sagemaker-mlflow``; the resource is named by the
``x-mlflow-sm-tracking-server-arn`` header, as every server shares the sandbox endpoint): ``GET
/api/2.0/mlflow/experiments/get-by-name`` and ``POST /api/2.0/mlflow/runs/search`` (``experiment_ids``, a ``filter``
of ``tags.<key> = '<value>'`` / ``params.<key> = '<value>'`` terms joined by ``AND``, ``max_results``,
``page_token``), answered as MLflow answers them (``RESOURCE_DOES_NOT_EXIST`` 404, ``INVALID_PARAMETER_VALUE`` 400);
only a ``Created`` resource answers (503 otherwise). Runs are logged by tests with :meth:`SageMakerMlflow.log_run`.

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateMlflowTrackingServer.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateMlflowApp.html
"""

from __future__ import annotations

import json
import random
import re
import string
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from instantstart_sandbox.aws import backends
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse, WSGIEnviron
from instantstart_sandbox.clock import SimClock

CREATE_SECONDS = 1200.0
"""A tracking server or app takes about 20 minutes to create in an account."""
DELETE_SECONDS = 300.0
SIZES = ("Small", "Medium", "Large")
MLFLOW_VERSIONS = ("2.13.2", "2.16.2", "3.0.0")
DEFAULT_MLFLOW_VERSION = "3.0.0"
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$")
_ARTIFACT_URI = re.compile(r"^s3://([^/]+)/?(.*)$")
_FILTER_TERM = re.compile(r"^\s*(tags|params)\.(`[^`]+`|[\w.\-]+)\s*=\s*'([^']*)'\s*$")
ARN_HEADER = "HTTP_X_MLFLOW_SM_TRACKING_SERVER_ARN"

Handler = Callable[[AwsRequest, Callable[[], RawResponse]], Any]


@dataclass
class MlflowResource:
    """A tracking server (``kind`` = "server") or an MLflow app (``kind`` = "app")."""

    kind: str
    name: str
    arn: str
    artifact_store_uri: str
    role_arn: str
    mlflow_version: str
    size: str | None
    created_at: float
    request: dict[str, Any]
    status: str = "Creating"
    tags: list[dict[str, str]] = field(default_factory=list)
    generation: int = 0
    experiments: dict[str, str] = field(default_factory=dict)  # name -> experiment id
    runs: list[dict[str, Any]] = field(default_factory=list)  # MLflow Run objects


def _invalid(field_path: str, value: Any, constraint: str) -> AwsError:
    return AwsError(
        "ValidationException",
        f"1 validation error detected: Value '{value}' at '{field_path}' failed to satisfy constraint: {constraint}",
    )


def _bucket_exists(account_id: str, bucket: str) -> bool:
    from moto.s3.models import s3_backends

    return bucket in s3_backends[account_id]["aws"].buckets


class SageMakerMlflow:
    """SageMaker managed MLflow of the sandbox (see module docstring). Thread-safe."""

    def __init__(self, clock: SimClock, region: str, account_id: str) -> None:
        self.clock = clock
        self.region = region
        self.account_id = account_id
        self._lock = threading.RLock()
        self._resources: dict[str, MlflowResource] = {}  # by ARN
        self._fail_next: str | None = None

    def handlers(self) -> dict[str, Handler]:
        """Operation name -> handler."""
        return {
            "CreateMlflowTrackingServer": lambda req, fwd: self._create("server", req.params),
            "DescribeMlflowTrackingServer": lambda req, fwd: self._describe_server(req.params),
            "DeleteMlflowTrackingServer": lambda req, fwd: self._delete(self._server(req.params)),
            "ListMlflowTrackingServers": lambda req, fwd: self._list("server", req.params),
            "CreatePresignedMlflowTrackingServerUrl": lambda req, fwd: self._presigned(req.params),
            "CreateMlflowApp": lambda req, fwd: self._create("app", req.params),
            "DescribeMlflowApp": lambda req, fwd: self._describe_app(req.params),
            "DeleteMlflowApp": lambda req, fwd: self._delete(self._app(req.params)),
            "ListMlflowApps": lambda req, fwd: self._list("app", req.params),
        }

    # -- test hooks --------------------------------------------------------------------------------
    def fail_next_create(self, message: str = "Internal error while provisioning the tracking server") -> None:
        """The next tracking server or app created ends ``CreateFailed`` (the message is kept for tests)."""
        with self._lock:
            self._fail_next = message

    def find(self, name_or_arn: str) -> MlflowResource | None:
        """The tracking server (by name or ARN) or app (by ARN), or None."""
        with self._lock:
            found = self._resources.get(name_or_arn)
            if found is not None:
                return found
            return next((r for r in self._resources.values() if r.kind == "server" and r.name == name_or_arn), None)

    def reset(self) -> None:
        """Forget every tracking server and app."""
        with self._lock:
            self._resources.clear()
            self._fail_next = None

    # -- validation --------------------------------------------------------------------------------
    def _validate(self, kind: str, params: dict[str, Any]) -> tuple[str, str, str | None]:
        name_key = "TrackingServerName" if kind == "server" else "Name"
        name = str(params.get(name_key) or "")
        if not _NAME.match(name):
            raise _invalid(
                name_key, name, "Member must satisfy regular expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}"
            )
        uri = str(params.get("ArtifactStoreUri") or "")
        match = _ARTIFACT_URI.match(uri)
        if match is None:
            raise _invalid("ArtifactStoreUri", uri, "Member must be an s3:// URI of a general purpose bucket")
        if not _bucket_exists(self.account_id, match.group(1)):
            raise AwsError("ValidationException", f"The S3 bucket {match.group(1)} of ArtifactStoreUri does not exist.")
        role = str(params.get("RoleArn") or "")
        if not role:
            raise _invalid("RoleArn", role, "Member must not be null")
        if not backends.principal_exists(self.account_id, role) or ":role/" not in role:
            raise AwsError("ValidationException", f"RoleArn {role} is not a valid IAM role or does not exist.")
        size = None
        if kind == "server":
            size = str(params.get("TrackingServerSize") or "Small")
            if size not in SIZES:
                raise _invalid("TrackingServerSize", size, f"Member must satisfy enum value set: [{', '.join(SIZES)}]")
            version = str(params.get("MlflowVersion") or DEFAULT_MLFLOW_VERSION)
            if version not in MLFLOW_VERSIONS:
                raise AwsError(
                    "ValidationException",
                    f"MlflowVersion {version} is not supported; supported versions: {', '.join(MLFLOW_VERSIONS)}",
                )
        else:
            version = DEFAULT_MLFLOW_VERSION
        return name, version, size

    # -- operations --------------------------------------------------------------------------------
    def _create(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        name, version, size = self._validate(kind, params)
        with self._lock:
            if any(r.kind == kind and r.name == name for r in self._resources.values()):
                what = "Tracking server" if kind == "server" else "MLflow app"
                raise AwsError("ResourceInUse", f"{what} with name {name} already exists")
            prefix = f"arn:aws:sagemaker:{self.region}:{self.account_id}"
            if kind == "server":
                arn = f"{prefix}:mlflow-tracking-server/{name}"
            else:
                arn = f"{prefix}:mlflow-app/app-" + "".join(
                    random.choices(string.ascii_uppercase + string.digits, k=12)
                )
            resource = MlflowResource(
                kind=kind,
                name=name,
                arn=arn,
                artifact_store_uri=str(params["ArtifactStoreUri"]),
                role_arn=str(params["RoleArn"]),
                mlflow_version=version,
                size=size,
                created_at=self.clock.now(),
                request=dict(params),
                tags=[dict(t) for t in params.get("Tags") or []],
            )
            self._resources[arn] = resource
            failure, self._fail_next = self._fail_next, None
            generation = resource.generation
        self.clock.call_later(CREATE_SECONDS, lambda: self._settle(arn, generation, failure))
        return {"TrackingServerArn": arn} if kind == "server" else {"Arn": arn}

    def _settle(self, arn: str, generation: int, failure: str | None) -> None:
        with self._lock:
            resource = self._resources.get(arn)
            if resource is not None and resource.generation == generation and resource.status == "Creating":
                resource.status = "CreateFailed" if failure else "Created"

    def _server(self, params: dict[str, Any]) -> MlflowResource:
        name = str(params.get("TrackingServerName") or "")
        found = self.find(name)
        if found is None or found.kind != "server":
            raise AwsError("ResourceNotFound", f"Tracking server with name {name} not found")
        return found

    def _app(self, params: dict[str, Any]) -> MlflowResource:
        arn = str(params.get("Arn") or "")
        with self._lock:
            found = self._resources.get(arn)
        if found is None or found.kind != "app":
            raise AwsError("ResourceNotFound", f"MLflow app {arn} not found")
        return found

    def _describe_server(self, params: dict[str, Any]) -> dict[str, Any]:
        r = self._server(params)
        out = {
            "TrackingServerArn": r.arn,
            "TrackingServerName": r.name,
            "ArtifactStoreUri": r.artifact_store_uri,
            "TrackingServerSize": r.size,
            "MlflowVersion": r.mlflow_version,
            "RoleArn": r.role_arn,
            "TrackingServerStatus": r.status,
            "IsActive": "Active" if r.status == "Created" else "Inactive",
            "TrackingServerUrl": f"https://{r.name}.{self.region}.experiments.sagemaker.aws",
            "AutomaticModelRegistration": bool(r.request.get("AutomaticModelRegistration", False)),
            "CreationTime": r.created_at,
            "LastModifiedTime": r.created_at,
        }
        if r.request.get("WeeklyMaintenanceWindowStart"):
            out["WeeklyMaintenanceWindowStart"] = r.request["WeeklyMaintenanceWindowStart"]
        return out

    def _describe_app(self, params: dict[str, Any]) -> dict[str, Any]:
        r = self._app(params)
        return {
            "Arn": r.arn,
            "Name": r.name,
            "ArtifactStoreUri": r.artifact_store_uri,
            "MlflowVersion": r.mlflow_version,
            "RoleArn": r.role_arn,
            "Status": r.status,
            "ModelRegistrationMode": r.request.get("ModelRegistrationMode") or "AutoModelRegistrationDisabled",
            "AccountDefaultStatus": r.request.get("AccountDefaultStatus") or "DISABLED",
            "CreationTime": r.created_at,
            "LastModifiedTime": r.created_at,
        }

    def _delete(self, resource: MlflowResource) -> dict[str, Any]:
        with self._lock:
            if resource.status == "Creating":
                what = "Tracking server" if resource.kind == "server" else "MLflow app"
                raise AwsError(
                    "ValidationException", f"{what} {resource.name} is Creating; it can be deleted once created."
                )
            if resource.status != "Deleting":
                resource.status = "Deleting"
                resource.generation += 1
                generation = resource.generation
                self.clock.call_later(DELETE_SECONDS, lambda: self._gone(resource.arn, generation))
        return {"TrackingServerArn": resource.arn} if resource.kind == "server" else {"Arn": resource.arn}

    def _gone(self, arn: str, generation: int) -> None:
        with self._lock:
            resource = self._resources.get(arn)
            if resource is not None and resource.generation == generation:
                del self._resources[arn]

    def _list(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        status_key = "TrackingServerStatus" if kind == "server" else "Status"
        with self._lock:
            found = [r for r in self._resources.values() if r.kind == kind]
        views: list[dict[str, Any]] = []
        for r in found:
            if params.get(status_key) and r.status != params[status_key]:
                continue
            if params.get("MlflowVersion") and r.mlflow_version != params["MlflowVersion"]:
                continue
            if params.get("CreatedAfter") is not None and r.created_at <= float(params["CreatedAfter"]):
                continue
            if params.get("CreatedBefore") is not None and r.created_at >= float(params["CreatedBefore"]):
                continue
            if kind == "server":
                views.append(
                    {
                        "TrackingServerArn": r.arn,
                        "TrackingServerName": r.name,
                        "CreationTime": r.created_at,
                        "LastModifiedTime": r.created_at,
                        "TrackingServerStatus": r.status,
                        "IsActive": "Active" if r.status == "Created" else "Inactive",
                        "MlflowVersion": r.mlflow_version,
                    }
                )
            else:
                views.append(
                    {
                        "Arn": r.arn,
                        "Name": r.name,
                        "Status": r.status,
                        "CreationTime": r.created_at,
                        "LastModifiedTime": r.created_at,
                        "MlflowVersion": r.mlflow_version,
                    }
                )
        name_key = "TrackingServerName" if kind == "server" else "Name"
        sort_key = {"Name": name_key, "Status": status_key}.get(str(params.get("SortBy") or ""), "CreationTime")
        views.sort(key=lambda v: v[sort_key], reverse=params.get("SortOrder", "Descending") == "Descending")
        start = int(params.get("NextToken") or 0)
        size = int(params.get("MaxResults") or 10)
        out: dict[str, Any] = {
            ("TrackingServerSummaries" if kind == "server" else "Summaries"): views[start : start + size]
        }
        if start + size < len(views):
            out["NextToken"] = str(start + size)
        return out

    def _presigned(self, params: dict[str, Any]) -> dict[str, Any]:
        r = self._server(params)
        if r.status != "Created":
            raise AwsError("ValidationException", f"Tracking server {r.name} is {r.status}; it must be Created.")
        token = "".join(random.choices(string.ascii_letters + string.digits, k=32))
        return {"AuthorizedUrl": f"https://{r.name}.{self.region}.experiments.sagemaker.aws/auth?authToken={token}"}

    def list_tags(self, req: AwsRequest, forward: Callable[[], Any]) -> Any:
        """ListTags of a tracking server or app ARN (the tags given at creation); other ARNs: ``forward``."""
        arn = str(req.params.get("ResourceArn") or "")
        with self._lock:
            found = self._resources.get(arn)
            if found is not None:
                return {"Tags": [dict(t) for t in found.tags]}
        return forward()

    # -- the MLflow REST API -------------------------------------------------------------------------
    def log_run(
        self,
        name_or_arn: str,
        experiment: str,
        *,
        tags: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        metrics: dict[str, list[float]] | None = None,
        status: str = "FINISHED",
    ) -> str:
        """Test hook: log a run to ``experiment`` (created when absent) of a tracking server (name or ARN) or app
        (ARN); ``metrics`` maps a key to its values in step order (the last one is the latest). Returns the run id."""
        resource = self.find(name_or_arn)
        if resource is None:
            raise KeyError(name_or_arn)
        now = int(self.clock.now() * 1000)
        with self._lock:
            experiment_id = resource.experiments.setdefault(experiment, str(len(resource.experiments) + 1))
            run_id = uuid.uuid4().hex
            history = {k: list(v) for k, v in (metrics or {}).items()}
            resource.runs.append(
                {
                    "info": {
                        "run_id": run_id,
                        "run_uuid": run_id,
                        "experiment_id": experiment_id,
                        "run_name": (tags or {}).get("mlflow.runName", run_id[:8]),
                        "status": status,
                        "start_time": now,
                        "end_time": now if status != "RUNNING" else None,
                        "lifecycle_stage": "active",
                        "artifact_uri": f"{resource.artifact_store_uri.rstrip('/')}/{experiment_id}/{run_id}/artifacts",
                    },
                    "data": {
                        "metrics": [
                            {"key": k, "value": v[-1], "timestamp": now, "step": len(v) - 1}
                            for k, v in history.items()
                            if v
                        ],
                        "params": [{"key": k, "value": str(v)} for k, v in (params or {}).items()],
                        "tags": [{"key": k, "value": str(v)} for k, v in (tags or {}).items()],
                    },
                }
            )
        return run_id

    def rest(self, environ: WSGIEnviron, body: bytes) -> RawResponse:
        """Answer one MLflow REST request (see the module docstring)."""
        arn = str(environ.get(ARN_HEADER) or "")
        resource = self.find(arn) if arn else None
        if resource is None:
            return _mlflow_error(404, "RESOURCE_DOES_NOT_EXIST", f"No MLflow tracking server or app {arn or '(none)'}")
        if resource.status != "Created":
            return _mlflow_error(503, "TEMPORARILY_UNAVAILABLE", f"{resource.name} is {resource.status}")
        path = str(environ.get("PATH_INFO") or "")
        method = str(environ.get("REQUEST_METHOD") or "GET")
        query = {k: v[-1] for k, v in _parse_qs(str(environ.get("QUERY_STRING") or "")).items()}
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            return _mlflow_error(400, "MALFORMED_REQUEST", "The request body is not JSON")
        if path == "/api/2.0/mlflow/experiments/get-by-name" and method == "GET":
            name = query.get("experiment_name", "")
            with self._lock:
                found = resource.experiments.get(name)
            if found is None:
                return _mlflow_error(404, "RESOURCE_DOES_NOT_EXIST", f"Could not find experiment with name '{name}'")
            return _mlflow_ok({"experiment": {"experiment_id": found, "name": name, "lifecycle_stage": "active"}})
        if path == "/api/2.0/mlflow/runs/search" and method == "POST":
            return self._search(resource, request)
        return _mlflow_error(404, "ENDPOINT_NOT_FOUND", f"{method} {path} is not served by the sandbox")

    def _search(self, resource: MlflowResource, request: dict[str, Any]) -> RawResponse:
        terms: list[tuple[str, str, str]] = []
        text = str(request.get("filter") or "").strip()
        for part in re.split(r"\s+AND\s+", text, flags=re.IGNORECASE) if text else []:
            match = _FILTER_TERM.match(part)
            if match is None:
                return _mlflow_error(400, "INVALID_PARAMETER_VALUE", f"Unsupported filter term: {part}")
            terms.append((match.group(1), match.group(2).strip("`"), match.group(3)))
        ids = {str(i) for i in request.get("experiment_ids") or []}
        with self._lock:
            runs = [r for r in resource.runs if r["info"]["experiment_id"] in ids]
        for kind, key, value in terms:
            runs = [r for r in runs if {e["key"]: e["value"] for e in r["data"][kind]}.get(key) == value]
        runs.sort(key=lambda r: r["info"]["start_time"], reverse=True)
        size = int(request.get("max_results") or 1000)
        start = int(request.get("page_token") or 0)
        out: dict[str, Any] = {"runs": runs[start : start + size]} if runs[start : start + size] else {}
        if start + size < len(runs):
            out["next_page_token"] = str(start + size)
        return _mlflow_ok(out)


def _parse_qs(text: str) -> dict[str, list[str]]:
    from urllib.parse import parse_qs

    return parse_qs(text)


def _mlflow_ok(body: dict[str, Any]) -> RawResponse:
    return RawResponse(200, [("Content-Type", "application/json")], json.dumps(body).encode())


def _mlflow_error(status: int, code: str, message: str) -> RawResponse:
    body = json.dumps({"error_code": code, "message": message}).encode()
    return RawResponse(status, [("Content-Type", "application/json")], body)
