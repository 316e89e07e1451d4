"""Task governance models: the cluster scheduler config and per-team compute quotas.

Routes ``/clusters/{clusterTag}/scheduler-config`` and ``/clusters/{clusterTag}/compute-quotas``. Every request
model maps one-to-one to a SageMaker shape with AWS's member names in camelCase (``SchedulerConfig`` ->
``schedulerConfig``, ``ComputeQuotaConfig`` -> ``computeQuotaConfig``, ...); the patterns, lengths and ranges are
botocore's ``sagemaker`` service model's, so a request the API accepts is one SageMaker accepts (botocore itself
checks only minimums). ``to_aws()`` builds the SageMaker request member.

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateClusterSchedulerConfig.html,
API_CreateComputeQuota.html, API_SchedulerConfig.html, API_ComputeQuotaConfig.html, API_ComputeQuotaTarget.html.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator

from instantstart.models.cluster import INSTANCE_TYPE_PATTERN, INSTANCE_TYPE_RULE
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule

TASK_GOVERNANCE_FEATURE = "taskGovernance"
"""The feature key (``PATCH /clusters/{clusterTag}/features``) that installs the task governance add-on."""

TASK_GOVERNANCE_ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
"""The EKS add-on SageMaker's task governance APIs need ACTIVE on the cluster's EKS cluster."""

MAX_PRIORITY_CLASSES = 10
"""``SchedulerConfig.PriorityClasses`` maximum (botocore ``PriorityClassList``)."""
MAX_QUOTA_RESOURCES = 15
"""``ComputeQuotaConfig.ComputeQuotaResources`` / ``AbsoluteBorrowLimits`` maximum (botocore)."""
MAX_RESOURCE_AMOUNT = 10_000_000
"""``Count``/``Accelerators``/``VCpu``/``MemoryInGiB`` maximum (botocore)."""
MAX_BORROW_LIMIT = 10_000
"""``ResourceSharingConfig.BorrowLimit`` maximum, a percentage of the team's quota (botocore)."""
DESCRIPTION_MAX = 1024
"""``EntityDescription`` maximum length (botocore)."""

KUBE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""botocore's ``[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?`` (priority class and team names), anchored: an RFC 1123 label."""

PRIORITY_CLASS_NAME_MAX = 63
"""A priority class becomes a Kueue ``WorkloadPriorityClass`` whose name is put in workload labels (63 at most)."""
PRIORITY_CLASS_NAME_RULE = (
    "1-63 lowercase letters, digits or hyphens, starting and ending with a letter or digit (a Kubernetes name)"
)

TEAM_NAME_MAX = 38
"""Team names: the quota's SageMaker Name ``<clusterTag>-<teamName>`` must fit ``EntityName``'s 63 characters
with the longest cluster tag (24), and the namespace ``hyperpod-ns-<teamName>`` Kubernetes' 63."""
TEAM_NAME_RULE = (
    f"1-{TEAM_NAME_MAX} lowercase letters, digits or hyphens, starting and ending with a letter or digit (the team's "
    "namespace is hyperpod-ns-<teamName>)"
)

COMPUTE_QUOTA_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
"""botocore ``EntityName``: the SageMaker Name of a compute quota (``<clusterTag>-<teamName>`` for ours)."""
COMPUTE_QUOTA_NAME_RULE = "a compute quota name such as demo-research (<clusterTag>-<teamName>), 1-63 characters"

MIG_PROFILE_PATTERN = r"^mig-[0-9]+g\.[0-9]+gb$"
"""botocore ``MIGProfileType`` values all have this shape (``mig-1g.5gb`` ... ``mig-7g.186gb``)."""


class OnOff(StrEnum):
    """``FairShare`` / ``IdleResourceSharing`` / ``ActivationState`` values."""

    ENABLED = "Enabled"
    DISABLED = "Disabled"


class ResourceSharingStrategy(StrEnum):
    """``ResourceSharingConfig.Strategy``: whether a team lends its idle compute and borrows others'."""

    LEND = "Lend"
    DONT_LEND = "DontLend"
    LEND_AND_BORROW = "LendAndBorrow"


