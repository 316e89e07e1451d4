"""SageMaker managed MLflow of a cluster, the reads the API side, the steps and the release share: the recorded
connection and the training jobs' environment, and the tracking server or app as SageMaker describes it (its kind,
status, ARN, whether it is ours).

:mod:`instantstart.mlflow.service` re-exports these.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.mlflow import identity
from instantstart.models.mlflow import MlflowConnection, MlflowKind
from instantstart.naming import owned_by
from instantstart.runtime import Runtime

JOB_RUN_TAG = "instantstart.job"
"""The MLflow run tag naming the training job of a run (value: the job's name)."""
EXPERIMENT_ENV = "MLFLOW_EXPERIMENT_NAME"
"""The environment variable naming the experiment of a cluster's runs (value: the cluster tag)."""
JOB_NAME_ENV = "INSTANTSTART_JOB_NAME"
"""The environment variable naming the training job (value of the run tag :data:`JOB_RUN_TAG`)."""
FAILED = frozenset({"CreateFailed", "UpdateFailed", "DeleteFailed", "StartFailed", "StopFailed", "MaintenanceFailed"})
GOING = frozenset({"Deleting", "Deleted"})
SETTLED = frozenset({"Created", "Updated", "Started", "MaintenanceComplete"})
NOT_FOUND = "ResourceNotFound"


# -- reads shared by the API and the steps --------------------------------------------------------
def connection(rt: Runtime, tag: str) -> MlflowConnection | None:
    """The cluster's MLflow connection as recorded (no AWS call), or None when not connected.

    For the training recipes: ``connection(rt, tag).environment`` (``MLFLOW_TRACKING_URI`` = the ARN, which the
    ``sagemaker-mlflow`` plugin resolves; ``MLFLOW_TRACKING_SERVER_ARN`` or ``MLFLOW_APP_ARN``), plus
    :func:`job_environment`; pods run as ``serviceAccountName`` in ``namespace`` to get AWS credentials.
    """
    record = rt.store.get_cluster(tag)
    return record.mlflow if record is not None else None


def job_environment(conn: MlflowConnection, tag: str, job_name: str) -> dict[str, str]:
    """The environment of a training job's containers: the connection's (:attr:`MlflowConnection.environment`),
    ``MLFLOW_EXPERIMENT_NAME`` = the cluster tag and ``INSTANTSTART_JOB_NAME`` = the job's name.

    MLflow has no environment variable for run tags: the job's training script (or the recipe's launcher) starts its
    runs with ``tags={"instantstart.job": os.environ["INSTANTSTART_JOB_NAME"]}`` (:data:`JOB_RUN_TAG`), which is how
    the job's runs are found.
    """
    return {**conn.environment, EXPERIMENT_ENV: tag, JOB_NAME_ENV: job_name}


def arn_kind(arn: str) -> MlflowKind:
    """The kind of a SageMaker MLflow ARN (``mlflow-tracking-server/`` or ``mlflow-app/``)."""
    return MlflowKind.APP if ":mlflow-app/" in arn else MlflowKind.TRACKING_SERVER


def describe(sm: Any, kind: MlflowKind, arn_or_name: str) -> dict[str, Any] | None:
    """SageMaker ``DescribeMlflowTrackingServer`` (by the name in the ARN) or ``DescribeMlflowApp``; None when
    SageMaker answers ``ResourceNotFound``."""
    try:
        if kind is MlflowKind.TRACKING_SERVER:
            return dict(sm.describe_mlflow_tracking_server(TrackingServerName=arn_or_name.rsplit("/", 1)[-1]))
        return dict(sm.describe_mlflow_app(Arn=arn_or_name))
    except ClientError as exc:
        if error_code(exc) == NOT_FOUND:
            return None
        raise


def status_of(kind: MlflowKind, found: dict[str, Any]) -> str:
    """``TrackingServerStatus`` or ``Status`` of a description."""
    return str(found.get("TrackingServerStatus" if kind is MlflowKind.TRACKING_SERVER else "Status") or "")


def arn_of(kind: MlflowKind, found: dict[str, Any]) -> str:
    """``TrackingServerArn`` or ``Arn`` of a description."""
    return str(found.get("TrackingServerArn" if kind is MlflowKind.TRACKING_SERVER else "Arn") or "")


def find_ours(rt: Runtime, tag: str, kind: MlflowKind) -> dict[str, Any] | None:
    """The server or app named ``instantstart-<tag>`` (any owner), or None.

    Apps are found by name through ``ListMlflowApps`` (their ARN holds a generated id); calls
    ``DescribeMlflowTrackingServer`` / ``DescribeMlflowApp``.
    """
    sm = rt.client("sagemaker")
    name = identity.resource_name(tag)
    if kind is MlflowKind.TRACKING_SERVER:
        return describe(sm, kind, name)
    token: str | None = None
    while True:
        page = sm.list_mlflow_apps(**({"NextToken": token} if token else {}), MaxResults=100)
        for summary in page.get("Summaries", []):
            if summary.get("Name") == name and summary.get("Status") not in GOING:
                return describe(sm, kind, str(summary["Arn"]))
        token = page.get("NextToken")
        if not token:
            return None


def is_owned(rt: Runtime, arn: str, tag: str) -> bool:
    """Whether the SageMaker resource ``arn`` carries this cluster's ownership tags (``ListTags``)."""
    try:
        return owned_by(rt.client("sagemaker").list_tags(ResourceArn=arn).get("Tags", []), tag)
    except ClientError as exc:
        if error_code(exc) in (NOT_FOUND, "ValidationException"):
            return False
        raise
