"""The HyperPod CreateCluster request the hyperpod stage sends, checked against the botocore SageMaker model."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import botocore.session
import pytest
from botocore.model import Shape
from botocore.validate import ParamValidator

from instantstart.clusters.stages.hyperpod import hyperpod_create_request, instance_group_specs
from instantstart.models.cluster import InstanceGroupRequest
from instantstart.naming import MANAGED_KEY, TAG_KEY

pytestmark = pytest.mark.usefixtures("no_network")

ROLE = "arn:aws:iam::123456789012:role/instantstart-HyperPodExecutionRole-1A2B3C"
LIFECYCLE = "s3://sagemaker-instantstart-123456789012-us-west-2/clusters/demo/gen-1/lifecycle/"
SG = "sg-0123456789abcdef0"
SUBNET = "subnet-0fedcba9876543210"
EKS_ARN = "arn:aws:eks:us-west-2:123456789012:cluster/eks-cluster-demo"
GROUPS = [
    InstanceGroupRequest.model_validate(g)
    for g in (
        {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"},
        {"instanceGroupName": "worker-2", "instanceType": "ml.p5.48xlarge", "instanceCount": 16},
    )
]


def specs(groups: list[InstanceGroupRequest] = GROUPS) -> list[dict[str, Any]]:
    return instance_group_specs(
        groups, execution_role=ROLE, lifecycle_uri=LIFECYCLE, security_group_id=SG, subnet_id=SUBNET
    )


def request(tag: str = "demo", groups: list[InstanceGroupRequest] = GROUPS) -> dict[str, Any]:
    return hyperpod_create_request(
        tag,
        groups,
        execution_role=ROLE,
        lifecycle_uri=LIFECYCLE,
        security_group_id=SG,
        subnet_id=SUBNET,
        eks_cluster_arn=EKS_ARN,
    )


@lru_cache(maxsize=1)
def create_cluster_input() -> Shape:
    model = botocore.session.get_session().get_service_model("sagemaker")
    return model.operation_model("CreateCluster").input_shape


def constraint_errors(value: Any, shape: Shape, path: str = "") -> list[str]:
    """What botocore's ParamValidator leaves out: patterns, maximum lengths/values and enums of the model."""
    errors: list[str] = []
    meta = shape.metadata
    if shape.type_name == "structure":
        for name, member in shape.members.items():  # type: ignore[attr-defined]
            if name in value:
                errors += constraint_errors(value[name], member, f"{path}.{name}" if path else name)
    elif shape.type_name == "list":
        if "max" in meta and len(value) > meta["max"]:
            errors.append(f"{path}: more than {meta['max']} items")
        for i, item in enumerate(value):
            errors += constraint_errors(item, shape.member, f"{path}[{i}]")  # type: ignore[attr-defined]
    elif shape.type_name == "map":
        for k, v in value.items():
            errors += constraint_errors(v, shape.value, f"{path}.{k}")  # type: ignore[attr-defined]
    elif shape.type_name == "string":
        if "max" in meta and len(value) > meta["max"]:
            errors.append(f"{path}: longer than {meta['max']}")
        if shape.enum and value not in shape.enum:  # type: ignore[attr-defined]
            errors.append(f"{path}: {value!r} not one of {shape.enum}")  # type: ignore[attr-defined]
        pattern = meta.get("pattern")
        if pattern:
            try:
                compiled = re.compile(pattern)
            except re.error:
                compiled = None  # a Java-only construct: ParamValidator's checks still apply
            if compiled and not compiled.fullmatch(value):
                errors.append(f"{path}: {value!r} does not match {pattern}")
    elif shape.type_name in ("integer", "long") and "max" in meta and value > meta["max"]:
        errors.append(f"{path}: above {meta['max']}")
    return errors


def test_given_api_groups_when_building_specs_then_each_carries_role_lifecycle_vpc_override_and_on_demand() -> None:
    built = specs()

    assert [s["InstanceGroupName"] for s in built] == ["accel", "worker-2"]
    assert [(s["InstanceType"], s["InstanceCount"]) for s in built] == [("ml.g6.4xlarge", 1), ("ml.p5.48xlarge", 16)]
    for spec in built:
        assert spec["ExecutionRole"] == ROLE
        assert spec["LifeCycleConfig"] == {"SourceS3Uri": LIFECYCLE, "OnCreate": "on_create.sh"}
        assert spec["OverrideVpcConfig"] == {"SecurityGroupIds": [SG], "Subnets": [SUBNET]}
        assert spec["CapacityRequirements"] == {"OnDemand": {}}


