"""The client's static shapes (``client/instantstart_client/shapes.py``) agree with the published OpenAPI document.

The client is a separate deployable and cannot import the API's models, so its TypedDicts and status tuples
are checked here against ``api_schema/openapi.json``: every field exists in the matching schema with a
compatible type, and every status tuple equals the schema's enum.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import httpx2
import pytest

from instantstart_client import shapes
from instantstart_client.api import ApiError

SCHEMA_OF: dict[str, str] = {
    "ErrorInfo": "StageError",
    "InstanceGroupSpec": "InstanceGroupRequest",
    "Operation": "OperationView",
    "OperationPage": "OperationList",
    "Stage": "StageView",
    "EksInfo": "EksView",
    "InstanceGroupInfo": "InstanceGroupView",
    "HyperPodInfo": "HyperPodView",
    "NodeInfo": "NodeView",
    "StorageInfo": "StorageView",
    "DriftInfo": "DriftView",
    "DriftItemInfo": "DriftItem",
    "Cluster": "ClusterView",
    "ClusterSummary": "ClusterSummary",
    "StageStatusView": "StageStatusView",
    "InstanceGroupCounts": "InstanceGroupCounts",
    "ClusterPage": "ClusterList",
    "AvailabilityZone": "AvailabilityZone",
    "ErrorDetail": "ErrorDetail",
    "ErrorBody": "ErrorBody",
    "ErrorResponse": "ErrorResponse",
    "ClusterEvent": "ClusterEventView",
    "ClusterEventPage": "ClusterEventList",
    "InstanceGroupDetail": "InstanceGroupDetail",
    "InstanceGroupList": "InstanceGroupList",
    "TrainingPlan": "TrainingPlanView",
    "TrainingPlanOffering": "TrainingPlanOfferingView",
    "ClusterNode": "ClusterNodeView",
    "ClusterNodePage": "ClusterNodeList",
    "NodeFailure": "NodeFailure",
    "ChangeResult": "ChangeResult",
    "HyperPodOperationSummary": "HyperPodOperationSummary",
    "HyperPodOperationPage": "HyperPodOperationList",
    "HyperPodOperation": "HyperPodOperationView",
    "AutoScaling": "AutoScalingView",
}
"""Each TypedDict of client/instantstart_client/shapes.py and the API schema it mirrors."""

REQUEST_SHAPES = {"InstanceGroupSpec"}
"""Shapes the client sends: their required keys are the schema's required properties."""

JSON_TYPES: dict[Any, set[str]] = {
    str: {"string"},
    int: {"integer"},
    float: {"number", "integer"},
    bool: {"boolean"},
}


def typeddicts() -> dict[str, type]:
    return {name: obj for name, obj in vars(shapes).items() if is_typeddict(obj) and obj.__module__ == shapes.__name__}


def problems(annotation: Any, schema: dict[str, Any], openapi: Any, where: str) -> list[str]:
    """Why a value of ``annotation`` (the client's view) does not fit the resolved JSON ``schema``."""
    schema = openapi.resolve(schema)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        concrete = [a for a in args if a is not type(None)]
        assert len(concrete) == 1, f"{where}: unions other than X | None are not checked"
        return problems(concrete[0], {**schema, "nullable": False}, openapi, where)
    if schema.get("nullable") and annotation is not Any:
        return [f"{where}: the API may send null; annotate it `{getattr(annotation, '__name__', annotation)} | None`"]
    if annotation is Any:
        return []
    if is_typeddict(annotation):
        if schema.get("type") != "object":
            return [f"{where}: the API sends {schema.get('type')}, the client expects an object"]
        return shape_problems(annotation, schema, openapi, where)
    if origin is list or annotation is list:
        if schema.get("type") != "array":
            return [f"{where}: the API sends {schema.get('type')}, the client expects a list"]
        return problems(args[0], schema["items"], openapi, f"{where}[]") if args else []
    if origin is dict or annotation is dict:
        return [] if schema.get("type") == "object" else [f"{where}: the API sends {schema.get('type')}, not an object"]
    expected = JSON_TYPES.get(annotation)
    assert expected, f"{where}: no JSON type known for {annotation}"
    if schema.get("type") not in expected:
        return [f"{where}: the API sends {schema.get('type')}, the client expects {annotation.__name__}"]
    return []


def not_required_keys(shape: Any) -> set[str]:
    """Keys annotated ``NotRequired[...]`` (``__optional_keys__`` misses them under postponed annotations)."""
    hints = get_type_hints(shape, include_extras=True)
    return {key for key, hint in hints.items() if get_origin(hint) is typing.NotRequired}


def shape_problems(shape: Any, schema: dict[str, Any], openapi: Any, where: str) -> list[str]:
    hints = get_type_hints(shape)
    props = schema.get("properties", {})
    found = []
    for key, annotation in hints.items():
        if key not in props:
            found.append(f"{where}.{key}: not a property of the API schema (has {sorted(props)})")
            continue
        found += problems(annotation, props[key], openapi, f"{where}.{key}")
    if shape.__name__ in REQUEST_SHAPES:
        required = set(schema.get("required", []))
        client_required = set(hints) - not_required_keys(shape)
        if client_required != required:
            found.append(f"{where}: required keys {sorted(client_required)} != API's {sorted(required)}")
    return found


