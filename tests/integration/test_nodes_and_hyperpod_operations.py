"""Given a READY cluster in the sandbox, a user lists, reboots and deletes nodes and runs a deep health check
through the HTTP API, and follows HyperPod's operations."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.aws import hyperpod_nodes
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal

TAG = "nodes"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient) -> dict[str, Any]:
    """Cluster ``nodes`` with two nodes in group ``accel``, polled to READY."""
    api.create_cluster(TAG, "us-west-2c", [{**GROUP, "instanceCount": 2}])
    deadline = time.monotonic() + 300
    found: dict[str, Any] = dict(api.get_cluster(TAG))
    while not terminal(found) and time.monotonic() < deadline:
        time.sleep(0.5)
        found = dict(api.get_cluster(TAG))
    assert found["status"] == "READY", found["stages"]
    return found


def until(check: Callable[[], Any], timeout: float = 120) -> Any:
    """Poll ``check`` until it answers something truthy (bounded wall time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"condition not met within {timeout} s")


def nodes_of(api: InstantStartClient) -> dict[str, dict[str, Any]]:
    return {n["instanceId"]: dict(n) for n in api.list_cluster_nodes(TAG)["nodes"]}


def test_when_listing_the_nodes_of_a_ready_cluster_then_ids_kubernetes_names_and_health_labels(
    cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    page = api.list_cluster_nodes(TAG)

    assert page["hyperPodClusterName"] == "hp-cluster-nodes" and page["nextToken"] is None
    assert len(page["nodes"]) == 2
    kube = sandbox.kube.cluster("eks-cluster-nodes")
    for node in page["nodes"]:
        assert node["instanceId"].startswith("i-")
        assert node["kubernetesNodeName"] == f"hyperpod-{node['instanceId']}"
        assert kube.get("v1", "Node", node["kubernetesNodeName"]) is not None
        assert (node["instanceGroupName"], node["instanceType"]) == ("accel", "ml.g6.4xlarge")
        assert node["instanceStatus"] == "Running"
        assert node["healthStatus"] == "Schedulable"
        assert node["launchTime"].endswith("Z")


def test_when_paging_one_node_at_a_time_then_each_node_once_and_the_token_is_bound_to_the_listing(
    cluster: dict[str, Any], api: InstantStartClient
) -> None:
    first = api.list_cluster_nodes(TAG, max_results=1)
    assert len(first["nodes"]) == 1 and first["nextToken"]
    second = api.list_cluster_nodes(TAG, max_results=1, next_token=first["nextToken"])
    assert len(second["nodes"]) == 1 and second["nextToken"] is None
    assert first["nodes"][0]["instanceId"] != second["nodes"][0]["instanceId"]

    with pytest.raises(ApiError) as refused:
        api.list_cluster_nodes(TAG, max_results=1, next_token=first["nextToken"], instance_group_name="other")
    assert refused.value.status == 400 and refused.value.details[0]["field"] == "nextToken"
    filtered = api.list_cluster_nodes(TAG, instance_group_name="acc")
    assert filtered["nodes"] == []  # an exact group name, not SageMaker's substring match


def test_when_deleting_a_foreign_instance_id_then_422_naming_the_field_and_nothing_is_done(
    cluster: dict[str, Any], api: InstantStartClient
) -> None:
    before = nodes_of(api)
    mine = sorted(before)[0]

    with pytest.raises(ApiError) as refused:
        api.delete_cluster_nodes(TAG, [mine, "i-0123456789abcdef0"])

    assert refused.value.status == 422
    assert [d["field"] for d in refused.value.details] == ["nodeIds[1]"]
    assert "nothing was done" in refused.value.message
    assert nodes_of(api) == before
    group = dict(api.get_cluster(TAG))["hyperPod"]["instanceGroups"][0]
    assert group["instanceCount"] == 2


def test_when_rebooting_a_node_then_202_and_it_comes_back_running_and_schedulable(
    cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reboot long enough (simulated) that a loaded machine still sees the node rebooting between the calls.
    monkeypatch.setattr(hyperpod_nodes, "REBOOT_SECONDS", 1200.0)
    node_id = sorted(nodes_of(api))[0]

    answer = api.reboot_cluster_nodes(TAG, [node_id])

    assert answer["action"] == "Reboot"
    assert answer["successful"] == [node_id] and answer["failed"] == []
    rebooting = nodes_of(api)[node_id]
    assert (rebooting["instanceStatus"], rebooting["instanceStatusMessage"]) == ("Pending", "Rebooting")
    kube = sandbox.kube.cluster("eks-cluster-nodes")
    name = f"hyperpod-{node_id}"
    assert kube.get("v1", "Node", name)["metadata"]["labels"][HEALTH_LABEL] == "UnschedulablePendingReboot"
    # A second reboot while the first runs is HyperPod's per-node failure, passed on verbatim.
    again = api.reboot_cluster_nodes(TAG, [node_id])
    assert again["successful"] == [] and [f["code"] for f in again["failed"]] == ["InstanceIdInUse"]

    back = until(lambda: nodes_of(api)[node_id]["instanceStatus"] == "Running" and nodes_of(api)[node_id])
    assert back["instanceId"] == node_id and back["healthStatus"] == "Schedulable"
    assert until(lambda: kube.get("v1", "Node", name)["metadata"]["labels"][HEALTH_LABEL] == "Schedulable")


def test_when_a_deep_health_check_runs_then_a_hyperpod_operation_is_listed_with_its_events(
    cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    until(lambda: all(n["instanceStatus"] == "Running" for n in nodes_of(api).values()))
    with pytest.raises(ApiError) as unknown:
        api.start_cluster_health_check(TAG, [{"instanceGroupName": "gpu", "deepHealthChecks": ["InstanceStress"]}])
    assert unknown.value.status == 422
    assert unknown.value.details[0]["field"] == "instanceGroups[0].instanceGroupName"

    answer = api.start_cluster_health_check(
        TAG, [{"instanceGroupName": "accel", "deepHealthChecks": ["InstanceStress", "InstanceConnectivity"]}]
    )

    operation_id = answer["hyperPodOperationId"]
    assert operation_id and answer["clusterArn"].startswith("arn:aws:sagemaker:")
    listed = api.list_hyperpod_operations(TAG, type="DeepHealthCheck")["operations"]
    assert [o["operationId"] for o in listed][:1] == [operation_id]
    assert listed[0]["status"] == "InProgress"
    done = until(lambda: (op := api.get_hyperpod_operation(TAG, operation_id))["status"] == "Done" and op)
    assert done["type"] == "DeepHealthCheck"
    assert done["deepHealthCheckDetails"][0]["instanceGroupName"] == "accel"
    assert done["deepHealthCheckDetails"][0]["deepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    descriptions = [e["description"] for e in done["events"]]
    assert sum("Deep health checks passed" in d for d in descriptions) == 2, descriptions
    assert all(e["operationId"] == operation_id for e in done["events"])
    scaling = api.list_hyperpod_operations(TAG, type="Scaling")["operations"]
    assert scaling and all(o["type"] == "Scaling" for o in scaling)


def test_when_deleting_a_node_then_it_is_gone_and_the_group_target_is_lowered(
    cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    until(lambda: all(n["instanceStatus"] == "Running" for n in nodes_of(api).values()))
    node_id = sorted(nodes_of(api))[-1]

    answer = api.delete_cluster_nodes(TAG, [node_id])

    assert answer["action"] == "Delete" and answer["successful"] == [node_id]
    assert node_id not in nodes_of(api)
    sagemaker = boto3.client("sagemaker", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    group = sagemaker.describe_cluster(ClusterName="hp-cluster-nodes")["InstanceGroups"][0]
    assert group["TargetCount"] == 1
    time.sleep(2)  # a few simulated minutes: HyperPod launches no replacement
    assert len(nodes_of(api)) == 1
