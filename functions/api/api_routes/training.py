"""Routes of a cluster's training jobs and their MLflow runs.

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api_routes.common import (
    ClusterTagPath,
    IdempotencyKey,
    _errors,
    _idempotent_202,
    _json,
    _ok,
    accepted_response,
    faces,
    runtime,
)
from instantstart.models.errors import pattern_rule
from instantstart.models.mlflow import MlflowRunList
from instantstart.models.training_jobs import (
    CONTAINER_NAME_MAX,
    CONTAINER_NAME_PATTERN,
    CONTAINER_NAME_RULE,
    JOB_NAME_MAX,
    JOB_NAME_PATTERN,
    JOB_NAME_RULE,
    LIST_DEFAULT_PAGE_SIZE,
    LIST_MAX_PAGE_SIZE,
    LIST_TOKEN_MAX_LENGTH,
    LOG_MAX_SINCE_SECONDS,
    LOG_MAX_TAIL_LINES,
    NAMESPACE_PATTERN,
    NAMESPACE_RULE,
    POD_NAME_MAX,
    POD_NAME_PATTERN,
    POD_NAME_RULE,
    CreateTrainingJobRequest,
    TrainingJobAccepted,
    TrainingJobList,
    TrainingJobLogs,
    TrainingJobRequest,
    TrainingJobView,
)
from instantstart.training import runs as job_runs
from instantstart.training import service as training

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="training")


# -- training jobs ----------------------------------------------------------------------------------------------------
TrainingJobName = Annotated[
    str,
    Path(
        alias="name",
        pattern=JOB_NAME_PATTERN,
        max_length=JOB_NAME_MAX,
        description="Training job name.",
        examples=["llama-sft-1"],
        json_schema_extra=pattern_rule(JOB_NAME_RULE),
    ),
]
_JOB_ACCEPTED: dict[int, OpenAPIResponse] = accepted_response(TrainingJobAccepted)


def _accepted_job(request: TrainingJobRequest, operation_id: str) -> dict[str, Any] | None:
    # The answer of a create whose invocation died after it started operation ``operation_id`` (None: it did not).
    accepted = training.accepted_training_job(runtime(), request, operation_id)
    return accepted.to_api() if accepted is not None else None


@router.post(
    "/clusters/<clusterTag>/training-jobs",
    operation_id="CreateTrainingJob",
    summary="Create a training job from a recipe (asynchronous: the steps apply it)",
    description="One body shape per recipe (pytorch, script, llamafactory, msswift: a HyperPodPyTorchJob; verl: a "
    "KubeRay RayJob). Checked first: the training operator add-on ACTIVE (409 FeatureNotEnabled naming "
    "trainingOperator and the PATCH /clusters/{clusterTag}/features body), task governance for a team, the instance "
    "type's GPUs (EC2 DescribeInstanceTypes) against nprocPerNode and the cluster's groups of that type against "
    "nodes (422 with the numbers). Then a CREATE_TRAINING_JOB operation creates the namespace when missing, "
    "validates the object with a server-side dry run and applies it; it ends once Kubernetes holds the job. "
    "Follow the job with GET /clusters/{clusterTag}/training-jobs/{name}.",
    responses={**_JOB_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["training-jobs"],
    openapi_extensions=_faces(
        "training_job_create",
        "Create a training job from a recipe",
        (
            "Create a training job (POST /clusters/{clusterTag}/training-jobs): one tool, the job's recipe field "
            "picks its shape. Read the instantstart-training-jobs skill first (which recipe, how many nodes, "
            "restarts). Returns the job's name and its CREATE_TRAINING_JOB operation: poll it with operation_get, "
            "then follow the job with training_job_get and training_job_logs. A 409 FeatureNotEnabled names the "
            "feature to turn on (cluster_update_features). Write tool: needs --allow-write."
        ),
        cli="jobs create",
        body="job",
    ),
)
def create_training_job(
    cluster_tag: ClusterTagPath,
    request: Annotated[CreateTrainingJobRequest, Body()],
    idempotency_key: IdempotencyKey = None,
) -> Response[TrainingJobAccepted]:
    """Check the rules, then start the operation that applies the job."""
    job_request: TrainingJobRequest = request
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/training-jobs",
        idempotency_key,
        job_request.to_api(),
        TrainingJobAccepted,
        lambda: training.create_training_job(runtime(), cluster_tag, job_request).to_api(),
        lambda operation_id: _accepted_job(job_request, operation_id),
    )


@router.get(
    "/clusters/<clusterTag>/training-jobs",
    operation_id="ListTrainingJobs",
    summary="List the training jobs of a cluster (HyperPodPyTorchJobs and RayJobs), newest first",
    description="Read from Kubernetes through the API's read-only access entry within a time budget (503 naming the "
    "reason when Kubernetes does not answer or refuses).",
    responses={**_ok(TrainingJobList), **_errors(400, 404, 422, 503)},
    tags=["training-jobs"],
    openapi_extensions=_faces(
        "training_job_list",
        "List a cluster's training jobs",
        "List the cluster's training jobs with status, restarts and age, newest first. Read-only.",
        cli="jobs list",
        read_only=True,
    ),
)
def list_training_jobs(
    cluster_tag: ClusterTagPath,
    namespace: Annotated[
        str | None,
        Query(
            alias="namespace",
            pattern=NAMESPACE_PATTERN,
            max_length=63,
            description="Only this namespace.",
            json_schema_extra=pattern_rule(NAMESPACE_RULE),
        ),
    ] = None,
    max_results: Annotated[
        int,
        Query(alias="maxResults", ge=1, le=LIST_MAX_PAGE_SIZE, description="Most jobs per page."),
    ] = LIST_DEFAULT_PAGE_SIZE,
    next_token: Annotated[
        str | None,
        Query(alias="nextToken", max_length=LIST_TOKEN_MAX_LENGTH, description="nextToken of the previous page."),
    ] = None,
) -> Response[TrainingJobList]:
    """A page of jobs."""
    return _json(
        training.list_training_jobs(
            runtime(), cluster_tag, namespace=namespace, max_results=max_results, next_token=next_token
        )
    )


@router.get(
    "/clusters/<clusterTag>/training-jobs/<name>",
    operation_id="GetTrainingJob",
    summary="A training job: spec summary, status, conditions, restart history, pods",
    responses={**_ok(TrainingJobView), **_errors(404, 422, 503)},
    tags=["training-jobs"],
    openapi_extensions=_faces(
        "training_job_get",
        "Get a training job",
        ("A training job: spec summary, status, conditions, restart history, pods (node, phase, restarts). Read-only."),
        cli="jobs get",
        read_only=True,
    ),
)
def get_training_job(
    cluster_tag: ClusterTagPath,
    name: TrainingJobName,
    namespace: JobNamespace = "default",
) -> Response[TrainingJobView]:
    """One job."""
    return _json(training.get_training_job(runtime(), cluster_tag, name, namespace))


@router.get(
    "/clusters/<clusterTag>/training-jobs/<name>/logs",
    operation_id="GetTrainingJobLogs",
    summary="Log text of one pod of a training job (rank 0 by default), bounded size",
    description=f"At most {training.LOG_MAX_BYTES} bytes (the tail is kept; truncated says so). Without tailLines "
    f"and sinceSeconds the last {training.LOG_DEFAULT_TAIL_LINES} lines.",
    responses={**_ok(TrainingJobLogs), **_errors(404, 422, 503)},
    tags=["training-jobs"],
    openapi_extensions=_faces(
        "training_job_logs",
        "Read a training job's logs",
        (
            "Log text of one pod of a training job (rank 0 by default), bounded in size (the tail is kept; truncated "
            "says so). To follow a running job, call again with sinceSeconds set to the seconds since the last call. "
            "Read-only."
        ),
        cli="jobs logs",
        read_only=True,
    ),
)
def get_training_job_logs(
    cluster_tag: ClusterTagPath,
    name: TrainingJobName,
    namespace: JobNamespace = "default",
    pod: Annotated[
        str | None,
        Query(
            alias="pod",
            pattern=POD_NAME_PATTERN,
            max_length=POD_NAME_MAX,
            description="Pod (default: rank 0).",
            json_schema_extra=pattern_rule(POD_NAME_RULE),
        ),
    ] = None,
    container: Annotated[
        str | None,
        Query(
            alias="container",
            pattern=CONTAINER_NAME_PATTERN,
            max_length=CONTAINER_NAME_MAX,
            description="Container (default: the job's training container).",
            json_schema_extra=pattern_rule(CONTAINER_NAME_RULE),
        ),
    ] = None,
    tail_lines: Annotated[
        int | None, Query(alias="tailLines", ge=1, le=LOG_MAX_TAIL_LINES, description="Last lines.")
    ] = None,
    since_seconds: Annotated[
        int | None,
        Query(alias="sinceSeconds", ge=1, le=LOG_MAX_SINCE_SECONDS, description="Lines of the last seconds."),
    ] = None,
) -> Response[TrainingJobLogs]:
    """Logs of one pod."""
    return _json(
        training.training_job_logs(
            runtime(),
            cluster_tag,
            name,
            namespace,
            pod=pod,
            container=container,
            tail_lines=tail_lines,
            since_seconds=since_seconds,
        )
    )


@router.delete(
    "/clusters/<clusterTag>/training-jobs/<name>",
    operation_id="DeleteTrainingJob",
    summary="Delete a training job and its pods (asynchronous: the steps delete it)",
    responses={**_JOB_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["training-jobs"],
    openapi_extensions=_faces(
        "training_job_delete",
        "Delete a training job and its pods",
        (
            "Delete a training job and its pods (DELETE .../training-jobs/{name}); destructive: its running processes "
            "stop. Returns the DELETE_TRAINING_JOB operation. Write tool: needs --allow-write."
        ),
        cli="jobs delete",
        destructive=True,
        idempotent=True,
        confirm=True,
    ),
)
def delete_training_job(
    cluster_tag: ClusterTagPath,
    name: TrainingJobName,
    namespace: JobNamespace = "default",
    idempotency_key: IdempotencyKey = None,
) -> Response[TrainingJobAccepted]:
    """Start the DELETE_TRAINING_JOB operation."""
    return _idempotent_202(
        f"DELETE /clusters/{cluster_tag}/training-jobs/{name}",
        idempotency_key,
        {"name": name, "namespace": namespace},
        TrainingJobAccepted,
        lambda: training.delete_training_job(runtime(), cluster_tag, name, namespace).to_api(),
    )


JobNamespace = Annotated[
    str,
    Query(
        alias="namespace",
        pattern=NAMESPACE_PATTERN,
        max_length=63,
        description="Namespace of the job (default: default).",
        json_schema_extra=pattern_rule(NAMESPACE_RULE),
    ),
]


@router.get(
    "/clusters/<clusterTag>/training-jobs/<name>/runs",
    operation_id="ListTrainingJobRuns",
    summary="A training job's MLflow runs (params, latest metrics)",
    description="The runs of experiment <clusterTag> carrying the run tag instantstart.job=<name> on the cluster's "
    "MLflow (MLflow REST runs/search, signed for sagemaker-mlflow), newest first, with their params, the latest value "
    "of each metric and their tags. The job is looked up as GET .../training-jobs/<name> does: 404 "
    "TrainingJobNotFound when no job of that name is in the namespace; a job that never logged answers an empty "
    "list. 409 MlflowNotConnected / MlflowNotReady; 503 when MLflow or Kubernetes does not answer.",
    responses={**_ok(MlflowRunList), **_errors(404, 409, 422, 503)},
    tags=["mlflow"],
    openapi_extensions=_faces(
        "mlflow_list_job_runs",
        "List a training job's MLflow runs",
        (
            "List a training job's MLflow runs (GET /clusters/{clusterTag}/training-jobs/{name}/runs): the runs of "
            "experiment clusterTag tagged instantstart.job=name, newest first, with status, params and the latest "
            "value of each metric. 404 TrainingJobNotFound when no job of that name is in the namespace; 409 "
            "MlflowNotConnected when the cluster has no MLflow (see mlflow_get). Read-only."
        ),
        cli="mlflow runs",
        read_only=True,
    ),
)
def list_training_job_runs(
    cluster_tag: ClusterTagPath,
    name: Annotated[
        str,
        Path(
            pattern=JOB_NAME_PATTERN,
            max_length=JOB_NAME_MAX,
            description="The training job's name (the training jobs' name rule).",
            examples=["llama-sft"],
            json_schema_extra=pattern_rule(JOB_NAME_RULE),
        ),
    ],
    namespace: JobNamespace = "default",
) -> Response[MlflowRunList]:
    """A training job's MLflow runs."""
    return _json(job_runs.list_job_runs(runtime(), cluster_tag, name, namespace))
