"""Given a READY cluster in the sandbox, a user lists, reboots and deletes nodes, runs deep health checks and a
software update through the HTTP API: each is an operation that ends when HyperPod and Kubernetes say it is done."""

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


def finished(api: InstantStartClient, op: Any, timeout: float = 240) -> dict[str, Any]:
    """The operation once it ended (SUCCEEDED, FAILED or CANCELLED), polled through the API."""
    return dict(
        until(
            lambda: (
                (found := api.get_operation(op["operationId"]))["status"] in ("SUCCEEDED", "FAILED", "CANCELLED")
                and found
            ),
            timeout,
        )
    )


def all_running(api: InstantStartClient, count: int) -> bool:
    nodes = nodes_of(api)
    return len(nodes) == count and all(n["instanceStatus"] == "Running" for n in nodes.values())


def sagemaker(sandbox: Sandbox) -> Any:
    return boto3.client("sagemaker", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)


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


def test_when_deleting_a_foreign_instance_id_then_422_naming_the_field_and_no_operation(
    cluster: dict[str, Any], api: InstantStartClient
) -> None:
    before = nodes_of(api)
    mine = sorted(before)[0]
    operations = api.list_cluster_operations(TAG)["operations"]

    with pytest.raises(ApiError) as refused:
        api.delete_cluster_nodes(TAG, [mine, "i-0123456789abcdef0"])

    assert refused.value.status == 422
    assert [d["field"] for d in refused.value.details] == ["nodeIds[1]"]
    assert "nothing was done" in refused.value.message
    assert api.list_cluster_operations(TAG)["operations"] == operations
    assert nodes_of(api) == before
    group = dict(api.get_cluster(TAG))["hyperPod"]["instanceGroups"][0]
    assert group["instanceCount"] == 2