def test_given_a_cluster_record_read_back_from_dynamodb_when_building_specs_then_the_count_is_an_int() -> None:
    from instantstart.models.records import ClusterRecord
    from instantstart.store.table import deserialize, serialize

    item = {
        "clusterTag": "demo",
        "generation": 1,
        "status": "CREATING",
        "availabilityZone": "us-west-2c",
        "region": "us-west-2",
        "createdAt": "2026-11-30T00:00:00Z",
        "updatedAt": "2026-11-30T00:00:00Z",
        "request": {
            "clusterTag": "demo",
            "availabilityZone": "us-west-2c",
            "instanceGroups": [{"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 3}],
        },
    }
    record = ClusterRecord.model_validate(deserialize(serialize(item)))  # DynamoDB numbers come back as Decimal

    [spec] = specs(record.request.instance_groups)

    assert spec["InstanceCount"] == 3 and type(spec["InstanceCount"]) is int


def test_given_a_tag_when_building_the_create_request_then_it_names_hp_cluster_and_the_eks_orchestrator() -> None:
    built = request("hypd-0304b")

    assert built["ClusterName"] == "hp-cluster-hypd-0304b"
    assert built["Orchestrator"] == {"Eks": {"ClusterArn": EKS_ARN}}
    assert built["VpcConfig"] == {"SecurityGroupIds": [SG], "Subnets": [SUBNET]}
    assert built["NodeRecovery"] == "Automatic"
    assert built["NodeProvisioningMode"] == "Continuous"
    tags = {t["Key"]: t["Value"] for t in built["Tags"]}
    assert tags == {TAG_KEY: "hypd-0304b", MANAGED_KEY: "true"}
    assert built["InstanceGroups"] == specs()


@pytest.mark.parametrize("tag", ["demo", "hypd-0304b", "a" * 24])
def test_given_the_create_request_when_validating_with_the_botocore_sagemaker_model_then_it_is_accepted(
    tag: str,
) -> None:
    shape = create_cluster_input()
    built = request(tag)

    report = ParamValidator().validate(built, shape)

    assert not report.has_errors(), report.generate_report()
    assert constraint_errors(built, shape) == []


def test_given_a_request_with_a_wrong_member_when_validating_then_the_model_check_catches_it() -> None:
    shape = create_cluster_input()
    built = request()
    built["InstanceGroups"][0]["CapacityRequirements"] = {"Reserved": {}}
    built["NodeRecovery"] = "Sometimes"
    built["ClusterName"] = "hp_cluster_demo"
    del built["InstanceGroups"][1]["ExecutionRole"]

    report = ParamValidator().validate(built, shape).generate_report()
    extra = constraint_errors(built, shape)

    assert "Reserved" in report
    assert "ExecutionRole" in report
    assert any(e.startswith("NodeRecovery:") for e in extra)
    assert any(e.startswith("ClusterName:") for e in extra)


PLAN_ARN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-active"
RICH_GROUPS = [
    InstanceGroupRequest.model_validate(g)
    for g in (
        {"instanceGroupName": "spot", "instanceType": "ml.g6.4xlarge", "instanceCount": 2, "capacityType": "Spot"},
        {
            "instanceGroupName": "checked",
            "instanceType": "ml.p5.48xlarge",
            "instanceCount": 2,
            "minInstanceCount": 1,
            "threadsPerCore": 1,
            "instanceStorageConfigs": [{"ebsVolumeConfig": {"volumeSizeInGB": 500}}],
            "onStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
            "efaOnly": True,
            "labels": {"team": "research"},
            "taints": [
                {"key": "dedicated", "value": "train", "effect": "NoSchedule"},
                {"key": "gpu", "effect": "NoExecute"},
            ],
            "subnetId": "subnet-0123456789abcdef0",
            "autoPatch": {"patchingStrategy": "DrainFirst", "drainTimeoutInSeconds": 600, "onDrainTimeout": "Force"},
        },
        {"instanceGroupName": "flex", "instanceTypes": ["ml.g6.4xlarge", "ml.g5.8xlarge"], "instanceCount": 1},
        {
            "instanceGroupName": "plan",
            "instanceType": "ml.p5.48xlarge",
            "instanceCount": 4,
            "capacityType": "TrainingPlan",
            "trainingPlanArn": PLAN_ARN,
        },
    )
]


def test_given_every_group_field_when_building_specs_then_each_maps_to_its_hyperpod_member() -> None:
    spot, checked, flex, plan = specs(RICH_GROUPS)

    assert spot["CapacityRequirements"] == {"Spot": {}} and "TrainingPlanArn" not in spot
    assert checked["MinInstanceCount"] == 1 and checked["ThreadsPerCore"] == 1
    assert checked["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
    assert checked["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert checked["NetworkInterface"] == {"InterfaceType": "efa-only"}
    assert checked["KubernetesConfig"] == {
        "Labels": {"team": "research"},
        "Taints": [
            {"Key": "dedicated", "Value": "train", "Effect": "NoSchedule"},
            {"Key": "gpu", "Effect": "NoExecute"},
        ],
    }
    assert checked["OverrideVpcConfig"]["Subnets"] == ["subnet-0123456789abcdef0"]
    assert spot["OverrideVpcConfig"]["Subnets"] == [SUBNET]
    assert checked["AutoPatchConfig"] == {
        "PatchingStrategy": "DrainFirst",
        "DrainPolicy": {"DrainTimeoutInSeconds": 600, "OnDrainTimeout": "Force"},
    }
    assert "InstanceType" not in flex
    assert flex["InstanceRequirements"] == {"InstanceTypes": ["ml.g6.4xlarge", "ml.g5.8xlarge"]}
    assert plan["TrainingPlanArn"] == PLAN_ARN and "CapacityRequirements" not in plan
    for optional in ("MinInstanceCount", "ThreadsPerCore", "NetworkInterface", "KubernetesConfig", "AutoPatchConfig"):
        assert optional not in spot


def test_given_every_group_field_when_validating_with_the_botocore_model_then_the_request_is_accepted() -> None:
    shape = create_cluster_input()
    built = request(groups=RICH_GROUPS)

    report = ParamValidator().validate(built, shape)

    assert not report.has_errors(), report.generate_report()
    assert constraint_errors(built, shape) == []
