"""The sandbox's own entry points, run as a user runs them: ``instantstart-sandbox demo`` and ``serve``."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
FAST = "400"  # simulated seconds per wall second: keeps these end-to-end runs short


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "INSTANTSTART_", "MOTO_"))}
    env["NO_COLOR"] = "1"
    return env


def test_when_running_the_demo_from_any_directory_then_it_ends_with_the_verified_summary(tmp_path: Path) -> None:
    out = subprocess.run(
        [str(BIN / "instantstart-sandbox"), "demo", "--time-scale", FAST, "--tag", "clidemo"],
        env=_clean_env(),
        cwd=tmp_path,  # the checkout's template.yaml is found from the installed package, not the working directory
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert re.search(r"\| EKS Cluster\s+\| eks-cluster-clidemo\s+\|", out.stdout)
    assert re.search(r"\| Node Status\s+\| Ready / Schedulable\s+\|", out.stdout)
    assert re.search(r"\| S3 Storage\s+\| s3-claim mounted \(Bound\)\s+\|", out.stdout)


@pytest.fixture(scope="module")
def served_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], list[str]]]:
    """``instantstart-sandbox serve --template PATH --fail-hyperpod-capacity ml.g6.4xlarge
    --throttle sagemaker:DeleteCluster:1000`` in the background (one per module: the tests use their own
    clusters; every SageMaker DeleteCluster is throttled, so a delete fails).

    Yields the environment its printed exports give a client, and the lines it logs (kept draining so
    the pipe never fills up).
    """
    tmp_path = tmp_path_factory.mktemp("serve")
    proc = subprocess.Popen(
        [
            str(BIN / "instantstart-sandbox"),
            "serve",
            "--time-scale",
            FAST,
            "--template",
            str(ROOT / "template.yaml"),
            "--fail-hyperpod-capacity",
            "ml.g6.4xlarge",
            "--throttle",
            "sagemaker:DeleteCluster:1000",
        ],
        env=_clean_env(),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    exports: dict[str, str] = {}
    log: list[str] = []
    deadline = time.monotonic() + 180
    assert proc.stdout is not None
    stdout = proc.stdout
    try:
        while "AWS_SECRET_ACCESS_KEY" not in exports:
            assert time.monotonic() < deadline, "serve did not print its exports"
            line = stdout.readline()
            assert line, "serve exited early"
            match = re.match(r"\s*export (\w+)=(\S+)", line)
            if match:
                exports[match[1]] = match[2]
        threading.Thread(target=lambda: log.extend(iter(stdout.readline, "")), daemon=True).start()
        yield {**_clean_env(), **exports}, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_given_a_served_sandbox_with_no_capacity_when_creating_then_hyperpod_retries_to_ready_and_shows_errors(
    served_sandbox: tuple[dict[str, str], list[str]],
) -> None:
    """``serve --fail-hyperpod-capacity`` fails the first launch attempts (default 2); under continuous
    provisioning HyperPod retries by itself, so the create still ends READY and its errors are listed."""
    env, log = served_sandbox
    cli = str(BIN / "instantstart")
    create = subprocess.run(
        [
            cli,
            "clusters",
            "create",
            "--tag",
            "served",
            "--az",
            "us-west-2c",
            "--instance-type",
            "ml.g6.4xlarge",
            "--count",
            "1",
            "--wait",
            "--poll-interval",
            "0.5",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert create.returncode == 0, create.stdout[-2000:] + create.stderr[-2000:]
    assert "Cluster served is READY" in create.stdout
    events = subprocess.run(
        [cli, "--json", "clusters", "events", "served", "--level", "Error"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert events.returncode == 0, events.stderr
    errors = json.loads(events.stdout)["events"]
    assert len(errors) >= 2, "each failed launch attempt is an Error event HyperPod reported"
    assert all(e["eventLevel"] == "Error" and e["instanceGroupName"] for e in errors)
    status = subprocess.run(
        [cli, "--json", "clusters", "get", "served"], env=env, capture_output=True, text=True, timeout=60
    )
    assert '"status": "READY"' in status.stdout
    missing = subprocess.run([cli, "clusters", "get", "nosuch"], env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2
    time.sleep(0.5)
    assert any(re.search(r"POST /clusters 202 \d+ms", line) for line in log), log[-20:]
    assert any(re.search(r"GET /clusters/nosuch 404 ClusterNotFound \d+ms", line) for line in log), log[-20:]


EXECUTION_LINE = re.compile(r"^INFO instantstart_sandbox\.executions: (\S+) (\S+): (.+)$")
ENGINE_INTERNALS = re.compile(r"moto\.|Traceback|object at 0x|Exception=|<[A-Za-z_.]+ ")


def test_given_a_served_sandbox_when_operations_run_and_one_fails_then_the_terminal_shows_one_line_per_stage_change(
    served_sandbox: tuple[dict[str, str], list[str]],
) -> None:
    """The terminal of ``serve`` (what a user watches): one line when a workflow starts, one per state it
    moves to (a poll loop is one line, not one per poll), one when it ends; a failed workflow ends with its
    error code on one short line; none of the Step Functions engine's internals (they go to the engine log)."""
    env, log = served_sandbox
    cli = str(BIN / "instantstart")
    create = subprocess.run(
        [
            *(cli, "clusters", "create", "--tag", "term", "--az", "us-west-2c"),
            *("--instance-type", "ml.g6.4xlarge", "--count", "1", "--wait", "--poll-interval", "0.5"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert create.returncode == 0, create.stdout[-2000:] + create.stderr[-2000:]
    delete = subprocess.run(
        [cli, "clusters", "delete", "term", "--yes", "--wait", "--poll-interval", "0.5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert delete.returncode == 1, delete.stdout[-2000:] + delete.stderr[-2000:]  # throttled past every retry
    time.sleep(0.5)
    lines = [line.rstrip("\n") for line in list(log)]
    executions: dict[tuple[str, str], list[str]] = {}
    for line in lines:
        match = EXECUTION_LINE.match(line)
        if match:
            executions.setdefault((re.sub("[^a-z]", "", match[1].lower()), match[2]), []).append(match[3])
    create_runs = [states for (machine, _), states in executions.items() if "createcluster" in machine]
    delete_runs = [states for (machine, _), states in executions.items() if "deletecluster" in machine]
    assert create_runs and delete_runs, lines[-40:]
    for states in executions.values():
        assert states[0] == "started"
        assert all(a != b for a, b in itertools.pairwise(states)), f"a repeated line: {states}"
    assert any(states[-1] == "SUCCEEDED" for states in create_runs), create_runs
    failed = [states[-1] for states in delete_runs if states[-1].startswith("FAILED")]
    assert failed and all(len(end) < 400 for end in failed), delete_runs
    assert not [line for line in lines if ENGINE_INTERNALS.search(line)], "engine internals on the terminal"
    assert all(len(line) < 500 for line in lines)