class PreemptTeamTasks(StrEnum):
    """``ComputeQuotaConfig.PreemptTeamTasks``: whether a team's tasks may preempt its own lower-priority tasks."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


def _drop_none(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}


# -- scheduler config (cluster policy) ----------------------------------------------------------
class PriorityClass(ApiModel):
    """SageMaker ``PriorityClass``: a task priority (a Kueue ``WorkloadPriorityClass`` in the cluster)."""

    name: str = Field(
        min_length=1,
        max_length=PRIORITY_CLASS_NAME_MAX,
        pattern=KUBE_NAME_PATTERN,
        description="Priority class name (Name); tasks select it with the kueue.x-k8s.io/priority-class label.",
        examples=["inference"],
        json_schema_extra=pattern_rule(PRIORITY_CLASS_NAME_RULE),
    )
    weight: int = Field(
        strict=True, ge=0, le=100, description="Weight 0-100 (Weight): higher runs first.", examples=[100]
    )

    def to_aws(self) -> dict[str, Any]:
        """SageMaker ``PriorityClass``."""
        return {"Name": self.name, "Weight": self.weight}


class SchedulerConfig(ApiModel):
    """SageMaker ``SchedulerConfig``: priority classes, fair share and idle resource sharing."""

    priority_classes: list[PriorityClass] | None = Field(
        default=None,
        max_length=MAX_PRIORITY_CLASSES,
        description=f"0-{MAX_PRIORITY_CLASSES} priority classes with unique names (PriorityClasses).",
    )
    fair_share: OnOff | None = Field(
        default=None,
        description="Enabled: teams borrow idle compute by their fairShareWeight; Disabled: first come, first served "
        "(FairShare).",
        examples=["Enabled"],
    )
    idle_resource_sharing: OnOff | None = Field(
        default=None, description="Whether idle compute is shared between teams (IdleResourceSharing)."
    )

    @field_validator("priority_classes")
    @classmethod
    def _unique_names(cls, value: list[PriorityClass] | None) -> list[PriorityClass] | None:
        names = [pc.name for pc in value or []]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"priority class names must be unique; repeated: {', '.join(duplicates)}")
        return value

    def to_aws(self) -> dict[str, Any]:
        """SageMaker ``SchedulerConfig``."""
        return _drop_none(
            {
                "PriorityClasses": [pc.to_aws() for pc in self.priority_classes]
                if self.priority_classes is not None
                else None,
                "FairShare": self.fair_share.value if self.fair_share else None,
                "IdleResourceSharing": self.idle_resource_sharing.value if self.idle_resource_sharing else None,
            }
        )


class PutSchedulerConfigRequest(ApiModel):
    """Body of ``PUT /clusters/{clusterTag}/scheduler-config``: the whole policy (created, or replaced).

    ``targetVersion`` (optional) is the ``clusterSchedulerConfigVersion`` the caller read: a replace of any other
    version is refused with 409 (SageMaker's ``TargetVersion``). Without it the version read just before the update
    is used.
    """

    scheduler_config: SchedulerConfig = Field(description="The cluster policy (SchedulerConfig).")
    description: str | None = Field(
        default=None, max_length=DESCRIPTION_MAX, description="Description (Description).", examples=["team policy"]
    )
    target_version: int | None = Field(
        default=None,
        strict=True,
        ge=1,
        description="The clusterSchedulerConfigVersion this replace is based on (TargetVersion); 409 when stale.",
        examples=[1],
    )


class SchedulerConfigView(ApiModel):
    """The cluster's scheduler config as SageMaker describes it now (``DescribeClusterSchedulerConfig``)."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    name: str = Field(description="SageMaker Name.", examples=["demo-scheduler-config"])
    cluster_scheduler_config_id: str = Field(description="ClusterSchedulerConfigId.", examples=["a1b2c3d4e5f6"])
    cluster_scheduler_config_arn: str = Field(
        description="ClusterSchedulerConfigArn.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:cluster-scheduler-config/a1b2c3d4e5f6"],
    )
    cluster_scheduler_config_version: int = Field(
        description="ClusterSchedulerConfigVersion: pass it as targetVersion to replace this version.", examples=[1]
    )
    status: str = Field(
        description="SageMaker Status: Creating, Created, Updating, Updated, *Failed, Deleting.", examples=["Created"]
    )
    failure_reason: str | None = Field(default=None, description="SageMaker FailureReason, verbatim.")
    cluster_arn: str | None = Field(
        default=None,
        description="The HyperPod cluster's ARN (ClusterArn).",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:cluster/a1b2c3d4e5f6"],
    )
    scheduler_config: SchedulerConfig | None = Field(default=None, description="SchedulerConfig.")
    description: str | None = Field(default=None, description="Description.")
    managed: bool = Field(description="True when this control plane created it (ownership tags).")
    creation_time: str | None = Field(default=None, description="CreationTime (ISO 8601).")
    last_modified_time: str | None = Field(default=None, description="LastModifiedTime (ISO 8601).")


