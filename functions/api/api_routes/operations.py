"""Routes of the control plane's operations: a cluster's operations, one operation, its cancellation.

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api_routes.common import (
    IdempotencyKey,
    _errors,
    _idempotent,
    _json,
    _ok,
    runtime,
)
from instantstart.clusters import (
    service,
)
from instantstart.models.cluster import (
    ClusterTag,
)
from instantstart.models.operation import OperationId, OperationList, OperationView

router = APIGatewayHttpRouter()


@router.get(
    "/clusters/<clusterTag>/operations",
    operation_id="ListClusterOperations",
    summary="List this control plane's operations on a cluster, newest first",
    description="Creates, retries and deletes of the cluster (every generation of its tag, also after it was "
    "DELETED), from the control plane's records.",
    responses={**_ok(OperationList), **_errors(400, 404, 422)},
    tags=["clusters"],
)
def list_cluster_operations(
    cluster_tag: Annotated[ClusterTag, Path(alias="clusterTag")],
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
