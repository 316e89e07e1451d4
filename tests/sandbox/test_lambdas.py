"""The in-process Lambda runtime: one execution environment per function (or several when set), errors in the Lambda
shape."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from instantstart_sandbox import lambdas

HANDLER = """
import threading, time
STATE = {"active": 0, "peak": 0}
LOCK = threading.Lock()

def handler(event, context):
    started = time.monotonic()
    with LOCK:
        STATE["active"] += 1
        STATE["peak"] = max(STATE["peak"], STATE["active"])
    time.sleep(0.05)
    with LOCK:
        STATE["active"] -= 1
    if event.get("fail"):
        raise ValueError("bad input: " + event["fail"])
    return {"echo": event["n"], "function": context.function_name, "start": started, "end": time.monotonic(),
            "state": id(STATE), "peak": STATE["peak"]}
"""


@pytest.fixture
def functions(tmp_path: Path) -> list[SimpleNamespace]:
    """Two deployed functions whose handler modules have unique names (as the sandbox requires)."""
    made = []
    unique = uuid.uuid4().hex  # id(tmp_path) repeats once the object is freed: a module already imported would answer
    for name in ("alpha", "beta"):
        code_dir = tmp_path / name
        code_dir.mkdir()
        (code_dir / f"lambda_test_{name}_{unique}.py").write_text(HANDLER)
        handler = f"lambda_test_{name}_{unique}.handler"
        lambdas.REGISTRY[f"fn-{name}"] = lambdas.LambdaCode(code_dir=code_dir, handler=handler, timeout=10)
        made.append(SimpleNamespace(function_name=f"fn-{name}", function_arn=f"arn:aws:lambda:::function:fn-{name}"))
    return made


def _peak(function: SimpleNamespace) -> int:
    module = __import__(lambdas.REGISTRY[function.function_name].handler.rsplit(".", 1)[0])
    return int(module.STATE["peak"])


def test_given_concurrent_invocations_of_one_function_then_they_run_one_at_a_time(
    functions: list[SimpleNamespace],
) -> None:
    alpha, _ = functions
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda n: lambdas.invoke_in_process(alpha, {"n": n}), range(6)))
    assert [json.loads(payload)["echo"] for payload, errored, _ in results] == list(range(6))
    assert not any(errored for _, errored, _ in results)
    assert _peak(alpha) == 1


def test_given_two_functions_then_they_run_at_the_same_time(functions: list[SimpleNamespace]) -> None:
    alpha, beta = functions
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda fn: json.loads(lambdas.invoke_in_process(fn, {"n": 0})[0]), [alpha, beta] * 2))
    spans = {
        name: [(r["start"], r["end"]) for r in results if r["function"] == name] for name in ("fn-alpha", "fn-beta")
    }
    overlapping = any(a0 < b1 and b0 < a1 for a0, a1 in spans["fn-alpha"] for b0, b1 in spans["fn-beta"])
    assert overlapping, "invocations of different functions must not wait for each other"


def test_when_a_handler_raises_then_the_lambda_error_shape_is_returned(functions: list[SimpleNamespace]) -> None:
    alpha, _ = functions
    payload, errored, _ = lambdas.invoke_in_process(alpha, {"n": 1, "fail": "clusterTag"})
    assert errored
    error = json.loads(payload)
    assert error["errorType"] == "ValueError"
    assert error["errorMessage"] == "bad input: clusterTag"
    assert error["stackTrace"]


def test_given_several_environments_then_invocations_of_one_function_overlap_each_in_its_own_modules(
    functions: list[SimpleNamespace],
) -> None:
    alpha, _ = functions
    lambdas.set_environments(3, "fn-alpha")
    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            results = list(pool.map(lambda n: lambdas.invoke_in_process(alpha, {"n": n}), range(6)))
    finally:
        lambdas.set_environments(1, "fn-alpha")
    answers = [json.loads(payload) for payload, errored, _ in results if not errored]
    assert [a["echo"] for a in answers] == list(range(6))
    edges = sorted([(a["start"], 1) for a in answers] + [(a["end"], -1) for a in answers])
    running = [sum(step for _, step in edges[: i + 1]) for i in range(len(edges))]
    assert 2 <= max(running) <= 3
    # each environment has its own module globals, so no two overlapping calls share the handler's state
    assert len({a["state"] for a in answers}) >= 2
    assert all(a["peak"] == 1 for a in answers)

    after = [json.loads(lambdas.invoke_in_process(alpha, {"n": n})[0]) for n in range(2)]
    assert {a["state"] for a in after} == {id(__import__(lambdas.REGISTRY["fn-alpha"].handler.split(".")[0]).STATE)}


POWERTOOLS_HANDLER = """
import time
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

RESOLVER = APIGatewayHttpResolver()

def handler(event, context):
    BaseRouter.current_event = event["n"]  # what the Powertools resolver does with each event
    time.sleep(0.1)
    return {"seen": RESOLVER.current_event, "class": BaseRouter.current_event}
"""


def test_given_several_environments_then_powertools_class_state_is_not_shared(tmp_path: Path) -> None:
    code_dir = tmp_path / "gamma"
    code_dir.mkdir()
    module = f"lambda_test_gamma_{uuid.uuid4().hex}"
    (code_dir / f"{module}.py").write_text(POWERTOOLS_HANDLER)
    lambdas.REGISTRY["fn-gamma"] = lambdas.LambdaCode(code_dir=code_dir, handler=f"{module}.handler", timeout=10)
    gamma = SimpleNamespace(function_name="fn-gamma", function_arn="arn:aws:lambda:::function:fn-gamma")
    lambdas.set_environments(3, "fn-gamma")
    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            results = list(pool.map(lambda n: lambdas.invoke_in_process(gamma, {"n": n}), range(6)))
    finally:
        lambdas.set_environments(1, "fn-gamma")
        lambdas.REGISTRY.pop("fn-gamma")
    answers = [json.loads(payload) for payload, _, _ in results]
    assert [(a["seen"], a["class"]) for a in answers] == [(n, n) for n in range(6)]


CALLING = """
import boto3
from botocore.stub import Stubber
DONE = []

