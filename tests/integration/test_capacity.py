"""Capacity at create time through the HTTP API: rich instance groups, training plans and the preflight."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError
from tests.integration.conftest import cancel_if_running, terminal

DAY = 86400.0


@pytest.fixture
def extension(sandbox: Any) -> Iterator[Any]:
    """The sandbox's AWS extension; quotas, offerings and plans are restored afterwards."""
    ext = sandbox.aws.extension
    yield ext
    ext.service_quotas.reset()
    ext.faults.restore_instance_type_offering()
    ext.training_plans.reset()


def _sagemaker(sandbox: Any) -> Any:
    return boto3.client("sagemaker", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)


def _cancel_and_delete(api: Any, tag: str, operation_id: str, wait_for: Any) -> None:
    cancel_if_running(api, operation_id)
    wait_for(api, tag, lambda c: c["status"] in ("READY", "FAILED", "DEGRADED"))
    api.delete_cluster(tag)


GROUPS = [
    {"instanceGroupName": "spot", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "Spot"},
    {
        "instanceGroupName": "checked",
        "instanceType": "ml.g5.8xlarge",
        "instanceCount": 1,
        "minInstanceCount": 1,
        "threadsPerCore": 1,
        "instanceStorageConfigs": [{"ebsVolumeConfig": {"volumeSizeInGB": 200}}],
        "onStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
        "efaOnly": True,
        "labels": {"team": "research"},
        "taints": [{"key": "dedicated", "value": "train", "effect": "NoSchedule"}],
    },
    {"instanceGroupName": "flex", "instanceTypes": ["ml.g6.4xlarge", "ml.g5.8xlarge"], "instanceCount": 1},
]


