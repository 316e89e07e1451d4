"""The field rules of the cluster models: patterns with their rules in words, enums and the small parts a request
is made of (taints, labels, volumes, auto-patching). :mod:`instantstart.models.cluster` re-exports them."""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any

from pydantic import Field

from instantstart.models.common import ApiModel, CapacityType
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
