"""The clusters area's workflow steps and how every step's errors reach Step Functions.

A task payload is a :class:`~instantstart.models.workflow.StepPayload`; its ``action`` names one step. This module
registers the clusters area's in :data:`~instantstart.clusters.registry.REGISTRY`: a stage's own step
(``instantstart.clusters.stages.<stage>``, imported on first use), the bookkeeping steps at the edges of stages and
operations below, the update workflow's steps and the cluster's own day-2 changes. :func:`call_step` runs any
area's step: AWS errors are re-raised as exceptions named after the AWS error code so ``Retry``/``Catch`` can match
them and the failure path records the code and message verbatim. The dispatch itself is :mod:`instantstart.steps`.
"""

from __future__ import annotations

import re
import sys

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, records, waits
from instantstart.clusters.registry import REGISTRY
from instantstart.clusters.stages import STAGE_ACTIONS, STAGE_MODULES
from instantstart.clusters.stages.common import Step
from instantstart.errors import StageFailed, aws_error
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType, StageName, StageStatus
from instantstart.models.workflow import StepPayload, StepResult
from instantstart.runtime import Runtime


def _stage(p: StepPayload) -> StageName:
    if p.stage is None:
        raise StageFailed("InvalidStepPayload", f"action {p.action} needs a stage")
    return p.stage


def begin_stage(rt: Runtime, p: StepPayload) -> BaseModel:
    """The stage RUNNING (see :func:`instantstart.clusters.records.begin_stage`)."""
    return records.begin_stage(
        rt, operation_id=p.operation_id, tag=p.cluster_tag, generation=p.generation, stage=_stage(p)
    )


WAITING_ON: dict[StageName, list[tuple[StageName, str]]] = {StageName.ACCESS: [(StageName.STORAGE, "storageAccess")]}
"""Waits of other stages that hold until a stage SUCCEEDED (it wakes them when it does)."""


def complete_stage(rt: Runtime, p: StepPayload) -> BaseModel:
    """The stage SUCCEEDED; the dependencies stage ends with a summary of its steps.

    Waits of other stages that hold until this one SUCCEEDED (:data:`WAITING_ON`) are woken at once.
    """
    stage = _stage(p)
    observed = None
    if stage is StageName.DEPENDENCIES:
        from instantstart.clusters.stages import dependencies

        observed = dependencies.summary(rt, p.cluster_tag, p.generation)
    result = records.complete_stage(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=stage,
        observed_status=observed,
        operation_id=p.operation_id,
    )
    for waiting, wait in WAITING_ON.get(stage, []):
        waits.wake(rt, p.cluster_tag, p.generation, waiting, wait)
    return result


def record_failure(rt: Runtime, p: StepPayload) -> BaseModel:
    """The single failure path (a delete's failure names no stage: its stages keep their create status)."""
    return records.record_failure(
        rt,
        operation_id=p.operation_id,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=p.stage if p.operation_type is not OperationType.DELETE_CLUSTER else None,
        error=p.error,
    )


def complete_create(rt: Runtime, p: StepPayload) -> BaseModel:
    """The create (or retry) operation SUCCEEDED and the cluster READY."""
    return records.finish_operation(
        rt,
        operation_id=p.operation_id,
        tag=p.cluster_tag,
        status=OperationStatus.SUCCEEDED,
        cluster_status=ClusterStatus.READY,
    )


def _mark_teardown(rt: Runtime, p: StepPayload, status: StageStatus) -> BaseModel:
    stage = _stage(p)
    rt.store.set_teardown_status(p.cluster_tag, p.generation, stage, status, records.now())
    if status is StageStatus.RUNNING:
        records.mark_operation_running(rt, p.operation_id)
    return StepResult(status=status.value)


def complete_delete(rt: Runtime, p: StepPayload) -> BaseModel:
    """The delete operation SUCCEEDED and the cluster DELETED (its tag can be created again)."""
    result = records.finish_operation(
        rt,
        operation_id=p.operation_id,
        tag=p.cluster_tag,
        status=OperationStatus.SUCCEEDED,
        cluster_status=ClusterStatus.DELETED,
    )
    rt.store.record_observations(p.cluster_tag, now=records.now(), eks=None, hyper_pod=None, storage=None, nodes=[])
    return result


BOOKKEEPING_STEPS: dict[str, Step] = {
    "begin_stage": begin_stage,
    "complete_stage": complete_stage,
    "record_failure": record_failure,
    "complete_create": complete_create,
    "begin_teardown": lambda rt, p: _mark_teardown(rt, p, StageStatus.RUNNING),
    "complete_teardown": lambda rt, p: _mark_teardown(rt, p, StageStatus.SUCCEEDED),
    "complete_delete": complete_delete,
}
"""Steps at the edges of stages and operations (records and events, no AWS resources)."""


