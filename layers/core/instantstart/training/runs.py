"""A training job's MLflow runs (``GET /clusters/{clusterTag}/training-jobs/{name}/runs``): the job looked up as
``GET .../training-jobs/{name}`` does, then its runs read from the cluster's SageMaker managed MLflow through MLflow's
REST API (:mod:`instantstart.mlflow.runs`).

The convention (:mod:`instantstart.mlflow.service`): the experiment is named after the cluster tag and each run of a
job carries the run tag ``instantstart.job=<job name>``.
"""

from __future__ import annotations

import re

from instantstart.clusters import records
from instantstart.errors import Conflict, UpstreamUnavailable, ValidationFailed
from instantstart.mlflow import runs as mlflow_runs
from instantstart.mlflow import service as mlflow_service
from instantstart.models.mlflow import MlflowRunList
from instantstart.models.training_jobs import JOB_NAME_MAX
from instantstart.runtime import Runtime
from instantstart.training.reads import find_job

JOB_NAME_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""A training job's name is a DNS-1123 label (so it is safe inside the filter's quotes)."""


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
    conn = mlflow_service.connection(rt, tag)
    if conn is None:
        raise Conflict(
            f"cluster '{tag}' has no MLflow connection; connect one with PUT /clusters/{tag}/mlflow",
            code="MlflowNotConnected",
            details=[{"field": "clusterTag"}],
        )
    find_job(rt, tag, job_name, namespace)
    found = mlflow_service.describe(rt.client("sagemaker"), conn.kind, conn.arn)
    status = mlflow_service.status_of(conn.kind, found) if found else "NotFound"
    if status not in mlflow_service.SETTLED:
        raise Conflict(f"{conn.arn} is {status}", code="MlflowNotReady", details=[{"field": "clusterTag"}])
    try:
        endpoint = mlflow_runs.endpoint_of(rt, conn.kind, found)
        run_tags = {mlflow_service.JOB_RUN_TAG: job_name}
        runs = mlflow_runs.search_runs(endpoint, rt.region, conn.arn, tag, run_tags, max_results)
    except (mlflow_runs.MlflowRestError, OSError) as exc:
        raise UpstreamUnavailable(f"MLflow of {conn.arn} did not answer the run search: {exc}") from exc
    return MlflowRunList(
        cluster_tag=tag,
        job_name=job_name,
        experiment_name=tag,
        mlflow_arn=conn.arn,
        runs=[mlflow_runs.run_view(r) for r in runs],
    )
