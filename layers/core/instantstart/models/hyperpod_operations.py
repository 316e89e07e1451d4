"""HyperPod's own cluster operations and the day-2 actions that start them.

``POST /clusters/{clusterTag}/software-update`` (SageMaker ``UpdateClusterSoftware``) and
``POST /clusters/{clusterTag}/health-checks`` (``StartClusterHealthCheck``, a ``DeepHealthCheck`` operation);
``GET /clusters/{clusterTag}/hyperpod-operations[/{operationId}]`` (``ListClusterOperations``,
``DescribeClusterOperation``). These are SageMaker's operations (UUIDs), not InstantStart ``op-...`` operations.
Shapes and limits follow the botocore service model.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, field_validator

from instantstart.models.cluster import INSTANCE_GROUP_NAME_PATTERN, INSTANCE_GROUP_NAME_RULE, DeepHealthCheckType
from instantstart.models.cluster_events import ClusterEventView
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule
from instantstart.models.nodes import NodeId, unique_node_ids

OPERATIONS_DEFAULT_PAGE_SIZE = 20
"""Operations per page when ``maxResults`` is not given."""
OPERATIONS_MAX_PAGE_SIZE = 100
"""Largest ``maxResults`` (SageMaker ``ListClusterOperations`` allows 1-100 per call)."""
OPERATION_EVENTS_PAGE_SIZE = 50
"""Events of an operation shown by ``GET /clusters/{clusterTag}/hyperpod-operations/{operationId}``."""

HYPERPOD_OPERATION_ID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
HYPERPOD_OPERATION_ID_RULE = "a HyperPod operation id: a lowercase UUID such as 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

InstanceGroupName = Annotated[
    str,
    Field(
        pattern=INSTANCE_GROUP_NAME_PATTERN,
        min_length=1,
        max_length=63,
        json_schema_extra=pattern_rule(INSTANCE_GROUP_NAME_RULE),
    ),
]


class HyperPodOperationStatus(StrEnum):
    """SageMaker ``ClusterOperationStatus``."""

    IN_PROGRESS = "InProgress"
    SUPERSEDED = "Superseded"
    DONE = "Done"


class HyperPodOperationType(StrEnum):
    """SageMaker ``ClusterOperationType``."""

    SCALING = "Scaling"
    DEEP_HEALTH_CHECK = "DeepHealthCheck"


class NodeUnavailabilityType(StrEnum):
    """SageMaker ``NodeUnavailabilityType``: how a rolling batch size is counted."""

    INSTANCE_COUNT = "INSTANCE_COUNT"
    CAPACITY_PERCENTAGE = "CAPACITY_PERCENTAGE"


class CapacitySize(ApiModel):
    """SageMaker ``CapacitySizeConfig``: a number of instances or a percentage of the group's capacity."""

    type: NodeUnavailabilityType = Field(description="INSTANCE_COUNT or CAPACITY_PERCENTAGE.")
    value: int = Field(
        ge=1,
        le=100000,
        strict=True,  # a JSON integer: "2", 2.0 and true are refused, not coerced
        description="Instances, or percent (1-100) of the group.",
        examples=[1],
    )


class RollingUpdatePolicy(ApiModel):
    """SageMaker ``RollingDeploymentPolicy``."""

    maximum_batch_size: CapacitySize = Field(description="Most nodes updated at once.")
    rollback_maximum_batch_size: CapacitySize | None = Field(
        default=None, description="Most nodes rolled back at once; omit for SageMaker's default."
    )


class DeploymentConfig(ApiModel):
    """SageMaker ``DeploymentConfiguration`` of ``UpdateClusterSoftware``: a rolling update."""

    rolling_update_policy: RollingUpdatePolicy | None = Field(
        default=None, description="Update in batches; omit to let SageMaker update every node at once."
    )
    wait_interval_in_seconds: int | None = Field(
        default=None,
        ge=0,
        le=3600,
        strict=True,
        description="Seconds to wait between batches, 0-3600.",
        examples=[120],
    )
    auto_rollback_alarm_names: list[Annotated[str, Field(min_length=1, max_length=255)]] | None = Field(
        default=None,
        min_length=1,
        max_length=10,
        description="CloudWatch alarms (1-10) whose ALARM state rolls the update back.",
        examples=[["hyperpod-gpu-errors"]],
    )


