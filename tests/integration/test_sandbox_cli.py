"""The sandbox's own entry points, run as a user runs them: ``instantstart-sandbox demo`` and ``serve``."""

from __future__ import annotations

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


@pytest.fixture
def served_sandbox(tmp_path: Path) -> Iterator[tuple[dict[str, str], list[str]]]:
    """``instantstart-sandbox serve --template PATH --fail-hyperpod-capacity ml.g6.4xlarge`` in the background.

    Yields the environment its printed exports give a client, and the lines it logs (kept draining so
    the pipe never fills up).
    """
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
