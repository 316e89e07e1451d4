"""Managed Karpenter rules (``capacity.autoscaling``), its request model and the objects and role it creates."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from instantstart.capacity import autoscaling as rules
from instantstart.clusters import autoscaling_role
from instantstart.errors import Conflict, NotFound, ValidationFailed
from instantstart.kube import objects
from instantstart.models.autoscaling import UpdateAutoScalingRequest

ZONES = {"subnet-a": "us-west-2a", "subnet-a2": "us-west-2a", "subnet-b": "us-west-2b"}


def group(name: str, **extra: Any) -> dict[str, Any]:
    """A DescribeCluster group at 0 instances, On-Demand, in subnet-a."""
    return {
        "InstanceGroupName": name,
        "TargetCount": 0,
        "CurrentCount": 0,
        "InstanceType": "ml.g6.4xlarge",
        "OverrideVpcConfig": {"Subnets": ["subnet-a"], "SecurityGroupIds": ["sg-1"]},
        "CapacityRequirements": {"OnDemand": {}},
        **extra,
    }


def check(groups: list[dict[str, Any]], names: list[str], **kwargs: Any) -> list[Any]:
    return rules.check_node_class_groups(groups, names, cluster_subnets=["subnet-b"], zone_of=ZONES, **kwargs)


def test_given_groups_that_keep_every_rule_then_they_are_returned_in_the_order_asked() -> None:
    chosen = check([group("a"), group("b", OverrideVpcConfig={"Subnets": ["subnet-a2"]})], ["b", "a"])
    assert [g["InstanceGroupName"] for g in chosen] == ["b", "a"]


@pytest.mark.parametrize(("target", "current"), [(2, 2), (0, 1), (1, 0)])
def test_given_a_group_with_instances_then_409_names_the_group_and_counts(target: int, current: int) -> None:
    with pytest.raises(Conflict) as info:
        check([group("a"), group("b", TargetCount=target, CurrentCount=current)], ["a", "b"])
    assert info.value.code == "KarpenterGroupNotAtZero"
    assert info.value.details[0] == {
        "field": "instanceGroups",
        "instanceGroupName": "b",
        "rule": "KarpenterGroupNotAtZero",
        "targetCount": target,
        "currentCount": current,
    }


def test_given_a_group_karpenter_already_scales_then_its_nodes_do_not_break_the_rule() -> None:
    chosen = check([group("a", TargetCount=3, CurrentCount=3)], ["a"], already_managed=["a"])
    assert len(chosen) == 1


def test_given_a_group_with_deep_health_checks_then_409_names_the_checks() -> None:
    with pytest.raises(Conflict) as info:
        check([group("a", OnStartDeepHealthChecks=["InstanceStress"])], ["a"])
    assert info.value.code == "KarpenterGroupHasDeepHealthChecks"
    assert info.value.details[0]["onStartDeepHealthChecks"] == ["InstanceStress"]


@pytest.mark.parametrize(
    ("extra", "capacity"),
    [
        ({"CapacityRequirements": {"Spot": {}}}, "Spot"),
        ({"TrainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p"}, "TrainingPlan"),
    ],
)
def test_given_a_spot_or_plan_group_then_409_not_on_demand(extra: dict[str, Any], capacity: str) -> None:
    with pytest.raises(Conflict) as info:
        check([group("a", **extra)], ["a"])
    assert info.value.code == "KarpenterGroupNotOnDemand" and info.value.details[0]["capacityType"] == capacity


def test_given_groups_in_two_zones_then_409_names_the_second_group_and_both_zones() -> None:
    without_override = {k: v for k, v in group("b").items() if k != "OverrideVpcConfig"}  # the cluster's subnet-b
    with pytest.raises(Conflict) as info:
        check([group("a"), without_override], ["a", "b"])
    assert info.value.code == "KarpenterGroupsInSeveralZones"
    assert info.value.details[0]["instanceGroupName"] == "b"
    assert "us-west-2b" in info.value.message and "us-west-2a" in info.value.message


def test_given_one_group_over_subnets_of_two_zones_then_409() -> None:
    with pytest.raises(Conflict) as info:
        check([group("a", OverrideVpcConfig={"Subnets": ["subnet-a", "subnet-b"]})], ["a"])
    assert info.value.details[0]["zones"] == ["us-west-2a", "us-west-2b"]


def test_given_an_unknown_group_then_404_names_it_and_the_existing_ones() -> None:
    with pytest.raises(NotFound) as info:
        check([group("a")], ["a", "zz"])
    assert info.value.code == "InstanceGroupNotFound" and "'zz'" in info.value.message and "a" in info.value.message


def test_given_eleven_groups_then_422_too_many() -> None:
    names = [f"g{i}" for i in range(11)]
    with pytest.raises(ValidationFailed) as info:
        check([group(n) for n in names], names)
    assert info.value.code == "TooManyNodeClassGroups" and info.value.details[0]["limit"] == 10


def test_given_a_group_in_the_node_class_then_its_delete_is_refused_and_others_are_not() -> None:
    rules.check_not_in_node_class("b", ["a"], "demo")
    with pytest.raises(Conflict) as info:
        rules.check_not_in_node_class("a", ["a"], "demo")
    assert info.value.code == "InstanceGroupInNodeClass" and "PUT /clusters/demo/autoscaling" in info.value.message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"enabled": True}, "instance_groups"),
        ({"enabled": False, "instanceGroups": ["a"]}, "instanceGroups"),
        ({"enabled": False, "limits": {"cpu": "1"}}, "limits"),
        ({"enabled": True, "instanceGroups": ["a", "a"]}, "instanceGroups"),
        ({"enabled": True, "instanceGroups": ["a_b"]}, "instanceGroups"),
        ({"enabled": True, "instanceGroups": ["a"], "limits": {"cpu": "lots"}}, "limits"),
        ({"enabled": True, "instanceGroups": ["a"], "limits": {"Bad Name": "1"}}, "limits"),
        ({"enabled": True, "instanceGroups": ["a"], "consolidateAfter": "soon"}, "consolidateAfter"),
        ({"enabled": "yes"}, "enabled"),
    ],
)
def test_given_a_bad_request_then_the_error_names_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        UpdateAutoScalingRequest.model_validate(body)
    assert info.value.errors()[0]["loc"][0] == field


def test_given_numeric_limits_then_they_become_kubernetes_quantities() -> None:
    request = UpdateAutoScalingRequest.model_validate(
        {"enabled": True, "instanceGroups": ["a"], "limits": {"nvidia.com/gpu": 64, "memory": "1000Gi"}}
    )
    assert request.limits == {"nvidia.com/gpu": "64", "memory": "1000Gi"}


def test_the_node_pool_references_the_node_class_with_consolidation_and_limits() -> None:
    pool = objects.karpenter_node_pool(consolidate_after="5m", limits={"nvidia.com/gpu": "8"})
    node_class = objects.hyperpod_node_class(["a", "b"])

    assert (pool["apiVersion"], pool["kind"]) == ("karpenter.sh/v1", "NodePool")
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.sagemaker.amazonaws.com",
        "kind": "HyperpodNodeClass",
        "name": node_class["metadata"]["name"],
    }
    assert pool["spec"]["disruption"] == {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m"}
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": "8"}
    assert node_class["spec"] == {"instanceGroups": ["a", "b"]}
    assert node_class["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "instantstart"


def test_the_cluster_role_trusts_hyperpod_only_and_may_only_add_and_delete_nodes_of_its_cluster() -> None:
    trust = autoscaling_role.trust_policy("123456789012")["Statement"]
    policy = autoscaling_role.scaling_policy("demo", account_id="123456789012", region="us-west-2")["Statement"]

    assert [s["Principal"] for s in trust] == [{"Service": "hyperpod.sagemaker.amazonaws.com"}]
    assert trust[0]["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    (only,) = policy
    assert sorted(only["Action"]) == ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"]
    assert only["Resource"] == "arn:aws:sagemaker:us-west-2:123456789012:cluster/*"
    assert only["Condition"] == {"StringEquals": {"aws:ResourceTag/instantstart:cluster-tag": "demo"}}
    assert len(autoscaling_role.cluster_role_name("a" * 24)) <= 64
