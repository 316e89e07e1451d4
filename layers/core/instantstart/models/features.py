"""Managed-feature models of ``GET/PATCH /clusters/{clusterTag}/features``.

A feature is one HyperPod capability the control plane installs and removes as a unit (an EKS add-on with the
add-ons it depends on, the IAM roles and pod identity associations it needs, cluster settings, Kubernetes
objects). ``PATCH`` takes only the features to change (an explicit diff): a feature left out is not touched.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, model_validator

from instantstart.models.cluster import StageError
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule

ADDON_VERSION_PATTERN = r"^v[0-9A-Za-z.+_-]{1,99}$"
ADDON_VERSION_RULE = "an EKS add-on version as DescribeAddonVersions lists it, e.g. v1.1.0-eksbuild.1"


class AddonFeatureRequest(ApiModel):
    """One add-on based feature in ``PATCH /clusters/{clusterTag}/features``."""

    enabled: bool = Field(strict=True, description="true installs the feature, false removes what it installed.")
    version: str | None = Field(
        default=None,
        pattern=ADDON_VERSION_PATTERN,
        max_length=100,
        description="Pin the add-on version (must be offered for the cluster's Kubernetes version by EKS "
        "DescribeAddonVersions); default: the newest compatible version when installing, the installed one otherwise.",
        examples=["v1.1.0-eksbuild.1"],
        json_schema_extra=pattern_rule(ADDON_VERSION_RULE),
    )


def _remove_dependents(what: str) -> Any:
    """The ``removeDependents`` field of a feature others depend on (``what``: those dependents, in words)."""
    return Field(
        default=None,
        strict=True,
        description=f"With enabled false: also delete what depends on the feature ({what}). Without it, turning the "
        "feature off while any exists is refused with 409 FeatureHasDependents naming them.",
        examples=[True],
    )


class InferenceOperatorRequest(AddonFeatureRequest):
    """``inferenceOperator`` in ``PATCH /clusters/{clusterTag}/features``."""

    remove_dependents: bool | None = _remove_dependents(
        "the cluster's managed inference endpoints, whose SageMaker endpoint, endpoint config and model the operator "
        "removes first"
    )


class TrainingOperatorRequest(AddonFeatureRequest):
    """``trainingOperator`` in ``PATCH /clusters/{clusterTag}/features``."""

    remove_dependents: bool | None = _remove_dependents(
        "every HyperPodPyTorchJob of the cluster, with its pods: without the operator nothing restarts them or "
        "removes their finalizer"
    )


class TaskGovernanceRequest(AddonFeatureRequest):
    """``taskGovernance`` in ``PATCH /clusters/{clusterTag}/features``."""

    remove_dependents: bool | None = _remove_dependents(
        "every training job submitted to a Kueue queue (label kueue.x-k8s.io/queue-name), with its pods: without "
        "Kueue nothing admits them"
    )


class TieredCheckpointingRequest(ApiModel):
    """``tieredCheckpointing`` in ``PATCH /clusters/{clusterTag}/features`` (HyperPod ``TieredStorageConfig``)."""

    enabled: bool = Field(
        strict=True,
        description="true: UpdateCluster TieredStorageConfig Mode=Enable plus the training pods' identity "
        "(service account, pod identity association, role); false: Mode=Disable and that identity removed.",
    )
    instance_memory_allocation_percentage: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=100,
        description="Percentage of each instance's memory HyperPod reserves for the checkpoint tier "
        "(TieredStorageConfig.InstanceMemoryAllocationPercentage, 0-100); default: HyperPod's own.",
        examples=[20],
    )


LUSTRE_DEPLOYMENT_TYPES = ("SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
LustreDeploymentType = Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"]


class LustreFileSystemRequest(ApiModel):
    """``fsx.fileSystem``: a new FSx for Lustre file system (CreateFileSystem ``FileSystemType=LUSTRE``) in the
    cluster's compute subnet, exposed to pods as PersistentVolumeClaim ``fsx-claim`` in namespace ``default``.

    Member names are those of FSx ``CreateFileSystem`` / ``LustreConfiguration``
    (https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html); the combinations FSx accepts
    are checked before anything is written (:func:`instantstart.features.fsx.file_system_errors`).
    """

    storage_capacity: int = Field(
        strict=True,
        ge=1200,
        le=524_160,
        description="StorageCapacity in GiB: 1200 or a multiple of 2400 (SCRATCH_1 also 3600).",
        examples=[1200],
    )
    deployment_type: LustreDeploymentType = Field(
        default="PERSISTENT_2",
        description="LustreConfiguration.DeploymentType: SCRATCH_1, SCRATCH_2, PERSISTENT_1 or PERSISTENT_2.",
        examples=["PERSISTENT_2"],
    )
    per_unit_storage_throughput: int | None = Field(
        default=None,
        strict=True,
        description="LustreConfiguration.PerUnitStorageThroughput in MB/s per TiB: PERSISTENT_1 50, 100 or 200; "
        "PERSISTENT_2 125, 250, 500 or 1000 (default 125); not allowed for SCRATCH types.",
        examples=[250],
    )


class FsxRequest(ApiModel):
    """``fsx`` in ``PATCH /clusters/{clusterTag}/features``: the FSx for Lustre CSI driver and, optionally, a new
    file system with its static PersistentVolume and claim ``fsx-claim``."""

    enabled: bool = Field(
        strict=True,
        description="true installs the aws-fsx-csi-driver add-on (and the file system when fileSystem is given); "
        "false removes the claim, the file system, its security group, the add-on and its role.",
    )
    version: str | None = Field(
        default=None,
        pattern=ADDON_VERSION_PATTERN,
        max_length=100,
        description="Pin the aws-fsx-csi-driver add-on version (offered for the cluster's Kubernetes version).",
        examples=["v1.5.0-eksbuild.1"],
        json_schema_extra=pattern_rule(ADDON_VERSION_RULE),
    )
    file_system: LustreFileSystemRequest | None = Field(
        default=None,
        description="Create a new FSx for Lustre file system (only with enabled true); left out, a file system "
        "created earlier is not touched.",
    )
    remove_dependents: bool | None = _remove_dependents(
        "every training job whose pods mount claim fsx-claim, with its pods: the claim and its file system go"
    )


class KubeRayRequest(ApiModel):
    """``kubeRay`` in ``PATCH /clusters/{clusterTag}/features``: the KubeRay operator at the pinned version."""

    enabled: bool = Field(
        strict=True,
        description="true applies the operator's objects; false deletes them (and, with the CRDs, every RayCluster, "
        "RayJob and RayService).",
    )
    remove_dependents: bool | None = _remove_dependents("every RayJob, RayCluster and RayService, with their pods")


class ObservabilityRequest(ApiModel):
    """``observability`` in ``PATCH /clusters/{clusterTag}/features``: HyperPod observability (metrics to an Amazon
    Managed Service for Prometheus workspace the cluster owns) and/or CloudWatch Container Insights.

    Defaults: ``hyperPodObservability`` true (what ``{"enabled": true}`` always meant: HyperPod's own metrics and
    dashboards), ``cloudWatch`` false (Container Insights bills per observation or GB ingested and ships every
    container's logs: opt in).
    """

    enabled: bool = Field(
        strict=True,
        description="true installs the parts chosen below; false removes every part this control plane installed "
        "(add-ons, roles, pod identity associations, the Prometheus workspace).",
    )
    version: str | None = Field(
        default=None,
        pattern=ADDON_VERSION_PATTERN,
        max_length=100,
        description="Pin the amazon-sagemaker-hyperpod-observability add-on version (offered for the cluster's "
        "Kubernetes version).",
        examples=["v1.0.1-eksbuild.1"],
        json_schema_extra=pattern_rule(ADDON_VERSION_RULE),
    )
    hyper_pod_observability: bool = Field(
        default=True,
        strict=True,
        description="EKS add-on amazon-sagemaker-hyperpod-observability with its collector role and an Amazon "
        "Managed Service for Prometheus workspace owned by the cluster (passed as the add-on's ampWorkspace). No "
        "Grafana workspace is created: connect your Grafana to the workspace's prometheusEndpoint. Default true.",
    )
    cloud_watch: bool = Field(
        default=False,
        strict=True,
        description="EKS add-on amazon-cloudwatch-observability (Container Insights, Fluent Bit) with a role for "
        "service account amazon-cloudwatch/cloudwatch-agent. Default false.",
    )

    @model_validator(mode="after")
    def _some_part(self) -> ObservabilityRequest:
        if self.enabled and not (self.hyper_pod_observability or self.cloud_watch):
            raise ValueError("enabled true needs hyperPodObservability or cloudWatch true (or enabled false)")
        return self


class UpdateFeaturesRequest(ApiModel):
    """Body of ``PATCH /clusters/{clusterTag}/features``: only the features given act (an explicit diff).

    ``{}`` changes nothing. A feature whose observed state already equals the request is left alone with no
    AWS write.
    """

    training_operator: TrainingOperatorRequest | None = Field(
        default=None,
        description="EKS add-on amazon-sagemaker-hyperpod-training-operator (HyperPodPyTorchJob). Off is refused "
        "while HyperPodPyTorchJobs exist, unless removeDependents is true.",
    )
    inference_operator: InferenceOperatorRequest | None = Field(
        default=None,
        description="EKS add-on amazon-sagemaker-hyperpod-inference with its role and TLS bucket. Off is refused "
        "while managed inference endpoints exist, unless removeDependents is true.",
    )
    observability: ObservabilityRequest | None = Field(
        default=None,
        description="HyperPod observability (add-on amazon-sagemaker-hyperpod-observability, its role and a "
        "Prometheus workspace) and/or CloudWatch (add-on amazon-cloudwatch-observability and its role).",
    )
    task_governance: TaskGovernanceRequest | None = Field(
        default=None,
        description="EKS add-on amazon-sagemaker-hyperpod-taskgovernance (Kueue). Off is refused while jobs "
        "submitted to a queue exist, unless removeDependents is true.",
    )
    tiered_checkpointing: TieredCheckpointingRequest | None = Field(
        default=None, description="HyperPod TieredStorageConfig and the identity training pods use with it."
    )
    kube_ray: KubeRayRequest | None = Field(
        default=None,
        description="The KubeRay operator (namespace kuberay-system, RBAC, ray.io CRDs, Deployment). Off is refused "
        "while RayJobs, RayClusters or RayServices exist, unless removeDependents is true.",
    )
    fsx: FsxRequest | None = Field(
        default=None,
        description="EKS add-on aws-fsx-csi-driver with its role; optionally a new FSx for Lustre file system "
        "and PersistentVolumeClaim fsx-claim. Off is refused while jobs mount fsx-claim, unless removeDependents "
        "is true.",
    )

    def wire(self) -> dict[str, Any]:
        """The request as camelCase JSON, features left out omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class FeaturesChange(ApiModel):
    """``change`` of an UPDATE_FEATURES operation (stored camelCase)."""

    request: UpdateFeaturesRequest = Field(description="The PATCH body, as accepted.")
    plan: list[str] = Field(default_factory=list, description="The feature keys that differed from AWS when accepted.")


class FeatureResult(StrEnum):
    """What a PATCH did to one feature."""

    CHANGED = "changed"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    PENDING = "pending"


class FeatureOutcome(ApiModel):
    """One feature's outcome of a PATCH (also stored on the UPDATE_FEATURES operation)."""

    result: FeatureResult = Field(
        description="changed (AWS now matches the request), unchanged (it already did: nothing was written), "
        "failed (error holds AWS's code and message verbatim), pending (the operation is still converging).",
        examples=["changed"],
    )
    error: StageError | None = Field(default=None, description="Why the feature failed; null otherwise.")
    actions: list[str] = Field(
        default_factory=list,
        description="The AWS and Kubernetes writes made for the feature, in order.",
        examples=[["CreateAddon cert-manager", "CreateAddon amazon-sagemaker-hyperpod-training-operator"]],
    )


class FeatureUpdateResult(ApiModel):
    """200 answer of a PATCH whose plan is empty: every feature in the body already matches AWS."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    features: dict[str, FeatureOutcome] = Field(description="Each feature of the body: unchanged.")


class InstalledAddon(ApiModel):
    """An EKS add-on a feature uses, as EKS reports it (DescribeAddon)."""

    addon_name: str = Field(description="EKS add-on name.", examples=["cert-manager"])
    addon_version: str | None = Field(
        default=None, description="Installed add-on version; null when absent.", examples=["v1.17.2-eksbuild.1"]
    )
    status: str = Field(description="EKS add-on status, or ABSENT.", examples=["ACTIVE"])
    managed: bool = Field(
        description="Created by this control plane (ownership tags); an add-on that existed before is never removed."
    )
    needed_by: list[str] = Field(
        default_factory=list,
        description="Who needs it, read from its instantstart:needed-by tag (create = the create workflow).",
        examples=[["create", "trainingOperator"]],
    )


class InstalledAssociation(ApiModel):
    """An EKS pod identity association a feature uses (ListPodIdentityAssociations)."""

    namespace: str = Field(description="Kubernetes namespace of the service account.", examples=["aws-hyperpod"])
    service_account: str = Field(
        description="Kubernetes service account bound to the role.",
        examples=["hp-training-operator-controller-manager"],
    )
    association_id: str = Field(description="EKS association id.", examples=["a-0123456789abcdef0"])


class InstalledDataRepositoryAssociation(ApiModel):
    """A data repository association of an FSx for Lustre file system (FSx DescribeDataRepositoryAssociations)."""

    association_id: str = Field(description="AssociationId.", examples=["dra-0123456789abcdef0"])
    lifecycle: str = Field(
        description="Lifecycle: CREATING, AVAILABLE, UPDATING, MISCONFIGURED, DELETING, FAILED.", examples=["AVAILABLE"]
    )
    file_system_path: str = Field(description="FileSystemPath on Lustre.", examples=["/models"])
    data_repository_path: str = Field(
        description="DataRepositoryPath in S3.", examples=["s3://instantstart-demo-123456789012-us-west-2/fsx/models/"]
    )
    failure: str | None = Field(default=None, description="FailureDetails.Message (MISCONFIGURED or FAILED).")


class InstalledFileSystem(ApiModel):
    """An FSx for Lustre file system a feature created (FSx DescribeFileSystems)."""

    file_system_id: str = Field(description="FSx file system id.", examples=["fs-0123456789abcdef0"])
    lifecycle: str = Field(description="FSx Lifecycle: CREATING, AVAILABLE, DELETING, FAILED.", examples=["AVAILABLE"])
    storage_capacity: int = Field(description="StorageCapacity in GiB.", examples=[1200])
    deployment_type: str | None = Field(
        default=None, description="LustreConfiguration.DeploymentType.", examples=["PERSISTENT_2"]
    )
    per_unit_storage_throughput: int | None = Field(
        default=None, description="LustreConfiguration.PerUnitStorageThroughput (MB/s/TiB)."
    )
    dns_name: str | None = Field(
        default=None,
        description="DNSName the Lustre client mounts.",
        examples=["fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com"],
    )
    mount_name: str | None = Field(default=None, description="LustreConfiguration.MountName.", examples=["abcdefgh"])
    file_system_type_version: str | None = Field(
        default=None, description="FileSystemTypeVersion (Lustre version).", examples=["2.15"]
    )
    data_repository_associations: list[InstalledDataRepositoryAssociation] = Field(
        default_factory=list,
        description="Its data repository associations (FSx DescribeDataRepositoryAssociations): the feature links "
        "/models to s3://<cluster bucket>/fsx/models/ with auto-export, which GET .../models lists.",
    )


class FeatureState(ApiModel):
    """One feature in ``GET /clusters/{clusterTag}/features``: observed from AWS now, plus what was last applied."""

    enabled: bool = Field(
        description="Observed: the feature's add-on exists, its cluster setting is on, or (kubeRay) its objects exist "
        "in Kubernetes."
    )
    desired: dict[str, Any] | None = Field(
        default=None, description="What this control plane last applied for the feature (PATCH body); null if never."
    )
    version: str | None = Field(default=None, description="Installed add-on version.", examples=["v1.1.0-eksbuild.1"])
    status: str | None = Field(
        default=None, description="The add-on's EKS status, or TieredStorageConfig.Mode.", examples=["ACTIVE"]
    )
    settings: dict[str, Any] | None = Field(
        default=None, description="Cluster settings of the feature (tieredCheckpointing: TieredStorageConfig)."
    )
    managed: bool = Field(default=False, description="Installed by this control plane (ownership tags).")
    addons: list[InstalledAddon] = Field(default_factory=list, description="Its add-on and the add-ons it needs.")
    roles: list[str] = Field(default_factory=list, description="ARNs of the IAM roles it created.")
    pod_identity_associations: list[InstalledAssociation] = Field(
        default_factory=list, description="EKS pod identity associations of its roles' service accounts."
    )
    kubernetes_objects: list[str] = Field(
        default_factory=list,
        description="Kubernetes objects it installs (kind/name): those it creates itself (kubeRay's operator, "
        "fsx's PersistentVolume and claim) as read from Kubernetes now, plus, when on, those its add-on brings.",
        examples=[["CustomResourceDefinition/hyperpodpytorchjobs.sagemaker.amazonaws.com"]],
    )
    kubernetes_unknown: dict[str, str] = Field(
        default_factory=dict,
        description="Kinds of the Kubernetes objects it creates that the API could not read now, with why "
        "(forbidden to the API's read-only access entry, no answer in time, unreachable): that part is unknown.",
        examples=[{"CustomResourceDefinition": "Kubernetes answered 403 Forbidden"}],
    )
    buckets: list[str] = Field(default_factory=list, description="S3 buckets it created.")
    file_systems: list[InstalledFileSystem] = Field(
        default_factory=list, description="FSx for Lustre file systems it created (fsx), as FSx reports them."
    )
    security_groups: list[str] = Field(
        default_factory=list, description="EC2 security groups it created (fsx: Lustre traffic to the file system)."
    )


class FeatureList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/features``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    kubernetes_version: str | None = Field(default=None, description="The EKS cluster's version.", examples=["1.32"])
    features: dict[str, FeatureState] = Field(description="Every managed feature, by its camelCase key.")
