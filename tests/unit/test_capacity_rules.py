"""Capacity rules of a create: training plans (fit and zone) and the preflight (zones, offerings, quotas)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from instantstart.capacity.preflight import check_offerings, check_quotas, check_zones
from instantstart.capacity.training_plans import check_training_plans
from instantstart.errors import Conflict, ValidationFailed
from instantstart.models.cluster import CreateClusterRequest

pytestmark = pytest.mark.usefixtures("no_network")

PLAN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-active"


def plan(status: str = "Active", zone: str = "us-west-2a", available: int = 4, itype: str = "ml.p5.48xlarge") -> Any:
    return {
        "TrainingPlanArn": PLAN,
        "TrainingPlanName": "p5-active",
        "Status": status,
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": available,
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [
            {"InstanceType": itype, "TotalInstanceCount": 4, "Status": status, "AvailabilityZone": zone}
        ],
    }


class FakeSageMaker:
    def __init__(self, found: dict[str, Any] | None, clusters: dict[str, dict[str, Any]] | None = None) -> None:
        self.found, self.clusters = found, clusters or {}

    def describe_training_plan(self, TrainingPlanName: str) -> Any:
        if self.found is None:
            raise ClientError({"Error": {"Code": "ResourceNotFound", "Message": "no"}}, "DescribeTrainingPlan")
        return self.found

    def list_clusters(self, **_: Any) -> Any:
        return {"ClusterSummaries": [{"ClusterName": n, "ClusterStatus": "InService"} for n in self.clusters]}

    def describe_cluster(self, ClusterName: str) -> Any:
        return self.clusters[ClusterName]


class FakeEc2:
    def __init__(self, subnet_zone: str = "us-west-2c", offered: dict[str, list[str]] | None = None) -> None:
        self.subnet_zone, self.offered = subnet_zone, offered or {}

    def describe_subnets(self, SubnetIds: list[str]) -> Any:
        return {"Subnets": [{"SubnetId": SubnetIds[0], "AvailabilityZone": self.subnet_zone, "VpcId": "vpc-1"}]}

    def get_paginator(self, _: str) -> Any:
        offered = self.offered

        class Pages:
            def paginate(self, **kwargs: Any) -> Any:
                [ec2_type] = kwargs["Filters"][0]["Values"]
                zones = offered.get(ec2_type, [])
                return [{"InstanceTypeOfferings": [{"InstanceType": ec2_type, "Location": z} for z in zones]}]

        return Pages()


class FakeQuotas:
    def __init__(self, values: dict[str, float]) -> None:
        self.values = values

    def list_service_quotas(self, **_: Any) -> Any:
        return {
            "Quotas": [
                {"QuotaName": f"{t} for cluster usage", "Value": v, "QuotaCode": "L-1"} for t, v in self.values.items()
            ]
        }


def request(zone: str = "us-west-2c", **group: Any) -> CreateClusterRequest:
    g = {"instanceType": "ml.p5.48xlarge", "instanceCount": 2, "capacityType": "TrainingPlan", "trainingPlanArn": PLAN}
    g.update(group)
    return CreateClusterRequest.model_validate({"clusterTag": "demo", "availabilityZone": zone, "instanceGroups": [g]})


def test_given_a_plan_in_another_zone_and_no_pinned_subnet_then_the_cluster_moves_to_the_plan_zone() -> None:
    placement = check_training_plans(FakeSageMaker(plan()), FakeEc2(), request())

    assert placement.availability_zone == "us-west-2a"
    assert placement.change is not None
    assert (placement.change.requested, placement.change.availability_zone) == ("us-west-2c", "us-west-2a")
    assert "p5-active" in placement.change.reason


def test_given_a_plan_in_the_requested_zone_then_nothing_moves() -> None:
    placement = check_training_plans(FakeSageMaker(plan(zone="us-west-2c")), FakeEc2(), request())

    assert (placement.availability_zone, placement.change) == ("us-west-2c", None)


def test_given_a_pinned_subnet_in_another_zone_than_the_plan_then_409_names_both_zones() -> None:
    with pytest.raises(Conflict) as info:
        check_training_plans(
            FakeSageMaker(plan()), FakeEc2(subnet_zone="us-west-2c"), request(subnetId="subnet-0123456789abcdef0")
        )

    assert "us-west-2c" in info.value.message and "us-west-2a" in info.value.message
    assert info.value.details[0]["field"] == "instanceGroups[0].subnetId"


@pytest.mark.parametrize("status", ["Expired", "Failed", "Pending"])
def test_given_a_plan_that_is_not_active_or_scheduled_then_422_names_its_status(status: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        check_training_plans(FakeSageMaker(plan(status=status)), FakeEc2(), request())

    assert f"is {status}; it must be Active or Scheduled" in info.value.message
    assert info.value.details[0]["field"] == "instanceGroups[0].trainingPlanArn"


def test_given_more_instances_than_the_plan_has_then_422_with_asked_and_available() -> None:
    with pytest.raises(ValidationFailed) as info:
        check_training_plans(FakeSageMaker(plan(available=1)), FakeEc2(), request())

    [detail] = info.value.details
    assert detail["field"] == "instanceGroups[0].instanceCount"
    assert (detail["asked"], detail["available"]) == (2, 1)


def test_given_a_plan_of_another_type_or_a_missing_plan_then_422_naming_the_field() -> None:
    with pytest.raises(ValidationFailed) as other:
        check_training_plans(FakeSageMaker(plan(itype="ml.p4d.24xlarge")), FakeEc2(), request())
    with pytest.raises(ValidationFailed) as missing:
        check_training_plans(FakeSageMaker(None), FakeEc2(), request())

    assert other.value.details[0]["allowedValues"] == ["ml.p4d.24xlarge"]
    assert "does not exist" in missing.value.message


def test_given_a_type_not_offered_in_the_zone_then_the_problem_lists_the_zones_offering_it() -> None:
    req = request(capacityType="OnDemand", trainingPlanArn=None, instanceType="ml.g6.4xlarge")

    [problem] = check_offerings(FakeEc2(offered={"g6.4xlarge": ["us-west-2a", "us-west-2b"]}), req, "us-west-2c")

    assert problem["field"] == "instanceGroups[0].instanceType"
    assert "ml.g6.4xlarge is not offered in us-west-2c" in problem["message"]
    assert problem["allowedValues"] == ["us-west-2a", "us-west-2b"]


def test_given_a_quota_with_too_little_room_then_the_problem_gives_asked_available_quota_and_in_use() -> None:
    req = request(capacityType="Spot", trainingPlanArn=None, instanceType="ml.g6.4xlarge", instanceCount=3)
    sm = FakeSageMaker(None, {"other": {"InstanceGroups": [{"InstanceType": "ml.g6.4xlarge", "TargetCount": 2}]}})

    [problem] = check_quotas(FakeQuotas({"ml.g6.4xlarge": 4}), sm, req)

    assert problem["field"] == "instanceGroups[0].instanceCount"
    assert (problem["asked"], problem["available"], problem["quota"], problem["inUse"]) == (3, 2, 4, 2)
    assert "'ml.g6.4xlarge for cluster usage'" in problem["message"]


def test_given_a_quota_with_room_then_no_problem() -> None:
    req = request(capacityType="Spot", trainingPlanArn=None, instanceType="ml.g6.4xlarge", instanceCount=3)

    assert check_quotas(FakeQuotas({"ml.g6.4xlarge": 3}), FakeSageMaker(None), req) == []


def test_given_a_region_with_one_zone_then_the_network_cannot_be_built() -> None:
    with pytest.raises(ValidationFailed) as info:
        check_zones("us-west-2a", ["us-west-2a"])

    assert info.value.details[0]["field"] == "availabilityZone"
    assert "needs two" in info.value.message


@pytest.mark.parametrize("value", ["0000-00-00T00:00:00Z", "2026-02-30T12:00:00Z", "2026-13-01T00:00:00Z"])
def test_a_start_after_matching_the_pattern_but_no_calendar_time_is_422_naming_it(value: str) -> None:
    from instantstart.capacity.training_plans import parse_start_after
    from instantstart.errors import ValidationFailed

    with pytest.raises(ValidationFailed) as refused:
        parse_start_after(value)

    assert refused.value.details[0]["field"] == "startAfter" and value in refused.value.message


def test_a_real_start_after_is_an_aware_utc_time() -> None:
    from datetime import UTC, datetime

    from instantstart.capacity.training_plans import parse_start_after

    assert parse_start_after("2026-11-29T17:04:05Z") == datetime(2026, 11, 29, 17, 4, 5, tzinfo=UTC)
