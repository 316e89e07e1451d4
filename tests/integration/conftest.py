"""One offline sandbox per test session; tests drive it over HTTP like a user."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from client.api import InstantStartClient
from sandbox.runner import Sandbox

TIME_SCALE = float(os.environ.get("INSTANTSTART_TEST_TIME_SCALE", "120"))
GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """The running sandbox (emulated AWS + Kubernetes, template deployed, HTTP API up)."""
    sb = Sandbox(time_scale=TIME_SCALE).start()
    os.environ.update(sb.client_environment())
    yield sb
    sb.stop()


@pytest.fixture(scope="session")
def api(sandbox: Sandbox) -> InstantStartClient:
    """A SigV4-signing client of the sandbox API."""
    return InstantStartClient(sandbox.api_url, region=sandbox.region)


@pytest.fixture
def wait_for() -> Callable[..., dict[str, Any]]:
    """Poll ``GET /clusters/{tag}`` until ``predicate(cluster)`` holds (bounded: 240 s wall)."""

    def _wait(api: InstantStartClient, tag: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 240):
        deadline = time.monotonic() + timeout
        cluster: dict[str, Any] = {}
        while time.monotonic() < deadline:
            cluster = dict(api.get_cluster(tag))
            if predicate(cluster):
                return cluster
            time.sleep(0.5)
        raise AssertionError(f"cluster {tag} did not reach the expected state; last: {cluster.get('status')} "
                             f"{[(s['name'], s['status']) for s in cluster.get('stages', [])]}")

    return _wait


def terminal(cluster: dict[str, Any]) -> bool:
    """READY or FAILED."""
    return cluster["status"] in ("READY", "FAILED")
