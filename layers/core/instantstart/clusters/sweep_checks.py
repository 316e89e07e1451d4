"""The reconciliation sweep's per-cluster checks (:data:`CHECKS`): what is the control plane's to converge.

Each check is a function ``(SweepContext, ClusterRecord) -> action | None``: it reads AWS for one cluster, changes
the records only through conditional writes (expected status, generation, operation id), and answers the action
it took (a key of the sweep's summary) or None. The sweep (:mod:`instantstart.clusters.sweep`) runs them in order
on every cluster it claimed; a check that acted makes the sweep read the cluster again before the next check.

- :func:`check_operation`: the current operation against its Step Functions execution (``DescribeExecution``):
  PENDING without an execution for longer than :data:`PENDING_GRACE_SECONDS` is started again (its input rebuilt
  from the records as the API builds it, :func:`restart_spec`) or, when it cannot be, ended FAILED
  (``ExecutionNeverStarted``); RUNNING with an execution that ended (ABORTED, FAILED, TIMED_OUT) is ended by the
  event reconciler's own rule (``reconcile.on_execution_status_change``, the event's ``detail`` rebuilt from
  ``DescribeExecution``'s answer).
- :func:`check_degraded`: DEGRADED -> READY once every group reached its target (``reconcile.recover_degraded``).
- :func:`check_under_target`: READY -> DEGRADED once a group stayed under its target for
  :data:`UNDER_TARGET_SECONDS`, with HyperPod's reason verbatim.
- :func:`check_drift`: what changed outside (a HyperPod cluster or group deleted or scaled, an add-on removed, a role
  deleted, the Kubernetes version upgraded elsewhere) is reported as the cluster's ``drift`` and a ``Cluster Drift
  Detected`` event, never undone here (``POST /clusters/{tag}/reconcile`` repairs what is the control plane's own).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.clusters.executions import execution_arn, operation_execution_arn, running_operation
from instantstart.clusters.reconcile import EXECUTION_END_ERRORS, on_execution_status_change, recover_degraded
from instantstart.models.cluster import StageError
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType, StageName, seconds_between
from instantstart.models.records import ClusterRecord, OperationRecord
from instantstart.runtime import Runtime
from instantstart.store.table import ConditionFailed, StoreError, SweepClaim

logger = logging.getLogger(__name__)

PENDING_GRACE_SECONDS = 120
"""How long an operation may stay PENDING without a Step Functions execution before the sweep acts (seconds): well
past the API function's ``Timeout`` (30 s), so the invocation that recorded it has certainly ended."""

UNDER_TARGET_SECONDS = 1800
"""How long a READY cluster's instance group may stay under its target count before the cluster turns DEGRADED
(seconds, 30 minutes): HyperPod replaces a failed node within minutes; a group short for longer lacks capacity."""


@dataclass
class SweepContext:
    """What the checks of one cluster share: the runtime, the sweep's claim, the time and the calls made."""

    rt: Runtime
    claim: SweepClaim
    now: str
    """The sweep's time for this cluster (ISO-8601 UTC, the records' clock)."""
    calls: Counter[str] = field(default_factory=Counter)
    """AWS calls by ``service:Operation``, filled by :mod:`instantstart.clusters.sweep`."""
    _operations: dict[str, OperationRecord | None] = field(default_factory=dict)
    _hyperpod: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    def running_operation(self, cluster: ClusterRecord) -> OperationRecord | None:
        """The cluster's live operation (``executions.running_operation``), read once per current operation id
        (the sweep reads the cluster again after a check acted, and a new id is read anew)."""
        key = cluster.current_operation_id or ""
        if key not in self._operations:
            self._operations[key] = running_operation(self.rt, cluster)
        return self._operations[key]

    def describe_hyperpod(self, name: str) -> dict[str, Any] | None:
        """SageMaker ``DescribeCluster`` of HyperPod cluster ``name`` (None: not found), read once for this cluster's
        checks (the READY check and the drift check share it)."""
        from instantstart.clusters.stages import hyperpod

        if name not in self._hyperpod:
            self._hyperpod[name] = hyperpod.describe(self.rt.client("sagemaker"), name)
        return self._hyperpod[name]

    def forget_operations(self) -> None:
        """Read the operations again (a check changed one)."""
        self._operations.clear()


Check = Callable[[SweepContext, ClusterRecord], str | None]


