"""Routes of model downloads and self-managed inference deployments (managed endpoints: ``api_routes.endpoints``).

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path
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
    idempotency,
    runtime,
)
from instantstart.inference import invoke as inference_invoke
from instantstart.inference import service as inference
from instantstart.models.errors import pattern_rule
from instantstart.models.inference import (
    DEPLOYMENT_NAME_MAX,
    DEPLOYMENT_NAME_PATTERN,
    DEPLOYMENT_NAME_RULE,
    CreateInferenceDeploymentRequest,
    CreateRouterRequest,
    DownloadModelRequest,
    InferenceDeploymentAccepted,
    InferenceDeploymentList,
    InferenceDeploymentView,
    InvokeDeploymentRequest,
    InvokeDeploymentView,
    ModelDownloadAccepted,
    ModelList,
    ScaleInferenceDeploymentRequest,
)

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="inference")


# -- model downloads and self-managed inference ---------------------------------------------------------------------
InferenceDeploymentName = Annotated[
    str,
    Path(
        alias="name",
        pattern=DEPLOYMENT_NAME_PATTERN,
        max_length=DEPLOYMENT_NAME_MAX,
        description="Inference deployment name.",
        examples=["qwen-vllm"],
        json_schema_extra=pattern_rule(DEPLOYMENT_NAME_RULE),
    ),
]
_DEPLOYMENT_ACCEPTED: dict[int, OpenAPIResponse] = accepted_response(InferenceDeploymentAccepted)


@router.post(
    "/clusters/<clusterTag>/models",
    operation_id="DownloadModel",
    summary="Download a Hugging Face model into the cluster's storage (asynchronous: a Kubernetes Job)",
    description="destination s3 writes to s3://<cluster bucket>/models/<modelId>/ (pods see /s3/models/<modelId>); "
    "fsx to /fsx/models/<modelId> and needs the fsx feature with a file system (409 FeatureNotEnabled naming fsx). A "
    "gated model's token only as hfTokenSecret (a Secret's name and key in namespace default), never a value. The "
    "DOWNLOAD_MODEL operation applies the Job and ends when it completes; its result shows the bytes and files "
    "under the prefix so far. A download does not hold the cluster's operation lock: day-2 changes run beside it and "
    "it starts beside them on a READY or DEGRADED cluster (409 ClusterNotReady otherwise). It locks its model at its "
    "destination: while one runs, another download of the same modelId to the same destination (any revision) is "
    "409 OperationInProgress naming it and its cancel route. A cluster delete stops running downloads (CANCELLED, "
    "ClusterDeleted).",
    responses={
        **accepted_response(ModelDownloadAccepted),
        **_errors(400, 404, 409, 415, 422, 503),
    },
    tags=["models"],
    openapi_extensions=_faces(
        "model_download",
        "Download a model into the cluster's storage",
        (
            "Download a Hugging Face model into the cluster's storage (POST /clusters/{clusterTag}/models) as a "
            "Kubernetes Job. Returns the model's path for pods (modelPath) and its DOWNLOAD_MODEL operation: poll it "
            "with operation_get (result.downloadedBytes/downloadedFiles show progress) until SUCCEEDED. It does not "
            "block other cluster changes; a 409 OperationInProgress names a download of the same model and "
            "destination that still runs (cancel it with operation_cancel or wait). A 409 FeatureNotEnabled names "
            "fsx when the destination is fsx and the feature is off. Write tool: needs --allow-write."
        ),
        cli="models download",
        body="download",
    ),
)
def download_model(
    cluster_tag: ClusterTagPath,
    request: DownloadModelRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[ModelDownloadAccepted]:
    """Start the DOWNLOAD_MODEL operation."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/models",
        idempotency_key,
        request.to_api(),
        ModelDownloadAccepted,
        lambda: inference.download_model(runtime(), cluster_tag, request).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/models",
    operation_id="ListModels",
    summary="Models in the cluster's bucket (models/) and on its FSx for Lustre file system, with size and files",
    description="Read from storage (S3 ListObjectsV2 with Delimiter), not from our records: a model copied there by "
    "other means is listed too. Models on the fsx feature's file system (destination fsx, modelPath "
    "/fsx/models/<id>) are read from s3://<bucket>/fsx/models/, where the feature's data repository association "
    "exports the file system's /models (auto-export, asynchronous: a file appears some time after it is written; FSx "
    "DescribeFileSystems and DescribeDataRepositoryAssociations). fsx.listed false gives the reason they cannot be "
    "listed (no file system, SCRATCH_1 or Lustre before 2.12, the association missing or not AVAILABLE).",
    responses={**_ok(ModelList), **_errors(404, 422, 503)},
    tags=["models"],
    openapi_extensions=_faces(
        "model_list",
        "List the models in the cluster's storage",
        (
            "The models in the cluster's bucket under models/ (read from S3): modelId, modelPath for "
            "inference_deployment_create, size in bytes, files. Read-only."
        ),
        cli="models list",
        read_only=True,
    ),
)
def list_models(cluster_tag: ClusterTagPath) -> Response[ModelList]:
    """The stored models."""
    return _json(inference.list_models(runtime(), cluster_tag))


