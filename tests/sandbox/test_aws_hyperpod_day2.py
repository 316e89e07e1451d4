"""HyperPod capacity and day-2 operations in the AWS sandbox, through boto3 and the official Kubernetes client.

Multiple instance groups with every group field, BatchAdd/Delete/Reboot/ReplaceClusterNodes with their
per-call limits and per-node errors, on-demand deep health checks (with an injected failure) and Spot
interruptions. A 600x clock in front of the real sandbox Kubernetes API (fixtures of the continuous suite).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

try:
    from tests.sandbox.conftest_aws import aws, client, clock, kube, lifecycle, network, role, wait_for
    from tests.sandbox.hyperpod_helpers import TIMEOUT, Client, _all_events, _create, _group, _ready_nodes
except ImportError:  # rootdir not on sys.path
    from conftest_aws import aws, client, clock, kube, lifecycle, network, role, wait_for  # type: ignore[no-redef]
    from hyperpod_helpers import (  # type: ignore[no-redef]
        TIMEOUT,
        Client,
        _all_events,
        _create,
        _group,
        _ready_nodes,
    )

from instantstart_sandbox.aws import hyperpod_nodes
from instantstart_sandbox.aws.server import AwsSandboxServer

__all__ = ["aws", "client", "clock", "kube", "lifecycle", "network", "role"]

GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"


@pytest.fixture(autouse=True)
def _observable_durations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Longer reboots, terminations and checks (3-5 s of wall time) so a loaded machine sees the states."""
    monkeypatch.setattr(hyperpod_nodes, "REBOOT_SECONDS", 1800.0)
    monkeypatch.setattr(hyperpod_nodes, "TERMINATE_SECONDS", 1800.0)
    monkeypatch.setattr(hyperpod_nodes, "DEEP_HEALTH_CHECK_SECONDS", 1800.0)


def _group_of(sm: Any, name: str, group: str) -> dict[str, Any]:
    return next(g for g in sm.describe_cluster(ClusterName=name)["InstanceGroups"] if g["InstanceGroupName"] == group)


def _wait_counts(sm: Any, name: str, group: str, count: int) -> dict[str, Any]:
    return dict(
        wait_for(
            lambda: (g := _group_of(sm, name, group))["CurrentCount"] == count and g["TargetCount"] == count and g,
            timeout=TIMEOUT,
        )
    )


def _node(core: Any, name: str, instance_id: str) -> Any:
    nodes = [n for n in _ready_nodes(core, name) if n.metadata.name == f"hyperpod-{instance_id}"]
    return nodes[0] if nodes else None


def _node_ids(sm: Any, name: str, group: str | None = None) -> list[str]:
    nodes = sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
    return [n["InstanceId"] for n in nodes if group in (None, n["InstanceGroupName"])]


