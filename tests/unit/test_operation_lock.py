"""One operation per cluster, enforced by the write that starts it.

Several requests that read the same READY cluster (no operation running) start day-2 operations at the same time
(threads, against moto with DynamoDB's isolation): exactly one is recorded and started; every other one gets 409
``OperationInProgress`` naming the winner and its cancel route, and writes nothing. Once the winner ended, the next
start is accepted; a start that read the cluster before the winner began still loses.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from instantstart.clusters import changes, records, service
from instantstart.config import Settings
from instantstart.errors import Conflict
from instantstart.models.autoscaling import AutoScalingChange
from instantstart.models.cluster import CreateClusterRequest
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType
from instantstart.models.operation import OperationView
from instantstart.runtime import Runtime

TAG = "locked"
STARTS = 6


@pytest.fixture
def rt(aws: Any, table: str, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """A runtime over moto whose state machines exist (no workflow runs) and a READY cluster ``locked`` whose create
    operation SUCCEEDED (its record stays the cluster's ``currentOperationId``, as after any operation)."""
    sfn = aws.client("stepfunctions")
    for env in ("CREATE", "UPDATE", "DELETE"):
        arn = sfn.create_state_machine(
            name=env.lower(),
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn="arn:aws:iam::123456789012:role/workflows",
        )["stateMachineArn"]
        monkeypatch.setenv(f"{env}_CLUSTER_STATE_MACHINE_ARN", arn)
    runtime = Runtime(Settings())
    request = {
        "clusterTag": TAG,
        "availabilityZone": "us-west-2c",
        "instanceGroups": [{"instanceType": "ml.g6.4xlarge", "instanceCount": 1}],
    }
    create = service.create_cluster(runtime, CreateClusterRequest.model_validate(request))
    records.finish_operation(
        runtime,
        operation_id=create.operation_id,
        tag=TAG,
        status=OperationStatus.SUCCEEDED,
        cluster_status=ClusterStatus.READY,
    )
    return runtime


def start_day2(rt: Runtime) -> OperationView:
    cluster = records.live_cluster(rt, TAG)
    return changes.start_change(rt, cluster, OperationType.UPDATE_AUTOSCALING, AutoScalingChange(enabled=False))


def concurrently(rt: Runtime, starts: int) -> tuple[list[OperationView], list[Conflict]]:
    """``starts`` threads each read the cluster, wait for the others, then start a day-2 operation."""
    barrier = threading.Barrier(starts)
    won: list[OperationView] = []
    lost: list[Conflict] = []

    def one() -> None:
        cluster = records.live_cluster(rt, TAG)
        barrier.wait()
        try:
            won.append(
                changes.start_change(rt, cluster, OperationType.UPDATE_AUTOSCALING, AutoScalingChange(enabled=False))
            )
        except Conflict as exc:
            lost.append(exc)

    threads = [threading.Thread(target=one) for _ in range(starts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won, lost


def test_given_concurrent_day2_starts_then_exactly_one_wins_and_the_others_get_409_naming_it(rt: Runtime) -> None:
    won, lost = concurrently(rt, STARTS)

    assert len(won) == 1 and len(lost) == STARTS - 1, (won, [e.message for e in lost])
    winner = won[0].operation_id
    for refused in lost:
        assert refused.code == "OperationInProgress"  # a Conflict: HTTP 409
        assert winner in refused.message and f"POST /operations/{winner}/cancel" in refused.message
        assert refused.details[0]["operationId"] == winner
        assert refused.details[0]["cancel"] == f"POST /operations/{winner}/cancel"
    assert rt.store.get_cluster(TAG).current_operation_id == winner  # type: ignore[union-attr]
    operations, _ = rt.store.list_operations(TAG, 50, None)
    assert [op.type for op in operations] == [OperationType.UPDATE_AUTOSCALING, OperationType.CREATE_CLUSTER]


def test_given_the_winner_ended_then_the_next_start_is_accepted_and_a_start_read_before_it_loses(
    rt: Runtime,
) -> None:
    stale = records.live_cluster(rt, TAG)  # read while the create was the current (ended) operation
    first = start_day2(rt)

    with pytest.raises(Conflict) as while_running:
        start_day2(rt)
    records.finish_operation(
        rt, operation_id=first.operation_id, tag=TAG, status=OperationStatus.SUCCEEDED, cluster_status=stale.status
    )
    second = start_day2(rt)
    with pytest.raises(Conflict) as from_stale_read:
        changes.start_change(rt, stale, OperationType.UPDATE_AUTOSCALING, AutoScalingChange(enabled=False))

    assert while_running.value.code == "OperationInProgress"
    assert while_running.value.details[0]["operationId"] == first.operation_id
    assert second.operation_id != first.operation_id
    assert from_stale_read.value.code == "OperationInProgress"
    assert from_stale_read.value.details[0]["operationId"] == second.operation_id


def test_given_a_delete_and_day2_starts_at_once_then_one_of_them_holds_the_cluster(rt: Runtime) -> None:
    cluster = records.live_cluster(rt, TAG)
    barrier = threading.Barrier(3)
    outcomes: list[Any] = []

    def run(start: Any) -> None:
        barrier.wait()
        try:
            outcomes.append(start())
        except Conflict as exc:
            outcomes.append(exc)

    starts = [
        lambda: service.delete_cluster(rt, TAG),
        lambda: changes.start_change(rt, cluster, OperationType.UPDATE_AUTOSCALING, AutoScalingChange(enabled=False)),
        lambda: changes.start_change(rt, cluster, OperationType.UPDATE_AUTOSCALING, AutoScalingChange(enabled=False)),
    ]
    threads = [threading.Thread(target=run, args=(s,)) for s in starts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    won = [o for o in outcomes if isinstance(o, OperationView)]
    assert len(won) == 1, outcomes
    assert all(isinstance(o, Conflict) for o in outcomes if o not in won)
    assert rt.store.get_cluster(TAG).current_operation_id == won[0].operation_id  # type: ignore[union-attr]