def handler(event, context):
    client = boto3.client("sts", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    identity = {"Account": "123456789012", "Arn": "arn:aws:iam::123456789012:user/x", "UserId": "x"}
    with Stubber(client) as stub:
        for _ in range(3):
            stub.add_response("get_caller_identity", identity)
        for i in range(3):
            client.get_caller_identity()
            DONE.append((event["n"], i))
    return {"done": len(DONE)}
"""


@pytest.fixture
def caller(tmp_path: Path) -> Iterator[SimpleNamespace]:
    """A deployed function making three AWS calls (STS, stubbed), noting each answer it got; faults cleared after."""
    module = f"lambda_test_calls_{uuid.uuid4().hex}"  # never an earlier test's module (and its DONE list)
    (tmp_path / f"{module}.py").write_text(CALLING)
    lambdas.REGISTRY["fn-calls"] = lambdas.LambdaCode(code_dir=tmp_path, handler=f"{module}.handler", timeout=1)
    lambdas.install()
    yield SimpleNamespace(function_name="fn-calls", function_arn="arn:aws:lambda:::function:fn-calls", module=module)
    lambdas.FAULTS.clear()


def _done(caller: SimpleNamespace) -> list[tuple[int, int]]:
    return list(__import__(caller.module).DONE)


def _last(caller: SimpleNamespace) -> dict[str, Any]:
    return [i for i in lambdas.invocations() if i["function"] == caller.function_name][-1]


def test_given_a_crash_after_the_second_aws_call_then_nothing_after_it_runs_and_the_caller_gets_lambdas_crash(
    caller: SimpleNamespace,
) -> None:
    fault = lambdas.FAULTS.crash("fn-calls", after_calls=2, when={"n": 1})

    payload, errored, _ = lambdas.invoke_in_process(caller, {"n": 1})

    assert errored
    error = json.loads(payload)
    assert error["errorType"] == "Runtime.ExitError"
    assert error["errorMessage"].startswith("RequestId: ") and "Runtime exited with error" in error["errorMessage"]
    assert _done(caller) == [(1, 0)], "the second call's answer never reached the handler"
    assert _last(caller) | {"seconds": 0} == {
        "function": "fn-calls",
        "errored": True,
        "seconds": 0,
        "calls": 2,
        "event": {"n": 1},
        "fault": "crash",
    }
    assert fault.remaining == 0 and fault.fired[0]["calls"] == 2

    again, errored, _ = lambdas.invoke_in_process(caller, {"n": 1})  # the fault is spent: a normal run
    assert not errored and json.loads(again) == {"done": 4}
    assert (_last(caller)["calls"], _last(caller)["fault"]) == (3, None)


def test_given_a_fault_for_other_events_or_past_the_last_call_then_the_invocation_runs_and_the_fault_waits(
    caller: SimpleNamespace,
) -> None:
    other = lambdas.FAULTS.crash("fn-calls", after_calls=1, when={"n": 2}, error_type="Lambda.Unknown")
    late = lambdas.FAULTS.crash("fn-calls", after_calls=4)

    payload, errored, _ = lambdas.invoke_in_process(caller, {"n": 1})
    assert not errored and json.loads(payload) == {"done": 3}
    assert other.remaining == 1, "the event does not hold n=2"

    payload, errored, _ = lambdas.invoke_in_process(caller, {"n": 2})
    assert errored and json.loads(payload)["errorType"] == "Lambda.Unknown"
    assert (other.remaining, late.remaining) == (0, 1), "the run with three calls never reached a fourth"


def test_given_a_crash_after_an_operation_then_it_kills_right_after_the_first_call_of_that_operation(
    caller: SimpleNamespace,
) -> None:
    lambdas.FAULTS.crash("fn-calls", after_calls=0, after_operation="GetCallerIdentity")

    _, errored, _ = lambdas.invoke_in_process(caller, {"n": 3})

    assert errored and _last(caller)["calls"] == 1 and _done(caller) == []


def test_given_a_timeout_then_the_caller_gets_sandbox_timedout_after_the_functions_timeout_and_the_next_runs_meanwhile(
    caller: SimpleNamespace,
) -> None:
    lambdas.FAULTS.timeout("fn-calls", after_calls=1, when={"n": 1})
    with ThreadPoolExecutor(max_workers=2) as pool:
        started = time.monotonic()
        hung = pool.submit(lambdas.invoke_in_process, caller, {"n": 1})
        time.sleep(0.2)
        payload, errored, _ = lambdas.invoke_in_process(caller, {"n": 2})
        next_done = time.monotonic() - started
        timed_out, hung_errored, _ = hung.result()
        took = time.monotonic() - started

    assert not errored and json.loads(payload) == {"done": 3}
    assert next_done < 1.0, "the frozen invocation does not hold the execution environment"
    assert hung_errored and took >= 1.0, took
    error = json.loads(timed_out)
    assert error["errorType"] == "Sandbox.Timedout"
    assert error["errorMessage"].endswith("Error: Task timed out after 1.00 seconds")
    assert _done(caller) == [(2, 0), (2, 1), (2, 2)]
