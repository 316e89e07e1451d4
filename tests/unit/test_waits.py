"""Event-or-poll waits: one task per round, the check decides, timed-out rounds are the budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from instantstart.clusters import records, waits
from instantstart.errors import StageFailed
from instantstart.models.cluster_views import StageError
from instantstart.models.common import StageName
from instantstart.models.workflow import LoopConfig, MaxPolls, PollResult, StepPayload
from instantstart.runtime import Runtime


@pytest.fixture
def rt(demo: Runtime) -> Runtime:
    """A cluster ``demo`` whose hyperpod stage is RUNNING (records written by the real create path)."""
    op = demo.store.get_cluster("demo").current_operation_id  # type: ignore[union-attr]
    records.begin_stage(demo, operation_id=str(op), tag="demo", generation=1, stage=StageName.HYPERPOD)
    return demo


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """What the waits sent to Step Functions: ``(kind, token, output or error)``."""
    out: list[tuple[str, str, Any]] = []
    monkeypatch.setattr(waits, "_complete", lambda rt, token, output: out.append(("success", token, output)) or True)
    monkeypatch.setattr(
        waits, "_fail", lambda rt, token, exc: out.append(("failure", token, (type(exc).__name__, str(exc))))
    )
    return out


def payload(token: str, max_polls: int = 3) -> StepPayload:
    config = LoopConfig(max_polls=MaxPolls(hyper_pod_cluster=max_polls))
    return StepPayload.model_validate(
        {
            "action": "check_hyperpod_cluster",
            "operationId": "op-1",
            "clusterTag": "demo",
            "generation": 1,
            "stage": "hyperpod",
            "waitName": "hyperPodCluster",
            "taskToken": token,
            "config": config.to_wire(),
        }
    )


def answer(done: bool) -> Any:
    return lambda rt, p: PollResult(done=done, status="InService" if done else "Creating")


def test_given_the_check_is_done_when_a_round_runs_then_it_completes_its_own_task(
    rt: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    waits.run_round(rt, payload("t1"), answer(True))

    assert sent == [("success", "t1", {"done": True, "status": "InService"})]


def test_given_the_check_is_not_done_when_an_event_wakes_the_wait_then_its_token_is_sent_once_to_check_again(
    rt: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    waits.run_round(rt, payload("t1"), answer(False))

    first = waits.wake(rt, "demo", 1, StageName.HYPERPOD, waits.HYPERPOD_CLUSTER)
    second = waits.wake(rt, "demo", 1, StageName.HYPERPOD, waits.HYPERPOD_CLUSTER)

    assert (first, second) == (True, False)
    assert sent == [("success", "t1", {"done": False})]


def test_given_rounds_that_time_out_when_the_budget_is_spent_then_the_task_fails_with_poll_timeout(
    rt: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    for token in ("t1", "t2", "t3"):  # t1 and t2 time out (nothing takes their token)
        waits.run_round(rt, payload(token, max_polls=2), answer(False))

    kind, token, (name, message) = sent[-1]
    assert (kind, token, name) == ("failure", "t3", "PollTimeout")
    assert "within 2 polls of 60 seconds" in message


def held_until(running: list[bool]) -> Any:
    """A check that is held by another running stage while ``running[0]`` is true."""
    return lambda rt, p: PollResult(done=False, status="waiting", held=running[0])


def test_given_a_wait_held_by_a_running_stage_then_timed_out_rounds_spend_its_budget_only_once_that_stage_stops(
    rt: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    running = [True]
    for i in range(6):  # six timed-out rounds while the other stage runs: three times the budget
        waits.run_round(rt, payload(f"held-{i}", max_polls=2), held_until(running))
    assert [kind for kind, _, _ in sent] == [], "a held wait does not time out"

    running[0] = False  # the other stage ended without satisfying the wait: the budget counts from the last held round
    for token in ("t1", "t2"):  # held-5 timed out, then t1: two timed-out rounds, the budget
        waits.run_round(rt, payload(token, max_polls=2), held_until(running))

    kind, token, (name, _) = sent[-1]
    assert (len(sent), kind, token, name) == (1, "failure", "t2", "PollTimeout")


def test_given_rounds_woken_by_events_then_they_do_not_spend_the_budget(
    rt: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    for i in range(6):  # every round woken by an event: none timed out
        waits.run_round(rt, payload(f"t{i}", max_polls=2), answer(False))
        assert waits.wake(rt, "demo", 1, StageName.HYPERPOD, waits.HYPERPOD_CLUSTER)

    assert all(kind == "success" for kind, _, _ in sent)


def test_given_a_wait_that_ended_when_the_same_wait_starts_again_then_its_budget_starts_afresh(
    rt: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    waits.run_round(rt, payload("t1", max_polls=2), answer(False))
    waits.run_round(rt, payload("t2", max_polls=2), answer(False))  # t1 timed out: one round spent
    waits.run_round(rt, payload("t3", max_polls=2), answer(True))  # done: the wait is forgotten

    waits.run_round(rt, payload("t4", max_polls=2), answer(False))
    waits.run_round(rt, payload("t5", max_polls=2), answer(False))

    assert [kind for kind, _, _ in sent] == ["success"]


def test_given_the_check_fails_when_a_round_runs_then_the_task_fails_with_the_aws_code_as_a_lambda_would(
    rt: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    def check(rt: Runtime, p: StepPayload) -> PollResult:
        raise StageFailed("HyperPodClusterFailed", "The cluster failed: capacity")

    waits.run_round(rt, payload("t1"), check)

    [(kind, token, (name, message))] = sent
    assert (kind, token, name) == ("failure", "t1", "StageFailed")
    assert json.loads(message) == {"code": "HyperPodClusterFailed", "message": "The cluster failed: capacity"}


def test_given_a_failure_sent_through_the_token_then_the_failure_path_reads_the_aws_code_and_message() -> None:
    """The cause the wait sends parses like a raising Lambda's (records.parse_error)."""
    from instantstart.models.workflow import StepError

    name, cause = waits.task_failure(StageFailed("ResourceLimitExceeded", "quota for ml.g6.4xlarge"))

    error = records.parse_error(StepError(Error=name, Cause=cause))

    assert (error.code, error.message) == ("ResourceLimitExceeded", "quota for ml.g6.4xlarge")


