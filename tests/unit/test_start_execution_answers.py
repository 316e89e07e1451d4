"""A request whose workflow started is answered 202, whatever fails after StartExecution reached Step Functions.

Through the client and the real API in process (moto holds the table and the state machines). A lost
StartExecution answer (the execution exists), a failed recording of its ARN: the client gets the operation, and a
retry with the same Idempotency-Key replays it, so no workflow runs unanswered and none is started twice. A
StartExecution that really failed still rolls the records back (503, the tag free again).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from inprocess_api import InProcessApi

from instantstart.aws.clients import API_BUDGET, using_budget
from instantstart.store.table import ConditionFailed
from instantstart_client.api import ApiError

GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}


@pytest.fixture
def api(inprocess_api: InProcessApi) -> InProcessApi:
    inprocess_api.advance_on_poll = False
    return inprocess_api


def api_sfn(api: InProcessApi) -> Any:
    """The Step Functions client the API function's requests use (its call budget's: clients.API_BUDGET)."""
    with using_budget(API_BUDGET):
        return api.driver.runtime.client("stepfunctions")


def executions(api: InProcessApi) -> list[dict[str, Any]]:
    sfn = api.driver.runtime.client("stepfunctions")
    machine = api.driver.runtime.settings.CREATE_CLUSTER_STATE_MACHINE_ARN
    return list(sfn.list_executions(stateMachineArn=machine)["executions"])


def test_given_a_start_execution_answer_lost_then_the_create_is_accepted_and_its_retry_replays_it(
    api: InProcessApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    sfn = api_sfn(api)
    real_start = sfn.start_execution

    def started_then_lost(**kwargs: Any) -> Any:
        real_start(**kwargs)
        raise ReadTimeoutError(endpoint_url="https://states.us-west-2.amazonaws.com")

    monkeypatch.setattr(sfn, "start_execution", started_then_lost)
    client = api.client(max_attempts=1)

    op = client.create_cluster("lost", "us-west-2c", [GROUP], idempotency_key="key-1")
    again = client.create_cluster("lost", "us-west-2c", [GROUP], idempotency_key="key-1")

    assert again["operationId"] == op["operationId"]
    assert [e["name"] for e in executions(api)] == [op["operationId"]]
    assert client.get_operation(op["operationId"])["status"] == "PENDING"
    assert client.get_cluster("lost")["status"] == "CREATING"


def test_given_the_execution_arn_not_recorded_then_the_create_is_still_accepted(
    api: InProcessApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = api.driver.runtime.store

    def refused(operation_id: str, execution_arn: str) -> Any:
        raise ConditionFailed("throttled beyond the SDK's retries")

    monkeypatch.setattr(type(store), "record_execution_arn", lambda self, op, arn: refused(op, arn))
    client = api.client(max_attempts=1)

    op = client.create_cluster("unrecorded", "us-west-2c", [GROUP])

    assert op["status"] == "PENDING"
    assert [e["name"] for e in executions(api)] == [op["operationId"]]
    assert client.get_cluster("unrecorded")["currentOperationId"] == op["operationId"]


def test_given_start_execution_refused_then_503_and_the_tag_is_free_again(
    api: InProcessApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    sfn = api_sfn(api)
    real_start = sfn.start_execution
    throttling = [True]

    def throttled(**kwargs: Any) -> Any:
        if throttling[0]:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "StartExecution")
        return real_start(**kwargs)

    monkeypatch.setattr(sfn, "start_execution", throttled)
    client = api.client(max_attempts=1)

    with pytest.raises(ApiError) as refused:
        client.create_cluster("refused", "us-west-2c", [GROUP], idempotency_key="key-2")

    assert refused.value.status == 503 and "ThrottlingException" in refused.value.message
    assert executions(api) == []
    with pytest.raises(ApiError) as gone:
        client.get_cluster("refused")
    assert gone.value.status == 404
    throttling[0] = False
    retried = client.create_cluster("refused", "us-west-2c", [GROUP], idempotency_key="key-2")
    assert [e["name"] for e in executions(api)] == [retried["operationId"]]