# -- compute quotas -----------------------------------------------------------------------------
class AcceleratorPartition(ApiModel):
    """SageMaker ``AcceleratorPartitionConfig``: a count of MIG partitions of one profile."""

    type: str = Field(
        pattern=MIG_PROFILE_PATTERN,
        max_length=16,
        description="MIG profile (Type), e.g. mig-1g.5gb.",
        examples=["mig-1g.10gb"],
        json_schema_extra=pattern_rule("a MIG profile such as mig-1g.10gb"),
    )
    count: int = Field(strict=True, ge=0, le=MAX_RESOURCE_AMOUNT, description="Partitions (Count).", examples=[2])


class ComputeQuotaResourceConfig(ApiModel):
    """SageMaker ``ComputeQuotaResourceConfig``: an amount of one instance type's capacity."""

    instance_type: str = Field(
        pattern=INSTANCE_TYPE_PATTERN,
        max_length=64,
        description="HyperPod instance type (InstanceType).",
        examples=["ml.g6.4xlarge"],
        json_schema_extra=pattern_rule(INSTANCE_TYPE_RULE),
    )
    count: int | None = Field(
        default=None, strict=True, ge=0, le=MAX_RESOURCE_AMOUNT, description="Instances (Count).", examples=[1]
    )
    accelerators: int | None = Field(
        default=None, strict=True, ge=0, le=MAX_RESOURCE_AMOUNT, description="Accelerators (Accelerators)."
    )
    v_cpu: float | None = Field(default=None, ge=0, le=MAX_RESOURCE_AMOUNT, alias="vCpu", description="vCPUs (VCpu).")
    memory_in_gi_b: float | None = Field(
        default=None, ge=0, le=MAX_RESOURCE_AMOUNT, alias="memoryInGiB", description="Memory in GiB (MemoryInGiB)."
    )
    accelerator_partition: AcceleratorPartition | None = Field(
        default=None, description="MIG partitions (AcceleratorPartition)."
    )

    def to_aws(self) -> dict[str, Any]:
        """SageMaker ``ComputeQuotaResourceConfig``."""
        out = _drop_none(
            {
                "InstanceType": self.instance_type,
                "Count": self.count,
                "Accelerators": self.accelerators,
                "VCpu": self.v_cpu,
                "MemoryInGiB": self.memory_in_gi_b,
            }
        )
        if self.accelerator_partition is not None:
            out["AcceleratorPartition"] = {
                "Type": self.accelerator_partition.type,
                "Count": self.accelerator_partition.count,
            }
        return out


class ResourceSharingConfig(ApiModel):
    """SageMaker ``ResourceSharingConfig``: lending and borrowing of idle compute."""

    strategy: ResourceSharingStrategy = Field(description="Strategy.", examples=["LendAndBorrow"])
    borrow_limit: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=MAX_BORROW_LIMIT,
        description=f"Percentage of the team's quota it may borrow, 0-{MAX_BORROW_LIMIT} (BorrowLimit; "
        "LendAndBorrow only).",
        examples=[50],
    )
    absolute_borrow_limits: list[ComputeQuotaResourceConfig] | None = Field(
        default=None, max_length=MAX_QUOTA_RESOURCES, description="Absolute borrow limits (AbsoluteBorrowLimits)."
    )

    def to_aws(self) -> dict[str, Any]:
        """SageMaker ``ResourceSharingConfig``."""
        return _drop_none(
            {
                "Strategy": self.strategy.value,
                "BorrowLimit": self.borrow_limit,
                "AbsoluteBorrowLimits": [r.to_aws() for r in self.absolute_borrow_limits]
                if self.absolute_borrow_limits is not None
                else None,
            }
        )


class ComputeQuotaConfig(ApiModel):
    """SageMaker ``ComputeQuotaConfig``: what a team is guaranteed, how it shares, whether it preempts."""

    compute_quota_resources: list[ComputeQuotaResourceConfig] | None = Field(
        default=None,
        max_length=MAX_QUOTA_RESOURCES,
        description=f"0-{MAX_QUOTA_RESOURCES} resource allocations (ComputeQuotaResources).",
    )
    resource_sharing_config: ResourceSharingConfig | None = Field(
        default=None, description="Lending and borrowing (ResourceSharingConfig)."
    )
    preempt_team_tasks: PreemptTeamTasks | None = Field(
        default=None, description="PreemptTeamTasks.", examples=["LowerPriority"]
    )

    def to_aws(self) -> dict[str, Any]:
        """SageMaker ``ComputeQuotaConfig``."""
        return _drop_none(
            {
                "ComputeQuotaResources": [r.to_aws() for r in self.compute_quota_resources]
                if self.compute_quota_resources is not None
                else None,
                "ResourceSharingConfig": self.resource_sharing_config.to_aws()
                if self.resource_sharing_config
                else None,
                "PreemptTeamTasks": self.preempt_team_tasks.value if self.preempt_team_tasks else None,
            }
        )


