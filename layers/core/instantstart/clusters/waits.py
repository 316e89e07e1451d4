"""Event-or-poll waits: how a workflow waits on AWS, and how an AWS event wakes it early.

A wait is one ``.waitForTaskToken`` task, ``Check <X>``, looping on itself: its Lambda checks AWS
(:func:`run_round`). Done: the Lambda completes its own task (``{"done": true}``) and the workflow
moves on. Not done: it stores the task token on the stage record and returns; the task then waits
until an EventBridge reconciler :func:`wake` s it (``{"done": false}``: check again now) or until its
timeout, the wait's poll interval (``$.config.pollSeconds.<wait>``, a minute or less for waits on
AWS), after which a ``Catch`` of ``States.Timeout`` enters the same task again. A round costs one
state transition when it times out and two when an event wakes it (the task and the Choice after
it). The decision is always the check's, so duplicate, late or out-of-order events are harmless,
and a lost event (or one that lands between the check and the stored token) costs at most one poll
interval.

A check that outlives its task (it ran longer than the timeout) loses its answer: when that answer
was "done", it is recorded (``waitsSatisfied``) and the next round completes at once, so a slow check
cannot starve a wait that is already satisfied.

The bound is the wait's time budget: rounds that ended by timeout are counted on the stage record
(``waitRounds``; woken rounds are not, so a burst of events cannot exhaust it), and at
``$.config.maxPolls.<wait>`` the task fails with ``PollTimeout``; so it does once ``maxPolls`` poll intervals have
passed since the first round (``waitStarted``), or a wait that events wake more often than it polls (HyperPod's
Error event of each failed launch while capacity is short) would never end. Waits without events (EKS, NAT
gateway, Kubernetes access, the storage claim) are the same loop with nothing that wakes them. The storage
stage's wait for Kubernetes access (``storageAccess``) is woken by the workflow itself, when the ``access``
stage completes, so its poll interval is long (a safety net for a lost wake, not the way it learns), and its rounds
do not spend its budget while the ``access`` stage is still PENDING or RUNNING (``PollResult.held``: that stage's
own waits bound it; a failed ``access`` stage interrupts the storage branch).

Used by every create wait (``hyperpod``: cluster InService; ``verify``: nodes at target; ...), and by
:mod:`instantstart.clusters.reconcile` for the events that wake them. Step Functions API:
https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskSuccess.html
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel

from instantstart.aws.clients import error_code
from instantstart.clusters.records import STAGE_INTERRUPTED
from instantstart.errors import PollTimeout, StageFailed
from instantstart.models.common import StageName, utcnow
from instantstart.models.workflow import LoopConfig, PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime
from instantstart.store.table import ConditionFailed, WaitHolder

HYPERPOD_CLUSTER = "hyperPodCluster"
"""The ``hyperpod`` stage waits for the HyperPod cluster to be InService."""

NODES = "nodes"
"""The ``verify`` stage waits for every instance group's nodes (and the add-ons that need them)."""

_STALE_TOKEN_ERRORS = ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist")


def _budget(p: StepPayload) -> int:
    """``$.config.maxPolls.<wait>`` of the payload's wait (the wait's name is its configuration key)."""
    bounds = (p.config or LoopConfig()).max_polls.to_wire()
    if p.wait_name not in bounds:
        raise StageFailed("InvalidStepPayload", f"wait {p.wait_name!r} is not one of {sorted(bounds)}")
    return int(str(bounds[p.wait_name]))


def budget_spent(rounds: int, elapsed: float, budget: int, poll_seconds: Any) -> bool:
    """Whether a wait's time budget is spent: ``budget`` rounds timed out, or ``budget`` poll intervals
    (``poll_seconds`` each) have passed since its first round (``elapsed`` seconds).

    Rounds woken by events are not counted, so the seconds since the first round bound a wait that events wake
    more often than it polls. Also read by a check that must act on its wait's last round (a scale-up short of
    capacity fails with HyperPod's error instead of ``PollTimeout``).
    """
    timed = isinstance(poll_seconds, int | float) and poll_seconds > 0 and elapsed >= budget * poll_seconds
    return budget > 0 and (rounds >= budget or timed)


def holder_of(p: StepPayload) -> WaitHolder:
    """The record holding the payload's wait: its stage's record, or (no stage: a day-2 operation) the operation's."""
    if p.stage is not None:
        return WaitHolder.stage(p.cluster_tag, p.generation, p.stage)
    return WaitHolder.operation(p.operation_id)


