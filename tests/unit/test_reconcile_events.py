"""Reconciliation of "SageMaker HyperPod Cluster State Change" events: only our clusters are touched."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from instantstart.clusters import reconcile, service
from instantstart.clusters.reconcile import EVENT_KEEP_SECONDS, Reconciled, on_hyperpod_state_change, once
from instantstart.models.common import StageName
from instantstart.runtime import Runtime
from instantstart.store.table import WaitHolder

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = json.loads((ROOT / "events" / "eventbridge_hyperpod_cluster_state_change.json").read_text())


def detail(name: str, status: str = "Creating") -> dict[str, Any]:
    """The sample's detail for HyperPod cluster ``name`` in ``status`` (the ARN stays the sample's: AWS's is by id)."""
    out = copy.deepcopy(SAMPLE["detail"])
    out["ClusterName"] = name
    out["ClusterStatus"] = status
    return dict(out)


def all_items(session: Any, table: str) -> list[dict[str, Any]]:
    return list(session.client("dynamodb").scan(TableName=table)["Items"])


@pytest.mark.parametrize("name", ["my-training-cluster", "hp-clusterdemo", "eks-cluster-demo", ""])
def test_given_a_cluster_not_named_hp_cluster_when_its_event_arrives_then_it_is_ignored_and_nothing_is_written(
    aws: Any, table: str, demo: Runtime, name: str
) -> None:
    before = all_items(aws, table)

    result = on_hyperpod_state_change(demo, detail(name, "InService"))

    assert result.to_api() == {
        "clusterTag": None,
        "status": "InService",
        "action": "ignored",
        "operationId": None,
        "instanceId": None,
    }
    assert all_items(aws, table) == before


def test_given_an_hp_cluster_with_an_unknown_tag_when_its_event_arrives_then_it_is_ignored_and_no_record_appears(
    aws: Any, table: str, demo: Runtime
) -> None:
    before = all_items(aws, table)

    result = on_hyperpod_state_change(demo, detail("hp-cluster-ghost", "Failed"))

    assert result.to_api() == {
        "clusterTag": "ghost",
        "status": "Failed",
        "action": "ignored",
        "operationId": None,
        "instanceId": None,
    }
    assert all_items(aws, table) == before
    assert demo.store.get_cluster("ghost") is None


def test_given_our_cluster_when_a_creating_event_arrives_then_the_observed_state_is_recorded(demo: Runtime) -> None:
    result = on_hyperpod_state_change(demo, detail("hp-cluster-demo", "Creating"))

    assert result.to_api() == {
        "clusterTag": "demo",
        "status": "Creating",
        "action": "recorded",
        "operationId": None,
        "instanceId": None,
    }
    view = service.get_cluster(demo, "demo")
    assert view.hyper_pod is not None
    assert view.hyper_pod.status == "Creating"
    assert view.hyper_pod.cluster_arn == SAMPLE["detail"]["ClusterArn"]
    [group] = view.hyper_pod.instance_groups
    assert (group.instance_group_name, group.instance_count, group.current_count) == ("accel", 1, 0)
    stage = demo.store.get_stage("demo", 1, StageName.HYPERPOD)
    assert stage is not None and stage.observed_status is None  # the stage is not running: its record is untouched


def test_given_our_cluster_without_a_stored_task_token_when_in_service_arrives_then_it_is_recorded_not_resumed(
    demo: Runtime,
) -> None:
    result = on_hyperpod_state_change(demo, detail("hp-cluster-demo", "InService"))

    assert result.action == "recorded"
    assert service.get_cluster(demo, "demo").hyper_pod.status == "InService"  # type: ignore[union-attr]


def test_given_a_late_event_older_than_the_recorded_observation_when_it_arrives_then_it_changes_nothing(
    demo: Runtime,
) -> None:
    on_hyperpod_state_change(demo, detail("hp-cluster-demo", "InService"), event_time="2026-11-30T12:10:00Z")

    late = on_hyperpod_state_change(demo, detail("hp-cluster-demo", "Creating"), event_time="2026-11-30T12:05:00Z")

    assert late.action == "recorded"
    assert service.get_cluster(demo, "demo").hyper_pod.status == "InService"  # type: ignore[union-attr]


def test_given_the_same_event_twice_when_it_arrives_then_the_second_is_harmless(demo: Runtime) -> None:
    first = on_hyperpod_state_change(demo, detail("hp-cluster-demo", "InService"), event_time="2026-11-30T12:10:00Z")
    second = on_hyperpod_state_change(demo, detail("hp-cluster-demo", "InService"), event_time="2026-11-30T12:10:00Z")

    assert (first.action, second.action) == ("recorded", "recorded")
    assert service.get_cluster(demo, "demo").hyper_pod.status == "InService"  # type: ignore[union-attr]


