"""EventBridge delivery in the AWS sandbox: Lambda and Step Functions targets, input shaping."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

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


@pytest.fixture
def invocations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    """Spy on moto's Lambda runtime hook: (function name, event) of every invocation."""
    from moto.awslambda.models import LambdaFunction

    calls: list[tuple[str, Any]] = []
    lock = threading.Lock()

    def spy(self: Any, event: Any = None) -> tuple[str, bool, str]:
        with lock:
            calls.append((self.function_name, json.loads(event) if isinstance(event, str) else event))
        return "null", False, ""

    monkeypatch.setattr(LambdaFunction, "_invoke_lambda", spy)
    yield calls


def _function(client: Client, role: str) -> str:
    return str(
        client("lambda").create_function(
            FunctionName=unique("handler"),
            Runtime="python3.12",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": lambda_zip()},
        )["FunctionArn"]
    )


def _rule(client: Client, source: str, targets: list[dict[str, Any]]) -> None:
    events = client("events")
    name = unique("rule")
    events.put_rule(Name=name, EventPattern=json.dumps({"source": [source]}))
    events.put_targets(Rule=name, Targets=targets)


def _put(client: Client, source: str, detail: dict[str, Any]) -> None:
    result = client("events").put_events(
        Entries=[{"Source": source, "DetailType": "Thing Happened", "Detail": json.dumps(detail), "Resources": ["r1"]}]
    )
    assert result["FailedEntryCount"] == 0


def test_given_a_rule_with_a_lambda_and_an_sqs_target_when_an_event_is_put_then_both_receive_it(
    client: Client, role: str, invocations: list[tuple[str, Any]]
) -> None:
    function_arn = _function(client, role)
    sqs = client("sqs")
    queue_url = sqs.create_queue(QueueName=unique("q"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    source = unique("test.source")
    _rule(client, source, [{"Id": "fn", "Arn": function_arn}, {"Id": "q", "Arn": queue_arn}])

    _put(client, source, {"answer": 42})

    [(_, event)] = wait_for(lambda: [c for c in invocations if c[0] == function_arn.rsplit(":", 1)[-1]])
    assert event["source"] == source
    assert event["detail-type"] == "Thing Happened"
    assert event["detail"] == {"answer": 42}
    assert event["account"] == "123456789012"
    assert event["resources"] == ["r1"]
    assert event["time"].endswith("Z")  # ISO 8601, as EventBridge delivers it
    messages = wait_for(lambda: sqs.receive_message(QueueUrl=queue_url).get("Messages"))
    assert json.loads(messages[0]["Body"])["detail"] == {"answer": 42}


def test_given_input_path_or_constant_input_when_an_event_is_put_then_the_lambda_gets_the_shaped_payload(
    client: Client, role: str, invocations: list[tuple[str, Any]]
) -> None:
    by_path, constant = _function(client, role), _function(client, role)
    source = unique("test.source")
    _rule(
        client,
        source,
        [
            {"Id": "path", "Arn": by_path, "InputPath": "$.detail"},
            {"Id": "const", "Arn": constant, "Input": json.dumps({"fixed": True})},
        ],
    )
    _put(client, source, {"answer": 42})
    wait_for(lambda: len(invocations) >= 2)
    received = {name: event for name, event in invocations}
    assert received[by_path.rsplit(":", 1)[-1]] == {"answer": 42}
    assert received[constant.rsplit(":", 1)[-1]] == {"fixed": True}


def test_given_a_rule_with_a_state_machine_target_when_an_event_is_put_then_an_execution_starts_with_it(
    client: Client, role: str
) -> None:
    sfn = client("stepfunctions")
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    machine = sfn.create_state_machine(name=unique("sm"), definition=json.dumps(definition), roleArn=role)
    source = unique("test.source")
    _rule(client, source, [{"Id": "sm", "Arn": machine["stateMachineArn"], "InputPath": "$.detail"}])

    _put(client, source, {"clusterTag": "demo"})

    [execution] = wait_for(lambda: sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"])
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"]) == {"clusterTag": "demo"}
    wait_for(lambda: sfn.describe_execution(executionArn=execution["executionArn"])["status"] == "SUCCEEDED")


def test_given_a_disabled_rule_when_an_event_is_put_then_its_lambda_is_not_invoked(
    client: Client, role: str, invocations: list[tuple[str, Any]]
) -> None:
    function_arn = _function(client, role)
    events = client("events")
    source = unique("test.source")
    name = unique("rule")
    events.put_rule(Name=name, EventPattern=json.dumps({"source": [source]}), State="DISABLED")
    events.put_targets(Rule=name, Targets=[{"Id": "fn", "Arn": function_arn}])
    enabled_function = _function(client, role)
    _rule(client, source, [{"Id": "fn", "Arn": enabled_function}])

    _put(client, source, {})

    wait_for(lambda: invocations)
    time.sleep(0.2)  # give a wrongly delivered invocation the time to show up
    assert [n for n, _ in invocations] == [enabled_function.rsplit(":", 1)[-1]]


def test_given_the_step_functions_engine_when_a_task_invokes_lambda_then_it_calls_back_through_moto_port(
    client: Client, role: str, invocations: list[tuple[str, Any]]
) -> None:
    function_arn = _function(client, role)
    sfn = client("stepfunctions")
    definition = {
        "StartAt": "Invoke",
        "States": {
            "Invoke": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": function_arn, "Payload.$": "$"},
                "End": True,
            }
        },
    }
    machine = sfn.create_state_machine(name=unique("sm"), definition=json.dumps(definition), roleArn=role)
    execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input=json.dumps({"n": 1}))
    status = wait_for(
        lambda: (s := sfn.describe_execution(executionArn=execution["executionArn"])["status"]) != "RUNNING" and s
    )
    assert status == "SUCCEEDED"
    assert (function_arn.rsplit(":", 1)[-1], {"n": 1}) in invocations
