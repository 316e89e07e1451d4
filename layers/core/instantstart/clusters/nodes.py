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
(:func:`check_node_action`) until the nodes are back (reboot), replaced (replace) or gone (delete).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.capacity import groups as group_rules
from instantstart.clusters import changes, page_tokens, records, service
from instantstart.clusters.records import live_cluster
from instantstart.errors import Conflict, InvalidRequest, StageFailed, UpstreamUnavailable, ValidationFailed
from instantstart.models.cluster import NodeView
from instantstart.models.common import ClusterStatus, OperationType, iso
from instantstart.models.nodes import (
    NODES_MAX_PAGE_SIZE,
    ClusterNodeList,
    ClusterNodeView,
    NodeAction,
    NodeActionChange,
    NodeFailure,
)
from instantstart.models.operation import OperationProgress, OperationView
from instantstart.models.records import ClusterRecord, OperationRecord
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime

TOKEN_PURPOSE = "cluster-nodes"
"""Kind of the API's ``nextToken`` of the node listing (:mod:`instantstart.clusters.page_tokens`)."""
MAX_SAGEMAKER_CALLS = 5
"""``ListClusterNodes`` calls one filtered page may make; past that the page is returned short with a token."""
WRITABLE = (ClusterStatus.READY, ClusterStatus.DEGRADED)
"""Cluster statuses in which day-2 actions are accepted (no control-plane operation runs on the cluster)."""

_BATCH_CALLS = {
    NodeAction.REBOOT: ("BatchRebootClusterNodes", "batch_reboot_cluster_nodes"),
    NodeAction.REPLACE: ("BatchReplaceClusterNodes", "batch_replace_cluster_nodes"),
    NodeAction.DELETE: ("BatchDeleteClusterNodes", "batch_delete_cluster_nodes"),
}
OPERATION_TYPES = {
    NodeAction.REBOOT: OperationType.REBOOT_CLUSTER_NODES,
    NodeAction.REPLACE: OperationType.REPLACE_CLUSTER_NODES,
    NodeAction.DELETE: OperationType.DELETE_CLUSTER_NODES,
}
"""The day-2 operation type of each node action."""
ACTIONS = {op_type: action for action, op_type in OPERATION_TYPES.items()}
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
"""The Kubernetes label HyperPod's health monitoring puts on every node (``Schedulable`` when usable)."""


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


# -- workflow steps -------------------------------------------------------------------------------
def record_result(rt: Runtime, op: OperationRecord, update: OperationProgress) -> OperationProgress:
    """Merge the fields set on ``update`` into the operation's ``result`` and write it (only when it changes).

    Returns the new result (``op.result`` is updated too). The :class:`~instantstart.models.operation.ChangeResult`
    fields are shown by the API; the others are the handler's bookkeeping. Writes DynamoDB (``UpdateItem``).

    Raises:
        ConditionFailed: the operation already ended.
    """
    current = op.result or OperationProgress()
    merged = current.merged(update)
    if merged != current:
        op.result = rt.store.record_operation_result(op.operation_id, merged, records.now()).result
    return merged


def failures_of(out: Mapping[str, Any]) -> list[NodeFailure]:
    """``Failed`` (and ``FailedNodeLogicalIds``) of a batch answer as ``{node_id, code, message}``, verbatim.

    Reboot and replace name the code ``ErrorCode``, delete ``Code``.
    """
    found = list(out.get("Failed") or []) + list(out.get("FailedNodeLogicalIds") or [])
    return [
        NodeFailure(
            node_id=str(f.get("NodeId") or f.get("NodeLogicalId")),
            code=str(f.get("ErrorCode") or f.get("Code") or "Unknown"),
            message=str(f.get("Message") or ""),
        )
        for f in found
    ]


