"""Records the control plane keeps in DynamoDB: one cluster, its stages, its operations.

These are the typed shapes the store reads and writes (camelCase attribute names, the same as the API's
JSON). Keys (``PK``/``SK``/``GSI1*``) are not part of a record: :mod:`instantstart.store.keys` builds
them. A record read from the table ignores attributes it does not know, so an older control plane can
read what a newer one wrote.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from instantstart.models.cluster import (
    CreateClusterRequest,
    EksView,
    HyperPodView,
    ImportedView,
    NodeView,
    RetainedResource,
    RevokedGrant,
    StageError,
    StorageView,
)
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType, StageName, StageStatus
from instantstart.models.drift import DriftItem
from instantstart.models.features import FeatureOutcome, UpdateFeaturesRequest
from instantstart.models.mlflow import MlflowConnection
from instantstart.models.operation import OperationProgress
from instantstart.naming import eks_cluster_name, hyperpod_cluster_name


class Record(BaseModel):
    """Base of every stored record: camelCase attributes, unknown attributes ignored on read."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True)

    def to_item(self) -> dict[str, Any]:
        """The record as DynamoDB attributes (camelCase; ``None`` values left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ClusterRecord(Record):
    """``CLUSTER#<tag>`` / ``META``: one managed cluster (all generations share the tag's record)."""

    cluster_tag: str
    generation: int = Field(ge=1, description="Bumped when a DELETED tag is created again.")
    status: ClusterStatus
    availability_zone: str
    region: str
    request: CreateClusterRequest = Field(description="The create request, as accepted.")
    created_at: str
    updated_at: str
    current_operation_id: str | None = None
    eks: EksView | None = None
    hyper_pod: HyperPodView | None = None
    nodes: list[NodeView] = Field(default_factory=list)
    storage: StorageView | None = None
    desired_features: UpdateFeaturesRequest | None = Field(
        default=None, description="What PATCH /features applied, merged over time (stored by feature key)."
    )
    imported: ImportedView | None = Field(
        default=None, description="Set by POST /clusters/import: the foreign resources the cluster uses."
    )
    mlflow: MlflowConnection | None = Field(default=None, description="The MLflow connection written by UPDATE_MLFLOW.")
    drift: list[DriftItem] = Field(
        default_factory=list, description="What differed from AWS at the last drift check (clusters/drift.py)."
    )
    drift_more: int = Field(default=0, description="Differences of that check beyond the stored items.")
    drift_checked_at: str | None = Field(default=None, description="When drift was last checked; None: never.")

    @property
    def eks_cluster_name(self) -> str:
        """The EKS cluster's name: the imported one, else ``eks-cluster-<tag>``."""
        return self.imported.eks_cluster_name if self.imported else eks_cluster_name(self.cluster_tag)

    @property
    def hyper_pod_cluster_name(self) -> str:
        """The HyperPod cluster's name: the imported one, else ``hp-cluster-<tag>`` (created here)."""
        if self.imported and self.imported.hyper_pod_cluster_name:
            return self.imported.hyper_pod_cluster_name
        return hyperpod_cluster_name(self.cluster_tag)


