"""Given a capacity shortage, the create ends DEGRADED with HyperPod's error verbatim and recovers by itself;
given an AWS API error, the stage records it verbatim and a retry of that stage completes the cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from instantstart.aws.clients import API_BUDGET
from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, assert_only_network_ran, terminal

INSTANCE_TYPE = GROUP["instanceType"]


@pytest.fixture
def no_capacity(sandbox: Sandbox) -> Iterator[Any]:
    """HyperPod cannot launch ``ml.g6.4xlarge`` until the test clears it (cleared afterwards in any case)."""
    faults = sandbox.aws.extension.faults
    faults.fail_hyperpod_capacity(INSTANCE_TYPE)
    yield faults
    faults.clear_hyperpod_capacity()


def _settled(cluster: dict[str, Any]) -> bool:
    return cluster["status"] in ("READY", "FAILED", "DEGRADED")


def test_given_no_capacity_under_continuous_provisioning_then_degraded_with_the_error_and_ready_once_it_clears(
    no_capacity: Any, api: InstantStartClient, wait_for: Callable[..., dict[str, Any]]
) -> None:
    op = api.create_cluster("nocap", "us-west-2c", [GROUP])

    degraded = wait_for(api, "nocap", _settled)
    assert degraded["status"] == "DEGRADED", degraded["stages"]
    stages = {s["name"]: s for s in degraded["stages"]}
    assert [stages[n]["status"] for n in ("network", "access", "dependencies", "hyperpod", "storage")] == [
        "SUCCEEDED"
    ] * 5, "the HyperPod cluster is InService: the hyperpod stage succeeded before any instance"
    assert stages["verify"]["status"] == "FAILED"
    assert stages["verify"]["error"]["code"] == "InsufficientCapacity"

    hyper_pod = degraded["hyperPod"]
    assert hyper_pod["status"] == "InService"
    group = hyper_pod["instanceGroups"][0]
    assert group["targetCount"] == 1 and group["currentCount"] == 0
    assert hyper_pod["latestErrors"], "HyperPod's errors are on the cluster view"
    assert all(e["eventLevel"] == "Error" for e in hyper_pod["latestErrors"])

    page = api.list_cluster_events("nocap", level="Error")
    assert page["hyperPodClusterName"] == "hp-cluster-nocap"
    errors = page["events"]
    assert errors and all(e["eventLevel"] == "Error" for e in errors)
    assert [e["eventTime"] for e in errors] == sorted((e["eventTime"] for e in errors), reverse=True)
    assert {e["instanceGroupName"] for e in errors} == {"accel"}
    descriptions = {e["description"] for e in errors}
    assert {e["description"] for e in hyper_pod["latestErrors"]} <= descriptions, "verbatim HyperPod events"

    operation = api.get_operation(op["operationId"])
    assert operation["status"] == "FAILED"
    assert operation["error"]["code"] == "InsufficientCapacity"
    # The reason behind HyperPod's latest Error event (DescribeClusterEvent), EC2's words verbatim.
    message = operation["error"]["message"]
    assert "sufficient ml.g6.4xlarge capacity" in message and "us-west-2c" in message, message
    assert stages["verify"]["error"] == operation["error"]

    with pytest.raises(ApiError) as conflict:
        api.create_cluster("nocap", "us-west-2c", [GROUP])
    assert conflict.value.status == 409, "a DEGRADED cluster still holds its tag"

    no_capacity.clear_hyperpod_capacity()
    ready = wait_for(api, "nocap", lambda c: c["status"] != "DEGRADED")
    assert ready["status"] == "READY", ready["stages"]
    assert ready["currentOperationId"] in (None, op["operationId"]), "no user action started anything"
    stages = {s["name"]: s for s in ready["stages"]}
    assert all(s["status"] == "SUCCEEDED" for s in stages.values()), stages
    assert stages["verify"]["attempts"] == 1 and stages["verify"]["error"] is None
    group = ready["hyperPod"]["instanceGroups"][0]
    assert group["currentCount"] == group["targetCount"] == 1


def test_given_no_capacity_then_each_error_event_of_the_events_page_carries_ec2s_reason_even_when_describe_throttles(
    no_capacity: Any, api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    """HyperPod's Error events only say "Instance creation ... failed"; GET /clusters/{tag}/events shows the
    reason behind each (DescribeClusterEvent's FailureMessage: EC2's capacity message). A throttled
    DescribeClusterEvent never fails the page: the events are listed with a note instead of the reason."""
    api.create_cluster("evwhy", "us-west-2c", [GROUP])
    degraded = wait_for(api, "evwhy", _settled)
    assert degraded["status"] == "DEGRADED", degraded["stages"]

    errors = api.list_cluster_events("evwhy", level="Error")["events"]
    assert errors and {e["resourceType"] for e in errors} >= {"Instance", "InstanceGroup"}, errors
    for event in errors:
        assert "sufficient" not in event["description"], "HyperPod's summary does not give the reason"
        reason = event["failureMessage"]
        assert reason and "sufficient ml.g6.4xlarge capacity" in reason and "us-west-2c" in reason, event
        assert event["failureMessageNote"] is None
    others = api.list_cluster_events("evwhy", level="Info")["events"]
    assert others and all(e["failureMessage"] is None and e["failureMessageNote"] is None for e in others)

    # Every attempt of the API function's next DescribeClusterEvent is throttled (each attempt its call budget allows,
    # clients.API_BUDGET); the workflow's own calls (verify rechecking the DEGRADED cluster) are not.
    api_function = sandbox.function_name("ApiFunction")
    sandbox.aws.extension.faults.inject(
        "sagemaker",
        "DescribeClusterEvent",
        "ThrottlingException",
        "Rate exceeded",
        times=API_BUDGET.max_attempts,
        when=lambda call: call.caller == api_function,
    )
    throttled = api.list_cluster_events("evwhy", level="Error")["events"]
    assert len(throttled) >= len(errors) and {e["eventLevel"] for e in throttled} == {"Error"}, "still listed"
    assert all(e["failureMessage"] is None for e in throttled), throttled
    assert (
        throttled[0]["failureMessageNote"]
        == "not read: DescribeClusterEvent failed (ThrottlingException: Rate exceeded)"
    )
    assert all("throttled (ThrottlingException) earlier on this page" in e["failureMessageNote"] for e in throttled[1:])

    again = api.list_cluster_events("evwhy", level="Error")["events"]
    assert all(e["failureMessage"] and "sufficient ml.g6.4xlarge capacity" in e["failureMessage"] for e in again)


def test_given_a_degraded_cluster_when_verify_is_retried_then_it_checks_again_and_is_ready_once_capacity_is_back(
    no_capacity: Any, api: InstantStartClient, wait_for: Callable[..., dict[str, Any]]
) -> None:
    api.create_cluster("recheck", "us-west-2c", [GROUP])
    degraded = wait_for(api, "recheck", _settled)
    assert degraded["status"] == "DEGRADED", degraded["stages"]

    retry = api.retry_stage("recheck", "verify")
    assert retry["type"] == "RETRY_STAGE" and retry["stage"] == "verify"
    checking = wait_for(api, "recheck", lambda c: _verify(c)["attempts"] == 2)
    assert _verify(checking)["status"] == "RUNNING" and _verify(checking)["error"] is None, _verify(checking)
    assert checking["currentOperationId"] == retry["operationId"]

    no_capacity.clear_hyperpod_capacity()
    ready = wait_for(api, "recheck", lambda c: terminal(c) and c["currentOperationId"] == retry["operationId"])
    assert ready["status"] == "READY", ready["stages"]
    verify = _verify(ready)
    assert verify["status"] == "SUCCEEDED" and verify["attempts"] == 2 and verify["error"] is None
    assert verify["observedStatus"].startswith("1/1 nodes Ready and Schedulable"), verify
    assert api.get_operation(retry["operationId"])["status"] == "SUCCEEDED"


def _verify(cluster: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in cluster["stages"] if s["name"] == "verify")


def test_given_an_api_error_from_aws_when_creating_then_it_is_recorded_verbatim_and_a_retry_completes_it(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    message = "The account-level service limit 'Maximum number of VPCs' is 5 VPCs."
    sandbox.aws.extension.faults.inject("ec2", "CreateVpc", "VpcLimitExceeded", message, times=1)
    op = api.create_cluster("vpclimit", "us-west-2c", [GROUP])
    failed = wait_for(api, "vpclimit", terminal)
    network = failed["stages"][0]
    assert failed["status"] == "FAILED"
    assert network["status"] == "FAILED"
    assert network["error"] == {"code": "VpcLimitExceeded", "message": message}
    assert_only_network_ran(failed)
    operation = api.get_operation(op["operationId"])
    assert operation["status"] == "FAILED" and operation["error"]["code"] == "VpcLimitExceeded"

    with pytest.raises(ApiError) as pending:
        api.retry_stage("vpclimit", "verify")
    assert pending.value.status == 409 and "PENDING" in pending.value.message

    retry = api.retry_stage("vpclimit", "network")
    assert retry["type"] == "RETRY_STAGE" and retry["stage"] == "network"
    ready = wait_for(api, "vpclimit", lambda c: terminal(c) and c["currentOperationId"] == retry["operationId"])
    assert ready["status"] == "READY", ready["stages"]
    stages = {s["name"]: s for s in ready["stages"]}
    assert stages["network"]["attempts"] == 2 and stages["network"]["error"] is None
    assert all(s["status"] == "SUCCEEDED" for s in stages.values())
    assert api.get_operation(retry["operationId"])["status"] == "SUCCEEDED"
