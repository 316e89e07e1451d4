"""HyperPod cluster events as the API shows them (``GET /clusters/{clusterTag}/events``).

The events are SageMaker's own (``ListClusterEvents``): what HyperPod did to the cluster, its instance
groups and instances (provisioning, scaling, node replacement, capacity errors), newest first. They are
not the control plane's stage events.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from instantstart.models.common import ApiModel

EVENTS_DEFAULT_PAGE_SIZE = 20
"""Events per page when ``maxResults`` is not given."""
EVENTS_MAX_PAGE_SIZE = 100
"""Largest ``maxResults`` (SageMaker ``ListClusterEvents`` allows 1-100 per call)."""
EVENTS_TOKEN_MAX_LENGTH = 16384
"""Longest ``nextToken`` accepted (it wraps SageMaker's token, up to 8192 characters)."""


class ClusterEventLevel(StrEnum):
    """Severity of a HyperPod cluster event (SageMaker ``ClusterEventLevel``)."""

    INFO = "Info"
    WARN = "Warn"
    ERROR = "Error"


class ClusterEventView(ApiModel):
    """One HyperPod cluster event (a SageMaker ``ClusterEventSummary``)."""

    event_id: str = Field(
        description="SageMaker's id of the event (UUID).", examples=["3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c"]
    )
    event_time: str = Field(description="When the event happened (ISO-8601 UTC).", examples=["2026-11-29T17:04:05Z"])
    event_level: str | None = Field(
        default=None,
        description="Severity: Info, Warn or Error; null when SageMaker gives none.",
        examples=["Error"],
    )
    description: str | None = Field(
        default=None,
        description="SageMaker's description of the event, verbatim; null when it gives none.",
        examples=["Instance i-0123456789abcdef0 failed health checks and is being replaced."],
    )
    instance_group_name: str | None = Field(
        default=None, description="Instance group the event concerns; null for cluster-wide events.", examples=["accel"]
    )
    instance_id: str | None = Field(
        default=None,
        description="EC2 instance the event concerns; null for cluster and instance-group events.",
        examples=["i-0123456789abcdef0"],
    )
    resource_type: str = Field(
        description="What the event concerns: Cluster, InstanceGroup or Instance.", examples=["Instance"]
    )
    operation_id: str | None = Field(
        default=None,
        description="SageMaker's id of the cluster operation (e.g. a scaling operation) the event belongs to; "
        "null when none. Not an InstantStart operationId.",
        examples=["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"],
    )
    failure_message: str | None = Field(
        default=None,
        description="On GET /clusters/{clusterTag}/events, for an Error event: the reason behind HyperPod's "
        "description, verbatim, as AWS gives it in "
        "DescribeClusterEvent (EventMetadata.<Instance|InstanceGroupScaling|InstanceGroup|Cluster>.FailureMessage, "
        "e.g. EC2's capacity message). Null for other levels, when AWS gives none, or when it was not read "
        "(failureMessageNote says why). Not read for hyperPod.latestErrors and a HyperPod operation's events.",
        examples=[
            "InsufficientInstanceCapacity: We currently do not have sufficient ml.g6.4xlarge capacity in the "
            "Availability Zone you requested (us-west-2c)."
        ],
    )
    failure_message_note: str | None = Field(
        default=None,
        description="Why failureMessage of this Error event was not read (DescribeClusterEvent failed or was "
        "throttled, or the page's bound of DescribeClusterEvent calls or time was reached: ask for fewer events); "
        "null when it was read or the event is not an Error.",
        examples=["not read: DescribeClusterEvent failed (ThrottlingException: Rate exceeded)"],
    )


class ClusterEventList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/events``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    hyper_pod_cluster_name: str = Field(
        description="The HyperPod cluster whose events these are.", examples=["hp-cluster-demo"]
    )
    events: list[ClusterEventView] = Field(
        description="One page of events, newest first. Empty while the HyperPod cluster does not exist yet."
    )
    next_token: str | None = Field(
        default=None,
        description="Pass as nextToken (with the same level and instanceGroupName) to get the next page; null on "
        "the last page. With a level filter a page may hold fewer than maxResults events, even none, while "
        "nextToken is set: keep following it.",
    )
