"""Given the HyperPod state-change event never arrives, the bounded poll fallback still completes the stage."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from instantstart_client.api import InstantStartClient
from tests.integration.conftest import GROUP, terminal


@pytest.fixture
def hyperpod_events_lost(sandbox: Any) -> Iterator[None]:
    """Disable the template's HyperPod state-change rule (as if the events were lost), then restore it."""
    events = boto3.client("events", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    rules = [r["Name"] for r in events.list_rules()["Rules"] if "HyperPodClusterStateChange" in r["Name"]]
    assert rules, "the template's EventBridge rule is deployed"
    for name in rules:
        events.disable_rule(Name=name)
    yield
    for name in rules:
        events.enable_rule(Name=name)


def test_given_lost_events_when_creating_then_the_poll_fallback_completes_the_hyperpod_stage(
    hyperpod_events_lost: None, api: InstantStartClient, sandbox: Any, wait_for: Callable[..., dict[str, Any]]
) -> None:
    op = api.create_cluster("noevent", "us-west-2c", [GROUP])
    ready = wait_for(api, "noevent", terminal)
    assert ready["status"] == "READY", ready["stages"]
    sfn = boto3.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    history = sfn.get_execution_history(
        executionArn=api.get_operation(op["operationId"])["executionArn"], maxResults=1000
    )
    entered = [e["stateEnteredEventDetails"]["name"] for e in history["events"] if "stateEnteredEventDetails" in e]
    assert "Check HyperPod Cluster" in entered, "the stage finished through the poll fallback"
    assert any(e["type"] == "TaskTimedOut" for e in history["events"]), "the wait for the event timed out first"
