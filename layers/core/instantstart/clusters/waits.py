"""Event-or-poll waits: how a workflow waits on AWS, and how an AWS event wakes it early.

A wait is a loop in the state machine: ``Check <X>`` asks AWS (a plain task), and while not done
``Wait For <X> Event`` — a ``.waitForTaskToken`` task whose timeout is the wait's poll interval
(≤ 60 s, ``$.config.pollSeconds.<wait>``) — stores its task token on the stage record
(:func:`wait_for_event`) and waits. An EventBridge event whose reconciler :func:`wake` s the wait
ends it at once; otherwise it times out; either way the loop checks again. The decision is always
the check's, so duplicate, late or out-of-order events are harmless, and a lost event (or one that
lands between the check and the stored token) costs at most one poll interval.

Used by the ``hyperpod`` stage (cluster InService) and the ``verify`` stage (nodes at target), and
by :mod:`instantstart.clusters.reconcile` for the events that wake them. Step Functions API:
https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskSuccess.html
"""

from __future__ import annotations

import json

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.errors import StageFailed
from instantstart.models.common import StageName
from instantstart.models.workflow import StepPayload, StepResult
from instantstart.runtime import Runtime

HYPERPOD_CLUSTER = "hyperPodCluster"
"""The ``hyperpod`` stage waits for the HyperPod cluster to be InService."""

NODES = "nodes"
"""The ``verify`` stage waits for every instance group's nodes (and the add-ons that need them)."""

_STALE_TOKEN_ERRORS = ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist")


def wait_for_event(rt: Runtime, p: StepPayload) -> StepResult:
    """Store the task token of the payload's wait (``stage``, ``waitName``) on the stage record, and return.

    The task then waits until :func:`wake` sends the token or its timeout (the poll interval) passes.

    Raises:
        StageFailed: the payload carries no task token, stage or wait name (``InvalidStepPayload``).
        ConditionFailed: the stage is not RUNNING (the operation moved on).
    """
    if not p.task_token or p.stage is None or not p.wait_name:
        raise StageFailed("InvalidStepPayload", f"{p.action} needs a task token, a stage and a wait name")
    rt.store.set_wait_token(p.cluster_tag, p.generation, p.stage, p.wait_name, p.task_token)
    return StepResult(status="waiting")


def finish_wait(rt: Runtime, task_token: str, *, done: bool) -> None:
    """End the waiting task: ``{"done": true}`` when the step saw the wait satisfied, ``false`` to check again.

    A token that was already used or timed out is ignored: the wait has moved on to a new token.
    """
    try:
        rt.client("stepfunctions").send_task_success(taskToken=task_token, output=json.dumps({"done": done}))
    except ClientError as exc:
        if error_code(exc) not in _STALE_TOKEN_ERRORS:
            raise


def wake(rt: Runtime, tag: str, generation: int, stage: StageName, wait: str) -> bool:
    """Wake ``wait`` of ``stage`` so it checks AWS now (an event said something changed).

    Only a RUNNING stage is woken; waking twice, late or for an ended operation is harmless (its token
    is stale or absent). Returns True when a token was sent.
    """
    record = rt.store.get_stage(tag, generation, stage)
    if record is None or record.status.value != "RUNNING":
        return False
    token = record.waits.get(wait)
    if not token:
        return False
    finish_wait(rt, token, done=False)
    return True