def test_when_rebooting_a_node_then_the_operation_succeeds_once_it_is_back_ready_and_a_second_action_is_409(
    cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reboot long enough (simulated) that a loaded machine still sees the node rebooting between the calls.
    monkeypatch.setattr(hyperpod_nodes, "REBOOT_SECONDS", 1200.0)
    node_id = sorted(nodes_of(api))[0]

    op = api.reboot_cluster_nodes(TAG, [node_id])
    with pytest.raises(ApiError) as busy:
        api.replace_cluster_nodes(TAG, [node_id])
    rebooting = until(lambda: nodes_of(api)[node_id]["instanceStatus"] == "Pending" and nodes_of(api)[node_id])
    running = api.get_operation(op["operationId"])
    done = finished(api, op)

    assert op["type"] == "REBOOT_CLUSTER_NODES" and op["status"] in ("PENDING", "RUNNING")
    assert op["result"]["nodeIds"] == [node_id]
    assert busy.value.status == 409 and busy.value.code == "OperationInProgress"
    assert op["operationId"] in busy.value.message
    assert rebooting["instanceStatusMessage"] == "Rebooting"
    assert running["status"] == "RUNNING", running
    assert done["status"] == "SUCCEEDED", done
    assert done["result"]["successful"] == [node_id] and done["result"]["failed"] == []
    # When the operation says SUCCEEDED the node is back: same instance, Running, Ready and Schedulable.
    kube = sandbox.kube.cluster("eks-cluster-nodes")
    node = kube.get("v1", "Node", f"hyperpod-{node_id}")
    assert node["metadata"]["labels"][HEALTH_LABEL] == "Schedulable"
    assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
    back = nodes_of(api)[node_id]
    assert (back["instanceStatus"], back["instanceStatusMessage"]) == ("Running", None)
    assert api.get_cluster(TAG)["status"] == "READY"


def test_when_a_deep_health_check_passes_then_the_operation_succeeds_with_hyperpods_done_operation(
    cluster: dict[str, Any], api: InstantStartClient
) -> None:
    until(lambda: all_running(api, 2))
    with pytest.raises(ApiError) as unknown:
        api.start_cluster_health_check(TAG, [{"instanceGroupName": "gpu", "deepHealthChecks": ["InstanceStress"]}])
    assert unknown.value.status == 422
    assert unknown.value.details[0]["field"] == "instanceGroups[0].instanceGroupName"

    op = api.start_cluster_health_check(
        TAG, [{"instanceGroupName": "accel", "deepHealthChecks": ["InstanceStress", "InstanceConnectivity"]}]
    )
    done = finished(api, op)

    assert op["type"] == "START_CLUSTER_HEALTH_CHECK"
    assert done["status"] == "SUCCEEDED", done
    operation_id = done["result"]["hyperPodOperationId"]
    hyperpod = api.get_hyperpod_operation(TAG, operation_id)
    assert (hyperpod["type"], hyperpod["status"]) == ("DeepHealthCheck", "Done")
    assert hyperpod["deepHealthCheckDetails"][0]["deepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    descriptions = [e["description"] for e in hyperpod["events"]]
    assert sum("Deep health checks passed" in d for d in descriptions) == 2, descriptions
    assert done["result"]["failed"] == []
    listed = api.list_hyperpod_operations(TAG, type="DeepHealthCheck")["operations"]
    assert [o["operationId"] for o in listed][:1] == [operation_id]


def test_when_a_node_fails_its_deep_health_check_then_the_operation_fails_with_hyperpods_message(
    cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    until(lambda: all_running(api, 2))
    bad = sorted(nodes_of(api))[-1]
    sandbox.aws.extension.faults.fail_deep_health_check(bad)

    done = finished(
        api,
        api.start_cluster_health_check(TAG, [{"instanceGroupName": "accel", "deepHealthChecks": ["InstanceStress"]}]),
    )

    assert done["status"] == "FAILED", done
    assert done["error"]["code"] == "DeepHealthCheckFailed"
    assert (
        done["error"]["message"] == f"instance {bad}: InstanceStress: GPU stress test failed (DCGM diagnostic level 4)"
    )
    assert [(f["nodeId"], f["code"]) for f in done["result"]["failed"]] == [(bad, "DeepHealthCheckFailed")]
    assert api.get_cluster(TAG)["status"] == "READY"  # a day-2 operation leaves the cluster usable
    # HyperPod replaces the failed node: a new instance id takes its place.
    until(lambda: bad not in nodes_of(api) and all_running(api, 2))


def test_when_updating_the_software_then_the_operation_succeeds_once_describe_cluster_reports_the_new_ami(
    cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    until(lambda: all_running(api, 2))
    with pytest.raises(ApiError) as unknown:
        api.update_cluster_software(TAG, {"instanceGroupNames": ["gpu"]})
    assert unknown.value.status == 422 and unknown.value.details[0]["field"] == "instanceGroupNames[0]"

    op = api.update_cluster_software(TAG, {"imageId": "ami-0123456789abcdef0"})
    updating = until(
        lambda: (
            (found := sagemaker(sandbox).describe_cluster(ClusterName="hp-cluster-nodes"))["ClusterStatus"]
            == "SystemUpdating"
            and found
        )
    )
    done = finished(api, op)

    assert op["type"] == "UPDATE_CLUSTER_SOFTWARE"
    assert updating["InstanceGroups"][0]["SoftwareUpdateStatus"] == "InProgress"
    assert done["status"] == "SUCCEEDED", done
    described = sagemaker(sandbox).describe_cluster(ClusterName="hp-cluster-nodes")
    assert described["ClusterStatus"] == "InService"
    (group,) = described["InstanceGroups"]
    assert (group["Status"], group["SoftwareUpdateStatus"]) == ("InService", "Succeeded")
    assert group["CurrentImageId"] == group["DesiredImageId"] == "ami-0123456789abcdef0"


def test_when_deleting_a_node_then_the_operation_succeeds_with_it_gone_and_the_group_target_lowered(
    cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    until(lambda: all_running(api, 2))
    node_id = sorted(nodes_of(api))[-1]

    done = finished(api, api.delete_cluster_nodes(TAG, [node_id]))

    assert done["type"] == "DELETE_CLUSTER_NODES" and done["status"] == "SUCCEEDED", done
    assert done["result"]["successful"] == [node_id]
    assert node_id not in nodes_of(api)
    group = sagemaker(sandbox).describe_cluster(ClusterName="hp-cluster-nodes")["InstanceGroups"][0]
    assert group["TargetCount"] == 1
    time.sleep(2)  # a few simulated minutes: HyperPod launches no replacement
    assert len(nodes_of(api)) == 1
