"""Cluster request and response models (``POST /clusters``, ``GET /clusters/{clusterTag}``)."""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator

from instantstart.models.cluster_events import ClusterEventView
from instantstart.models.common import ApiModel, CapacityType, ClusterStatus, StageName, StageStatus
from instantstart.models.errors import pattern_rule

# Each pattern has its rule in words next to it (a noun phrase completing "<field> must be ..."). The Fields
# below attach it with ``pattern_rule``; the API's 422 messages quote the words, never the regular expression.

CLUSTER_TAG_PATTERN = r"^[a-z](?:[a-z0-9-]{1,22})[a-z0-9]$"
"""Lowercase letter first, then lowercase letters, digits or hyphens, ending with a letter or digit (3-24)."""

CLUSTER_TAG_RULE = (
    "a lowercase letter first, then lowercase letters, digits or hyphens, ending with a letter or digit "
    "(e.g. demo, team-a-01)"
)
"""The clusterTag pattern in words (the 3-24 length is stated from the field's own limits)."""

INSTANCE_GROUP_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$"
"""HyperPod ``ClusterInstanceGroupName`` pattern (botocore: ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``, 1-63)."""

INSTANCE_GROUP_NAME_RULE = (
    "letters and digits, optionally joined by hyphens, starting and ending with a letter or digit "
    "(e.g. accel, workers-1)"
)
"""The instanceGroupName pattern in words."""

INSTANCE_TYPE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9-]+$"
"""HyperPod ``ClusterInstanceType`` shape: ``ml.<family>.<size>``."""

INSTANCE_TYPE_RULE = "a HyperPod instance type such as ml.g6.4xlarge (ml.<family>.<size>)"
"""The instanceType pattern in words."""

AVAILABILITY_ZONE_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$"
"""An Availability Zone name: Region name plus a zone letter."""

AVAILABILITY_ZONE_RULE = "an Availability Zone name such as us-west-2c (the Region name followed by a zone letter)"
"""The availabilityZone pattern in words."""

HYPERPOD_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33")
"""The EKS Kubernetes versions SageMaker HyperPod supports: the one list (create and import use it).

https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html
("SageMaker HyperPod supports Kubernetes versions 1.28, 1.29, 1.30, 1.31, 1.32, and 1.33").
"""

KUBERNETES_VERSION_PATTERN = "^(" + "|".join(re.escape(v) for v in HYPERPOD_KUBERNETES_VERSIONS) + ")$"
"""The EKS Kubernetes versions HyperPod supports (:data:`HYPERPOD_KUBERNETES_VERSIONS`)."""

KUBERNETES_VERSION_RULE = (
    f"a Kubernetes minor version from {HYPERPOD_KUBERNETES_VERSIONS[0]} to {HYPERPOD_KUBERNETES_VERSIONS[-1]}, "
    "written like 1.32"
)
"""The kubernetesVersion pattern in words."""

MAX_INSTANCE_COUNT = 6758
"""HyperPod's per-group ``InstanceCount`` maximum."""

SUPPORTED_CAPACITY_TYPES = (CapacityType.ON_DEMAND, CapacityType.SPOT, CapacityType.TRAINING_PLAN)
"""Capacity types this version creates (HyperPod ``CapacityRequirements`` OnDemand/Spot, or a ``TrainingPlanArn``)."""

TRAINING_PLAN_ARN_PATTERN = r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.+$"
"""HyperPod ``TrainingPlanArn`` (botocore pattern, 50-2048 characters)."""

TRAINING_PLAN_ARN_RULE = (
    "a SageMaker training plan ARN such as arn:aws:sagemaker:us-west-2:123456789012:training-plan/my-plan "
    "(GET /catalog/training-plans)"
)
"""The trainingPlanArn pattern in words."""

SUBNET_ID_PATTERN = r"^subnet-[0-9a-f]{8,17}$"
"""An EC2 subnet id."""

SUBNET_ID_RULE = "an EC2 subnet id such as subnet-0123456789abcdef0 (subnet- and 8-17 hex digits)"
"""The subnetId pattern in words."""

