"""Day-2 changes of a running cluster: one operation, one workflow, a handler per kind of change.

Every change that waits on AWS after the cluster exists (an instance group added, scaled, updated or
deleted; and every later kind: autoscaling, node actions, software updates, health checks) is an
operation of its own type that runs the update workflow (``statemachines/update_cluster.asl.json``):

``Apply Change`` (:func:`apply_change`: make the change once) -> ``Check Change`` (:func:`check_change`,
an event-or-poll wait on the operation's own record, :mod:`instantstart.clusters.waits`) -> ``Complete
Operation`` (:func:`complete_change`) -> SUCCEEDED; any failure -> ``Record Change Failure``
(:func:`record_change_failure`) -> FAILED with the AWS code and message verbatim. A day-2 operation
never changes the cluster's status: the cluster stays usable while it changes.

The workflow's steps dispatch on the operation's type to a :class:`ClusterChange` (apply, check and an
optional finish), each defined in the module of that kind of change (e.g.
:data:`instantstart.clusters.instance_groups.CHANGES`) and registered by its area's ``steps`` module in
:data:`instantstart.clusters.registry.REGISTRY`, whose table :mod:`instantstart.clusters.steps` hands to
:func:`workflow_steps`. The API side starts an operation with :func:`start_change`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from instantstart.clusters import records, waits
from instantstart.errors import StageFailed
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType
from instantstart.models.operation import OperationView
from instantstart.models.records import ClusterRecord, OperationRecord
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime

ChangeT = TypeVar("ChangeT", bound=BaseModel)
"""The change model of one kind of day-2 change (e.g. ``models.instance_groups.InstanceGroupChange``)."""

CLUSTER_CHANGE = "clusterChange"
"""The update workflow's wait: AWS reports the change done (``$.config.maxPolls.clusterChange``)."""


@dataclass(frozen=True)
class ClusterChange:
    """How the update workflow carries out one kind of day-2 change.

    Attributes:
        apply: makes the change once (idempotent: a redelivered task that finds it made calls nothing);
            returns a short status. Raises ``StageFailed`` (or an AWS ``ClientError``) to fail the operation.
        check: one round of the wait: ``PollResult(done=True)`` when AWS reports the change done.
        finish: optional, before the operation ends SUCCEEDED (e.g. refresh what the records say of the
            cluster); returns nothing.
        recover: optional, when the operation fails: undo what the change left half done (e.g. put a raised
            target back); returns a sentence the operation's error message ends with (what was undone, or what
            stays and how to undo it), or None. It must not raise.
    """

    apply: Callable[[Runtime, StepPayload], StepResult]
    check: Callable[[Runtime, StepPayload], PollResult]
    finish: Callable[[Runtime, StepPayload], None] | None = None
    recover: Callable[[Runtime, StepPayload], str | None] | None = None


def start_change(
    rt: Runtime,
    cluster: ClusterRecord,
    op_type: OperationType,
    change: BaseModel,
    *,
    instance_group_name: str | None = None,
    guard: tuple[str, str] | None = None,
) -> OperationView:
    """Record a PENDING day-2 operation carrying ``change`` and start the update workflow.

    ``change`` is the change model of ``op_type`` (stored as its camelCase JSON, nulls left out; the steps read
    it back with :func:`operation_change` and the same model).

    One operation per cluster at a time (:func:`instantstart.clusters.service.start_operation_on`); the
    cluster keeps its status. An ``op_type`` that does not take the cluster's lock (``OperationType.locks_cluster``
    False: a model download) holds ``guard`` instead, ``(sort key, what it guards)``
    (:func:`instantstart.clusters.guarded.start_guarded_operation_on`): other operations run beside it, one of the
    same guard does not. Calls Step Functions ``StartExecution``.

    Raises:
        Conflict: another operation runs on the cluster (or holds ``guard``); ``ClusterNotReady`` for a guarded
            operation on a cluster that is not READY or DEGRADED.
        ValueError: ``guard`` missing for an operation type that does not lock the cluster, or given for one that
            does.
        PayloadTooLarge: ``RequestTooLarge`` when the operation record carrying ``change`` would not fit DynamoDB's
            item size (:func:`instantstart.store.codec.check_item_fits`); nothing was written.
    """
    from instantstart.clusters import service  # the API's side only: the steps and reconcilers never import it

    now = records.now()
    operation = OperationRecord(
        operation_id=service.new_operation_id(),
        type=op_type,
        cluster_tag=cluster.cluster_tag,
        generation=cluster.generation,
        created_at=now,
        updated_at=now,
        instance_group_name=instance_group_name,
        change=change.model_dump(mode="json", by_alias=True, exclude_none=True),
        waits={},
        wait_rounds={},
        waits_satisfied={},
    )
    if (guard is None) != op_type.locks_cluster:
        raise ValueError(f"{op_type.value}: a guard is needed exactly when the operation does not lock the cluster")
    if guard is not None:
        from instantstart.clusters import guarded

        return guarded.start_guarded_operation_on(
            rt,
            cluster,
            operation,
            guard=guard[0],
            subject=guard[1],
            state_machine_arn=rt.settings.UPDATE_CLUSTER_STATE_MACHINE_ARN,
        )
    return service.start_operation_on(
        rt,
        cluster,
        operation,
        new_status=cluster.status,
        state_machine_arn=rt.settings.UPDATE_CLUSTER_STATE_MACHINE_ARN,
    )