def test_given_three_groups_with_every_field_when_created_then_counts_labels_taints_and_fields_round_trip(
    sb: Client, eks: dict[str, Any], core: Any, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = sb("sagemaker")
    gpu = {
        **_group("gpu", 2, role, lifecycle, "ml.g6.4xlarge"),
        "ThreadsPerCore": 2,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "OnStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
        "KubernetesConfig": {
            "Labels": {"team": "research"},
            "Taints": [{"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NoSchedule"}],
        },
        "ScheduledUpdateConfig": {"ScheduleExpression": "cron(0 3 ? * SUN *)"},
        "OverrideVpcConfig": {"Subnets": [network["subnets"][1]], "SecurityGroupIds": [network["sg"]]},
        "MinInstanceCount": 1,
    }
    spot = {**_group("spot", 1, role, lifecycle, "ml.g5.8xlarge"), "CapacityRequirements": {"Spot": {}}}
    flexible = {
        "InstanceGroupName": "flex",
        "InstanceRequirements": {"InstanceTypes": ["ml.m5.xlarge", "ml.m5.2xlarge"]},
        "InstanceCount": 3,
        "ExecutionRole": role,
        "LifeCycleConfig": dict(lifecycle),
        "NetworkInterface": {"InterfaceType": "efa"},
    }
    name = _create(sb, eks, network, [gpu, spot, flexible])

    for group, count in (("gpu", 2), ("spot", 1), ("flex", 3)):
        _wait_counts(sm, name, group, count)
    groups = {g["InstanceGroupName"]: g for g in sm.describe_cluster(ClusterName=name)["InstanceGroups"]}
    assert groups["gpu"]["ThreadsPerCore"] == 2
    assert groups["gpu"]["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
    assert groups["gpu"]["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert groups["gpu"]["KubernetesConfig"]["CurrentLabels"] == {"team": "research"}
    assert groups["gpu"]["KubernetesConfig"]["DesiredTaints"][0]["Key"] == "nvidia.com/gpu"
    assert groups["gpu"]["ScheduledUpdateConfig"]["ScheduleExpression"] == "cron(0 3 ? * SUN *)"
    assert groups["gpu"]["OverrideVpcConfig"]["Subnets"] == [network["subnets"][1]]
    assert groups["gpu"]["MinCount"] == 1
    assert groups["spot"]["CapacityRequirements"] == {"Spot": {}}
    assert groups["flex"]["InstanceRequirements"]["CurrentInstanceTypes"] == ["ml.m5.xlarge", "ml.m5.2xlarge"]
    assert groups["flex"]["NetworkInterface"] == {"InterfaceType": "efa"}

    nodes = _ready_nodes(core, name)
    by_group: dict[str, list[Any]] = {}
    for node in nodes:
        by_group.setdefault(node.metadata.labels[GROUP_LABEL], []).append(node)
    assert {g: len(n) for g, n in by_group.items()} == {"gpu": 2, "spot": 1, "flex": 3}
    gpu_node = by_group["gpu"][0]
    assert gpu_node.metadata.labels["team"] == "research"
    assert gpu_node.metadata.labels["topology.kubernetes.io/zone"] == "us-west-2b"
    assert [(t.key, t.effect) for t in gpu_node.spec.taints] == [("nvidia.com/gpu", "NoSchedule")]
    assert by_group["flex"][0].metadata.labels["node.kubernetes.io/instance-type"] == "ml.m5.xlarge"
    spot_id = by_group["spot"][0].metadata.name.removeprefix("hyperpod-")
    detail = sm.describe_cluster_node(ClusterName=name, NodeId=spot_id)["NodeDetails"]
    assert detail["CapacityType"] == "Spot"


def test_given_a_group_when_nodes_are_batch_added_and_deleted_then_target_moves_and_kubernetes_nodes_follow(
    sb: Client, eks: dict[str, Any], core: Any, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("gpu", 1, role, lifecycle)])
    _wait_counts(sm, name, "gpu", 1)

    added = sm.batch_add_cluster_nodes(
        ClusterName=name,
        NodesToAdd=[
            {"InstanceGroupName": "gpu", "IncrementTargetCountBy": 2},
            {"InstanceGroupName": "nope", "IncrementTargetCountBy": 1},
        ],
    )
    assert [r["Status"] for r in added["Successful"]] == ["Pending", "Pending"]
    assert added["Failed"][0]["ErrorCode"] == "InstanceGroupNotFound"
    assert added["Failed"][0]["FailedCount"] == 1
    assert _group_of(sm, name, "gpu")["TargetCount"] == 3
    _wait_counts(sm, name, "gpu", 3)
    logical = {n["NodeLogicalId"] for n in sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]}
    assert {r["NodeLogicalId"] for r in added["Successful"]} <= logical
    assert len(_ready_nodes(core, name)) == 3
    operations = sm.list_cluster_operations(ClusterName=name, Type="Scaling")["ClusterOperationSummaries"]
    assert len(operations) == 2

    with pytest.raises(ClientError) as too_many:
        sm.batch_add_cluster_nodes(
            ClusterName=name,
            NodesToAdd=[{"InstanceGroupName": "gpu", "IncrementTargetCountBy": 1}] * 6,
        )
    assert too_many.value.response["Error"]["Code"] == "ValidationException"

    victim = _node_ids(sm, name)[0]
    deleted = sm.batch_delete_cluster_nodes(ClusterName=name, NodeIds=[victim, "i-0123456789abcdef0"])
    assert deleted["Successful"] == [victim]
    assert deleted["Failed"][0]["Code"] == "NodeIdNotFound"
    assert deleted["Failed"][0]["NodeId"] == "i-0123456789abcdef0"
    assert _group_of(sm, name, "gpu")["TargetCount"] == 2
    assert _node(core, name, victim) is None
    assert len(_ready_nodes(core, name)) == 2
    events = _all_events(sm, name, NodeId=victim)
    assert any("deleted" in e["Description"] for e in events)


def test_given_a_node_when_rebooted_then_pending_reboot_not_ready_then_schedulable_with_the_same_id(
    sb: Client, eks: dict[str, Any], core: Any, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("gpu", 1, role, lifecycle)])
    _wait_counts(sm, name, "gpu", 1)
    node_id = _node_ids(sm, name)[0]

    answer = sm.batch_reboot_cluster_nodes(ClusterName=name, NodeIds=[node_id, "i-00000000000000000"])
    again = sm.batch_reboot_cluster_nodes(ClusterName=name, NodeIds=[node_id])  # while it reboots
    assert again["Failed"][0]["ErrorCode"] == "InstanceIdInUse"
    assert answer["Successful"] == [node_id]
    assert answer["Failed"] == [
        {
            "NodeId": "i-00000000000000000",
            "ErrorCode": "InstanceIdNotFound",
            "Message": f"Node i-00000000000000000 not found in cluster {name}",
        }
    ]
    raw = core.read_node(f"hyperpod-{node_id}")
    assert raw.metadata.labels[HEALTH_LABEL] == "UnschedulablePendingReboot"
    assert any(c.type == "Ready" and c.status == "False" for c in raw.status.conditions)
    status = sm.describe_cluster_node(ClusterName=name, NodeId=node_id)["NodeDetails"]["InstanceStatus"]
    assert status == {"Status": "Pending", "Message": "Rebooting"}

    back = wait_for(lambda: _node(core, name, node_id), timeout=TIMEOUT)
    assert back.metadata.labels[HEALTH_LABEL] == "Schedulable"
    assert sm.describe_cluster_node(ClusterName=name, NodeId=node_id)["NodeDetails"]["InstanceStatus"]["Status"] == (
        "Running"
    )
    assert _node_ids(sm, name) == [node_id]
    with pytest.raises(ClientError) as too_many:
        sm.batch_reboot_cluster_nodes(ClusterName=name, NodeIds=[f"i-{n:017x}" for n in range(26)])
    assert "less than or equal to 25" in too_many.value.response["Error"]["Message"]


