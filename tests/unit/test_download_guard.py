"""Model downloads hold a guard of their model and destination, not the cluster's operation lock.

Against moto with DynamoDB's isolation (state machines exist, no workflow runs): concurrent downloads of one model to
one destination record exactly one operation, the others get 409 ``OperationInProgress`` naming it; another model or
another destination starts beside it, as does a day-2 change (and a download beside a running day-2 change); a
download's end (SUCCEEDED, FAILED, CANCELLED, an aborted execution, a start Step Functions refused) releases the guard
and writes nothing on the cluster record; a guard its end did not release is taken over; a cluster that is not
READY or DEGRADED takes no download; a cluster delete ends the downloads still running.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from botocore.exceptions import ClientError

from instantstart.clusters import changes, guarded, reconcile, records, service
from instantstart.config import Settings
from instantstart.errors import Conflict, UpstreamUnavailable
from instantstart.inference.cluster_access import DownloadModelChange
from instantstart.inference.downloads import download_guard
from instantstart.models.autoscaling import AutoScalingChange
from instantstart.models.cluster import CreateClusterRequest
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType
from instantstart.models.inference import DownloadModelRequest
from instantstart.models.operation import OperationView
from instantstart.runtime import Runtime
from instantstart.store.base import _Write

TAG = "guarded"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
STARTS = 5


@pytest.fixture
def rt(aws: Any, table: str, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """A runtime over moto whose state machines exist (no workflow runs) and a READY cluster ``guarded``."""
    sfn = aws.client("stepfunctions")
    for env in ("CREATE", "UPDATE", "DELETE"):
        arn = sfn.create_state_machine(
            name=env.lower(),
            definition=json.dumps(
                {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}
            ),
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


def start_download(rt: Runtime, model: str = MODEL, destination: str = "s3", revision: str = "main") -> OperationView:
    request = DownloadModelRequest.model_validate(
        {"source": "huggingface", "modelId": model, "destination": destination, "revision": revision}
    )
    cluster = records.live_cluster(rt, TAG)
    change = DownloadModelChange(request=request, bucket="bucket")
    return changes.start_change(rt, cluster, OperationType.DOWNLOAD_MODEL, change, guard=download_guard(request))


def start_day2(rt: Runtime) -> OperationView:
    cluster = records.live_cluster(rt, TAG)
    return changes.start_change(rt, cluster, OperationType.UPDATE_AUTOSCALING, AutoScalingChange(enabled=False))


def overwrite(rt: Runtime, pk: str, updates: dict[str, Any]) -> None:
    """Set attributes of item ``pk``/``META`` as another writer would (no condition but that it exists)."""
    rt.store._update(_Write(pk, "META", updates))


def finish(rt: Runtime, op: OperationView, status: OperationStatus = OperationStatus.SUCCEEDED) -> None:
    records.finish_operation(
        rt, operation_id=op.operation_id, tag=TAG, status=status, cluster_status=ClusterStatus.READY
    )


def test_given_concurrent_downloads_of_one_model_then_one_runs_and_the_others_get_409_naming_it(rt: Runtime) -> None:
    barrier = threading.Barrier(STARTS)
    won: list[OperationView] = []
    lost: list[Conflict] = []

    def one() -> None:
        barrier.wait()
        try:
            won.append(start_download(rt))
        except Conflict as exc:
            lost.append(exc)

    threads = [threading.Thread(target=one) for _ in range(STARTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(won) == 1 and len(lost) == STARTS - 1, (won, [e.message for e in lost])
    winner = won[0].operation_id
    for refused in lost:
        assert refused.code == "OperationInProgress", refused.message
        assert winner in refused.message and MODEL in refused.message
        assert refused.details[0]["cancel"] == f"POST /operations/{winner}/cancel"
        assert refused.details[0]["operationType"] == "DOWNLOAD_MODEL"
    assert [g.operation_id for g in rt.store.list_guards(TAG)] == [winner]
    operations, _ = rt.store.list_operations(TAG, 50, None)
    assert [op.type for op in operations].count(OperationType.DOWNLOAD_MODEL) == 1


def test_a_download_neither_takes_nor_needs_the_clusters_lock(rt: Runtime) -> None:
    create_id = records.live_cluster(rt, TAG).current_operation_id
    download = start_download(rt)
    assert records.live_cluster(rt, TAG).current_operation_id == create_id

    change = start_day2(rt)  # beside the running download
    other = start_download(rt, "Qwen/Qwen2.5-1.5B-Instruct")  # beside both
    fsx = start_download(rt, destination="fsx")  # same model, another destination
    with pytest.raises(Conflict) as other_revision:
        start_download(rt, revision="v2.0")  # same place, another revision: the files would mix

    assert records.live_cluster(rt, TAG).current_operation_id == change.operation_id
    assert other_revision.value.details[0]["operationId"] == download.operation_id
    finish(rt, download)
    finish(rt, other, OperationStatus.FAILED)
    cluster = records.live_cluster(rt, TAG)
    assert cluster.current_operation_id == change.operation_id and cluster.status is ClusterStatus.READY
    assert rt.store.get_operation(change.operation_id).status is OperationStatus.PENDING  # type: ignore[union-attr]
    assert [g.operation_id for g in rt.store.list_guards(TAG)] == [fsx.operation_id]
    assert start_download(rt).operation_id != download.operation_id  # the model is free again


def test_a_cancel_and_an_aborted_execution_release_the_guard_and_leave_the_cluster(rt: Runtime) -> None:
    change = start_day2(rt)
    before = rt.store.get_cluster(TAG)
    download = start_download(rt)

    cancelled = service.cancel_operation(rt, download.operation_id)
    second = start_download(rt)
    aborted = reconcile.on_execution_status_change(
        rt, {"name": second.operation_id, "status": "ABORTED", "executionArn": second.execution_arn}
    )
    third = start_download(rt)
    timed_out = reconcile.on_execution_status_change(rt, {"name": third.operation_id, "status": "TIMED_OUT"})

    assert cancelled.status is OperationStatus.CANCELLED
    assert aborted.action == "reconciled" and timed_out.action == "reconciled"
    assert rt.store.get_operation(second.operation_id).status is OperationStatus.CANCELLED  # type: ignore[union-attr]
    assert rt.store.get_operation(third.operation_id).status is OperationStatus.FAILED  # type: ignore[union-attr]
    assert rt.store.list_guards(TAG) == []
    after = rt.store.get_cluster(TAG)
    assert after is not None and before is not None
    assert (after.status, after.current_operation_id) == (before.status, change.operation_id)


def test_a_guard_its_end_did_not_release_is_taken_over(rt: Runtime) -> None:
    first = start_download(rt)
    op = rt.store.get_operation(first.operation_id)
    assert op is not None
    overwrite(rt, f"OP#{op.operation_id}", {"status": "FAILED", "endedAt": records.now()})  # ended, guard left

    second = start_download(rt)

    assert [g.operation_id for g in rt.store.list_guards(TAG)] == [second.operation_id]


def test_a_start_step_functions_refused_ends_failed_and_releases_the_guard(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    sfn = rt.client("stepfunctions")

    def throttled(**kwargs: Any) -> Any:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "StartExecution")

    monkeypatch.setattr(sfn, "start_execution", throttled)

    with pytest.raises(UpstreamUnavailable):
        start_download(rt)

    operations, _ = rt.store.list_operations(TAG, 50, None)
    refused = [o for o in operations if o.type is OperationType.DOWNLOAD_MODEL]
    assert [o.status for o in refused] == [OperationStatus.FAILED]
    assert rt.store.list_guards(TAG) == []


@pytest.mark.parametrize("status", [ClusterStatus.CREATING, ClusterStatus.FAILED, ClusterStatus.DELETING])
def test_a_cluster_that_is_not_ready_or_degraded_takes_no_download(rt: Runtime, status: ClusterStatus) -> None:
    stale = records.live_cluster(rt, TAG)  # read while READY: the transaction's condition refuses it
    overwrite(rt, f"CLUSTER#{TAG}", {"status": status.value})
    request = DownloadModelRequest.model_validate({"source": "huggingface", "modelId": MODEL})
    change = DownloadModelChange(request=request, bucket="bucket")

    with pytest.raises(Conflict) as refused:
        changes.start_change(rt, stale, OperationType.DOWNLOAD_MODEL, change, guard=download_guard(request))

    assert refused.value.code == "ClusterNotReady" and refused.value.details[0]["status"] == status.value
    assert rt.store.list_guards(TAG) == []


def test_a_cluster_delete_ends_the_running_downloads(rt: Runtime) -> None:
    running = [start_download(rt), start_download(rt, "Qwen/Qwen2.5-1.5B-Instruct")]
    done = start_download(rt, "Qwen/Qwen2.5-3B-Instruct")
    finish(rt, done)
    left = start_download(rt, "Qwen/Qwen2.5-7B-Instruct")
    overwrite(rt, f"OP#{left.operation_id}", {"status": "FAILED", "endedAt": records.now()})  # ended, guard left

    ended = guarded.end_guarded_operations(rt, TAG)

    assert sorted(o.operation_id for o in ended) == sorted(o.operation_id for o in running)
    for op in running:
        record = rt.store.get_operation(op.operation_id)
        assert record is not None and record.status is OperationStatus.CANCELLED
        assert record.error is not None and record.error.code == "ClusterDeleted" and TAG in record.error.message
        status = rt.client("stepfunctions").describe_execution(executionArn=op.execution_arn)["status"]
        assert status == "ABORTED"
    assert rt.store.list_guards(TAG) == []


@pytest.mark.parametrize(("code", "raises"), [("ExecutionDoesNotExist", False), ("ThrottlingException", True)])
def test_a_delete_whose_stop_is_refused_records_the_cancel_unless_the_refusal_is_transient(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch, code: str, raises: bool
) -> None:
    op = start_download(rt)
    sfn = rt.client("stepfunctions")

    def refused(**kwargs: Any) -> Any:
        raise ClientError({"Error": {"Code": code, "Message": "refused"}}, "StopExecution")

    monkeypatch.setattr(sfn, "stop_execution", refused)

    if raises:
        with pytest.raises(ClientError):
            guarded.end_guarded_operations(rt, TAG)
    else:
        guarded.end_guarded_operations(rt, TAG)

    record = rt.store.get_operation(op.operation_id)
    assert record is not None
    assert record.status is (OperationStatus.PENDING if raises else OperationStatus.CANCELLED)  # no workflow runs
    assert bool(rt.store.list_guards(TAG)) is raises
