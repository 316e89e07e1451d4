"""HyperPod continuous provisioning in the AWS sandbox, through boto3 and the official Kubernetes client.

The cluster is InService before any instance, instances come up one at a time and each registers its
Kubernetes node; a capacity shortage is a stream of Error cluster events while HyperPod retries; cluster
events and operations are listed/described with the botocore shapes and reach EventBridge.

These tests run their own AWS sandbox on a slower simulated clock (600x: an instance launch takes
0.4 s of wall time) in front of the real sandbox Kubernetes API, so intermediate states are observable.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

try:
    # network/role/lifecycle are created through the stand-in server; moto's state is process-wide
    from tests.sandbox.conftest_aws import REGION, aws, client, clock, kube, lifecycle, network, role, unique, wait_for
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        REGION,
        aws,
        client,
        clock,
        kube,
        lifecycle,
        network,
        role,
        unique,
        wait_for,
    )

try:
    from tests.sandbox.hyperpod_helpers import TIMEOUT, Client, _all_events, _create, _group, _ready_nodes
except ImportError:  # rootdir not on sys.path
    from hyperpod_helpers import (  # type: ignore[no-redef]
        TIMEOUT,
        Client,
        _all_events,
        _create,
        _group,
        _ready_nodes,
    )

from instantstart_sandbox.aws import hyperpod
from instantstart_sandbox.aws.server import AwsSandboxServer

kube_server = pytest.importorskip("instantstart_sandbox.kube.server")
kubernetes = pytest.importorskip("kubernetes")


def test_given_continuous_mode_when_created_then_in_service_before_nodes_and_nodes_register_one_by_one(
    sb: Client, eks: dict[str, Any], core: Any, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("gpu", 3, role, lifecycle)])
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "Creating"

    seen: list[tuple[str, int, int]] = []  # (ClusterStatus, CurrentCount, Ready Kubernetes nodes)
    deadline = time.monotonic() + TIMEOUT
    while not seen or seen[-1][1:] != (3, 3):
        assert time.monotonic() < deadline, seen[-5:]
        described = sm.describe_cluster(ClusterName=name)
        group = described["InstanceGroups"][0]
        assert group["TargetCount"] == 3
        seen.append((described["ClusterStatus"], group["CurrentCount"], len(_ready_nodes(core, name))))
        time.sleep(0.02)

    in_service = [s for s in seen if s[0] == "InService"]
    assert in_service[0][1] < 3, "the cluster is InService before its instances are"
    assert all(s[0] in ("Creating", "InService") for s in seen)
    counts = [s[1] for s in seen]
    assert counts == sorted(counts), "CurrentCount only grows"
    assert {1, 2} <= set(counts), "instances come up one at a time"
    assert all(s[1] == 0 for s in seen if s[0] == "Creating")

    nodes = _ready_nodes(core, name)
    labels = nodes[0].metadata.labels
    assert labels["sagemaker.amazonaws.com/node-health-status"] == "Schedulable"
    assert labels["sagemaker.amazonaws.com/instance-group-name"] == "gpu"
    assert labels["node.kubernetes.io/instance-type"] == "ml.g6.4xlarge"

    running = [
        e
        for e in _all_events(sm, name, ResourceType="Instance", SortOrder="Ascending")
        if "Running" in e["Description"]
    ]
    assert sorted(f"hyperpod-{e['InstanceId']}" for e in running) == sorted(n.metadata.name for n in nodes)
    times = [e["EventTime"].timestamp() for e in running]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(gap >= hyperpod.INSTANCE_LAUNCH_SECONDS - 1 for gap in gaps), gaps
    listed = sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
    assert [n["InstanceStatus"]["Status"] for n in listed] == ["Running"] * 3


def test_given_no_capacity_when_created_then_error_events_repeat_in_service_kept_and_target_reached_after_clear(
    slow_aws: AwsSandboxServer,
    sb: Client,
    eks: dict[str, Any],
    core: Any,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = sb("sagemaker")
    slow_aws.extension.faults.fail_hyperpod_capacity("ml.g6.4xlarge")  # until cleared
    name = _create(
        sb, eks, network, [_group("gpu", 2, role, lifecycle), _group("cpu", 1, role, lifecycle, "ml.m5.xlarge")]
    )

    def failed_attempts() -> list[dict[str, Any]]:
        return [
            e
            for e in _all_events(sm, name, InstanceGroupName="gpu", ResourceType="InstanceGroup")
            if e["EventLevel"] == "Error"
        ]

    attempts = wait_for(lambda: len(found := failed_attempts()) >= 3 and found, timeout=TIMEOUT)
    times = sorted(e["EventTime"].timestamp() for e in attempts)
    assert all(b - a >= hyperpod.LAUNCH_RETRY_SECONDS - 1 for a, b in itertools.pairwise(times))
    described = sm.describe_cluster(ClusterName=name)
    groups = {g["InstanceGroupName"]: g for g in described["InstanceGroups"]}
    assert described["ClusterStatus"] == "InService"
    assert "FailureMessage" not in described
    assert (groups["gpu"]["Status"], groups["gpu"]["CurrentCount"], groups["gpu"]["TargetCount"]) == (
        "InService",
        0,
        2,
    )
    assert groups["gpu"]["ActiveOperations"] == {"Scaling": 1}
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["InstanceGroups"][1]["CurrentCount"] == 1, timeout=TIMEOUT)
    assert [n.metadata.labels["sagemaker.amazonaws.com/instance-group-name"] for n in _ready_nodes(core, name)] == [
        "cpu"
    ], "the group with capacity is not held back"

    detail = sm.describe_cluster_event(ClusterName=name, EventId=attempts[0]["EventId"])["EventDetails"]
    message = detail["EventDetails"]["EventMetadata"]["InstanceGroupScaling"]["FailureMessage"]
    assert message.startswith(
        "We currently do not have sufficient ml.g6.4xlarge capacity in the Availability Zone you requested "
        "(us-west-2a)."
    )
    instance_errors = [
        e for e in _all_events(sm, name, InstanceGroupName="gpu", ResourceType="Instance") if e["EventLevel"] == "Error"
    ]
    assert len(instance_errors) >= 2 * len(attempts) - 2, "one per missing instance and attempt"
    one = sm.describe_cluster_event(ClusterName=name, EventId=instance_errors[0]["EventId"])["EventDetails"]
    assert one["EventDetails"]["EventMetadata"]["Instance"]["FailureMessage"] == message

    slow_aws.extension.faults.clear_hyperpod_capacity("ml.g6.4xlarge")
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["CurrentCount"] == 2, timeout=TIMEOUT)
    assert len(_ready_nodes(core, name)) == 3
    assert "ActiveOperations" not in sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    [operation] = sm.list_cluster_operations(ClusterName=name)["ClusterOperationSummaries"]
    assert operation["Status"] == "Done"


def test_given_a_limited_capacity_fault_when_created_then_only_that_many_attempts_fail(
    slow_aws: AwsSandboxServer, sb: Client, eks: dict[str, Any], network: dict[str, Any], role: str, lifecycle: dict
) -> None:
    sm = sb("sagemaker")
    slow_aws.extension.faults.fail_hyperpod_capacity("ml.g6.4xlarge", "no capacity today", times=2)
    name = _create(sb, eks, network, [_group("gpu", 1, role, lifecycle)])
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["CurrentCount"] == 1, timeout=TIMEOUT)
    errors = _all_events(sm, name, ResourceType="InstanceGroup")
    errors = [e for e in errors if e["EventLevel"] == "Error"]
    assert len(errors) == 2
    detail = sm.describe_cluster_event(ClusterName=name, EventId=errors[0]["EventId"])["EventDetails"]
    assert detail["EventDetails"]["EventMetadata"]["InstanceGroupScaling"]["FailureMessage"] == "no capacity today"


def test_given_a_provisioned_cluster_when_listing_events_and_operations_then_filters_sorting_and_paging_work(
    sb: Client, eks: dict[str, Any], network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("a", 2, role, lifecycle), _group("b", 1, role, lifecycle)])
    wait_for(
        lambda: [g["CurrentCount"] for g in sm.describe_cluster(ClusterName=name)["InstanceGroups"]] == [2, 1],
        timeout=TIMEOUT,
    )

    # the cluster may still be emitting events (ascending order appends them): paging reads at least every event
    # listed before it, and exactly the first events of a listing taken after it
    listed_before = [
        e["EventId"] for e in sm.list_cluster_events(ClusterName=name, MaxResults=100, SortOrder="Ascending")["Events"]
    ]
    paged = [e["EventId"] for e in _all_events(sm, name, MaxResults=2, SortOrder="Ascending")]
    everything = sm.list_cluster_events(ClusterName=name, MaxResults=100, SortOrder="Ascending")["Events"]
    assert paged[: len(listed_before)] == listed_before
    assert paged == [e["EventId"] for e in everything][: len(paged)]
    assert len(listed_before) > 2
    first = sm.list_cluster_events(ClusterName=name, MaxResults=2)
    assert len(first["Events"]) == 2 and first["NextToken"]
    assert [e["EventTime"] for e in everything] == sorted(e["EventTime"] for e in everything)
    newest_first = sm.list_cluster_events(ClusterName=name, MaxResults=100, SortOrder="Descending")["Events"]
    assert newest_first[0]["EventTime"] >= newest_first[-1]["EventTime"]
    assert (everything[0]["ResourceType"], everything[0]["EventLevel"]) == ("Cluster", "Info")
    assert {e["EventLevel"] for e in everything} == {"Info"}

    only_b = _all_events(sm, name, InstanceGroupName="b")
    assert only_b and {e["InstanceGroupName"] for e in only_b} == {"b"}
    instances = _all_events(sm, name, ResourceType="Instance")
    assert instances and {e["ResourceType"] for e in instances} == {"Instance"}
    node_id = sm.list_cluster_nodes(ClusterName=name, InstanceGroupNameContains="b")["ClusterNodeSummaries"][0][
        "InstanceId"
    ]
    about_node = _all_events(sm, name, NodeId=node_id)
    assert about_node and {e["InstanceId"] for e in about_node} == {node_id}
    in_service = next(e for e in everything if e["Description"].endswith("is InService"))
    cut = in_service["EventTime"].replace(microsecond=0)  # botocore sends whole epoch seconds
    after = _all_events(sm, name, EventTimeAfter=cut, SortOrder="Ascending")
    before = _all_events(sm, name, EventTimeBefore=cut, SortOrder="Ascending")
    assert after and [e["EventId"] for e in after] == [e["EventId"] for e in everything if e["EventTime"] > cut]
    assert before and [e["EventId"] for e in before] == [e["EventId"] for e in everything if e["EventTime"] < cut]

    launched = next(e for e in instances if "Running" in e["Description"])
    detail = sm.describe_cluster_event(ClusterName=name, EventId=launched["EventId"])["EventDetails"]
    assert detail["InstanceId"] == launched["InstanceId"]
    assert detail["EventDetails"]["EventMetadata"]["Instance"]["NodeLogicalId"]
    with pytest.raises(ClientError) as missing:
        sm.describe_cluster_event(ClusterName=name, EventId="00000000-0000-4000-8000-000000000000")
    assert missing.value.response["Error"]["Code"] == "ResourceNotFound"

    # the create's operation ends a launch step after the last instance runs
    wait_for(lambda: not sm.list_cluster_operations(ClusterName=name, Status="InProgress")["ClusterOperationSummaries"])
    [create_op] = sm.list_cluster_operations(ClusterName=name)["ClusterOperationSummaries"]
    assert (create_op["Type"], create_op["Status"]) == ("Scaling", "Done")
    described = sm.describe_cluster_operation(ClusterName=name, OperationId=create_op["OperationId"])
    assert {
        d["InstanceGroupName"]: (d["Status"], d["Original"], d["Desired"]["TargetCount"])
        for d in described["ScalingDetails"]
    } == {
        "a": ("Done", {"CurrentCount": 0, "TargetCount": 0}, 2),
        "b": ("Done", {"CurrentCount": 0, "TargetCount": 0}, 1),
    }
    assert {e["OperationId"] for e in _all_events(sm, name, ResourceType="InstanceGroup")} == {create_op["OperationId"]}

    groups = sm.describe_cluster(ClusterName=name)["InstanceGroups"]
    scaled = {k: groups[0][k] for k in ("InstanceGroupName", "InstanceType", "ExecutionRole", "LifeCycleConfig")}
    sm.update_cluster(
        ClusterName=name, InstanceGroups=[{**scaled, "InstanceCount": 3}, _group("b", 1, role, lifecycle)]
    )
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService", "scaling keeps the cluster InService"
    in_progress = sm.list_cluster_operations(ClusterName=name, Status="InProgress")["ClusterOperationSummaries"]
    assert len(in_progress) == 1 and in_progress[0]["OperationId"] != create_op["OperationId"]
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["CurrentCount"] == 3, timeout=TIMEOUT)
    # the operation ends a launch step after its last instance runs (a client polls it, as it polls the count)
    op_id = in_progress[0]["OperationId"]
    wait_for(
        lambda: sm.describe_cluster_operation(ClusterName=name, OperationId=op_id)["Status"] != "InProgress",
        timeout=TIMEOUT,
    )
    scale_op = sm.describe_cluster_operation(ClusterName=name, OperationId=op_id)
    assert scale_op["Status"] == "Done"
    assert [
        (d["InstanceGroupName"], d["Original"]["TargetCount"], d["Desired"]["TargetCount"])
        for d in scale_op["ScalingDetails"]
    ] == [("a", 2, 3)]
    by_op = _all_events(sm, name, OperationId=scale_op["OperationId"])
    assert any(e.get("InstanceId") for e in by_op) and {e["OperationId"] for e in by_op} == {scale_op["OperationId"]}
    ordered = sm.list_cluster_operations(ClusterName=name, SortOrder="Ascending")["ClusterOperationSummaries"]
    assert [o["OperationId"] for o in ordered] == [create_op["OperationId"], scale_op["OperationId"]]
    page = sm.list_cluster_operations(ClusterName=name, MaxResults=1)
    assert len(page["ClusterOperationSummaries"]) == 1 and page["NextToken"]


def test_given_a_cluster_without_continuous_mode_when_listing_events_then_validation_exception(
    sb: Client, eks: dict[str, Any], network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = sb("sagemaker")
    name = unique("hp-cluster")
    sm.create_cluster(
        ClusterName=name,
        InstanceGroups=[_group("gpu", 1, role, lifecycle)],
        Orchestrator={"Eks": {"ClusterArn": eks["arn"]}},
        VpcConfig={"Subnets": [network["subnets"][0]], "SecurityGroupIds": [network["sg"]]},
    )
    with pytest.raises(ClientError) as err:
        sm.list_cluster_events(ClusterName=name)
    assert err.value.response["Error"]["Code"] == "ValidationException"


def test_given_rules_on_hyperpod_events_when_state_change_events_are_off_then_only_cluster_events_arrive(
    slow_aws: AwsSandboxServer,
    sb: Client,
    eks: dict[str, Any],
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sqs, events, sm = sb("sqs"), sb("events"), sb("sagemaker")

    def queue_for(detail_type: str) -> str:
        url = sqs.create_queue(QueueName=unique("hp"))["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        rule = unique("hp")
        events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["aws.sagemaker"], "detail-type": [detail_type]}))
        events.put_targets(Rule=rule, Targets=[{"Id": "q", "Arn": arn}])
        return str(url)

    def drain(url: str) -> list[dict[str, Any]]:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in messages]

    cluster_events = queue_for("SageMaker HyperPod Cluster Event")
    state_changes = queue_for("SageMaker HyperPod Cluster State Change")
    slow_aws.extension.hyperpod.state_change_events = False
    name = _create(sb, eks, network, [_group("gpu", 1, role, lifecycle)])
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["CurrentCount"] == 1, timeout=TIMEOUT)

    listed = _all_events(sm, name, SortOrder="Ascending")
    received: list[dict[str, Any]] = []

    def all_received() -> bool:
        received.extend(e for e in drain(cluster_events) if e["detail"]["EventDetails"]["ClusterName"] == name)
        return {e["EventId"] for e in listed} <= {e["detail"]["EventDetails"]["EventId"] for e in received}

    wait_for(all_received, timeout=TIMEOUT)
    # the cluster may emit more events after the first listing: each delivered event is one ListClusterEvents shows,
    # delivered once
    delivered = [e["detail"]["EventDetails"]["EventId"] for e in received]
    assert len(delivered) == len(set(delivered)), "each event is delivered once"
    assert set(delivered) <= {e["EventId"] for e in _all_events(sm, name, SortOrder="Ascending")}
    sample = received[0]
    assert sample["source"] == "aws.sagemaker"
    assert sample["resources"] == [sm.describe_cluster(ClusterName=name)["ClusterArn"]]
    detail = sample["detail"]["EventDetails"]
    assert isinstance(detail["EventTime"], int) and detail["EventTime"] > 10**12, "epoch milliseconds"
    assert {"EventId", "ClusterArn", "ClusterName", "ResourceType", "EventLevel", "Description"} <= set(detail)
    assert [e for e in drain(state_changes) if e["detail"]["ClusterName"] == name] == []

    slow_aws.extension.hyperpod.state_change_events = True
    again = _create(sb, eks, network, [_group("gpu", 0, role, lifecycle)])
    wait_for(lambda: sm.describe_cluster(ClusterName=again)["ClusterStatus"] == "InService", timeout=TIMEOUT)
    seen: list[str] = []
    wait_for(
        lambda: (
            seen.extend(
                e["detail"]["ClusterStatus"] for e in drain(state_changes) if e["detail"]["ClusterName"] == again
            )
            or seen == ["Creating", "InService"]
        ),
        timeout=TIMEOUT,
    )


def test_given_security_groups_in_another_vpc_when_created_then_the_cluster_ends_failed_with_the_message(
    sb: Client, eks: dict[str, Any], network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    ec2, sm = sb("ec2"), sb("sagemaker")
    other_vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    foreign_sg = ec2.create_security_group(GroupName=unique("sg"), Description="other", VpcId=other_vpc)["GroupId"]
    group = {
        **_group("gpu", 1, role, lifecycle),
        "OverrideVpcConfig": {"Subnets": [network["subnets"][1]], "SecurityGroupIds": [foreign_sg]},
    }
    name = _create(sb, eks, network, [group])
    failed = wait_for(
        lambda: (d := sm.describe_cluster(ClusterName=name))["ClusterStatus"] == "Failed" and d, timeout=TIMEOUT
    )
    assert foreign_sg in failed["FailureMessage"] and "different networks" in failed["FailureMessage"]
    [error] = [e for e in _all_events(sm, name) if e["EventLevel"] == "Error"]
    detail = sm.describe_cluster_event(ClusterName=name, EventId=error["EventId"])["EventDetails"]
    assert detail["ResourceType"] == "Cluster"
    assert detail["EventDetails"]["EventMetadata"]["Cluster"]["FailureMessage"] == failed["FailureMessage"]
