"""Step Functions' hard limits in the sandbox (``instantstart_sandbox.aws.sfn_limits``), met through boto3: execution
names and inputs, 256 KiB state data (terminal: ``States.ALL`` does not catch it), 25,000 history events."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from instantstart_sandbox import stepfunctions
from instantstart_sandbox.aws import sfn_limits
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


@pytest.fixture(autouse=True)
def _engine_hooks(clock: SimClock) -> None:
    """The Step Functions engine as the Sandbox runner installs it (unnamed executions get a UUID, SendTaskFailure
    passes its cause on), whichever test of the process ran first: under pytest-xdist this module may be a worker's
    first."""
    stepfunctions.install(clock)


def _machine(client: Client, role: str, states: dict[str, Any], start: str) -> str:
    definition = {"StartAt": start, "States": states}
    sfn = client("stepfunctions")
    return str(
        sfn.create_state_machine(name=unique("limits"), definition=json.dumps(definition), roleArn=role)[
            "stateMachineArn"
        ]
    )


def _ended(client: Client, machine: str, execution_input: str = "{}", timeout: float = 30) -> dict[str, Any]:
    sfn = client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=machine, input=execution_input)["executionArn"]
    return dict(wait_for(lambda: (d := sfn.describe_execution(executionArn=arn))["status"] != "RUNNING" and d, timeout))


def _lambda_task(function_arn: str, **extra: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": function_arn, "Payload.$": "$"},
        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
        "End": True,
        **extra,
    }


@pytest.fixture
def function_arn(client: Client, role: str) -> str:
    return str(
        client("lambda").create_function(
            FunctionName=unique("task"),
            Runtime="python3.13",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": lambda_zip()},
        )["FunctionArn"]
    )


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return exc.value.response["Error"]["Code"], exc.value.response["Error"]["Message"]


def test_given_execution_names_and_inputs_past_the_rules_then_start_execution_refuses_them(
    client: Client, role: str
) -> None:
    sfn = client("stepfunctions")
    machine = _machine(client, role, {"Done": {"Type": "Pass", "End": True}}, "Done")
    long = "n" * 81
    with pytest.raises(ClientError) as too_long:
        sfn.start_execution(stateMachineArn=machine, name=long)
    assert _error(too_long) == (
        "ValidationException",
        f"1 validation error detected: Value '{long}' at 'name' failed to satisfy constraint: "
        "Member must have length less than or equal to 80",
    )
    for bad in ("two words", "a:b", "tab\there", "nbsp\u00a0", "c1\u0085", "x/y", "q?", "dollar$"):
        with pytest.raises(ClientError) as refused:
            sfn.start_execution(stateMachineArn=machine, name=bad)
        assert _error(refused) == ("InvalidName", f"Invalid Name: '{bad}'")
    sfn.start_execution(stateMachineArn=machine, name="n" * 80)
    sfn.start_execution(stateMachineArn=machine, name="ok-name_1.2")
    at_limit = json.dumps(
        {"p": "é" * ((sfn_limits.MAX_PAYLOAD_BYTES - 8) // 2)}, ensure_ascii=False, separators=(",", ":")
    )
    assert len(at_limit.encode()) == sfn_limits.MAX_PAYLOAD_BYTES  # UTF-8 bytes count, not characters
    sfn.start_execution(stateMachineArn=machine, input=at_limit)
    with pytest.raises(ClientError) as big:
        sfn.start_execution(stateMachineArn=machine, input=json.dumps({"p": "x" * sfn_limits.MAX_PAYLOAD_BYTES}))
    assert _error(big) == (
        "ValidationException",
        "1 validation error detected: Value at 'input' failed to satisfy constraint: "
        "Member must have length less than or equal to 262144",
    )


def test_given_send_task_success_output_over_256_kib_then_it_is_refused(client: Client, clock: SimClock) -> None:
    sfn = client("stepfunctions")
    with pytest.raises(ClientError) as big:
        sfn.send_task_success(taskToken="token", output=json.dumps({"p": "x" * 262_144}))
    assert _error(big)[0] == "ValidationException" and "'output'" in _error(big)[1]
    with pytest.raises(ClientError) as cause:
        sfn.send_task_failure(taskToken="token", error="E", cause="c" * 32_769)
    assert _error(cause)[0] == "ValidationException" and "'cause'" in _error(cause)[1]


def test_given_a_task_result_over_256_kib_then_the_execution_fails_and_states_all_does_not_catch_it(
    client: Client, role: str, function_arn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.awslambda.models import LambdaFunction

    monkeypatch.setattr(
        LambdaFunction, "_invoke_lambda", lambda self, event=None: (json.dumps("r" * 270_000), False, "")
    )
    states = {"Big": _lambda_task(function_arn), "Caught": {"Type": "Pass", "End": True}}
    ended = _ended(client, _machine(client, role, states, "Big"))
    assert ended["status"] == "FAILED"
    assert ended["error"] == "States.DataLimitExceeded"
    assert "returned a result with a size exceeding the maximum number of bytes service limit" in ended["cause"]
    named = {
        "Big": {
            **_lambda_task(function_arn),
            "Catch": [{"ErrorEquals": ["States.DataLimitExceeded"], "Next": "Caught"}],
        },
        "Caught": {"Type": "Pass", "End": True},
    }
    assert _ended(client, _machine(client, role, named, "Big"))["status"] == "SUCCEEDED"  # caught by its name


def test_given_a_task_input_over_256_kib_after_parameters_then_the_task_never_runs(
    client: Client, role: str, function_arn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.awslambda.models import LambdaFunction

    invoked: list[Any] = []
    monkeypatch.setattr(
        LambdaFunction, "_invoke_lambda", lambda self, event=None: (invoked.append(event) or "{}", False, "")
    )
    call = _lambda_task(function_arn)
    call["Parameters"] = {"FunctionName": function_arn, "Payload": {"a.$": "$.pad", "b.$": "$.pad"}}
    states = {"Call": call, "Caught": {"Type": "Pass", "End": True}}
    machine = _machine(client, role, states, "Call")
    ended = _ended(client, machine, json.dumps({"pad": "x" * 100_000}))
    assert ended["status"] == "SUCCEEDED" and len(invoked) == 1  # 200 KB after Parameters: within the quota
    ended = _ended(client, machine, json.dumps({"pad": "x" * 140_000}))  # a 140 KB input, 280 KB after Parameters
    assert (ended["status"], ended["error"]) == ("FAILED", "States.DataLimitExceeded")
    assert "has an input with a size exceeding" in ended["cause"]
    assert len(invoked) == 1


def test_given_an_execution_that_reaches_25000_history_events_then_it_fails_with_states_runtime(
    client: Client, role: str
) -> None:
    states = {"Spin": {"Type": "Pass", "Next": "Spin"}}  # two events per round, for ever
    started = time.monotonic()
    ended = _ended(client, _machine(client, role, states, "Spin"), timeout=240)
    assert (ended["status"], ended["error"]) == ("FAILED", "States.Runtime")
    assert ended["cause"] == "The execution reached the maximum number of history events (25000)."
    sfn = client("stepfunctions")
    # Event ids count from 1 without gaps: the newest event's id is the history's length.
    [last] = sfn.get_execution_history(executionArn=ended["executionArn"], reverseOrder=True, maxResults=1)["events"]
    assert (last["id"], last["type"]) == (sfn_limits.MAX_HISTORY_EVENTS, "ExecutionFailed")
    [first] = sfn.get_execution_history(executionArn=ended["executionArn"], maxResults=1)["events"]
    assert (first["id"], first["type"]) == (1, "ExecutionStarted")
    assert time.monotonic() - started < 240


def test_given_a_long_history_when_read_then_it_comes_in_pages_of_100_by_default_and_at_most_1000(
    client: Client, role: str
) -> None:
    states = {f"P{i}": {"Type": "Pass", "Next": f"P{i + 1}"} for i in range(59)}
    states["P59"] = {"Type": "Succeed"}  # about 120 events: two pages of 100
    ended = _ended(client, _machine(client, role, states, "P0"))
    assert ended["status"] == "SUCCEEDED"
    sfn = client("stepfunctions")
    arn = ended["executionArn"]

    first = sfn.get_execution_history(executionArn=arn)
    assert len(first["events"]) == sfn_limits.HISTORY_PAGE_DEFAULT and first["nextToken"]
    rest = sfn.get_execution_history(executionArn=arn, nextToken=first["nextToken"])
    assert "nextToken" not in rest
    ids = [e["id"] for e in first["events"] + rest["events"]]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) > sfn_limits.HISTORY_PAGE_DEFAULT
    newest = sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=1000)
    assert [e["id"] for e in newest["events"]] == ids[::-1] and "nextToken" not in newest

    with pytest.raises(ClientError) as too_many:
        sfn.get_execution_history(executionArn=arn, maxResults=1001)
    assert too_many.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError) as reordered:  # a token of the oldest-first order, asked newest first
        sfn.get_execution_history(executionArn=arn, reverseOrder=True, nextToken=first["nextToken"])
    assert reordered.value.response["Error"]["Code"] == "InvalidToken"
