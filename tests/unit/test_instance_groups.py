"""The instance-group normaliser (DescribeCluster -> UpdateCluster specifications) and the mutability rules."""

from __future__ import annotations

import copy
import json
from typing import Any

import botocore.session
import pytest

from instantstart.capacity import groups as rules
from instantstart.errors import Conflict
from instantstart.models.instance_groups import UpdateInstanceGroupRequest

ROLE = "arn:aws:iam::123456789012:role/hp-exec"
SUBNET = "subnet-0123456789abcdef0"


def described_accel() -> dict[str, Any]:
    """A DescribeCluster group with deep health checks, an EFA-only interface and labels (and read-only state)."""
    return {
        "CurrentCount": 1,
        "TargetCount": 2,
        "MinCount": 1,
        "InstanceGroupName": "accel",
        "InstanceType": "ml.p5.48xlarge",
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-b/lifecycle/", "OnCreate": "on_create.sh"},
        "ExecutionRole": ROLE,
        "ThreadsPerCore": 2,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "OnStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
        "Status": "InService",
        "TrainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-1",
        "TrainingPlanStatus": "Active",
        "OverrideVpcConfig": {"SecurityGroupIds": ["sg-1"], "Subnets": [SUBNET]},
        "ScheduledUpdateConfig": {"ScheduleExpression": "cron(0 3 ? * SUN *)"},
        "CurrentImageId": "ami-old",
        "DesiredImageId": "ami-new",
        "ActiveOperations": {"Scaling": 1},
        "KubernetesConfig": {
            "CurrentLabels": {"team": "old"},
            "DesiredLabels": {"team": "research"},
            "CurrentTaints": [],
            "DesiredTaints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
        },
        "CapacityRequirements": {"OnDemand": {}},
        "NetworkInterface": {"InterfaceType": "efa-only"},
    }


def described_workers() -> dict[str, Any]:
    return {
        "CurrentCount": 3,
        "TargetCount": 3,
        "InstanceGroupName": "workers",
        "InstanceType": "ml.g6.4xlarge",
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-b/lifecycle/", "OnCreate": "on_create.sh"},
        "ExecutionRole": ROLE,
        "ThreadsPerCore": 1,
        "InstanceStorageConfigs": [],
        "Status": "InService",
        "OverrideVpcConfig": {"SecurityGroupIds": ["sg-1"], "Subnets": [SUBNET]},
        "CapacityRequirements": {"Spot": {}},
    }


def test_given_a_rich_group_then_every_sendable_field_round_trips_and_state_is_dropped() -> None:
    spec = rules.spec_from_description(described_accel())

    assert spec == {
        "InstanceCount": 2,
        "MinInstanceCount": 1,
        "InstanceGroupName": "accel",
        "InstanceType": "ml.p5.48xlarge",
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-b/lifecycle/", "OnCreate": "on_create.sh"},
        "ExecutionRole": ROLE,
        "ThreadsPerCore": 2,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "OnStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
        "TrainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-1",
        "OverrideVpcConfig": {"SecurityGroupIds": ["sg-1"], "Subnets": [SUBNET]},
        "ScheduledUpdateConfig": {"ScheduleExpression": "cron(0 3 ? * SUN *)"},
        "ImageId": "ami-new",
        "KubernetesConfig": {
            "Labels": {"team": "research"},
            "Taints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
        },
        "CapacityRequirements": {"OnDemand": {}},
        "NetworkInterface": {"InterfaceType": "efa-only"},
    }


def test_given_the_spec_then_botocore_accepts_it_as_an_update_cluster_request() -> None:
    session = botocore.session.get_session()
    client = session.create_client(
        "sagemaker", region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b"
    )
    from botocore.validate import validate_parameters

    model = client.meta.service_model.operation_model("UpdateCluster").input_shape
    specs = [rules.spec_from_description(described_accel()), rules.spec_from_description(described_workers())]
    validate_parameters({"ClusterName": "hp-cluster-demo", "InstanceGroups": specs}, model)  # raises when invalid


def test_given_the_botocore_model_then_every_described_member_is_sent_back_or_declared_read_only() -> None:
    unknown = rules.details_members() - rules.spec_members() - set(rules.RENAMED) - rules.READ_ONLY

    assert not unknown, f"DescribeCluster members neither sent back nor read-only: {sorted(unknown)}"
    assert set(rules.RENAMED.values()) <= rules.spec_members()


