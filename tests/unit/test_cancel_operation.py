"""Cancelling an operation and listing a cluster's operations, through the client and the real API in process.

moto holds the table and the state machines (executions are recorded, not run); the workflow's steps are
driven by :class:`inprocess_api.WorkflowDriver` and, for a step that finishes after the cancel, by the
steps function's own dispatch (``run_step``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inprocess_api import InProcessApi

from instantstart.clusters.reconcile import on_execution_status_change
from instantstart.steps import run_step
from instantstart.store.table import ConditionFailed
from instantstart_client.api import ApiError, InstantStartClient
from instantstart_client.shapes import Operation

UNKNOWN_OP = "op-00000000000000000000000000000000"


@pytest.fixture
def api(inprocess_api: InProcessApi) -> InProcessApi:
    inprocess_api.advance_on_poll = False  # only the test moves the workflow
    return inprocess_api


@pytest.fixture
def client(api: InProcessApi) -> InstantStartClient:
    return api.client()


def running_create(api: InProcessApi, tag: str = "demo", steps: int = 3) -> Operation:
    """A create whose network stage SUCCEEDED and whose access stage is RUNNING (with the default 3 steps)."""
    op = api.create_cluster(tag)
    for _ in range(steps):
        api.driver.step(op["operationId"])
    return op  # type: ignore[return-value]


def stage_statuses(client: InstantStartClient, tag: str) -> dict[str, str]:
    return {s["name"]: s["status"] for s in client.get_stages(tag)}


def execution_status(aws: Any, operation: Operation) -> str:
    arn = operation["executionArn"]  # type: ignore[typeddict-item]
    return str(aws.client("stepfunctions").describe_execution(executionArn=arn)["status"])


def step(api: InProcessApi, op: Operation, action: str, **extra: Any) -> dict[str, Any]:
    """One task of the operation's execution, as Step Functions invokes the steps function."""
    return run_step(
        api.driver.runtime,
        {
            "action": action,
            "operationId": op["operationId"],
            "operationType": op["type"],
            "clusterTag": op["clusterTag"],
            "generation": 1,
            **extra,
        },
    )


def test_given_a_running_create_when_cancelled_then_the_execution_is_aborted_and_the_running_stage_cancelled(
    api: InProcessApi, client: InstantStartClient, aws: Any
) -> None:
    op = running_create(api)
    assert stage_statuses(client, "demo")["access"] == "RUNNING"

    cancelled = client.cancel_operation(op["operationId"])

    assert cancelled["status"] == "CANCELLED"
    assert cancelled["error"] is not None and cancelled["error"]["code"] == "OperationCancelled"
    assert cancelled["endedAt"] is not None
    assert execution_status(aws, client.get_operation(op["operationId"])) == "ABORTED"
    statuses = stage_statuses(client, "demo")
    assert (statuses["network"], statuses["access"], statuses["verify"]) == ("SUCCEEDED", "CANCELLED", "PENDING")
    cluster = client.get_cluster("demo")
    assert cluster["status"] == "FAILED"
    access = next(s for s in cluster["stages"] if s["name"] == "access")
    assert access["error"] is not None and access["error"]["code"] == "OperationCancelled"


def test_given_a_cancelled_operation_when_cancelled_again_then_the_same_answer(
    api: InProcessApi, client: InstantStartClient
) -> None:
    op = running_create(api)
    first = client.cancel_operation(op["operationId"])

    second = client.cancel_operation(op["operationId"])

    assert second == first


@pytest.mark.parametrize("status", ["SUCCEEDED", "FAILED"])
def test_given_an_ended_operation_when_cancelled_then_409_naming_its_status_and_nothing_changes(
    api: InProcessApi, client: InstantStartClient, status: str
) -> None:
    op = api.create_cluster("demo")
    if status == "FAILED":
        api.driver.fail("hyperpod")
    assert api.driver.run(op["operationId"]) == status
    before = client.get_cluster("demo")

    with pytest.raises(ApiError) as refused:
        client.cancel_operation(op["operationId"])

    assert refused.value.status == 409
    assert refused.value.code == "OperationAlreadyEnded"
    assert f"already ended with status {status}" in refused.value.message
    assert refused.value.details[0]["status"] == status
    assert client.get_operation(op["operationId"])["status"] == status
    assert client.get_cluster("demo") == before


