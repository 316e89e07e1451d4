"""Given an operator stops a workflow in Step Functions, the operation and its running stage are CANCELLED and
nothing is left running for ever."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3

from instantstart_client.api import InstantStartClient
from tests.integration.conftest import GROUP, terminal


def test_given_a_running_create_when_its_execution_is_stopped_then_the_operation_is_cancelled(
    api: InstantStartClient, sandbox: Any, wait_for: Callable[..., dict[str, Any]]
) -> None:
    op = api.create_cluster("stopped", "us-west-2c", [GROUP])
    wait_for(api, "stopped", lambda c: any(s["status"] == "RUNNING" for s in c["stages"]))
    sfn = boto3.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    sfn.stop_execution(executionArn=api.get_operation(op["operationId"])["executionArn"], cause="operator stop")

    deadline = time.monotonic() + 60
    while api.get_operation(op["operationId"])["status"] not in ("CANCELLED", "FAILED", "SUCCEEDED"):
        assert time.monotonic() < deadline, "the operation was never reconciled"
        time.sleep(0.5)
    operation = api.get_operation(op["operationId"])
    assert operation["status"] == "CANCELLED"
    assert operation["error"]["code"] == "ExecutionAborted"
    cluster = wait_for(api, "stopped", terminal)
    assert cluster["status"] == "FAILED"
    assert not any(s["status"] == "RUNNING" for s in cluster["stages"]), cluster["stages"]
    cancelled = [s for s in cluster["stages"] if s["status"] == "CANCELLED"]
    # the stages that were running (network, and storage beside it from the start) were stopped
    assert cancelled and {s["name"] for s in cancelled} <= {"network", "storage"}
    assert all(s["error"]["code"] == "ExecutionAborted" for s in cancelled)
    retry = api.retry_stage("stopped", cancelled[0]["name"])
    assert retry["type"] == "RETRY_STAGE"
