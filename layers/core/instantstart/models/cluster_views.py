"""The cluster answers of the API (``GET /clusters``, ``GET /clusters/{clusterTag}``, their stages and parts).
:mod:`instantstart.models.cluster` re-exports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from instantstart.models.cluster_events import ClusterEventView
from instantstart.models.cluster_fields import AutoPatch, DeepHealthCheckType, InstanceStorageConfig, KubernetesTaint
from instantstart.models.common import ApiModel, CapacityType, ClusterStatus, StageName, StageStatus
from instantstart.models.drift import DriftView

if TYPE_CHECKING:
    from instantstart.models.cluster import InstanceGroupRequest


class RetainedResource(ApiModel):
    """A resource a cluster delete leaves in place: of an imported cluster, what this control plane did not create;
    of any cluster, what it found named like its own without its ownership tags (``reason`` says why)."""

    resource_type: str = Field(
        description="What it is: EksCluster, HyperPodCluster, Vpc, Subnet, SecurityGroup, EksAddon, EksAccessEntry, "
        "SageMakerEndpoint, SageMakerEndpointConfig.",
        examples=["EksCluster"],
    )
    name: str = Field(description="Its name or id, as AWS names it.", examples=["platform-eks"])
    reason: str | None = Field(
        default=None,
        description="Why the delete kept it, when it is not one of the imported cluster's resources.",
        examples=[
            "named like this cluster's endpoints but without its ownership tags: not created here, left in place"
        ],
    )


class RevokedGrant(ApiModel):
    """Something the control plane added to a resource it does not own, taken back by DELETE."""

    resource_type: str = Field(
        description="The foreign resource: EksAccessEntry (an access policy or Kubernetes groups added to an entry "
        "that existed before) or HyperPodCluster (the instantstart:cluster-tag tag of an imported cluster).",
        examples=["EksAccessEntry"],
    )
    name: str = Field(
        description="Its name or ARN, as AWS names it.", examples=["arn:aws:iam::123456789012:role/instantstart-steps"]
    )
    grant: str = Field(
        description="What was added and is removed: the access policy ARN, 'kubernetesGroups: <groups>', or "
        "'tag instantstart:cluster-tag'.",
        examples=["arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"],
    )


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
        description="The cluster's most recent operation (create, day-2 change, retry or delete), running or ended "
        "(GET /operations/{operationId} has its status); null before the first.",
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
    drift: DriftView = Field(
        default_factory=DriftView,
        description="What differed between the records and AWS at the last drift check (the scheduled sweep or POST "
        "/clusters/{clusterTag}/reconcile), with when it was checked; read from the record, never from AWS.",
    )


class StageStatusView(ApiModel):
    """A stage's name and status, as ``GET /clusters`` lists them (``GET /clusters/{clusterTag}/stages`` has the
    rest)."""

    name: StageName = Field(description="Stage name.", examples=["hyperpod"])
    status: StageStatus = Field(description="Status of the stage.", examples=["SUCCEEDED"])


class InstanceGroupCounts(ApiModel):
    """An instance group's node counts, as ``GET /clusters`` lists them."""

    instance_group_name: str = Field(description="Instance group name.", examples=["accel"])
    instance_type: str | None = Field(default=None, description="HyperPod instance type.", examples=["ml.g6.4xlarge"])
    target_count: int = Field(
        description="Instances the group is provisioning toward: HyperPod's TargetCount once observed, else the "
        "requested instanceCount.",
        examples=[2],
    )
    current_count: int | None = Field(
        default=None,
        description="HyperPod's CurrentCount (instances running); null before it is observed.",
        examples=[2],
    )
    ready_nodes: int = Field(
        description="Kubernetes nodes of the group last seen Ready and schedulable.", examples=[2], ge=0
    )
    status: str | None = Field(default=None, description="HyperPod's status of the group.", examples=["InService"])


class ClusterSummary(ApiModel):
    """One entry of ``GET /clusters``: enough for a list page (stages and node counts), without a ``GET`` per
    cluster."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    status: ClusterStatus = Field(description="Status of the cluster.", examples=["READY"])
    availability_zone: str = Field(
        description="Availability Zone of the HyperPod compute subnet.", examples=["us-west-2c"]
    )
    created_at: str = _timestamp("When the cluster was requested")
    updated_at: str = _timestamp("When the cluster record last changed")
    eks_cluster_name: str = Field(description="EKS cluster name.", examples=["eks-cluster-demo"])
    hyper_pod_cluster_name: str = Field(description="HyperPod cluster name.", examples=["hp-cluster-demo"])
    current_operation_id: str | None = Field(
        default=None,
        description="The cluster's most recent operation, running or ended (GET /operations/{operationId} has its "
        "status); null before the first.",
        examples=["op-0123456789abcdef0123456789abcdef"],
    )
    stages: list[StageStatusView] = Field(
        default_factory=list, description="The current generation's stages, in order, with their status."
    )
    instance_groups: list[InstanceGroupCounts] = Field(
        default_factory=list, description="Node counts per instance group, as last observed."
    )


class ClusterList(ApiModel):
    """Body of ``GET /clusters``."""

    clusters: list[ClusterSummary] = Field(description="One page of clusters.")
    next_token: str | None = Field(
        default=None, description="Pass as nextToken to get the next page; null on the last page."
    )


class StageList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/stages``."""

    stages: list[StageView] = Field(description="The stages, in order.")