def operation_change(rt: Runtime, p: StepPayload, model: type[ChangeT]) -> tuple[OperationRecord, ChangeT]:
    """The operation of a step and the change it carries, read as ``model`` (the change model of its type).

    Raises:
        StageFailed: ``OperationNotFound`` when the operation or its change is missing; ``InvalidChange`` when
            the stored change does not fit ``model`` (pydantic's message).
    """
    op = rt.store.get_operation(p.operation_id)
    if op is None or op.change is None:
        raise StageFailed("OperationNotFound", f"operation {p.operation_id} carries no change")
    try:
        return op, model.model_validate(op.change)
    except ValidationError as exc:
        raise StageFailed("InvalidChange", f"operation {p.operation_id}: {exc}") from exc


def wake_running_change(rt: Runtime, cluster: ClusterRecord) -> bool:
    """Wake the wait of the cluster's running day-2 operation (an event said something changed)."""
    if not cluster.current_operation_id:
        return False
    return waits.wake_operation(rt, cluster.current_operation_id, CLUSTER_CHANGE)


def _cluster_status(rt: Runtime, tag: str) -> ClusterStatus:
    return records.cluster_record(rt, tag).status


def workflow_steps(
    handlers: Mapping[OperationType, ClusterChange],
) -> dict[str, Callable[[Runtime, StepPayload], BaseModel]]:
    """The update workflow's task actions, dispatching on the payload's operation type to ``handlers``.

    Raises (from the steps):
        StageFailed: ``UnsupportedChange`` for an operation type without a handler.
    """

    def handler(p: StepPayload) -> ClusterChange:
        found = handlers.get(p.operation_type) if p.operation_type else None
        if found is None:
            raise StageFailed("UnsupportedChange", f"no day-2 change handles operation type {p.operation_type}")
        return found

    def apply_change(rt: Runtime, p: StepPayload) -> StepResult:
        records.mark_operation_running(rt, p.operation_id)
        return handler(p).apply(rt, p)

    def check_change(rt: Runtime, p: StepPayload) -> PollResult:
        return handler(p).check(rt, p)

    def complete_change(rt: Runtime, p: StepPayload) -> StepResult:
        finish = handler(p).finish
        if finish is not None:
            finish(rt, p)
        return records.finish_operation(
            rt,
            operation_id=p.operation_id,
            tag=p.cluster_tag,
            status=OperationStatus.SUCCEEDED,
            cluster_status=_cluster_status(rt, p.cluster_tag),
        )

    def record_change_failure(rt: Runtime, p: StepPayload) -> StepResult:
        found = handlers.get(p.operation_type) if p.operation_type else None
        note = found.recover(rt, p) if found is not None and found.recover is not None else None
        return records.record_failure(
            rt,
            operation_id=p.operation_id,
            tag=p.cluster_tag,
            generation=p.generation,
            stage=None,
            error=p.error,
            cluster_status=_cluster_status(rt, p.cluster_tag),
            note=note,
        )

    return {
        "apply_change": apply_change,
        "check_change": check_change,
        "complete_change": complete_change,
        "record_change_failure": record_change_failure,
    }
