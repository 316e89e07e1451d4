"""Helpers of the integration tests (the sandbox fixtures live in tests/conftest.py)."""

from __future__ import annotations

from typing import Any

GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}


def terminal(cluster: dict[str, Any]) -> bool:
    """READY or FAILED."""
    return cluster["status"] in ("READY", "FAILED")
