"""Capacity preflight of day-2 changes that add capacity: an added group and a scale-up (training plans, quotas)."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart.capacity.added import check_added_group, check_scale_up
from instantstart.errors import Conflict, ValidationFailed
from instantstart.models.cluster import InstanceGroupRequest
from tests.unit.test_capacity_rules import PLAN, FakeEc2, FakeQuotas, FakeSageMaker, plan

pytestmark = pytest.mark.usefixtures("no_network")


def group(**fields: Any) -> InstanceGroupRequest:
    g = {
        "instanceGroupName": "more",
        "instanceType": "ml.p5.48xlarge",
        "instanceCount": 2,
        "capacityType": "TrainingPlan",
        "trainingPlanArn": PLAN,
    }
    g.update(fields)
    return InstanceGroupRequest.model_validate(g)


def running(instance_type: str, count: int) -> dict[str, Any]:
    return {"InstanceGroups": [{"InstanceGroupName": "accel", "InstanceType": instance_type, "TargetCount": count}]}


def test_given_a_plan_with_too_few_instances_when_adding_a_group_then_422_names_the_requests_own_field() -> None:
    sm = FakeSageMaker(plan(zone="us-west-2c", available=1))
    ec2 = FakeEc2(offered={"p5.48xlarge": ["us-west-2c"]})

    with pytest.raises(ValidationFailed) as info:
        check_added_group(ec2, FakeQuotas({}), sm, cluster_tag="demo", zone="us-west-2c", group=group())

    [detail] = info.value.details
    assert detail["field"] == "instanceCount" and (detail["asked"], detail["available"]) == (2, 1)
    assert "instanceGroups[" not in info.value.message


def test_given_a_plan_reserved_in_another_zone_when_adding_a_group_then_409_names_both_zones() -> None:
    sm = FakeSageMaker(plan(zone="us-west-2a"))

    with pytest.raises(Conflict) as info:
        check_added_group(FakeEc2(), FakeQuotas({}), sm, cluster_tag="demo", zone="us-west-2c", group=group())

    assert info.value.code == "TrainingPlanZoneConflict" and info.value.details[0]["field"] == "trainingPlanArn"
    assert "us-west-2a" in info.value.message and "us-west-2c" in info.value.message


def test_given_quota_room_and_the_offering_when_adding_a_group_then_it_passes() -> None:
    sm = FakeSageMaker(None, clusters={"hp-a": running("ml.g6.4xlarge", 3)})
    ec2 = FakeEc2(offered={"g6.4xlarge": ["us-west-2c"]})
    on_demand = group(instanceType="ml.g6.4xlarge", capacityType="OnDemand", trainingPlanArn=None, instanceCount=2)

    check_added_group(ec2, FakeQuotas({"ml.g6.4xlarge": 5}), sm, cluster_tag="demo", zone="us-west-2c", group=on_demand)

    with pytest.raises(ValidationFailed) as info:
        check_added_group(
            ec2, FakeQuotas({"ml.g6.4xlarge": 4}), sm, cluster_tag="demo", zone="us-west-2c", group=on_demand
        )
    assert info.value.details[0] | {"message": ""} == {
        "field": "instanceCount",
        "message": "",
        "asked": 2,
        "available": 1,
        "quota": 4,
        "inUse": 3,
    }


def test_given_a_scale_up_then_only_the_increase_is_charged_to_the_quota_and_the_plan() -> None:
    described = {"InstanceGroupName": "accel", "InstanceType": "ml.p5.48xlarge", "TargetCount": 2}
    sm = FakeSageMaker(plan(available=1), clusters={"hp-a": running("ml.p5.48xlarge", 2)})

    check_scale_up(FakeQuotas({"ml.p5.48xlarge": 3}), sm, described=described, desired=3)  # +1: room for it
    check_scale_up(FakeQuotas({"ml.p5.48xlarge": 0}), sm, described=described, desired=1)  # a scale-down: no check
    with pytest.raises(ValidationFailed) as quota:
        check_scale_up(FakeQuotas({"ml.p5.48xlarge": 3}), sm, described=described, desired=4)
    with pytest.raises(ValidationFailed) as reserved:
        check_scale_up(FakeQuotas({}), sm, described={**described, "TrainingPlanArn": PLAN}, desired=4)

    assert (quota.value.details[0]["asked"], quota.value.details[0]["available"]) == (2, 1)
    assert reserved.value.details[0]["field"] == "instanceCount"
    assert (reserved.value.details[0]["asked"], reserved.value.details[0]["available"]) == (2, 1)
