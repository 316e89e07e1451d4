"""Cluster request and response models (``POST /clusters``, ``GET /clusters/{clusterTag}``): the requests here, their
field rules in :mod:`.cluster_fields`, the answers in :mod:`.cluster_views` (both re-exported)."""

from __future__ import annotations

import re

from pydantic import Field, ValidationInfo, field_validator

from instantstart.models.cluster_fields import (
    AVAILABILITY_ZONE_PATTERN as AVAILABILITY_ZONE_PATTERN,
)
from instantstart.models.cluster_fields import (
    AVAILABILITY_ZONE_RULE as AVAILABILITY_ZONE_RULE,
)
from instantstart.models.cluster_fields import (  # re-exported: the models' one import path
    CLUSTER_TAG_PATTERN as CLUSTER_TAG_PATTERN,
)
from instantstart.models.cluster_fields import (
    CLUSTER_TAG_RULE as CLUSTER_TAG_RULE,
)
from instantstart.models.cluster_fields import (
    HYPERPOD_KUBERNETES_VERSIONS as HYPERPOD_KUBERNETES_VERSIONS,
)
from instantstart.models.cluster_fields import (
    INSTANCE_GROUP_NAME_PATTERN as INSTANCE_GROUP_NAME_PATTERN,
)
from instantstart.models.cluster_fields import (
    INSTANCE_GROUP_NAME_RULE as INSTANCE_GROUP_NAME_RULE,
)
from instantstart.models.cluster_fields import (
    INSTANCE_TYPE_PATTERN as INSTANCE_TYPE_PATTERN,
)
from instantstart.models.cluster_fields import (
    INSTANCE_TYPE_RULE as INSTANCE_TYPE_RULE,
)
from instantstart.models.cluster_fields import (
    KUBERNETES_KEY_PATTERN as KUBERNETES_KEY_PATTERN,
)
from instantstart.models.cluster_fields import (
    KUBERNETES_KEY_RULE as KUBERNETES_KEY_RULE,
)
from instantstart.models.cluster_fields import (
    KUBERNETES_VALUE_PATTERN as KUBERNETES_VALUE_PATTERN,
)
from instantstart.models.cluster_fields import (
    KUBERNETES_VALUE_RULE as KUBERNETES_VALUE_RULE,
)
from instantstart.models.cluster_fields import (
    KUBERNETES_VERSION_PATTERN as KUBERNETES_VERSION_PATTERN,
)
from instantstart.models.cluster_fields import (
    KUBERNETES_VERSION_RULE as KUBERNETES_VERSION_RULE,
)
from instantstart.models.cluster_fields import (
    MAX_EBS_VOLUME_SIZE_GB as MAX_EBS_VOLUME_SIZE_GB,
)
from instantstart.models.cluster_fields import (
    MAX_INSTANCE_COUNT as MAX_INSTANCE_COUNT,
)
from instantstart.models.cluster_fields import (
    SUBNET_ID_PATTERN as SUBNET_ID_PATTERN,
)
from instantstart.models.cluster_fields import (
    SUBNET_ID_RULE as SUBNET_ID_RULE,
)
from instantstart.models.cluster_fields import (
    SUPPORTED_CAPACITY_TYPES as SUPPORTED_CAPACITY_TYPES,
)
from instantstart.models.cluster_fields import (
    TRAINING_PLAN_ARN_PATTERN as TRAINING_PLAN_ARN_PATTERN,
)
from instantstart.models.cluster_fields import (
    TRAINING_PLAN_ARN_RULE as TRAINING_PLAN_ARN_RULE,
)
from instantstart.models.cluster_fields import (
    AutoPatch as AutoPatch,
)
from instantstart.models.cluster_fields import (
    ClusterTag as ClusterTag,
)
from instantstart.models.cluster_fields import (
    DeepHealthCheckType as DeepHealthCheckType,
)
from instantstart.models.cluster_fields import (
    EbsVolumeConfig as EbsVolumeConfig,
)
from instantstart.models.cluster_fields import (
    InstanceStorageConfig as InstanceStorageConfig,
)
from instantstart.models.cluster_fields import (
    KubernetesLabelKey as KubernetesLabelKey,
)
from instantstart.models.cluster_fields import (
    KubernetesLabelValue as KubernetesLabelValue,
)
from instantstart.models.cluster_fields import (
    KubernetesTaint as KubernetesTaint,
)
from instantstart.models.cluster_fields import (
    OnDrainTimeout as OnDrainTimeout,
)
from instantstart.models.cluster_fields import (
    PatchingStrategy as PatchingStrategy,
)
from instantstart.models.cluster_fields import (
    TaintEffect as TaintEffect,
)
from instantstart.models.cluster_fields import (
    _unknown_instance_type as _unknown_instance_type,
)
from instantstart.models.cluster_fields import (
    hyperpod_instance_types as hyperpod_instance_types,
)
from instantstart.models.cluster_views import (
    TIMESTAMP_EXAMPLE as TIMESTAMP_EXAMPLE,
)
from instantstart.models.cluster_views import (
    ClusterList as ClusterList,
)
from instantstart.models.cluster_views import (
    ClusterSummary as ClusterSummary,
)
from instantstart.models.cluster_views import (
    ClusterView as ClusterView,
)
from instantstart.models.cluster_views import (
    EksView as EksView,
)
from instantstart.models.cluster_views import (
    HyperPodView as HyperPodView,
)
from instantstart.models.cluster_views import (
    ImportedView as ImportedView,
)
from instantstart.models.cluster_views import (
    InstanceGroupCounts as InstanceGroupCounts,
)
from instantstart.models.cluster_views import (
    InstanceGroupView as InstanceGroupView,
)
from instantstart.models.cluster_views import (
    NodeView as NodeView,
)
from instantstart.models.cluster_views import (  # re-exported
    RetainedResource as RetainedResource,
)
from instantstart.models.cluster_views import (
    RevokedGrant as RevokedGrant,
)
from instantstart.models.cluster_views import (
    StageError as StageError,
)
from instantstart.models.cluster_views import (
    StageList as StageList,
)
from instantstart.models.cluster_views import (
    StageStatusView as StageStatusView,
)
from instantstart.models.cluster_views import (
    StageView as StageView,
)
from instantstart.models.cluster_views import (
    StorageView as StorageView,
)
from instantstart.models.cluster_views import (
    _optional_timestamp as _optional_timestamp,
)
from instantstart.models.cluster_views import (
    _timestamp as _timestamp,
)
from instantstart.models.common import ApiModel, CapacityType
from instantstart.models.errors import pattern_rule