@router.post(
    "/clusters/<clusterTag>/inference/deployments",
    operation_id="CreateInferenceDeployment",
    summary="Deploy a model with vLLM or SGLang (self-managed Deployment + Service; asynchronous)",
    description="Checked first: instanceType is the type of one of the cluster's instance groups (422 listing them), "
    "gpus at most the type's (422; the tensor parallel size is gpus), modelPath under /fsx needs the fsx feature "
    "(409). The Service is ClusterIP unless service.type is LoadBalancer (an internal NLB; internet-facing only with "
    "service.exposure internet-facing). The CREATE_INFERENCE_DEPLOYMENT operation validates both objects with a "
    "server-side dry run and applies them; follow readiness with GET .../inference/deployments/{name}.",
    responses={**_DEPLOYMENT_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_deployment_create",
        "Deploy a model with vLLM or SGLang",
        (
            "Deploy a stored model with vLLM or SGLang (POST /clusters/{clusterTag}/inference/deployments): a "
            "Deployment and a Service (ClusterIP unless asked). Read the instantstart-inference skill first. A 422 on "
            "instanceType lists the cluster's types (details[0].allowedValues). Returns the "
            "CREATE_INFERENCE_DEPLOYMENT operation; then follow readiness with inference_deployment_get. Write tool: "
            "needs --allow-write."
        ),
        cli="deployments create",
        body="deployment",
    ),
)
def create_inference_deployment(
    cluster_tag: ClusterTagPath,
    request: CreateInferenceDeploymentRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceDeploymentAccepted]:
    """Check the rules, then start the operation that applies the deployment."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/inference/deployments",
        idempotency_key,
        request.to_api(),
        InferenceDeploymentAccepted,
        lambda: inference.create_deployment(runtime(), cluster_tag, request).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/inference/deployments",
    operation_id="ListInferenceDeployments",
    summary="The cluster's self-managed inference deployments with status and replicas",
    responses={**_ok(InferenceDeploymentList), **_errors(404, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_deployment_list",
        "List inference deployments",
        ("The cluster's self-managed inference deployments: engine, model, status, replicas ready/desired. Read-only."),
        cli="deployments list",
        read_only=True,
    ),
)
def list_inference_deployments(
    cluster_tag: ClusterTagPath,
) -> Response[InferenceDeploymentList]:
    """Every deployment made here."""
    return _json(inference.list_deployments(runtime(), cluster_tag))


@router.get(
    "/clusters/<clusterTag>/inference/deployments/<name>",
    operation_id="GetInferenceDeployment",
    summary="An inference deployment: spec, status, replicas, pods, Service, router",
    responses={**_ok(InferenceDeploymentView), **_errors(404, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_deployment_get",
        "Get an inference deployment",
        (
            "An inference deployment: status, replicas, pods (node, phase, ready, bound model), its Service URL and "
            "router. Read-only."
        ),
        cli="deployments get",
        read_only=True,
    ),
)
def get_inference_deployment(
    cluster_tag: ClusterTagPath, name: InferenceDeploymentName
) -> Response[InferenceDeploymentView]:
    """One deployment."""
    return _json(inference.get_deployment(runtime(), cluster_tag, name))


@router.patch(
    "/clusters/<clusterTag>/inference/deployments/<name>",
    operation_id="ScaleInferenceDeployment",
    summary="Scale an inference deployment (asynchronous)",
    description="Scale-in removes idle pods first (controller.kubernetes.io/pod-deletion-cost set from each pod's "
    "instantstart.io/bound-model annotation) and is refused with 409 BoundPodsWouldBeRemoved when replicas is below "
    "the number of pods serving a bound model.",
    responses={**_DEPLOYMENT_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_deployment_scale",
        "Scale an inference deployment",
        (
            "Scale an inference deployment (PATCH .../inference/deployments/{name}); idle pods are removed before "
            "pods serving a bound model. Returns the UPDATE_INFERENCE_DEPLOYMENT operation. Write tool: needs "
            "--allow-write."
        ),
        cli="deployments scale",
        destructive=True,
        idempotent=True,
    ),
)
def scale_inference_deployment(
    cluster_tag: ClusterTagPath,
    name: InferenceDeploymentName,
    request: ScaleInferenceDeploymentRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceDeploymentAccepted]:
    """Start the UPDATE_INFERENCE_DEPLOYMENT operation."""
    return _idempotent_202(
        f"PATCH /clusters/{cluster_tag}/inference/deployments/{name}",
        idempotency_key,
        request.to_api(),
        InferenceDeploymentAccepted,
        lambda: inference.scale_deployment(runtime(), cluster_tag, name, request).to_api(),
    )


@router.delete(
    "/clusters/<clusterTag>/inference/deployments/<name>",
    operation_id="DeleteInferenceDeployment",
    summary="Delete an inference deployment, its Service and router (asynchronous)",
    responses={**_DEPLOYMENT_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_deployment_delete",
        "Delete an inference deployment",
        (
            "Delete an inference deployment, its Service and router (DELETE .../inference/deployments/{name}); "
            "destructive: the model stops serving. Returns the DELETE_INFERENCE_DEPLOYMENT operation. Write tool: "
            "needs --allow-write."
        ),
        cli="deployments delete",
        destructive=True,
        idempotent=True,
        confirm=True,
    ),
)
def delete_inference_deployment(
    cluster_tag: ClusterTagPath,
    name: InferenceDeploymentName,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceDeploymentAccepted]:
    """Start the DELETE_INFERENCE_DEPLOYMENT operation."""
    return _idempotent_202(
        f"DELETE /clusters/{cluster_tag}/inference/deployments/{name}",
        idempotency_key,
        {"name": name},
        InferenceDeploymentAccepted,
        lambda: inference.delete_deployment(runtime(), cluster_tag, name).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/inference/deployments/<name>/router",
    operation_id="CreateInferenceRouter",
    summary="Put the SGLang cache-aware router in front of an SGLang deployment (optional KEDA autoscaling)",
    description="409 RouterNeedsSGLang for a vLLM deployment; with autoscaling, 409 KedaNotInstalled when the "
    "cluster does not serve keda.sh/v1alpha1 ScaledObject. The CREATE_INFERENCE_ROUTER operation applies the "
    "router's ServiceAccount, Role, RoleBinding, Deployment and Service (and the ScaledObject on the workers).",
    responses={**_DEPLOYMENT_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_deployment_router",
        "Put the SGLang router in front of a deployment",
        (
            "Put the SGLang cache-aware router in front of an SGLang deployment (POST .../deployments/{name}/router), "
            "optionally with a KEDA ScaledObject on the workers. 409 RouterNeedsSGLang for vLLM, 409 KedaNotInstalled "
            "when KEDA is missing. Returns the CREATE_INFERENCE_ROUTER operation. Write tool: needs --allow-write."
        ),
        cli="deployments router",
        idempotent=True,
        body="router",
    ),
)
def create_inference_router(
    cluster_tag: ClusterTagPath,
    name: InferenceDeploymentName,
    request: CreateRouterRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceDeploymentAccepted]:
    """Start the CREATE_INFERENCE_ROUTER operation."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/inference/deployments/{name}/router",
        idempotency_key,
        request.to_api(),
        InferenceDeploymentAccepted,
        lambda: inference.create_router(runtime(), cluster_tag, name, request).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/inference/deployments/<name>/invoke",
    operation_id="InvokeInferenceDeployment",
    summary="Call a self-managed model: the engine's OpenAI-compatible route through the Kubernetes service proxy",
    description="body is sent as application/json to route (v1/completions or v1/chat/completions) of the "
    "deployment's Service, or of its SGLang router when it has one (via chooses); body.model defaults to the served "
    "model name. At most 1 MiB serialised (413 naming body); the answer is parsed as JSON when it fits 256 KiB, else "
    "returned cut as text with truncated true. 409 InferenceDeploymentNotReady when no replica is ready, 502 "
    "ModelError with the engine's status and message when it answers an error, 503 when Kubernetes refuses the "
    "proxy or the engine does not answer within 20 s. With an Idempotency-Key a repeated call replays the first "
    "answer instead of calling the model again.",
    responses={**_ok(InvokeDeploymentView), **_errors(400, 404, 409, 413, 415, 422, 502, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_deployment_invoke",
        "Call a self-managed deployment's model",
        (
            "Call the model of a self-managed vLLM/SGLang deployment: its OpenAI-compatible route (v1/completions by "
            "default, v1/chat/completions with messages) through the Kubernetes service proxy, via its SGLang router "
            "when it has one. body.model defaults to the served model name; at most 1 MiB sent, the answer cut at 256 "
            "KiB. 409 InferenceDeploymentNotReady while no replica is ready (check inference_deployment_get), 502 "
            "ModelError with the engine's own error. Every call without a repeated idempotencyKey reaches the engine. "
            "Allowed in read-only mode: it changes nothing in AWS."
        ),
        cli="deployments invoke",
        read_only=True,
    ),
)
def invoke_inference_deployment(
    cluster_tag: ClusterTagPath,
    name: InferenceDeploymentName,
    request: InvokeDeploymentRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InvokeDeploymentView]:
    """Invoke the deployment; without an Idempotency-Key every call reaches the engine."""
    from api_idempotency import run_idempotent

    answer = run_idempotent(
        idempotency(),
        route=f"POST /clusters/{cluster_tag}/inference/deployments/{name}/invoke",
        key=idempotency_key,
        body=request.to_api(),
        call=lambda: inference_invoke.invoke_deployment(runtime(), cluster_tag, name, request).to_api(),
    )
    return _json(InvokeDeploymentView.model_validate(answer))
