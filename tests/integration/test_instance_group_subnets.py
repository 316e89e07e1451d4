"""Given two READY clusters in the sandbox, when users add, scale, cancel and delete instance groups through the
HTTP API, then each zone keeps one compute subnet, a dedicated subnet outlives its group and leaves with the
cluster, the cluster view shows the new shape, and a scale-up without capacity fails with HyperPod's words."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal
from tests.integration.conftest import finished as finished_within

A, B = "subnets-a", "subnets-b"
ZONE = "us-west-2c"
INSTANCE_TYPE = GROUP["instanceType"]


def settled(api: InstantStartClient, tag: str, predicate: Any, timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    found: dict[str, Any] = dict(api.get_cluster(tag))
    while not predicate(found) and time.monotonic() < deadline:
        time.sleep(0.5)
        found = dict(api.get_cluster(tag))
    return found


def finished(api: InstantStartClient, op: Any, timeout: float = 300) -> dict[str, Any]:
    return finished_within(api, op, timeout)


@pytest.fixture(scope="module")
def clusters(api: InstantStartClient) -> Iterator[dict[str, dict[str, Any]]]:
    """Clusters ``subnets-a`` and ``subnets-b`` (one ``accel`` group of 1 each), created at once, READY."""
    for tag in (A, B):
        api.create_cluster(tag, ZONE, [GROUP])
    found = {tag: settled(api, tag, terminal) for tag in (A, B)}
    for tag, cluster in found.items():
        assert cluster["status"] == "READY", (tag, cluster["stages"])
    yield found


@pytest.fixture
def ec2(sandbox: Sandbox) -> Any:
    return boto3.client("ec2", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)


def vpc_of(api: InstantStartClient, tag: str) -> str:
    network = next(s for s in api.get_cluster(tag)["stages"] if s["name"] == "network")
    return str(network["resources"]["vpcId"])


def subnets_of(ec2: Any, vpc_id: str, name: str) -> list[dict[str, Any]]:
    return ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "tag:Name", "Values": [name]}]
    )["Subnets"]


def group_subnet(api: InstantStartClient, tag: str, name: str) -> str:
    listing = api.list_instance_groups(tag)["instanceGroups"]
    [subnet] = next(g for g in listing if g["instanceGroupName"] == name)["subnetIds"]
    return str(subnet)


def test_when_two_clusters_add_a_group_at_once_then_each_zone_keeps_one_compute_subnet_and_the_view_shows_it(
    clusters: Any, api: InstantStartClient, ec2: Any
) -> None:
    workers = {"instanceGroupName": "workers", "instanceType": INSTANCE_TYPE, "instanceCount": 1}
    ops: dict[str, Any] = {}

    def add(tag: str) -> None:
        ops[tag] = api.add_instance_group(tag, workers)

    threads = [threading.Thread(target=add, args=(tag,)) for tag in (A, B)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = {tag: finished(api, op) for tag, op in ops.items()}

    for tag in (A, B):
        assert done[tag]["status"] == "SUCCEEDED", done[tag]
        [zone_subnet] = subnets_of(ec2, vpc_of(api, tag), f"hp-compute-{ZONE}")
        assert group_subnet(api, tag, "workers") == group_subnet(api, tag, "accel") == zone_subnet["SubnetId"]
        cluster = api.get_cluster(tag)
        assert cluster["status"] == "READY"
        requested = {g["instanceGroupName"]: g["instanceCount"] for g in cluster["hyperPod"]["instanceGroups"]}
        assert requested == {"accel": 1, "workers": 1}
        node_groups = sorted(n["instanceGroupName"] for n in cluster["nodes"])
        assert node_groups == ["accel", "workers"], cluster["nodes"]


def test_when_scaling_1_to_2_after_an_add_then_get_cluster_shows_both(clusters: Any, api: InstantStartClient) -> None:
    done = finished(api, api.update_instance_group(A, "accel", {"instanceCount": 2}))

    assert done["status"] == "SUCCEEDED", done
    cluster = api.get_cluster(A)
    groups = {g["instanceGroupName"]: g for g in cluster["hyperPod"]["instanceGroups"]}
    assert {name: g["instanceCount"] for name, g in groups.items()} == {"accel": 2, "workers": 1}
    assert (groups["accel"]["targetCount"], groups["accel"]["currentCount"]) == (2, 2)
    node_groups = sorted(n["instanceGroupName"] for n in cluster["nodes"])
    assert node_groups == ["accel", "accel", "workers"], cluster["nodes"]


def test_when_a_dedicated_group_is_deleted_and_added_again_then_it_gets_the_same_own_subnet(
    clusters: Any, api: InstantStartClient, ec2: Any
) -> None:
    dedicated: dict[str, Any] = {"instanceGroupName": "solo", "instanceType": INSTANCE_TYPE, "instanceCount": 1}
    dedicated["dedicatedSubnet"] = True

    first = finished(api, api.add_instance_group(A, dedicated))
    own = group_subnet(api, A, "solo")
    removed = finished(api, api.delete_instance_group(A, "solo"))
    still_there = [s["SubnetId"] for s in subnets_of(ec2, vpc_of(api, A), "hp-group-solo")]
    again = finished(api, api.add_instance_group(A, dedicated))

    assert (first["status"], removed["status"], again["status"]) == ("SUCCEEDED",) * 3, (first, removed, again)
    assert own != group_subnet(api, A, "accel"), "a dedicated group does not share the zone's subnet"
    assert still_there == [own], "the dedicated subnet outlives its group"
    assert group_subnet(api, A, "solo") == own, "a later group of the same name reuses it"
    [subnet] = ec2.describe_subnets(SubnetIds=[own])["Subnets"]
    tags = {t["Key"]: t["Value"] for t in subnet["Tags"]}
    assert tags["instantstart:instance-group"] == "solo" and subnet["AvailabilityZone"] == ZONE
    shown = {g["instanceGroupName"]: g for g in api.get_cluster(A)["hyperPod"]["instanceGroups"]}
    assert shown["solo"]["dedicatedSubnet"] is True


def test_when_dedicated_subnet_comes_with_subnet_id_then_422_names_both(clusters: Any, api: InstantStartClient) -> None:
    from instantstart_client.api import ApiError

    group = {
        "instanceGroupName": "both",
        "instanceType": INSTANCE_TYPE,
        "instanceCount": 1,
        "dedicatedSubnet": True,
        "subnetId": "subnet-0123456789abcdef0",
    }
    with pytest.raises(ApiError) as refused:
        api.add_instance_group(A, group)

    assert refused.value.status == 422
    assert "dedicatedSubnet" in refused.value.message and "subnetId" in refused.value.message


def test_given_no_capacity_when_scaling_up_then_the_operation_fails_with_hyperpods_error_and_the_cluster_stays(
    clusters: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    faults = sandbox.aws.extension.faults
    faults.fail_hyperpod_capacity(INSTANCE_TYPE)
    try:
        done = finished(api, api.update_instance_group(B, "accel", {"instanceCount": 2}), timeout=400)
    finally:
        faults.clear_hyperpod_capacity()

    assert done["status"] == "FAILED", done
    assert done["error"]["code"] == "InsufficientCapacity", done["error"]
    message = done["error"]["message"]
    errors = api.list_cluster_events(B, level="Error")["events"]
    assert any(message.startswith(e["description"]) for e in errors), (message, errors[:3])  # HyperPod's words
    assert f"sufficient {INSTANCE_TYPE} capacity" in message and ZONE in message, message
    assert "PollTimeout" not in done["error"]["code"]
    assert api.get_cluster(B)["status"] == "READY"


def test_when_a_running_scale_is_cancelled_then_cancelled_the_cluster_keeps_its_status_and_a_new_change_runs(
    clusters: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    faults = sandbox.aws.extension.faults
    faults.fail_hyperpod_capacity(INSTANCE_TYPE)  # the scale cannot finish by itself
    try:
        op = api.update_instance_group(B, "workers", {"instanceCount": 2})
        deadline = time.monotonic() + 60
        while api.get_operation(op["operationId"])["status"] != "RUNNING":
            assert time.monotonic() < deadline, "the scale did not start"
            time.sleep(0.2)
        cancelled = api.cancel_operation(op["operationId"])
    finally:
        faults.clear_hyperpod_capacity()

    assert cancelled["status"] == "CANCELLED" and cancelled["type"] == "SCALE_INSTANCE_GROUP"
    assert finished(api, op)["status"] == "CANCELLED"
    cluster = api.get_cluster(B)
    assert cluster["status"] == "READY" and cluster["currentOperationId"] in (None, op["operationId"])
    after = finished(api, api.update_instance_group(B, "workers", {"instanceCount": 1}))
    assert after["status"] == "SUCCEEDED", after


def test_when_the_cluster_is_deleted_then_its_dedicated_subnet_is_gone(
    clusters: Any, api: InstantStartClient, ec2: Any
) -> None:
    own = group_subnet(api, A, "solo")
    vpc_id = vpc_of(api, A)

    ops = [api.delete_cluster(tag) for tag in (A, B)]
    ended = [finished(api, op) for op in ops]

    assert [op["status"] for op in ended] == ["SUCCEEDED", "SUCCEEDED"], ended
    assert own not in {s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]}
    assert vpc_id not in {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]}
