"""The in-process Lambda runtime: one execution environment per function, errors in the Lambda shape."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from sandbox import lambdas

HANDLER = """
import threading, time
STATE = {"active": 0, "peak": 0}
LOCK = threading.Lock()

def handler(event, context):
    with LOCK:
        STATE["active"] += 1
        STATE["peak"] = max(STATE["peak"], STATE["active"])
    time.sleep(0.05)
    with LOCK:
        STATE["active"] -= 1
    if event.get("fail"):
        raise ValueError("bad input: " + event["fail"])
    return {"echo": event["n"], "function": context.function_name}
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
    barrier_started = time.monotonic()
    threads = [
        threading.Thread(target=lambdas.invoke_in_process, args=(fn, {"n": i}))
        for i in range(4)
        for fn in (alpha, beta)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 8 invocations of 50 ms on two environments take about 4 x 50 ms, not 8 x 50 ms.
    assert time.monotonic() - barrier_started < 0.38


def test_when_a_handler_raises_then_the_lambda_error_shape_is_returned(functions: list[SimpleNamespace]) -> None:
    alpha, _ = functions
    payload, errored, _ = lambdas.invoke_in_process(alpha, {"n": 1, "fail": "clusterTag"})
    assert errored
    error = json.loads(payload)
    assert error["errorType"] == "ValueError"
    assert error["errorMessage"] == "bad input: clusterTag"
    assert error["stackTrace"]
