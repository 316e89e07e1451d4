"""The contract between the state machines and the step functions: execution input, task payloads, results.

The ASL (``statemachines/build.py``) builds task payloads from the execution input; the steps answer
small results the ASL reads (``$.last.result.done`` after a wait, ``$.Payload.stage`` when a stage
begins). camelCase on the wire, like the HTTP API.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from instantstart.models.common import OperationType, StageName


class WorkflowModel(BaseModel):
    """Base of the workflow contract: camelCase, fields this version does not know are ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True)

    def to_wire(self) -> dict[str, object]:
        """The camelCase JSON-ready dict the ASL sees."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class PollSeconds(WorkflowModel):
    """Realistic poll intervals (seconds) of each wait loop.

    ``storage_access`` is long: that wait holds until another stage of the same workflow (``access``)
    SUCCEEDED, which wakes it; its poll only covers a wake that was lost (it landed before the token was stored).
    """

    nat_gateway: int = 15
    eks_cluster: int = 60
    kubernetes_access: int = 10
    addon: int = 15
    hyper_pod_cluster: int = 60
    storage_access: int = 300
    storage: int = 60
    verify: int = 15
    nodes: int = 60
    deletion: int = 30
    cluster_change: int = 60


class MaxPolls(WorkflowModel):
    """Bounds of each poll loop: interval x bound is the wait's time budget."""

    nat_gateway: int = 40
    eks_cluster: int = 30
    kubernetes_access: int = 30
    addon: int = 60
    hyper_pod_cluster: int = 60
    storage_access: int = 12
    storage: int = 60
    verify: int = 40
    nodes: int = 200
    deletion: int = 120
    cluster_change: int = 90


class LoopConfig(WorkflowModel):
    """Wait configuration of an execution (the ASL reads it through ``SecondsPath`` and bounds)."""

    poll_seconds: PollSeconds = Field(default_factory=PollSeconds)
    max_polls: MaxPolls = Field(default_factory=MaxPolls)
    node_wait_seconds: int = Field(
        default=2700,
        description="How long verify waits for every instance group to reach its target count of Ready nodes "
        "before the create ends FAILED (InsufficientCapacity) with the cluster DEGRADED.",
    )
    addon_grace_seconds: int = Field(
        default=600,
        description="How long an add-on may stay DEGRADED after the nodes are Ready before verify fails on it.",
    )


class ExecutionInput(WorkflowModel):
    """Input of a create, retry or delete execution (the execution's name is the operation id)."""

    operation_id: str
    operation_type: OperationType
    cluster_tag: str
    generation: int
    start_stage: StageName
    config: LoopConfig = Field(default_factory=LoopConfig)


class StepError(BaseModel):
    """A Step Functions ``Catch`` result: ``{"Error": name, "Cause": text}`` (the Lambda error JSON as cause)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    Error: str | None = None
    Cause: str | None = None


class StepPayload(WorkflowModel):
    """The payload of every task (built by the ASL from the execution input)."""

    action: str
    operation_id: str
    cluster_tag: str
    generation: int
    operation_type: OperationType | None = None
    stage: StageName | None = None
    task_token: str | None = None
    error: StepError | None = None
    config: LoopConfig | None = None
    wait_name: str | None = None


class StepResult(WorkflowModel):
    """The result of a one-shot step: a short summary of what it found or did."""

    status: str | None = None


class PollResult(WorkflowModel):
    """The result of one check of a poll loop: ``done`` ends the loop.

    ``held``: the wait is held by another stage of the same workflow that is still PENDING or RUNNING, within bounds
    of its own (the ``storage`` stage's wait for the ``access`` stage): the round does not spend the wait's budget,
    which starts afresh once that stage stops running. Otherwise the time the other stage takes (an EKS control plane
    slow to turn ACTIVE, IAM propagation retries) would count against this wait's budget as well as its own.
    """

    done: bool
    status: str | None = None
    held: bool = False


class StageStarted(WorkflowModel):
    """The result of ``begin_stage``: the stage now running (kept as ``$.currentStage`` for the failure path).

    ``skip`` is true for a stage that already SUCCEEDED (a retry walks the graph past it).
    """

    stage: StageName
    skip: bool = False
