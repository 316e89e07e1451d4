"""The in-process Lambda runtime: one execution environment per function (or several when set), errors in the Lambda
shape."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

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
    for name in ("alpha", "beta"):
        code_dir = tmp_path / name
        code_dir.mkdir()
        (code_dir / f"lambda_test_{name}_{id(tmp_path)}.py").write_text(HANDLER)
        handler = f"lambda_test_{name}_{id(tmp_path)}.handler"
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
    module = f"lambda_test_gamma_{id(tmp_path)}"
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
