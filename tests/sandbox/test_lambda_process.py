"""The process Lambda runtime: an execution environment is a process running AWS's awslambdaric on built artifacts,
with Lambda's variables and nothing of the development environment importable; Lambda's failures are Lambda's."""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from instantstart_sandbox import artifacts
from instantstart_sandbox.lambda_process import environments
from instantstart_sandbox.lambdas import LambdaCode

ROOT = Path(__file__).resolve().parents[2]
BUILD = artifacts.build_dir(ROOT / "template.yaml")

HANDLER = """
import os, sys, time

def handler(event, context):
    action = event.get("action")
    if action == "sleep":
        time.sleep(event["seconds"])
    if action == "allocate":
        kept = bytearray(event["mib"] * 1024 * 1024)
        kept[::4096] = b"x" * len(kept[::4096])
    if action == "exit":
        os._exit(3)
    if action == "raise":
        raise ValueError("refused")
    if action == "import":
        __import__(event["module"])
    return {
        "pid": os.getpid(),
        "path": sys.path,
        "env": {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "LAMBDA_", "_HANDLER"))},
        "remaining": context.get_remaining_time_in_millis(),
        "requestId": context.aws_request_id,
    }
"""


@pytest.fixture
def environment(tmp_path: Path) -> Iterator[environments.ProcessEnvironment]:
    """One environment of a small function (timeout 2 s, 128 MiB) with the built core layer, no simulated clock."""
    task_root = tmp_path / "task"
    task_root.mkdir()
    (task_root / "probe.py").write_text(textwrap.dedent(HANDLER))
    (task_root / "broken.py").write_text("import module_the_lock_does_not_have\n")
    environments.configure(
        environments.ProcessSettings(
            python=sys.executable,
            runtime_dir=BUILD / artifacts.RUNTIME_DIR,
            endpoint_url="http://127.0.0.1:9",
            secret_key="secret",
            region="us-west-2",
            clock=None,
            log_dir=tmp_path / "logs",
            common_environment={},
        )
    )
    code = LambdaCode(
        code_dir=task_root,
        handler="probe.handler",
        timeout=2,
        memory_size=128,
        layers=(artifacts.layer_dir(BUILD, artifacts.CORE_LAYER),),
        environment={"TABLE_NAME": "records"},
    )
    env = environments.ProcessEnvironment("probe-fn", code, 0)
    yield env
    env.retire()
    environments.configure(None)


def invoke(env: environments.ProcessEnvironment, event: dict[str, object]) -> tuple[dict[str, object], bool]:
    payload, errored, _ = env.invoke(
        json.dumps(event).encode(), "arn:aws:lambda:us-west-2:1:function:probe-fn", str(uuid.uuid4())
    )
    return json.loads(payload), errored


def test_a_function_runs_in_its_own_process_with_lambdas_path_and_variables(
    environment: environments.ProcessEnvironment,
) -> None:
    first, errored = invoke(environment, {})
    assert not errored
    path = [str(p) for p in first["path"]]  # type: ignore[union-attr]
    assert path[0] == str(environment.code.code_dir)
    assert path[1] == str(environment.code.layers[0])
    assert not [p for p in path if "site-packages" in p], "nothing of the development environment is importable"
    env = first["env"]
    assert env["AWS_LAMBDA_FUNCTION_NAME"] == "probe-fn"  # type: ignore[index]
    assert env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "128"  # type: ignore[index]
    assert env["LAMBDA_TASK_ROOT"] == str(environment.code.code_dir)  # type: ignore[index]
    assert env["AWS_ACCESS_KEY_ID"] == environment.access_key  # type: ignore[index]
    assert 0 < int(first["remaining"]) <= 2000  # type: ignore[call-overload]
    second, _ = invoke(environment, {})
    assert second["pid"] == first["pid"], "a warm environment serves the next invocation"
    assert second["requestId"] != first["requestId"]


def test_a_package_missing_from_the_artifacts_fails_the_import_as_on_lambda(
    environment: environments.ProcessEnvironment,
) -> None:
    # moto is in the development environment, never in the layer
    answer, errored = invoke(environment, {"action": "import", "module": "moto"})
    assert errored and answer["errorType"] == "ModuleNotFoundError"
    environment.code.handler = "broken.handler"
    environment.stop()
    answer, errored = invoke(environment, {})
    assert errored
    assert answer["errorType"] == "Runtime.ImportModuleError"
    assert "module_the_lock_does_not_have" in str(answer["errorMessage"])


def test_a_handler_error_is_the_runtimes_error_payload(environment: environments.ProcessEnvironment) -> None:
    answer, errored = invoke(environment, {"action": "raise"})
    assert errored
    assert answer["errorType"] == "ValueError" and answer["errorMessage"] == "refused"


def test_an_invocation_past_its_timeout_is_killed(environment: environments.ProcessEnvironment) -> None:
    warm, _ = invoke(environment, {})
    answer, errored = invoke(environment, {"action": "sleep", "seconds": 30})
    assert errored and answer["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 2.00 seconds" in str(answer["errorMessage"])
    after, _ = invoke(environment, {})
    assert after["pid"] != warm["pid"], "the timed-out environment was replaced"


def test_an_invocation_past_its_memory_is_killed(environment: environments.ProcessEnvironment) -> None:
    answer, errored = invoke(environment, {"action": "allocate", "mib": 400})
    assert errored and answer["errorType"] == "Runtime.OutOfMemory"


def test_a_runtime_that_exits_mid_invocation_answers_runtime_exit_error(
    environment: environments.ProcessEnvironment,
) -> None:
    answer, errored = invoke(environment, {"action": "exit"})
    assert errored and answer["errorType"] == "Runtime.ExitError"
    fine, errored = invoke(environment, {})
    assert not errored and fine["pid"]
