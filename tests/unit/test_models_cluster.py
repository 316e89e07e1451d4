"""CreateClusterRequest: what ``POST /clusters`` accepts and what it refuses, and how the refusal reads."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from instantstart.models.cluster import MAX_INSTANCE_COUNT, CreateClusterRequest

pytestmark = pytest.mark.usefixtures("no_network")

ISSUE_BODY: dict[str, Any] = {
    "clusterTag": "hypd-0304b",
    "availabilityZone": "us-west-2c",
    "instanceGroups": [
        {
            "instanceGroupName": "accel",
            "instanceType": "ml.g6.4xlarge",
            "instanceCount": 1,
            "capacityType": "OnDemand",
        }
    ],
}


def body(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(ISSUE_BODY)
    out.update(changes)
    return out


def group(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(ISSUE_BODY["instanceGroups"][0])
    out.update(changes)
    return out


def errors_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as info:
        CreateClusterRequest.model_validate(data)
    return list(info.value.errors())


def test_given_the_issue_body_when_validating_then_it_is_accepted_with_its_values() -> None:
    request = CreateClusterRequest.model_validate(ISSUE_BODY)

    assert request.cluster_tag == "hypd-0304b"
    assert request.availability_zone == "us-west-2c"
    assert [(g.instance_group_name, g.instance_type, g.instance_count) for g in request.instance_groups] == [
        ("accel", "ml.g6.4xlarge", 1)
    ]
    assert request.to_api()["instanceGroups"][0]["capacityType"] == "OnDemand"


def test_given_only_the_required_group_fields_when_validating_then_defaults_are_accel_and_on_demand() -> None:
    request = CreateClusterRequest.model_validate(
        body(instanceGroups=[{"instanceType": "ml.g6.4xlarge", "instanceCount": 2}])
    )

    assert request.instance_groups[0].instance_group_name == "accel"
    assert request.instance_groups[0].capacity_type.value == "OnDemand"
    assert request.kubernetes_version is None


@pytest.mark.parametrize("tag", ["abc", "a" * 24, "hypd-0304b", "x1-2-3"])
def test_given_a_tag_of_3_to_24_lowercase_characters_when_validating_then_it_is_accepted(tag: str) -> None:
    assert CreateClusterRequest.model_validate(body(clusterTag=tag)).cluster_tag == tag


@pytest.mark.parametrize(
    "tag",
    [
        pytest.param("Demo", id="uppercase"),
        pytest.param("1demo", id="leading-digit"),
        pytest.param("demo-", id="trailing-hyphen"),
        pytest.param("ab", id="2-chars"),
        pytest.param("a" * 25, id="25-chars"),
        pytest.param("de_mo", id="underscore"),
    ],
)
def test_given_a_tag_outside_the_pattern_when_validating_then_cluster_tag_is_rejected(tag: str) -> None:
    errors = errors_of(body(clusterTag=tag))

    assert [e["loc"] for e in errors] == [("clusterTag",)]


@pytest.mark.parametrize("count", [-1, MAX_INSTANCE_COUNT + 1])
def test_given_an_instance_count_outside_0_to_6758_when_validating_then_it_is_rejected(count: int) -> None:
    errors = errors_of(body(instanceGroups=[group(instanceCount=count)]))

    assert [e["loc"] for e in errors] == [("instanceGroups", 0, "instanceCount")]
    assert str(MAX_INSTANCE_COUNT if count > 0 else 0) in errors[0]["msg"]


def test_given_a_group_of_0_instances_when_validating_then_it_is_accepted_with_a_minimum_of_0() -> None:
    request = CreateClusterRequest.model_validate(
        body(instanceGroups=[group(), group(instanceGroupName="karpenter", instanceCount=0, minInstanceCount=0)])
    )

    assert [g.instance_count for g in request.instance_groups] == [1, 0]
    assert errors_of(body(instanceGroups=[group(instanceCount=0, minInstanceCount=1)]))[0]["loc"] == (
        "instanceGroups",
        0,
        "minInstanceCount",
    )


def test_given_the_hyperpod_maximum_of_6758_instances_when_validating_then_it_is_accepted() -> None:
    request = CreateClusterRequest.model_validate(body(instanceGroups=[group(instanceCount=6758)]))

    assert request.instance_groups[0].instance_count == 6758


@pytest.mark.parametrize("instance_type", ["ml.g6.3xlarge", "ml.t9.huge", "g6.4xlarge", "ml.G6.4XLARGE"])
def test_given_an_instance_type_hyperpod_does_not_offer_when_validating_then_it_is_rejected(
    instance_type: str,
) -> None:
    errors = errors_of(body(instanceGroups=[group(instanceType=instance_type)]))

    assert [e["loc"] for e in errors] == [("instanceGroups", 0, "instanceType")]


def test_given_an_unknown_ml_instance_type_when_validating_then_the_message_names_it_and_examples() -> None:
    [error] = errors_of(body(instanceGroups=[group(instanceType="ml.g6.3xlarge")]))

    assert "'ml.g6.3xlarge' is not a HyperPod ClusterInstanceType" in error["msg"]
    assert "ml.g6.4xlarge" in error["msg"]


PLAN_ARN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-active"


@pytest.mark.parametrize("capacity", ["OnDemand", "Spot"])
def test_given_on_demand_or_spot_capacity_when_validating_then_it_is_accepted(capacity: str) -> None:
    request = CreateClusterRequest.model_validate(body(instanceGroups=[group(capacityType=capacity)]))

    assert request.instance_groups[0].capacity_type.value == capacity


def test_given_a_training_plan_group_with_its_plan_when_validating_then_it_is_accepted() -> None:
    request = CreateClusterRequest.model_validate(
        body(instanceGroups=[group(capacityType="TrainingPlan", trainingPlanArn=PLAN_ARN)])
    )

    assert request.instance_groups[0].training_plan_arn == PLAN_ARN


def test_given_a_training_plan_group_without_a_plan_when_validating_then_training_plan_arn_is_required() -> None:
    [error] = errors_of(body(instanceGroups=[group(capacityType="TrainingPlan")]))

    assert error["loc"][:2] == ("instanceGroups", 0) and to_camel(str(error["loc"][2])) == "trainingPlanArn"
    assert "required when capacityType is TrainingPlan" in error["msg"]


def test_given_a_plan_on_a_spot_group_when_validating_then_training_plan_arn_is_refused() -> None:
    [error] = errors_of(body(instanceGroups=[group(capacityType="Spot", trainingPlanArn=PLAN_ARN)]))

    assert error["loc"] == ("instanceGroups", 0, "trainingPlanArn")
    assert "allowed only when capacityType is TrainingPlan; got capacityType Spot" in error["msg"]


def test_given_both_instance_type_and_instance_types_when_validating_then_they_are_mutually_exclusive() -> None:
    [error] = errors_of(body(instanceGroups=[group(instanceTypes=["ml.g5.8xlarge"])]))

    assert error["loc"] == ("instanceGroups", 0, "instanceTypes")
    assert "mutually exclusive" in error["msg"]


def test_given_neither_instance_type_nor_instance_types_when_validating_then_the_message_names_both() -> None:
    [error] = errors_of(body(instanceGroups=[{"instanceCount": 1}]))

    assert error["loc"][:2] == ("instanceGroups", 0) and to_camel(str(error["loc"][2])) == "instanceTypes"
    assert "give instanceType (one type) or instanceTypes" in error["msg"]


def test_given_a_flexible_group_with_an_unknown_or_repeated_type_when_validating_then_it_is_refused() -> None:
    flexible = {"instanceTypes": ["ml.g6.4xlarge", "ml.g6.4xlarge"], "instanceCount": 1}
    [repeated] = errors_of(body(instanceGroups=[flexible]))
    [unknown] = errors_of(body(instanceGroups=[{**flexible, "instanceTypes": ["ml.g9.huge"]}]))

    assert "repeated: ml.g6.4xlarge" in repeated["msg"]
    assert "'ml.g9.huge' is not a HyperPod ClusterInstanceType" in unknown["msg"]


def test_given_min_instance_count_above_instance_count_when_validating_then_the_message_gives_both() -> None:
    [error] = errors_of(body(instanceGroups=[group(instanceCount=2, minInstanceCount=3)]))

    assert error["loc"] == ("instanceGroups", 0, "minInstanceCount")
    assert "must be at most instanceCount (2); got 3" in error["msg"]


def test_given_repeated_deep_health_checks_when_validating_then_they_must_be_distinct() -> None:
    [error] = errors_of(body(instanceGroups=[group(onStartDeepHealthChecks=["InstanceStress", "InstanceStress"])]))

    assert error["loc"] == ("instanceGroups", 0, "onStartDeepHealthChecks")


def test_given_a_group_name_of_64_characters_when_validating_then_it_is_refused_as_hyperpod_does() -> None:
    [error] = errors_of(body(instanceGroups=[group(instanceGroupName="a" * 64)]))

    assert error["loc"] == ("instanceGroups", 0, "instanceGroupName")
    assert error["type"] == "string_too_long"


def test_given_two_groups_with_the_same_name_when_validating_then_the_request_is_rejected() -> None:
    errors = errors_of(body(instanceGroups=[group(), group(instanceType="ml.g5.8xlarge")]))

    assert len(errors) == 1
    assert "instanceGroupName values must be unique" in errors[0]["msg"]


def test_given_two_groups_with_distinct_names_when_validating_then_both_are_kept() -> None:
    request = CreateClusterRequest.model_validate(
        body(instanceGroups=[group(), group(instanceGroupName="worker", instanceType="ml.g5.8xlarge")])
    )

    assert [g.instance_group_name for g in request.instance_groups] == ["accel", "worker"]


@pytest.mark.parametrize(
    ("data", "loc"),
    [
        pytest.param(body(nodeCount=3), ("nodeCount",), id="top-level"),
        pytest.param(body(instanceGroups=[group(spotPrice="1.0")]), ("instanceGroups", 0, "spotPrice"), id="group"),
        pytest.param(body(cluster_tag="demo"), ("cluster_tag",), id="snake-case-duplicate"),
    ],
)
def test_given_an_unknown_field_when_validating_then_it_is_rejected_by_name(
    data: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    errors = errors_of(data)

    assert loc in [e["loc"] for e in errors]
    assert any(e["type"] == "extra_forbidden" for e in errors)


@pytest.mark.parametrize("version", ["1.27", "1.34", "2.0", "1.32.1"])
def test_given_a_kubernetes_version_hyperpod_does_not_support_when_validating_then_it_is_rejected(
    version: str,
) -> None:
    errors = errors_of(body(kubernetesVersion=version))

    assert [e["loc"] for e in errors] == [("kubernetesVersion",)]


def test_given_no_instance_groups_when_validating_then_the_request_is_rejected() -> None:
    errors = errors_of(body(instanceGroups=[]))

    assert [e["loc"] for e in errors] == [("instanceGroups",)]