def listed_nodes(sm: Any, name: str) -> dict[str, dict[str, Any]]:
    """Every ``ClusterNodeSummary`` of HyperPod cluster ``name`` by instance id (all pages of ``ListClusterNodes``).

    AWS errors propagate (the workflow names them by their code).
    """
    found: dict[str, dict[str, Any]] = {}
    params: dict[str, Any] = {"ClusterName": name, "MaxResults": NODES_MAX_PAGE_SIZE}
    while True:
        out = sm.list_cluster_nodes(**params)
        for node in out.get("ClusterNodeSummaries") or []:
            found[str(node["InstanceId"])] = dict(node)
        if not out.get("NextToken"):
            return found
        params["NextToken"] = out["NextToken"]


_ACTED_BEFORE = {
    NodeAction.REBOOT: ("InstanceIdInUse", "InvalidInstanceStatus", "NodeIdInUse", "InvalidNodeStatus"),
    NodeAction.REPLACE: (
        "InstanceIdInUse",
        "InvalidInstanceStatus",
        "NodeIdInUse",
        "InvalidNodeStatus",
        "InstanceIdNotFound",
        "NodeIdNotFound",
    ),
    NodeAction.DELETE: ("NodeIdNotFound", "InstanceIdNotFound"),
}
"""Per-node codes a repeated batch call answers for nodes an earlier, unrecorded call already acted on."""


def _describe(sm: Any, name: str) -> dict[str, Any]:
    found = dict(sm.describe_cluster(ClusterName=name))
    if found.get("ClusterStatus") == "Failed":
        raise StageFailed("HyperPodClusterFailed", str(found.get("FailureMessage") or f"{name} is Failed"))
    return found


def _fail_if_all_failed(result: OperationProgress, operation: str) -> None:
    if not result.successful and result.failed:
        first = result.failed[0]
        raise StageFailed(first.code, first.message)
    if not result.successful:
        raise StageFailed("NoNodeAccepted", f"{operation} accepted none of the nodes")


def apply_node_action(rt: Runtime, p: StepPayload) -> StepResult:
    """Make the operation's batch call once and record HyperPod's per-node answer on the operation.

    ``BatchRebootClusterNodes`` / ``BatchReplaceClusterNodes`` / ``BatchDeleteClusterNodes`` have no ClientToken,
    so the step records that it is calling (and, for a delete, each node's group and the groups' targets) before
    the call and the answer after it. A redelivered task that finds the answer recorded calls nothing; one that
    finds only the mark calls again and counts the per-node "in use" / "not found" refusals of nodes the earlier
    call already acted on (:data:`_ACTED_BEFORE`) as accepted.

    Raises:
        StageFailed: HyperPod refused every node (the first node's code and message verbatim); the HyperPod cluster
            is Failed. AWS errors leave named by their code (``clusters.steps``).
    """
    op, change = changes.operation_change(rt, p, NodeActionChange)
    action = ACTIONS[op.type]
    operation, method = _BATCH_CALLS[action]
    node_ids = list(change.node_ids)
    result = op.result or OperationProgress()
    if result.successful is not None:
        _fail_if_all_failed(result, operation)
        return StepResult(status=f"{operation} already called")
    sm = rt.client("sagemaker")
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    retried = bool(result.calling)
    if not retried:
        listed = listed_nodes(sm, name)
        groups_of = {i: str(listed[i]["InstanceGroupName"]) for i in node_ids if i in listed}
        found = _describe(sm, name)
        targets = {str(g["InstanceGroupName"]): int(g.get("TargetCount") or 0) for g in found["InstanceGroups"]}
        result = record_result(
            rt,
            op,
            OperationProgress(
                node_ids=node_ids,
                calling=True,
                groups_of=groups_of,
                targets_before={g: targets[g] for g in set(groups_of.values()) if g in targets},
            ),
        )
    out = getattr(sm, method)(ClusterName=name, NodeIds=node_ids)
    successful = [str(i) for i in out.get("Successful") or []]
    failed = failures_of(out)
    if retried:
        acted = [f for f in failed if f.code in _ACTED_BEFORE[action]]
        successful += [f.node_id for f in acted]
        failed = [f for f in failed if f not in acted]
    result = record_result(rt, op, OperationProgress(successful=successful, failed=failed))
    _fail_if_all_failed(result, operation)
    return StepResult(status=f"{operation}: {len(successful)} accepted, {len(failed)} refused")


