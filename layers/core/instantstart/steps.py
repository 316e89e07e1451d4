"""Dispatch of Step Functions task payloads to the workflow steps of every use-case area (the steps function's core).

Importing this module imports each area's ``steps`` module, which registers what the area owns in
:data:`~instantstart.clusters.registry.REGISTRY` (:mod:`instantstart.clusters.steps`: the stages, the bookkeeping and
the update workflow's steps, the cluster's own day-2 changes; ``features``, ``mlflow``, ``training`` and
``inference``: their day-2 changes and teardown hooks). Those modules name the modules of their steps without
importing them, so a cold start pays for none of them and an invocation imports only the area of its action.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from instantstart.clusters import steps as clusters_steps
from instantstart.clusters import waits
from instantstart.clusters.changes import ClusterChange
from instantstart.clusters.registry import REGISTRY
from instantstart.clusters.stages.common import Step
from instantstart.errors import StageFailed
from instantstart.features import steps as features_steps
from instantstart.inference import steps as inference_steps
from instantstart.mlflow import steps as mlflow_steps
from instantstart.models.common import OperationType
from instantstart.models.workflow import StepPayload
from instantstart.runtime import Runtime
from instantstart.training import steps as training_steps

AREAS = (clusters_steps, features_steps, mlflow_steps, training_steps, inference_steps)
"""Every area's ``steps`` module, bottom layer first (each registered on import)."""

REGISTRY.complete()


class _Actions(Mapping[str, Step]):
    """Every registered task action as its step (a step's module imported when it is looked up)."""

    def __getitem__(self, action: str) -> Step:
        step = REGISTRY.step(action)
        if step is None:
            raise KeyError(action)
        return step

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY.actions())

    def __len__(self) -> int:
        return len(REGISTRY.actions())


ACTIONS: Mapping[str, Step] = _Actions()
"""Every task action the state machines use; a contract test checks the ASL uses only these."""

CHANGE_HANDLERS: Mapping[OperationType, ClusterChange] = REGISTRY.changes()
"""The update workflow's handler of each kind of day-2 change (:mod:`instantstart.clusters.changes`)."""


def run_step(rt: Runtime, event: dict[str, Any]) -> dict[str, Any]:
    """Run the step named by ``event["action"]``; returns its result as the ASL sees it (camelCase JSON).

    A payload with a ``taskToken`` is a round of an event-or-poll wait (:func:`waits.run_round`): the
    step is its check, and the outcome reaches the workflow through the token.

    Raises:
        StageFailed: unknown action, or a step failure (see :func:`instantstart.clusters.steps.call_step`).
    """
    payload = StepPayload.model_validate(event)
    step = REGISTRY.step(payload.action)
    if step is None:
        raise StageFailed("UnknownAction", f"unknown step action {payload.action!r}")
    if payload.task_token:
        result: BaseModel = waits.run_round(rt, payload, lambda r, p: clusters_steps.call_step(step, r, p))
    else:
        result = clusters_steps.call_step(step, rt, payload)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)
