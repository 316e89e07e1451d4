"""The nodes of a cluster and the day-2 node actions (``/clusters/{clusterTag}/nodes*``).

Nodes are SageMaker's (``ListClusterNodes``): one HyperPod instance each, with its Kubernetes node name and
the node-health label as last observed by the control plane. Reboot, replace and delete are SageMaker's
``BatchRebootClusterNodes``, ``BatchReplaceClusterNodes`` and ``BatchDeleteClusterNodes``; their limits
come from the botocore service model.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, field_validator

from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule

NODES_DEFAULT_PAGE_SIZE = 20
"""Nodes per page when ``maxResults`` is not given."""
NODES_MAX_PAGE_SIZE = 100
"""Largest ``maxResults`` (SageMaker ``ListClusterNodes`` allows 1-100 per call)."""
NODES_TOKEN_MAX_LENGTH = 16384
"""Longest ``nextToken`` accepted (it wraps SageMaker's token, up to 8192 characters)."""

NODE_ID_PATTERN = r"^i-[a-f0-9]{8}(?:[a-f0-9]{9})?$"
"""An EC2 instance id (SageMaker ``ClusterNodeId``)."""
NODE_ID_RULE = "an EC2 instance id: 'i-' then 8 or 17 lowercase hexadecimal digits (e.g. i-0123456789abcdef0)"
"""The node id pattern in words."""

MAX_REBOOT_REPLACE_NODE_IDS = 25
"""``NodeIds`` limit of ``BatchRebootClusterNodes`` and ``BatchReplaceClusterNodes`` (botocore model)."""
MAX_DELETE_NODE_IDS = 3000
"""``NodeIds`` limit of ``BatchDeleteClusterNodes`` (botocore model ``ClusterNodeIds``)."""

NodeId = Annotated[
    str,
    Field(pattern=NODE_ID_PATTERN, min_length=10, max_length=19, json_schema_extra=pattern_rule(NODE_ID_RULE)),
]
"""One node id of a request."""


def unique_node_ids(ids: list[str]) -> list[str]:
    """``ids`` unchanged when each appears once.

    Raises:
        ValueError: an id is repeated (the message names it).
    """
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"each node id may appear once; repeated: {', '.join(repeated)}")
    return ids


class NodeAction(StrEnum):
    """What a node action request did (the SageMaker batch operation it called)."""

    REBOOT = "Reboot"
    REPLACE = "Replace"
    DELETE = "Delete"


class NodeActionChange(ApiModel):
    """``change`` of a REBOOT_, REPLACE_ or DELETE_CLUSTER_NODES operation (stored camelCase)."""

    action: NodeAction
    node_ids: list[str] = Field(description="The instance ids the request named.")


class ClusterNodeView(ApiModel):
    """One node of a cluster: a SageMaker ``ClusterNodeSummary`` plus its Kubernetes node and health label."""

    instance_id: str = Field(description="EC2 instance id (SageMaker's NodeId).", examples=["i-0123456789abcdef0"])
    node_logical_id: str | None = Field(
        default=None,
        description="SageMaker's logical id of the node, kept when the instance is replaced; null when SageMaker "
        "gives none.",
        examples=["3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c"],
    )
    instance_group_name: str = Field(description="Instance group of the node.", examples=["accel"])
    instance_type: str = Field(description="HyperPod instance type.", examples=["ml.g6.4xlarge"])
    instance_status: str = Field(
        description="SageMaker's instance status: Running, Failure, Pending, ShuttingDown, SystemUpdating, "
        "DeepHealthCheckInProgress or NotFound.",
        examples=["Running"],
    )
    instance_status_message: str | None = Field(
        default=None, description="SageMaker's message about the status, verbatim; null when empty.", examples=[None]
    )
    launch_time: str | None = Field(
        default=None, description="When the instance was launched (ISO-8601 UTC).", examples=["2026-11-29T17:04:05Z"]
    )
    kubernetes_node_name: str = Field(
        description="The node's Kubernetes name (HyperPod names nodes hyperpod-<instance id>).",
        examples=["hyperpod-i-0123456789abcdef0"],
    )
    health_status: str | None = Field(
        default=None,
        description="The node's sagemaker.amazonaws.com/node-health-status label as last observed (Schedulable, "
        "Unschedulable, UnschedulablePendingReboot, UnschedulablePendingReplacement); null when never observed.",
        examples=["Schedulable"],
    )
    health_status_reason: str | None = Field(
        default=None,
        description="Reason of the last HyperPod node health finding (Node Health Event); null when none.",
        examples=[None],
    )


class ClusterNodeList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/nodes``."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    hyper_pod_cluster_name: str = Field(description="The HyperPod cluster of the nodes.", examples=["hp-cluster-demo"])
    nodes: list[ClusterNodeView] = Field(
        description="One page of nodes, oldest launch first. Empty while the HyperPod cluster does not exist."
    )
    next_token: str | None = Field(
        default=None,
        description="Pass as nextToken (with the same instanceGroupName) to get the next page; null on the last "
        "page. With instanceGroupName a page may hold fewer than maxResults nodes while nextToken is set.",
    )


class RebootOrReplaceNodesRequest(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/nodes/reboot`` and ``/nodes/replace``."""

    node_ids: list[NodeId] = Field(
        min_length=1,
        max_length=MAX_REBOOT_REPLACE_NODE_IDS,
        description=f"EC2 instance ids of nodes of this cluster, 1-{MAX_REBOOT_REPLACE_NODE_IDS}, each once "
        "(GET /clusters/{clusterTag}/nodes lists them).",
        examples=[["i-0123456789abcdef0"]],
    )

    @field_validator("node_ids")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return unique_node_ids(value)


class DeleteNodesRequest(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/nodes/delete``."""

    node_ids: list[NodeId] = Field(
        min_length=1,
        max_length=MAX_DELETE_NODE_IDS,
        description=f"EC2 instance ids of nodes of this cluster, 1-{MAX_DELETE_NODE_IDS}, each once.",
        examples=[["i-0123456789abcdef0"]],
    )

    @field_validator("node_ids")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return unique_node_ids(value)


class NodeFailure(ApiModel):
    """A node SageMaker did not act on, with its error code and message verbatim."""

    node_id: str = Field(description="EC2 instance id.", examples=["i-0123456789abcdef0"])
    code: str = Field(
        description="SageMaker's error code (e.g. InstanceIdNotFound, InvalidInstanceStatus, InstanceIdInUse, "
        "NodeIdNotFound, InvalidNodeStatus, NodeIdInUse).",
        examples=["InstanceIdInUse"],
    )
    message: str = Field(description="SageMaker's message, verbatim.", examples=["Node i-0123456789abcdef0 is busy"])
