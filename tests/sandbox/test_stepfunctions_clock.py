"""moto's Step Functions engine on the sandbox's simulated clock (``instantstart_sandbox.stepfunctions``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from instantstart_sandbox import stepfunctions
from instantstart_sandbox.clock import SimClock

try:
    from tests.sandbox.conftest_aws import aws, client, clock, kube, lambda_zip, role, unique, wait_for
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        aws,
        client,
        clock,
        kube,
        lambda_zip,
        role,
        unique,
        wait_for,
    )

Client = Callable[[str], Any]


def test_given_a_callback_task_nobody_answers_then_it_times_out_on_the_clock_and_the_history_keeps_its_seconds(
    client: Client, role: str, clock: SimClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.awslambda.models import LambdaFunction

    stepfunctions.install(clock)  # as the Sandbox runner does
    monkeypatch.setattr(LambdaFunction, "_invoke_lambda", lambda self, event=None: ("null", False, ""))
    function_arn = client("lambda").create_function(
        FunctionName=unique("check"),
        Runtime="python3.12",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": lambda_zip()},
    )["FunctionArn"]
    definition = {
        "StartAt": "Check",
        "States": {
            "Check": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"FunctionName": function_arn, "Payload": {"taskToken.$": "$$.Task.Token"}},
                "TimeoutSeconds": 60,
                "End": True,
            }
        },
    }
    sfn = client("stepfunctions")
    machine = sfn.create_state_machine(name=unique("sm"), definition=json.dumps(definition), roleArn=role)
    execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input="{}")["executionArn"]

    # 60 simulated seconds at 3000x: the floor of a quarter of a wall second, far below the test's 10 s
    status = wait_for(lambda: (s := sfn.describe_execution(executionArn=execution)["status"]) != "RUNNING" and s)
    assert status == "FAILED"
    events = sfn.get_execution_history(executionArn=execution)["events"]
    [scheduled] = [e["taskScheduledEventDetails"] for e in events if e["type"] == "TaskScheduled"]
    assert scheduled["timeoutInSeconds"] == 60, "AWS records the state's own seconds, not the scaled wait"
    assert [e["type"] for e in events if e["type"].startswith("Task") and e["type"].endswith("Out")] == ["TaskTimedOut"]