def _register() -> None:
    """The clusters area's registrations: the bookkeeping, the update workflow's steps (dispatching on the operation
    type through :data:`~instantstart.clusters.registry.REGISTRY`), every stage's steps (its module imported on first
    use) and the day-2 changes of the cluster itself."""
    REGISTRY.add_steps(BOOKKEEPING_STEPS)
    REGISTRY.add_steps(changes.workflow_steps(REGISTRY.changes()))
    for stage_name, stage_module in STAGE_MODULES.items():
        REGISTRY.add_step_module(
            stage_module,
            [action for action, stage in STAGE_ACTIONS.items() if stage is stage_name],
            tables=("CREATE_STEPS", "TEARDOWN_STEPS"),
        )
    REGISTRY.add_changes(
        "instantstart.clusters.instance_groups",
        (
            OperationType.ADD_INSTANCE_GROUP,
            OperationType.SCALE_INSTANCE_GROUP,
            OperationType.UPDATE_INSTANCE_GROUP,
            OperationType.DELETE_INSTANCE_GROUP,
        ),
    )
    REGISTRY.add_changes("instantstart.clusters.autoscaling", (OperationType.UPDATE_AUTOSCALING,))
    REGISTRY.add_changes("instantstart.clusters.repair", (OperationType.RECONCILE_CLUSTER,))
    REGISTRY.add_changes(
        "instantstart.clusters.nodes",
        (OperationType.REBOOT_CLUSTER_NODES, OperationType.REPLACE_CLUSTER_NODES, OperationType.DELETE_CLUSTER_NODES),
    )
    REGISTRY.add_changes(
        "instantstart.clusters.hyperpod_operations",
        (OperationType.UPDATE_CLUSTER_SOFTWARE, OperationType.START_CLUSTER_HEALTH_CHECK),
    )


_register()


ROLE_PROPAGATION_DELAY = "RolePropagationDelay"
"""Step Functions error name of an AWS service refusing a role it cannot assume (yet): retried with backoff."""

_ROLE_NOT_ASSUMABLE = re.compile(
    r"role.*(could not be assumed|cannot be assumed)"  # EKS: "Role with arn: ..., could not be assumed because ..."
    r"|execution role ARN .* is invalid"  # SageMaker: "The execution role ARN ... is invalid. Please ensure ..."
    r"|unable to assume (the )?role",  # SageMaker: "SageMaker was unable to assume the role ..."
    re.IGNORECASE | re.DOTALL,
)


def error_name(code: str, message: str) -> str:
    """The Step Functions error name of an AWS error: ``code``, or a retryable classification of it.

    A role that was just created is not visible to every AWS service at once (IAM is eventually
    consistent), so EKS (``InvalidParameterException`` "Role with arn: ... could not be assumed") and
    SageMaker (``ValidationException`` "The execution role ARN ... is invalid") refuse it for a while:
    those are :data:`ROLE_PROPAGATION_DELAY`, retried by the workflow with backoff and bounded (a role
    that really cannot be assumed fails verbatim once the retries are spent). Every other
    ``ValidationException`` / ``InvalidParameterException`` keeps its code and stays fatal.
    """
    if code in ("InvalidParameterException", "ValidationException") and _ROLE_NOT_ASSUMABLE.search(message):
        return ROLE_PROPAGATION_DELAY
    return code


def call_step(step: Step, rt: Runtime, payload: StepPayload) -> BaseModel:
    """Run ``step``; AWS and Kubernetes errors leave as exceptions named for Step Functions.

    Raises:
        StageFailed: a step failure; AWS ``ClientError`` s become exceptions named after their AWS error
            code or its classification (:func:`error_name`), with code and message verbatim.
    """
    try:
        return step(rt, payload)
    except ClientError as exc:
        code, message = error_code(exc) or "AwsError", error_message(exc)
        raise aws_error(code, message, name=error_name(code, message)) from exc
    except BotoCoreError as exc:
        raise aws_error(type(exc).__name__, str(exc)) from exc
    except Exception as exc:
        if not _kubernetes_error(exc):
            raise
        reason = str(getattr(exc, "reason", "") or "Error").replace(" ", "")
        raise aws_error(f"Kubernetes{reason}", f"Kubernetes API {getattr(exc, 'status', '')}: {exc}") from exc


def _kubernetes_error(exc: Exception) -> bool:
    """Whether ``exc`` is an error of the Kubernetes client, which is imported only by the steps that use it."""
    if "kubernetes" not in sys.modules:  # no step of this process has talked to Kubernetes: not one of its errors
        return False
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import DynamicApiError

    return isinstance(exc, ApiException | DynamicApiError)
