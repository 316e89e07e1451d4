"""Why a pod is not running, read from the pod as Kubernetes reports it (pure; no API call).

Two sources, in this order:

- the kubelet: a container ``state.waiting`` whose ``reason`` is a fault (:data:`WAITING_FAULTS`: the image cannot
  be pulled (``ErrImagePull``, then ``ImagePullBackOff``), the image name is invalid, the container cannot be
  created or keeps crashing) with the kubelet's ``message`` verbatim;
- the scheduler: the ``PodScheduled`` condition ``False`` with reason ``Unschedulable`` and the scheduler's message
  (``0/3 nodes are available: 3 Insufficient nvidia.com/gpu.``, ``persistentvolumeclaim "s3-claim" not found``).

``ContainerCreating`` and ``PodInitializing`` are normal steps of a start, never a problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WAITING_FAULTS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
    }
)
"""Container waiting reasons that mean the container will not start without a change (or keeps failing)."""
UNSCHEDULABLE = "Unschedulable"


@dataclass(frozen=True)
class PodProblem:
    """Why one pod does not run.

    Attributes:
        pod: the pod's name.
        reason: the kubelet's waiting reason (``ErrImagePull``, ``ImagePullBackOff``, ...) or ``Unschedulable``.
        message: the kubelet's or the scheduler's message, verbatim (may be empty).
        container: the container waiting (None for ``Unschedulable``).
    """

    pod: str
    reason: str
    message: str
    container: str | None = None

    def describe(self) -> str:
        """One line for a user: ``pod <name>: <reason> (<container>): <message>``."""
        where = f" (container {self.container})" if self.container else ""
        return f"pod {self.pod}: {self.reason}{where}: {self.message}".rstrip(": ")


def pod_problem(pod: dict[str, Any]) -> PodProblem | None:
    """The problem of one pod (``v1 Pod`` as a dict), or None when nothing holds it.

    A waiting container with a fault reason wins over the scheduling condition (a pod with a failing image is
    scheduled already); init containers are looked at first, as the kubelet starts them first.
    """
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    name = str(meta.get("name") or "")
    if status.get("phase") in ("Succeeded", "Failed"):
        return None
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            reason = str(waiting.get("reason") or "")
            if reason in WAITING_FAULTS:
                return PodProblem(name, reason, str(waiting.get("message") or ""), str(cs.get("name") or "") or None)
    for cond in status.get("conditions") or []:
        scheduled = cond.get("type") == "PodScheduled" and str(cond.get("status")) == "False"
        if scheduled and cond.get("reason") == UNSCHEDULABLE:
            return PodProblem(name, UNSCHEDULABLE, str(cond.get("message") or ""))
    return None


def pod_problems(pods: list[dict[str, Any]]) -> list[PodProblem]:
    """The problems of ``pods`` (those that have one), in the pods' order."""
    return [p for pod in pods if (p := pod_problem(pod)) is not None]


def summary(problems: list[PodProblem]) -> str | None:
    """One sentence naming the first problem and how many pods share its reason, or None without problems."""
    if not problems:
        return None
    first = problems[0]
    same = sum(1 for p in problems if p.reason == first.reason)
    more = f" ({same} pods: {first.reason})" if same > 1 else ""
    return f"{first.describe()}{more}"
