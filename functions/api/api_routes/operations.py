"""Routes of the control plane's operations: a cluster's operations, one operation, its cancellation.

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api_routes.common import (
    ClusterTagPath,
    IdempotencyKey,
    _errors,
    _idempotent,
    _json,
    _ok,
    faces,
    runtime,
)
from instantstart.clusters import (
    service,
)
from instantstart.models.operation import OperationId, OperationList, OperationView

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="operations")


@router.get(
    "/clusters/<clusterTag>/operations",
    operation_id="ListClusterOperations",
    summary="List this control plane's operations on a cluster, newest first",
    description="Creates, retries and deletes of the cluster (every generation of its tag, also after it was "
    "DELETED), from the control plane's records.",
    responses={**_ok(OperationList), **_errors(400, 404, 422)},
    tags=["clusters"],
    openapi_extensions=_faces(
        "cluster_list_operations",
        "List a cluster's operations",
        (
            "List this control plane's operations on a cluster, newest first (GET /clusters/{clusterTag}/operations): "
            "creates, stage retries and deletes with their status, times and the error that ended them, for every "
            "generation of the tag (also after the cluster was DELETED).\n\n"
            "Use it to tell the user what was done to a cluster and to find a running operation's operationId (to "
            "follow it with operation_get or stop it with operation_cancel). One page per call: when nextToken is not "
            "null, call again with it for older operations. Read-only."
        ),
        cli="clusters operations",
        read_only=True,
    ),
)
def list_cluster_operations(
    cluster_tag: ClusterTagPath,
    max_results: Annotated[
        int, Query(alias="maxResults", ge=1, le=100, description="Page size, 1-100.", examples=[20])
    ] = 20,
    next_token: Annotated[
        str | None,
        Query(
            alias="nextToken",
            max_length=2048,
            description="The nextToken of the previous page; omit for the first page.",
        ),
    ] = None,
) -> Response[OperationList]:
    """A page of the cluster's operations."""
    return _json(service.list_operations(runtime(), cluster_tag, max_results, next_token))


@router.get(
    "/operations/<operationId>",
    operation_id="GetOperation",
    summary="Get an operation",
    responses={**_ok(OperationView), **_errors(404, 422)},
    tags=["operations"],
    openapi_extensions=_faces(
        "operation_get",
        "Get an operation",
        (
            "Get a long-running operation (GET /operations/{operationId}): type, status (PENDING, RUNNING, SUCCEEDED, "
            "FAILED, CANCELLED), cluster tag, times and the error that ended it.\n\n"
            "SUCCEEDED, FAILED and CANCELLED are terminal; until then keep polling with wait_seconds between calls. "
            "Read-only."
        ),
        cli="operations get",
        read_only=True,
    ),
)
def get_operation(
    operation_id: Annotated[OperationId, Path(alias="operationId")],
) -> Response[OperationView]:
    """One operation."""
    return _json(service.get_operation(runtime(), operation_id))


@router.post(
    "/operations/<operationId>/cancel",
    operation_id="CancelOperation",
    summary="Cancel a running operation (stops its workflow)",
    description="Stops the operation's Step Functions execution, then records the operation CANCELLED, the stage "
    "it was running CANCELLED and the cluster FAILED: a cancelled create can then be deleted "
    "(DELETE /clusters/{clusterTag}, which tears down whatever exists) or its stage retried. Resources a stopped "
    "step created stay recorded for the delete. Cancelling a CANCELLED operation answers it again; an operation "
    "that ended SUCCEEDED or FAILED answers 409 naming its status.",
    responses={
        202: {"description": "The operation, CANCELLED", "content": {"application/json": {"model": OperationView}}},
        **_errors(404, 409, 422, 503),
    },
    tags=["operations"],
    openapi_extensions=_faces(
        "operation_cancel",
        "Cancel a running operation",
        (
            "Cancel a PENDING or RUNNING operation (POST /operations/{operationId}/cancel): its workflow is stopped, "
            "the operation ends CANCELLED, the stage it was running CANCELLED and the cluster FAILED.\n\n"
            "Use it only when the user asks to stop a create, retry or delete (for example to delete a cluster whose "
            "create is still running: cluster_delete answers 409 while an operation runs). Afterwards the cluster can "
            "be deleted with cluster_delete (it tears down whatever was created) or the CANCELLED stage retried with "
            "cluster_retry_stage. Cancelling a CANCELLED operation returns it again; an operation that already ended "
            "SUCCEEDED or FAILED is a 409 naming its status. Write tool: needs --allow-write."
        ),
        cli="operations cancel",
        destructive=True,
        idempotent=True,
    ),
)
def cancel_operation(
    operation_id: Annotated[OperationId, Path(alias="operationId")], idempotency_key: IdempotencyKey = None
) -> Response[OperationView]:
    """Cancel one operation."""
    return _idempotent(
        f"POST /operations/{operation_id}/cancel",
        idempotency_key,
        {"operationId": operation_id},
        lambda: service.cancel_operation(runtime(), operation_id).to_api(),
    )
