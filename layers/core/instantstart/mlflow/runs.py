"""A training job's MLflow runs, read from the cluster's SageMaker managed MLflow (for
``GET /clusters/{clusterTag}/training-jobs/{name}/runs``).

The convention (:mod:`instantstart.mlflow.service`): the experiment is named after the cluster tag and each run of a
job carries the run tag ``instantstart.job=<job name>``. The runs are found with MLflow's REST API
(``GET /api/2.0/mlflow/experiments/get-by-name``, ``POST /api/2.0/mlflow/runs/search``) on the tracking server, signed
with SigV4 for the ``sagemaker-mlflow`` service (the same authorization the ``sagemaker-mlflow`` plugin uses; the
caller needs ``sagemaker-mlflow:GetExperimentByName`` and ``sagemaker-mlflow:SearchRuns``) and naming the resource in
the ``x-mlflow-sm-tracking-server-arn`` header.

Endpoint: ``AWS_ENDPOINT_URL_SAGEMAKER_MLFLOW`` or ``AWS_ENDPOINT_URL`` when set (botocore's endpoint override
convention), else the tracking server's ``TrackingServerUrl``; an MLflow app has no URL in DescribeMlflowApp, so its
Regional endpoint ``https://<region>.experiments.sagemaker.aws`` is used (not documented: the harsher reading is that
it may differ, and the answer is then a 503 naming the app).

MLflow REST reference: https://mlflow.org/docs/latest/rest-api.html
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from instantstart.aws.clients import session
from instantstart.clusters import records
from instantstart.errors import Conflict, UpstreamUnavailable, ValidationFailed
from instantstart.mlflow import service
from instantstart.models.mlflow import MlflowKind, MlflowRunList, MlflowRunView
from instantstart.models.training_jobs import JOB_NAME_MAX
from instantstart.runtime import Runtime
from instantstart.training import service as training

SIGNING_NAME = "sagemaker-mlflow"
ARN_HEADER = "x-mlflow-sm-tracking-server-arn"
JOB_NAME_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""A training job's name is a DNS-1123 label (so it is safe inside the filter's quotes)."""
TIMEOUT_SECONDS = 10.0
MAX_RUNS = 1000


