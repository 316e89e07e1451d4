"""Training job answers: the job's status, the 202 of ``POST``/``DELETE``, the list, the detail and the logs.

Routes ``/clusters/{clusterTag}/training-jobs`` (``GET``) and ``.../training-jobs/{name}`` (``GET``, ``/logs``);
the request models are in :mod:`instantstart.models.training_jobs`, which re-exports these.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from instantstart.models.common import ApiModel
from instantstart.models.operation import OperationView


class TrainingJobStatus(StrEnum):
    """A job's status, read from its custom resource."""

    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class TrainingJobAccepted(ApiModel):
    """Body of the 202 of ``POST`` and ``DELETE``: the job and the operation that applies (or deletes) it."""

    name: str = Field(description="Job name.", examples=["llama-sft-1"])
    namespace: str = Field(description="Namespace of the job.", examples=["default"])
    kind: str = Field(description="Custom resource kind.", examples=["HyperPodPyTorchJob"])
    operation: OperationView = Field(description="The operation to poll (GET /operations/{operationId}).")


class TrainingJobSummary(ApiModel):
    """One job of ``GET /clusters/{clusterTag}/training-jobs``."""

    name: str = Field(examples=["llama-sft-1"], description="Job name.")
    namespace: str = Field(examples=["default"], description="Namespace.")
    kind: str = Field(examples=["HyperPodPyTorchJob"], description="HyperPodPyTorchJob or RayJob.")
    recipe: str | None = Field(default=None, description="Recipe it was built from (null: not created by us).")
    status: TrainingJobStatus = Field(
        description="Pending, Running, Restarting, Succeeded, Failed or Unknown.", examples=["Running"]
    )
    restarts: int = Field(
        description="Restarts of the job so far: the operator's status.restartCount (pod-level and full-job restarts)."
    )
    created_at: str | None = Field(
        default=None, description="creationTimestamp (ISO-8601 UTC).", examples=["2026-12-01T05:30:00Z"]
    )
    age_seconds: int | None = Field(default=None, description="Seconds since creation.")


class TrainingJobList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/training-jobs``."""

    training_jobs: list[TrainingJobSummary] = Field(description="Jobs, newest first.")
    next_token: str | None = Field(default=None, description="Pass as nextToken for the next page (null: last).")


class JobCondition(ApiModel):
    """One status condition of the custom resource, verbatim."""

    type: str = Field(description="Condition type.")
    status: str = Field(description="True, False or Unknown.", examples=["True"])
    reason: str | None = Field(default=None, description="Reason.")
    message: str | None = Field(default=None, description="Message.")
    last_transition_time: str | None = Field(default=None, description="When it changed.")


class JobPod(ApiModel):
    """One pod of a job."""

    name: str = Field(description="Pod name.")
    node_name: str | None = Field(
        default=None, description="Node it runs on (null: not scheduled).", examples=["hyperpod-i-0123456789abcdef0"]
    )
    phase: str | None = Field(default=None, description="Pod phase.")
    restarts: int = Field(
        description="Restarts of this pod's containers in place (status.containerStatuses[].restartCount summed); "
        "a pod replaced on another node is a new pod whose count starts at 0."
    )
    rank: int | None = Field(default=None, description="Replica index (0: rank 0).")
    reason: str | None = Field(
        default=None,
        description="Why the pod does not run, as Kubernetes reports it: the kubelet's container waiting reason "
        "(ErrImagePull, ImagePullBackOff, InvalidImageName, CreateContainerConfigError, CrashLoopBackOff, ...) or "
        "Unschedulable (the scheduler's PodScheduled=False); null when nothing holds it.",
        examples=["ErrImagePull"],
    )
    message: str | None = Field(
        default=None, description="The kubelet's or the scheduler's message of reason, verbatim."
    )


class TrainingJobView(TrainingJobSummary):
    """Body of ``GET /clusters/{clusterTag}/training-jobs/{name}``."""

    spec: dict[str, Any] = Field(
        description="Spec summary: instanceType, nodes, nprocPerNode, image, command, runPolicy."
    )
    conditions: list[JobCondition] = Field(description="Status conditions, verbatim.")
    restart_history: list[JobCondition] = Field(
        description="Conditions that record a restart or a failure, oldest first."
    )
    pods: list[JobPod] = Field(description="The job's pods.")
    reason: str | None = Field(
        default=None,
        description="Why it Failed (the operator's message); or, while it has not ended, why it does not run: Kueue "
        "has not admitted it (the Workload's message, e.g. LocalQueue x doesn't exist), else the first pod problem "
        "(image pull failure with the kubelet's message, unschedulable with the scheduler's message). Null otherwise.",
    )


class TrainingJobLogs(ApiModel):
    """Body of ``GET .../training-jobs/{name}/logs``."""

    pod: str = Field(description="Pod the lines come from.")
    container: str | None = Field(default=None, description="Container.")
    text: str = Field(description="Log text (at most maxBytes; the tail is kept).")
    truncated: bool = Field(description="True when older lines were cut to fit the bound.")
