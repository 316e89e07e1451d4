"""HTTP API Lambda handler: Powertools ``APIGatewayHttpResolver`` with request validation and OpenAPI.

API Gateway (HTTP API, payload 2.0, ``AWS_IAM`` authorization) invokes ``lambda_handler``.

Cold start: the route modules (``api_routes/``) are imported by the first request of their section
(:func:`include_routes_for`), and X-Ray patches botocore on the first request (:func:`_trace_aws_calls`), so the
import of this module loads no route, model of a route, AWS SDK or Kubernetes client (``make cold-start``).
"""

from __future__ import annotations

import importlib
import json
import threading
from functools import cache
from typing import Any

import api_errors
import api_idempotency
import api_routes
import api_routes.common
from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.typing import LambdaContext

from instantstart.aws.clients import API_BUDGET, using_budget
from instantstart.config import API_SETTINGS
from instantstart.errors import InstantStartError
from instantstart.runtime import Runtime

TRACED_MODULES = ("botocore",)
"""What X-Ray instruments: every AWS call. Powertools' default (every library X-Ray knows) would also import
``requests`` and ``sqlite3`` at cold start, which this function never uses."""

logger = Logger()
tracer = Tracer(auto_patch=False)
app = APIGatewayHttpResolver(enable_validation=True)
_included: set[str] = set()
_including = threading.Lock()
# Built once per container; a missing setting stops the cold start naming it.
RUNTIME = Runtime.from_env(API_SETTINGS)
IDEMPOTENCY = api_idempotency.Idempotency(RUNTIME.settings.TABLE_NAME)


@app.exception_handler(InstantStartError)
def _domain_error(exc: InstantStartError) -> Response[Any]:
    return api_errors.from_domain_error(exc)


def include_routes(module_name: str) -> None:
    """Import route module ``module_name`` and include its router, once per container."""
    with _including:
        if module_name not in _included:
            app.include_router(importlib.import_module(module_name).router)
            _included.add(module_name)


def include_routes_for(event: dict[str, Any]) -> None:
    """Include the route module of the request's path (none for a path no route has: the answer is 404)."""
    module_name = api_routes.module_of(APIGatewayProxyEventV2(event).path)
    if module_name is not None and module_name not in _included:
        include_routes(module_name)


def include_all_routes() -> APIGatewayHttpResolver:
    """The resolver with every route module included (the OpenAPI document describes them all)."""
    for module_name in api_routes.module_names():
        include_routes(module_name)
    return app


@cache
def _trace_aws_calls() -> None:
    # Once per container, before the first AWS call: X-Ray's subsegments of botocore calls (a no-op when disabled).
    tracer.patch(TRACED_MODULES)


@cache
def _openapi() -> dict[str, Any]:
    # The published contract of the routes, built once per container on the first invalid request.
    return dict(json.loads(include_all_routes().get_openapi_json_schema()))


@app.exception_handler(RequestValidationError)
def _validation_error(exc: RequestValidationError) -> Response[Any]:
    # The rules of the matched route's parameters and body, to state each failed field's rule in words.
    route = app.context.get("_route")
    document = _openapi()
    operation = document["paths"].get(route.openapi_path, {}).get(route.method.lower(), {}) if route else {}
    rules = api_errors.RequestRules(operation, document.get("components", {}).get("schemas", {}))
    return api_errors.from_validation_error(exc, rules)


@app.exception_handler([UnicodeDecodeError, RecursionError])
def _undecodable_body(exc: Exception) -> Response[Any]:
    # A body that is not UTF-8, or JSON nested too deeply to parse, is malformed input: 400, never a 500.
    return api_errors.error_response(400, "BadRequest", "the request body is not valid UTF-8 JSON")


@app.exception_handler(Exception)
def _unexpected(exc: Exception) -> Response[Any]:
    # Whatever no route expected: a transient AWS/Kubernetes failure is 503 with Retry-After, the rest a 500 in the
    # API's error shape with the request id, never API Gateway's bare {"message": "Internal Server Error"}.
    context = app.current_event.request_context
    request_id = getattr(context, "request_id", None) or getattr(app.lambda_context, "aws_request_id", None)
    answer = api_errors.from_unexpected(exc, request_id)
    if answer.status_code == 503:
        logger.warning("a dependency failed transiently: %s", exc)
    elif answer.status_code >= 500:
        logger.exception("unexpected error answered %s", answer.status_code)
    return answer


@app.not_found
def _not_found(exc: Exception) -> Response[Any]:
    return api_errors.error_response(404, "RouteNotFound", f"no route {app.current_event.path}")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Route one API Gateway v2 event."""
    event = api_errors.normalize_media_type(event)
    unsupported = api_errors.unsupported_media_type(event)
    if unsupported is not None:
        return unsupported
    _trace_aws_calls()
    include_routes_for(event)
    IDEMPOTENCY.bind(context)
    # The routes read this handler's runtime and idempotency records for this request (api_routes.common.serving).
    # A record read twice in one request (the cluster by the route, then by the name lookup) is read once.
    # Every AWS client of the request fits API Gateway's 30 s (instantstart.aws.clients.API_BUDGET).
    with using_budget(API_BUDGET), api_routes.common.serving(RUNTIME, IDEMPOTENCY), RUNTIME.store.reusing_reads():
        return app.resolve(event, context)
