"""The events Lambda handlers (``functions/events/``) fed the sample events of ``events/``, as EventBridge delivers
them: each sample reaches its reconciler for the cluster or operation it names, and changes what the user sees."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from instantstart.clusters import records, service
from instantstart.config import get_settings
from instantstart.models.cluster_views import NodeView
from instantstart.runtime import Runtime
from tests.unit.inprocess_api import LambdaContext

ROOT = Path(__file__).resolve().parents[2]


def sample(kind: str, /, **detail: Any) -> dict[str, Any]:
    """The sample event ``events/eventbridge_<kind>.json`` (a fresh copy), its ``detail`` updated with ``detail``."""
    event = copy.deepcopy(json.loads((ROOT / "events" / f"eventbridge_{kind}.json").read_text()))
    event["detail"].update(detail)
    return dict(event)


@pytest.fixture
def handlers(demo: Runtime, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, ModuleType]]:
    """``hyperpod_events`` and ``execution_events`` imported by handler name (as Lambda does), on ``demo``."""
    get_settings.cache_clear()  # this test's environment, not an earlier test's
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "events"))
    import execution_events
    import hyperpod_events

    monkeypatch.setattr(hyperpod_events, "RUNTIME", demo)
    monkeypatch.setattr(execution_events, "RUNTIME", demo)
    yield hyperpod_events, execution_events
    get_settings.cache_clear()


def test_given_the_state_change_sample_when_delivered_then_the_cluster_shows_the_observed_hyperpod_status(
    handlers: tuple[ModuleType, ModuleType], demo: Runtime
) -> None:
    hyperpod_events, _ = handlers
    event = sample("hyperpod_cluster_state_change")

    result = hyperpod_events.lambda_handler(event, LambdaContext())

    assert (result["action"], result["clusterTag"], result["status"]) == ("recorded", "demo", "Creating")
    view = service.get_cluster(demo, "demo").hyper_pod
    assert view is not None and (view.status, view.cluster_arn) == ("Creating", event["detail"]["ClusterArn"])
    [group] = view.instance_groups
    assert (group.instance_group_name, group.target_count, group.current_count) == ("accel", 1, 0)


def test_given_the_same_sample_event_id_twice_when_delivered_then_the_second_is_a_duplicate(
    handlers: tuple[ModuleType, ModuleType],
) -> None:
    hyperpod_events, _ = handlers
    event = sample("hyperpod_cluster_state_change")

    first = hyperpod_events.lambda_handler(event, LambdaContext())
    again = hyperpod_events.lambda_handler(event, LambdaContext())

    assert (first["action"], again["action"]) == ("recorded", "duplicate")


def test_given_the_cluster_event_sample_when_delivered_then_it_reaches_the_cluster_it_names(
    handlers: tuple[ModuleType, ModuleType],
) -> None:
    hyperpod_events, _ = handlers

    result = hyperpod_events.lambda_handler(sample("hyperpod_cluster_event"), LambdaContext())

    assert (result["action"], result["clusterTag"]) == ("recorded", "demo")


def test_given_the_node_health_sample_when_delivered_then_the_node_shows_the_finding(
    handlers: tuple[ModuleType, ModuleType], demo: Runtime
) -> None:
    hyperpod_events, _ = handlers
    event = sample("hyperpod_node_health_event")
    instance_id = event["detail"]["InstanceId"]
    node = NodeView(
        node_name=f"hyperpod-{instance_id}", instance_id=instance_id, instance_group_name="accel", ready=True
    )
    demo.store.record_observations("demo", now=records.now(), nodes=[node])

    result = hyperpod_events.lambda_handler(event, LambdaContext())

    assert (result["action"], result["clusterTag"], result["instanceId"]) == ("recorded", "demo", instance_id)
    [shown] = service.get_cluster(demo, "demo").nodes
    summary = event["detail"]["HealthSummary"]
    assert (shown.health_status, shown.health_status_reason, shown.repair_action) == (
        summary["HealthStatus"],
        summary["HealthStatusReason"],
        summary["RepairAction"],
    )


def test_given_the_addon_health_restored_sample_when_delivered_then_it_reaches_the_cluster_of_its_eks_cluster(
    handlers: tuple[ModuleType, ModuleType],
) -> None:
    hyperpod_events, _ = handlers

    result = hyperpod_events.lambda_handler(sample("eks_addon_health_restored"), LambdaContext())

    assert (result["action"], result["clusterTag"]) == ("recorded", "demo")


def test_given_a_sample_of_another_detail_type_when_delivered_then_it_is_ignored(
    handlers: tuple[ModuleType, ModuleType],
) -> None:
    hyperpod_events, execution_events = handlers
    degraded = {**sample("eks_addon_health_restored"), "detail-type": "EKS Addon Health Degraded"}
    wrong_source = {**sample("sfn_execution_status_change"), "source": "aws.sagemaker"}

    assert hyperpod_events.lambda_handler(degraded, LambdaContext())["action"] == "ignored"
    assert execution_events.lambda_handler(wrong_source, LambdaContext())["action"] == "ignored"


def test_given_the_aborted_execution_sample_of_a_running_create_when_delivered_then_the_operation_is_cancelled(
    handlers: tuple[ModuleType, ModuleType], demo: Runtime
) -> None:
    _, execution_events = handlers
    op_id = str(demo.store.get_cluster("demo").current_operation_id)  # type: ignore[union-attr]
    template = sample("sfn_execution_status_change")
    arn = str(template["detail"]["executionArn"]).rsplit(":", 1)[0]
    event = sample("sfn_execution_status_change", name=op_id, executionArn=f"{arn}:{op_id}")

    result = execution_events.lambda_handler(event, LambdaContext())

    assert (result["action"], result["operationId"]) == ("reconciled", op_id)
    operation = demo.store.get_operation(op_id)
    assert operation is not None and operation.status.value == "CANCELLED"
    assert operation.error is not None and operation.error.code == "ExecutionAborted"
    assert service.get_cluster(demo, "demo").status.value == "FAILED"
