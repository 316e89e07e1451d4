"""The nodes of a cluster and the day-2 node actions: list, reboot, replace, delete.

Nodes are read from SageMaker ``ListClusterNodes``
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ListClusterNodes.html) of ``hp-cluster-<tag>``,
joined with the Kubernetes node-health label the control plane last observed (the cluster record's ``nodes``,
written by the verify stage and the node-health reconciler). The actions call SageMaker's
``BatchRebootClusterNodes``, ``BatchReplaceClusterNodes`` and ``BatchDeleteClusterNodes`` after checking that
every id is a node of this cluster, so a foreign or mistyped id is refused before anything is written.

Each action is a day-2 operation (``REBOOT_CLUSTER_NODES``, ``REPLACE_CLUSTER_NODES``, ``DELETE_CLUSTER_NODES``)
of the update workflow (:mod:`instantstart.clusters.changes`): the API side (:func:`act_on_nodes`) checks the
request and starts it (202 + operation, one operation per cluster at a time); the workflow makes the batch call
once (:func:`apply_node_action`), records HyperPod's per-node answer on the operation, and waits
(:func:`check_node_action`) until the nodes are back (reboot), replaced (replace) or gone (delete). Those
workflow steps are :mod:`instantstart.clusters.node_action_steps`; its public names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, page_tokens, records, service
from instantstart.clusters.node_action_steps import (
    ACTIONS,
    CHANGES,
    HEALTH_LABEL,
    OPERATION_TYPES,
    apply_node_action,
    check_node_action,
    failures_of,
    listed_nodes,
    record_result,
)
from instantstart.clusters.records import live_cluster
from instantstart.errors import Conflict, InvalidRequest, UpstreamUnavailable, ValidationFailed
from instantstart.models.cluster import NodeView
from instantstart.models.common import ClusterStatus, iso
from instantstart.models.nodes import (
    NODES_MAX_PAGE_SIZE,
    ClusterNodeList,
    ClusterNodeView,
    NodeAction,
    NodeActionChange,
)
from instantstart.models.operation import OperationView
from instantstart.models.records import ClusterRecord
from instantstart.runtime import Runtime

TOKEN_PURPOSE = "cluster-nodes"
"""Kind of the API's ``nextToken`` of the node listing (:mod:`instantstart.clusters.page_tokens`)."""
MAX_SAGEMAKER_CALLS = 5
"""``ListClusterNodes`` calls one filtered page may make; past that the page is returned short with a token."""
WRITABLE = (ClusterStatus.READY, ClusterStatus.DEGRADED)
"""Cluster statuses in which day-2 actions are accepted (no control-plane operation runs on the cluster)."""

__all__ = [
    "ACTIONS",
    "CHANGES",
    "HEALTH_LABEL",
    "MAX_SAGEMAKER_CALLS",
    "OPERATION_TYPES",
    "TOKEN_PURPOSE",
    "WRITABLE",
    "NoHyperPodCluster",
    "act_on_nodes",
    "all_nodes",
    "apply_node_action",
    "call_sagemaker",
    "check_node_action",
    "check_own_nodes",
    "failures_of",
    "list_cluster_nodes",
    "listed_nodes",
    "node_view",
    "record_result",
    "writable_cluster",
]


class NoHyperPodCluster(Exception):
    """SageMaker has no HyperPod cluster of that name (not created yet, or already deleted)."""


def call_sagemaker(rt: Runtime, operation: str, method: str, **params: Any) -> dict[str, Any]:
    """One SageMaker call of the day-2 routes, its errors mapped to the API's.

    Args:
        rt: the runtime (its SageMaker client).
        operation: the AWS operation name, for messages (``BatchRebootClusterNodes``).
        method: the boto3 method (``batch_reboot_cluster_nodes``).
        params: the request.

    Raises:
        NoHyperPodCluster: ``ResourceNotFound`` (the HyperPod cluster does not exist).
        Conflict: ``ValidationException`` or ``ConflictException``: HyperPod refused the request in the cluster's
            current state (code ``HyperPodRefused``, SageMaker's code and message verbatim).
        UpstreamUnavailable: any other error (throttling after retries, access denied, ...), verbatim.
    """
    try:
        return dict(getattr(rt.client("sagemaker"), method)(**params))
    except (ClientError, BotoCoreError) as exc:
        code = error_code(exc)
        if code == "ResourceNotFound":
            raise NoHyperPodCluster(params.get("ClusterName")) from exc
        if code in ("ValidationException", "ConflictException"):
            raise Conflict(
                f"SageMaker {operation} refused the request ({code}: {error_message(exc)})",
                code="HyperPodRefused",
                details=[{"field": "clusterTag"}],
            ) from exc
        raise UpstreamUnavailable(
            f"SageMaker {operation} failed ({code or type(exc).__name__}: {error_message(exc)}); retry later"
        ) from exc


