"""The update workflow's steps of the day-2 instance-group changes: add, scale or update, delete a group.

:func:`apply_instance_group_change` applies the operation's change once (SageMaker ``UpdateCluster``, or
``BatchAddClusterNodes`` / ``BatchDeleteClusterNodes`` for counts in continuous mode);
:func:`check_instance_group_change` is the event-or-poll wait's check, done when HyperPod reports the change
(``DescribeCluster``), failing with HyperPod's own error when a launch cannot succeed (:func:`launch_failure`);
:func:`refresh_cluster_record` records the cluster's new shape. :data:`CHANGES` hands them to the update workflow
(:mod:`instantstart.clusters.changes`). The API side that starts these changes is
:mod:`instantstart.clusters.instance_groups`, from which every public name here is importable too.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.capacity import groups as rules
from instantstart.capacity.subnets import ensure_group_subnet
from instantstart.clusters import changes, events_feed, records, waits
from instantstart.clusters.stages import hyperpod, verify
from instantstart.errors import StageFailed
from instantstart.models.cluster import InstanceGroupRequest
from instantstart.models.common import OperationType, StageName, utcnow
from instantstart.models.instance_groups import InstanceGroupChange
from instantstart.models.records import OperationRecord
from instantstart.models.resources import NetworkResources
from instantstart.models.workflow import LoopConfig, PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime

BATCH_ADD_MAX = 50
"""``AddClusterNodeSpecification.IncrementTargetCountBy`` maximum (botocore); larger increases use UpdateCluster."""

BATCH_DELETE_MAX = 3000
"""``BatchDeleteClusterNodes.NodeIds`` maximum per call (botocore model)."""


def _operation(rt: Runtime, p: StepPayload) -> tuple[OperationRecord, InstanceGroupChange]:
    return changes.operation_change(rt, p, InstanceGroupChange)


def _describe_or_fail(rt: Runtime, tag: str) -> dict[str, Any]:
    found = hyperpod.describe(rt.client("sagemaker"), records.hyperpod_name(rt, tag))
    if found is None:
        raise StageFailed("ResourceNotFound", f"HyperPod cluster {records.hyperpod_name(rt, tag)} does not exist")
    if found.get("ClusterStatus") == "Failed":
        raise StageFailed("HyperPodClusterFailed", str(found.get("FailureMessage") or "HyperPod cluster is Failed"))
    return found


def _batch_failures(out: dict[str, Any]) -> None:
    failed = list(out.get("Failed") or []) + list(out.get("FailedNodeLogicalIds") or [])
    if failed:
        first = failed[0]
        code = str(first.get("ErrorCode") or first.get("Code") or "BatchOperationFailed")
        raise StageFailed(code, str(first.get("Message") or first))


def _nodes_to_delete(sm: Any, cluster_name: str, group: str, count: int) -> list[dict[str, Any]]:
    """``count`` nodes of ``group`` to delete: pending (not yet running) first, then the newest (ListClusterNodes)."""
    nodes: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ClusterName": cluster_name, "InstanceGroupNameContains": group}
    while True:
        out = sm.list_cluster_nodes(**kwargs)
        nodes += [n for n in out.get("ClusterNodeSummaries", []) if n.get("InstanceGroupName") == group]
        if not out.get("NextToken"):
            break
        kwargs["NextToken"] = out["NextToken"]
    nodes.sort(key=lambda n: (n.get("InstanceStatus", {}).get("Status") == "Running", -_epoch(n.get("LaunchTime"))))
    return nodes[:count]


def _epoch(value: Any) -> float:
    return float(value.timestamp()) if hasattr(value, "timestamp") else float(value or 0)


def _scale(rt: Runtime, op: OperationRecord, found: dict[str, Any], group: dict[str, Any], desired: int) -> str:
    """Move the group's target to ``desired``: BatchAdd/BatchDeleteClusterNodes when continuous, else UpdateCluster."""
    sm = rt.client("sagemaker")
    name, target = str(group["InstanceGroupName"]), int(group.get("TargetCount") or 0)
    continuous = found.get("NodeProvisioningMode") == "Continuous"
    if desired == target:
        return f"{name} already targets {desired}"
    if continuous and 0 < desired - target <= BATCH_ADD_MAX:
        out = sm.batch_add_cluster_nodes(
            ClusterName=found["ClusterName"],
            ClientToken=op.operation_id,
            NodesToAdd=[{"InstanceGroupName": name, "IncrementTargetCountBy": desired - target}],
        )
        _batch_failures(out)
        return f"BatchAddClusterNodes +{desired - target}"
    if continuous and desired < target:
        victims = _nodes_to_delete(sm, found["ClusterName"], name, target - desired)
        if len(victims) == target - desired and len(victims) <= BATCH_DELETE_MAX:
            out = sm.batch_delete_cluster_nodes(
                ClusterName=found["ClusterName"], NodeIds=[str(n["InstanceId"]) for n in victims]
            )
            _batch_failures(out)
            return f"BatchDeleteClusterNodes -{len(victims)}"
    specs = rules.specs_after_change(found["InstanceGroups"], name, instance_count=desired)
    sm.update_cluster(
        ClusterName=found["ClusterName"], InstanceGroups=[s for s in specs if s["InstanceGroupName"] == name]
    )
    return f"UpdateCluster {name} InstanceCount {desired}"


