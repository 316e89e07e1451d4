"""Cluster request and response models (``POST /clusters``, ``GET /clusters/{clusterTag}``)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any

from pydantic import Field, field_validator

from instantstart.models.common import ApiModel, CapacityType, ClusterStatus, StageName, StageStatus

CLUSTER_TAG_PATTERN = r"^[a-z](?:[a-z0-9-]{1,22})[a-z0-9]$"
"""Lowercase letter first, then lowercase letters, digits or hyphens, ending with a letter or digit (3-24)."""

CLUSTER_TAG_RULE = (
    "a lowercase letter first, then lowercase letters, digits or hyphens, ending with a letter or digit; "
    "3-24 characters (e.g. demo, team-a-01)"
)
"""The clusterTag rule in words, for error messages."""

INSTANCE_GROUP_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
"""HyperPod ``InstanceGroupName`` pattern (1-63)."""

INSTANCE_TYPE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9-]+$"

MAX_INSTANCE_COUNT = 6758
"""HyperPod's per-group ``InstanceCount`` maximum."""

SUPPORTED_CAPACITY_TYPES = (CapacityType.ON_DEMAND,)
"""Capacity types this version creates; Spot and training plans are rejected with 422 for now."""


@lru_cache(maxsize=1)
def hyperpod_instance_types() -> frozenset[str]:
    """The HyperPod ``ClusterInstanceType`` enum from the installed botocore SageMaker model.

    Read lazily so the API function only pays for it when an instance type is validated.
    """
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    shape: Any = model.shape_for("ClusterInstanceType")
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
    ),
]


class InstanceGroupRequest(ApiModel):
    """One HyperPod instance group to create."""

    instance_group_name: str = Field(
        default="accel",
        pattern=INSTANCE_GROUP_NAME_PATTERN,
        max_length=63,
        description="HyperPod InstanceGroupName (1-63, letters, digits and hyphens).",
    )
    instance_type: str = Field(
        pattern=INSTANCE_TYPE_PATTERN,
        description="HyperPod ClusterInstanceType, e.g. ml.g6.4xlarge (see GET /catalog/instance-types).",
        examples=["ml.g6.4xlarge"],
    )
    instance_count: int = Field(
        strict=True,  # a JSON integer: "2", 2.0 and true are refused, not coerced
        ge=1,
        le=MAX_INSTANCE_COUNT,
        description=f"Number of instances, 1-{MAX_INSTANCE_COUNT}.",
    )
    capacity_type: CapacityType = Field(
        default=CapacityType.ON_DEMAND,
        description="OnDemand (Spot and TrainingPlan are not supported yet).",
    )

    @field_validator("instance_type")
    @classmethod
    def _known_instance_type(cls, value: str) -> str:
        if value not in hyperpod_instance_types():
            raise ValueError(
                f"'{value}' is not a HyperPod ClusterInstanceType; allowed values are the ml.* types "
                "of the SageMaker CreateCluster API, e.g. ml.g6.4xlarge, ml.g5.8xlarge, ml.p5.48xlarge "
                "(GET /catalog/instance-types lists those offered in a zone)"
            )
        return value

    @field_validator("capacity_type")
    @classmethod
    def _supported_capacity_type(cls, value: CapacityType) -> CapacityType:
        if value not in SUPPORTED_CAPACITY_TYPES:
            allowed = ", ".join(c.value for c in SUPPORTED_CAPACITY_TYPES)
            raise ValueError(f"capacityType '{value.value}' is not supported yet; allowed values: {allowed}")
        return value


class CreateClusterRequest(ApiModel):
    """Body of ``POST /clusters``."""

    cluster_tag: ClusterTag
    availability_zone: str = Field(
        pattern=r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$",
        description="Availability Zone name of the HyperPod compute subnet (GET /catalog/availability-zones).",
        examples=["us-west-2c"],
    )
    instance_groups: list[InstanceGroupRequest] = Field(
        min_length=1, max_length=20, description="Instance groups of the HyperPod cluster (1-20)."
    )
    kubernetes_version: str | None = Field(
        default=None,
        pattern=r"^1\.(2[89]|3[0-3])$",
        description="EKS Kubernetes version (1.28-1.33, the versions HyperPod supports); default 1.32.",
    )

    @field_validator("instance_groups")
    @classmethod
    def _unique_group_names(cls, groups: list[InstanceGroupRequest]) -> list[InstanceGroupRequest]:
        names = [g.instance_group_name for g in groups]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"instanceGroupName values must be unique; repeated: {', '.join(duplicates)}")
        return groups


class StageError(ApiModel):
    """The AWS (or control-plane) error that failed a stage, verbatim."""

    code: str
    message: str


class StageView(ApiModel):
    """A stage as the API shows it."""

    name: StageName
    order: int
    status: StageStatus
    attempts: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    observed_status: str | None = None
    resources: dict[str, Any] = Field(default_factory=dict)
    error: StageError | None = None
    teardown_status: StageStatus | None = Field(
        default=None, description="Progress of this stage's teardown while the cluster is deleted."
    )


class EksView(ApiModel):
    """The EKS cluster as last observed."""

    cluster_name: str
    cluster_arn: str | None = None
    status: str | None = None
    kubernetes_version: str | None = None
    endpoint: str | None = None
    vpc_id: str | None = None


class InstanceGroupView(ApiModel):
    """A HyperPod instance group as last observed."""

    instance_group_name: str
    instance_type: str
    instance_count: int
    current_count: int | None = None
    status: str | None = None
    capacity_type: CapacityType = CapacityType.ON_DEMAND


class HyperPodView(ApiModel):
    """The HyperPod cluster as last observed."""

    cluster_name: str
    cluster_arn: str | None = None
    status: str | None = None
    instance_groups: list[InstanceGroupView] = Field(default_factory=list)


class NodeView(ApiModel):
    """A Kubernetes node of a HyperPod instance group as last observed by the verify stage."""

    node_name: str
    instance_id: str | None = None
    instance_type: str | None = None
    instance_group_name: str | None = None
    ready: bool
    health_status: str | None = None
    health_status_reason: str | None = Field(
        default=None, description="Reason of the last HyperPod node health finding (Node Health Event)."
    )
    repair_action: str | None = Field(default=None, description="What HyperPod node recovery does about it.")


class StorageView(ApiModel):
    """The S3 storage mounted through the Mountpoint for S3 CSI driver."""

    bucket_name: str
    persistent_volume_claim: str
    namespace: str
    phase: str | None = None


class ClusterView(ApiModel):
    """Body of ``GET /clusters/{clusterTag}``."""

    cluster_tag: str
    generation: int
    status: ClusterStatus
    availability_zone: str
    region: str
    created_at: str
    updated_at: str
    current_operation_id: str | None = None
    stages: list[StageView]
    eks: EksView | None = None
    hyper_pod: HyperPodView | None = None
    nodes: list[NodeView] = Field(default_factory=list)
    storage: StorageView | None = None


class ClusterSummary(ApiModel):
    """One entry of ``GET /clusters``."""

    cluster_tag: str
    status: ClusterStatus
    availability_zone: str
    created_at: str
    updated_at: str
    eks_cluster_name: str
    hyper_pod_cluster_name: str


class ClusterList(ApiModel):
    """Body of ``GET /clusters``."""

    clusters: list[ClusterSummary]
    next_token: str | None = None


class StageList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/stages``."""

    stages: list[StageView]


def is_valid_cluster_tag(tag: str) -> bool:
    """True when ``tag`` matches :data:`CLUSTER_TAG_PATTERN`."""
    return re.fullmatch(CLUSTER_TAG_PATTERN, tag) is not None
