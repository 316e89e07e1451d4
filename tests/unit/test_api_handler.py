"""The HTTP API function in-process: API Gateway v2 events in, HTTP answers out (moto for AWS, no network).

Events are built from the canonical sample ``events/api_create_cluster.json``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, cast
from urllib.parse import urlencode

import pytest

from instantstart.clusters import records
from instantstart.config import Settings
from instantstart.models.common import StageName
from instantstart.models.workflow import StepError
from instantstart.runtime import Runtime

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = json.loads((ROOT / "events" / "api_create_cluster.json").read_text())
SAMPLE_BODY: dict[str, Any] = json.loads(SAMPLE["body"])
STATE_MACHINE_ARN = "arn:aws:states:us-west-2:123456789012:stateMachine:{}"
CREATE_SM, DELETE_SM = "instantstart-create-cluster", "instantstart-delete-cluster"
UPDATE_SM = "instantstart-update-cluster"


@dataclass
class LambdaContext:
    function_name: str = "instantstart-ApiFunction"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-west-2:123456789012:function:instantstart-ApiFunction"
    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e812345678"
    log_group_name: str = "/aws/lambda/instantstart-ApiFunction"
    log_stream_name: str = "2026/11/29/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def error(self) -> dict[str, Any]:
        return dict(self.body["error"])


_DEFAULT = object()


def api_event(
    method: str,
    path: str,
    *,
    body: Any = _DEFAULT,
    query: dict[str, str] | None = None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event like the sample, for another method, path, body or query."""
    event = copy.deepcopy(SAMPLE)
    event["rawPath"] = path
    event["routeKey"] = f"{method} {path}"
    event["requestContext"]["http"].update(method=method, path=path)
    event["requestContext"]["routeKey"] = event["routeKey"]
    headers = event["headers"]
    headers.pop("idempotency-key")
    if idempotency_key:
        headers["idempotency-key"] = idempotency_key
    if body is _DEFAULT:
        body = SAMPLE_BODY if method == "POST" and path == "/clusters" else None
    if body is None:
        event.pop("body")
        headers.pop("content-length")
        headers.pop("content-type")
    else:
        event["body"] = body if isinstance(body, str) else json.dumps(body)
        headers["content-length"] = str(len(event["body"]))
    if query:
        event["rawQueryString"] = urlencode(query)
        event["queryStringParameters"] = dict(query)
    return event