def test_given_three_rich_groups_when_creating_then_ready_and_hyperpod_has_every_field(
    sandbox: Any, api: Any, wait_for: Any
) -> None:
    api.create_cluster("capgroups", "us-west-2c", GROUPS)

    cluster = wait_for(api, "capgroups", terminal, timeout=600)

    assert cluster["status"] == "READY", [(s["name"], s["status"], s.get("error")) for s in cluster["stages"]]
    shown = {g["instanceGroupName"]: g for g in cluster["hyperPod"]["instanceGroups"]}
    assert shown["spot"]["capacityType"] == "Spot"
    assert shown["checked"]["efaOnly"] is True and shown["checked"]["labels"] == {"team": "research"}
    assert shown["flex"]["instanceTypes"] == ["ml.g6.4xlarge", "ml.g5.8xlarge"]
    found = _sagemaker(sandbox).describe_cluster(ClusterName="hp-cluster-capgroups")
    groups = {g["InstanceGroupName"]: g for g in found["InstanceGroups"]}
    assert groups["spot"]["CapacityRequirements"] == {"Spot": {}}
    checked = groups["checked"]
    assert checked["MinCount"] == 1 and checked["ThreadsPerCore"] == 1
    assert checked["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 200}}]
    assert checked["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert checked["NetworkInterface"] == {"InterfaceType": "efa-only"}
    assert checked["KubernetesConfig"]["DesiredLabels"] == {"team": "research"}
    assert checked["KubernetesConfig"]["DesiredTaints"] == [
        {"Key": "dedicated", "Value": "train", "Effect": "NoSchedule"}
    ]
    assert groups["flex"]["InstanceRequirements"]["DesiredInstanceTypes"] == ["ml.g6.4xlarge", "ml.g5.8xlarge"]

    # the rich group scaled from 1 to 3 keeps every field it was created with; the other groups are untouched
    op = api.update_instance_group("capgroups", "checked", {"instanceCount": 3})
    deadline = time.monotonic() + 300
    while (done := api.get_operation(op["operationId"]))["status"] in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, done
        time.sleep(0.5)
    assert done["status"] == "SUCCEEDED", done
    after = {
        g["InstanceGroupName"]: g
        for g in _sagemaker(sandbox).describe_cluster(ClusterName="hp-cluster-capgroups")["InstanceGroups"]
    }
    assert (after["checked"]["TargetCount"], after["checked"]["CurrentCount"]) == (3, 3)
    counts = ("TargetCount", "CurrentCount", "Status", "SoftwareUpdateStatus", "ActiveSoftwareUpdateConfig")
    for name, group in groups.items():
        for key, value in group.items():
            if key not in counts:
                assert after[name].get(key) == value, (name, key)
        if name != "checked":
            assert after[name]["TargetCount"] == group["TargetCount"], name
    api.delete_cluster("capgroups")


def test_given_a_plan_reserved_in_another_zone_when_creating_then_the_cluster_moves_to_the_plan_zone(
    api: Any, extension: Any, wait_for: Any
) -> None:
    now = extension.training_plans.hp.clock.now()
    arn = extension.training_plans.seed_plan("g6-plan", "ml.g6.4xlarge", 2, "us-west-2a", now - 3600, now + 30 * DAY)
    group = {
        "instanceType": "ml.g6.4xlarge",
        "instanceCount": 1,
        "capacityType": "TrainingPlan",
        "trainingPlanArn": arn,
    }

    op = api.create_cluster("capplan", "us-west-2c", [group])

    assert op["availabilityZoneChange"]["requested"] == "us-west-2c"
    assert op["availabilityZoneChange"]["availabilityZone"] == "us-west-2a"
    assert "g6-plan" in op["availabilityZoneChange"]["reason"]
    cluster = api.get_cluster("capplan")
    assert cluster["availabilityZone"] == "us-west-2a"
    assert cluster["hyperPod"]["instanceGroups"][0]["trainingPlanArn"] == arn
    _cancel_and_delete(api, "capplan", op["operationId"], wait_for)


def test_given_a_plan_and_a_pinned_subnet_in_another_zone_when_creating_then_409_names_both_zones(
    sandbox: Any, api: Any, extension: Any
) -> None:
    ec2 = boto3.client("ec2", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    vpc = ec2.create_vpc(CidrBlock="10.250.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.250.1.0/24", AvailabilityZone="us-west-2c")["Subnet"]
    now = extension.training_plans.hp.clock.now()
    arn = extension.training_plans.seed_plan("g6-pin", "ml.g6.4xlarge", 2, "us-west-2a", now - 3600, now + 30 * DAY)
    group = {
        "instanceType": "ml.g6.4xlarge",
        "instanceCount": 1,
        "capacityType": "TrainingPlan",
        "trainingPlanArn": arn,
        "subnetId": subnet["SubnetId"],
    }
    try:
        with pytest.raises(ApiError) as info:
            api.create_cluster("cappin", "us-west-2c", [group])
    finally:
        ec2.delete_subnet(SubnetId=subnet["SubnetId"])
        ec2.delete_vpc(VpcId=vpc)

    assert info.value.status == 409
    assert "us-west-2c" in info.value.message and "us-west-2a" in info.value.message
    with pytest.raises(ApiError):
        api.get_cluster("cappin")  # nothing was written


def test_given_a_lowered_quota_when_creating_then_422_with_the_numbers(api: Any, extension: Any) -> None:
    extension.service_quotas.set_quota("ml.g5.8xlarge", 1)
    group = {"instanceGroupName": "accel", "instanceType": "ml.g5.8xlarge", "instanceCount": 3}

    with pytest.raises(ApiError) as info:
        api.create_cluster("capquota", "us-west-2c", [group])

    assert info.value.status == 422
    [detail] = info.value.details
    assert detail["field"] == "instanceGroups[0].instanceCount"
    assert detail["asked"] == 3 and detail["quota"] == 1 and detail["available"] <= 1
    assert "ml.g5.8xlarge for cluster usage" in detail["message"]


def test_given_an_offering_removed_from_the_zone_when_creating_then_422_naming_the_group_field(
    api: Any, extension: Any
) -> None:
    extension.faults.remove_instance_type_offering("ml.g6.4xlarge", "us-west-2c")
    group = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1}

    with pytest.raises(ApiError) as info:
        api.create_cluster("capoffer", "us-west-2c", [group])

    assert info.value.status == 422
    [detail] = info.value.details
    assert detail["field"] == "instanceGroups[0].instanceType"
    assert "ml.g6.4xlarge is not offered in us-west-2c" in detail["message"]
    assert "us-west-2c" not in detail["allowedValues"]


def test_the_training_plan_catalog_lists_plans_and_offerings(api: Any, extension: Any) -> None:
    plans = {p["trainingPlanName"]: p for p in api.list_training_plans()}
    offerings = api.search_training_plan_offerings(instance_type="ml.p5.48xlarge", instance_count=2)

    assert plans["p5-active"]["status"] == "Active" and plans["p5-active"]["availabilityZone"] == "us-west-2a"
    assert plans["p4d-scheduled"]["status"] == "Scheduled"
    assert offerings and {o["instanceCount"] for o in offerings} == {2}
    assert {o["availabilityZone"] for o in offerings} == {"us-west-2a", "us-west-2b"}
