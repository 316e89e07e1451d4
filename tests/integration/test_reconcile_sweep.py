"""Given events that never arrived, the scheduled reconciliation sweep converges what is the control plane's own: a
DEGRADED cluster whose capacity came back turns READY, an operation whose execution was stopped without its status
event ends, an operation the API recorded but never started is started (the tag unblocked), and a READY cluster whose
group stays under target turns DEGRADED. Two sweeps at once do each cluster's work once. The schedule is the
template's (EventBridge Scheduler in the sandbox); the tests fire it themselves (``sandbox.schedules.fire``)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest

from instantstart.clusters.sweep import CLAIM_SECONDS
from instantstart.clusters.sweep_checks import PENDING_GRACE_SECONDS, UNDER_TARGET_SECONDS
from instantstart.naming import eks_cluster_name, hyperpod_cluster_name
from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.aws.scheduler import InvocationRefused
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import (
    GROUP,
    cancel_if_running,
    drift_subscription,
    eventually,
    finished,
    ready_cluster,
)

SCHEDULE = "ReconcileSchedule"


def _client(sandbox: Sandbox, service: str) -> Any:
    return boto3.client(service, endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)


def _fire(sandbox: Sandbox) -> dict[str, Any]:
    return dict(sandbox.schedules.fire(sandbox.deployment.physical[SCHEDULE]))  # type: ignore[union-attr]


def _merged(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Summaries of sweeps that continued one another, as one (actions and AWS calls added up)."""
    actions: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    for summary in summaries:
        actions.update(summary["actions"])
        calls.update(summary["awsCalls"])
    return {**summaries[-1], "actions": dict(actions), "awsCalls": dict(calls), "sweeps": len(summaries)}