def writable_cluster(rt: Runtime, tag: str) -> ClusterRecord:
    """The cluster of ``tag`` when it accepts a day-2 action: READY or DEGRADED.

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady`` naming the cluster's status (CREATING, FAILED, DELETING: a control-plane
            operation runs, or the cluster has no usable HyperPod cluster).
    """
    cluster = live_cluster(rt, tag)
    if cluster.status not in WRITABLE:
        raise Conflict(
            f"cluster '{tag}' is {cluster.status.value}; node actions, software updates and health checks need a "
            f"READY or DEGRADED cluster",
            code="ClusterNotReady",
            details=[{"field": "clusterTag", "status": cluster.status.value}],
        )
    return cluster


def all_nodes(rt: Runtime, name: str) -> list[dict[str, Any]]:
    """Every ``ClusterNodeSummary`` of HyperPod cluster ``name`` (all pages of ``ListClusterNodes``).

    Raises:
        NoHyperPodCluster: the HyperPod cluster does not exist.
        UpstreamUnavailable: SageMaker failed.
    """
    found: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        params: dict[str, Any] = {"ClusterName": name, "MaxResults": NODES_MAX_PAGE_SIZE}
        if token:
            params["NextToken"] = token
        out = call_sagemaker(rt, "ListClusterNodes", "list_cluster_nodes", **params)
        found += list(out.get("ClusterNodeSummaries") or [])
        token = out.get("NextToken") or None
        if not token:
            return found


def check_own_nodes(node_ids: list[str], cluster_node_ids: Iterable[str], field: str = "nodeIds") -> None:
    """Refuse ids that are not nodes of the cluster, before anything is written.

    Args:
        node_ids: the ids of the request, in order.
        cluster_node_ids: the instance ids SageMaker lists for the cluster.
        field: the request field, for the details (``nodeIds`` -> ``nodeIds[2]``).

    Raises:
        ValidationFailed: one detail per foreign or unknown id, naming ``<field>[i]``; the message says that
            nothing was done.
    """
    known = set(cluster_node_ids)
    foreign = [(i, node_id) for i, node_id in enumerate(node_ids) if node_id not in known]
    if not foreign:
        return
    details = [
        {
            "field": f"{field}[{i}]",
            "message": f"{field}[{i}]: {node_id} is not a node of this cluster (GET /clusters/{{clusterTag}}/nodes "
            "lists them)",
            "type": "node_not_in_cluster",
        }
        for i, node_id in foreign
    ]
    names = ", ".join(f"{field}[{i}] ({node_id})" for i, node_id in foreign)
    raise ValidationFailed(f"invalid request: {names} not a node of this cluster; nothing was done", details=details)


def _when(value: Any) -> str | None:
    return iso(value) if isinstance(value, datetime) else (str(value) if value is not None else None)


def node_view(summary: Mapping[str, Any], observed: Mapping[str, NodeView]) -> ClusterNodeView:
    """A SageMaker ``ClusterNodeSummary`` with its Kubernetes node name and last observed health label.

    Args:
        summary: the summary, as boto3 returns it.
        observed: the cluster record's node observations by instance id.
    """
    instance_id = str(summary["InstanceId"])
    seen = observed.get(instance_id)
    status = summary.get("InstanceStatus") or {}
    return ClusterNodeView(
        instance_id=instance_id,
        node_logical_id=summary.get("NodeLogicalId") or None,
        instance_group_name=str(summary["InstanceGroupName"]),
        instance_type=str(summary["InstanceType"]),
        instance_status=str(status.get("Status") or "NotFound"),
        instance_status_message=status.get("Message") or None,
        launch_time=_when(summary.get("LaunchTime")),
        kubernetes_node_name=f"hyperpod-{instance_id}",
        health_status=seen.health_status if seen else None,
        health_status_reason=seen.health_status_reason if seen else None,
    )