def _new_group_spec(rt: Runtime, p: StepPayload, found: dict[str, Any], group: InstanceGroupRequest) -> dict[str, Any]:
    tag, generation = p.cluster_tag, p.generation
    cluster = records.cluster_record(rt, tag)
    net = records.stage_resources(rt, tag, generation, StageName.NETWORK, NetworkResources)
    subnet = ensure_group_subnet(
        rt.store,
        rt.client("ec2"),
        tag=tag,
        vpc_id=str(net.vpc_id),
        availability_zone=cluster.availability_zone,
        nat_gateway_id=str(net.nat_gateway_id),
        s3_endpoint_id=str(net.s3_endpoint_id),
        dedicated_group=group.instance_group_name if group.dedicated_subnet else None,
        operation_id=p.operation_id,
    )
    if group.dedicated_subnet:
        resources = NetworkResources(
            dedicated_subnet_ids={**(net.dedicated_subnet_ids or {}), group.instance_group_name: subnet.subnet_id}
        )
    else:
        resources = NetworkResources(compute_subnet_id=subnet.subnet_id)
    records.update_stage_resources(rt, tag=tag, generation=generation, stage=StageName.NETWORK, resources=resources)
    lifecycle = next((g["LifeCycleConfig"] for g in found.get("InstanceGroups", []) if g.get("LifeCycleConfig")), None)
    if lifecycle is None:
        raise StageFailed("LifeCycleConfigNotFound", "no instance group of the cluster has a LifeCycleConfig to reuse")
    spec = hyperpod.instance_group_specs(
        [group],
        execution_role=rt.settings.HYPERPOD_EXECUTION_ROLE_ARN,
        lifecycle_uri=str(lifecycle["SourceS3Uri"]),
        security_group_id=str(net.security_group_id),
        subnet_id=subnet.subnet_id,
    )[0]
    spec["LifeCycleConfig"] = dict(lifecycle)
    return spec


def apply_instance_group_change(rt: Runtime, p: StepPayload) -> StepResult:
    """Apply the operation's change once. Idempotent: a redelivered task that finds the change already made
    (target reached, group present or deleting) calls nothing.

    Raises:
        StageFailed: the HyperPod cluster is gone or Failed, or a batch call answered a per-node failure
            (its code and message verbatim); AWS errors leave named by their code (``clusters.steps``).
    """
    op, change = _operation(rt, p)
    found = _describe_or_fail(rt, p.cluster_tag)
    groups = found.get("InstanceGroups", [])
    group = rules.find_group(groups, change.instance_group_name)
    sm = rt.client("sagemaker")
    if op.type is OperationType.ADD_INSTANCE_GROUP:
        if group is not None:
            return StepResult(status=f"{change.instance_group_name} exists ({group.get('Status')})")
        assert change.group is not None
        spec = _new_group_spec(rt, p, found, change.group)
        sm.update_cluster(ClusterName=found["ClusterName"], InstanceGroups=[spec])
        return StepResult(status=f"UpdateCluster added {change.instance_group_name}")
    if group is None:
        if op.type is OperationType.DELETE_INSTANCE_GROUP:
            return StepResult(status=f"{change.instance_group_name} already gone")
        raise StageFailed("InstanceGroupNotFound", f"instance group {change.instance_group_name} does not exist")
    if op.type is OperationType.DELETE_INSTANCE_GROUP:
        if group.get("Status") == "Deleting":
            return StepResult(status=f"{change.instance_group_name} Deleting")
        sm.update_cluster(ClusterName=found["ClusterName"], InstanceGroupsToDelete=[change.instance_group_name])
        return StepResult(status=f"UpdateCluster deleting {change.instance_group_name}")
    if change.labels is not None:
        specs = rules.specs_after_change(
            groups, change.instance_group_name, instance_count=change.instance_count, labels=change.labels
        )
        sm.update_cluster(
            ClusterName=found["ClusterName"],
            InstanceGroups=[s for s in specs if s["InstanceGroupName"] == change.instance_group_name],
        )
        return StepResult(status=f"UpdateCluster {change.instance_group_name}")
    assert change.instance_count is not None
    return StepResult(status=_scale(rt, op, found, group, change.instance_count))