def test_given_client_shapes_then_every_typeddict_has_a_matching_api_schema(openapi: Any) -> None:
    assert set(typeddicts()) == set(SCHEMA_OF), "map each TypedDict of instantstart_client.shapes to its API schema"
    for schema in SCHEMA_OF.values():
        assert schema in openapi.schemas, f"{schema} is not in api_schema/openapi.json"


@pytest.mark.parametrize("shape_name", sorted(SCHEMA_OF))
def test_given_a_client_shape_then_its_fields_exist_in_the_api_schema_with_compatible_types(
    openapi: Any, shape_name: str
) -> None:
    shape = typeddicts()[shape_name]
    schema = openapi.resolve(openapi.schemas[SCHEMA_OF[shape_name]])

    assert shape_problems(shape, schema, openapi, shape_name) == []


@pytest.mark.parametrize(
    ("values", "schema"),
    [
        (shapes.CLUSTER_STATUSES, "ClusterStatus"),
        (shapes.STAGE_STATUSES, "StageStatus"),
        (shapes.OPERATION_STATUSES, "OperationStatus"),
        (shapes.STAGE_NAMES, "StageName"),
        (shapes.EVENT_LEVELS, "ClusterEventLevel"),
        (shapes.HYPERPOD_OPERATION_STATUSES, "HyperPodOperationStatus"),
        (shapes.HYPERPOD_OPERATION_TYPES, "HyperPodOperationType"),
        (shapes.DEEP_HEALTH_CHECKS, "DeepHealthCheckType"),
    ],
    ids=[
        "cluster-statuses",
        "stage-statuses",
        "operation-statuses",
        "stage-names",
        "event-levels",
        "hyperpod-operation-statuses",
        "hyperpod-operation-types",
        "deep-health-checks",
    ],
)
def test_given_a_status_tuple_then_it_equals_the_api_enum(openapi: Any, values: tuple[str, ...], schema: str) -> None:
    assert list(values) == openapi.schemas[schema]["enum"]


def test_given_terminal_operation_statuses_then_they_are_operation_statuses() -> None:
    assert set(shapes.OPERATION_STATUSES) > shapes.TERMINAL_OPERATION_STATUSES


def _example_error_body(openapi: Any) -> dict[str, Any]:
    """An ``ErrorResponse`` built from the examples the document publishes."""

    def example(schema_name: str, prop: str) -> Any:
        return openapi.resolve(openapi.schemas[schema_name]["properties"][prop])["examples"][0]

    detail = {key: example("ErrorDetail", key) for key in ("field", "message", "type", "allowedValues")}
    return {
        "error": {"code": example("ErrorBody", "code"), "message": example("ErrorBody", "message"), "details": [detail]}
    }


def test_given_an_error_answer_of_the_documented_shape_then_the_client_reads_code_message_and_details(
    openapi: Any,
) -> None:
    body = _example_error_body(openapi)
    response = httpx2.Response(422, json=body, request=httpx2.Request("POST", "https://api.example/clusters"))

    error = ApiError.from_response(response)

    assert (error.status, error.code, error.message) == (422, body["error"]["code"], body["error"]["message"])
    assert error.details == body["error"]["details"]
    assert openapi.schemas["ErrorResponse"]["required"] == ["error"]
    assert set(openapi.schemas["ErrorBody"]["required"]) == {"code", "message"}


def test_given_an_api_error_answer_then_the_mcp_proxy_passes_the_documented_body_verbatim(openapi: Any) -> None:
    import json

    from mcp_proxy.tools import api_error_result

    body = _example_error_body(openapi)
    result = api_error_result(ApiError(422, body["error"]["code"], body["error"]["message"], body=body))

    assert result.is_error
    assert json.loads(typing.cast(Any, result.content[0]).text) == body


def test_given_an_answer_without_the_api_error_shape_then_cli_and_mcp_print_one_documented_error_body(
    openapi: Any,
) -> None:
    import json

    import jsonschema

    from mcp_proxy.tools import api_error_result

    request = httpx2.Request("GET", "https://api.example/clusters")
    gateway = ApiError.from_response(httpx2.Response(403, json={"message": "Forbidden"}, request=request))
    proxy = ApiError.from_response(httpx2.Response(502, text="<html>Bad Gateway</html>", request=request))

    for error in (gateway, proxy):
        body = error.error_response()
        jsonschema.validate(body, {"$ref": "#/components/schemas/ErrorResponse", **openapi.document})
        shown = json.loads(typing.cast(Any, api_error_result(error).content[0]).text)
        assert shown == body
    assert gateway.error_response() == {"error": {"code": "Forbidden", "message": "Forbidden", "details": []}}
    assert proxy.error_response()["error"]["code"] == "BadGateway"
