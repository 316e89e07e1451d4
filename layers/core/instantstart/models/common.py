"""Shared model base and enumerations: the one place API field names and allowed values live."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """Base of every HTTP API model: camelCase JSON, unknown fields rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True)

    def to_api(self) -> dict[str, object]:
        """The camelCase JSON-ready dict of this model."""
        return self.model_dump(mode="json", by_alias=True)


class ClusterStatus(StrEnum):
    """Lifecycle of a managed cluster: ``CREATING -> READY | DEGRADED | FAILED``, ``DELETING -> DELETED``.

    ``FAILED``: a create, retry or delete failed or was cancelled; the cluster can be retried or deleted.

    ``DEGRADED``: usable with fewer nodes than asked. The instance groups did not reach their target
    count in time (the create operation FAILED with the reason); HyperPod keeps provisioning, and the
    cluster turns READY by itself when the nodes arrive.
    """

    CREATING = "CREATING"
    READY = "READY"
    DEGRADED = "DEGRADED"
    FAILED = "FAILED"
    DELETING = "DELETING"
    DELETED = "DELETED"


class StageStatus(StrEnum):
    """Lifecycle of one stage: ``PENDING -> RUNNING -> SUCCEEDED | FAILED | CANCELLED``.

    ``CANCELLED``: the stage was running when its operation was cancelled (``POST
    /operations/{operationId}/cancel``, or the execution stopped in Step Functions). Like a FAILED
    stage it can be retried, and its cluster can be deleted.
    """

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class OperationStatus(StrEnum):
    """Lifecycle of an operation (one Step Functions execution)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        """True for SUCCEEDED, FAILED and CANCELLED."""
        return self in (OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED)


class OperationType(StrEnum):
    """Kinds of long-running operations."""

    CREATE_CLUSTER = "CREATE_CLUSTER"
    DELETE_CLUSTER = "DELETE_CLUSTER"
    RETRY_STAGE = "RETRY_STAGE"
    IMPORT_CLUSTER = "IMPORT_CLUSTER"
    SCALE_INSTANCE_GROUP = "SCALE_INSTANCE_GROUP"
    ADD_INSTANCE_GROUP = "ADD_INSTANCE_GROUP"
    UPDATE_INSTANCE_GROUP = "UPDATE_INSTANCE_GROUP"
    DELETE_INSTANCE_GROUP = "DELETE_INSTANCE_GROUP"
    UPDATE_AUTOSCALING = "UPDATE_AUTOSCALING"
    UPDATE_FEATURES = "UPDATE_FEATURES"
    REBOOT_CLUSTER_NODES = "REBOOT_CLUSTER_NODES"
    REPLACE_CLUSTER_NODES = "REPLACE_CLUSTER_NODES"
    DELETE_CLUSTER_NODES = "DELETE_CLUSTER_NODES"
    UPDATE_CLUSTER_SOFTWARE = "UPDATE_CLUSTER_SOFTWARE"
    START_CLUSTER_HEALTH_CHECK = "START_CLUSTER_HEALTH_CHECK"
    CREATE_TRAINING_JOB = "CREATE_TRAINING_JOB"
    DELETE_TRAINING_JOB = "DELETE_TRAINING_JOB"
    UPDATE_MLFLOW = "UPDATE_MLFLOW"
    DOWNLOAD_MODEL = "DOWNLOAD_MODEL"
    CREATE_INFERENCE_DEPLOYMENT = "CREATE_INFERENCE_DEPLOYMENT"
    UPDATE_INFERENCE_DEPLOYMENT = "UPDATE_INFERENCE_DEPLOYMENT"
    DELETE_INFERENCE_DEPLOYMENT = "DELETE_INFERENCE_DEPLOYMENT"
    CREATE_INFERENCE_ROUTER = "CREATE_INFERENCE_ROUTER"
    CREATE_INFERENCE_ENDPOINT = "CREATE_INFERENCE_ENDPOINT"
    DELETE_INFERENCE_ENDPOINT = "DELETE_INFERENCE_ENDPOINT"
    RECONCILE_CLUSTER = "RECONCILE_CLUSTER"

    @property
    def day2(self) -> bool:
        """True for a day-2 change of a running cluster (the update workflow): an instance group, autoscaling,
        features, nodes, its software, a deep health check, a training job, the MLflow connection, a model download,
        an inference deployment or a drift repair (``RECONCILE_CLUSTER``); False for a
        create, retry or delete of the cluster."""
        return self not in (OperationType.CREATE_CLUSTER, OperationType.DELETE_CLUSTER, OperationType.RETRY_STAGE)

    @property
    def locks_cluster(self) -> bool:
        """True when the operation holds the cluster's operation lock (``currentOperationId``) while it runs; False
        for a model download, which changes nothing of the cluster's shape and holds a per-model guard instead
        (``records.OperationGuardRecord``): day-2 operations proceed beside it."""
        return self is not OperationType.DOWNLOAD_MODEL


class StageName(StrEnum):
    """Stages of cluster creation, in execution order (teardown runs them in reverse)."""

    NETWORK = "network"
    ACCESS = "access"
    DEPENDENCIES = "dependencies"
    HYPERPOD = "hyperpod"
    STORAGE = "storage"
    VERIFY = "verify"

    @property
    def order(self) -> int:
        """1-based position of the stage in the creation workflow."""
        return list(StageName).index(self) + 1

    @property
    def display_name(self) -> str:
        """The stage's name in state names of the workflows (``Begin HyperPod Stage``)."""
        return "HyperPod" if self is StageName.HYPERPOD else self.value.title()


