"""Event-or-poll waits: how a workflow waits on AWS, and how an AWS event wakes it early.

A wait is a Step Functions ``.waitForTaskToken`` task whose timeout is the wait's poll interval
(≤ 60 s, ``$.config.pollSeconds.<wait>``). Its step stores the task token on the stage record
*first*, then checks AWS; when the check is done it sends the token itself (``{"done": true}``).
Otherwise the task ends at the first of: an EventBridge event whose reconciler :func:`wake` s the
wait (``{"done": false}``: check again now), or the timeout (check again at the poll interval).
So there is no blind window, an event that arrives before the token is stored is not lost (the
check after storing sees its effect), and a lost event only costs one poll interval.

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
from instantstart.models.workflow import StepPayload
from instantstart.runtime import Runtime

HYPERPOD_CLUSTER = "hyperPodCluster"
"""The ``hyperpod`` stage waits for the HyperPod cluster to be InService."""

NODES = "nodes"
"""The ``verify`` stage waits for every instance group's nodes (and the add-ons that need them)."""

_STALE_TOKEN_ERRORS = ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist")


def begin_wait(rt: Runtime, p: StepPayload, stage: StageName, wait: str) -> str:
    """Store the task token of ``wait`` on the stage record, before the step checks AWS; returns the token.

    Raises:
        StageFailed: the payload carries no task token (``InvalidStepPayload``).
        ConditionFailed: the stage is not RUNNING (the operation moved on).
    """
    if not p.task_token:
        raise StageFailed("InvalidStepPayload", f"{p.action} needs a task token")
    rt.store.set_wait_token(p.cluster_tag, p.generation, stage, wait, p.task_token)
    return p.task_token


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