def test_given_a_node_when_replaced_then_a_new_instance_id_takes_its_place_in_hyperpod_and_kubernetes(
    sb: Client, eks: dict[str, Any], core: Any, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("gpu", 2, role, lifecycle)])
    _wait_counts(sm, name, "gpu", 2)
    old = _node_ids(sm, name)[0]
    keep = _node_ids(sm, name)[1]

    answer = sm.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[old])
    assert answer["Successful"] == [old]
    assert core.read_node(f"hyperpod-{old}").metadata.labels[HEALTH_LABEL] == "UnschedulablePendingReplacement"

    new_ids = wait_for(
        lambda: (ids := _node_ids(sm, name)) and old not in ids and len(ids) == 2 and ids, timeout=TIMEOUT
    )
    new = next(i for i in new_ids if i != keep)
    wait_for(lambda: _node(core, name, new), timeout=TIMEOUT)
    assert old not in [n.metadata.name.removeprefix("hyperpod-") for n in _ready_nodes(core, name)]
    assert _group_of(sm, name, "gpu")["CurrentCount"] == 2
    descriptions = [e["Description"] for e in _all_events(sm, name, ResourceType="Instance")]
    assert any(f"replaced by {new}" in d for d in descriptions)
    with pytest.raises(ClientError):
        sm.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[f"i-{n:017x}" for n in range(26)])


