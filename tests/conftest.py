"""Fixtures shared by the suites that run against the offline sandbox (integration, MCP).

One sandbox per test process: moto's backends are process-global, so the Makefile runs the sandbox
suites in their own pytest process.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from instantstart_sandbox import artifacts
from instantstart_sandbox.runner import GC_THRESHOLDS
from tests import secret_scan
from tests.secret_scan import pytest_runtest_logreport, pytest_terminal_summary

__all__ = ["pytest_runtest_logreport", "pytest_terminal_summary"]

ROOT = Path(__file__).resolve().parents[1]
# Every suite runs what `sam build` ships: the core layer's packages come from the host build (make build-host) ahead
# of the development environment's, so a package missing from the lock or a stale copy fails here, not on Lambda.
BUILD = artifacts.build_dir(ROOT / "template.yaml")
artifacts.check_layer(BUILD, artifacts.CORE_LAYER, ROOT / "layers" / "core")
artifacts.activate([artifacts.layer_dir(BUILD, artifacts.CORE_LAYER)])

# Every suite's process allocates as the sandbox does (moto, botocore, pydantic), most of them without starting one:
# collect as it does (unit tests: 8.8 of 67.6 CPU-seconds in the collector with Python's defaults, 1.6 with these).
gc.set_threshold(*GC_THRESHOLDS)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Scan what the session answered for secrets (:func:`tests.secret_scan.pytest_sessionfinish`), then freeze the
    heap: the tests and their fixtures are done and the process is about to exit, so neither pytest's last collections
    nor the interpreter's exit need to walk and free it (an integration worker: about 8 of 40 CPU-seconds)."""
    secret_scan.pytest_sessionfinish(session, exitstatus)
    gc.freeze()


class _LoggerDict(dict):  # type: ignore[type-arg]
    """``logging``'s registry of loggers, whose ``values()`` is a snapshot (``list(...)`` of a dict runs in C, so no
    other thread adds a logger half-way). pytest's log capture walks ``loggerDict.values()`` in Python as each test
    phase starts (``catching_logs.__enter__``), while the sandbox's threads create loggers as they import modules
    lazily (a function's first invocation, moto's backends): the walk failed one test with "dictionary changed size
    during iteration" in a fresh clone's run."""

    def values(self) -> Any:
        return list(super().values())


logging.Logger.manager.loggerDict = _LoggerDict(logging.Logger.manager.loggerDict)


TIME_SCALE = float(os.environ.get("INSTANTSTART_TEST_TIME_SCALE", "480"))


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Any]:
    """The running sandbox (emulated AWS + Kubernetes, template deployed, HTTP API up)."""
    from instantstart_sandbox.runner import Sandbox

    # The reconciliation schedule fires only when a test fires it (sandbox.schedules.fire): at the suite's 480x its
    # rate(10 minutes) would sweep every module's clusters each 1.25 s of wall time, behind every other test's back.
    sb = Sandbox(time_scale=TIME_SCALE, scheduled_firing=False).start()
    os.environ.update(sb.client_environment())
    yield sb
    report = sb.audit_iam()
    sb.stop()
    assert gc.get_freeze_count() == 0, "Sandbox.stop gives the heap it froze back to the collector"
    with open(sb.engine_log_path, errors="replace") as log:
        secret_scan.scan(log.read(), "the sandbox's engine log")
    print(f"\n{report.summary()}")
    assert report.ok, report.summary()
    hits = list(secret_scan.RESULT.hits)
    assert not hits, f"secrets in API answers, tool results or logs: {hits}"


@pytest.fixture(scope="session")
def api(sandbox: Any) -> Any:
    """A SigV4-signing client of the sandbox API (``instantstart_client.api.InstantStartClient``)."""
    from instantstart_client.api import InstantStartClient

    client = InstantStartClient(sandbox.api_url, region=sandbox.region)
    client._http.event_hooks["response"].append(secret_scan.scan_response)
    return client


@pytest.fixture
def wait_for() -> Callable[..., dict[str, Any]]:
    """Poll ``GET /clusters/{tag}`` until ``predicate(cluster)`` holds (bounded: 240 s wall)."""

    def _wait(api: Any, tag: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 240) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        cluster: dict[str, Any] = {}
        while time.monotonic() < deadline:
            cluster = dict(api.get_cluster(tag))
            if predicate(cluster):
                return cluster
            time.sleep(0.5)
        raise AssertionError(
            f"cluster {tag} did not reach the expected state; last: {cluster.get('status')} "
            f"{[(s['name'], s['status']) for s in cluster.get('stages', [])]}"
        )

    return _wait


SLOWEST_FIRST = (
    "tests/integration/test_sandbox_cli.py",
    "tests/integration/test_failure_and_retry.py",
    "tests/integration/test_process_runtime.py",
    "tests/integration/test_instance_group_subnets.py",
    "tests/integration/test_real_account_faults.py",
    "tests/integration/test_training_jobs.py",
    "tests/integration/test_load_races.py",
    "tests/integration/test_inference_deployments.py",
    "tests/integration/test_mlflow.py",
    "tests/integration/test_inference_endpoints.py",
    "tests/integration/test_features_storage.py",
    "tests/integration/test_api_inputs.py",
    "tests/mcp/test_mcp_tools.py",
    "tests/integration/test_day2_lock_and_teardown.py",
    "tests/integration/test_features.py",
    "tests/integration/test_cancel_operation.py",
    "tests/integration/test_nodes_and_hyperpod_operations.py",
)
"""Modules with the longest wall time (several clusters, one after another), longest first, as measured in one run
of the suite over three workers at 480x beside the other lanes of ``make test`` (205 s for the first, 32 s for the
last; the others take 1-31 s). The run
keeps this order only with pytest-xdist's ``--no-loadscope-reorder`` (``make test`` and ``make integration`` pass
it): by default xdist reorders modules by their number of tests."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the slowest sandbox modules first: pytest-xdist hands whole modules to its workers in collection
    order (``--dist loadfile``), so a slow module collected last would run alone at the end of the suite.
    Only the order changes; every test runs."""
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