def test_given_a_done_answer_that_reached_a_timed_out_task_when_the_next_round_runs_then_it_completes_at_once(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check slower than its task's timeout cannot starve a wait that is already satisfied."""
    delivered: list[tuple[str, Any]] = []

    def complete(rt: Runtime, token: str, output: Any) -> bool:
        if token == "t1":
            return False  # t1 had timed out: its answer is lost
        delivered.append((token, output))
        return True

    monkeypatch.setattr(waits, "_complete", complete)
    checks: list[str] = []

    def check(rt: Runtime, p: StepPayload) -> PollResult:
        checks.append(str(p.task_token))
        return PollResult(done=True, status="InService")

    waits.run_round(rt, payload("t1"), check)
    waits.run_round(rt, payload("t2"), check)

    assert checks == ["t1"]  # the second round did not need to ask AWS again
    assert [(token, output["done"]) for token, output in delivered] == [("t2", True)]


def test_given_sagemaker_answers_not_found_when_the_hyperpod_check_runs_then_its_code_and_words_fail_the_task(
    rt: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    from botocore.stub import Stubber

    from instantstart import steps

    message = "Resource being access is not found."
    with Stubber(rt.client("sagemaker")) as sagemaker:
        sagemaker.add_client_error(
            "describe_cluster", service_error_code="ResourceNotFound", service_message=message, http_status_code=404
        )
        steps.run_step(rt, payload("t1").model_dump(mode="json", by_alias=True, exclude_none=True))

    [(kind, token, (name, cause))] = sent
    assert (kind, token, name) == ("failure", "t1", "ResourceNotFound")
    assert json.loads(cause) == {"code": "ResourceNotFound", "message": message}, "SageMaker's words, verbatim"


def storage_access_round(token: str, operation_id: str = "op-1") -> dict[str, Any]:
    """A round of the storage stage's wait for Kubernetes access, as the create workflow sends it."""
    return {
        "action": "check_storage_access",
        "operationId": operation_id,
        "clusterTag": "demo",
        "generation": 1,
        "stage": "storage",
        "waitName": "storageAccess",
        "taskToken": token,
        "config": LoopConfig().to_wire(),
    }


def test_given_access_not_yet_succeeded_when_storage_waits_then_it_holds_and_completing_access_wakes_it_once(
    demo: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    from instantstart import steps

    op = str(demo.store.get_cluster("demo").current_operation_id)  # type: ignore[union-attr]
    records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=StageName.STORAGE)
    records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=StageName.ACCESS)

    steps.run_step(demo, storage_access_round("t1"))
    waiting = demo.store.get_stage("demo", 1, StageName.STORAGE)
    complete_access = {"action": "complete_stage", "operationId": op, "clusterTag": "demo", "generation": 1}
    steps.run_step(demo, {**complete_access, "stage": "access"})

    assert waiting is not None and waiting.observed_status == (
        "bucket ready; waiting for Kubernetes access (stage access RUNNING)"
    )
    assert sent == [("success", "t1", {"done": False})], "held, then woken by the access stage, not by its poll"
    steps.run_step(demo, storage_access_round("t2"))
    assert sent[-1] == ("success", "t2", {"done": True, "status": "Kubernetes access granted"})


def test_given_access_still_running_past_the_storage_waits_budget_then_storage_keeps_waiting_without_timing_out(
    demo: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    from instantstart import steps

    op = str(demo.store.get_cluster("demo").current_operation_id)  # type: ignore[union-attr]
    records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=StageName.STORAGE)
    records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=StageName.ACCESS)
    budget = MaxPolls().storage_access

    for i in range(budget + 3):  # every round times out (nothing wakes it) while access keeps running
        steps.run_step(demo, storage_access_round(f"t{i}"))

    assert sent == [], "the access stage's own waits bound it: storage does not fail first with PollTimeout"
    steps.run_step(
        demo, {"action": "complete_stage", "operationId": op, "clusterTag": "demo", "generation": 1, "stage": "access"}
    )
    steps.run_step(demo, storage_access_round("last"))
    assert sent[-1] == ("success", "last", {"done": True, "status": "Kubernetes access granted"})