_FINAL_LAUNCH_FAILURES = ("Unsupported", "ResourceLimitExceeded", "InvalidParameterValue", "AccessDenied")
"""EC2/SageMaker codes that lead a launch failure message and that waiting does not fix (HyperPod retries them
anyway under continuous provisioning): the type is not offered in the zone, a quota is used up, the request is
invalid. The harsher reading: the operation fails at once instead of at the end of its budget."""


@dataclass(frozen=True)
class LaunchFailure:
    """Why HyperPod does not launch a group's instances, from its newest Error event of the group."""

    code: str
    """``InsufficientCapacity``, the leading code of the failure message (e.g. ``ResourceLimitExceeded``), or
    ``InstanceLaunchFailed``."""
    message: str
    """The event's description verbatim, then the failure message behind it (``DescribeClusterEvent``)."""
    final: bool
    """True when waiting cannot help (:data:`_FINAL_LAUNCH_FAILURES`)."""


def classify_launch_failure(description: str, failure_message: str | None) -> LaunchFailure:
    """The :class:`LaunchFailure` of a HyperPod Error event's ``description`` and its ``failure_message``. Pure."""
    text = failure_message or description
    lead = text.split(":", 1)[0].strip() if ":" in text else ""
    if "InsufficientInstanceCapacity" in text or ("sufficient" in text and "capacity" in text):
        code, final = records.INSUFFICIENT_CAPACITY, False
    elif lead in _FINAL_LAUNCH_FAILURES:
        code, final = lead, True
    else:
        code, final = "InstanceLaunchFailed", False
    message = (
        description if not failure_message or failure_message == description else f"{description}: {failure_message}"
    )
    return LaunchFailure(code=code, message=message, final=final)


def launch_failure(sm: Any, cluster_name: str, group: str, since: str) -> LaunchFailure | None:
    """The failure behind the newest event of ``group`` since ``since`` when it is an Error, else None.

    SageMaker ``ListClusterEvents`` (``InstanceGroupName``, ``EventTimeAfter``, newest first), then
    ``DescribeClusterEvent`` for the failure message behind it (EC2's words).
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ListClusterEvents.html
    """
    out = sm.list_cluster_events(
        ClusterName=cluster_name,
        InstanceGroupName=group,
        EventTimeAfter=since,
        SortBy="EventTime",
        SortOrder="Descending",
        MaxResults=20,
    )
    events = [e for e in out.get("Events", []) if e.get("InstanceGroupName") in (None, group)]
    if not events or events[0].get("EventLevel") != "Error":
        return None
    newest = events[0]
    detail: str | None = None
    with suppress(ClientError):  # the summary alone is still HyperPod's own error
        detail = events_feed.event_failure_message(sm, cluster_name, str(newest["EventId"]))
    return classify_launch_failure(str(newest.get("Description") or ""), detail)


def _last_round(op: OperationRecord, p: StepPayload) -> bool:
    """Whether a "not done" answer of this check ends the wait with ``PollTimeout`` (its budget is spent).

    The round that the wait is about to start counts the previous one as timed out when its token is still
    stored (:meth:`instantstart.store.table.Store.start_wait_round`). The time budget is read here a moment before
    the round reads it, so it counts as spent one poll interval early: a check that ran just before the budget's end
    and answered "not done" would otherwise let the wait end with ``PollTimeout`` instead of HyperPod's error (seen
    on a busy machine).
    """
    wait = changes.CLUSTER_CHANGE
    config = p.config or LoopConfig()
    budget = int(str(config.max_polls.to_wire().get(wait, 0)))
    rounds = int((op.wait_rounds or {}).get(wait, 0)) + (1 if (op.waits or {}).get(wait) else 0)
    started = (op.wait_started or {}).get(wait)
    poll = config.poll_seconds.to_wire().get(wait)
    margin = float(poll) if isinstance(poll, int | float) else 0.0
    elapsed = utcnow().timestamp() - started + margin if started is not None else 0.0
    return waits.budget_spent(rounds, elapsed, budget, poll)