class InstanceGroupRequest(ApiModel):
    """One HyperPod instance group to create (HyperPod ``ClusterInstanceGroupSpecification``).

    Cross-field rules (each a 422 naming the field): exactly one of ``instanceType`` and ``instanceTypes``;
    ``trainingPlanArn`` exactly when ``capacityType`` is TrainingPlan; ``minInstanceCount`` at most
    ``instanceCount``. The capacity type is fixed for the group's life.
    """

    instance_group_name: str = Field(
        default="accel",
        pattern=INSTANCE_GROUP_NAME_PATTERN,
        min_length=1,
        max_length=63,
        description="HyperPod InstanceGroupName (1-63, letters, digits and hyphens), unique within the cluster.",
        examples=["accel"],
        json_schema_extra=pattern_rule(INSTANCE_GROUP_NAME_RULE),
    )
    instance_type: str | None = Field(
        default=None,
        pattern=INSTANCE_TYPE_PATTERN,
        description="HyperPod ClusterInstanceType, e.g. ml.g6.4xlarge (see GET /catalog/instance-types). "
        "Give instanceType or instanceTypes, not both.",
        examples=["ml.g6.4xlarge"],
        json_schema_extra=pattern_rule(INSTANCE_TYPE_RULE),
    )
    instance_count: int = Field(
        strict=True,  # a JSON integer: "2", 2.0 and true are refused, not coerced
        ge=0,  # HyperPod's InstanceCount minimum is 0: a group for managed Karpenter starts empty
        le=MAX_INSTANCE_COUNT,
        description=f"Number of instances, 0-{MAX_INSTANCE_COUNT}. 0 creates the group empty (e.g. for managed "
        "Karpenter, which needs its groups at 0); POST /clusters needs at least one group with 1 or more.",
        examples=[1],
    )
    capacity_type: CapacityType = Field(
        default=CapacityType.ON_DEMAND,
        description="How the capacity is paid for, fixed for the group's life: OnDemand, Spot (cheaper, "
        "can be reclaimed; HyperPod replaces reclaimed instances) or TrainingPlan (reserved capacity of "
        "trainingPlanArn, in the plan's zone).",
        examples=["OnDemand"],
    )
    training_plan_arn: str | None = Field(
        default=None,
        validate_default=True,
        min_length=50,
        max_length=2048,
        pattern=TRAINING_PLAN_ARN_PATTERN,
        description="HyperPod TrainingPlanArn: required when capacityType is TrainingPlan, refused otherwise. "
        "The plan must be Active or Scheduled, of this instance type, with room for instanceCount.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-active"],
        json_schema_extra=pattern_rule(TRAINING_PLAN_ARN_RULE),
    )
    instance_types: list[str] | None = Field(
        default=None,
        validate_default=True,
        min_length=1,
        max_length=20,
        description="A flexible group (HyperPod InstanceRequirements.InstanceTypes): 1-20 distinct HyperPod "
        "instance types HyperPod may launch, in order of preference. Give instanceType or instanceTypes, not both.",
        examples=[["ml.g6.4xlarge", "ml.g5.8xlarge"]],
    )
    min_instance_count: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=MAX_INSTANCE_COUNT,
        description=f"HyperPod MinInstanceCount: the fewest instances the group works with, 0-{MAX_INSTANCE_COUNT} "
        "and at most instanceCount.",
        examples=[1],
    )
    threads_per_core: int | None = Field(
        default=None,
        strict=True,
        ge=1,
        le=2,
        description="HyperPod ThreadsPerCore: 1 (hyperthreading off) or 2; HyperPod's default when omitted.",
        examples=[1],
    )
    instance_storage_configs: list[InstanceStorageConfig] | None = Field(
        default=None,
        min_length=1,
        max_length=4,
        description="HyperPod InstanceStorageConfigs: 1-4 extra EBS volumes per instance.",
    )
    on_start_deep_health_checks: list[DeepHealthCheckType] | None = Field(
        default=None,
        min_length=1,
        max_length=3,
        description="HyperPod OnStartDeepHealthChecks: 1-3 distinct deep health checks run when an instance "
        "starts (InstanceStress, InstanceConnectivity, MultiNodeTrainingValidation).",
        examples=[["InstanceStress", "InstanceConnectivity"]],
    )
    efa_only: bool = Field(
        default=False,
        description="HyperPod NetworkInterface.InterfaceType efa-only: instances get EFA-only interfaces "
        "(no IP traffic on them); false leaves HyperPod's default.",
        examples=[False],
    )
    labels: dict[KubernetesLabelKey, KubernetesLabelValue] | None = Field(
        default=None,
        max_length=50,
        description="HyperPod KubernetesConfig.Labels: at most 50 labels put on every Kubernetes node of the group.",
        examples=[{"team": "research"}],
    )
    taints: list[KubernetesTaint] | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        description="HyperPod KubernetesConfig.Taints: 1-50 taints put on every Kubernetes node of the group.",
    )
    subnet_id: str | None = Field(
        default=None,
        pattern=SUBNET_ID_PATTERN,
        description="An existing subnet for the group's instances (HyperPod OverrideVpcConfig.Subnets); it must "
        "be in the cluster's VPC and availabilityZone (checked when the hyperpod stage runs). Default: the "
        "cluster's compute subnet.",
        examples=["subnet-0123456789abcdef0"],
        json_schema_extra=pattern_rule(SUBNET_ID_RULE),
    )
    dedicated_subnet: bool = Field(
        default=False,
        description="true: the group gets its own compute subnet (a /20 in the cluster's zone, tagged with the "
        "group's name) instead of sharing the zone's. It outlives the group: a later group of the same name "
        "reuses it, and it is deleted with the cluster. Not together with subnetId.",
        examples=[False],
    )
    auto_patch: AutoPatch | None = Field(
        default=None, description="HyperPod AutoPatchConfig: automatic security-patch AMI updates."
    )

    @field_validator("instance_type")
    @classmethod
    def _known_instance_type(cls, value: str | None) -> str | None:
        if value is not None and value not in hyperpod_instance_types():
            raise ValueError(_unknown_instance_type(value))
        return value

    @field_validator("training_plan_arn")
    @classmethod
    def _plan_exactly_for_training_plan(cls, value: str | None, info: ValidationInfo) -> str | None:
        capacity = info.data.get("capacity_type")
        if capacity is CapacityType.TRAINING_PLAN and value is None:
            raise ValueError("required when capacityType is TrainingPlan (GET /catalog/training-plans lists the plans)")
        if capacity is not None and capacity is not CapacityType.TRAINING_PLAN and value is not None:
            raise ValueError(f"allowed only when capacityType is TrainingPlan; got capacityType {capacity.value}")
        return value

    @field_validator("instance_types")
    @classmethod
    def _one_way_to_name_types(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        single = info.data.get("instance_type")
        if value is None:
            if single is None and "instance_type" in info.data:
                raise ValueError("give instanceType (one type) or instanceTypes (a flexible group); got neither")
            return value
        if single is not None:
            raise ValueError("instanceType and instanceTypes are mutually exclusive; give one of them")
        for t in value:
            if t not in hyperpod_instance_types():
                raise ValueError(_unknown_instance_type(t))
        repeated = sorted({t for t in value if value.count(t) > 1})
        if repeated:
            raise ValueError(f"instance types must be distinct; repeated: {', '.join(repeated)}")
        return value

    @field_validator("min_instance_count")
    @classmethod
    def _min_not_above_count(cls, value: int | None, info: ValidationInfo) -> int | None:
        count = info.data.get("instance_count")
        if value is not None and count is not None and value > count:
            raise ValueError(f"must be at most instanceCount ({count}); got {value}")
        return value

    @field_validator("dedicated_subnet")
    @classmethod
    def _dedicated_or_pinned(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("subnet_id") is not None:
            raise ValueError(
                "dedicatedSubnet and subnetId are mutually exclusive: give subnetId (an existing subnet) or "
                "dedicatedSubnet true (a subnet created for the group), not both"
            )
        return value

    @field_validator("on_start_deep_health_checks")
    @classmethod
    def _distinct_checks(cls, value: list[DeepHealthCheckType] | None) -> list[DeepHealthCheckType] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("deep health checks must be distinct")
        return value

    @property
    def launch_types(self) -> list[str]:
        """The instance types the group may launch: ``[instanceType]`` or the flexible group's ``instanceTypes``."""
        return [self.instance_type] if self.instance_type else list(self.instance_types or [])


class CreateClusterRequest(ApiModel):
    """Body of ``POST /clusters``."""

    cluster_tag: ClusterTag
    availability_zone: str = Field(
        pattern=AVAILABILITY_ZONE_PATTERN,
        description="Availability Zone name of the HyperPod compute subnet (GET /catalog/availability-zones).",
        examples=["us-west-2c"],
        json_schema_extra=pattern_rule(AVAILABILITY_ZONE_RULE),
    )
    instance_groups: list[InstanceGroupRequest] = Field(
        min_length=1,
        max_length=20,
        description="Instance groups of the HyperPod cluster (1-20), usually one. At least one group needs "
        "instanceCount 1 or more: the add-ons the create installs (cert-manager, metrics-server) cannot become "
        "healthy without a node.",
    )
    kubernetes_version: str | None = Field(
        default=None,
        pattern=KUBERNETES_VERSION_PATTERN,
        description="EKS Kubernetes version (1.28-1.33, the versions HyperPod supports); default 1.32.",
        examples=["1.32"],
        json_schema_extra=pattern_rule(KUBERNETES_VERSION_RULE),
    )

    @field_validator("instance_groups")
    @classmethod
    def _unique_group_names(cls, groups: list[InstanceGroupRequest]) -> list[InstanceGroupRequest]:
        names = [g.instance_group_name for g in groups]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"instanceGroupName values must be unique; repeated: {', '.join(duplicates)}")
        return groups


EKS_CLUSTER_NAME_PATTERN = r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$"
"""EKS ``CreateCluster`` ``name``: 1-100 characters, a letter or digit first, then letters, digits, ``-``, ``_``."""

HYPERPOD_CLUSTER_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
"""SageMaker ``ClusterName``: 1-63 letters and digits, optionally joined by hyphens."""


class ImportClusterRequest(ApiModel):
    """Body of ``POST /clusters/import``: bring an existing EKS cluster (and its HyperPod cluster) under management.

    With ``hyperPodClusterName`` the HyperPod cluster it names (orchestrated by this EKS cluster) is imported and
    its instance groups are the cluster's; without it the control plane creates one, so ``availabilityZone`` and
    ``instanceGroups`` (as in ``POST /clusters``) are required.
    """

    eks_cluster_name: str = Field(
        pattern=EKS_CLUSTER_NAME_PATTERN,
        description="Name of the existing EKS cluster (EKS DescribeCluster), in this account and Region.",
        examples=["platform-eks"],
        json_schema_extra=pattern_rule(
            "an EKS cluster name: 1-100 letters, digits, hyphens or underscores, starting with a letter or digit"
        ),
    )
    cluster_tag: ClusterTag
    hyper_pod_cluster_name: str | None = Field(
        default=None,
        pattern=HYPERPOD_CLUSTER_NAME_PATTERN,
        description="Name of an existing HyperPod cluster orchestrated by this EKS cluster, to import with it.",
        examples=["platform-eks-hp"],
        json_schema_extra=pattern_rule("a HyperPod cluster name: 1-63 letters or digits, optionally joined by hyphens"),
    )
    availability_zone: str | None = Field(
        default=None,
        pattern=AVAILABILITY_ZONE_PATTERN,
        description="Without hyperPodClusterName: zone of the compute subnet created in the cluster's VPC "
        "(default: the zone of the cluster's first subnet).",
        examples=["us-west-2c"],
        json_schema_extra=pattern_rule(AVAILABILITY_ZONE_RULE),
    )
    instance_groups: list[InstanceGroupRequest] | None = Field(
        default=None,
        min_length=1,
        max_length=20,
        description="Without hyperPodClusterName (required then): the instance groups of the HyperPod cluster "
        "created for it (1-20); not allowed with hyperPodClusterName.",
    )

    @field_validator("instance_groups")
    @classmethod
    def _groups_only_without_hyperpod(
        cls, groups: list[InstanceGroupRequest] | None, info: ValidationInfo
    ) -> list[InstanceGroupRequest] | None:
        if groups is not None and info.data.get("hyper_pod_cluster_name"):
            raise ValueError(
                "not allowed with hyperPodClusterName: the imported HyperPod cluster's own instance groups are used"
            )
        if groups is not None:
            names = [g.instance_group_name for g in groups]
            duplicates = sorted({n for n in names if names.count(n) > 1})
            if duplicates:
                raise ValueError(f"instanceGroupName values must be unique; repeated: {', '.join(duplicates)}")
        return groups


def is_valid_cluster_tag(tag: str) -> bool:
    """True when ``tag`` matches :data:`CLUSTER_TAG_PATTERN`."""
    return re.fullmatch(CLUSTER_TAG_PATTERN, tag) is not None
