"""The reconciliation sweep's own logic over moto's DynamoDB (the template's table): pacing, the cursor that lets the
next sweep continue where a sweep ran out of time, the claims that keep two sweeps at once off each other's
clusters, and the summary. The per-cluster checks are stand-ins here; tests/integration/test_reconcile_sweep.py runs
the real ones in the sandbox."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart.clusters import sweep
from instantstart.clusters.sweep import CLAIM_SECONDS, STOP_MARGIN_SECONDS, Pacer, run_sweep
from instantstart.clusters.sweep_checks import CHECKS, SweepContext, check_degraded, check_operation
from instantstart.models.common import ClusterStatus, set_clock
from instantstart.models.records import ClusterRecord
from instantstart.runtime import Runtime
from tests.unit.test_store_table import new_cluster


class FakeTime:
    """A clock and its sleep: sleeping moves the clock (no wall time passes)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def fake_time() -> Any:
    t = FakeTime()
    set_clock(t.clock, t.sleep)
    yield t
    set_clock(None)


def _clusters(runtime: Runtime, count: int) -> list[str]:
    tags = [f"c{i:03d}" for i in range(count)]
    for tag in tags:
        new_cluster(runtime.store, tag)
    return tags


def _recording(seen: list[str]) -> Any:
    def check(ctx: SweepContext, cluster: ClusterRecord) -> str | None:
        seen.append(cluster.cluster_tag)
        return None

    return check


def test_the_pacer_spaces_clusters_by_the_pace_on_the_records_clock(fake_time: FakeTime) -> None:
    pacer = Pacer(2.0, clock=fake_time.clock, wait=fake_time.sleep)

    for _ in range(5):
        pacer.pace()

    assert fake_time.slept == [0.5] * 4, "the first cluster starts at once, each next one half a second later"


def test_given_time_left_the_sweep_checks_every_cluster_once_in_tag_order_at_its_pace(
    runtime: Runtime, fake_time: FakeTime
) -> None:
    tags = _clusters(runtime, 7)
    seen: list[str] = []

    summary = run_sweep(runtime, remaining_seconds=lambda: 900, checks=(_recording(seen),), page_size=3)

    assert seen == tags
    assert (summary.clusters_seen, summary.clusters_checked, summary.finished, summary.after_tag) == (7, 7, True, None)
    assert summary.seconds == pytest.approx(6 * 0.5), "7 clusters at 2 per second"
    assert summary.aws_calls["dynamodb:Query"] == 3 and summary.aws_calls["dynamodb:UpdateItem"] == 7
    assert runtime.store.sweep_cursor() is None


def test_given_a_sweep_that_runs_out_of_time_then_the_next_continues_after_the_last_cluster_it_reached(
    runtime: Runtime, fake_time: FakeTime
) -> None:
    tags = _clusters(runtime, 6)
    seen: list[str] = []
    budget = [STOP_MARGIN_SECONDS + 3]  # 3 checks' worth of time left above the margin

    def remaining() -> float:
        budget[0] -= 1
        return budget[0]

    first = run_sweep(runtime, remaining_seconds=remaining, checks=(_recording(seen),), page_size=4)

    assert not first.finished and first.after_tag == seen[-1] and seen == tags[: len(seen)] and 0 < len(seen) < 6
    assert runtime.store.sweep_cursor() == first.after_tag
    reached = list(seen)
    fake_time.now += CLAIM_SECONDS + 1
    seen.clear()

    second = run_sweep(runtime, remaining_seconds=lambda: 900, checks=(_recording(seen),), page_size=4)

    assert second.started_after == first.after_tag
    assert seen == tags[len(reached) :], "it continued where the first stopped, not from the first cluster"
    assert second.finished and runtime.store.sweep_cursor() is None


def test_given_two_sweeps_at_once_then_each_cluster_is_checked_by_one_of_them(
    runtime: Runtime, fake_time: FakeTime
) -> None:
    tags = _clusters(runtime, 4)
    first_seen: list[str] = []
    second_seen: list[str] = []
    second: list[Any] = []

    def first_check(ctx: SweepContext, cluster: ClusterRecord) -> str | None:
        first_seen.append(cluster.cluster_tag)
        if not second:  # the second sweep starts while the first checks its first cluster
            second.append(run_sweep(runtime, remaining_seconds=lambda: 900, checks=(_recording(second_seen),)))
        return None

    first = run_sweep(runtime, remaining_seconds=lambda: 900, checks=(first_check,))

    assert sorted(first_seen + second_seen) == tags, "every cluster checked exactly once"
    assert first_seen == tags[:1] and second_seen == tags[1:]
    assert first.clusters_skipped == 3 and second[0].clusters_skipped == 1
    fake_time.now += CLAIM_SECONDS + 1
    first_seen.clear()
    second.append("done")
    run_sweep(runtime, remaining_seconds=lambda: 900, checks=(first_check,))
    assert first_seen == tags, "claims expire: the next sweep checks every cluster again"


