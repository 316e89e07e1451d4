"""Capacity in the AWS sandbox: training plans, service quotas, instance type offerings, managed Karpenter.

Through boto3 (SageMaker, Service Quotas, EC2) and the official Kubernetes client, on the 600x sandbox of
the continuous suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

try:
    from tests.sandbox.conftest_aws import aws, client, clock, kube, lifecycle, network, role, unique, wait_for
    from tests.sandbox.hyperpod_helpers import TIMEOUT, Client, _all_events, _create, _group, _ready_nodes
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]
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
    from hyperpod_helpers import (  # type: ignore[no-redef]
        TIMEOUT,
        Client,
        _all_events,
        _create,
        _group,
        _ready_nodes,
    )

from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.kube import karpenter

kubernetes = pytest.importorskip("kubernetes")

__all__ = ["aws", "client", "clock", "kube", "lifecycle", "network", "role"]


@pytest.fixture(autouse=True)
def _fresh_capacity(slow_aws: AwsSandboxServer) -> Iterator[None]:
    yield
    slow_aws.extension.training_plans.reset()
    slow_aws.extension.service_quotas.reset()


def _plan_group(role: str, lifecycle: dict[str, str], plan_arn: str, count: int, subnet: str, sg: str) -> dict:
    return {
        **_group("reserved", count, role, lifecycle, "ml.p5.48xlarge"),
        "TrainingPlanArn": plan_arn,
        "OverrideVpcConfig": {"Subnets": [subnet], "SecurityGroupIds": [sg]},
    }


def test_given_seeded_plans_when_listed_and_described_then_status_and_reserved_capacity_zone_are_reported(
    sb: Client,
) -> None:
    sm = sb("sagemaker")
    plans = {p["TrainingPlanName"]: p for p in sm.list_training_plans()["TrainingPlanSummaries"]}
    assert {n: p["Status"] for n, p in plans.items()} == {
        "p5-active": "Active",
        "p4d-scheduled": "Scheduled",
        "p5-expired": "Expired",
    }
    active = sm.list_training_plans(Filters=[{"Name": "Status", "Value": "Active"}])["TrainingPlanSummaries"]
    assert [p["TrainingPlanName"] for p in active] == ["p5-active"]
    described = sm.describe_training_plan(TrainingPlanName="p5-active")
    capacity = described["ReservedCapacitySummaries"][0]
    assert (capacity["InstanceType"], capacity["TotalInstanceCount"], capacity["AvailabilityZone"]) == (
        "ml.p5.48xlarge",
        4,
        "us-west-2a",
    )
    assert described["TargetResources"] == ["hyperpod-cluster"]
    with pytest.raises(ClientError) as missing:
        sm.describe_training_plan(TrainingPlanName="nope")
    assert missing.value.response["Error"]["Code"] == "ResourceNotFound"


def test_given_an_offering_when_bought_then_the_plan_exists_and_the_offering_is_gone(sb: Client) -> None:
    sm = sb("sagemaker")
    offerings = sm.search_training_plan_offerings(
        InstanceType="ml.p5.48xlarge", InstanceCount=2, TargetResources=["hyperpod-cluster"]
    )["TrainingPlanOfferings"]
    assert {o["ReservedCapacityOfferings"][0]["AvailabilityZone"] for o in offerings} == {"us-west-2a", "us-west-2b"}
    assert all(o["ReservedCapacityOfferings"][0]["InstanceCount"] == 2 for o in offerings)
    chosen = offerings[0]
    name = unique("plan")
    arn = sm.create_training_plan(TrainingPlanName=name, TrainingPlanOfferingId=chosen["TrainingPlanOfferingId"])[
        "TrainingPlanArn"
    ]
    described = sm.describe_training_plan(TrainingPlanName=arn)
    assert described["Status"] == "Scheduled"
    assert (
        described["ReservedCapacitySummaries"][0]["AvailabilityZone"]
        == (chosen["ReservedCapacityOfferings"][0]["AvailabilityZone"])
    )
    again = sm.search_training_plan_offerings(InstanceType="ml.p5.48xlarge", InstanceCount=2)["TrainingPlanOfferings"]
    assert chosen["TrainingPlanOfferingId"] not in [o["TrainingPlanOfferingId"] for o in again]
    with pytest.raises(ClientError):
        sm.create_training_plan(
            TrainingPlanName=unique("plan"), TrainingPlanOfferingId=chosen["TrainingPlanOfferingId"]
        )


def test_given_a_training_plan_when_a_group_does_not_fit_it_then_hyperpod_refuses_and_a_fitting_group_launches(
    slow_aws: AwsSandboxServer,
    sb: Client,
    eks: dict[str, Any],
    core: Any,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = sb("sagemaker")
    plans = slow_aws.extension.training_plans
    now = slow_aws.clock.now()
    arn = plans.seed_plan("p5-test", "ml.p5.48xlarge", 2, "us-west-2a", now - 60, now + 86400)
    zone_a, zone_b = network["subnets"]

    wrong_zone = _plan_group(role, lifecycle, arn, 1, zone_b, network["sg"])
    too_many = _plan_group(role, lifecycle, arn, 3, zone_a, network["sg"])
    wrong_type = {**_plan_group(role, lifecycle, arn, 1, zone_a, network["sg"]), "InstanceType": "ml.p4d.24xlarge"}
    expired = _plan_group(
        role, lifecycle, plans.seed_plan("old", "ml.p5.48xlarge", 2, "us-west-2a", 0, 1), 1, zone_a, network["sg"]
    )
    for group, words in (
        (wrong_zone, "reserves capacity in us-west-2a"),
        (too_many, "2 of 2"),
        (wrong_type, "does not match the instance type ml.p5.48xlarge"),
        (expired, "Expired"),
    ):
        with pytest.raises(ClientError) as refused:
            _create(sb, eks, network, [group])
        assert refused.value.response["Error"]["Code"] == "ValidationException"
        assert words in refused.value.response["Error"]["Message"]

    name = _create(sb, eks, network, [_plan_group(role, lifecycle, arn, 2, zone_a, network["sg"])])
    wait_for(lambda: len(_ready_nodes(core, name)) == 2, timeout=TIMEOUT)
    assert sm.describe_training_plan(TrainingPlanName=arn)["InUseInstanceCount"] == 2
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert group["TrainingPlanArn"] == arn
    with pytest.raises(ClientError) as update:
        sm.update_cluster(
            ClusterName=name, InstanceGroups=[_plan_group(role, lifecycle, arn, 3, zone_a, network["sg"])]
        )
    assert "2 of 2" in update.value.response["Error"]["Message"]


def test_given_a_lowered_quota_when_a_group_scales_past_it_then_launches_fail_with_resource_limit_events(
    slow_aws: AwsSandboxServer,
    sb: Client,
    eks: dict[str, Any],
    core: Any,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    quotas = sb("service-quotas")
    listed = quotas.list_service_quotas(ServiceCode="sagemaker")["Quotas"]
    by_name = {q["QuotaName"]: q for q in listed}
    quota = by_name["ml.g6.4xlarge for cluster usage"]
    slow_aws.extension.service_quotas.set_quota("ml.g6.4xlarge", 1)
    got = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=quota["QuotaCode"])["Quota"]
    assert got["Value"] == 1.0
    default = quotas.get_aws_default_service_quota(ServiceCode="sagemaker", QuotaCode=quota["QuotaCode"])["Quota"]
    assert default["Value"] > 1.0

    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("gpu", 2, role, lifecycle)])

    def limit_errors() -> list[dict[str, Any]]:
        return [e for e in _all_events(sm, name, ResourceType="InstanceGroup") if e["EventLevel"] == "Error"]

    errors = wait_for(lambda: (found := limit_errors()) and found, timeout=TIMEOUT)
    detail = sm.describe_cluster_event(ClusterName=name, EventId=errors[0]["EventId"])["EventDetails"]
    message = detail["EventDetails"]["EventMetadata"]["InstanceGroupScaling"]["FailureMessage"]
    assert message.startswith(
        "ResourceLimitExceeded: The account-level service limit 'ml.g6.4xlarge for cluster usage' is 1"
    )
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert (group["CurrentCount"], group["TargetCount"]) == (1, 2)
    assert len(_ready_nodes(core, name)) == 1

    slow_aws.extension.service_quotas.set_quota("ml.g6.4xlarge", 2)
    wait_for(lambda: len(_ready_nodes(core, name)) == 2, timeout=TIMEOUT)


def test_given_a_removed_offering_when_offerings_are_described_then_the_zone_no_longer_lists_the_type(
    slow_aws: AwsSandboxServer, sb: Client
) -> None:
    ec2 = sb("ec2")

    def zones(instance_type: str) -> set[str]:
        found = ec2.describe_instance_type_offerings(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance_type]}]
        )["InstanceTypeOfferings"]
        return {o["Location"] for o in found}

    assert {"us-west-2a", "us-west-2c"} <= zones("g6.4xlarge")
    assert zones("ml.g6.4xlarge") == set(), "EC2 knows no ml. names"
    slow_aws.extension.faults.remove_instance_type_offering("ml.g6.4xlarge", "us-west-2c")
    assert "us-west-2c" not in zones("g6.4xlarge")
    assert "us-west-2a" in zones("g6.4xlarge")
    slow_aws.extension.faults.restore_instance_type_offering("g6.4xlarge")
    assert "us-west-2c" in zones("g6.4xlarge")


def test_given_no_cluster_role_when_karpenter_is_enabled_then_validation_exception(
    sb: Client, eks: dict[str, Any], network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("gpu", 0, role, lifecycle)])
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService", timeout=TIMEOUT)
    with pytest.raises(ClientError) as refused:
        sm.update_cluster(
            ClusterName=name,
            InstanceGroups=[_group("gpu", 0, role, lifecycle)],
            AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "ClusterRole" in refused.value.response["Error"]["Message"]
    assert "AutoScaling" not in sm.describe_cluster(ClusterName=name)


def test_given_karpenter_when_pods_are_pending_then_the_node_pool_group_scales_from_zero_and_back(
    sb: Client,
    eks: dict[str, Any],
    core: Any,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = sb("sagemaker")
    name = _create(sb, eks, network, [_group("auto", 0, role, lifecycle)])
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService", timeout=TIMEOUT)
    sm.update_cluster(
        ClusterName=name,
        InstanceGroups=[_group("auto", 0, role, lifecycle)],
        ClusterRole=role,
        AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
    )
    described = sm.describe_cluster(ClusterName=name)
    assert described["AutoScaling"]["Mode"] == "Enable"
    assert described["AutoScaling"]["Status"] == "InService"
    assert described["ClusterRole"] == role

    custom = kubernetes.client.CustomObjectsApi(core.api_client)
    node_class = unique("nc")
    custom.create_cluster_custom_object(
        "karpenter.sagemaker.amazonaws.com",
        "v1",
        "hyperpodnodeclasses",
        {
            "apiVersion": "karpenter.sagemaker.amazonaws.com/v1",
            "kind": "HyperpodNodeClass",
            "metadata": {"name": node_class},
            "spec": {"instanceGroups": ["auto"]},
        },
    )
    custom.create_cluster_custom_object(
        "karpenter.sh",
        "v1",
        "nodepools",
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": unique("pool")},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.sagemaker.amazonaws.com",
                            "kind": "HyperpodNodeClass",
                            "name": node_class,
                        }
                    }
                },
                "disruption": {"consolidateAfter": "30s"},
            },
        },
    )
    with pytest.raises(kubernetes.client.ApiException) as invalid:
        custom.create_cluster_custom_object(
            "karpenter.sagemaker.amazonaws.com",
            "v1",
            "hyperpodnodeclasses",
            {
                "apiVersion": "karpenter.sagemaker.amazonaws.com/v1",
                "kind": "HyperpodNodeClass",
                "metadata": {"name": unique("nc")},
                "spec": {"instanceGroups": [f"g{i}" for i in range(11)]},
            },
        )
    assert invalid.value.status == 422

    pod = unique("train")
    core.create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod},
            "spec": {
                "nodeSelector": {karpenter.GROUP_LABEL: "auto"},
                "containers": [{"name": "main", "image": "busybox"}],
            },
        },
    )
    wait_for(lambda: core.read_namespaced_pod(pod, "default").status.phase == "Running", timeout=TIMEOUT)
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert (group["CurrentCount"], group["TargetCount"]) == (1, 1)
    assert [n.metadata.labels[karpenter.GROUP_LABEL] for n in _ready_nodes(core, name)] == ["auto"]

    core.delete_namespaced_pod(pod, "default")
    wait_for(lambda: not _ready_nodes(core, name), timeout=TIMEOUT)
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert (group["CurrentCount"], group["TargetCount"]) == (0, 0)
    assert any("consolidation" in e["Description"] for e in _all_events(sm, name, ResourceType="Instance"))
