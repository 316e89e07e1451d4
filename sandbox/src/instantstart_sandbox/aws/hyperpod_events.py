"""Cluster events and cluster operations of HyperPod continuous provisioning.

The records behind SageMaker ``ListClusterEvents`` / ``DescribeClusterEvent`` and
``ListClusterOperations`` / ``DescribeClusterOperation`` (botocore 1.44 shapes ``ClusterEventSummary``,
``ClusterEventDetail``, ``ClusterOperationSummary``, ``ClusterOperationScalingDetails``), with their
filtering, sorting and paging, and the EventBridge detail of "SageMaker HyperPod Cluster Event"
(``{"EventDetails": <ClusterEventDetail, EventTime in epoch milliseconds>}`` as in the AWS
"SageMaker HyperPod cluster events reference").
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

from instantstart_sandbox.aws.protocol import AwsError

CLUSTER_EVENT_DETAIL_TYPE = "SageMaker HyperPod Cluster Event"
DEFAULT_MAX_RESULTS = 10
"""Page size when a request has no MaxResults (AWS documents none; a small page makes callers page)."""

_SEQ = itertools.count()


@dataclass
class ClusterEvent:
    """One cluster event (``ClusterEventDetail``)."""

    cluster_arn: str
    cluster_name: str
    resource_type: str  # Cluster | InstanceGroup | Instance
    level: str  # Info | Warn | Error
    description: str
    time: float  # epoch seconds (simulated)
    group: str | None = None
    instance_id: str | None = None
    operation_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # EventMetadata: {"Instance": {...}} ...
    event_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    seq: int = field(default_factory=lambda: next(_SEQ))

    def summary(self) -> dict[str, Any]:
        """``ClusterEventSummary`` (timestamps in epoch seconds; the protocol layer serializes them)."""
        out: dict[str, Any] = {
            "EventId": self.event_id,
            "ClusterArn": self.cluster_arn,
            "ClusterName": self.cluster_name,
            "ResourceType": self.resource_type,
            "EventTime": self.time,
            "Description": self.description,
            "EventLevel": self.level,
        }
        if self.group:
            out["InstanceGroupName"] = self.group
        if self.instance_id:
            out["InstanceId"] = self.instance_id
        if self.operation_id:
            out["OperationId"] = self.operation_id
        return out

    def detail(self) -> dict[str, Any]:
        """``ClusterEventDetail``: the summary plus ``EventDetails.EventMetadata``."""
        out = self.summary()
        if self.metadata:
            out["EventDetails"] = {"EventMetadata": self.metadata}
        return out

    def eventbridge_detail(self) -> dict[str, Any]:
        """The ``detail`` of the EventBridge event: ``{"EventDetails": detail}``, EventTime in epoch ms."""
        detail = self.detail()
        detail["EventTime"] = int(self.time * 1000)
        return {"EventDetails": detail}

    def concerns_node(self, node_id: str) -> bool:
        """Whether the event is about the instance ``node_id`` (instance id or NodeLogicalId)."""
        logical = (self.metadata.get("Instance") or {}).get("NodeLogicalId")
        return node_id in (self.instance_id, logical)


@dataclass
class ScalingDetail:
    """The part of a scaling operation that concerns one instance group."""

    group: str
    original: dict[str, int]
    desired: dict[str, int]
    status: str = "InProgress"  # InProgress | Superseded | Done

    def to_api(self) -> dict[str, Any]:
        """``ClusterOperationScalingDetails``."""
        return {
            "InstanceGroupName": self.group,
            "Status": self.status,
            "Original": dict(self.original),
            "Desired": dict(self.desired),
        }


@dataclass
class ClusterOperation:
    """A cluster operation: ``Scaling`` (initial provisioning or a change of instance counts) or
    ``DeepHealthCheck`` (StartClusterHealthCheck: ``health_checks`` are its DeepHealthCheckConfigurations
    and ``state`` its status)."""

    cluster_arn: str
    created_at: float
    details: list[ScalingDetail]
    type: str = "Scaling"
    operation_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    health_checks: list[dict[str, Any]] = field(default_factory=list)
    state: str | None = None  # set for operations without scaling details (InProgress | Done)

    @property
    def status(self) -> str:
        """InProgress while a group is still scaling; Superseded when every group was superseded; else Done."""
        if self.state is not None:
            return self.state
        states = {d.status for d in self.details}
        if "InProgress" in states:
            return "InProgress"
        if states == {"Superseded"}:
            return "Superseded"
        return "Done"

    def summary(self) -> dict[str, Any]:
        """``ClusterOperationSummary``."""
        return {
            "OperationId": self.operation_id,
            "ClusterArn": self.cluster_arn,
            "Type": self.type,
            "Status": self.status,
            "CreationTime": self.created_at,
        }

    def describe(self) -> dict[str, Any]:
        """``DescribeClusterOperation``'s answer."""
        if self.type == "DeepHealthCheck":
            return {**self.summary(), "DeepHealthCheckDetails": [dict(c) for c in self.health_checks]}
        return {**self.summary(), "ScalingDetails": [d.to_api() for d in self.details]}