def test_given_a_running_stage_waiting_on_a_token_when_the_event_arrives_then_the_wait_is_woken_to_check_again(
    demo: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from instantstart.clusters import records, waits

    op = demo.store.get_cluster("demo").current_operation_id  # type: ignore[union-attr]
    records.begin_stage(demo, operation_id=str(op), tag="demo", generation=1, stage=StageName.HYPERPOD)
    demo.store.start_wait_round(WaitHolder.stage("demo", 1, StageName.HYPERPOD), waits.HYPERPOD_CLUSTER, "token-1")
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(waits, "finish_wait", lambda rt, token, done: sent.append((token, str(done))))

    result = on_hyperpod_state_change(demo, detail("hp-cluster-demo", "InService"))
    again = on_hyperpod_state_change(demo, detail("hp-cluster-demo", "InService"))

    assert (result.action, again.action) == ("resumed", "recorded")  # a token is sent once
    assert sent == [("token-1", "False")]  # a wake: the step's own check decides, never the event


def test_given_a_poll_in_the_same_second_as_an_event_when_the_event_arrives_then_the_poll_stays(
    demo: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Event times have one-second resolution: a DescribeCluster read in that second may be newer."""
    from instantstart.clusters import records
    from instantstart.clusters.stages.hyperpod import observe

    # the poll and the event in one second, even when a loaded machine crosses a second between the calls
    frozen = records.now()
    monkeypatch.setattr(records, "now", lambda: frozen)

    polled = {
        **detail("hp-cluster-demo", "InService"),
        "InstanceGroups": [
            {"InstanceGroupName": "workers", "InstanceType": "ml.g6.4xlarge", "TargetCount": 1, "CurrentCount": 1}
        ],
    }
    groups = demo.store.get_cluster("demo").request.instance_groups  # type: ignore[union-attr]
    observe(demo, "demo", 1, polled, groups)
    second = records.now()

    stale = {**polled, "InstanceGroups": [{**polled["InstanceGroups"][0], "CurrentCount": 0}]}
    recorded = observe(demo, "demo", 1, stale, groups, event_time=second)

    group = service.get_cluster(demo, "demo").hyper_pod.instance_groups[0]  # type: ignore[union-attr]
    assert (recorded, group.current_count) == (False, 1)


def test_given_two_events_of_the_same_second_when_they_arrive_then_the_later_delivered_is_recorded(
    demo: Runtime,
) -> None:
    on_hyperpod_state_change(demo, detail("hp-cluster-demo", "Creating"), event_time="2026-11-30T12:10:00Z")
    on_hyperpod_state_change(demo, detail("hp-cluster-demo", "InService"), event_time="2026-11-30T12:10:00Z")

    assert service.get_cluster(demo, "demo").hyper_pod.status == "InService"  # type: ignore[union-attr]


def test_given_an_event_id_handled_once_when_it_is_delivered_again_then_the_handler_does_not_run(
    runtime: Runtime, aws: Any, table: str
) -> None:
    calls: list[str] = []

    def handle() -> Reconciled:
        calls.append("ran")
        return Reconciled(action="recorded")

    first = once(runtime, "7f6e-event", handle, clock=lambda: 1_000.0)
    again = once(runtime, "7f6e-event", handle, clock=lambda: 1_060.0)
    other = once(runtime, "other-event", handle, clock=lambda: 1_060.0)

    assert (first.action, again.action, other.action) == ("recorded", "duplicate", "recorded")
    assert calls == ["ran", "ran"]
    [record] = [i for i in all_items(aws, table) if i["PK"]["S"] == "EVENT#7f6e-event"]
    assert int(record["expiration"]["N"]) == 1_000 + EVENT_KEEP_SECONDS  # the table's TTL attribute


def test_given_a_handled_event_id_past_its_keep_time_when_delivered_then_it_is_handled_again(runtime: Runtime) -> None:
    calls: list[str] = []

    def handle() -> Reconciled:
        calls.append("ran")
        return Reconciled(action="recorded")

    once(runtime, "old-event", handle, clock=lambda: 1_000.0)
    once(runtime, "old-event", handle, clock=lambda: 1_000.0 + EVENT_KEEP_SECONDS + 1)  # TTL not applied yet
    assert calls == ["ran", "ran"]


def test_given_a_handler_that_fails_when_the_event_is_redelivered_then_it_runs_again(runtime: Runtime) -> None:
    outcomes = iter([RuntimeError("throttled"), None])

    def handle() -> Reconciled:
        error = next(outcomes)
        if error:
            raise error
        return Reconciled(action="resumed")

    with pytest.raises(RuntimeError):
        once(runtime, "retried-event", handle)
    assert once(runtime, "retried-event", handle).action == "resumed"


CLUSTER_EVENT = json.loads((ROOT / "events" / "eventbridge_hyperpod_cluster_event.json").read_text())


def test_given_a_cluster_event_as_aws_sends_it_when_it_arrives_then_it_reaches_our_cluster(demo: Runtime) -> None:
    """AWS's cluster events reference puts the record under ``detail.EventDetails``: the event of ``hp-cluster-demo``
    reaches cluster ``demo`` (it used to be ignored for reading ``detail.ClusterName``)."""
    from instantstart.clusters.reconcile import on_cluster_event

    result = on_cluster_event(demo, copy.deepcopy(CLUSTER_EVENT["detail"]))

    assert result.cluster_tag == "demo"
    assert result.action != "ignored", result


def test_given_a_cluster_event_of_another_cluster_when_it_arrives_then_it_is_ignored(demo: Runtime) -> None:
    from instantstart.clusters.reconcile import on_cluster_event

    event = copy.deepcopy(CLUSTER_EVENT["detail"])
    event["EventDetails"]["ClusterName"] = "someone-elses-cluster"

    assert on_cluster_event(demo, event).to_api()["action"] == "ignored"


def test_given_an_execution_failed_by_a_lambda_error_then_its_operation_records_the_aws_code_and_message(
    demo: Runtime,
) -> None:
    op_id = str(demo.store.get_cluster("demo").current_operation_id)  # type: ignore[union-attr]
    aws = {"code": "ResourceNotFoundException", "message": "The operation tried to access a nonexistent table"}
    cause = json.dumps({"errorType": "ResourceNotFoundException", "errorMessage": json.dumps(aws), "stackTrace": []})

    done = reconcile.on_execution_status_change(
        demo, {"name": op_id, "status": "FAILED", "error": "ResourceNotFoundException", "cause": cause}
    )

    assert done.action == "reconciled"
    op = demo.store.get_operation(op_id)
    assert op is not None and op.error is not None
    assert (op.error.code, op.error.message) == (aws["code"], aws["message"]), "AWS's words, not the Lambda's JSON"
