"""Routes of managed inference endpoints (the HyperPod inference operator).

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
from instantstart.inference import endpoints as inference_endpoints
from instantstart.models.errors import pattern_rule
from instantstart.models.inference_endpoints import (
    ENDPOINT_NAME_MAX,
    ENDPOINT_NAME_PATTERN,
    ENDPOINT_NAME_RULE,
    CreateInferenceEndpointRequest,
    InferenceEndpointAccepted,
    InferenceEndpointList,
    InferenceEndpointView,
    InvokeEndpointRequest,
    InvokeEndpointView,
)

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="inference")

# -- managed inference endpoints (the HyperPod inference operator) ---------------------------------------------------
InferenceEndpointName = Annotated[
    str,
    Path(
        alias="name",
        pattern=ENDPOINT_NAME_PATTERN,
        max_length=ENDPOINT_NAME_MAX,
        description="Inference endpoint name (the InferenceEndpointConfig or JumpStartModel in namespace default).",
        examples=["qwen-managed"],
        json_schema_extra=pattern_rule(ENDPOINT_NAME_RULE),
    ),
]
_ENDPOINT_ACCEPTED: dict[int, OpenAPIResponse] = accepted_response(InferenceEndpointAccepted)


@router.post(
    "/clusters/<clusterTag>/inference/endpoints",
    operation_id="CreateInferenceEndpoint",
    summary="Deploy a model as a managed endpoint of the HyperPod inference operator (asynchronous)",
    description="An InferenceEndpointConfig (modelSource + worker) or a JumpStartModel (jumpStart) reconciled by the "
    "inference operator into worker pods and a SageMaker endpoint instantstart-<tag>-<name>. Checked first: the "
    "inferenceOperator feature on (409 FeatureNotEnabled naming it), instanceType one of the cluster's groups (422 "
    "listing them), an L2 tieredstorage cache needs tieredCheckpointing (409), the TLS output in the operator's TLS "
    "bucket (422), and every field known to the API version the cluster serves (read from the CRD; 422 naming the "
    "fields otherwise). The CREATE_INFERENCE_ENDPOINT operation applies the resource and ends at DeploymentComplete "
    "with the SageMaker endpoint InService; DeploymentFailed fails it with the operator's reason and message.",
    responses={**_ENDPOINT_ACCEPTED, **_errors(400, 404, 409, 415, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_endpoint_create",
        "Deploy a model as a managed endpoint (HyperPod inference operator)",
        (
            "Deploy a model as a managed endpoint of the HyperPod inference operator (POST "
            "/clusters/{clusterTag}/inference/endpoints): an InferenceEndpointConfig (or JumpStartModel) and a "
            "SageMaker endpoint. Needs the inferenceOperator feature (409 FeatureNotEnabled names it). A 422 on "
            "instanceType lists the cluster's types; a field the cluster's served API version does not know is a 422 "
            "naming it. Returns the CREATE_INFERENCE_ENDPOINT operation (SUCCEEDED at DeploymentComplete). Write "
            "tool: needs --allow-write."
        ),
        cli="endpoints create",
        body="endpoint",
    ),
)
def create_inference_endpoint(
    cluster_tag: ClusterTagPath,
    request: CreateInferenceEndpointRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceEndpointAccepted]:
    """Check the rules, then start the operation that applies the endpoint."""
    return _idempotent_202(
        f"POST /clusters/{cluster_tag}/inference/endpoints",
        idempotency_key,
        request.to_api(),
        InferenceEndpointAccepted,
        lambda: inference_endpoints.create_endpoint(runtime(), cluster_tag, request).to_api(),
    )


@router.get(
    "/clusters/<clusterTag>/inference/endpoints",
    operation_id="ListInferenceEndpoints",
    summary="The cluster's managed inference endpoints with their operator state",
    responses={**_ok(InferenceEndpointList), **_errors(404, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_endpoint_list",
        "List managed inference endpoints",
        "The cluster's managed inference endpoints: kind, state, replicas, SageMaker endpoint name. Read-only.",
        cli="endpoints list",
        read_only=True,
    ),
)
def list_inference_endpoints(
    cluster_tag: ClusterTagPath,
) -> Response[InferenceEndpointList]:
    """Every InferenceEndpointConfig and JumpStartModel of namespace default."""
    return _json(inference_endpoints.list_endpoints(runtime(), cluster_tag))


@router.get(
    "/clusters/<clusterTag>/inference/endpoints/<name>",
    operation_id="GetInferenceEndpoint",
    summary="A managed endpoint: operator state and conditions, SageMaker endpoint, worker pods and their events",
    responses={**_ok(InferenceEndpointView), **_errors(404, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_endpoint_get",
        "Get a managed inference endpoint",
        (
            "A managed endpoint: the operator's state, conditions and message, the SageMaker endpoint (ARNs, status), "
            "the worker pods and their Kubernetes events (why a deployment is stuck). Read-only."
        ),
        cli="endpoints get",
        read_only=True,
    ),
)
def get_inference_endpoint(cluster_tag: ClusterTagPath, name: InferenceEndpointName) -> Response[InferenceEndpointView]:
    """One endpoint."""
    return _json(inference_endpoints.get_endpoint(runtime(), cluster_tag, name))


@router.delete(
    "/clusters/<clusterTag>/inference/endpoints/<name>",
    operation_id="DeleteInferenceEndpoint",
    summary="Delete a managed endpoint and its SageMaker endpoint, config and model (asynchronous)",
    description="The DELETE_INFERENCE_ENDPOINT operation deletes the resource and ends once it is gone and SageMaker "
    "DescribeEndpoint no longer finds the endpoint (the operator's finalizer removes the SageMaker side first).",
    responses={**_ENDPOINT_ACCEPTED, **_errors(404, 409, 422, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_endpoint_delete",
        "Delete a managed inference endpoint",
        (
            "Delete a managed endpoint (DELETE .../inference/endpoints/{name}); the operator removes the SageMaker "
            "endpoint, config and model. Returns the DELETE_INFERENCE_ENDPOINT operation. Write tool: needs "
            "--allow-write."
        ),
        cli="endpoints delete",
        destructive=True,
        idempotent=True,
        confirm=True,
    ),
)
def delete_inference_endpoint(
    cluster_tag: ClusterTagPath,
    name: InferenceEndpointName,
    idempotency_key: IdempotencyKey = None,
) -> Response[InferenceEndpointAccepted]:
    """Start the DELETE_INFERENCE_ENDPOINT operation."""
    return _idempotent_202(
        f"DELETE /clusters/{cluster_tag}/inference/endpoints/{name}",
        idempotency_key,
        {"name": name},
        InferenceEndpointAccepted,
        lambda: inference_endpoints.delete_endpoint(runtime(), cluster_tag, name).to_api(),
    )


@router.post(
    "/clusters/<clusterTag>/inference/endpoints/<name>/invoke",
    operation_id="InvokeInferenceEndpoint",
    summary="Call the model: SageMaker Runtime InvokeEndpoint on the endpoint the operator registered",
    description="body is sent as application/json (at most 1 MiB serialised: 413 naming body). The answer is parsed "
    "as JSON when it fits 256 KiB, else returned cut as text with truncated true. SageMaker's refusals come back "
    "verbatim: 409 for its 4xx (e.g. the endpoint not InService), 502 for ModelError and its 5xx. With an "
    "Idempotency-Key a repeated call replays the first answer instead of calling the model again.",
    responses={**_ok(InvokeEndpointView), **_errors(400, 404, 409, 413, 415, 422, 502, 503)},
    tags=["inference"],
    openapi_extensions=_faces(
        "inference_endpoint_invoke",
        "Call a managed endpoint's model",
        (
            "Call the model of a managed endpoint (SageMaker InvokeEndpoint, JSON: at most 1 MiB sent, the answer cut "
            "at 256 KiB). Every call without a repeated idempotencyKey reaches the model and is billed. Allowed in "
            "read-only mode: it changes nothing in AWS."
        ),
        cli="endpoints invoke",
        read_only=True,
    ),
)
def invoke_inference_endpoint(
    cluster_tag: ClusterTagPath,
    name: InferenceEndpointName,
    request: InvokeEndpointRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[InvokeEndpointView]:
    """Invoke the endpoint; without an Idempotency-Key every call reaches the model."""
    from api_idempotency import run_idempotent

    answer = run_idempotent(
        idempotency(),
        route=f"POST /clusters/{cluster_tag}/inference/endpoints/{name}/invoke",
        key=idempotency_key,
        body=request.to_api(),
        call=lambda: inference_endpoints.invoke_endpoint(runtime(), cluster_tag, name, request).to_api(),
    )
    return _json(InvokeEndpointView.model_validate(answer))
