"""Instance-group models of the day-2 routes (``/clusters/{clusterTag}/instance-groups``)."""

from __future__ import annotations

from pydantic import Field

from instantstart.models.cluster import (
    INSTANCE_TYPE_PATTERN,
    INSTANCE_TYPE_RULE,
    MAX_INSTANCE_COUNT,
    InstanceGroupRequest,
)
from instantstart.models.common import ApiModel, CapacityType
from instantstart.models.errors import pattern_rule

AddInstanceGroupRequest = InstanceGroupRequest
"""Body of ``POST /clusters/{clusterTag}/instance-groups``: the same group fields ``POST /clusters`` accepts."""


class UpdateInstanceGroupRequest(ApiModel):
    """Body of ``PATCH /clusters/{clusterTag}/instance-groups/{instanceGroupName}``: only the fields given change.

    ``instanceCount`` and ``labels`` can change. ``instanceType``, ``capacityType``, ``trainingPlanArn`` and
    ``subnetId`` are accepted only with the group's current value: HyperPod does not change them on an
    existing group (the answer is 409 naming the field; add a new group instead).
    """

    instance_count: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=MAX_INSTANCE_COUNT,
        description=f"New number of instances, 0-{MAX_INSTANCE_COUNT} (0 keeps the group with no instances).",
        examples=[3],
    )
    labels: dict[str, str] | None = Field(
        default=None,
        description="Kubernetes labels HyperPod puts on the group's nodes (KubernetesConfig.Labels), replacing "
        "the current ones.",
        examples=[{"team": "research"}],
    )
    instance_type: str | None = Field(
        default=None,
        pattern=INSTANCE_TYPE_PATTERN,
        description="Not changeable: accepted only with the group's current instance type.",
        examples=["ml.g6.4xlarge"],
        json_schema_extra=pattern_rule(INSTANCE_TYPE_RULE),
    )
    capacity_type: CapacityType | None = Field(
        default=None,
        description="Not changeable: accepted only with the group's current capacity type.",
        examples=["OnDemand"],
    )
    training_plan_arn: str | None = Field(
        default=None,
        max_length=2048,
        description="Not changeable: accepted only with the group's current training plan.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-1"],
    )
    subnet_id: str | None = Field(
        default=None,
        max_length=32,
        description="Not changeable: accepted only with the group's current subnet.",
        examples=["subnet-0123456789abcdef0"],
    )


class InstanceGroupDetail(ApiModel):
    """One instance group as HyperPod reports it now (SageMaker ``DescribeCluster``)."""

    instance_group_name: str = Field(description="Instance group name.", examples=["accel"])
    instance_type: str | None = Field(default=None, description="HyperPod instance type.", examples=["ml.g6.4xlarge"])
    target_count: int | None = Field(
        default=None, description="HyperPod's TargetCount: the instances it provisions toward.", examples=[3]
    )
    current_count: int = Field(default=0, description="HyperPod's CurrentCount: instances running now.", examples=[1])
    capacity_type: CapacityType | None = Field(
        default=None, description="How the capacity is paid for (CapacityRequirements).", examples=["OnDemand"]
    )
    training_plan_arn: str | None = Field(
        default=None,
        description="Training plan of the group; null when none.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-1"],
    )
    status: str | None = Field(default=None, description="Instance group status.", examples=["InService"])
    subnet_ids: list[str] = Field(
        default_factory=list,
        description="Subnets of the group (OverrideVpcConfig.Subnets).",
        examples=[["subnet-0123456789abcdef0"]],
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Kubernetes labels of the group's nodes.")


class InstanceGroupList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/instance-groups``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    hyper_pod_cluster_name: str = Field(description="HyperPod cluster name.", examples=["hp-cluster-demo"])
    hyper_pod_status: str | None = Field(
        default=None, description="HyperPod cluster status; null when it does not exist.", examples=["InService"]
    )
    instance_groups: list[InstanceGroupDetail] = Field(description="The groups, in HyperPod's order.")


class InstanceGroupChange(ApiModel):
    """What a day-2 operation changes (stored on the operation record; read by the update workflow's steps)."""

    instance_group_name: str
    instance_count: int | None = None
    labels: dict[str, str] | None = None
    group: InstanceGroupRequest | None = Field(default=None, description="For ADD_INSTANCE_GROUP: the new group.")
    previous_count: int | None = Field(
        default=None,
        description="For SCALE_INSTANCE_GROUP: the group's TargetCount when the scale was asked (a failed scale-up "
        "puts it back).",
    )