class MlflowRestError(Exception):
    """An MLflow REST answer other than 2xx: ``status``, MLflow's ``error_code`` and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


def call(endpoint: str, region: str, resource_arn: str, method: str, path: str, body: Any = None) -> dict[str, Any]:
    """One signed MLflow REST call; the JSON answer.

    Raises:
        MlflowRestError: a non-2xx answer (MLflow's ``error_code`` and ``message``).
    """
    data = json.dumps(body).encode() if body is not None else None
    headers = {ARN_HEADER: resource_arn}
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = AWSRequest(method=method, url=endpoint.rstrip("/") + path, data=data, headers=headers)
    credentials = session().get_credentials()
    if credentials is None:
        raise MlflowRestError(401, "NoCredentials", "no AWS credentials to sign the MLflow request")
    SigV4Auth(credentials.get_frozen_credentials(), SIGNING_NAME, region).add_auth(request)
    prepared = urllib.request.Request(str(request.url), data=data, headers=dict(request.headers.items()), method=method)
    try:
        with urllib.request.urlopen(prepared, timeout=TIMEOUT_SECONDS) as answer:
            return dict(json.loads(answer.read() or b"{}"))
    except urllib.error.HTTPError as exc:
        try:
            found = json.loads(exc.read() or b"{}")
        except ValueError:
            found = {}
        code = str(found.get("error_code") or exc.reason)
        raise MlflowRestError(exc.code, code, str(found.get("message") or "")) from exc


def search_runs(
    endpoint: str, region: str, resource_arn: str, experiment: str, filters: dict[str, str], max_results: int = MAX_RUNS
) -> list[dict[str, Any]]:
    """The runs of ``experiment`` whose tags equal ``filters`` (newest first), following ``next_page_token``; empty
    when the experiment does not exist.

    Raises:
        MlflowRestError: MLflow refused the request.
    """
    query = urllib.parse.urlencode({"experiment_name": experiment})
    try:
        found = call(endpoint, region, resource_arn, "GET", f"/api/2.0/mlflow/experiments/get-by-name?{query}")
    except MlflowRestError as exc:
        if exc.code == "RESOURCE_DOES_NOT_EXIST":
            return []
        raise
    experiment_id = str(found["experiment"]["experiment_id"])
    text = " AND ".join(f"tags.`{k}` = '{v}'" for k, v in filters.items())
    runs: list[dict[str, Any]] = []
    token: str | None = None
    while len(runs) < max_results:
        body: dict[str, Any] = {"experiment_ids": [experiment_id], "filter": text, "max_results": max_results}
        if token:
            body["page_token"] = token
        page = call(endpoint, region, resource_arn, "POST", "/api/2.0/mlflow/runs/search", body)
        runs += list(page.get("runs") or [])
        token = page.get("next_page_token")
        if not token:
            break
    return runs[:max_results]


def run_view(run: dict[str, Any]) -> MlflowRunView:
    """An MLflow Run as the API shows it: ids, status, times (epoch ms), params, latest metrics, tags."""
    info, data = run.get("info") or {}, run.get("data") or {}
    return MlflowRunView(
        run_id=str(info.get("run_id") or info.get("run_uuid") or ""),
        run_name=info.get("run_name"),
        status=info.get("status"),
        start_time=info.get("start_time"),
        end_time=info.get("end_time"),
        params={p["key"]: p["value"] for p in data.get("params") or []},
        metrics={m["key"]: m["value"] for m in data.get("metrics") or []},
        tags={t["key"]: t["value"] for t in data.get("tags") or [] if not str(t["key"]).startswith("mlflow.")},
    )


def endpoint_of(rt: Runtime, kind: MlflowKind, found: dict[str, Any] | None) -> str:
    """Where MLflow's REST API of the connected resource is (see the module docstring)."""
    override = os.environ.get("AWS_ENDPOINT_URL_SAGEMAKER_MLFLOW") or os.environ.get("AWS_ENDPOINT_URL")
    if override:
        return override
    if kind is MlflowKind.TRACKING_SERVER and found and found.get("TrackingServerUrl"):
        return str(found["TrackingServerUrl"])
    return f"https://{rt.region}.experiments.sagemaker.aws"


def list_job_runs(
    rt: Runtime, tag: str, job_name: str, namespace: str = "default", max_results: int = 100
) -> MlflowRunList:
    """The MLflow runs of training job ``namespace/job_name`` of cluster ``tag`` (experiment ``tag``, run tag
    ``instantstart.job=<job_name>``), newest first, with their params and latest metrics.

    With a connection, the job is looked up as ``GET .../training-jobs/{name}`` does (the Kubernetes API through the
    API role's view entry): a name that is no job of that namespace is a 404, not an empty list.
    Calls SageMaker ``DescribeMlflowTrackingServer``/``DescribeMlflowApp`` and MLflow's REST API (see module).

    Raises:
        NotFound: no live cluster with this tag; ``TrainingJobNotFound`` (no such job in ``namespace``).
        ValidationFailed: ``name`` is not a DNS-1123 label.
        Conflict: ``MlflowNotConnected``; ``MlflowNotReady`` when the server is not Created.
        UpstreamUnavailable: MLflow did not answer or refused (its error code and message); Kubernetes could not
            be read in time.
    """
    if not JOB_NAME_PATTERN.match(job_name) or len(job_name) > JOB_NAME_MAX:
        raise ValidationFailed(
            f"'{job_name}' is not a training job name (a DNS-1123 label)", details=[{"field": "name"}]
        )
    records.live_cluster(rt, tag)
    conn = service.connection(rt, tag)
    if conn is None:
        raise Conflict(
            f"cluster '{tag}' has no MLflow connection; connect one with PUT /clusters/{tag}/mlflow",
            code="MlflowNotConnected",
            details=[{"field": "clusterTag"}],
        )
    training.find_job(rt, tag, job_name, namespace)
    found = service.describe(rt.client("sagemaker"), conn.kind, conn.arn)
    status = service.status_of(conn.kind, found) if found else "NotFound"
    if status not in service.SETTLED:
        raise Conflict(f"{conn.arn} is {status}", code="MlflowNotReady", details=[{"field": "clusterTag"}])
    try:
        runs = search_runs(
            endpoint_of(rt, conn.kind, found), rt.region, conn.arn, tag, {service.JOB_RUN_TAG: job_name}, max_results
        )
    except (MlflowRestError, OSError) as exc:
        raise UpstreamUnavailable(f"MLflow of {conn.arn} did not answer the run search: {exc}") from exc
    return MlflowRunList(
        cluster_tag=tag,
        job_name=job_name,
        experiment_name=tag,
        mlflow_arn=conn.arn,
        runs=[run_view(r) for r in runs],
    )