KUBERNETES_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
"""HyperPod ``ClusterKubernetesLabelKey``/``ClusterKubernetesTaintKey`` (1-317 characters)."""

KUBERNETES_KEY_RULE = (
    "a Kubernetes label key: an optional DNS prefix and slash, then letters, digits, '-', '_' or '.', "
    "starting and ending with a letter or digit (e.g. team, example.com/pool)"
)
"""A label or taint key in words."""

KUBERNETES_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
"""HyperPod ``ClusterKubernetesLabelValue``/``ClusterKubernetesTaintValue`` (1-63 characters)."""

KUBERNETES_VALUE_RULE = (
    "a Kubernetes label value: letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)
"""A label or taint value in words."""

MAX_EBS_VOLUME_SIZE_GB = 16384
"""HyperPod ``ClusterEbsVolumeSizeInGB`` maximum (minimum 1)."""


class DeepHealthCheckType(StrEnum):
    """HyperPod ``DeepHealthCheckType``: a deep health check run when an instance starts."""

    INSTANCE_STRESS = "InstanceStress"
    INSTANCE_CONNECTIVITY = "InstanceConnectivity"
    MULTI_NODE_TRAINING_VALIDATION = "MultiNodeTrainingValidation"


class TaintEffect(StrEnum):
    """HyperPod ``ClusterKubernetesTaintEffect``."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class PatchingStrategy(StrEnum):
    """HyperPod ``ClusterPatchingStrategy``: when security-patch AMI updates are applied to a node."""

    WHEN_IDLE = "WhenIdle"
    WHEN_ALL_IDLE = "WhenAllIdle"
    DRAIN_FIRST = "DrainFirst"


class OnDrainTimeout(StrEnum):
    """HyperPod ``ClusterOnDrainTimeout``: what happens when draining a node times out."""

    FORCE = "Force"
    SKIP = "Skip"


class EbsVolumeConfig(ApiModel):
    """HyperPod ``ClusterEbsVolumeConfig``: an extra EBS volume attached to every instance of the group."""

    volume_size_in_gb: int = Field(
        alias="volumeSizeInGB",
        strict=True,
        ge=1,
        le=MAX_EBS_VOLUME_SIZE_GB,
        description=f"Size of the EBS volume in GB, 1-{MAX_EBS_VOLUME_SIZE_GB} (HyperPod VolumeSizeInGB).",
        examples=[500],
    )


class InstanceStorageConfig(ApiModel):
    """HyperPod ``ClusterInstanceStorageConfig`` (the EBS volume kind)."""

    ebs_volume_config: EbsVolumeConfig = Field(description="The EBS volume to attach (HyperPod EbsVolumeConfig).")


class KubernetesTaint(ApiModel):
    """HyperPod ``ClusterKubernetesTaint``: a taint put on every Kubernetes node of the group."""

    key: str = Field(
        min_length=1,
        max_length=317,
        pattern=KUBERNETES_KEY_PATTERN,
        description="Taint key.",
        examples=["nvidia.com/gpu"],
        json_schema_extra=pattern_rule(KUBERNETES_KEY_RULE),
    )
    value: str | None = Field(
        default=None,
        min_length=1,
        max_length=63,
        pattern=KUBERNETES_VALUE_PATTERN,
        description="Taint value (optional).",
        examples=["present"],
        json_schema_extra=pattern_rule(KUBERNETES_VALUE_RULE),
    )
    effect: TaintEffect = Field(description="Taint effect.", examples=["NoSchedule"])


KubernetesLabelKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=317,
        pattern=KUBERNETES_KEY_PATTERN,
        json_schema_extra=pattern_rule(KUBERNETES_KEY_RULE),
    ),
]
KubernetesLabelValue = Annotated[
    str,
    Field(
        min_length=1,
        max_length=63,
        pattern=KUBERNETES_VALUE_PATTERN,
        json_schema_extra=pattern_rule(KUBERNETES_VALUE_RULE),
    ),
]


class AutoPatch(ApiModel):
    """HyperPod ``ClusterAutoPatchConfig``: automatic security-patch AMI updates of the group's nodes.

    Maps to ``AutoPatchConfig`` (``PatchingStrategy``, ``IdleWaitWindowInSeconds``, ``DrainPolicy``). HyperPod's
    ``ScheduledUpdateConfig`` (a cron schedule of software updates) is not exposed by this version.
    """

    patching_strategy: PatchingStrategy = Field(
        description="When a node is patched: WhenIdle (the node runs no job), WhenAllIdle (no node of the "
        "group runs a job) or DrainFirst (drain, then patch).",
        examples=["WhenIdle"],
    )
    idle_wait_window_in_seconds: int | None = Field(
        default=None,
        strict=True,
        ge=3600,
        le=2160000,
        description="How long to wait for a node to become idle before patching it anyway, 3600-2160000 s.",
        examples=[86400],
    )
    drain_timeout_in_seconds: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=5400,
        description="DrainFirst: how long draining may take, 0-5400 s (HyperPod DrainPolicy.DrainTimeoutInSeconds).",
        examples=[600],
    )
    on_drain_timeout: OnDrainTimeout | None = Field(
        default=None,
        description="DrainFirst: what to do when draining times out (HyperPod DrainPolicy.OnDrainTimeout).",
        examples=["Force"],
    )


@lru_cache(maxsize=1)
def hyperpod_instance_types() -> frozenset[str]:
    """The HyperPod ``ClusterInstanceType`` enum from the installed botocore SageMaker model.

    Read lazily so the API function only pays for it when an instance type is validated.
    """
    from instantstart.aws.clients import service_model

    shape: Any = service_model("sagemaker").shape_for("ClusterInstanceType")
    return frozenset(shape.enum)


ClusterTag = Annotated[
    str,
    Field(
        pattern=CLUSTER_TAG_PATTERN,
        min_length=3,
        max_length=24,
        description="Cluster tag: lowercase letter first, then lowercase letters, digits or hyphens, "
        "ending with a letter or digit; 3-24 characters. Embedded in AWS and Kubernetes names.",
        examples=["demo"],
        json_schema_extra=pattern_rule(CLUSTER_TAG_RULE),
    ),
]


def _unknown_instance_type(value: str) -> str:
    return (
        f"'{value}' is not a HyperPod ClusterInstanceType; allowed values are the ml.* types "
        "of the SageMaker CreateCluster API, e.g. ml.g6.4xlarge, ml.g5.8xlarge, ml.p5.48xlarge "
        "(GET /catalog/instance-types lists those offered in a zone)"
    )


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


class RetainedResource(ApiModel):
    """A resource of an imported cluster that was not created by this control plane and is never deleted by it."""

    resource_type: str = Field(
        description="What it is: EksCluster, HyperPodCluster, Vpc, Subnet, SecurityGroup, EksAddon, EksAccessEntry.",
        examples=["EksCluster"],
    )
    name: str = Field(description="Its name or id, as AWS names it.", examples=["platform-eks"])


class ImportedView(ApiModel):
    """What ``POST /clusters/import`` found: the foreign resources the cluster uses and never deletes."""

    eks_cluster_name: str = Field(description="The imported EKS cluster.", examples=["platform-eks"])
    eks_cluster_arn: str = Field(
        description="Its ARN.", examples=["arn:aws:eks:us-west-2:123456789012:cluster/platform-eks"]
    )
    kubernetes_version: str = Field(description="Its Kubernetes version at import.", examples=["1.32"])
    authentication_mode: str = Field(
        description="Its accessConfig.authenticationMode at import.", examples=["API_AND_CONFIG_MAP"]
    )
    vpc_id: str = Field(description="Its VPC.", examples=["vpc-0123456789abcdef0"])
    subnet_ids: list[str] = Field(description="Its subnets (resourcesVpcConfig.subnetIds).")
    security_group_id: str = Field(
        description="The security group HyperPod nodes use: the EKS cluster security group.",
        examples=["sg-0123456789abcdef0"],
    )
    hyper_pod_cluster_name: str | None = Field(
        default=None,
        description="The imported HyperPod cluster; null when the control plane creates one.",
        examples=["platform-eks-hp"],
    )
    hyper_pod_cluster_arn: str | None = Field(
        default=None,
        description="Its ARN.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef012345"],
    )
    addons: list[str] = Field(default_factory=list, description="EKS add-ons present at import (kept on delete).")
    access_entry: bool = Field(
        default=False, description="True when the control plane's access entry existed at import (kept on delete)."
    )
    retained: list[RetainedResource] = Field(
        default_factory=list, description="Everything above that DELETE leaves in place."
    )


TIMESTAMP_EXAMPLE = "2026-11-29T17:04:05Z"
"""Example of the API's timestamps: ISO-8601 UTC, seconds, ``Z`` suffix."""


def _timestamp(what: str) -> Any:
    return Field(description=f"{what} (ISO-8601 UTC).", examples=[TIMESTAMP_EXAMPLE])


def _optional_timestamp(what: str) -> Any:
    return Field(default=None, description=f"{what} (ISO-8601 UTC); null until then.", examples=[TIMESTAMP_EXAMPLE])


class StageError(ApiModel):
    """The AWS (or control-plane) error that failed a stage, verbatim."""

    code: str = Field(
        description="Error code, as AWS (or the control plane) reported it.",
        examples=["InsufficientCapacityException", "States.Timeout"],
    )
    message: str = Field(
        description="Error message, verbatim.",
        examples=["We currently do not have sufficient capacity for ml.g6.4xlarge in us-west-2c."],
    )


class StageView(ApiModel):
    """A stage as the API shows it."""

    name: StageName = Field(description="Stage name; stages run in this order.", examples=["hyperpod"])
    order: int = Field(description="1-based position of the stage in the creation workflow.", examples=[4])
    status: StageStatus = Field(description="Status of the stage.", examples=["RUNNING"])
    attempts: int = Field(default=0, description="How many times the stage has started (retries count).", examples=[1])
    started_at: str | None = _optional_timestamp("When the stage last started")
    ended_at: str | None = _optional_timestamp("When the stage last ended")
    observed_status: str | None = Field(
        default=None,
        description="Last status the stage observed on the AWS or Kubernetes resource it waits for.",
        examples=["InService", "CREATE_IN_PROGRESS", "Bound"],
    )
    resources: dict[str, Any] = Field(
        default_factory=dict,
        description="Identifiers of the resources the stage created or uses (names, ids, ARNs).",
        examples=[{"vpcId": "vpc-0123456789abcdef0"}],
    )
    error: StageError | None = Field(default=None, description="The error that failed the stage; null otherwise.")
    teardown_status: StageStatus | None = Field(
        default=None, description="Progress of this stage's teardown while the cluster is deleted."
    )
    imported: bool = Field(
        default=False,
        description="True when the stage's resources existed before POST /clusters/import (recorded SUCCEEDED, "
        "never deleted).",
    )


class EksView(ApiModel):
    """The EKS cluster as last observed."""

    cluster_name: str = Field(description="EKS cluster name.", examples=["eks-cluster-demo"])
    cluster_arn: str | None = Field(
        default=None,
        description="EKS cluster ARN; null until created.",
        examples=["arn:aws:eks:us-west-2:123456789012:cluster/eks-cluster-demo"],
    )
    status: str | None = Field(default=None, description="EKS cluster status as last observed.", examples=["ACTIVE"])
    kubernetes_version: str | None = Field(default=None, description="Kubernetes version.", examples=["1.32"])
    endpoint: str | None = Field(
        default=None,
        description="Kubernetes API server endpoint.",
        examples=["https://0123456789ABCDEF0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"],
    )
    vpc_id: str | None = Field(default=None, description="VPC of the cluster.", examples=["vpc-0123456789abcdef0"])


class InstanceGroupView(ApiModel):
    """A HyperPod instance group as last observed."""

    instance_group_name: str = Field(description="Instance group name.", examples=["accel"])
    instance_type: str | None = Field(
        default=None,
        description="HyperPod instance type; null for a flexible group (see instanceTypes).",
        examples=["ml.g6.4xlarge"],
    )
    instance_count: int = Field(description="Number of instances requested.", examples=[1])
    target_count: int | None = Field(
        default=None, description="HyperPod's TargetCount: the instances it is provisioning toward.", examples=[2]
    )
    current_count: int | None = Field(
        default=None, description="HyperPod's CurrentCount: the instances running now.", examples=[1]
    )
    status: str | None = Field(
        default=None, description="Instance group status as last observed.", examples=["InService"]
    )
    capacity_type: CapacityType = Field(
        default=CapacityType.ON_DEMAND,
        description="How the capacity is paid for, fixed for the group's life.",
        examples=["OnDemand"],
    )
    training_plan_arn: str | None = Field(
        default=None,
        description="The training plan of a TrainingPlan group.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-active"],
    )
    instance_types: list[str] | None = Field(
        default=None, description="A flexible group's instance types (HyperPod InstanceRequirements)."
    )
    min_instance_count: int | None = Field(
        default=None, description="HyperPod MinInstanceCount as requested.", examples=[1]
    )
    threads_per_core: int | None = Field(default=None, description="HyperPod ThreadsPerCore as requested.")
    instance_storage_configs: list[InstanceStorageConfig] | None = Field(
        default=None, description="Extra EBS volumes per instance, as requested."
    )
    on_start_deep_health_checks: list[DeepHealthCheckType] | None = Field(
        default=None, description="Deep health checks run when an instance starts, as requested."
    )
    efa_only: bool = Field(default=False, description="True when the instances get EFA-only network interfaces.")
    labels: dict[str, str] | None = Field(default=None, description="Kubernetes labels of the group's nodes.")
    taints: list[KubernetesTaint] | None = Field(default=None, description="Kubernetes taints of the group's nodes.")
    subnet_id: str | None = Field(
        default=None,
        description="The subnet pinned for the group; null: the cluster's compute subnet.",
        examples=["subnet-0123456789abcdef0"],
    )
    dedicated_subnet: bool = Field(
        default=False, description="True when the group has its own compute subnet (dedicatedSubnet)."
    )
    auto_patch: AutoPatch | None = Field(default=None, description="Automatic patching, as requested.")

    @classmethod
    def requested_fields(cls, group: InstanceGroupRequest) -> dict[str, Any]:
        """The view's fields that echo the request of ``group`` (everything but names, types and counts)."""
        return {
            "capacity_type": group.capacity_type,
            "training_plan_arn": group.training_plan_arn,
            "instance_types": group.instance_types,
            "min_instance_count": group.min_instance_count,
            "threads_per_core": group.threads_per_core,
            "instance_storage_configs": group.instance_storage_configs,
            "on_start_deep_health_checks": group.on_start_deep_health_checks,
            "efa_only": group.efa_only,
            "labels": group.labels,
            "taints": group.taints,
            "subnet_id": group.subnet_id,
            "dedicated_subnet": group.dedicated_subnet,
            "auto_patch": group.auto_patch,
        }


