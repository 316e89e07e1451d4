"""The update workflow's steps of the day-2 node actions: reboot, replace and delete cluster nodes.

:func:`apply_node_action` makes the operation's batch call once (SageMaker ``BatchRebootClusterNodes``,
``BatchReplaceClusterNodes``, ``BatchDeleteClusterNodes``) and records HyperPod's per-node answer on the
operation (:func:`record_result`); :func:`check_node_action` is the event-or-poll wait's check, done when the nodes
are back (reboot), replaced (replace) or gone (delete). :data:`CHANGES` hands them to the update workflow
(:mod:`instantstart.clusters.changes`). The API side that starts these operations is
:mod:`instantstart.clusters.nodes`, from which every public name here is importable too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from instantstart.capacity import groups as group_rules
from instantstart.clusters import changes, records
from instantstart.errors import StageFailed
from instantstart.models.common import OperationType
from instantstart.models.nodes import NODES_MAX_PAGE_SIZE, NodeAction, NodeActionChange, NodeFailure
from instantstart.models.operation import OperationProgress
from instantstart.models.records import OperationRecord
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime

_BATCH_CALLS = {
    NodeAction.REBOOT: ("BatchRebootClusterNodes", "batch_reboot_cluster_nodes"),
    NodeAction.REPLACE: ("BatchReplaceClusterNodes", "batch_replace_cluster_nodes"),
    NodeAction.DELETE: ("BatchDeleteClusterNodes", "batch_delete_cluster_nodes"),
}
"""The AWS operation and boto3 method of each node action's batch call."""
OPERATION_TYPES = {
    NodeAction.REBOOT: OperationType.REBOOT_CLUSTER_NODES,
    NodeAction.REPLACE: OperationType.REPLACE_CLUSTER_NODES,
    NodeAction.DELETE: OperationType.DELETE_CLUSTER_NODES,
}
"""The day-2 operation type of each node action."""
ACTIONS = {op_type: action for action, op_type in OPERATION_TYPES.items()}
"""The node action of each day-2 operation type."""
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
"""The Kubernetes label HyperPod's health monitoring puts on every node (``Schedulable`` when usable)."""


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
