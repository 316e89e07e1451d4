"""Given a long create, the user cancels it through the API, deletes what it made, and reads the cluster's history."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP

LATE_STAGES = ("hyperpod", "verify")
"""Stages that run once the VPC, the EKS cluster and its add-ons exist. (Not during ``dependencies``: moto's
Step Functions engine ends an execution stopped inside a Map state FAILED instead of ABORTED.)"""


def wait_operation(api: InstantStartClient, operation_id: str, timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (op := dict(api.get_operation(operation_id)))["status"] not in ("SUCCEEDED", "FAILED", "CANCELLED"):
        assert time.monotonic() < deadline, f"operation {operation_id} did not end: {op['status']}"
        time.sleep(0.5)
    return op


def test_given_a_running_create_when_cancelled_then_it_stops_and_a_delete_tears_down_what_it_made(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    create = api.create_cluster("cancelme", "us-west-2c", [GROUP])
    wait_for(api, "cancelme", lambda c: any(s["status"] == "RUNNING" and s["name"] in LATE_STAGES for s in c["stages"]))
    with pytest.raises(ApiError) as busy:
        api.delete_cluster("cancelme")
    assert busy.value.status == 409 and f"POST /operations/{create['operationId']}/cancel" in busy.value.message

    cancelled = api.cancel_operation(create["operationId"])

    assert cancelled["status"] == "CANCELLED"
    # AWS reports ABORTED as soon as StopExecution returns; moto's engine once the task in flight returns.
    sfn = boto3.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    arn = api.get_operation(create["operationId"])["executionArn"]
    deadline = time.monotonic() + 30
    while (status := sfn.describe_execution(executionArn=arn)["status"]) == "RUNNING":
        assert time.monotonic() < deadline, "the execution was not stopped"
        time.sleep(0.2)
    assert status == "ABORTED"
    time.sleep(2)  # the task that was in flight and the ABORTED event have arrived: nothing they did may show
    assert api.cancel_operation(create["operationId"]) == cancelled
    cluster = api.get_cluster("cancelme")
    assert cluster["status"] == "FAILED"
    statuses = {s["name"]: s["status"] for s in cluster["stages"]}
    assert "RUNNING" not in statuses.values()
    stopped = [s for s in cluster["stages"] if s["status"] == "CANCELLED"]
    assert stopped and all(s["error"]["code"] == "OperationCancelled" for s in stopped)
    assert (statuses["network"], statuses["access"]) == ("SUCCEEDED", "SUCCEEDED")
    assert statuses["verify"] in ("PENDING", "CANCELLED")

    delete = api.delete_cluster("cancelme")
    assert wait_operation(api, delete["operationId"])["status"] == "SUCCEEDED"

    with pytest.raises(ApiError) as gone:
        api.get_cluster("cancelme")
    assert gone.value.status == 404
    region, endpoint = sandbox.region, sandbox.aws_endpoint_url
    eks = boto3.client("eks", endpoint_url=endpoint, region_name=region)
    assert "eks-cluster-cancelme" not in eks.list_clusters()["clusters"]
    sm = boto3.client("sagemaker", endpoint_url=endpoint, region_name=region)
    assert "hp-cluster-cancelme" not in [c["ClusterName"] for c in sm.list_clusters()["ClusterSummaries"]]
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=region)
    assert ec2.describe_vpcs(Filters=[{"Name": "tag:instantstart:cluster-tag", "Values": ["cancelme"]}])["Vpcs"] == []

    history = api.list_cluster_operations("cancelme")
    assert [(o["operationId"], o["type"], o["status"]) for o in history["operations"]] == [
        (delete["operationId"], "DELETE_CLUSTER", "SUCCEEDED"),
        (create["operationId"], "CREATE_CLUSTER", "CANCELLED"),
    ]
    assert history["nextToken"] is None


def test_given_an_ended_operation_when_cancelled_then_409_naming_its_status(api: InstantStartClient) -> None:
    create = api.create_cluster("endedop", "us-west-2c", [GROUP])
    ended = wait_operation(api, create["operationId"])

    with pytest.raises(ApiError) as refused:
        api.cancel_operation(create["operationId"])

    assert refused.value.status == 409 and refused.value.code == "OperationAlreadyEnded"
    assert ended["status"] in refused.value.message
    assert api.get_operation(create["operationId"])["status"] == ended["status"]