def _kube_node(dyn: Any, instance_id: str) -> tuple[bool, str | None, bool] | None:
    """``(Ready, health label, spec.unschedulable)`` of the node's Kubernetes object, or None when it has none."""
    from instantstart.kube.client import get

    node = get(dyn, "v1", "Node", f"hyperpod-{instance_id}")
    if node is None:
        return None
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    labels = (node.get("metadata") or {}).get("labels") or {}
    return ready, labels.get(HEALTH_LABEL), bool((node.get("spec") or {}).get("unschedulable"))


def _status_of(node: Mapping[str, Any]) -> tuple[str, str]:
    status = node.get("InstanceStatus") or {}
    return str(status.get("Status") or "NotFound"), str(status.get("Message") or "")


def _check_reboot(rt: Runtime, p: StepPayload, op: OperationRecord, nodes: dict[str, dict[str, Any]]) -> list[str]:
    """What still keeps the rebooted nodes from being back: Running, Kubernetes Ready and ``Schedulable``.

    AWS does not document how soon after ``BatchRebootClusterNodes`` the node leaves Running, so a node that
    still looks Running and Ready is not taken as rebooted until it was seen rebooting once (not Running, a
    status message, NotReady, not ``Schedulable`` or cordoned): the harsher reading. A node that disappears
    (HyperPod replaced it) or reports ``Failure`` fails the operation with SageMaker's words.
    """
    from instantstart.kube.client import connect

    result = op.result or OperationProgress()
    seen = set(result.rebooting or [])
    dyn = connect(records.eks_name(rt, p.cluster_tag, p.generation), rt.region)
    waiting: list[str] = []
    for node_id in result.successful or []:
        node = nodes.get(node_id)
        if node is None:
            raise StageFailed(
                "NodeNotFound",
                f"node {node_id} is no longer a node of "
                f"{records.hyperpod_name(rt, p.cluster_tag, p.generation)} (HyperPod "
                "replaced or removed it during the reboot)",
            )
        status, message = _status_of(node)
        if status == "Failure":
            raise StageFailed("InstanceFailure", message or f"node {node_id} is in Failure")
        kube = _kube_node(dyn, node_id)
        ready, label, cordoned = kube if kube is not None else (False, None, False)
        if status == "Running" and not message and ready and label == "Schedulable" and not cordoned:
            if node_id not in seen:
                waiting.append(f"{node_id} not seen rebooting yet")
            continue
        seen.add(node_id)
        waiting.append(
            f"{node_id} {status}{f' ({message})' if message else ''}, Kubernetes "
            f"{'Ready' if ready else 'NotReady'}, {label or 'no health label'}"
        )
    record_result(rt, op, OperationProgress(rebooting=sorted(seen)))
    return waiting


def _check_replace(rt: Runtime, p: StepPayload, op: OperationRecord, nodes: dict[str, dict[str, Any]]) -> list[str]:
    """What still keeps a replacement from done: the old ids still listed, or a group not back at its target with
    Running nodes (``DescribeCluster`` ``TargetCount``, the group InService)."""
    result = op.result or OperationProgress()
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    waiting = [f"{i} still listed ({_status_of(nodes[i])[0]})" for i in result.successful or [] if i in nodes]
    found = _describe(rt.client("sagemaker"), name)
    groups_of = result.groups_of or {}
    for group_name in sorted({groups_of[i] for i in result.successful or [] if i in groups_of}):
        group = group_rules.find_group(found.get("InstanceGroups", []), group_name)
        if group is None:
            raise StageFailed("InstanceGroupNotFound", f"instance group {group_name} no longer exists in {name}")
        if group.get("Status") == "Failed":
            raise StageFailed("InstanceGroupFailed", str(found.get("FailureMessage") or f"{group_name} is Failed"))
        target = int(group.get("TargetCount") or 0)
        running = [
            n for n in nodes.values() if n.get("InstanceGroupName") == group_name and _status_of(n) == ("Running", "")
        ]
        if group.get("Status") != "InService" or len(running) < target:
            waiting.append(f"{group_name} {group.get('Status')}: {len(running)} of {target} Running")
    return waiting