def check_instance_group_change(rt: Runtime, p: StepPayload) -> PollResult:
    """Check of the event-or-poll wait: done when HyperPod reports the change (``capacity.groups.change_done``).

    Records what it saw on the cluster's ``hyperPod`` view. Calls SageMaker ``DescribeCluster``; while an added
    or scaled group is below its target, ``ListClusterEvents`` / ``DescribeClusterEvent`` for the reason.

    Under continuous provisioning HyperPod keeps the group InService and retries launches it cannot make, so a
    scale-up that never reaches its count would only end at the wait's budget (``PollTimeout``). Instead the
    operation fails with HyperPod's own error (:func:`launch_failure`): on the last round of the budget, or at
    once when the failure is final (:data:`_FINAL_LAUNCH_FAILURES`, the harsher reading).

    Raises:
        StageFailed: the HyperPod cluster is gone or Failed (FailureMessage verbatim), or the group failed; the
            launch failure's code (``InsufficientCapacity``, ``ResourceLimitExceeded``, ...) and HyperPod's event
            description with the failure message behind it.
    """
    op, change = _operation(rt, p)
    found = _describe_or_fail(rt, p.cluster_tag)
    cluster = records.cluster_record(rt, p.cluster_tag)
    hyperpod.observe(rt, p.cluster_tag, p.generation, found, cluster.request.instance_groups)
    groups = found.get("InstanceGroups", [])
    group = rules.find_group(groups, change.instance_group_name)
    if group is not None and group.get("Status") == "Failed":
        raise StageFailed(
            "InstanceGroupFailed", str(found.get("FailureMessage") or f"{change.instance_group_name} Failed")
        )
    deleted = op.type is OperationType.DELETE_INSTANCE_GROUP
    done, status = rules.change_done(groups, change.instance_group_name, deleted=deleted)
    if done and change.instance_count is not None and group is not None:
        done = int(group.get("TargetCount") or 0) == change.instance_count
    launching = op.type in (OperationType.ADD_INSTANCE_GROUP, OperationType.SCALE_INSTANCE_GROUP)
    if not done and launching and group is not None:
        short = int(group.get("CurrentCount") or 0) < int(group.get("TargetCount") or 0)
        last = _last_round(op, p)
        failure = (
            launch_failure(rt.client("sagemaker"), str(found["ClusterName"]), change.instance_group_name, op.created_at)
            if short
            else None
        )
        if failure is not None and (failure.final or last):
            counts = f"{change.instance_group_name} {group.get('CurrentCount', 0)}/{group.get('TargetCount')}"
            retrying = "" if failure.final else "; HyperPod keeps retrying"
            raise StageFailed(failure.code, f"{failure.message} ({counts} instances{retrying})")
    return PollResult(done=done, status=status)


def refresh_cluster_record(rt: Runtime, p: StepPayload) -> None:
    """The ``finish`` of an instance-group change: the cluster record shows the new shape.

    The record's ``request.instanceGroups`` (:func:`groups_after_change`) and its ``nodes`` (the Kubernetes
    nodes of the HyperPod groups, as ``verify`` lists them), in one write conditional on the generation; then
    the ``hyperPod`` view from ``DescribeCluster``.

    Raises:
        StageFailed: the HyperPod cluster is gone or Failed.
    """
    from instantstart.kube.client import connect, list_objects

    _, change = _operation(rt, p)
    found = _describe_or_fail(rt, p.cluster_tag)
    cluster = records.cluster_record(rt, p.cluster_tag)
    groups = groups_after_change(cluster.request.instance_groups, found.get("InstanceGroups", []), change)
    dyn = connect(records.eks_name(rt, p.cluster_tag, p.generation), rt.region)
    nodes = [verify.node_view(n) for n in list_objects(dyn, "v1", "Node", label_selector=verify.HYPERPOD_NODES)]
    rt.store.record_instance_groups(
        p.cluster_tag, generation=p.generation, instance_groups=groups, nodes=nodes, now=records.now()
    )
    hyperpod.observe(rt, p.cluster_tag, p.generation, found, groups)


