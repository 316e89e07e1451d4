"""The committed state machines keep the workflow conventions (see statemachines/build.py).

Every scope (the top level, each Parallel branch, each Map ItemProcessor) is checked on its own:
its states, its edges (Next, Default, Choices[].Next, Catch[].Next) and its cycles.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from instantstart.models.workflow import MaxPolls
from instantstart.steps import ACTIONS

ROOT = Path(__file__).resolve().parents[2]
ASL_FILES = sorted((ROOT / "statemachines").glob("*.asl.json"))
MAX_POLLS = re.compile(r"^\$\.config\.maxPolls\.[A-Za-z]+$")
POLL_SECONDS = re.compile(r"^\$\.config\.pollSeconds\.[A-Za-z]+$")
TITLE_WORD = re.compile(r"^(?:[A-Z][A-Za-z0-9]*)(?:-[A-Za-z0-9]+)*$")
LAMBDA_INVOKE = re.compile(r"^arn:aws:states:::lambda:invoke(?:\.waitForTaskToken)?$")

Scope = dict[str, dict[str, Any]]


def definition(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def scopes(machine: dict[str, Any], where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, {"StartAt", "States"})`` for the machine and, recursively, every branch and item processor."""
    yield where or "top level", machine
    for name, state in machine["States"].items():
        for i, branch in enumerate(state.get("Branches", [])):
            yield from scopes(branch, f"{where}{name} branch {i}/")
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor:
            yield from scopes(processor, f"{where}{name} items/")