def create_body(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(SAMPLE_BODY)
    body.update(changes)
    return body


@pytest.fixture
def api(aws_env: None, no_network: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``functions/api/api_app.py`` imported by handler name (as Lambda does), with a fresh runtime."""
    monkeypatch.setenv("CREATE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format(CREATE_SM))
    monkeypatch.setenv("DELETE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format(DELETE_SM))
    monkeypatch.setenv("UPDATE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format(UPDATE_SM))
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "api"))
    import api_app

    runtime = Runtime(Settings())
    monkeypatch.setattr(api_app, "RUNTIME", runtime)  # this test's settings, not the first import's
    # and this test's table for the idempotency records (a module imported the handler first with another table)
    monkeypatch.setattr(api_app, "IDEMPOTENCY", api_app.api_idempotency.Idempotency(runtime.settings.TABLE_NAME))
    yield api_app


def call(api: ModuleType, event: dict[str, Any]) -> Answer:
    out = api.lambda_handler(event, LambdaContext())
    return Answer(out["statusCode"], json.loads(out["body"]) if out.get("body") else {}, out.get("headers") or {})


@dataclass
class Backend:
    """moto's AWS behind the API: the template's table and both state machines."""

    session: Any

    @property
    def runtime(self) -> Runtime:
        import api_app

        return cast(Runtime, api_app.RUNTIME)

    def executions(self, name: str = CREATE_SM) -> list[dict[str, Any]]:
        sfn = self.session.client("stepfunctions")
        return list(sfn.list_executions(stateMachineArn=STATE_MACHINE_ARN.format(name))["executions"])

    def execution_input(self, execution_arn: str) -> dict[str, Any]:
        sfn = self.session.client("stepfunctions")
        return dict(json.loads(sfn.describe_execution(executionArn=execution_arn)["input"]))


@pytest.fixture
def backend(api: ModuleType, aws: Any, table: str) -> Backend:
    sfn = aws.client("stepfunctions")
    for name, asl in (
        (CREATE_SM, "create_cluster.asl.json"),
        (DELETE_SM, "delete_cluster.asl.json"),
        (UPDATE_SM, "update_cluster.asl.json"),
    ):
        definition = (ROOT / "statemachines" / asl).read_text()
        definition = definition.replace(
            "${ClusterStepsFunctionArn}", "arn:aws:lambda:us-west-2:123456789012:function:instantstart-steps"
        )
        sfn.create_state_machine(
            name=name, definition=definition, roleArn="arn:aws:iam::123456789012:role/instantstart-workflows"
        )
    return Backend(aws)


# -- requests refused before any AWS call --------------------------------------------------------------
def test_given_a_body_that_is_not_json_when_creating_then_400_bad_request(api: ModuleType) -> None:
    answer = call(api, api_event("POST", "/clusters", body='{"clusterTag": "demo",'))

    assert answer.status == 400
    assert answer.error["code"] == "BadRequest"
    assert "not valid JSON" in answer.error["message"]


@pytest.mark.parametrize("body", [None, "[1, 2]", '"demo"'], ids=["missing", "array", "string"])
def test_given_no_json_object_body_when_creating_then_400_bad_request(api: ModuleType, body: str | None) -> None:
    answer = call(api, api_event("POST", "/clusters", body=body))

    assert answer.status == 400
    assert answer.error["code"] == "BadRequest"


def test_given_invalid_fields_when_creating_then_422_with_one_detail_per_field_path(api: ModuleType) -> None:
    body = create_body(clusterTag="Demo")
    body["instanceGroups"][0]["instanceType"] = "ml.g6.3xlarge"
    body["instanceGroups"][0]["instanceCount"] = -1

    answer = call(api, api_event("POST", "/clusters", body=body))

    assert answer.status == 422
    assert answer.error["code"] == "ValidationError"
    fields = {d["field"]: d for d in answer.error["details"]}
    assert set(fields) == {"clusterTag", "instanceGroups[0].instanceType", "instanceGroups[0].instanceCount"}
    assert "ml.g6.3xlarge" in fields["instanceGroups[0].instanceType"]["message"]
    assert "instanceGroups[0].instanceType" in answer.error["message"]


def test_given_a_training_plan_group_without_its_plan_when_creating_then_422_naming_training_plan_arn(
    api: ModuleType,
) -> None:
    body = create_body()
    body["instanceGroups"][0]["capacityType"] = "TrainingPlan"

    answer = call(api, api_event("POST", "/clusters", body=body))

    assert answer.status == 422
    [detail] = answer.error["details"]
    assert detail["field"] == "instanceGroups[0].trainingPlanArn"
    assert detail["message"] == (
        "instanceGroups[0].trainingPlanArn: required when capacityType is TrainingPlan "
        "(GET /catalog/training-plans lists the plans)"
    )


def test_given_an_unknown_field_when_creating_then_422_naming_it(api: ModuleType) -> None:
    answer = call(api, api_event("POST", "/clusters", body=create_body(region="us-west-2")))

    assert answer.status == 422
    assert [d["field"] for d in answer.error["details"]] == ["region"]


def test_given_an_unknown_route_when_calling_then_404_route_not_found(api: ModuleType) -> None:
    answer = call(api, api_event("GET", "/hyperpod/clusters"))

    assert answer.status == 404
    assert answer.error["code"] == "RouteNotFound"
    assert "/hyperpod/clusters" in answer.error["message"]


@pytest.mark.parametrize("max_results", ["1000", "0", "ten"])
def test_given_max_results_out_of_range_when_listing_then_422_naming_max_results(
    api: ModuleType, max_results: str
) -> None:
    answer = call(api, api_event("GET", "/clusters", query={"maxResults": max_results}))

    assert answer.status == 422
    assert [d["field"] for d in answer.error["details"]] == ["maxResults"]


def test_given_a_cluster_tag_outside_the_pattern_in_the_path_when_getting_then_422(api: ModuleType) -> None:
    answer = call(api, api_event("GET", "/clusters/Not_A_Tag"))

    assert answer.status == 422
    assert [d["field"] for d in answer.error["details"]] == ["clusterTag"]


# -- requests that reach AWS (moto) --------------------------------------------------------------------
def test_given_the_sample_request_when_creating_then_202_with_an_operation_and_a_started_execution(
    api: ModuleType, backend: Backend
) -> None:
    answer = call(api, api_event("POST", "/clusters"))

    assert answer.status == 202
    op = answer.body
    assert op["type"] == "CREATE_CLUSTER" and op["status"] == "PENDING" and op["clusterTag"] == "demo"
    assert op["statusUrl"] == f"/operations/{op['operationId']}"
    assert answer.headers["Location"] == op["statusUrl"]
    [execution] = backend.executions()
    assert execution["name"] == op["operationId"]
    assert op["executionArn"] == execution["executionArn"]
    started = backend.execution_input(execution["executionArn"])
    assert started["clusterTag"] == "demo" and started["startStage"] == "network" and started["generation"] == 1

    again = call(api, api_event("GET", op["statusUrl"]))
    assert again.status == 200 and again.body["operationId"] == op["operationId"]


def test_given_a_created_cluster_when_getting_it_then_six_pending_stages_and_the_planned_names(
    api: ModuleType, backend: Backend
) -> None:
    call(api, api_event("POST", "/clusters"))

    answer = call(api, api_event("GET", "/clusters/demo"))

    assert answer.status == 200
    cluster = answer.body
    assert cluster["status"] == "CREATING" and cluster["availabilityZone"] == "us-west-2c"
    assert [(s["name"], s["status"]) for s in cluster["stages"]] == [(s.value, "PENDING") for s in StageName]
    assert cluster["eks"]["clusterName"] == "eks-cluster-demo"
    assert cluster["hyperPod"]["clusterName"] == "hp-cluster-demo"
    assert [g["instanceGroupName"] for g in cluster["hyperPod"]["instanceGroups"]] == ["accel"]
    stages = call(api, api_event("GET", "/clusters/demo/stages"))
    assert [s["order"] for s in stages.body["stages"]] == [1, 2, 3, 4, 5, 6]


def test_given_an_unknown_cluster_when_getting_then_404_cluster_not_found(api: ModuleType, backend: Backend) -> None:
    answer = call(api, api_event("GET", "/clusters/ghost"))

    assert answer.status == 404
    assert answer.error["code"] == "ClusterNotFound"
    assert "ghost" in answer.error["message"]


def test_given_a_zone_of_another_region_when_creating_then_422_naming_availability_zone_and_the_zones(
    api: ModuleType, backend: Backend
) -> None:
    answer = call(api, api_event("POST", "/clusters", body=create_body(availabilityZone="us-east-1a")))

    assert answer.status == 422
    [detail] = answer.error["details"]
    assert detail["field"] == "availabilityZone"
    assert "us-west-2c" in detail["allowedValues"]
    assert "us-east-1a" in answer.error["message"] and "us-west-2a" in answer.error["message"]
    assert backend.executions() == []
    assert call(api, api_event("GET", "/clusters/demo")).status == 404


def test_given_three_clusters_when_listing_two_per_page_then_next_token_leads_to_the_rest(
    api: ModuleType, backend: Backend
) -> None:
    for tag in ("charlie", "alpha", "bravo"):
        assert call(api, api_event("POST", "/clusters", body=create_body(clusterTag=tag))).status == 202

    first = call(api, api_event("GET", "/clusters", query={"maxResults": "2"}))
    assert first.status == 200
    assert [c["clusterTag"] for c in first.body["clusters"]] == ["alpha", "bravo"]
    assert first.body["nextToken"]

    second = call(api, api_event("GET", "/clusters", query={"maxResults": "2", "nextToken": first.body["nextToken"]}))
    assert second.status == 200
    assert [c["clusterTag"] for c in second.body["clusters"]] == ["charlie"]
    assert second.body["nextToken"] is None
    assert second.body["clusters"][0]["hyperPodClusterName"] == "hp-cluster-charlie"


@pytest.mark.parametrize("token", ["bm90LWEtdG9rZW4", "%%%", "eyJQSyI6IkNMVVNURVIjYSJ9"])
def test_given_a_next_token_this_api_did_not_issue_when_listing_then_400_naming_next_token(
    api: ModuleType, backend: Backend, token: str
) -> None:
    answer = call(api, api_event("GET", "/clusters", query={"nextToken": token}))

    assert answer.status == 400
    assert answer.error["code"] == "BadRequest"
    assert answer.error["details"] == [{"field": "nextToken"}]


def test_given_an_unknown_operation_when_getting_then_404_operation_not_found(
    api: ModuleType, backend: Backend
) -> None:
    answer = call(api, api_event("GET", "/operations/op-00000000000000000000000000000000"))

    assert answer.status == 404
    assert answer.error["code"] == "OperationNotFound"


def fail_access_stage(runtime: Runtime, operation_id: str) -> None:
    """What the create workflow records when the access stage fails: network done, access FAILED."""
    records.begin_stage(runtime, operation_id=operation_id, tag="demo", generation=1, stage=StageName.NETWORK)
    records.complete_stage(runtime, tag="demo", generation=1, stage=StageName.NETWORK)
    records.begin_stage(runtime, operation_id=operation_id, tag="demo", generation=1, stage=StageName.ACCESS)
    records.record_failure(
        runtime,
        operation_id=operation_id,
        tag="demo",
        generation=1,
        stage=StageName.ACCESS,
        error=StepError(Error="PollTimeout", Cause="Kubernetes Access did not finish within 30 polls of 10 seconds"),
    )


@pytest.fixture
def failed_cluster(api: ModuleType, backend: Backend) -> str:
    op = call(api, api_event("POST", "/clusters")).body
    fail_access_stage(backend.runtime, op["operationId"])
    return str(op["operationId"])


@pytest.mark.parametrize(("stage", "status"), [("network", "SUCCEEDED"), ("verify", "PENDING")])
def test_given_a_stage_that_is_not_failed_when_retrying_then_409_naming_its_status_and_nothing_starts(
    api: ModuleType, backend: Backend, failed_cluster: str, stage: str, status: str
) -> None:
    answer = call(api, api_event("POST", f"/clusters/demo/stages/{stage}/retry", body=None))

    assert answer.status == 409
    assert answer.error["code"] == "StageNotFailed"
    assert f"'{stage}' is {status}" in answer.error["message"]
    assert answer.error["details"][0]["status"] == status
    assert len(backend.executions()) == 1  # only the original create
    assert call(api, api_event("GET", "/clusters/demo")).body["status"] == "FAILED"


def test_given_the_failed_stage_when_retrying_then_202_and_the_workflow_restarts_at_that_stage(
    api: ModuleType, backend: Backend, failed_cluster: str
) -> None:
    cluster = call(api, api_event("GET", "/clusters/demo")).body
    access = next(s for s in cluster["stages"] if s["name"] == "access")
    assert access["status"] == "FAILED"
    assert access["error"] == {
        "code": "PollTimeout",
        "message": "Kubernetes Access did not finish within 30 polls of 10 seconds",
    }

    answer = call(api, api_event("POST", "/clusters/demo/stages/access/retry", body=None))

    assert answer.status == 202
    assert answer.body["type"] == "RETRY_STAGE" and answer.body["stage"] == "access"
    retry = next(e for e in backend.executions() if e["name"] == answer.body["operationId"])
    assert backend.execution_input(retry["executionArn"])["startStage"] == "access"
    assert call(api, api_event("GET", "/clusters/demo")).body["status"] == "CREATING"


def test_given_an_unknown_stage_when_retrying_then_422_listing_the_stages(
    api: ModuleType, backend: Backend, failed_cluster: str
) -> None:
    answer = call(api, api_event("POST", "/clusters/demo/stages/nodes/retry", body=None))

    assert answer.status == 422
    assert answer.error["code"] == "ValidationError"
    [detail] = answer.error["details"]
    assert detail["field"] == "stage"
    assert detail["allowedValues"] == [s.value for s in StageName]
    assert "stage must be one of: network, access, dependencies, hyperpod, storage, verify" in detail["message"]


def test_given_a_creating_cluster_when_deleting_then_409_operation_in_progress(
    api: ModuleType, backend: Backend
) -> None:
    call(api, api_event("POST", "/clusters"))

    answer = call(api, api_event("DELETE", "/clusters/demo"))

    assert answer.status == 409
    assert answer.error["code"] == "OperationInProgress"
    assert "CREATING" in answer.error["message"]
    assert backend.executions(DELETE_SM) == []


def test_given_a_failed_cluster_when_deleting_then_202_and_the_cluster_is_deleting(
    api: ModuleType, backend: Backend, failed_cluster: str
) -> None:
    answer = call(api, api_event("DELETE", "/clusters/demo"))

    assert answer.status == 202
    assert answer.body["type"] == "DELETE_CLUSTER"
    assert [e["name"] for e in backend.executions(DELETE_SM)] == [answer.body["operationId"]]
    assert call(api, api_event("GET", "/clusters/demo")).body["status"] == "DELETING"


def test_given_the_same_idempotency_key_and_body_when_creating_twice_then_the_same_operation_and_one_execution(
    api: ModuleType, backend: Backend
) -> None:
    first = call(api, api_event("POST", "/clusters", idempotency_key="create-demo-0001"))
    second = call(api, api_event("POST", "/clusters", idempotency_key="create-demo-0001"))

    assert first.status == second.status == 202
    assert second.body["operationId"] == first.body["operationId"]
    assert len(backend.executions()) == 1


def test_given_the_same_idempotency_key_with_another_body_when_creating_then_409_key_reused(
    api: ModuleType, backend: Backend
) -> None:
    call(api, api_event("POST", "/clusters", idempotency_key="create-demo-0001"))

    answer = call(
        api,
        api_event("POST", "/clusters", body=create_body(clusterTag="other"), idempotency_key="create-demo-0001"),
    )

    assert answer.status == 409
    assert answer.error["code"] == "IdempotencyKeyReused"
    assert answer.error["details"] == [{"field": "Idempotency-Key"}]
    assert call(api, api_event("GET", "/clusters/other")).status == 404


def test_given_a_live_cluster_when_creating_the_same_tag_again_then_409_cluster_already_exists(
    api: ModuleType, backend: Backend
) -> None:
    first = call(api, api_event("POST", "/clusters", idempotency_key="first"))

    second = call(api, api_event("POST", "/clusters", idempotency_key="second"))

    assert first.status == 202
    assert second.status == 409
    assert second.error["code"] == "ClusterAlreadyExists"
    assert "CREATING" in second.error["message"]
    assert len(backend.executions()) == 1


def test_given_a_creating_cluster_when_reconciling_then_409_cluster_not_ready_and_nothing_read(
    api: ModuleType, backend: Backend
) -> None:
    call(api, api_event("POST", "/clusters"))

    answer = call(api, api_event("POST", "/clusters/demo/reconcile", body=None))

    assert answer.status == 409
    assert answer.error["code"] == "ClusterNotReady"
    assert "CREATING" in answer.error["message"] and "READY or DEGRADED" in answer.error["message"]
    assert backend.executions(UPDATE_SM) == []


def test_given_an_unknown_cluster_when_reconciling_then_404(api: ModuleType, backend: Backend) -> None:
    answer = call(api, api_event("POST", "/clusters/ghost/reconcile", body=None))

    assert answer.status == 404 and answer.error["code"] == "ClusterNotFound"
