"""Given an API invocation that overruns its ``Timeout`` after it started an operation, a retry with the same
``Idempotency-Key`` answers 202 with that operation (or 409 ``IdempotencyKeyInProgress`` with ``Retry-After`` until
the first invocation's time is over), never another 409: for a create (``POST /clusters``) and for an operation on an
existing cluster (``DELETE /clusters/{clusterTag}``, the one-operation-per-cluster path of every day-2 change)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, cancel_if_running, finished
from tests.integration.test_api_inputs import _signed

API_FUNCTION = "ApiFunction"


def _retry_until_answered(sandbox: Sandbox, send: Callable[[], Any]) -> Any:
    """``send()`` again while it answers 409 ``IdempotencyKeyInProgress``, each time after its ``Retry-After``
    (seconds on the sandbox's clock, as a client waits them); the first other answer. Every 409 seen is checked."""
    for _ in range(5):
        answer = send()
        if answer.status_code != 409:
            return answer
        assert answer.json()["error"]["code"] == "IdempotencyKeyInProgress", answer.text
        retry_after = int(answer.headers["Retry-After"])
        assert 1 <= retry_after <= 31, "at most the API function's Timeout (30 s) and a second"
        sandbox.clock.sleep(retry_after)
    raise AssertionError("still in progress after five Retry-After waits")


def test_given_a_create_whose_invocation_timed_out_after_starting_when_retried_with_its_key_then_202_same_operation(
    sandbox: Sandbox, api: InstantStartClient
) -> None:
    tag, key = "idemto", "key-idem-timeout-create"
    body = {"clusterTag": tag, "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]}
    fault = sandbox.lambda_faults.timeout(
        sandbox.function_name(API_FUNCTION),
        after_calls=0,
        after_operation="StartExecution",
        when={"rawPath": "/clusters"},
    )

    first = _signed(sandbox, "POST", "/clusters", body, {"Idempotency-Key": key})
    assert first.status_code == 500 and fault.remaining == 0, "the first invocation overran its Timeout"
    written = api.list_cluster_operations(tag)["operations"]
    assert [op["type"] for op in written] == ["CREATE_CLUSTER"], "the first invocation wrote its operation"

    retry = _retry_until_answered(
        sandbox, lambda: _signed(sandbox, "POST", "/clusters", body, {"Idempotency-Key": key})
    )
    try:
        assert retry.status_code == 202, retry.text
        assert retry.json()["operationId"] == written[0]["operationId"]
        assert retry.headers["Location"].endswith(f"/operations/{written[0]['operationId']}")
        again = _signed(sandbox, "POST", "/clusters", body, {"Idempotency-Key": key})
        assert (again.status_code, again.json()["operationId"]) == (202, written[0]["operationId"])
        assert [op["operationId"] for op in api.list_cluster_operations(tag)["operations"]] == [
            written[0]["operationId"]
        ], "no second operation"
        other = _signed(
            sandbox,
            "POST",
            "/clusters",
            {**body, "instanceGroups": [{**GROUP, "instanceCount": 2}]},
            {"Idempotency-Key": key},
        )
        assert (other.status_code, other.json()["error"]["code"]) == (409, "IdempotencyKeyReused")
    finally:
        cancel_if_running(api, written[0]["operationId"])


def test_given_a_delete_whose_invocation_timed_out_after_starting_when_retried_with_its_key_then_202_same_operation(
    sandbox: Sandbox, api: InstantStartClient
) -> None:
    tag, key = "idemto-del", "key-idem-timeout-delete"
    created = api.create_cluster(tag, "us-west-2c", [GROUP])
    api.cancel_operation(created["operationId"])
    assert finished(api, created)["status"] == "CANCELLED"
    fault = sandbox.lambda_faults.timeout(
        sandbox.function_name(API_FUNCTION),
        after_calls=0,
        after_operation="StartExecution",
        when={"rawPath": f"/clusters/{tag}"},
    )

    first = _signed(sandbox, "DELETE", f"/clusters/{tag}", None, {"Idempotency-Key": key})
    assert first.status_code == 500 and fault.remaining == 0, "the first invocation overran its Timeout"
    newest = api.list_cluster_operations(tag)["operations"][0]
    assert newest["type"] == "DELETE_CLUSTER", "the first invocation started the delete"

    retry = _retry_until_answered(
        sandbox, lambda: _signed(sandbox, "DELETE", f"/clusters/{tag}", None, {"Idempotency-Key": key})
    )
    assert retry.status_code == 202, retry.text
    assert retry.json()["operationId"] == newest["operationId"], (
        "the first request's operation, not OperationInProgress"
    )
    assert finished(api, retry.json())["status"] == "SUCCEEDED"
    assert [op["type"] for op in api.list_cluster_operations(tag)["operations"]] == ["DELETE_CLUSTER", "CREATE_CLUSTER"]
