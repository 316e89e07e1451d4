"""Operation models: one operation is one Step Functions execution (its name is the operation id)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from instantstart.models.capacity import AvailabilityZoneChange
from instantstart.models.cluster import TIMESTAMP_EXAMPLE, RetainedResource, StageError
from instantstart.models.common import ApiModel, OperationStatus, OperationType
from instantstart.models.errors import pattern_rule

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
    retained: list[RetainedResource] | None = Field(
        default=None,
        description="DELETE of an imported cluster: the resources that existed before the import and are left in "
        "place (only what this control plane created is deleted); null otherwise.",
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