def restart_spec(rt: Runtime, op: OperationRecord) -> tuple[str, StageName] | None:
    """The state machine and first stage the API starts ``op``'s execution with, rebuilt from the records; None
    when they cannot be (an import: its first stage depends on what the import found).

    The same choices as the API's starts (``clusters/service.py``, ``executions.start_operation_on``): a create at
    ``network``, a retry at its stage, a delete at ``verify`` (the delete workflow's first), a day-2 change on the
    update workflow (``hyperpod``).
    """
    s = rt.settings
    if op.type is OperationType.IMPORT_CLUSTER:  # (``OperationType.day2`` counts an import in)
        return None
    if op.type is OperationType.CREATE_CLUSTER:
        return s.CREATE_CLUSTER_STATE_MACHINE_ARN, StageName.NETWORK
    if op.type is OperationType.RETRY_STAGE and op.stage is not None:
        return s.CREATE_CLUSTER_STATE_MACHINE_ARN, op.stage
    if op.type is OperationType.DELETE_CLUSTER:
        return s.DELETE_CLUSTER_STATE_MACHINE_ARN, StageName.VERIFY
    if op.type.day2:
        return s.UPDATE_CLUSTER_STATE_MACHINE_ARN, StageName.HYPERPOD
    return None


def execution_detail(described: dict[str, Any]) -> dict[str, Any]:
    """A "Step Functions Execution Status Change" event's ``detail`` from ``DescribeExecution``'s answer (the same
    member names), so one rule ends an operation whether the event arrived or the sweep found the execution ended."""
    names = ("executionArn", "stateMachineArn", "name", "status", "error", "cause")
    return {name: described[name] for name in names if described.get(name) is not None}


def check_operation(ctx: SweepContext, cluster: ClusterRecord) -> str | None:
    """The cluster's live operation against its execution (Step Functions ``DescribeExecution``, DynamoDB reads).

    Returns ``pending-started``, ``pending-failed``, ``execution-ended`` or None (nothing to do).
    """
    rt = ctx.rt
    op = ctx.running_operation(cluster)
    if op is None:
        return None
    try:
        described = rt.client("stepfunctions").describe_execution(executionArn=operation_execution_arn(rt, op))
    except ClientError as exc:
        if error_code(exc) != "ExecutionDoesNotExist":
            raise
        if op.status is OperationStatus.PENDING and seconds_between(op.created_at, ctx.now) >= PENDING_GRACE_SECONDS:
            return _pending_without_execution(ctx, op)
        return None
    if str(described.get("status")) not in EXECUTION_END_ERRORS:
        return None
    result = on_execution_status_change(rt, execution_detail(described))
    return "execution-ended" if result.action == "reconciled" else None


def _pending_without_execution(ctx: SweepContext, op: OperationRecord) -> str | None:
    """Start the execution the API never started (Step Functions ``StartExecution``, named after the operation, so a
    concurrent start makes no second one), or end the operation FAILED when its input cannot be rebuilt."""
    rt = ctx.rt
    spec = restart_spec(rt, op)
    if spec is None:
        error = StageError(
            code="ExecutionNeverStarted",
            message=(
                f"the API recorded operation {op.operation_id} ({op.type.value}) but its workflow never started "
                f"(no Step Functions execution after {PENDING_GRACE_SECONDS} s: the request's invocation ended "
                "first); nothing ran. Send the request again, or delete the cluster"
            ),
        )
        try:
            records.finish_operation(
                rt,
                operation_id=op.operation_id,
                tag=op.cluster_tag,
                status=OperationStatus.FAILED,
                cluster_status=records.cluster_status_after_end(rt, op, ClusterStatus.FAILED),
                error=error,
            )
        except ConditionFailed:
            return None
        return "pending-failed"
    machine, stage = spec
    payload = records.execution_input(
        operation_id=op.operation_id,
        operation_type=op.type,
        tag=op.cluster_tag,
        generation=op.generation,
        start_stage=stage,
    )
    try:
        out = rt.client("stepfunctions").start_execution(
            stateMachineArn=machine, name=op.operation_id, input=json.dumps(payload.to_wire())
        )
    except ClientError as exc:
        if error_code(exc) == "ExecutionAlreadyExists":
            return None
        raise
    arn = str(out.get("executionArn") or execution_arn(machine, op.operation_id))
    try:
        rt.store.record_execution_arn(op.operation_id, arn)
    except (ClientError, BotoCoreError, StoreError):  # best effort, as the API's launch: derived when missing
        logger.warning("operation %s: execution %s started by the sweep, its ARN not recorded", op.operation_id, arn)
    logger.info("sweep started the execution of PENDING operation %s", op.operation_id)
    return "pending-started"


def _idle(ctx: SweepContext, cluster: ClusterRecord) -> bool:
    """No operation runs on the cluster (its current one ended or there is none): a DynamoDB read at most."""
    return ctx.running_operation(cluster) is None


def check_degraded(ctx: SweepContext, cluster: ClusterRecord) -> str | None:
    """DEGRADED -> READY when every group reached its target and every add-on is ACTIVE, without any event
    (``reconcile.recover_degraded``: SageMaker ``DescribeCluster``, ``ListClusterEvents``, EKS ``DescribeAddon``).
    Returns ``degraded-recovered`` or None."""
    if cluster.status is not ClusterStatus.DEGRADED or not _idle(ctx, cluster):
        return None
    result = recover_degraded(ctx.rt, cluster)
    if result.action != "recovered":
        return None
    if ctx.claim.under_target:
        ctx.rt.store.record_under_target(ctx.claim, {})
    return "degraded-recovered"


