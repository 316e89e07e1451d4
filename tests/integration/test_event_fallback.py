"""Given HyperPod sends no State Change events, the event-or-poll wait still completes the hyperpod stage,
checking AWS every poll interval (no blind window)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal

WAIT_STATE = "Check HyperPod Cluster"


@pytest.fixture
def no_state_change_events(sandbox: Sandbox) -> Iterator[None]:
    """HyperPod emits no "SageMaker HyperPod Cluster State Change" events during the test."""
    hyperpod = sandbox.aws.extension.hyperpod
    before = hyperpod.state_change_events
    hyperpod.state_change_events = False
    yield
    hyperpod.state_change_events = before


def _waits(history: list[dict[str, Any]], state: str) -> list[dict[str, Any]]:
    """Each run of the Task state ``state``: how its task ended and the timeout it was scheduled with (seconds,
    ``taskScheduledEventDetails.timeoutInSeconds``: the simulated seconds Step Functions lets it wait)."""
    by_id = {e["id"]: e for e in history}
    runs = []
    for e in history:
        if e["type"] not in ("TaskSucceeded", "TaskTimedOut", "TaskFailed"):
            continue
        entered, timeout = e, None
        while entered["type"] != "TaskStateEntered" and entered.get("previousEventId"):
            entered = by_id[entered["previousEventId"]]
            if entered["type"] == "TaskScheduled":
                timeout = entered["taskScheduledEventDetails"].get("timeoutInSeconds")
        if entered.get("stateEnteredEventDetails", {}).get("name") == state:
            runs.append({"end": e["type"], "timeoutInSeconds": timeout})
    return runs


def test_given_no_state_change_events_when_creating_then_the_poll_completes_the_hyperpod_stage(
    no_state_change_events: None, api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    op = api.create_cluster("noevent", "us-west-2c", [GROUP])
    ready = wait_for(api, "noevent", terminal)
    assert ready["status"] == "READY", ready["stages"]
    assert all(s["status"] == "SUCCEEDED" for s in ready["stages"])

    sfn = boto3.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    arn = api.get_operation(op["operationId"])["executionArn"]
    poll_seconds = json.loads(sfn.describe_execution(executionArn=arn)["input"])["config"]["pollSeconds"]
    interval = float(poll_seconds["hyperPodCluster"])
    assert 0 < interval <= 60
    history = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    runs = _waits(history, WAIT_STATE)
    assert runs, "the hyperpod stage waited for its cluster"
    assert any(r["end"] == "TaskTimedOut" for r in runs), "with no event to wake it, the wait timed out: a poll"
    assert runs[-1]["end"] == "TaskSucceeded", "the last round saw InService and completed the wait"
    # Every round was scheduled to time out after the poll interval, as Step Functions records it: a blind window
    # (the old 900 s wait for one event) would show as a longer timeout. The rounds' wall durations are not
    # compared: at 480x a loaded machine's half-second of scheduling is four simulated minutes.
    assert {r["timeoutInSeconds"] for r in runs} == {int(interval)}, ("a round waited longer than a poll", runs)