def test_deleted_clusters_are_seen_but_not_checked_and_a_failing_check_does_not_stop_the_sweep(
    runtime: Runtime, fake_time: FakeTime
) -> None:
    tags = _clusters(runtime, 3)
    runtime.store._db.update_item(
        TableName=runtime.settings.TABLE_NAME,
        Key={"PK": {"S": "CLUSTER#c001"}, "SK": {"S": "META"}},
        UpdateExpression="SET #s = :d",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":d": {"S": ClusterStatus.DELETED.value}},
    )
    seen: list[str] = []

    def failing(ctx: SweepContext, cluster: ClusterRecord) -> str | None:
        seen.append(cluster.cluster_tag)
        if cluster.cluster_tag == tags[0]:
            raise RuntimeError("AWS said no")
        return "acted"

    summary = run_sweep(runtime, remaining_seconds=lambda: 900, checks=(failing,))

    assert seen == [tags[0], tags[2]]
    assert (summary.clusters_seen, summary.clusters_checked, summary.errors) == (3, 2, 1)
    assert summary.actions == {"acted": 1}


def test_the_checks_list_names_each_check_once() -> None:
    assert CHECKS[:2] == (check_operation, check_degraded) and len(set(CHECKS)) == len(CHECKS)
    assert sweep.CLUSTERS_PER_SECOND * (900 - STOP_MARGIN_SECONDS) >= 1000, "1,000 clusters fit one invocation"


def test_an_operation_left_pending_is_started_as_the_api_starts_its_type_and_an_import_is_not(runtime: Runtime) -> None:
    from instantstart.clusters.sweep_checks import restart_spec
    from instantstart.models.common import OperationType, StageName
    from instantstart.models.records import OperationRecord

    def op(kind: OperationType, stage: StageName | None = None) -> OperationRecord:
        return OperationRecord(
            operation_id="op-1", type=kind, cluster_tag="t", generation=1, stage=stage, created_at="x", updated_at="x"
        )

    s = runtime.settings
    assert restart_spec(runtime, op(OperationType.CREATE_CLUSTER)) == (
        s.CREATE_CLUSTER_STATE_MACHINE_ARN,
        StageName.NETWORK,
    )
    assert restart_spec(runtime, op(OperationType.RETRY_STAGE, StageName.STORAGE)) == (
        s.CREATE_CLUSTER_STATE_MACHINE_ARN,
        StageName.STORAGE,
    )
    assert restart_spec(runtime, op(OperationType.DELETE_CLUSTER)) == (
        s.DELETE_CLUSTER_STATE_MACHINE_ARN,
        StageName.VERIFY,
    )
    assert restart_spec(runtime, op(OperationType.SCALE_INSTANCE_GROUP)) == (
        s.UPDATE_CLUSTER_STATE_MACHINE_ARN,
        StageName.HYPERPOD,
    )
    assert restart_spec(runtime, op(OperationType.IMPORT_CLUSTER)) is None
    # and the sweep looks for an import's execution where the API starts it: on the create workflow
    from instantstart.clusters.executions import operation_execution_arn

    machine = s.CREATE_CLUSTER_STATE_MACHINE_ARN.rpartition(":stateMachine:")[2]
    assert f":execution:{machine}:op-1" in operation_execution_arn(runtime, op(OperationType.IMPORT_CLUSTER))


def test_describe_executions_answer_becomes_the_status_change_events_detail() -> None:
    """The sweep feeds the event reconciler the event's own shape (events/eventbridge_sfn_execution_status_change.json,
    from AWS's reference), built from DescribeExecution's members of the same names."""
    import json
    from pathlib import Path

    from instantstart.clusters.sweep_checks import execution_detail

    sample = json.loads(
        (Path(__file__).parents[2] / "events" / "eventbridge_sfn_execution_status_change.json").read_text()
    )
    described = {**sample["detail"], "ResponseMetadata": {"HTTPStatusCode": 200}, "redriveCount": 0}

    detail = execution_detail(described)

    assert detail == {
        k: sample["detail"][k]
        for k in ("executionArn", "stateMachineArn", "name", "status", "error", "cause")
        if sample["detail"].get(k) is not None
    }
