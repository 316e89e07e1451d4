"""MLflow's REST API on the cluster's SageMaker managed MLflow: runs searched by experiment and run tags (for a
training job's runs, :func:`instantstart.training.runs.list_job_runs`).

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
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from instantstart.aws.clients import session
from instantstart.models.mlflow import MlflowKind, MlflowRunView
from instantstart.runtime import Runtime

SIGNING_NAME = "sagemaker-mlflow"
ARN_HEADER = "x-mlflow-sm-tracking-server-arn"
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