def _check_delete(rt: Runtime, p: StepPayload, op: OperationRecord, nodes: dict[str, dict[str, Any]]) -> list[str]:
    """What still keeps a delete from done: an id still listed, or a group's target not lowered by its deleted nodes.

    AWS documents that the nodes are deleted; that HyperPod lowers the group's target count with them is the
    reading the sandbox models. Harsher reading: when the ids are gone and a group still targets more than before
    minus its deleted nodes, the step lowers the target itself (UpdateCluster with the group's whole
    specification, once, while the cluster is InService) so HyperPod launches no replacement.
    """
    result = op.result or OperationProgress()
    deleted = list(result.successful or [])
    waiting = [f"{i} still listed ({_status_of(nodes[i])[0]})" for i in deleted if i in nodes]
    ids_gone = not waiting
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    sm = rt.client("sagemaker")
    found = _describe(sm, name)
    groups_of = result.groups_of or {}
    before = result.targets_before or {}
    lowered = list(result.lowered or [])
    for group_name, target_before in sorted(before.items()):
        group = group_rules.find_group(found.get("InstanceGroups", []), group_name)
        if group is None:
            continue  # the group itself was removed: nothing can drift back
        expected = max(0, target_before - sum(1 for i in deleted if groups_of.get(i) == group_name))
        target = int(group.get("TargetCount") or 0)
        if target <= expected:
            continue
        waiting.append(f"{group_name} targets {target}, expected {expected}")
        if ids_gone and group_name not in lowered and found.get("ClusterStatus") == "InService":
            specs = group_rules.specs_after_change(found["InstanceGroups"], group_name, instance_count=expected)
            sm.update_cluster(
                ClusterName=name, InstanceGroups=[s for s in specs if s["InstanceGroupName"] == group_name]
            )
            lowered.append(group_name)
    if lowered != list(result.lowered or []):
        record_result(rt, op, OperationProgress(lowered=lowered))
    return waiting


def check_node_action(rt: Runtime, p: StepPayload) -> PollResult:
    """One round of the wait of a node action (``ListClusterNodes``, ``DescribeCluster``, the Kubernetes nodes).

    Done: reboot, every accepted node Running with its Kubernetes node Ready and ``Schedulable`` again
    (:func:`_check_reboot`); replace, the old ids gone and each group back at its target with Running nodes
    (:func:`_check_replace`); delete, the ids gone and each group's target lowered (:func:`_check_delete`).
    Records what it saw as the operation's ``result.observed``.

    Raises:
        StageFailed: a rebooted node disappeared or failed, a group failed or vanished, the cluster Failed.
    """
    op, _ = changes.operation_change(rt, p, NodeActionChange)
    action = ACTIONS[op.type]
    nodes = listed_nodes(rt.client("sagemaker"), records.hyperpod_name(rt, p.cluster_tag, p.generation))
    check = {NodeAction.REBOOT: _check_reboot, NodeAction.REPLACE: _check_replace, NodeAction.DELETE: _check_delete}
    waiting = check[action](rt, p, op, nodes)
    observed = "; ".join(waiting) if waiting else f"{action.value} done"
    record_result(rt, op, OperationProgress(observed=observed[:1024]))
    return PollResult(done=not waiting, status=observed[:256])


CHANGES = {op_type: changes.ClusterChange(apply=apply_node_action, check=check_node_action) for op_type in ACTIONS}
"""The update workflow's handlers of node actions, by operation type."""