def list_cluster_nodes(
    rt: Runtime,
    tag: str,
    *,
    max_results: int,
    next_token: str | None = None,
    instance_group_name: str | None = None,
) -> ClusterNodeList:
    """A page of the nodes of cluster ``tag``, oldest launch first.

    SageMaker filters by a substring of the group name (``InstanceGroupNameContains``); the exact name is
    matched here, so a filtered page may be short with a ``nextToken``.

    Args:
        rt: the runtime.
        tag: cluster tag (nodes of ``hp-cluster-<tag>``).
        max_results: most nodes on the page (1-100).
        next_token: the previous page's ``nextToken`` of the same listing.
        instance_group_name: only nodes of this group.

    Raises:
        NotFound: ``ClusterNotFound``, no live cluster.
        InvalidRequest: a ``nextToken`` not issued by this API for this listing.
        UpstreamUnavailable: SageMaker failed.
    """
    cluster = live_cluster(rt, tag)
    name = records.hyperpod_name(rt, tag)
    fresh_size = NODES_MAX_PAGE_SIZE if instance_group_name else max_results
    listing = {"tag": tag, "generation": cluster.generation, "group": instance_group_name}
    if next_token:
        start = page_tokens.open_token(TOKEN_PURPOSE, next_token, listing, max_page_size=NODES_MAX_PAGE_SIZE)
    else:
        start = page_tokens.Position(None, fresh_size)

    def fetch(token: str | None, size: int) -> tuple[list[dict[str, Any]], str | None]:
        params: dict[str, Any] = {
            "ClusterName": name,
            "SortBy": "CREATION_TIME",
            "SortOrder": "Ascending",
            "MaxResults": size,
        }
        if instance_group_name:
            params["InstanceGroupNameContains"] = instance_group_name
        if token:
            params["NextToken"] = token
        try:
            out = call_sagemaker(rt, "ListClusterNodes", "list_cluster_nodes", **params)
        except Conflict as exc:  # a ValidationException on our NextToken: SageMaker's token expired
            if token:
                raise InvalidRequest(
                    f"nextToken is no longer valid ({exc.message}); list again without it",
                    details=[{"field": "nextToken"}],
                ) from exc
            raise UpstreamUnavailable(exc.message) from exc
        return list(out.get("ClusterNodeSummaries") or []), out.get("NextToken") or None

    try:
        raw, following = page_tokens.scan(
            fetch,
            start,
            max_results=max_results,
            fresh_size=fresh_size,
            item_id=lambda node: str(node.get("InstanceId")),
            keep=lambda node: instance_group_name is None or node.get("InstanceGroupName") == instance_group_name,
            max_calls=MAX_SAGEMAKER_CALLS,
        )
    except NoHyperPodCluster:
        raw, following = [], None
    observed = {n.instance_id: n for n in cluster.nodes if n.instance_id}
    return ClusterNodeList(
        cluster_tag=tag,
        hyper_pod_cluster_name=name,
        nodes=[node_view(n, observed) for n in raw],
        next_token=page_tokens.seal(TOKEN_PURPOSE, listing, following) if following else None,
    )


# -- API side -------------------------------------------------------------------------------------
def act_on_nodes(rt: Runtime, tag: str, action: NodeAction, node_ids: list[str]) -> OperationView:
    """Start rebooting, replacing or deleting nodes of cluster ``tag``: a day-2 operation, after checking ownership.

    Every id must be a node SageMaker lists for ``hp-cluster-<tag>`` (``ListClusterNodes``); otherwise nothing is
    written. The operation (``REBOOT_CLUSTER_NODES`` | ``REPLACE_CLUSTER_NODES`` | ``DELETE_CLUSTER_NODES``) runs
    the update workflow: :func:`apply_node_action` makes the batch call, :func:`check_node_action` waits.

    Returns:
        The PENDING operation (its ``result.nodeIds`` are the ids asked for).

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady`` (not READY/DEGRADED, names the status), ``OperationInProgress`` (another
            operation runs: names it), ``HyperPodClusterNotFound``.
        ValidationFailed: an id is not a node of this cluster (names ``nodeIds[i]``); nothing was done.
        UpstreamUnavailable: SageMaker failed.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    name = records.hyperpod_name(rt, tag)
    try:
        check_own_nodes(node_ids, (str(n["InstanceId"]) for n in all_nodes(rt, name)))
    except NoHyperPodCluster as exc:
        raise Conflict(
            f"HyperPod cluster {name} does not exist; nothing was done",
            code="HyperPodClusterNotFound",
            details=[{"field": "clusterTag"}],
        ) from exc
    return changes.start_change(
        rt, cluster, OPERATION_TYPES[action], NodeActionChange(action=action, node_ids=node_ids)
    )
