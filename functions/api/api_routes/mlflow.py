"""Routes of a cluster's managed MLflow connection.

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api_routes.common import (
    _ACCEPTED,
    ClusterTagPath,
    IdempotencyKey,
    _accepted,
    _errors,
    _json,
    _ok,
    faces,
    idempotency,
    runtime,
)
from instantstart.mlflow import service as mlflow
from instantstart.models.mlflow import MlflowView, UpdateMlflowRequest
from instantstart.models.operation import OperationView

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="mlflow")

_MLFLOW_PUT_DOC = (
    "Connect an existing tracking server (trackingServerArn) or MLflow app (mlflowAppArn) of this account and Region, "
    "or create one for the cluster (create: CreateMlflowTrackingServer / CreateMlflowApp named instantstart-<tag>, "
    "artifact store s3://<cluster bucket>/mlflow/); in both cases training pods get an identity to log to it: the "
    "IAM role instantstart-<tag>-mlflow (sagemaker-mlflow:* on that resource, S3 on its artifact prefix) for the "
    "service account instantstart-mlflow of the training namespace (EKS Pod Identity). 202 with an UPDATE_MLFLOW "
    'operation, which waits until the server is Created. {"enabled": false} disconnects: removes the identity and '
    "the server or app only when it was created here (a connected existing one is never deleted). 200 with the "
    "connection when the request is already so. Refusals name the field: an ARN of another Region or account (422), "
    "a missing one (404), a failed or deleting one, another connection, a name taken (409)."
)


@router.get(
    "/clusters/<clusterTag>/mlflow",
    operation_id="GetMlflow",
    summary="The cluster's SageMaker managed MLflow connection, with the server's status now",
    description="The recorded connection (tracking server or app ARN, whether it was created here, the training "
    "namespace, service account and pod role, the environment training containers get) and its status read from "
    "SageMaker now (DescribeMlflowTrackingServer / DescribeMlflowApp; NotFound when it is gone).",
    responses={**_ok(MlflowView), **_errors(404, 422, 503)},
    tags=["mlflow"],
    openapi_extensions=_faces(
        "mlflow_get",
        "Get a cluster's MLflow connection",
        (
            "Get a cluster's SageMaker managed MLflow connection (GET /clusters/{clusterTag}/mlflow): the tracking "
            "server or app ARN, whether the control plane created it, its status read from SageMaker now, its URL and "
            "artifact store, and how training pods log to it (namespace, service account instantstart-mlflow, IAM "
            "role, and the environment they get: MLFLOW_TRACKING_URI = the ARN, for the sagemaker-mlflow plugin). "
            "Read-only."
        ),
        cli="mlflow get",
        read_only=True,
    ),
)
def get_mlflow(cluster_tag: ClusterTagPath) -> Response[MlflowView]:
    """The cluster's MLflow connection."""
    return _json(mlflow.get_mlflow(runtime(), cluster_tag))


def _update_mlflow(cluster_tag: str, request: UpdateMlflowRequest, idempotency_key: str | None) -> Response[Any]:
    from api_idempotency import run_idempotent

    out = run_idempotent(
        idempotency(),
        route=f"PUT /clusters/{cluster_tag}/mlflow",
        key=idempotency_key,
        body=request.model_dump(mode="json", by_alias=True, exclude_none=True),
        call=lambda: mlflow.update_mlflow(runtime(), cluster_tag, request).to_api(),
    )
    if "connected" in out:  # the view (it carries the operationId of the connection, not of a new operation)
        return _json(MlflowView.model_validate(out))
    return _accepted(OperationView.model_validate(out))


@router.put(
    "/clusters/<clusterTag>/mlflow",
    operation_id="UpdateMlflow",
    summary="Connect, create or disconnect SageMaker managed MLflow (asynchronous when something changes)",
    description=_MLFLOW_PUT_DOC,
    responses={
        200: {"description": "Already so; nothing changed", "content": {"application/json": {"model": MlflowView}}},
        **_ACCEPTED,
        **_errors(400, 404, 409, 415, 422, 503),
    },
    tags=["mlflow"],
    openapi_extensions=_faces(
        "mlflow_connect",
        "Connect or create SageMaker managed MLflow",
        (
            "Connect an existing tracking server or MLflow app, or create one for the cluster (PUT "
            "/clusters/{clusterTag}/mlflow). Give exactly one of trackingServerArn, mlflowAppArn or create.\n\n"
            "Read the instantstart-mlflow skill first. Creating costs money while it exists (ask the user; size Small "
            "unless they say otherwise); connecting an existing one does not create a server. Either way training "
            "pods of the namespace get an IAM role through EKS Pod Identity to log to it. Returns the UPDATE_MLFLOW "
            "operation: poll it with operation_get and wait_seconds until SUCCEEDED, FAILED or CANCELLED (creating "
            "takes about 20 minutes). When already so, the answer is the connection itself. Refusals name the field "
            "(an ARN of another Region or account, a missing or failed server, another connection). Write tool: needs "
            "--allow-write."
        ),
        cli=("mlflow connect", "mlflow create"),
        idempotent=True,
    ),
)
def update_mlflow(
    cluster_tag: ClusterTagPath,
    request: UpdateMlflowRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[Any]:
    """Start connecting, creating or disconnecting the cluster's MLflow."""
    return _update_mlflow(cluster_tag, request, idempotency_key)


@router.delete(
    "/clusters/<clusterTag>/mlflow",
    operation_id="DeleteMlflow",
    summary="Disconnect SageMaker managed MLflow (asynchronous when connected)",
    description='The same as PUT {"enabled": false}: removes the pod identity and the tracking server or app only '
    "when it was created here; a connected existing one is never deleted. 200 when not connected.",
    responses={
        200: {"description": "Not connected", "content": {"application/json": {"model": MlflowView}}},
        **_ACCEPTED,
        **_errors(404, 409, 422, 503),
    },
    tags=["mlflow"],
    openapi_extensions=_faces(
        "mlflow_disconnect",
        "Disconnect SageMaker managed MLflow",
        (
            "Disconnect the cluster's MLflow (DELETE /clusters/{clusterTag}/mlflow): removes the pod identity, and "
            "the tracking server or app only when the control plane created it (a connected existing one is never "
            "deleted; its runs stay in it). A created server's runs are lost with it: confirm with the user first. "
            "Returns the UPDATE_MLFLOW operation, or the view when not connected. Write tool: needs --allow-write."
        ),
        cli="mlflow disconnect",
        destructive=True,
        idempotent=True,
    ),
)
def delete_mlflow(cluster_tag: ClusterTagPath, idempotency_key: IdempotencyKey = None) -> Response[Any]:
    """Start disconnecting the cluster's MLflow."""
    return _update_mlflow(cluster_tag, UpdateMlflowRequest(enabled=False), idempotency_key)