class ComputeQuotaTarget(ApiModel):
    """SageMaker ``ComputeQuotaTarget``: the team (its namespace ``hyperpod-ns-<teamName>``) and its fair share."""

    team_name: str = Field(
        min_length=1,
        max_length=TEAM_NAME_MAX,
        pattern=KUBE_NAME_PATTERN,
        description="Team (TeamName); its tasks run in namespace hyperpod-ns-<teamName>.",
        examples=["research"],
        json_schema_extra=pattern_rule(TEAM_NAME_RULE),
    )
    fair_share_weight: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=100,
        description="Fair-share weight 0-100 (FairShareWeight; used when fairShare is Enabled).",
        examples=[10],
    )

    def to_aws(self) -> dict[str, Any]:
        """SageMaker ``ComputeQuotaTarget``."""
        return _drop_none({"TeamName": self.team_name, "FairShareWeight": self.fair_share_weight})


class CreateComputeQuotaRequest(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/compute-quotas``: one team's quota (named ``<clusterTag>-<teamName>``)."""

    compute_quota_config: ComputeQuotaConfig = Field(description="ComputeQuotaConfig.")
    compute_quota_target: ComputeQuotaTarget = Field(description="ComputeQuotaTarget.")
    activation_state: OnOff | None = Field(
        default=None, description="ActivationState (default Enabled).", examples=["Enabled"]
    )
    description: str | None = Field(default=None, max_length=DESCRIPTION_MAX, description="Description.")


class UpdateComputeQuotaRequest(ApiModel):
    """Body of ``PATCH /clusters/{clusterTag}/compute-quotas/{computeQuotaName}``: only the members given change.

    ``computeQuotaTarget.teamName`` cannot change (409). ``targetVersion`` (optional) is the ``computeQuotaVersion``
    the caller read; any other current version answers 409.
    """

    compute_quota_config: ComputeQuotaConfig | None = Field(default=None, description="ComputeQuotaConfig.")
    compute_quota_target: ComputeQuotaTarget | None = Field(default=None, description="ComputeQuotaTarget.")
    activation_state: OnOff | None = Field(default=None, description="ActivationState.")
    description: str | None = Field(default=None, max_length=DESCRIPTION_MAX, description="Description.")
    target_version: int | None = Field(
        default=None,
        strict=True,
        ge=1,
        description="The computeQuotaVersion this change is based on (TargetVersion); 409 when stale.",
        examples=[1],
    )


class ComputeQuotaView(ApiModel):
    """One compute quota as SageMaker describes it (``DescribeComputeQuota``)."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    name: str = Field(description="SageMaker Name (the path's computeQuotaName).", examples=["demo-research"])
    compute_quota_id: str = Field(description="ComputeQuotaId.", examples=["a1b2c3d4e5f6"])
    compute_quota_arn: str = Field(
        description="ComputeQuotaArn.", examples=["arn:aws:sagemaker:us-west-2:123456789012:compute-quota/a1b2c3d4e5f6"]
    )
    compute_quota_version: int | None = Field(
        default=None, description="ComputeQuotaVersion: pass it as targetVersion to change this version.", examples=[1]
    )
    status: str = Field(description="SageMaker Status.", examples=["Created"])
    failure_reason: str | None = Field(default=None, description="SageMaker FailureReason, verbatim.")
    cluster_arn: str | None = Field(
        default=None,
        description="The HyperPod cluster's ARN (ClusterArn).",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:cluster/a1b2c3d4e5f6"],
    )
    compute_quota_config: ComputeQuotaConfig | None = Field(default=None, description="ComputeQuotaConfig.")
    compute_quota_target: ComputeQuotaTarget | None = Field(default=None, description="ComputeQuotaTarget.")
    activation_state: str | None = Field(default=None, description="ActivationState.", examples=["Enabled"])
    description: str | None = Field(default=None, description="Description.")
    managed: bool = Field(description="True when this control plane created it (ownership tags).")
    creation_time: str | None = Field(default=None, description="CreationTime (ISO 8601).")
    last_modified_time: str | None = Field(default=None, description="LastModifiedTime (ISO 8601).")


class ComputeQuotaList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/compute-quotas``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    compute_quotas: list[ComputeQuotaView] = Field(description="The cluster's compute quotas, by name.")
