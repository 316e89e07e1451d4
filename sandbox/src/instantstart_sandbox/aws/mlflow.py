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

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateMlflowTrackingServer.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateMlflowApp.html
"""

from __future__ import annotations

import random
import re
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from instantstart_sandbox.aws import backends
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse
from instantstart_sandbox.clock import SimClock

CREATE_SECONDS = 1200.0
"""A tracking server or app takes about 20 minutes to create in an account."""
DELETE_SECONDS = 300.0
SIZES = ("Small", "Medium", "Large")
MLFLOW_VERSIONS = ("2.13.2", "2.16.2", "3.0.0")
DEFAULT_MLFLOW_VERSION = "3.0.0"
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$")
_ARTIFACT_URI = re.compile(r"^s3://([^/]+)/?(.*)$")

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