class HyperPodView(ApiModel):
    """The HyperPod cluster as last observed."""

    cluster_name: str = Field(description="HyperPod cluster name.", examples=["hp-cluster-demo"])
    cluster_arn: str | None = Field(
        default=None,
        description="HyperPod cluster ARN; null until created.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:cluster/abcd1234efgh"],
    )
    status: str | None = Field(
        default=None, description="HyperPod cluster status as last observed.", examples=["InService"]
    )
    instance_groups: list[InstanceGroupView] = Field(default_factory=list, description="The instance groups.")
    latest_errors: list[ClusterEventView] = Field(
        default_factory=list,
        description="The latest Error-level HyperPod cluster events (newest first, verbatim), e.g. capacity "
        "shortages while instances are retried.",
    )


class NodeView(ApiModel):
    """A Kubernetes node of a HyperPod instance group as last observed by the verify stage."""

    node_name: str = Field(description="Kubernetes node name.", examples=["hyperpod-i-0123456789abcdef0"])
    instance_id: str | None = Field(default=None, description="EC2 instance id.", examples=["i-0123456789abcdef0"])
    instance_type: str | None = Field(default=None, description="HyperPod instance type.", examples=["ml.g6.4xlarge"])
    instance_group_name: str | None = Field(default=None, description="Instance group of the node.", examples=["accel"])
    ready: bool = Field(description="True when the node is Ready and schedulable.", examples=[True])
    health_status: str | None = Field(
        default=None, description="HyperPod node health status label.", examples=["Schedulable"]
    )
    health_status_reason: str | None = Field(
        default=None, description="Reason of the last HyperPod node health finding (Node Health Event)."
    )
    repair_action: str | None = Field(default=None, description="What HyperPod node recovery does about it.")