def run_round(rt: Runtime, p: StepPayload, check: Callable[[Runtime, StepPayload], BaseModel]) -> StepResult:
    """One round of the wait named by the payload (``stage`` or none, ``waitName``, ``taskToken``): check, then decide.

    The wait's token and rounds are held by the stage's record, or by the operation's own record when the
    payload names no stage (a day-2 operation: :func:`holder_of`).

    ``check`` answers a :class:`PollResult`; any error it raises must already carry its Step Functions
    error name (``instantstart.clusters.steps`` converts AWS errors before calling this). Done: the
    task is completed with ``{"done": true, "status"}``. Failed: the task fails with the error's name and
    a Lambda-style cause (so ``Retry``/``Catch`` and the failure path see what a raising Lambda gives).
    Otherwise the token is stored for :func:`wake`; past the budget the task fails with ``PollTimeout``.

    Raises:
        StageFailed: the payload is not a wait's (no token or wait name).
    """
    if not p.task_token or not p.wait_name:
        raise StageFailed("InvalidStepPayload", f"{p.action} needs a task token and a wait name")
    token, wait = p.task_token, p.wait_name
    holder = holder_of(p)
    with rt.store.reusing_reads():  # the holder's record is read by the satisfied-check, then by the check
        return _round(rt, p, check, holder, token, wait)


def _round(
    rt: Runtime,
    p: StepPayload,
    check: Callable[[Runtime, StepPayload], BaseModel],
    holder: WaitHolder,
    token: str,
    wait: str,
) -> StepResult:
    try:
        if rt.store.wait_satisfied(holder, wait, p.action):
            # a previous round saw it done, but its answer reached a task that had timed out
            _complete(rt, token, {"done": True, "status": "done (seen by the previous check)"})
            return StepResult(status="done")
        result = PollResult.model_validate(check(rt, p).model_dump())
        if result.done:
            rt.store.end_wait(holder, wait)
            if not _complete(rt, token, {"done": True, "status": result.status}):
                rt.store.mark_wait_satisfied(holder, wait, p.action)
            return StepResult(status=result.status)
        budget = _budget(p)
        seconds = (p.config or LoopConfig()).poll_seconds.to_wire().get(wait)
        try:
            rounds, elapsed = rt.store.start_wait_round(holder, wait, token, now=utcnow().timestamp())
        except ConditionFailed as exc:
            raise StageFailed(STAGE_INTERRUPTED, f"{holder.what} is no longer RUNNING") from exc
        if result.held:
            rt.store.restart_wait_budget(holder, wait, now=utcnow().timestamp())
        elif budget_spent(rounds, elapsed, budget, seconds):
            rt.store.end_wait(holder, wait)
            raise PollTimeout("PollTimeout", f"{p.action} did not finish within {budget} polls of {seconds} seconds")
    except Exception as exc:  # noqa: BLE001 - reported to the task, as a raising Lambda would be
        _fail(rt, token, exc)
        return StepResult(status=f"failed: {type(exc).__name__}")
    return StepResult(status=f"waiting: {result.status}" if result.status else "waiting")


def _complete(rt: Runtime, task_token: str, output: dict[str, Any]) -> bool:
    """Send ``output`` as the task's result; False when the task had already ended (timed out)."""
    try:
        rt.client("stepfunctions").send_task_success(taskToken=task_token, output=json.dumps(output))
    except ClientError as exc:
        if error_code(exc) not in _STALE_TOKEN_ERRORS:
            raise
        return False
    return True


def task_failure(exc: Exception) -> tuple[str, str]:
    """``(error, cause)`` of a task failing as a Lambda raising ``exc`` would: the class name, the Lambda error JSON."""
    name = type(exc).__name__
    return name, json.dumps({"errorType": name, "errorMessage": str(exc)})


def _fail(rt: Runtime, task_token: str, exc: Exception) -> None:
    name, cause = task_failure(exc)
    try:
        rt.client("stepfunctions").send_task_failure(taskToken=task_token, error=name[:256], cause=cause[:32768])
    except ClientError as err:
        if error_code(err) not in _STALE_TOKEN_ERRORS:
            raise


def finish_wait(rt: Runtime, task_token: str, *, done: bool) -> None:
    """End the waiting task: ``{"done": true}`` when the wait is satisfied, ``false`` to check again now.

    A token that was already used or timed out is ignored: the wait has moved on to a new token.
    """
    _complete(rt, task_token, {"done": done})


def wake(rt: Runtime, tag: str, generation: int, stage: StageName, wait: str) -> bool:
    """Wake ``wait`` of ``stage`` so it checks AWS now (an event said something changed).

    Only a RUNNING stage's stored token is taken (once: two events never both send it); waking twice,
    late or for an ended operation is harmless. Returns True when a token was sent.
    """
    return _wake(rt, WaitHolder.stage(tag, generation, stage), wait)


def wake_operation(rt: Runtime, operation_id: str, wait: str) -> bool:
    """Wake ``wait`` of a day-2 operation (one without stages: it waits on its own record), as :func:`wake`."""
    return _wake(rt, WaitHolder.operation(operation_id), wait)


def _wake(rt: Runtime, holder: WaitHolder, wait: str) -> bool:
    token = rt.store.consume_wait_token(holder, wait)
    if not token:
        return False
    finish_wait(rt, token, done=False)
    return True