def test_given_an_unknown_operation_when_cancelled_then_404(client: InstantStartClient) -> None:
    with pytest.raises(ApiError) as unknown:
        client.cancel_operation(UNKNOWN_OP)

    assert (unknown.value.status, unknown.value.code) == (404, "OperationNotFound")


def test_given_a_cancelled_create_when_a_step_already_invoked_finishes_then_the_cancelled_records_stay(
    api: InProcessApi, client: InstantStartClient
) -> None:
    op = running_create(api)
    client.cancel_operation(op["operationId"])
    after_cancel = client.get_cluster("demo")

    # The tasks Step Functions had invoked before the stop end now, in any order.
    with pytest.raises(ConditionFailed):
        step(api, op, "complete_stage", stage="access")
    with pytest.raises(ConditionFailed):
        step(api, op, "begin_stage", stage="dependencies")
    with pytest.raises(ConditionFailed):
        step(api, op, "complete_create")
    step(api, op, "record_failure", stage="access", error={"Error": "PollTimeout", "Cause": "late"})

    assert client.get_operation(op["operationId"])["status"] == "CANCELLED"
    assert client.get_operation(op["operationId"])["error"]["code"] == "OperationCancelled"  # type: ignore[index]
    cluster = client.get_cluster("demo")
    assert cluster["status"] == "FAILED"
    assert cluster["stages"] == after_cancel["stages"]