class CapacityType(StrEnum):
    """How an instance group's capacity is paid for (HyperPod ``CapacityRequirements``)."""

    ON_DEMAND = "OnDemand"
    SPOT = "Spot"
    TRAINING_PLAN = "TrainingPlan"


_clock: Callable[[], float] | None = None
"""The time source of :func:`utcnow` (epoch seconds); None: the system clock."""


_sleep: Callable[[float], None] | None = None
"""How :func:`sleep` waits (seconds of the installed clock); None: ``time.sleep``."""


def set_clock(clock: Callable[[], float] | None, sleep: Callable[[float], None] | None = None) -> None:
    """Replace the time source of :func:`utcnow` (epoch seconds) and the wait of :func:`sleep`, or restore the system
    clock and ``time.sleep`` with None.

    Every record timestamp comes from :func:`utcnow`, and so do the waits measured from them (an add-on's
    grace after the nodes were Ready): an emulator that compresses time installs its clock here.
    """
    global _clock, _sleep
    _clock = clock
    _sleep = sleep


def sleep(seconds: float) -> None:
    """Wait ``seconds`` of the installed clock (:func:`set_clock`; the system's by default): a paced loop's wait."""
    if _sleep is not None:
        _sleep(seconds)
    else:
        time.sleep(max(0.0, seconds))


def epoch_seconds() -> float:
    """The installed clock's time (epoch seconds, :func:`set_clock`)."""
    return time.time() if _clock is None else _clock()


def utcnow() -> datetime:
    """The current UTC time (timezone-aware), from the installed clock (:func:`set_clock`)."""
    return datetime.now(UTC) if _clock is None else datetime.fromtimestamp(_clock(), UTC)


def seconds_between(earlier: str, later: str) -> float:
    """Seconds from one ISO-8601 record timestamp (``...Z``) to another (negative when ``later`` is earlier)."""
    return (
        datetime.fromisoformat(later.replace("Z", "+00:00")) - datetime.fromisoformat(earlier.replace("Z", "+00:00"))
    ).total_seconds()


def iso(ts: datetime | None) -> str | None:
    """ISO-8601 UTC with a ``Z`` suffix, or None."""
    if ts is None:
        return None
    return ts.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
