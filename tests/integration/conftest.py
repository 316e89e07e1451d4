"""Helpers of the integration tests (the sandbox fixtures live in tests/conftest.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient

GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}


def terminal(cluster: dict[str, Any]) -> bool:
    """READY or FAILED."""
    return cluster["status"] in ("READY", "FAILED")


def assert_only_network_ran(cluster: dict[str, Any]) -> None:
    """After the network stage failed: no stage after it began; storage, which starts beside the network,
    either had not begun or was stopped (FAILED ``StageInterrupted``)."""
    stages = {s["name"]: s for s in cluster["stages"]}
    storage = stages.pop("storage")
    stages.pop("network")
    assert all(s["status"] == "PENDING" for s in stages.values()), stages
    assert storage["status"] == "PENDING" or (
        storage["status"] == "FAILED" and storage["error"]["code"] == "StageInterrupted"
    ), storage


OPERATION_ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")
"""The statuses an operation ends in."""


def ready_cluster(
    api: InstantStartClient, tag: str, groups: list[dict[str, Any]], timeout: float = 240
) -> dict[str, Any]:
    """Create cluster ``tag`` with ``groups`` and poll it (every 0.5 s, up to ``timeout`` s) until it ends; READY."""
    api.create_cluster(tag, "us-west-2c", groups)
    deadline = time.monotonic() + timeout
    found: dict[str, Any] = dict(api.get_cluster(tag))
    while not terminal(found) and time.monotonic() < deadline:
        time.sleep(0.5)
        found = dict(api.get_cluster(tag))
    assert found["status"] == "READY", found["stages"]
    return found


def finished(api: InstantStartClient, op: Any, timeout: float = 240) -> dict[str, Any]:
    """Operation ``op`` polled (every 0.5 s, up to ``timeout`` s) until it ends; its last view."""
    deadline = time.monotonic() + timeout
    current = dict(api.get_operation(op["operationId"]))
    while current["status"] not in OPERATION_ENDED and time.monotonic() < deadline:
        time.sleep(0.5)
        current = dict(api.get_operation(op["operationId"]))
    return current


def eventually(read: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = 120) -> Any:
    """``read()`` polled every 0.3 s until ``ok`` holds for its value or ``timeout`` s pass; the last value."""
    deadline = time.monotonic() + timeout
    value = read()
    while not ok(value) and time.monotonic() < deadline:
        time.sleep(0.3)
        value = read()
    return value


def cancel_if_running(api: InstantStartClient, operation_id: str) -> None:
    """Cancel operation ``operation_id`` unless it already ended (409): a test that only needed the create to
    start stops its workflow, which would otherwise run to READY in the background of the other tests."""
    try:
        api.cancel_operation(operation_id)
    except ApiError as exc:
        assert exc.status == 409, exc


def refusal(call: Callable[[], Any]) -> ApiError:
    """The ApiError ``call`` raises (the test fails when it raises none)."""
    with pytest.raises(ApiError) as refused:
        call()
    return refused.value


@contextmanager
def drift_subscription(sandbox: Any, name: str) -> Iterator[Callable[[str], list[dict[str, Any]]]]:
    """A user's subscription to the control plane's ``Cluster Drift Detected`` events: an EventBridge rule on its bus
    to an SQS queue named ``name``. Yields ``read(tag)``: the details of the drift events of cluster ``tag``
    received so far, oldest first."""
    bus = sandbox.deployment.outputs["EventBusName"]
    sqs = boto3.client("sqs", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    events = boto3.client("events", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    queue = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    pattern = {"source": ["instantstart"], "detail-type": ["Cluster Drift Detected"]}
    events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps(pattern))
    events.put_targets(Rule=name, EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])
    received: list[dict[str, Any]] = []

    def read(tag: str) -> list[dict[str, Any]]:
        for message in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
            received.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
        return [e["detail"] for e in received if e["detail"]["clusterTag"] == tag]

    try:
        yield read
    finally:
        events.remove_targets(Rule=name, EventBusName=bus, Ids=["queue"])
        events.delete_rule(Name=name, EventBusName=bus)
        sqs.delete_queue(QueueUrl=queue)
