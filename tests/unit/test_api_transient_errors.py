"""A throttled or failing AWS dependency never makes the API answer a bare 500 (issue 28 item 2).

Every route of the OpenAPI document is called with DynamoDB throttling every request
(``ProvisionedThroughputExceededException``, after botocore's own retries): the answer is a 4xx of the
request's own (validation) or 503 ``ServiceUnavailable`` in the API's error shape with ``Retry-After``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.unit.inprocess_api import InProcessApi

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = json.loads((ROOT / "api_schema" / "openapi.json").read_text())
PATH_VALUES = {
    "clusterTag": "demo",
    "stage": "hyperpod",
    "instanceGroupName": "accel",
    "name": "job-one",
    "computeQuotaName": "team-a",
    "hyperPodOperationId": "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9",
}


MOTO_GAPS: dict[str, dict[str, Any]] = {"ListTrainingPlans": {"TrainingPlanSummaries": []}}
"""Answers of AWS calls moto does not implement (an unimplemented call would be a 500 of its own)."""


def operations() -> list[tuple[str, str, str]]:
    """(operationId, method, path) of every operation of the document."""
    return [
        (operation["operationId"], method.upper(), path)
        for path, item in DOCUMENT["paths"].items()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    ]


@pytest.fixture
def api(inprocess_api: InProcessApi) -> InProcessApi:
    inprocess_api.add_cluster("demo")
    return inprocess_api


@pytest.fixture
def throttled_dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every DynamoDB call of the process raises DynamoDB's throttling error; yields the operations refused."""
    refused: list[str] = []
    real = BaseClient._make_api_call

    def throttled(self: BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
        if operation_name in MOTO_GAPS:
            return MOTO_GAPS[operation_name]
        if self.meta.service_model.service_name != "dynamodb":
            return real(self, operation_name, api_params)
        refused.append(operation_name)
        error = {
            "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "Rate of requests exceeds"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        raise ClientError(error, operation_name)

    monkeypatch.setattr(BaseClient, "_make_api_call", throttled)
    yield refused


def _path(template: str, operation_id: str) -> str:
    path = template
    for name, value in {**PATH_VALUES, "operationId": "op-" + "0" * 32}.items():
        path = path.replace("{" + name + "}", value)
    assert "{" not in path, f"{operation_id}: no test value for a parameter of {template}"
    return path


def test_given_dynamodb_throttling_every_call_when_each_route_is_called_then_none_answers_a_bare_500(
    api: InProcessApi, throttled_dynamodb: list[str]
) -> None:
    answers: dict[str, tuple[int, Any]] = {}
    for operation_id, method, template in operations():
        answers[operation_id] = api.call(method, _path(template, operation_id), {} if method != "GET" else None)

    assert throttled_dynamodb, "the routes read DynamoDB"
    unavailable = {op for op, (status, _) in answers.items() if status == 503}
    for operation_id, (status, body) in answers.items():
        assert status < 500 or status == 503, f"{operation_id} answered {status}: {body}"
        if status >= 400:
            assert set(body) == {"error"} and body["error"]["code"], f"{operation_id}: not the error shape: {body}"
    for operation_id in unavailable:
        assert answers[operation_id][1]["error"]["code"] == "ServiceUnavailable"
    reads = {op for op, method, path in operations() if method == "GET" and path.startswith("/clusters/{clusterTag}")}
    assert reads <= unavailable, f"cluster reads that did not answer 503: {sorted(reads - unavailable)}"


def test_given_a_throttled_read_when_it_answers_503_then_retry_after_says_when_to_try_again(
    api: InProcessApi, throttled_dynamodb: list[str]
) -> None:
    status, headers, payload = api.exchange("GET", "/clusters/demo")

    assert status == 503
    assert int(headers["Retry-After"]) > 0
    body = json.loads(payload)
    assert body["error"]["code"] == "ServiceUnavailable"
    assert "ProvisionedThroughputExceededException" in body["error"]["message"]


@pytest.mark.parametrize("content_type", ["APPLICATION/JSON", "Application/Json; charset=UTF-8"])
def test_given_a_json_media_type_in_upper_case_when_a_body_is_sent_then_it_is_read_as_json(
    inprocess_api: InProcessApi, content_type: str
) -> None:
    """Media types are case-insensitive (RFC 9110 8.3.1): the body is validated, not refused with 415."""
    from tests.unit.inprocess_api import API_URL, RecordedRequest, api_gateway_event, template_routes

    body = json.dumps({"clusterTag": "demo", "availabilityZone": "us-west-2c", "instanceGroups": []}).encode()
    host = API_URL.split("//", 1)[1]
    request = RecordedRequest("POST", "/clusters", [("host", host), ("content-type", content_type)], body)
    route = next(r for r in template_routes() if r.method == "POST" and r.pattern.fullmatch("/clusters"))
    status, _, payload = inprocess_api.invoke(api_gateway_event(request, route, {}, "$default"))

    assert status == 422, payload  # validated as JSON: instanceGroups needs a group
    assert json.loads(payload)["error"]["details"][0]["field"] == "instanceGroups"
