"""The sandbox's EventBridge events have the shape AWS sends (the samples of ``events/``).

The control plane's event handlers are written, and unit-tested, against the samples of ``events/`` (taken from
AWS's references). Each test here makes the sandbox emit one kind of event, reads it as a rule's Lambda target (an
events function) receives it, and checks it against its sample: the envelope (``source``, ``detail-type``, the form
of ``resources``) and every key path of the sample's ``detail``, with the same JSON type (any value where the sample
has null).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from tests.sandbox.conftest_aws import (
        add_node,
        aws,
        client,
        clock,
        create_eks,
        eks_cluster,
        kube,
        lambda_zip,
        lifecycle,
        network,
        role,
        unique,
        wait_for,
    )
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        add_node,
        aws,
        client,
        clock,
        create_eks,
        eks_cluster,
        kube,
        lambda_zip,
        lifecycle,
        network,
        role,
        unique,
        wait_for,
    )

from instantstart_sandbox import stepfunctions
from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.clock import SimClock

Client = Callable[[str], Any]
EVENTS = Path(__file__).resolve().parents[2] / "events"


def sample(name: str) -> dict[str, Any]:
    """The sample event ``events/eventbridge_<name>.json``."""
    return dict(json.loads((EVENTS / f"eventbridge_{name}.json").read_text()))


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


def structure_differences(expected: Any, actual: Any, path: str = "detail") -> list[str]:
    """Where ``actual`` lacks a key path of ``expected`` or has another JSON type there (null in ``expected``: any
    value); array items are compared with the expected array's first item."""
    if expected is None:
        return []
    if _json_type(expected) != _json_type(actual):
        return [f"{path}: {_json_type(actual)} where the sample has {_json_type(expected)}"]
    if isinstance(expected, dict):
        found: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                found.append(f"{path}.{key}: missing")
            else:
                found.extend(structure_differences(value, actual[key], f"{path}.{key}"))
        return found
    if isinstance(expected, list) and expected:
        if not actual:
            return [f"{path}: empty where the sample has items"]
        return [d for i, item in enumerate(actual) for d in structure_differences(expected[0], item, f"{path}[{i}]")]
    return []


def _arn_form(arn: str) -> tuple[str, ...]:
    """partition, service, resource type and number of resource segments of ``arn``."""
    parts = arn.split(":", 5)
    assert len(parts) == 6, arn
    segments = re.split("[/:]", parts[5])
    return (parts[0], parts[1], parts[2], segments[0], str(len(segments)))


def assert_shaped_like(expected: dict[str, Any], event: dict[str, Any]) -> None:
    """``event`` (as EventBridge delivers it) has ``expected``'s envelope and ``detail`` structure."""
    assert (event["source"], event["detail-type"]) == (expected["source"], expected["detail-type"])
    assert set(expected) <= set(event), set(expected) - set(event)
    assert [_arn_form(r) for r in event["resources"]] == [_arn_form(r) for r in expected["resources"]]
    for arn in event["resources"]:
        assert arn.split(":")[3:5] == [event["region"], event["account"]], arn
    assert structure_differences(expected["detail"], event["detail"]) == []


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


@pytest.fixture
def target(client: Client, role: str, invocations: list[tuple[str, Any]]) -> Callable[..., Callable[[], list[Any]]]:
    """``target(pattern)``: route the events matching ``pattern`` to a new Lambda function, as the template routes
    them to the events functions; a function returning the events it received so far."""

    def make(pattern: dict[str, Any]) -> Callable[[], list[dict[str, Any]]]:
        function = unique("events")
        arn = client("lambda").create_function(
            FunctionName=function,
            Runtime="python3.12",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": lambda_zip()},
        )["FunctionArn"]
        rule = unique("shapes")
        client("events").put_rule(Name=rule, EventPattern=json.dumps(pattern))
        client("events").put_targets(Rule=rule, Targets=[{"Id": "fn", "Arn": arn}])
        return lambda: [event for name, event in list(invocations) if name == function]

    return make