def test_given_access_failed_in_this_operation_when_storage_waits_then_storage_stops_at_once_as_interrupted(
    demo: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    from instantstart import steps

    op = str(demo.store.get_cluster("demo").current_operation_id)  # type: ignore[union-attr]
    records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=StageName.ACCESS)
    error = StageError(code="ResourceNotFoundException", message="No cluster found for name: demo.")
    records.fail_stage(demo, tag="demo", generation=1, stage=StageName.ACCESS, error=error, operation_id=op)

    steps.run_step(demo, storage_access_round("t1", op))

    [(kind, token, (name, cause))] = sent
    assert (kind, token, name) == ("failure", "t1", "StageFailed")
    assert json.loads(cause) == {"code": "StageInterrupted", "message": "stopped because stage access failed"}


def test_given_access_failed_by_an_earlier_operation_when_a_retry_storage_waits_first_then_it_holds_for_access(
    demo: Runtime, sent: list[tuple[str, str, Any]]
) -> None:
    """A retry's two branches start together: storage's first round may read ``access`` while it still holds the
    earlier operation's failure, before this operation began it again. That failure is not this operation's: storage
    waits (held) and the retry's own access result decides."""
    from instantstart import steps
    from instantstart.clusters import service
    from instantstart.models.common import ClusterStatus, OperationStatus

    first = str(demo.store.get_cluster("demo").current_operation_id)  # type: ignore[union-attr]
    records.begin_stage(demo, operation_id=first, tag="demo", generation=1, stage=StageName.ACCESS)
    error = StageError(code="ResourceNotFoundException", message="No cluster found for name: demo.")
    records.fail_stage(demo, tag="demo", generation=1, stage=StageName.ACCESS, error=error, operation_id=first)
    records.finish_operation(
        demo, operation_id=first, tag="demo", status=OperationStatus.FAILED, cluster_status=ClusterStatus.FAILED
    )
    op = service.retry_stage(demo, "demo", StageName.ACCESS).operation_id
    records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=StageName.STORAGE)
    for i in range(MaxPolls().storage_access + 2):
        steps.run_step(demo, storage_access_round(f"t{i}", op))

    assert sent == [], "held (no failure, no PollTimeout) until this operation's access stage ends"
    records.begin_stage(demo, operation_id=op, tag="demo", generation=1, stage=StageName.ACCESS)
    steps.run_step(
        demo, {"action": "complete_stage", "operationId": op, "clusterTag": "demo", "generation": 1, "stage": "access"}
    )
    steps.run_step(demo, storage_access_round("last", op))
    assert sent[-1] == ("success", "last", {"done": True, "status": "Kubernetes access granted"})


def test_given_the_default_intervals_then_the_woken_storage_access_wait_polls_rarely_within_its_budget() -> None:
    from instantstart.models.workflow import PollSeconds

    seconds, bounds = PollSeconds(), MaxPolls()

    assert seconds.storage_access > seconds.storage, "a wait woken by our own workflow needs no minute-by-minute poll"
    assert seconds.storage_access * bounds.storage_access == seconds.storage * bounds.storage


def test_given_events_that_wake_every_round_when_the_budget_in_time_has_passed_then_the_task_fails_with_poll_timeout(
    rt: Runtime, sent: list[tuple[str, str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HyperPod sends an Error event for each failed launch while capacity is short, every ~30 s: a wait woken every
    round never times out a round, so its bound is also the time since its first round (2 polls of 60 s here)."""
    from instantstart.models import common

    now = [1_800_000_000.0]
    monkeypatch.setattr(common, "_clock", lambda: now[0])
    for i in range(5):  # rounds at 0, 30, 60, 90 s: woken; the round at 120 s is past the budget
        waits.run_round(rt, payload(f"t{i}", max_polls=2), answer(False))
        waits.wake(rt, "demo", 1, StageName.HYPERPOD, waits.HYPERPOD_CLUSTER)
        now[0] += 30

    assert [kind for kind, _, _ in sent] == ["success"] * 4 + ["failure"]
    _, token, (name, _) = sent[-1]
    assert (token, name) == ("t4", "PollTimeout")
