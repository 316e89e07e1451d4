"""Dispatch of Step Functions task payloads to the workflow steps.

A task payload is a :class:`~instantstart.models.workflow.StepPayload`; its ``action`` names one step:
a stage's own step (``instantstart.clusters.stages.<stage>``) or one of the bookkeeping steps at the
edges of stages and operations below. AWS errors are re-raised as exceptions named after the AWS
error code so ``Retry``/``Catch`` can match them and the failure path records the code and message verbatim.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, records, waits
from instantstart.clusters.stages import STAGE_ACTIONS, stage_step
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

CHANGE_MODULES: dict[OperationType, str] = {
    **dict.fromkeys(
        (
            OperationType.ADD_INSTANCE_GROUP,
            OperationType.SCALE_INSTANCE_GROUP,
            OperationType.UPDATE_INSTANCE_GROUP,
            OperationType.DELETE_INSTANCE_GROUP,
        ),
        "instantstart.clusters.instance_groups",
    ),
    OperationType.UPDATE_AUTOSCALING: "instantstart.clusters.autoscaling",
    **dict.fromkeys(
        (
            OperationType.REBOOT_CLUSTER_NODES,
            OperationType.REPLACE_CLUSTER_NODES,
            OperationType.DELETE_CLUSTER_NODES,
        ),
        "instantstart.clusters.nodes",
    ),
    **dict.fromkeys(
        (OperationType.UPDATE_CLUSTER_SOFTWARE, OperationType.START_CLUSTER_HEALTH_CHECK),
        "instantstart.clusters.hyperpod_operations",
    ),
    OperationType.UPDATE_FEATURES: "instantstart.features.service",
    **dict.fromkeys(
        (OperationType.CREATE_TRAINING_JOB, OperationType.DELETE_TRAINING_JOB), "instantstart.training.service"
    ),
    **dict.fromkeys(
        (
            OperationType.DOWNLOAD_MODEL,
            OperationType.CREATE_INFERENCE_DEPLOYMENT,
            OperationType.UPDATE_INFERENCE_DEPLOYMENT,
            OperationType.DELETE_INFERENCE_DEPLOYMENT,
            OperationType.CREATE_INFERENCE_ROUTER,
        ),
        "instantstart.inference.service",
    ),
    **dict.fromkeys(
        (OperationType.CREATE_INFERENCE_ENDPOINT, OperationType.DELETE_INFERENCE_ENDPOINT),
        "instantstart.inference.endpoints",
    ),
    OperationType.UPDATE_MLFLOW: "instantstart.mlflow.service",
}
"""The module whose ``CHANGES`` handles each kind of day-2 change (imported by the first step of that kind)."""


class _LazyChanges(Mapping[OperationType, changes.ClusterChange]):
    """:data:`CHANGE_MODULES` as the handlers themselves: a handler's module is imported when it is looked up."""

    def __getitem__(self, op_type: OperationType) -> changes.ClusterChange:
        handlers: dict[OperationType, changes.ClusterChange] = importlib.import_module(CHANGE_MODULES[op_type]).CHANGES
        return handlers[op_type]

    def __iter__(self) -> Iterator[OperationType]:
        return iter(CHANGE_MODULES)

    def __len__(self) -> int:
        return len(CHANGE_MODULES)


CHANGE_HANDLERS: Mapping[OperationType, changes.ClusterChange] = _LazyChanges()
"""The update workflow's handler of each kind of day-2 change (:mod:`instantstart.clusters.changes`)."""


class _Actions(Mapping[str, Step]):
    """Every task action: the bookkeeping and change steps, and the stages' steps (their module imported on use)."""

    def __init__(self, steps: dict[str, Step]) -> None:
        self._steps = steps

    def __getitem__(self, action: str) -> Step:
        step = self._steps.get(action) or stage_step(action)
        if step is None:
            raise KeyError(action)
        return step

    def __iter__(self) -> Iterator[str]:
        yield from self._steps
        yield from STAGE_ACTIONS

    def __len__(self) -> int:
        return len(self._steps) + len(STAGE_ACTIONS)


ACTIONS: Mapping[str, Step] = _Actions({**BOOKKEEPING_STEPS, **changes.workflow_steps(CHANGE_HANDLERS)})
"""Every task action the state machines use; a contract test checks the ASL uses only these."""


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


def run_step(rt: Runtime, event: dict[str, Any]) -> dict[str, Any]:
    """Run the step named by ``event["action"]``; returns its result as the ASL sees it (camelCase JSON).

    A payload with a ``taskToken`` is a round of an event-or-poll wait (:func:`waits.run_round`): the
    step is its check, and the outcome reaches the workflow through the token.

    Raises:
        StageFailed: unknown action, or a step failure (see :func:`call_step`).
    """
    payload = StepPayload.model_validate(event)
    step = ACTIONS.get(payload.action)
    if step is None:
        raise StageFailed("UnknownAction", f"unknown step action {payload.action!r}")
    if payload.task_token:
        result: BaseModel = waits.run_round(rt, payload, lambda r, p: call_step(step, r, p))
    else:
        result = call_step(step, rt, payload)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)
