"""Operation models: one operation is one Step Functions execution (its name is the operation id)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from instantstart.models.capacity import AvailabilityZoneChange
from instantstart.models.cluster import TIMESTAMP_EXAMPLE, RetainedResource, RevokedGrant, StageError
from instantstart.models.common import ApiModel, OperationStatus, OperationType
from instantstart.models.errors import pattern_rule
from instantstart.models.features import FeatureOutcome
from instantstart.models.nodes import NodeFailure

OPERATION_ID_PATTERN = r"^op-[0-9a-f]{32}$"
"""An operation id: ``op-`` and 32 lowercase hex digits (also the Step Functions execution name)."""

OPERATION_ID_RULE = "an operation id as the API returns it: op- followed by 32 lowercase hex digits"
"""The operationId pattern in words."""

OPERATION_ID_EXAMPLE = "op-0123456789abcdef0123456789abcdef"

OperationId = Annotated[
    str,
    Field(
        pattern=OPERATION_ID_PATTERN,
        min_length=35,
        max_length=35,
        description="Operation id, as returned by POST /clusters, DELETE /clusters/{clusterTag} or a stage retry.",
        examples=[OPERATION_ID_EXAMPLE],
        json_schema_extra=pattern_rule(OPERATION_ID_RULE),
    ),
]


class OperationProgress(BaseModel):
    """``result`` of a day-2 operation's record: what its steps recorded of AWS's answers.

    Stored with these snake_case names (the record's ``result`` attribute). The :class:`ChangeResult` fields are
    what the API shows; the others are the handlers' bookkeeping (a mark before a call without ClientToken, what
    a check has seen). Unknown names are ignored on read; ``None`` means "not recorded yet".
    """

    model_config = ConfigDict(extra="ignore", defer_build=True)

    node_ids: list[str] | None = None
    successful: list[str] | None = None
    failed: list[NodeFailure] | None = None
    hyper_pod_operation_id: str | None = None
    observed: str | None = None
    calling: bool | None = Field(default=None, description="A batch or update call is being made (no ClientToken).")
    called: bool | None = Field(default=None, description="UpdateClusterSoftware was accepted.")
    groups: list[str] | None = Field(default=None, description="UPDATE_CLUSTER_SOFTWARE: the groups updated.")
    updating_seen: bool | None = Field(default=None, description="The software update was seen under way.")
    previous_health_check: str | None = Field(
        default=None, description="START_CLUSTER_HEALTH_CHECK: the newest DeepHealthCheck before the call ('' none)."
    )
    rebooting: list[str] | None = Field(default=None, description="Rebooted nodes seen rebooting once.")
    groups_of: dict[str, str] | None = Field(default=None, description="Node actions: each node's instance group.")
    targets_before: dict[str, int] | None = Field(
        default=None, description="DELETE_CLUSTER_NODES: each group's TargetCount before the call."
    )
    lowered: list[str] | None = Field(default=None, description="DELETE_CLUSTER_NODES: groups whose target we lowered.")
    downloaded_bytes: int | None = Field(default=None, description="DOWNLOAD_MODEL: bytes under the model's prefix.")
    downloaded_files: int | None = Field(default=None, description="DOWNLOAD_MODEL: objects under the model's prefix.")

    def merged(self, update: OperationProgress) -> OperationProgress:
        """This progress with the fields set on ``update`` replaced."""
        return self.model_copy(update={name: getattr(update, name) for name in update.model_fields_set})

    def public(self) -> ChangeResult:
        """The part the API shows (:class:`ChangeResult`)."""
        return ChangeResult.model_validate({name: getattr(self, name) for name in ChangeResult.model_fields})


class ChangeResult(ApiModel):
    """What AWS answered to a day-2 change of nodes, software or health checks (null fields: not applicable)."""

    node_ids: list[str] | None = Field(
        default=None,
        description="REBOOT_, REPLACE_ and DELETE_CLUSTER_NODES: the instance ids requested.",
        examples=[["i-0123456789abcdef0"]],
    )
    successful: list[str] | None = Field(
        default=None,
        description="Node actions: the instance ids HyperPod accepted (null until the batch call was made).",
        examples=[["i-0123456789abcdef0"]],
    )
    failed: list[NodeFailure] | None = Field(
        default=None,
        description="Nodes HyperPod refused or that failed (a failed deep health check), each with SageMaker's code "
        "and message verbatim. When every node failed the operation is FAILED with the first one's code and message.",
    )
    hyper_pod_operation_id: str | None = Field(
        default=None,
        description="START_CLUSTER_HEALTH_CHECK: the DeepHealthCheck HyperPod operation it started (GET "
        "/clusters/{clusterTag}/hyperpod-operations/{operationId}); null until SageMaker lists it.",
        examples=["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"],
    )
    downloaded_bytes: int | None = Field(
        default=None,
        description="DOWNLOAD_MODEL to s3: bytes under the model's prefix at the last check (S3 ListObjectsV2).",
        examples=[988097824],
    )
    downloaded_files: int | None = Field(
        default=None,
        description="DOWNLOAD_MODEL to s3: objects under the model's prefix at the last check.",
        examples=[10],
    )
    observed: str | None = Field(
        default=None,
        description="What the operation's last check saw (e.g. 'i-0123456789abcdef0 Pending (Rebooting)').",
        examples=["hp-cluster-demo SystemUpdating"],
    )


class OperationView(ApiModel):
    """Body of ``GET /operations/{operationId}`` and of every 202 answer."""

    operation_id: str = Field(description="Operation id.", examples=[OPERATION_ID_EXAMPLE])
    type: OperationType = Field(description="What the operation does.", examples=["CREATE_CLUSTER"])
    status: OperationStatus = Field(description="Status of the operation.", examples=["RUNNING"])
    cluster_tag: str = Field(description="Cluster the operation acts on.", examples=["demo"])
    status_url: str = Field(
        description="Path to poll for this operation (also the Location header of a 202).",
        examples=[f"/operations/{OPERATION_ID_EXAMPLE}"],
    )
    created_at: str = Field(
        description="When the operation was requested (ISO-8601 UTC).", examples=[TIMESTAMP_EXAMPLE]
    )
    updated_at: str = Field(description="When the operation last changed (ISO-8601 UTC).", examples=[TIMESTAMP_EXAMPLE])
    started_at: str | None = Field(
        default=None,
        description="When the workflow started (ISO-8601 UTC); null until then.",
        examples=[TIMESTAMP_EXAMPLE],
    )
    ended_at: str | None = Field(
        default=None,
        description="When the workflow ended (ISO-8601 UTC); null until then.",
        examples=[TIMESTAMP_EXAMPLE],
    )
    stage: str | None = Field(default=None, description="For RETRY_STAGE: the stage retried.", examples=["hyperpod"])
    instance_group_name: str | None = Field(
        default=None,
        description="For SCALE_, ADD_, UPDATE_ and DELETE_INSTANCE_GROUP: the instance group changed.",
        examples=["accel"],
    )
    execution_arn: str | None = Field(
        default=None,
        description="ARN of the Step Functions execution running the operation.",
        examples=[
            f"arn:aws:states:us-west-2:123456789012:execution:instantstart-create-cluster:{OPERATION_ID_EXAMPLE}"
        ],
    )
    error: StageError | None = Field(default=None, description="The error that ended the operation; null otherwise.")
    result: ChangeResult | None = Field(
        default=None,
        description="For node actions, software updates and deep health checks: what AWS answered (accepted and "
        "failed nodes, HyperPod's operation id) and what the wait last saw; null for other operations.",
    )
    features: dict[str, FeatureOutcome] | None = Field(
        default=None,
        description="For UPDATE_FEATURES: each feature of the request and its outcome (changed, unchanged, failed "
        "with AWS's error verbatim, or pending while the operation runs).",
    )
    retained: list[RetainedResource] | None = Field(
        default=None,
        description="DELETE of an imported cluster: the resources that existed before the import and are left in "
        "place (only what this control plane created is deleted); null otherwise.",
    )
    revoked_grants: list[RevokedGrant] | None = Field(
        default=None,
        description="DELETE: what the control plane added to resources it does not own (an access policy or "
        "Kubernetes groups on an access entry that existed before the import, its tag on an imported HyperPod "
        "cluster); the delete takes each back before it SUCCEEDS. Null when there is none.",
    )
    availability_zone_change: AvailabilityZoneChange | None = Field(
        default=None,
        description="Only in the 202 answer of POST /clusters: set when the cluster was moved from the requested "
        "availabilityZone to the zone where its training plan reserves capacity; null otherwise.",
    )


class OperationList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/operations``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    operations: list[OperationView] = Field(
        description="One page of the control plane's operations on the cluster (every generation), newest first."
    )
    next_token: str | None = Field(
        default=None, description="Pass as nextToken to get the next page; null on the last page."
    )
