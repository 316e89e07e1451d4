"""The installed ``instantstart`` console script, run as a real process against the real API function.

The API runs in this test process (:mod:`inprocess_api`) and is served on 127.0.0.1 for the child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from inprocess_api import InProcessApi

ACCESS_KEY, SECRET_KEY = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SCRIPT = Path(sys.executable).parent / "instantstart"


@pytest.fixture
def served(inprocess_api: InProcessApi) -> Iterator[InProcessApi]:
    """The in-process API on 127.0.0.1, checking signatures against the child's credentials."""
    inprocess_api.credentials = (ACCESS_KEY, SECRET_KEY, None)
    with inprocess_api.serve():
        yield inprocess_api


def instantstart(api: InProcessApi, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the console script with dummy credentials and INSTANTSTART_API_URL pointing at the served API."""
    assert SCRIPT.exists(), f"{SCRIPT} is missing: run .venv/bin/pip install -e . --no-deps"
    assert api.served_url is not None
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWS_") and key not in ("INSTANTSTART_API_URL", "COLUMNS")
    }
    env.update(
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_REGION="us-west-2",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        INSTANTSTART_API_URL=api.served_url,
        COLUMNS="160",
    )
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_console_script_lists_clusters_as_a_table(served: InProcessApi, tmp_path: Path) -> None:
    """Given two clusters and INSTANTSTART_API_URL,
    when `instantstart clusters list` runs,
    then it prints a table of both and exits 0."""
    served.create_cluster("alpha")
    served.create_cluster("bravo")
    done = instantstart(served, tmp_path, "clusters", "list")
    assert done.returncode == 0, done.stderr
    assert "Clusters (2)" in done.stdout
    assert "hp-cluster-alpha" in done.stdout and "hp-cluster-bravo" in done.stdout


def test_the_console_script_prints_json(served: InProcessApi, tmp_path: Path) -> None:
    """Given the Region's catalog, when `instantstart --json catalog zones` runs, then stdout is the JSON."""
    done = instantstart(served, tmp_path, "--json", "catalog", "zones")
    assert done.returncode == 0, done.stderr
    zones = json.loads(done.stdout)["availabilityZones"]
    assert {"zoneName": "us-west-2c", "zoneId": "usw2-az3"} in zones


def test_the_console_script_creates_and_waits_to_the_summary(served: InProcessApi, tmp_path: Path) -> None:
    """Given a create that succeeds,
    when `instantstart clusters create ... --wait` runs,
    then stdout ends with the article's summary table and the exit code is 0."""
    done = instantstart(
        served,
        tmp_path,
        "clusters",
        "create",
        "--tag",
        "demo",
        "--az",
        "us-west-2c",
        "--instance-type",
        "ml.g6.4xlarge",
        "--wait",
        "--poll-interval",
        "0.1",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().splitlines()[-5:] == [
        "| EKS Cluster      | eks-cluster-demo                 |",
        "| HyperPod Cluster | hp-cluster-demo                  |",
        "| Node             | 1x ml.g6.4xlarge (On-Demand)     |",
        "| Node Status      | Ready / Schedulable              |",
        "| S3 Storage       | s3-claim mounted (Bound)         |",
    ]


def test_the_console_script_exits_1_when_the_operation_fails(served: InProcessApi, tmp_path: Path) -> None:
    """Given a storage stage that fails,
    when `instantstart clusters create ... --wait` runs,
    then it exits 1 with the stage's error on stderr."""
    served.driver.fail("storage", "AccessDenied", "s3:ListBucket is not allowed on instantstart-demo-data")
    done = instantstart(
        served, tmp_path, "clusters", "create", "--tag", "demo", "--az", "us-west-2c",
        "--instance-type", "ml.g6.4xlarge", "--wait", "--poll-interval", "0.1",
    )  # fmt: skip
    assert done.returncode == 1
    assert "Stage storage failed: AccessDenied: s3:ListBucket is not allowed" in done.stderr


def test_the_console_script_exits_2_on_a_404_with_the_message(served: InProcessApi, tmp_path: Path) -> None:
    """Given no cluster named nope, when `instantstart clusters get nope` runs, then it exits 2."""
    done = instantstart(served, tmp_path, "clusters", "get", "nope")
    assert done.returncode == 2
    assert "404 ClusterNotFound: cluster 'nope' does not exist" in done.stderr
    assert done.stdout == ""