def all_states(path: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for where, scope in scopes(definition(path)):
        for name, state in scope["States"].items():
            yield where, name, state


def edges(state: dict[str, Any]) -> list[str]:
    out = [state["Next"]] if "Next" in state else []
    if "Default" in state:
        out.append(state["Default"])
    out += [rule["Next"] for rule in state.get("Choices", [])]
    out += [catch["Next"] for catch in state.get("Catch", [])]
    return out


def is_bound_check(state: dict[str, Any]) -> bool:
    """A Choice comparing a poll counter with a ``$.config.maxPolls.*`` bound."""
    if state.get("Type") != "Choice":
        return False
    return any(
        "pollCount" in rule.get("Variable", "")
        and any(k.startswith("Numeric") and MAX_POLLS.match(str(v)) for k, v in rule.items() if k.endswith("Path"))
        for rule in state.get("Choices", [])
    )


def is_counted_wait(name: str, state: dict[str, Any]) -> bool:
    """A wait task of ``instantstart.clusters.waits``: its Lambda counts timed-out rounds against
    ``$.config.maxPolls.<waitName>`` and fails it with PollTimeout (unit-tested in tests/unit/test_waits.py)."""
    if state.get("Type") != "Task" or not state.get("Resource", "").endswith(".waitForTaskToken"):
        return False
    payload = state["Parameters"]["Payload"]
    wait = payload.get("waitName")
    return (
        wait in MaxPolls().to_wire()
        and payload.get("config.$") == "$.config"
        and state.get("TimeoutSecondsPath") == f"$.config.pollSeconds.{wait}"
    )


def find_cycle(states: Scope, removed: set[str]) -> list[str] | None:
    """A cycle of the state graph that avoids ``removed`` states (depth-first search), or None."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(states, white)
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        colour[name] = grey
        stack.append(name)
        for target in edges(states[name]):
            if target in removed:
                continue
            if colour[target] == grey:
                return [*stack[stack.index(target) :], target]
            if colour[target] == white:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        colour[name] = black
        return None

    for start in states:
        if start not in removed and colour[start] == white:
            found = visit(start)
            if found:
                return found
    return None


def reachable(states: Scope, start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += edges(states[name])
    return seen


@pytest.fixture(params=ASL_FILES, ids=lambda p: p.name)
def asl(request: pytest.FixtureRequest) -> Path:
    return Path(request.param)


def test_given_the_statemachines_folder_then_the_three_workflows_are_there() -> None:
    assert [p.name for p in ASL_FILES] == [
        "create_cluster.asl.json",
        "delete_cluster.asl.json",
        "update_cluster.asl.json",
    ]


def test_given_a_workflow_then_every_edge_names_a_state_of_its_own_scope(asl: Path) -> None:
    for where, scope in scopes(definition(asl)):
        assert scope["StartAt"] in scope["States"], where
        for name, state in scope["States"].items():
            for target in edges(state):
                assert target in scope["States"], f"{where}{name} -> {target}"


def test_given_a_workflow_then_every_task_has_retry_and_a_catch_all(asl: Path) -> None:
    tasks = [(w, n, s) for w, n, s in all_states(asl) if s["Type"] == "Task"]

    assert tasks
    for where, name, state in tasks:
        assert state.get("Retry"), f"{where}{name} has no Retry"
        assert state.get("Catch"), f"{where}{name} has no Catch"
        assert any("States.ALL" in c["ErrorEquals"] for c in state["Catch"]), f"{where}{name} misses States.ALL"
        retried = {e for r in state["Retry"] for e in r["ErrorEquals"]}
        assert {"Lambda.ServiceException", "Lambda.TooManyRequestsException", "ThrottlingException"} <= retried, name


CRASHES = {"Lambda.Unknown", "Runtime.ExitError", "Sandbox.Timedout"}
"""The names a crashed or timed-out Lambda reaches Step Functions under (statemachines/build.py::CRASH_RETRY)."""


def test_given_the_create_and_delete_workflows_then_every_task_retries_a_crashed_or_timed_out_step() -> None:
    for name in ("create_cluster.asl.json", "delete_cluster.asl.json"):
        tasks = [(w, n, s) for w, n, s in all_states(ROOT / "statemachines" / name) if s["Type"] == "Task"]
        for where, state_name, state in tasks:
            retried = [set(r["ErrorEquals"]) for r in state["Retry"]]
            assert CRASHES in retried, f"{name} {where}{state_name} does not retry a crashed step"
            # a wait's own States.Timeout is caught to enter it again: a retrier of it would come first
            assert not any("States.Timeout" in r for r in retried), f"{where}{state_name} retries States.Timeout"
            crash = next(r for r in state["Retry"] if set(r["ErrorEquals"]) == CRASHES)
            assert crash["MaxAttempts"] <= 3, "a step that crashes every time fails verbatim soon"


def test_given_the_update_workflow_then_a_crashed_change_fails_the_operation_instead_of_running_again() -> None:
    for where, name, state in all_states(ROOT / "statemachines" / "update_cluster.asl.json"):
        if state["Type"] == "Task":
            retried = {e for r in state["Retry"] for e in r["ErrorEquals"]}
            assert not retried & CRASHES, f"{where}{name}: day-2 changes are not swept by make crash"


def test_given_a_workflow_then_every_retry_backs_off_exponentially_with_full_jitter(asl: Path) -> None:
    for where, name, state in all_states(asl):
        for retry in state.get("Retry", []):
            assert retry.get("BackoffRate", 0) > 1, f"{where}{name}: BackoffRate must be explicit and > 1: {retry}"
            assert retry.get("JitterStrategy") == "FULL", f"{where}{name}: {retry}"


def test_given_a_workflow_then_every_loop_passes_through_a_poll_bound_check(asl: Path) -> None:
    loops = 0
    for where, scope in scopes(definition(asl)):
        states: Scope = scope["States"]
        bounds = {name for name, state in states.items() if is_bound_check(state) or is_counted_wait(name, state)}
        assert find_cycle(states, removed=bounds) is None, f"{where}: unbounded loop {find_cycle(states, bounds)}"
        for name in bounds:
            state = states[name]
            loops += 1
            if state["Type"] == "Choice":
                # the loop must close through the bound (else it bounds nothing) ...
                assert name in reachable(states, state["Default"]), f"{where}{name} is not on a loop"
                # ... and the bound-reached branch must leave the loop for good
                exits = [r["Next"] for r in state["Choices"] if any(MAX_POLLS.match(str(v)) for v in r.values())]
            else:
                # a counted wait fails with PollTimeout at its bound: every catch but the timeout leaves the loop
                exits = [c["Next"] for c in state["Catch"] if c["ErrorEquals"] != ["States.Timeout"]]
            for target in exits:
                assert name not in reachable(states, target), f"{where}{name}: bound branch loops back"
    assert loops > 0


def test_given_a_loop_then_its_counter_is_incremented_on_every_turn(asl: Path) -> None:
    for where, scope in scopes(definition(asl)):
        states: Scope = scope["States"]
        incrementers = {
            name
            for name, state in states.items()
            if (
                state["Type"] == "Pass"
                and state.get("ResultPath") == "$.pollCount"
                and "States.MathAdd($.pollCount.value, 1)" in json.dumps(state.get("Parameters", {}))
            )
            or is_counted_wait(name, state)
        }
        assert find_cycle(states, removed=incrementers) is None, f"{where}: a loop never counts its polls"


def test_given_the_cycle_check_then_it_finds_an_unbounded_loop_and_accepts_a_bounded_one() -> None:
    unbounded: Scope = {
        "Check": {"Type": "Task", "Next": "Done?"},
        "Done?": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.done", "BooleanEquals": True, "Next": "End"}],
            "Default": "Wait",
        },
        "Wait": {"Type": "Wait", "Seconds": 5, "Next": "Check"},
        "End": {"Type": "Succeed"},
    }
    bounded: Scope = {
        **unbounded,
        "Wait": {"Type": "Wait", "Seconds": 5, "Next": "Left?"},
        "Left?": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.pollCount.value", "NumericGreaterThanEqualsPath": "$.config.maxPolls.x", "Next": "End"}
            ],
            "Default": "Check",
        },
    }

    assert find_cycle(unbounded, removed=set()) == ["Check", "Done?", "Wait", "Check"]
    assert find_cycle(bounded, removed={n for n, s in bounded.items() if is_bound_check(s)}) is None
    assert find_cycle(bounded, removed=set()) is not None


def test_given_a_workflow_then_every_wait_takes_its_seconds_from_the_poll_configuration(asl: Path) -> None:
    waits = [(w, n, s) for w, n, s in all_states(asl) if s["Type"] == "Wait"]

    # the create and update workflows wait only through their event-or-poll tasks
    assert waits or "create" in asl.name or "update" in asl.name
    for where, name, state in waits:
        assert POLL_SECONDS.match(state.get("SecondsPath", "")), f"{where}{name}: {state}"
        assert not {"Seconds", "Timestamp", "TimestampPath"} & set(state), f"{where}{name}"


def test_given_a_workflow_then_state_names_are_title_case_words(asl: Path) -> None:
    for where, name, _ in all_states(asl):
        words = name.split(" ")
        assert len(words) >= 2 and all(TITLE_WORD.match(w) for w in words), f"{where}{name!r}"


def test_given_a_workflow_then_every_lambda_task_runs_a_known_step_action(asl: Path) -> None:
    used = set()
    for where, name, state in all_states(asl):
        if state["Type"] != "Task":
            continue
        assert LAMBDA_INVOKE.match(state["Resource"]), f"{where}{name}: {state['Resource']}"
        assert state["Parameters"]["FunctionName"] == "${ClusterStepsFunctionArn}"
        action = state["Parameters"]["Payload"]["action"]
        assert action in ACTIONS, f"{where}{name}: unknown action {action!r}"
        used.add(action)
    assert used


def test_given_both_workflows_then_every_step_action_is_used_by_one_of_them() -> None:
    used = {
        state["Parameters"]["Payload"]["action"]
        for path in ASL_FILES
        for _, _, state in all_states(path)
        if state["Type"] == "Task"
    }

    assert set(ACTIONS) - used == set(), "dispatch entries no workflow calls"


def test_given_a_task_waiting_for_a_token_then_it_times_out_at_its_poll_interval_and_checks_again_bounded(
    asl: Path,
) -> None:
    """Event-or-poll: no blind window (the timeout is the poll interval); timed out or woken, it checks again."""
    found = 0
    for where, scope in scopes(definition(asl)):
        states: Scope = scope["States"]
        for name, state in states.items():
            if state["Type"] != "Task" or not state["Resource"].endswith(".waitForTaskToken"):
                continue
            found += 1
            assert state["Parameters"]["Payload"]["taskToken.$"] == "$$.Task.Token"
            assert is_counted_wait(name, state), f"{where}{name}: a wait must be counted against its bound"
            [timeout] = [c for c in state["Catch"] if c["ErrorEquals"] == ["States.Timeout"]]
            assert timeout["Next"] == name, f"{where}{name}: a timeout must check again"
            after = states[state["Next"]]
            assert after["Type"] == "Choice" and after["Default"] == name, f"{where}{name}: woken, it checks again"
    assert found or "delete" in asl.name


def test_given_the_default_poll_intervals_then_every_event_or_poll_wait_checks_at_least_once_a_minute() -> None:
    from instantstart.models.workflow import PollSeconds

    seconds = PollSeconds().to_wire()

    assert seconds["hyperPodCluster"] <= 60 and seconds["nodes"] <= 60 and seconds["addon"] <= 60


def load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("statemachines_build", ROOT / "statemachines" / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_given_the_builder_when_rendering_then_it_equals_the_committed_definitions() -> None:
    build = load_builder()

    assert sorted(build.DEFINITIONS) == [p.name for p in ASL_FILES]
    for path in ASL_FILES:
        assert build.render(path.name) == path.read_text(), f"{path.name} is stale: run make asl"


def test_given_a_stage_whose_begin_fails_then_the_failure_path_records_that_stage_not_the_one_before() -> None:
    """``$.currentStage`` names the stage the failure path records; while ``Begin <Stage> Stage`` fails it still
    names the stage before (already SUCCEEDED), so the error would land on no stage and nothing could be retried."""
    begins = 0
    for where, scope in scopes(definition(ROOT / "statemachines" / "create_cluster.asl.json")):
        states = scope["States"]
        for name, state in states.items():
            payload = state.get("Parameters", {}).get("Payload", {}) if state["Type"] == "Task" else {}
            if payload.get("action") != "begin_stage":
                continue
            begins += 1
            caught = next(c["Next"] for c in state["Catch"] if "States.ALL" in c["ErrorEquals"])
            named = states[caught]
            assert named["Type"] == "Pass" and named["ResultPath"] == "$.currentStage", f"{where}{name}"
            assert named["Result"]["stage"] == payload["stage"], f"{where}{name} records {named['Result']}"
            failure = states[named["Next"]]
            assert failure["Parameters"]["Payload"]["action"] == "record_failure", f"{where}{name}"
            assert failure["Parameters"]["Payload"]["stage.$"] == "$.currentStage.stage"
    assert begins == 6