def check_under_target(ctx: SweepContext, cluster: ClusterRecord) -> str | None:
    """READY -> DEGRADED when an instance group stayed under its requested count for :data:`UNDER_TARGET_SECONDS`.

    SageMaker ``DescribeCluster`` gives each group's ``CurrentCount``; the first time a group is seen short is kept
    on the sweep's claim item (cleared when it is back), so the time is measured across sweeps. Past the bound, the
    cluster turns DEGRADED with its ``verify`` stage FAILED ``InstanceGroupUnderTarget`` whose message is HyperPod's
    reason verbatim: the failure message behind the newest Error cluster event (``ListClusterEvents``, then
    ``DescribeClusterEvent``, ``events_feed.event_failure_message``), else that event's description. A cluster whose
    HyperPod ``AutoScaling`` mode is ``Enable`` is left alone (managed Karpenter sizes its groups). Returns
    ``ready-degraded``, ``under-target`` (a group short, not for long enough yet) or None.
    """
    if cluster.status is not ClusterStatus.READY or not _idle(ctx, cluster):
        return None
    sm = ctx.rt.client("sagemaker")
    found = ctx.describe_hyperpod(cluster.hyper_pod_cluster_name)
    if found is None:  # the HyperPod cluster is gone: what changed outside is drift, reported, not converged here
        return None
    if (found.get("AutoScaling") or {}).get("Mode") == "Enable":  # managed Karpenter sizes the groups, not a target
        return None
    current = {str(g["InstanceGroupName"]): int(g.get("CurrentCount", 0)) for g in found.get("InstanceGroups", [])}
    targets = {g.instance_group_name: g.instance_count for g in cluster.request.instance_groups}
    short = {g: (current.get(g, 0), t) for g, t in targets.items() if current.get(g, 0) < t}
    since = {g: ctx.claim.under_target.get(g, ctx.now) for g in short}
    if since != ctx.claim.under_target:
        ctx.rt.store.record_under_target(ctx.claim, since)
    if not short:
        return None
    overdue = sorted(g for g in short if seconds_between(since[g], ctx.now) >= UNDER_TARGET_SECONDS)
    if not overdue:
        return "under-target"
    observed = ", ".join(f"{g}: {short[g][0]}/{short[g][1]} instances since {since[g]}" for g in overdue)
    error = StageError(code="InstanceGroupUnderTarget", message=_hyperpod_reason(sm, cluster) or observed)
    try:
        ctx.rt.store.degrade_ready(
            cluster.cluster_tag,
            cluster.generation,
            error=error.model_dump(mode="json"),
            observed_status=f"under target for {UNDER_TARGET_SECONDS // 60} min or more: {observed}",
            now=ctx.now,
        )
    except ConditionFailed:
        return None
    ctx.rt.store.record_under_target(ctx.claim, {})
    logger.info("cluster %s: READY -> DEGRADED (%s)", cluster.cluster_tag, observed)
    return "ready-degraded"


def _hyperpod_reason(sm: Any, cluster: ClusterRecord) -> str | None:
    """HyperPod's reason for the shortage, verbatim: the newest Error event's failure message, else its description
    (None without an Error event or when SageMaker refuses the reads)."""
    from instantstart.clusters.events_feed import event_failure_message
    from instantstart.clusters.stages.verify import latest_error_events

    name = cluster.hyper_pod_cluster_name
    try:
        latest = latest_error_events(sm, name, limit=1)
        if not latest:
            return None
        return event_failure_message(sm, name, latest[0].event_id) or latest[0].description
    except ClientError:
        return None


def check_drift(ctx: SweepContext, cluster: ClusterRecord) -> str | None:
    """What changed outside the control plane, reported, never undone (``drift.observe_drift``: EKS
    ``DescribeCluster``, ``ListAddons``, ``DescribeAddon``, SageMaker ``DescribeCluster``, IAM ``GetRole``, S3
    ``GetBucketTagging``, the storage claim through Kubernetes): the items are stored on the cluster (``drift`` of
    ``GET /clusters/{tag}``) and new ones publish one ``Cluster Drift Detected`` event. Runs last, on a READY or
    DEGRADED cluster without a running operation (the other checks may have just changed it). Returns
    ``drift-reported`` when an item is new, ``drift`` when the recorded drift stands, None when nothing differs."""
    from instantstart.clusters.drift import observe_drift

    before = {(i.resource_type, i.name, i.field, i.observed) for i in cluster.drift}
    items = observe_drift(ctx.rt, cluster, now=ctx.now, describe_hyperpod=ctx.describe_hyperpod)
    if not items:
        return None
    new = [i for i in items if (i.resource_type, i.name, i.field, i.observed) not in before]
    return "drift-reported" if new else "drift"


CHECKS: tuple[Check, ...] = (check_operation, check_degraded, check_under_target, check_drift)
"""The sweep's per-cluster checks, in order (add a check here: a function of :data:`Check`'s shape)."""