class StageRecord(Record):
    """``CLUSTER#<tag>`` / ``GEN#<generation>#STAGE#<nn>#<name>``: one stage of one generation."""

    cluster_tag: str
    generation: int
    name: StageName
    order: int
    status: StageStatus = StageStatus.PENDING
    attempts: int = 0
    operation_id: str | None = Field(default=None, description="The operation that last ran this stage.")
    created_at: str
    updated_at: str
    started_at: str | None = None
    ended_at: str | None = None
    observed_status: str | None = Field(default=None, description="The last AWS/Kubernetes status observed.")
    resources: dict[str, Any] = Field(
        default_factory=dict, description="Ids the stage produced (each stage's resources model, by alias)."
    )
    error: StageError | None = None
    waits: dict[str, str] = Field(
        default_factory=dict, description="Task token of each event-or-poll wait of the stage, by wait name."
    )
    wait_rounds: dict[str, int] = Field(
        default_factory=dict, description="Rounds of each wait that ended by timeout (no event), by wait name."
    )
    wait_started: dict[str, float] = Field(
        default_factory=dict, description="When each wait's first round ran (epoch seconds), by wait name."
    )
    waits_satisfied: dict[str, str] = Field(
        default_factory=dict,
        description="Waits a check found satisfied after its task had timed out: wait name -> the check's action.",
    )
    retry_requested_at: str | None = None
    teardown_status: StageStatus | None = None
    teardown_started_at: str | None = None
    teardown_ended_at: str | None = None
    imported: bool | None = Field(
        default=None, description="The stage's resources existed before import: SUCCEEDED, never torn down."
    )

    @classmethod
    def pending(cls, tag: str, generation: int, stage: StageName, now: str) -> StageRecord:
        """A new PENDING stage record (written when a cluster is created)."""
        return cls(
            cluster_tag=tag,
            generation=generation,
            name=stage,
            order=stage.order,
            created_at=now,
            updated_at=now,
        )


class OperationRecord(Record):
    """``OP#<id>`` / ``META``: one long-running operation, i.e. one Step Functions execution of that name."""

    operation_id: str
    type: OperationType
    status: OperationStatus = OperationStatus.PENDING
    cluster_tag: str
    generation: int
    stage: StageName | None = Field(default=None, description="For RETRY_STAGE: the stage retried.")
    created_at: str
    updated_at: str
    started_at: str | None = None
    ended_at: str | None = None
    execution_arn: str | None = None
    error: StageError | None = None
    instance_group_name: str | None = Field(default=None, description="For a day-2 change: the instance group.")
    change: dict[str, Any] | None = Field(
        default=None,
        description="For a day-2 change: what changes, as stored (camelCase JSON of the change model of the "
        "operation's type; read it typed with ``clusters.changes.operation_change``).",
    )
    result: OperationProgress | None = Field(
        default=None, description="For a day-2 change: what its steps recorded of AWS's answers."
    )
    waits: dict[str, str] | None = Field(
        default=None, description="Day-2 operations (no stages): task token of each wait, by wait name."
    )
    wait_rounds: dict[str, int] | None = Field(
        default=None, description="Day-2 operations: rounds of each wait that ended by timeout, by wait name."
    )
    wait_started: dict[str, float] | None = Field(
        default=None, description="Day-2 operations: when each wait's first round ran (epoch seconds), by wait name."
    )
    waits_satisfied: dict[str, str] | None = Field(
        default=None, description="Day-2 operations: waits a check found satisfied after its task had timed out."
    )
    feature_results: dict[str, FeatureOutcome] | None = Field(
        default=None, description="UPDATE_FEATURES: each feature's outcome, by feature key."
    )
    retained: list[RetainedResource] | None = Field(
        default=None, description="For a DELETE of an imported cluster: the foreign resources it leaves in place."
    )
    revoked_grants: list[RevokedGrant] | None = Field(
        default=None, description="For a DELETE: what was added to foreign resources and is taken back."
    )
    guard: str | None = Field(
        default=None,
        description="For an operation that does not hold the cluster's lock (DOWNLOAD_MODEL): the sort key of the "
        "guard item it holds in the cluster's partition (:class:`OperationGuardRecord`), released when it ends.",
    )


class OperationGuardRecord(Record):
    """``CLUSTER#<tag>`` / ``GUARD#<kind>#...``: what one operation that does not take the cluster's lock holds
    while it runs (e.g. a model download: the model's files at one destination), so that two such operations never
    work on the same thing at once. Written with the operation (one transaction, conditional on no guard of that key),
    deleted with the operation's end (one transaction too)."""

    cluster_tag: str
    guard: str = Field(description="The guard's sort key (``store.keys.guard_sk``).")
    operation_id: str = Field(description="The operation holding the guard.")
    operation_type: OperationType
    created_at: str
    subject: str = Field(description="What is guarded, for messages (e.g. ``Qwen/Qwen2.5-0.5B-Instruct to s3``).")
