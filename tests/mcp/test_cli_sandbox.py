"""The ``instantstart`` CLI through its real entry point (the installed console script) against the sandbox:
the human's face of the same HTTP API the MCP tools call."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.mcp.conftest import BIN, client_process_env

SCRIPT = BIN / "instantstart"


def instantstart(
    sandbox: Any, tmp_path: Path, *args: str, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``instantstart <args>`` with the sandbox's URL, region and credentials in its environment."""
    assert SCRIPT.exists(), f"{SCRIPT} is missing: run .venv/bin/pip install -e . --no-deps"
    return subprocess.run(
        [str(SCRIPT), *args],
        env=client_process_env(sandbox, tmp_path),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_all(sandbox: Any, tmp_path: Path, *commands: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """Run commands one after the other; their results in order.

    Not concurrently: the sandbox runs each Lambda function in process, and concurrent invocations of
    the API function share its Powertools resolver state (real Lambda gives each its own container).
    """
    return [instantstart(sandbox, tmp_path, *args) for args in commands]


def test_cli_reads_the_catalog_and_clusters_and_maps_a_404_to_exit_2(sandbox: Any, api: Any, tmp_path: Path) -> None:
    """`catalog zones`, `catalog instance-types`, `clusters list` answer from the API; an unknown tag exits 2."""
    zones, types, listing, missing = run_all(
        sandbox,
        tmp_path,
        ["--json", "catalog", "zones"],
        ["catalog", "instance-types", "--az", "us-west-2c"],
        ["clusters", "list", "--json"],
        ["clusters", "get", "clinothere"],
    )
    assert zones.returncode == 0, zones.stderr
    assert "us-west-2c" in {z["zoneName"] for z in json.loads(zones.stdout)["availabilityZones"]}
    assert types.returncode == 0, types.stderr
    assert "ml.g6.4xlarge" in types.stdout
    assert listing.returncode == 0, listing.stderr
    assert {c["clusterTag"] for c in json.loads(listing.stdout)["clusters"]} == {
        c["clusterTag"] for c in api.iter_clusters()
    }
    assert missing.returncode == 2
    assert "404" in missing.stderr and "NotFound" in missing.stderr


def test_cli_creates_a_cluster_with_wait_then_inspects_retries_and_guards_delete(
    sandbox: Any, api: Any, tmp_path: Path
) -> None:
    """`clusters create --wait` follows the stages live to READY and prints the summary; `get`, `stages`,
    `operations get` show it; `retry` of a stage that did not fail exits 2; `delete` with a wrong typed
    tag aborts with exit 1 and deletes nothing."""
    tag = "clisbx"
    created = instantstart(
        sandbox,
        tmp_path,
        "clusters",
        "create",
        "--tag",
        tag,
        "--az",
        "us-west-2c",
        "--instance-type",
        "ml.g6.4xlarge",
        "--count",
        "1",
        "--wait",
        "--poll-interval",
        "0.5",
    )
    assert created.returncode == 0, created.stdout + created.stderr
    assert f"Cluster {tag} is READY" in created.stdout
    assert f"hp-cluster-{tag}" in created.stdout and "Ready / Schedulable" in created.stdout

    operation_id = api.get_cluster(tag)["currentOperationId"]
    shown, stages, operation, retry = run_all(
        sandbox,
        tmp_path,
        ["--json", "clusters", "get", tag],
        ["clusters", "stages", tag],
        ["operations", "get", operation_id, "--json"],
        ["clusters", "retry", tag, "network"],
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["status"] == "READY"
    assert stages.returncode == 0, stages.stderr
    for name in ("network", "access", "dependencies", "hyperpod", "storage", "verify"):
        assert name in stages.stdout
    assert operation.returncode == 0, operation.stderr
    assert json.loads(operation.stdout)["status"] == "SUCCEEDED"
    assert retry.returncode == 2 and "409" in retry.stderr and "SUCCEEDED" in retry.stderr

    aborted = instantstart(sandbox, tmp_path, "clusters", "delete", tag, stdin="not-the-tag\n")
    assert aborted.returncode == 1 and "nothing was deleted" in aborted.stderr
    assert api.get_cluster(tag)["status"] == "READY"