def test_given_two_groups_when_one_is_scaled_then_the_other_spec_is_byte_identical() -> None:
    groups = [described_accel(), described_workers()]
    before = copy.deepcopy(groups)
    untouched = json.dumps(rules.spec_from_description(described_workers()), sort_keys=True)

    specs = rules.specs_after_change(groups, "accel", instance_count=3)

    assert json.dumps(specs[1], sort_keys=True) == untouched
    assert specs[0]["InstanceCount"] == 3
    assert {k: v for k, v in specs[0].items() if k != "InstanceCount"} == {
        k: v for k, v in rules.spec_from_description(described_accel()).items() if k != "InstanceCount"
    }
    assert groups == before  # the descriptions are not changed


def test_given_new_labels_then_only_the_labels_of_that_group_change_and_taints_stay() -> None:
    specs = rules.specs_after_change([described_accel(), described_workers()], "accel", labels={"team": "b"})

    assert specs[0]["KubernetesConfig"] == {
        "Labels": {"team": "b"},
        "Taints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
    }
    assert specs[0]["InstanceCount"] == 2
    assert "KubernetesConfig" not in specs[1]


def test_given_a_flexible_group_then_instance_type_is_left_out_and_desired_types_are_sent() -> None:
    group = {
        **described_workers(),
        "InstanceRequirements": {
            "CurrentInstanceTypes": ["ml.g6.4xlarge"],
            "DesiredInstanceTypes": ["ml.g6.4xlarge", "ml.g5.8xlarge"],
        },
    }

    spec = rules.spec_from_description(group)

    assert "InstanceType" not in spec
    assert spec["InstanceRequirements"] == {"InstanceTypes": ["ml.g6.4xlarge", "ml.g5.8xlarge"]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"instanceType": "ml.g5.8xlarge"}, "instanceType"),
        ({"instanceCount": 2, "capacityType": "Spot"}, "capacityType"),
        ({"trainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/other"}, "trainingPlanArn"),
        ({"subnetId": "subnet-0fedcba9876543210"}, "subnetId"),
    ],
)
def test_given_a_field_hyperpod_does_not_change_then_409_names_it(body: dict[str, Any], field: str) -> None:
    request = UpdateInstanceGroupRequest.model_validate(body)

    with pytest.raises(Conflict) as info:
        rules.check_mutable(described_accel(), request)

    assert info.value.code == "ImmutableField"
    assert info.value.details[0]["field"] == field
    assert str(info.value).startswith(f"{field} of instance group 'accel' cannot be changed")


def test_given_immutable_fields_with_their_current_values_then_the_change_is_allowed() -> None:
    request = UpdateInstanceGroupRequest.model_validate(
        {
            "instanceCount": 0,
            "instanceType": "ml.p5.48xlarge",
            "capacityType": "TrainingPlan",
            "trainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-1",
            "subnetId": SUBNET,
        }
    )

    rules.check_mutable(described_accel(), request)  # no error


def test_given_a_group_at_target_then_the_change_is_done_and_a_deleted_group_is_done_when_gone() -> None:
    at_target = {**described_workers()}
    scaling = {**described_accel()}

    assert rules.change_done([at_target], "workers") == (True, "workers InService 3/3")
    assert rules.change_done([scaling], "accel")[0] is False
    assert rules.change_done([at_target], "workers", deleted=True)[0] is False
    assert rules.change_done([scaling], "workers", deleted=True) == (True, "deleted")


def test_given_a_scale_check_just_before_its_time_budget_ends_then_it_is_the_last_round() -> None:
    from instantstart.clusters import changes
    from instantstart.clusters.instance_group_steps import _last_round
    from instantstart.models.common import utcnow
    from instantstart.models.records import OperationRecord
    from instantstart.models.workflow import LoopConfig, StepPayload

    config = LoopConfig()
    poll = int(str(config.poll_seconds.to_wire()[changes.CLUSTER_CHANGE]))
    budget = int(str(config.max_polls.to_wire()[changes.CLUSTER_CHANGE]))
    payload = StepPayload.model_validate(
        {
            "action": "check_instance_group_change",
            "operationId": "op-1",
            "clusterTag": "demo",
            "generation": 1,
            "config": config.to_wire(),
        }
    )

    def op(seconds_ago: float) -> OperationRecord:
        started = {changes.CLUSTER_CHANGE: utcnow().timestamp() - seconds_ago}
        return OperationRecord.model_construct(wait_rounds={}, waits={}, wait_started=started)

    # half a poll before the budget's end: the round about to start may already read it spent
    assert _last_round(op(budget * poll - poll / 2), payload) is True
    assert _last_round(op(budget * poll - 3 * poll), payload) is False