def _until_finished(sandbox: Sandbox, summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Fire the schedule again while the last sweep stopped early (its Lambda's time: at the suite's 480x a
    worker's sandbox may hold many clusters), each continuing from the cursor; the sweeps as one summary."""
    while not summaries[-1]["finished"]:
        assert len(summaries) < 10, "a sweep continues where the last stopped, so few are needed"
        summaries.append(_fire(sandbox))
    return _merged(summaries)


def sweep(sandbox: Sandbox) -> dict[str, Any]:
    """A full sweep as the schedule starts it, after any earlier sweep's claims expired: one invocation, or more when
    one ran out of time (each continues where the last stopped); the summary of all."""
    sandbox.clock.sleep(CLAIM_SECONDS + 1)
    return _until_finished(sandbox, [_fire(sandbox)])


@contextmanager
def events_lost(sandbox: Sandbox, *functions: str) -> Iterator[None]:
    """The EventBridge rules targeting ``functions`` (logical ids) disabled: their events are never delivered."""
    events = _client(sandbox, "events")
    lambda_client = _client(sandbox, "lambda")
    rules: list[str] = []
    for logical_id in functions:
        arn = lambda_client.get_function(FunctionName=sandbox.function_name(logical_id))["Configuration"]["FunctionArn"]
        rules += events.list_rule_names_by_target(TargetArn=arn)["RuleNames"]
    assert rules, "the template's rules target the events functions"
    for rule in rules:
        events.disable_rule(Name=rule)
    try:
        yield
    finally:
        for rule in rules:
            events.enable_rule(Name=rule)


def _capacity_back(sandbox: Sandbox, tag: str) -> bool:
    """HyperPod runs every instance of ``tag``'s groups and every add-on is ACTIVE (AWS's view, not the records')."""
    sm, eks = _client(sandbox, "sagemaker"), _client(sandbox, "eks")
    groups = sm.describe_cluster(ClusterName=hyperpod_cluster_name(tag))["InstanceGroups"]
    if any(g["CurrentCount"] < g["TargetCount"] for g in groups):
        return False
    name = eks_cluster_name(tag)
    addons = eks.list_addons(clusterName=name)["addons"]
    return all(eks.describe_addon(clusterName=name, addonName=a)["addon"]["status"] == "ACTIVE" for a in addons)


@pytest.fixture
def no_capacity(sandbox: Sandbox) -> Iterator[Any]:
    faults = sandbox.aws.extension.faults
    faults.fail_hyperpod_capacity(GROUP["instanceType"])
    yield faults
    faults.clear_hyperpod_capacity()


def test_given_a_degraded_cluster_whose_capacity_returned_without_events_then_one_sweep_turns_it_ready(
    sandbox: Sandbox, api: InstantStartClient, no_capacity: Any, wait_for: Callable[..., dict[str, Any]]
) -> None:
    tag = "swdeg"
    api.create_cluster(tag, "us-west-2c", [GROUP])
    degraded = wait_for(api, tag, lambda c: c["status"] in ("READY", "FAILED", "DEGRADED"))
    assert degraded["status"] == "DEGRADED", degraded["stages"]

    with events_lost(sandbox, "HyperPodEventsFunction"):
        no_capacity.clear_hyperpod_capacity()
        assert eventually(lambda: _capacity_back(sandbox, tag), bool, timeout=120), "HyperPod brought the nodes up"
        assert api.get_cluster(tag)["status"] == "DEGRADED", "no event told the control plane"

        summary = sweep(sandbox)

        cluster = api.get_cluster(tag)
        assert cluster["status"] == "READY", (summary, cluster["stages"])
        assert summary["actions"].get("degraded-recovered", 0) >= 1
        verify = next(s for s in cluster["stages"] if s["name"] == "verify")
        assert verify["status"] == "SUCCEEDED" and verify["error"] is None
        assert summary["awsCalls"].get("sagemaker:DescribeCluster", 0) >= 1
    api.delete_cluster(tag)


def test_given_a_running_create_stopped_without_its_status_event_then_the_next_sweep_ends_its_operation(
    sandbox: Sandbox, api: InstantStartClient, wait_for: Callable[..., dict[str, Any]]
) -> None:
    tag = "swstop"
    op = api.create_cluster(tag, "us-west-2c", [GROUP])
    wait_for(api, tag, lambda c: any(s["status"] == "RUNNING" for s in c["stages"]))
    sfn = _client(sandbox, "stepfunctions")
    with events_lost(sandbox, "ExecutionEventsFunction"):
        arn = api.get_operation(op["operationId"])["executionArn"]
        sfn.stop_execution(executionArn=arn, cause="operator stop in the console")
        status = eventually(lambda: sfn.describe_execution(executionArn=arn)["status"], lambda s: s != "RUNNING")
        assert status == "ABORTED", "Step Functions stopped it (a final state)"
        assert api.get_operation(op["operationId"])["status"] in ("PENDING", "RUNNING"), "no event ended it"

        summary = sweep(sandbox)

    operation = api.get_operation(op["operationId"])
    assert operation["status"] == "CANCELLED", summary
    assert operation["error"]["code"] == "ExecutionAborted"
    assert operation["error"]["message"] == f"execution {arn} ABORTED", "as the event's reconciler words it"
    assert summary["actions"].get("execution-ended", 0) >= 1
    cluster = api.get_cluster(tag)
    assert cluster["status"] == "FAILED" and not any(s["status"] == "RUNNING" for s in cluster["stages"])
    deleting = api.delete_cluster(tag)
    assert deleting["type"] == "DELETE_CLUSTER", "the tag is not blocked"
    assert finished(api, deleting)["status"] == "SUCCEEDED"


def test_given_a_create_whose_api_invocation_died_before_start_execution_then_a_sweep_after_the_grace_starts_it(
    sandbox: Sandbox, api: InstantStartClient
) -> None:
    tag = "swpend"
    fault = sandbox.lambda_faults.crash(
        sandbox.function_name("ApiFunction"),
        after_calls=0,
        after_operation="TransactWriteItems",
        when={"rawPath": "/clusters"},
    )
    with pytest.raises(ApiError):  # the invocation crashed: API Gateway answers 500
        api.create_cluster(tag, "us-west-2c", [GROUP])
    assert fault.remaining == 0
    (op,) = api.list_cluster_operations(tag)["operations"]
    assert op["status"] == "PENDING" and not op.get("executionArn")
    with pytest.raises(ApiError) as blocked:
        api.delete_cluster(tag)
    assert blocked.value.status == 409, "before the sweep the tag is blocked"

    summary = sweep(sandbox)  # CLAIM_SECONDS (300 s) have passed: more than the grace
    assert CLAIM_SECONDS + 1 >= PENDING_GRACE_SECONDS

    assert summary["actions"].get("pending-started", 0) == 1, summary
    started = api.get_operation(op["operationId"])
    assert started["executionArn"] and started["executionArn"].endswith(op["operationId"])
    assert summary["awsCalls"].get("stepfunctions:StartExecution") == 1
    cancel_if_running(api, op["operationId"])
    assert finished(api, started)["status"] in ("CANCELLED", "SUCCEEDED")
    deleting = api.delete_cluster(tag)
    assert finished(api, deleting)["status"] == "SUCCEEDED", "create, then delete: the tag was unblocked"
    create_again = api.create_cluster(tag, "us-west-2c", [GROUP])
    cancel_if_running(api, create_again["operationId"])


def test_given_a_ready_cluster_scaled_in_outside_then_it_turns_degraded_after_the_bound_and_two_sweeps_act_once(
    sandbox: Sandbox, api: InstantStartClient
) -> None:
    tag = "swunder"
    ready_cluster(api, tag, [GROUP])
    sm = _client(sandbox, "sagemaker")
    name = hyperpod_cluster_name(tag)
    (node,) = sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
    sm.batch_delete_cluster_nodes(ClusterName=name, NodeIds=[node["InstanceId"]])  # the console, not the API

    first = sweep(sandbox)
    assert first["actions"].get("under-target", 0) >= 1 and api.get_cluster(tag)["status"] == "READY"
    sandbox.clock.sleep(UNDER_TARGET_SECONDS)

    schedule = sandbox.deployment.physical[SCHEDULE]  # type: ignore[union-attr]
    sandbox.clock.sleep(CLAIM_SECONDS + 1)
    answers: list[dict[str, Any]] = []
    both = [threading.Thread(target=lambda: answers.append(dict(sandbox.schedules.fire(schedule)))) for _ in range(2)]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join(timeout=120)

    assert len(answers) == 2
    continued: list[dict[str, Any]] = []
    if not all(a["finished"] for a in answers):  # one ran out of time: the next sweeps continue from the cursor
        continued.append(_fire(sandbox))
        _until_finished(sandbox, continued)
    assert sum(a["actions"].get("ready-degraded", 0) for a in answers + continued) == 1, (answers, continued)
    cluster = api.get_cluster(tag)
    assert cluster["status"] == "DEGRADED"
    verify = next(s for s in cluster["stages"] if s["name"] == "verify")
    assert verify["status"] == "FAILED" and verify["error"]["code"] == "InstanceGroupUnderTarget"
    assert "accel: 0/1 instances" in verify["error"]["message"], verify["error"]
    api.delete_cluster(tag)


def test_given_a_node_whose_replacement_finds_no_capacity_then_degraded_with_ec2s_reason_and_ready_once_it_is_back(
    sandbox: Sandbox, api: InstantStartClient, no_capacity: Any
) -> None:
    """A READY cluster's node is replaced (BatchReplaceClusterNodes, from the console) while EC2 has no capacity: the
    group stays under target, the cluster turns DEGRADED after the bound with HyperPod's reason verbatim, and READY
    again once capacity returned."""
    tag = "swfail"
    no_capacity.clear_hyperpod_capacity()
    ready_cluster(api, tag, [GROUP])
    no_capacity.fail_hyperpod_capacity(GROUP["instanceType"])
    sm = _client(sandbox, "sagemaker")
    name = hyperpod_cluster_name(tag)
    (node,) = sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
    sm.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[node["InstanceId"]])
    short = eventually(
        lambda: sm.describe_cluster(ClusterName=name)["InstanceGroups"][0], lambda g: g["CurrentCount"] == 0
    )
    assert short["CurrentCount"] == 0, "the old instance went and no capacity came for its replacement"

    assert sweep(sandbox)["actions"].get("under-target", 0) >= 1
    sandbox.clock.sleep(UNDER_TARGET_SECONDS)
    degraded = sweep(sandbox)

    cluster = api.get_cluster(tag)
    assert cluster["status"] == "DEGRADED", degraded
    verify = next(s for s in cluster["stages"] if s["name"] == "verify")
    assert verify["error"]["code"] == "InstanceGroupUnderTarget"
    reason = verify["error"]["message"]
    assert "sufficient ml.g6.4xlarge capacity" in reason and "us-west-2c" in reason, "EC2's words, verbatim"

    no_capacity.clear_hyperpod_capacity()
    assert eventually(lambda: _capacity_back(sandbox, tag), bool, timeout=120)
    recovered = sweep(sandbox)  # HyperPod's events (delivered here) or this sweep, whichever comes first
    assert api.get_cluster(tag)["status"] == "READY", recovered
    api.delete_cluster(tag)


def test_given_a_group_scaled_then_the_hyperpod_cluster_deleted_outside_then_each_is_drift_after_a_sweep_with_an_event(
    sandbox: Sandbox, api: InstantStartClient
) -> None:
    tag = "swdrift"
    ready_cluster(api, tag, [GROUP])
    sm, hp = _client(sandbox, "sagemaker"), hyperpod_cluster_name(tag)
    group = sm.describe_cluster(ClusterName=hp)["InstanceGroups"][0]
    scaled = {k: group[k] for k in ("InstanceGroupName", "InstanceType", "LifeCycleConfig", "ExecutionRole")}
    with drift_subscription(sandbox, "sweep-drift-events") as read:
        sm.update_cluster(ClusterName=hp, InstanceGroups=[{**scaled, "InstanceCount": 2}])  # as a console user would

        first = sweep(sandbox)

        items = {(i["resourceType"], i["name"], i["field"]): i for i in api.get_cluster(tag)["drift"]["items"]}
        count = items[("InstanceGroup", f"{hp}/accel", "TargetCount")]
        assert (count["expected"], count["observed"], count["owned"]) == ("1", "2", True), count
        assert first["actions"].get("drift-reported", 0) >= 1, first
        assert api.get_cluster(tag)["status"] == "READY", "drift is reported, never undone by the sweep"
        assert sm.describe_cluster(ClusterName=hp)["InstanceGroups"][0]["TargetCount"] == 2

        eventually(lambda: sm.describe_cluster(ClusterName=hp)["ClusterStatus"], lambda s: s == "InService")
        sm.delete_cluster(ClusterName=hp)
        eventually(
            lambda: [c["ClusterName"] for c in sm.list_clusters()["ClusterSummaries"]], lambda names: hp not in names
        )

        second = sweep(sandbox)

        gone = {(i["resourceType"], i["name"], i["field"]) for i in api.get_cluster(tag)["drift"]["items"]}
        assert ("HyperPodCluster", hp, "exists") in gone, (second, gone)
        announced = eventually(
            lambda: [(i["resourceType"], i["field"]) for e in read(tag) for i in e["newItems"]],
            lambda found: {("InstanceGroup", "TargetCount"), ("HyperPodCluster", "exists")} <= set(found),
            timeout=30,
        )
        assert {("InstanceGroup", "TargetCount"), ("HyperPodCluster", "exists")} <= set(announced), announced
    api.delete_cluster(tag)


def test_the_schedule_is_visible_through_scheduler_and_a_role_without_invoke_is_refused(sandbox: Sandbox) -> None:
    name = sandbox.deployment.physical[SCHEDULE]  # type: ignore[union-attr]
    scheduler = _client(sandbox, "scheduler")
    found = scheduler.get_schedule(Name=name)
    assert found["ScheduleExpression"] == "rate(10 minutes)" and found["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert found["Target"]["RetryPolicy"]["MaximumRetryAttempts"] == 0
    assert name in [s["Name"] for s in scheduler.list_schedules()["Schedules"]]

    iam = _client(sandbox, "iam")
    role = found["Target"]["RoleArn"].rsplit("/", 1)[-1]
    (policy,) = iam.list_role_policies(RoleName=role)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role, PolicyName=policy)["PolicyDocument"]
    iam.delete_role_policy(RoleName=role, PolicyName=policy)
    failed = sandbox.schedules.state(name).failed
    try:
        with pytest.raises(InvocationRefused, match="lambda:InvokeFunction"):
            sandbox.schedules.fire(name)
        assert sandbox.schedules.state(name).failed == failed + 1
    finally:
        iam.put_role_policy(RoleName=role, PolicyName=policy, PolicyDocument=_json(document))


def test_the_schedule_fires_on_the_simulated_clock(sandbox: Sandbox) -> None:
    name = sandbox.deployment.physical[SCHEDULE]  # type: ignore[union-attr]
    sandbox.schedules.automatic = True
    try:
        state = sandbox.schedules.wait_for_firings(name, 2, timeout=60)
    finally:
        sandbox.schedules.automatic = False
    assert state.results and state.results[-1]["sweepId"].startswith("sweep-")


def _json(document: Any) -> str:
    import json

    return document if isinstance(document, str) else json.dumps(document)