def test_given_a_sample_when_an_event_lacks_a_key_path_or_has_another_type_then_the_difference_is_named() -> None:
    expected = sample("hyperpod_cluster_event")
    emitted = copy.deepcopy(expected["detail"])
    del emitted["EventDetails"]["EventDetails"]["EventMetadata"]["Instance"]["FailureMessage"]
    emitted["EventDetails"]["EventTime"] = "2026-11-29T14:41:12Z"

    assert structure_differences(expected["detail"], emitted) == [
        "detail.EventDetails.EventTime: string where the sample has number",
        "detail.EventDetails.EventDetails.EventMetadata.Instance.FailureMessage: missing",
    ]
    with_null = sample("sfn_execution_status_change")
    assert structure_differences(with_null["detail"], {**with_null["detail"], "error": "States.Timeout"}) == []


def test_given_a_continuous_cluster_short_of_capacity_then_its_state_change_cluster_and_node_health_events_match(
    aws: AwsSandboxServer,
    client: Client,
    target: Callable[..., Callable[[], list[Any]]],
    eks_cluster: str,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = client("sagemaker")
    name = unique("hp-cluster")
    received = target({"source": ["aws.sagemaker"], "detail": {"ClusterName": [name]}})
    cluster_events = target({"source": ["aws.sagemaker"], "detail": {"EventDetails": {"ClusterName": [name]}}})
    aws.extension.faults.fail_hyperpod_capacity("ml.g6.4xlarge", times=1)
    arn = sm.create_cluster(
        ClusterName=name,
        InstanceGroups=[
            {
                "InstanceGroupName": "accel",
                "InstanceType": "ml.g6.4xlarge",
                "InstanceCount": 1,
                "ExecutionRole": role,
                "LifeCycleConfig": dict(lifecycle),
            }
        ],
        Orchestrator={"Eks": {"ClusterArn": f"arn:aws:eks:us-west-2:123456789012:cluster/{eks_cluster}"}},
        VpcConfig={"Subnets": [network["subnets"][0]], "SecurityGroupIds": [network["sg"]]},
        NodeRecovery="Automatic",
        NodeProvisioningMode="Continuous",
        Tags=[{"Key": "instantstart:managed", "Value": "true"}],
    )["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["InstanceGroups"][0]["CurrentCount"] == 1)
    [node] = sm.list_cluster_nodes(ClusterName=arn)["ClusterNodeSummaries"]
    aws.extension.hyperpod.report_node_health(arn, node["InstanceId"], "UnschedulablePendingReplacement")

    def of(detail_type: str, events: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        return [e for e in events() if e["detail-type"] == detail_type]

    [health] = wait_for(lambda: of("SageMaker HyperPod Cluster Node Health Event", received))
    assert_shaped_like(sample("hyperpod_node_health_event"), health)
    assert (health["detail"]["InstanceId"], health["detail"]["Tags"]) == (
        node["InstanceId"],
        {"instantstart:managed": "true"},
    )

    def changes() -> list[dict[str, Any]]:
        return of("SageMaker HyperPod Cluster State Change", received)

    wait_for(lambda: {c["detail"]["ClusterStatus"] for c in changes()} >= {"Creating", "InService"})
    for change in changes():
        assert_shaped_like(sample("hyperpod_cluster_state_change"), change)
    assert {tuple(c["resources"]) for c in changes()} == {(arn,)}

    def failed() -> list[dict[str, Any]]:
        found = of("SageMaker HyperPod Cluster Event", cluster_events)
        return [e for e in found if e["detail"]["EventDetails"]["ResourceType"] == "Instance" and "failed" in str(e)]

    [failure] = wait_for(failed)
    assert_shaped_like(sample("hyperpod_cluster_event"), failure)
    record = failure["detail"]["EventDetails"]
    assert "sufficient ml.g6.4xlarge capacity" in record["EventDetails"]["EventMetadata"]["Instance"]["FailureMessage"]
    assert record["EventId"] in {
        e["EventId"] for e in sm.list_cluster_events(ClusterName=arn, MaxResults=100)["Events"]
    }


def test_given_a_restored_addon_then_its_health_restored_event_matches_the_sample(
    aws: AwsSandboxServer,
    client: Client,
    target: Callable[..., Callable[[], list[Any]]],
    kube: Any,
    network: dict[str, Any],
    role: str,
) -> None:
    eks = client("eks")
    name = create_eks(client, network, role)
    received = target({"source": ["aws.eks"], "detail": {"clusterName": [name]}})
    add_node(kube, name, "ready")
    eks.create_addon(clusterName=name, addonName="metrics-server")
    wait_for(lambda: eks.describe_addon(clusterName=name, addonName="metrics-server")["addon"]["status"] == "ACTIVE")
    aws.extension.eks.degrade_addon(name, "metrics-server", "ConfigurationConflict", "Conflicts found")
    aws.extension.eks.restore_addon(name, "metrics-server")

    [restored] = wait_for(lambda: [e for e in received() if e["detail-type"] == "EKS Addon Health Restored"])

    assert_shaped_like(sample("eks_addon_health_restored"), restored)
    addon = eks.describe_addon(clusterName=name, addonName="metrics-server")["addon"]
    assert restored["resources"] == [addon["addonArn"]]
    assert (restored["detail"]["status"], restored["detail"]["health"]["issues"]) == ("ACTIVE", [])


@pytest.mark.parametrize("ending", ["ABORTED", "SUCCEEDED"])
def test_given_an_execution_that_ends_then_its_status_change_event_matches_the_sample(
    client: Client, target: Callable[..., Callable[[], list[Any]]], role: str, clock: SimClock, ending: str
) -> None:
    stepfunctions.install(clock)  # as the Sandbox runner does: executions emit their status change events
    sfn = client("stepfunctions")
    state = {"Type": "Wait", "Seconds": 3600, "End": True} if ending == "ABORTED" else {"Type": "Pass", "End": True}
    definition = {"StartAt": "Step", "States": {"Step": state}}
    machine = sfn.create_state_machine(name=unique("sm"), definition=json.dumps(definition), roleArn=role)
    received = target({"source": ["aws.states"], "detail": {"stateMachineArn": [machine["stateMachineArn"]]}})
    execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input='{"clusterTag": "demo"}')
    if ending == "ABORTED":
        sfn.stop_execution(executionArn=execution["executionArn"], cause="operator stop")

    [event] = wait_for(lambda: [e for e in received() if e["detail"]["status"] == ending])

    assert_shaped_like(sample("sfn_execution_status_change"), event)
    detail = event["detail"]
    assert event["resources"] == [execution["executionArn"]] and detail["executionArn"] == execution["executionArn"]
    assert (json.loads(detail["input"]), detail["inputDetails"]) == ({"clusterTag": "demo"}, {"included": True})
    if ending == "ABORTED":
        assert (detail["output"], detail["outputDetails"]) == (None, None)
    else:
        assert (json.loads(detail["output"]), detail["outputDetails"]) == ({"clusterTag": "demo"}, {"included": True})


def test_given_a_stop_between_two_steps_of_a_state_then_the_execution_and_its_event_say_aborted(
    client: Client,
    target: Callable[..., Callable[[], list[Any]]],
    role: str,
    clock: SimClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """StopExecution ends an execution ABORTED wherever its state stood; here the stop lands after the engine read
    "running" and before it named the state's next field, the window a busy machine lost (moto recorded the error
    that step raised, ``States.Runtime``, over the stop, and the execution ended FAILED)."""
    from moto.stepfunctions.parser.asl.component.common.path.input_path import InputPath

    stepfunctions.install(clock)
    sfn = client("stepfunctions")
    definition = {"StartAt": "Step", "States": {"Step": {"Type": "Wait", "Seconds": 3600, "End": True}}}
    machine = sfn.create_state_machine(name=unique("sm"), definition=json.dumps(definition), roleArn=role)
    received = target({"source": ["aws.states"], "detail": {"stateMachineArn": [machine["stateMachineArn"]]}})
    entered, stopped = threading.Event(), threading.Event()
    field_name = InputPath._field_name

    def held(self: Any) -> Any:
        entered.set()
        stopped.wait(10)
        return field_name(self)

    monkeypatch.setattr(InputPath, "_field_name", held)
    execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input="{}")
    assert entered.wait(10), "the execution never reached the Wait state's InputPath"
    sfn.stop_execution(executionArn=execution["executionArn"], cause="operator stop")
    stopped.set()

    [event] = wait_for(lambda: received())
    assert (event["detail"]["status"], event["detail"]["error"]) == ("ABORTED", None)
    assert sfn.describe_execution(executionArn=execution["executionArn"])["status"] == "ABORTED"


@pytest.mark.parametrize(
    ("held", "where"),
    [
        ("moto.stepfunctions.parser.asl.component.program.program.Program.eval", "before its first state"),
        (
            "moto.stepfunctions.parser.backend.execution_worker.ExecutionWorker._get_evaluation_entrypoint",
            "before the worker made its environment",
        ),
    ],
)
def test_given_a_stop_before_the_execution_began_then_it_ends_aborted_without_running_a_state(
    client: Client,
    target: Callable[..., Callable[[], list[Any]]],
    role: str,
    clock: SimClock,
    monkeypatch: pytest.MonkeyPatch,
    held: str,
    where: str,
) -> None:
    """A StopExecution right after StartExecution aborts the execution, as on AWS (moto dropped a stop that came
    before the first state, and failed one that came before the worker's environment existed)."""
    import importlib

    stepfunctions.install(clock)
    module_name, owner, method = held.rsplit(".", 2)
    cls = getattr(importlib.import_module(module_name), owner)
    original = getattr(cls, method)
    entered, stopped = threading.Event(), threading.Event()

    def hold(self: Any, *args: Any) -> Any:
        entered.set()
        stopped.wait(10)
        return original(self, *args)

    sfn = client("stepfunctions")
    definition = {"StartAt": "Step", "States": {"Step": {"Type": "Pass", "End": True}}}
    machine = sfn.create_state_machine(name=unique("sm"), definition=json.dumps(definition), roleArn=role)
    received = target({"source": ["aws.states"], "detail": {"stateMachineArn": [machine["stateMachineArn"]]}})
    monkeypatch.setattr(cls, method, hold)
    execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input="{}")
    assert entered.wait(10), f"the execution never got {where}"
    sfn.stop_execution(executionArn=execution["executionArn"], cause="operator stop")
    stopped.set()

    [event] = wait_for(lambda: received())
    assert event["detail"]["status"] == "ABORTED", (where, event["detail"])
    assert sfn.describe_execution(executionArn=execution["executionArn"])["status"] == "ABORTED"


def test_given_an_input_over_248_kb_when_the_execution_ends_then_its_event_leaves_the_input_out(
    client: Client, target: Callable[..., Callable[[], list[Any]]], role: str, clock: SimClock
) -> None:
    """Step Functions' EventBridge guide: an escaped input over 248 KB is left out, ``inputDetails.included`` false."""
    stepfunctions.install(clock)
    sfn = client("stepfunctions")
    definition = {"StartAt": "Step", "States": {"Step": {"Type": "Wait", "Seconds": 3600, "End": True}}}
    machine = sfn.create_state_machine(name=unique("sm"), definition=json.dumps(definition), roleArn=role)
    received = target({"source": ["aws.states"], "detail": {"stateMachineArn": [machine["stateMachineArn"]]}})
    big = json.dumps({"blob": "x" * 255_000})  # within StartExecution's 256 KB
    execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input=big)
    sfn.stop_execution(executionArn=execution["executionArn"])

    [event] = wait_for(lambda: [e for e in received() if e["detail"]["status"] == "ABORTED"])

    assert (event["detail"]["input"], event["detail"]["inputDetails"]) == (None, {"included": False})
