"""Helpers of the integration tests (the sandbox fixtures live in tests/conftest.py)."""

from __future__ import annotations

from typing import Any

GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}


def terminal(cluster: dict[str, Any]) -> bool:
    """READY or FAILED."""
    return cluster["status"] in ("READY", "FAILED")


def assert_only_network_ran(cluster: dict[str, Any]) -> None:
    """After the network stage failed: no stage after it began; storage, which starts beside the network,
    either had not begun or was stopped (FAILED ``StageInterrupted``)."""
    stages = {s["name"]: s for s in cluster["stages"]}
    storage = stages.pop("storage")
    stages.pop("network")
    assert all(s["status"] == "PENDING" for s in stages.values()), stages
    assert storage["status"] == "PENDING" or (
        storage["status"] == "FAILED" and storage["error"]["code"] == "StageInterrupted"
    ), storage
