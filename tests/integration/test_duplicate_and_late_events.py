"""Given a READY cluster, HyperPod State Change events that arrive twice or late (older than one already seen)
change nothing: the cluster view is not rolled back and the reconciler does not fail."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox import lambdas
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal

STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
EVENTS = Path(__file__).resolve().parents[2] / "events"
"""Sample events as the AWS references shape them."""


def _events_function(sandbox: Sandbox) -> str:
    """Name of the deployed function the template's HyperPod events rule targets."""
    aws = boto3.client("lambda", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    names = [f["FunctionName"] for f in aws.list_functions()["Functions"] if "HyperPodEvents" in f["FunctionName"]]
    assert len(names) == 1, names
    return names[0]


def _handled(function: str) -> list[dict[str, Any]]:
    return [i for i in lambdas.invocations() if i["function"] == function]


def _put_and_wait_handled(
    sandbox: Sandbox, function: str, entries: list[dict[str, Any]], *, timeout: float = 30
) -> list[dict[str, Any]]:
    """``PutEvents`` on the default bus (as AWS delivers them); wait until the rule's target handled each."""
    events = boto3.client("events", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    before = len(_handled(function))
    answer = events.put_events(Entries=entries)
    assert answer["FailedEntryCount"] == 0, answer
    deadline = time.monotonic() + timeout
    while len(_handled(function)) < before + len(entries):
        assert time.monotonic() < deadline, "the events did not reach the HyperPod events function"
        time.sleep(0.2)
    return _handled(function)[before:]


def _state_change_detail(described: dict[str, Any], status: str, *, current_count: int | None = None) -> dict[str, Any]:
    """The sample State Change detail (``events/eventbridge_hyperpod_cluster_state_change.json``) for the cluster
    DescribeCluster answered ``described``: its names and ARNs, ``status``, and its groups (every group's
    ``CurrentCount`` ``current_count`` when given)."""
    detail = json.loads((EVENTS / "eventbridge_hyperpod_cluster_state_change.json").read_text())["detail"]
    [template] = detail["InstanceGroups"]
    detail.update(
        ClusterName=described["ClusterName"],
        ClusterArn=described["ClusterArn"],
        ClusterStatus=status,
        CreationTime=int(described["CreationTime"].timestamp() * 1000),
        Orchestrator=described["Orchestrator"],
        VpcConfig=described["VpcConfig"],
        InstanceGroups=[
            {
                **template,
                "InstanceGroupName": g["InstanceGroupName"],
                "InstanceType": g["InstanceType"],
                "TargetCount": g["TargetCount"],
                "CurrentCount": g["CurrentCount"] if current_count is None else current_count,
                "Status": "Creating" if status == "Creating" else g["Status"],
            }
            for g in described["InstanceGroups"]
        ],
    )
    return dict(detail)


def _state_change(detail: dict[str, Any], at: float) -> dict[str, Any]:
    return {
        "Source": "aws.sagemaker",
        "DetailType": STATE_CHANGE,
        "Detail": json.dumps(detail),
        "Resources": [detail["ClusterArn"]],
        "Time": dt.datetime.fromtimestamp(at, dt.UTC),
        "EventBusName": "default",
    }


def test_given_a_ready_cluster_when_state_change_events_arrive_twice_and_late_then_nothing_rolls_back(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    api.create_cluster("dupes", "us-west-2c", [GROUP])
    ready = wait_for(api, "dupes", terminal)
    assert ready["status"] == "READY", ready["stages"]
    assert ready["hyperPod"]["status"] == "InService"
    assert ready["hyperPod"]["instanceGroups"][0]["currentCount"] == 1

    sm = boto3.client("sagemaker", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    described = sm.describe_cluster(ClusterName="hp-cluster-dupes")
    assert described["ClusterStatus"] == "InService"
    current = _state_change_detail(described, "InService")
    newest = sandbox.clock.now()
    function = _events_function(sandbox)

    # The same (current) event twice: the second is a no-op.
    same = _state_change(current, newest)
    handled = _put_and_wait_handled(sandbox, function, [same, same])
    assert not any(i["errored"] for i in handled), handled
    after_duplicates = api.get_cluster("dupes")
    assert after_duplicates["status"] == "READY"
    assert after_duplicates["hyperPod"]["status"] == "InService"

    # Then an older event (the cluster still Creating, no instance yet) arrives after the newer one.
    creating = _state_change_detail(described, "Creating", current_count=0)
    handled = _put_and_wait_handled(sandbox, function, [_state_change(creating, newest - 900)])
    assert not any(i["errored"] for i in handled), handled

    cluster = api.get_cluster("dupes")
    assert cluster["status"] == "READY"
    assert cluster["hyperPod"]["status"] == "InService", "a late event does not roll the view back"
    group = cluster["hyperPod"]["instanceGroups"][0]
    assert (group["currentCount"], group["targetCount"]) == (1, 1)
    assert cluster["stages"] == ready["stages"], "stages are untouched"
    assert [n["nodeName"] for n in cluster["nodes"]] == [n["nodeName"] for n in ready["nodes"]]


def _deliver(sandbox: Sandbox, function: str, event: dict[str, Any]) -> dict[str, Any]:
    """Deliver ``event`` (an EventBridge envelope) to ``function`` as EventBridge does, through the sandbox's
    Lambda Invoke (PutEvents cannot choose an event id); the handler's answer."""
    aws = boto3.client("lambda", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    answer = aws.invoke(FunctionName=function, Payload=json.dumps(event).encode())
    assert "FunctionError" not in answer, answer["Payload"].read()
    return dict(json.loads(answer["Payload"].read()))


def test_given_a_create_waiting_for_nodes_when_the_same_event_id_arrives_twice_then_it_is_handled_once(
    api: InstantStartClient,
    sandbox: Sandbox,
    wait_for: Callable[..., dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """EventBridge delivers at least once: a redelivery carries the same ``id``. The events function records
    each handled id (a conditional DynamoDB write, kept a day by the table's TTL attribute), so the second
    delivery does nothing, while the create's verify stage is waiting for nodes; the create still ends READY."""
    faults = sandbox.aws.extension.faults
    faults.fail_hyperpod_capacity(GROUP["instanceType"])
    try:
        op = api.create_cluster("dupid", "us-west-2c", [GROUP])
        waiting = wait_for(
            api, "dupid", lambda c: {s["name"]: s["status"] for s in c["stages"]}.get("verify") == "RUNNING"
        )
        assert waiting["status"] == "CREATING"
        function = _events_function(sandbox)
        sm = boto3.client("sagemaker", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
        arn = sm.describe_cluster(ClusterName="hp-cluster-dupid")["ClusterArn"]
        event_id = str(uuid.uuid4())
        # The event as AWS's cluster events reference shapes it (events/eventbridge_hyperpod_cluster_event.json),
        # for this cluster: the record is under detail.EventDetails.
        event = json.loads((EVENTS / "eventbridge_hyperpod_cluster_event.json").read_text())
        record = event["detail"]["EventDetails"]
        event.update(
            id=event_id,
            time=dt.datetime.fromtimestamp(sandbox.clock.now(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            region=sandbox.region,
            resources=[arn],
        )
        record.update(
            ClusterName="hp-cluster-dupid",
            ClusterArn=arn,
            EventId=event_id,
            InstanceGroupName=GROUP["instanceGroupName"],
            EventTime=int(sandbox.clock.now() * 1000),
        )
        # Count the reconciliations of this event: the handler module is the one the sandbox runs in process.
        _deliver(sandbox, function, {**event, "id": str(uuid.uuid4()), "detail-type": "Other"})  # loaded
        handler = sys.modules[lambdas.REGISTRY[function].handler.rsplit(".", 1)[0]]
        reconciled: list[str] = []
        real = handler.on_cluster_event

        def counting(rt: Any, detail: dict[str, Any]) -> Any:
            if detail["EventDetails"]["EventId"] == event_id:
                reconciled.append(event_id)
            return real(rt, detail)

        monkeypatch.setattr(handler, "on_cluster_event", counting)

        first = _deliver(sandbox, function, event)
        again = _deliver(sandbox, function, event)

        assert first["action"] in ("woken", "recorded"), first  # the verify wait was woken (or was checking)
        assert first["clusterTag"] == "dupid"
        assert again["action"] == "duplicate", again
        assert reconciled == [event_id], "the redelivery did not reach the reconciler"
        aws_lambda = boto3.client("lambda", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
        table = aws_lambda.get_function_configuration(FunctionName=function)["Environment"]["Variables"]["TABLE_NAME"]
        dynamodb = boto3.client("dynamodb", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
        key = {"PK": {"S": f"EVENT#{event_id}"}, "SK": {"S": "META"}}
        record = dynamodb.get_item(TableName=table, Key=key)["Item"]
        assert int(record["expiration"]["N"]) > time.time() + 23 * 3600, "kept a day (the table's TTL attribute)"
        during = api.get_operation(op["operationId"])
        assert during["status"] == "RUNNING", during
    finally:
        faults.clear_hyperpod_capacity()

    ready = wait_for(api, "dupid", terminal)
    assert ready["status"] == "READY", ready["stages"]
    stages = {s["name"]: s for s in ready["stages"]}
    assert stages["verify"]["attempts"] == 1 and stages["verify"]["status"] == "SUCCEEDED"
    assert api.get_operation(op["operationId"])["status"] == "SUCCEEDED"