def test_given_a_stage_beginning_while_the_cancel_reads_the_stages_then_no_stage_is_left_running(
    api: InProcessApi, client: InstantStartClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An execution's step that begins a stage between the cancel's read of the stages and its transaction makes
    the transaction fail its check; the cancel reads again and cancels that stage too, in the same write that ends
    the operation (so nobody reads the operation CANCELLED beside a stage of it still RUNNING)."""
    op = running_create(api)
    store = api.driver.runtime.store
    read = store.stage_cancellation
    reads: list[list[str]] = []

    def read_then_a_stage_begins(*args: Any, **kwargs: Any) -> Any:
        cancelling = read(*args, **kwargs)
        reads.append([str(s) for s in cancelling.stages])
        if len(reads) == 1:
            step(api, op, "begin_stage", stage="storage")  # in flight when the execution stopped
        return cancelling

    monkeypatch.setattr(store, "stage_cancellation", read_then_a_stage_begins)

    cancelled = client.cancel_operation(op["operationId"])

    assert cancelled["status"] == "CANCELLED"
    assert reads == [["access"], ["access", "storage"]]
    statuses = stage_statuses(client, "demo")
    assert (statuses["access"], statuses["storage"]) == ("CANCELLED", "CANCELLED")
    assert "RUNNING" not in statuses.values()


def test_given_a_running_create_when_deleted_then_409_names_the_cancel_route_and_after_the_cancel_delete_starts(
    api: InProcessApi, client: InstantStartClient
) -> None:
    op = running_create(api)

    with pytest.raises(ApiError) as busy:
        client.delete_cluster("demo")
    assert busy.value.status == 409
    assert f"POST /operations/{op['operationId']}/cancel" in busy.value.message

    client.cancel_operation(op["operationId"])
    delete = client.delete_cluster("demo")

    assert delete["type"] == "DELETE_CLUSTER"
    assert api.driver.run(delete["operationId"]) == "SUCCEEDED"
    with pytest.raises(ApiError) as gone:
        client.get_cluster("demo")
    assert gone.value.status == 404


def test_given_a_cancelled_create_when_its_cancelled_stage_is_retried_then_the_cluster_ends_ready(
    api: InProcessApi, client: InstantStartClient
) -> None:
    op = running_create(api)
    client.cancel_operation(op["operationId"])

    retry = client.retry_stage("demo", "access")

    assert retry["type"] == "RETRY_STAGE"
    assert api.driver.run(retry["operationId"]) == "SUCCEEDED"
    cluster = client.get_cluster("demo")
    assert cluster["status"] == "READY"
    assert {s["status"] for s in cluster["stages"]} == {"SUCCEEDED"}


SFN_STATUS_CHANGE = json.loads(
    (Path(__file__).resolve().parents[2] / "events" / "eventbridge_sfn_execution_status_change.json").read_text()
)
"""A "Step Functions Execution Status Change" event as EventBridge delivers it (ABORTED)."""


def aborted(op: Operation, **extra: str) -> dict[str, Any]:
    """The detail of the "Step Functions Execution Status Change" event of the operation's stopped execution: the
    sample event of ``events/``, for this operation's execution."""
    detail = dict(SFN_STATUS_CHANGE["detail"])
    arn = str(detail["executionArn"]).rsplit(":", 1)[0]
    return {**detail, "name": op["operationId"], "executionArn": f"{arn}:{op['operationId']}", **extra}


def test_given_an_operator_stop_when_the_aborted_event_arrives_first_then_the_cancel_route_answers_the_same(
    api: InProcessApi, client: InstantStartClient
) -> None:
    op = running_create(api)

    reconciled = on_execution_status_change(api.driver.runtime, aborted(op))
    cancelled = client.cancel_operation(op["operationId"])

    assert reconciled.action == "reconciled"
    assert cancelled["status"] == "CANCELLED"
    assert cancelled["error"] is not None and cancelled["error"]["code"] == "ExecutionAborted"
    assert stage_statuses(client, "demo")["access"] == "CANCELLED"
    assert client.get_cluster("demo")["status"] == "FAILED"


def test_given_a_cancel_through_the_api_when_the_aborted_event_arrives_then_it_changes_nothing(
    api: InProcessApi, client: InstantStartClient
) -> None:
    op = running_create(api)
    cancelled = client.cancel_operation(op["operationId"])
    before = client.get_cluster("demo")

    event = aborted(op, error="OperationCancelled", cause="cancelled")
    reconciled = on_execution_status_change(api.driver.runtime, event)

    assert reconciled.action == "already-ended"
    assert client.get_operation(op["operationId"]) == cancelled
    assert client.get_cluster("demo") == before


# -- GET /clusters/{clusterTag}/operations ----------------------------------------------------------------


def test_given_a_create_a_retry_and_a_delete_when_listing_operations_then_newest_first_page_by_page(
    api: InProcessApi, client: InstantStartClient
) -> None:
    create = running_create(api)
    client.cancel_operation(create["operationId"])
    retry = client.retry_stage("demo", "access")
    api.driver.run(retry["operationId"])
    delete = client.delete_cluster("demo")
    api.driver.run(delete["operationId"])
    api.create_cluster("other")

    everything = client.list_cluster_operations("demo")
    first = client.list_cluster_operations("demo", max_results=2)
    second = client.list_cluster_operations("demo", max_results=2, next_token=first["nextToken"])

    assert [(o["type"], o["status"]) for o in everything["operations"]] == [
        ("DELETE_CLUSTER", "SUCCEEDED"),
        ("RETRY_STAGE", "SUCCEEDED"),
        ("CREATE_CLUSTER", "CANCELLED"),
    ]
    assert everything["clusterTag"] == "demo" and everything["nextToken"] is None
    paged = [o["operationId"] for o in first["operations"] + second["operations"]]
    assert paged == [delete["operationId"], retry["operationId"], create["operationId"]]
    assert len(first["operations"]) == 2 and first["nextToken"]
    assert not second["nextToken"]


def test_given_a_tag_never_used_when_listing_operations_then_404(client: InstantStartClient) -> None:
    with pytest.raises(ApiError) as unknown:
        client.list_cluster_operations("nosuch")

    assert (unknown.value.status, unknown.value.code) == (404, "ClusterNotFound")


def test_given_a_token_of_another_clusters_listing_when_listing_operations_then_400_naming_next_token(
    api: InProcessApi, client: InstantStartClient
) -> None:
    for tag in ("alpha", "bravo"):
        op = api.create_cluster(tag)
        client.cancel_operation(op["operationId"])
        client.delete_cluster(tag)
    token = client.list_cluster_operations("alpha", max_results=1)["nextToken"]
    assert token

    with pytest.raises(ApiError) as refused:
        client.list_cluster_operations("bravo", next_token=token)

    assert refused.value.status == 400
    assert refused.value.details == [{"field": "nextToken"}]