def groups_after_change(
    requested: list[InstanceGroupRequest], described: list[dict[str, Any]], change: InstanceGroupChange
) -> list[InstanceGroupRequest]:
    """The instance groups of the cluster's request after ``change``, in HyperPod's order. Pure.

    A group HyperPod reports keeps its requested fields with ``instanceCount`` = its ``TargetCount`` (and the
    change's labels; a group scaled to 0 shows 0); the added group is the add's request; a deleted group is gone.
    Groups HyperPod reports that neither the request nor the change knows are left out.
    """
    by_name = {g.instance_group_name: g for g in requested}
    if change.group is not None:
        by_name[change.instance_group_name] = change.group
    out = []
    for d in described:
        name = str(d["InstanceGroupName"])
        if name not in by_name or d.get("Status") == "Deleting":
            continue
        update: dict[str, Any] = {}
        target = int(d.get("TargetCount") or 0)
        update["instance_count"] = target
        minimum = by_name[name].min_instance_count
        if minimum is not None and minimum > target:  # a request's minimum is at most its count
            update["min_instance_count"] = target
        if name == change.instance_group_name and change.labels is not None:
            update["labels"] = change.labels
        out.append(by_name[name].model_copy(update=update))
    return out


def restore_scaled_target(rt: Runtime, p: StepPayload) -> str | None:
    """The ``recover`` of a failed scale-up: put the group's target back to where it was before the operation
    (SageMaker ``DescribeCluster``, then ``UpdateCluster`` with the previous ``InstanceCount``), so a scale that
    cannot launch does not leave a raised target HyperPod keeps retrying (and billing the instances it got).

    Returns the sentence for the operation's error: restored, already as before, or that the target stays raised
    (``UpdateCluster`` refused, its code and message) with the ``PATCH`` that scales it back; None when the
    operation is no scale-up. Never raises.
    """
    try:
        op, change = _operation(rt, p)
    except StageFailed:
        return None
    previous, desired = change.previous_count, change.instance_count
    if op.type is not OperationType.SCALE_INSTANCE_GROUP or previous is None or desired is None or desired <= previous:
        return None
    name = change.instance_group_name
    back = f"scale it back with PATCH /clusters/{p.cluster_tag}/instance-groups/{name} instanceCount {previous}"
    try:
        sm = rt.client("sagemaker")
        found = hyperpod.describe(sm, records.hyperpod_name(rt, p.cluster_tag))
        group = rules.find_group((found or {}).get("InstanceGroups", []), name)
        if found is None or group is None:
            return None
        target = int(group.get("TargetCount") or 0)
        if target <= previous:
            return f"{name}'s target is {target}, as before the operation"
        specs = rules.specs_after_change(found["InstanceGroups"], name, instance_count=previous)
        sm.update_cluster(
            ClusterName=found["ClusterName"], InstanceGroups=[s for s in specs if s["InstanceGroupName"] == name]
        )
    except ClientError as exc:
        code, message = exc.response.get("Error", {}).get("Code"), exc.response.get("Error", {}).get("Message")
        refused = f"UpdateCluster back was refused ({code}: {message})"
        return f"{name}'s target stays raised at {desired} (it was {previous}): {refused}; {back}"
    except Exception as exc:  # noqa: BLE001 - the failure is recorded whatever the recovery meets
        return f"{name}'s target may stay raised at {desired} (it was {previous}): restoring it failed ({exc}); {back}"
    return f"{name}'s target was put back from {target} to {previous} (UpdateCluster)"


CHANGES = {
    op_type: changes.ClusterChange(
        apply=apply_instance_group_change,
        check=check_instance_group_change,
        finish=refresh_cluster_record,
        recover=restore_scaled_target if op_type is OperationType.SCALE_INSTANCE_GROUP else None,
    )
    for op_type in (
        OperationType.ADD_INSTANCE_GROUP,
        OperationType.SCALE_INSTANCE_GROUP,
        OperationType.UPDATE_INSTANCE_GROUP,
        OperationType.DELETE_INSTANCE_GROUP,
    )
}
"""The update workflow's handlers of instance-group changes, by operation type."""