def page(items: list[Any], params: dict[str, Any]) -> tuple[list[Any], str | None]:
    """One page of ``items`` for ``MaxResults`` (1-100, default :data:`DEFAULT_MAX_RESULTS`) / ``NextToken``.

    Raises:
        AwsError: ValidationException for a MaxResults outside 1-100 or a NextToken this API did not issue.
    """
    size = int(params.get("MaxResults") or DEFAULT_MAX_RESULTS)
    if not 1 <= size <= 100:
        raise AwsError("ValidationException", f"MaxResults {size} must be between 1 and 100")
    token = params.get("NextToken")
    try:
        start = int(token) if token else 0
    except ValueError as error:
        raise AwsError("ValidationException", f"Invalid NextToken: {token}") from error
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def list_events(events: list[ClusterEvent], params: dict[str, Any]) -> dict[str, Any]:
    """``ListClusterEvents``: filter by InstanceGroupName, NodeId, EventTimeAfter/Before (exclusive),
    ResourceType and OperationId; sort by EventTime (SortOrder, default Descending: newest first); page."""
    found = list(events)
    if params.get("InstanceGroupName"):
        found = [e for e in found if e.group == params["InstanceGroupName"]]
    if params.get("NodeId"):
        found = [e for e in found if e.concerns_node(params["NodeId"])]
    if params.get("EventTimeAfter") is not None:
        found = [e for e in found if e.time > float(params["EventTimeAfter"])]
    if params.get("EventTimeBefore") is not None:
        found = [e for e in found if e.time < float(params["EventTimeBefore"])]
    if params.get("ResourceType"):
        found = [e for e in found if e.resource_type == params["ResourceType"]]
    if params.get("OperationId"):
        found = [e for e in found if e.operation_id == params["OperationId"]]
    found.sort(key=lambda e: (e.time, e.seq), reverse=params.get("SortOrder", "Descending") == "Descending")
    items, token = page([e.summary() for e in found], params)
    return {"Events": items, **({"NextToken": token} if token else {})}


def list_operations(operations: list[ClusterOperation], params: dict[str, Any]) -> dict[str, Any]:
    """``ListClusterOperations``: filter by Status, Type, CreationTimeAfter/Before; sort by CreationTime
    (SortOrder, default Descending); page."""
    found = list(operations)
    if params.get("Status"):
        found = [o for o in found if o.status == params["Status"]]
    if params.get("Type"):
        found = [o for o in found if o.type == params["Type"]]
    if params.get("CreationTimeAfter") is not None:
        found = [o for o in found if o.created_at > float(params["CreationTimeAfter"])]
    if params.get("CreationTimeBefore") is not None:
        found = [o for o in found if o.created_at < float(params["CreationTimeBefore"])]
    order = {id(o): i for i, o in enumerate(operations)}
    found.sort(
        key=lambda o: (o.created_at, order[id(o)]), reverse=params.get("SortOrder", "Descending") == "Descending"
    )
    items, token = page([o.summary() for o in found], params)
    return {"ClusterOperationSummaries": items, **({"NextToken": token} if token else {})}
