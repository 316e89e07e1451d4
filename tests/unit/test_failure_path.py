"""The single failure path (``records.record_failure``) of parallel branches: the operation keeps the root cause.

The create workflow runs the hyperpod and storage stages in parallel branches, each with its own failure path. When
the branch that met an AWS error fails its stage (and the stages running beside it) but cannot finish recording the
operation, the sibling branch finds its own stage no longer RUNNING and fails with ``StageInterrupted``: the
operation must still end with the first branch's AWS error, verbatim, on its stage.
"""

from __future__ import annotations

import json

import pytest

from instantstart.clusters import records
from instantstart.errors import StageFailed
from instantstart.models.common import StageName
from instantstart.models.records import OperationRecord
from instantstart.models.workflow import StepError
from instantstart.runtime import Runtime

pytestmark = pytest.mark.usefixtures("no_network")

NOT_FOUND = ("ResourceNotFoundException", "Requested resource not found")
HYPERPOD_ERROR = records.StageError(code=NOT_FOUND[0], message=NOT_FOUND[1])


def caught(error: str, code: str, message: str) -> StepError:
    """What a ``Catch`` hands the failure path when a step raised ``StageFailed(code, message)``."""
    cause = json.dumps({"errorType": error, "errorMessage": str(StageFailed(code, message))})
    return StepError(Error=error, Cause=cause)


INTERRUPTED_WAIT = caught("StageFailed", records.STAGE_INTERRUPTED, "stage storage of demo is no longer RUNNING")
"""What the storage branch's wait raises once its stage is no longer RUNNING."""


def fail_hyperpod(rt: Runtime) -> None:
    """The hyperpod branch's failure path as far as failing its own stage."""
    records.fail_stage(rt, tag="demo", generation=1, stage=StageName.HYPERPOD, error=HYPERPOD_ERROR)


def record_storage_failure(rt: Runtime, op: str, error: StepError) -> OperationRecord:
    """The storage branch's failure path with ``error``; the operation it leaves."""
    records.record_failure(rt, operation_id=op, tag="demo", generation=1, stage=StageName.STORAGE, error=error)
    operation = rt.store.get_operation(op)
    assert operation is not None
    return operation


@pytest.fixture
def branches(demo: Runtime) -> tuple[Runtime, str]:
    """Cluster ``demo`` with its hyperpod and storage stages RUNNING for the create operation."""
    op = str(demo.store.get_cluster("demo").current_operation_id)  # type: ignore[union-attr]
    for stage in (StageName.NETWORK, StageName.ACCESS, StageName.DEPENDENCIES):
        records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=stage)
        records.complete_stage(demo, operation_id=op, tag="demo", generation=1, stage=stage)
    for stage in (StageName.HYPERPOD, StageName.STORAGE):
        records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=stage)
    return demo, op


def test_given_a_branch_failed_its_stages_not_its_operation_when_the_sibling_is_interrupted_then_the_root_cause_wins(
    branches: tuple[Runtime, str],
) -> None:
    rt, op = branches
    # the hyperpod branch's failure path got this far, then died (its operation write never happened)
    fail_hyperpod(rt)
    interrupted = records.StageError(code=records.STAGE_INTERRUPTED, message="stopped because stage hyperpod failed")
    records.fail_running_stages(rt, tag="demo", generation=1, operation_id=op, error=interrupted)

    operation = record_storage_failure(rt, op, INTERRUPTED_WAIT)

    assert operation.status.value == "FAILED"
    assert operation.error is not None and (operation.error.code, operation.error.message) == NOT_FOUND
    stages = {s.name: s for s in rt.store.get_stages("demo", 1)}
    assert stages[StageName.HYPERPOD].error == HYPERPOD_ERROR
    assert stages[StageName.STORAGE].error == interrupted, "the interrupted stage says why it stopped"
    assert rt.store.get_cluster("demo").status.value == "FAILED"  # type: ignore[union-attr]


def test_given_only_an_interruption_when_recorded_then_the_operation_ends_with_it(
    branches: tuple[Runtime, str],
) -> None:
    rt, op = branches

    operation = record_storage_failure(rt, op, INTERRUPTED_WAIT)

    assert operation.error is not None
    assert operation.error.code == records.STAGE_INTERRUPTED, "no other failure to blame"


def test_given_a_failure_of_its_own_when_a_sibling_failed_earlier_then_its_own_error_is_recorded_on_the_operation(
    branches: tuple[Runtime, str],
) -> None:
    rt, op = branches
    fail_hyperpod(rt)
    own = caught("ClientError", "NoSuchBucket", "The specified bucket does not exist")

    operation = record_storage_failure(rt, op, own)

    assert operation.error is not None
    assert (operation.error.code, operation.error.message) == ("NoSuchBucket", "The specified bucket does not exist")