def test_given_a_health_check_fault_when_deep_health_checks_run_then_one_node_is_replaced_and_the_rest_pass(
    slow_aws: AwsSandboxServer,
    sb: Client,
    eks: dict[str, Any],
    core: Any,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("gpu", 2, role, lifecycle), _group("cpu", 1, role, lifecycle)])
    _wait_counts(sm, name, "gpu", 2)
    _wait_counts(sm, name, "cpu", 1)
    bad, good = _node_ids(sm, name, "gpu")
    slow_aws.extension.faults.fail_deep_health_check(bad)

    sm.start_cluster_health_check(
        ClusterName=name,
        DeepHealthCheckConfigurations=[{"InstanceGroupName": "gpu", "DeepHealthChecks": ["InstanceStress"]}],
    )
    operations = sm.list_cluster_operations(ClusterName=name, Type="DeepHealthCheck")["ClusterOperationSummaries"]
    assert [o["Status"] for o in operations] == ["InProgress"]
    statuses = {
        n["InstanceId"]: n["InstanceStatus"]["Status"]
        for n in sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
    }
    assert statuses[bad] == statuses[good] == "DeepHealthCheckInProgress"
    assert [s for i, s in statuses.items() if i not in (bad, good)] == ["Running"], "the cpu group is not checked"

    operation_id = operations[0]["OperationId"]
    done = wait_for(
        lambda: (
            (o := sm.describe_cluster_operation(ClusterName=name, OperationId=operation_id))["Status"] == "Done" and o
        ),
        timeout=TIMEOUT,
    )
    assert done["DeepHealthCheckDetails"] == [{"InstanceGroupName": "gpu", "DeepHealthChecks": ["InstanceStress"]}]
    # the label follows the operation's end (a loaded machine may read between the two)
    good_node = wait_for(
        lambda: (n := _node(core, name, good)) and n.metadata.labels[HEALTH_LABEL] == "Schedulable" and n,
        timeout=TIMEOUT,
    )
    assert good_node.metadata.labels["sagemaker.amazonaws.com/deep-health-check-status"] == "Passed"
    errors = [e for e in _all_events(sm, name, OperationId=operation_id) if e["EventLevel"] == "Error"]
    assert [e["InstanceId"] for e in errors] == [bad]
    wait_for(lambda: bad not in (ids := _node_ids(sm, name, "gpu")) and len(ids) == 2, timeout=TIMEOUT)
    replacement = next(i for i in _node_ids(sm, name, "gpu") if i != good)
    wait_for(lambda: _node(core, name, replacement), timeout=TIMEOUT)
    assert all(n.metadata.labels[HEALTH_LABEL] == "Schedulable" for n in _ready_nodes(core, name))


def test_given_a_spot_group_when_an_instance_is_interrupted_then_it_is_replaced_with_a_warn_event(
    slow_aws: AwsSandboxServer,
    sb: Client,
    eks: dict[str, Any],
    core: Any,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = sb("sagemaker")
    spot = {**_group("spot", 1, role, lifecycle), "CapacityRequirements": {"Spot": {}}}
    name = _create(sb, eks, network, [spot, _group("od", 1, role, lifecycle)])
    _wait_counts(sm, name, "spot", 1)
    _wait_counts(sm, name, "od", 1)
    on_demand = _node_ids(sm, name, "od")[0]

    interrupted = slow_aws.extension.hyperpod_nodes.interrupt_spot_instance(name)
    assert interrupted == _node_ids(sm, name, "spot")[0]
    warn = [e for e in _all_events(sm, name, NodeId=interrupted) if e["EventLevel"] == "Warn"]
    assert any("EC2 reclaimed the capacity" in e["Description"] for e in warn)
    replacement = wait_for(
        lambda: (ids := _node_ids(sm, name, "spot")) and ids[0] != interrupted and ids[0], timeout=TIMEOUT
    )
    wait_for(lambda: _node(core, name, replacement), timeout=TIMEOUT)
    assert _node(core, name, interrupted) is None
    assert _node_ids(sm, name, "od") == [on_demand], "on-demand instances are not interrupted"
    time.sleep(0.05)
    assert _group_of(sm, name, "spot")["CurrentCount"] == 1