class SoftwareUpdateRequest(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/software-update`` (SageMaker ``UpdateClusterSoftware``)."""

    instance_group_names: list[InstanceGroupName] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="Instance groups to update (1-100, each a group of this cluster); omit for every group.",
        examples=[["accel"]],
    )
    deployment_config: DeploymentConfig | None = Field(
        default=None, description="Rolling deployment settings; omit for SageMaker's default."
    )
    image_id: str | None = Field(
        default=None,
        pattern=r"^(ami-[0-9a-fA-F]{8,17}|default)$",
        min_length=7,
        max_length=21,
        description="AMI to update to, or 'default' for the latest HyperPod AMI; omit for the latest.",
        examples=["default"],
        json_schema_extra=pattern_rule("an AMI id such as ami-0123456789abcdef0, or 'default'"),
    )

    @field_validator("instance_group_names")
    @classmethod
    def _unique(cls, value: list[str] | None) -> list[str] | None:
        if value and len(set(value)) != len(value):
            raise ValueError("each instance group may appear once")
        return value


class HealthCheckGroup(ApiModel):
    """One SageMaker ``DeepHealthCheckConfiguration``: which checks run on which group (or some of its nodes)."""

    instance_group_name: InstanceGroupName = Field(description="An instance group of this cluster.", examples=["accel"])
    deep_health_checks: list[DeepHealthCheckType] = Field(
        min_length=1, max_length=3, description="Checks to run, each once.", examples=[["InstanceStress"]]
    )
    instance_ids: list[NodeId] | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="Only these nodes of the group (1-500 instance ids); omit for every node of the group.",
        examples=[["i-0123456789abcdef0"]],
    )

    @field_validator("deep_health_checks")
    @classmethod
    def _unique_checks(cls, value: list[DeepHealthCheckType]) -> list[DeepHealthCheckType]:
        if len(set(value)) != len(value):
            raise ValueError("each deep health check may appear once")
        return value

    @field_validator("instance_ids")
    @classmethod
    def _unique_ids(cls, value: list[str] | None) -> list[str] | None:
        return unique_node_ids(value) if value else value


class HealthCheckRequest(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/health-checks`` (SageMaker ``StartClusterHealthCheck``)."""

    instance_groups: list[HealthCheckGroup] = Field(
        min_length=1, max_length=99, description="Groups to check (1-99, each once)."
    )

    @field_validator("instance_groups")
    @classmethod
    def _unique(cls, value: list[HealthCheckGroup]) -> list[HealthCheckGroup]:
        names = [g.instance_group_name for g in value]
        if len(set(names)) != len(names):
            raise ValueError("each instance group may appear once")
        return value


class HyperPodOperationSummary(ApiModel):
    """One SageMaker ``ClusterOperationSummary``."""

    operation_id: str = Field(
        description="SageMaker's id of the operation (UUID).", examples=["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"]
    )
    type: str = Field(description="Scaling or DeepHealthCheck.", examples=["DeepHealthCheck"])
    status: str = Field(description="InProgress, Superseded or Done.", examples=["Done"])
    creation_time: str | None = Field(
        default=None, description="When it was created (ISO-8601 UTC).", examples=["2026-11-29T17:04:05Z"]
    )


class HyperPodOperationList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/hyperpod-operations``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    hyper_pod_cluster_name: str = Field(description="The HyperPod cluster.", examples=["hp-cluster-demo"])
    operations: list[HyperPodOperationSummary] = Field(
        description="One page of operations, newest first. Empty while the HyperPod cluster does not exist."
    )
    next_token: str | None = Field(
        default=None, description="Pass as nextToken (with the same filters) for the next page; null on the last."
    )


class ScalingCounts(ApiModel):
    """SageMaker ``ClusterOperationScalingConfiguration``."""

    current_count: int | None = Field(default=None, description="Instances running.", examples=[1])
    target_count: int | None = Field(default=None, description="Instances asked for.", examples=[2])
    min_count: int | None = Field(default=None, description="Least instances the group accepts.", examples=[None])


class ScalingDetail(ApiModel):
    """SageMaker ``ClusterOperationScalingDetails``: one group's scaling within the operation."""

    instance_group_name: str | None = Field(default=None, description="Instance group.", examples=["accel"])
    status: str | None = Field(default=None, description="InProgress, Superseded or Done.", examples=["Done"])
    original: ScalingCounts | None = Field(default=None, description="Counts before the operation.")
    desired: ScalingCounts | None = Field(default=None, description="Counts the operation aims at.")


class DeepHealthCheckDetail(ApiModel):
    """SageMaker ``DeepHealthCheckConfiguration`` of a DeepHealthCheck operation."""

    instance_group_name: str = Field(description="Instance group checked.", examples=["accel"])
    deep_health_checks: list[str] = Field(description="Checks run.", examples=[["InstanceStress"]])
    instance_ids: list[str] | None = Field(
        default=None, description="Nodes checked; null for every node of the group.", examples=[None]
    )


class HyperPodOperationView(HyperPodOperationSummary):
    """Body of ``GET /clusters/{clusterTag}/hyperpod-operations/{operationId}`` (``DescribeClusterOperation``)."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    scaling_details: list[ScalingDetail] = Field(description="Per group, for a Scaling operation; else empty.")
    deep_health_check_details: list[DeepHealthCheckDetail] = Field(
        description="What a DeepHealthCheck operation checks; else empty."
    )
    events: list[ClusterEventView] = Field(
        description=f"The operation's HyperPod events, newest first (at most {OPERATION_EVENTS_PAGE_SIZE})."
    )
    more_events: bool = Field(
        description="True when the operation has more events than shown (GET /clusters/{clusterTag}/events lists "
        "every event of the cluster)."
    )