class StorageView(ApiModel):
    """The S3 storage mounted through the Mountpoint for S3 CSI driver."""

    bucket_name: str = Field(
        description="S3 bucket of the cluster.", examples=["sagemaker-instantstart-demo-123456789012"]
    )
    persistent_volume_claim: str = Field(description="Kubernetes PersistentVolumeClaim name.", examples=["s3-claim"])
    namespace: str = Field(description="Kubernetes namespace of the claim.", examples=["default"])
    phase: str | None = Field(default=None, description="Phase of the claim as last observed.", examples=["Bound"])


class ClusterView(ApiModel):
    """Body of ``GET /clusters/{clusterTag}``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    generation: int = Field(
        description="Generation of the tag: 1 for the first cluster with it, +1 each time it is created again "
        "after a delete.",
        examples=[1],
    )
    status: ClusterStatus = Field(description="Status of the cluster.", examples=["READY"])
    availability_zone: str = Field(
        description="Availability Zone of the HyperPod compute subnet.", examples=["us-west-2c"]
    )
    region: str = Field(description="AWS Region of the cluster.", examples=["us-west-2"])
    created_at: str = _timestamp("When the cluster was requested")
    updated_at: str = _timestamp("When the cluster record last changed")
    current_operation_id: str | None = Field(
        default=None,
        description="Operation running on the cluster (create, retry or delete); null when none.",
        examples=["op-0123456789abcdef0123456789abcdef"],
    )
    stages: list[StageView] = Field(description="The stages, in order.")
    eks: EksView | None = Field(default=None, description="The EKS cluster as last observed.")
    hyper_pod: HyperPodView | None = Field(default=None, description="The HyperPod cluster as last observed.")
    nodes: list[NodeView] = Field(default_factory=list, description="HyperPod nodes as last observed.")
    storage: StorageView | None = Field(default=None, description="The S3 storage as last observed.")
    imported: bool = Field(default=False, description="True for a cluster brought in by POST /clusters/import.")
    imported_resources: ImportedView | None = Field(
        default=None, description="For an imported cluster: the foreign resources it uses and DELETE leaves."
    )


class ClusterSummary(ApiModel):
    """One entry of ``GET /clusters``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    status: ClusterStatus = Field(description="Status of the cluster.", examples=["READY"])
    availability_zone: str = Field(
        description="Availability Zone of the HyperPod compute subnet.", examples=["us-west-2c"]
    )
    created_at: str = _timestamp("When the cluster was requested")
    updated_at: str = _timestamp("When the cluster record last changed")
    eks_cluster_name: str = Field(description="EKS cluster name.", examples=["eks-cluster-demo"])
    hyper_pod_cluster_name: str = Field(description="HyperPod cluster name.", examples=["hp-cluster-demo"])


class ClusterList(ApiModel):
    """Body of ``GET /clusters``."""

    clusters: list[ClusterSummary] = Field(description="One page of clusters.")
    next_token: str | None = Field(
        default=None, description="Pass as nextToken to get the next page; null on the last page."
    )


class StageList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/stages``."""

    stages: list[StageView] = Field(description="The stages, in order.")


def is_valid_cluster_tag(tag: str) -> bool:
    """True when ``tag`` matches :data:`CLUSTER_TAG_PATTERN`."""
    return re.fullmatch(CLUSTER_TAG_PATTERN, tag) is not None
