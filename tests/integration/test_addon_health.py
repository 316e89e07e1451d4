"""Given an add-on that is unhealthy for a reason nodes do not fix, the create ends FAILED in ``verify`` with
EKS's health issue verbatim: at once for a configuration conflict, after ``addonGraceSeconds`` (10 simulated
minutes) of nodes being Ready for an add-on that still lacks replicas."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal

CONFLICT = (
    "Conflicts found when trying to apply. Will not continue due to resolve conflicts mode. "
    'Conflicts: Deployment.apps metrics-server - .spec.template.spec.containers[name="metrics-server"].image'
)
NO_REPLICAS = "The add-on is unhealthy because it doesn't have the desired number of replicas."
GRACE_SECONDS = 600
"""``addonGraceSeconds``' default (``LoopConfig``)."""


@pytest.fixture
def eks_hooks(sandbox: Sandbox) -> Iterator[Any]:
    """The sandbox's EKS emulator; add-ons degraded by the test are restored afterwards."""
    eks = sandbox.aws.extension.eks
    degraded: list[tuple[str, str]] = []
    original = eks.degrade_addon

    def degrade(cluster: str, addon: str, code: str, message: str) -> None:
        degraded.append((cluster, addon))
        original(cluster, addon, code, message)

    eks.degrade_addon = degrade
    yield eks
    eks.degrade_addon = original
    for cluster, addon in degraded:
        eks.restore_addon(cluster, addon)


def _stage(cluster: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in cluster["stages"] if s["name"] == name)


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_given_an_addon_degraded_by_a_configuration_conflict_when_verifying_then_failed_with_the_issue_verbatim(
    api: InstantStartClient, eks_hooks: Any, wait_for: Callable[..., dict[str, Any]]
) -> None:
    op = api.create_cluster("addconf", "us-west-2c", [GROUP])
    wait_for(api, "addconf", lambda c: _stage(c, "dependencies")["status"] == "SUCCEEDED")
    eks_hooks.degrade_addon("eks-cluster-addconf", "metrics-server", "ConfigurationConflict", CONFLICT)

    failed = wait_for(api, "addconf", terminal)
    assert failed["status"] == "FAILED", failed["stages"]
    verify = _stage(failed, "verify")
    assert verify["status"] == "FAILED"
    assert verify["error"]["code"] == "ConfigurationConflict"
    # every health issue EKS reports, the conflict first (nodes may not have joined yet: the replicas issue too)
    assert verify["error"]["message"].startswith(f"ConfigurationConflict: {CONFLICT}"), verify["error"]
    assert [_stage(failed, n)["status"] for n in ("network", "access", "dependencies", "hyperpod", "storage")] == [
        "SUCCEEDED"
    ] * 5
    operation = api.get_operation(op["operationId"])
    assert operation["status"] == "FAILED" and operation["error"] == verify["error"]


def test_given_an_addon_still_short_of_replicas_after_nodes_are_ready_when_the_grace_runs_out_then_failed(
    api: InstantStartClient, eks_hooks: Any, wait_for: Callable[..., dict[str, Any]]
) -> None:
    # Its pods cannot run on the nodes that joined: EKS keeps reporting the "no nodes" issue.
    eks_hooks.degrade_addon("eks-cluster-addgrace", "cert-manager", "InsufficientNumberOfReplicas", NO_REPLICAS)
    op = api.create_cluster("addgrace", "us-west-2c", [GROUP])

    waiting = wait_for(
        api, "addgrace", lambda c: terminal(c) or bool(_stage(c, "verify")["resources"].get("nodesReadyAt"))
    )
    assert waiting["status"] == "CREATING", "nodes Ready is not the end while an add-on is not ACTIVE"
    assert waiting["nodes"] and all(n["ready"] for n in waiting["nodes"])

    failed = wait_for(api, "addgrace", terminal)
    assert failed["status"] == "FAILED", failed["stages"]
    verify = _stage(failed, "verify")
    assert verify["error"] == {
        "code": "InsufficientNumberOfReplicas",
        "message": f"InsufficientNumberOfReplicas: {NO_REPLICAS}",
    }
    # Measured in (simulated) time since the nodes were Ready, not in checks: the failure comes after the grace.
    waited = (_at(verify["endedAt"]) - _at(verify["resources"]["nodesReadyAt"])).total_seconds()
    assert GRACE_SECONDS <= waited <= 2 * GRACE_SECONDS, waited
    assert api.get_operation(op["operationId"])["error"] == verify["error"]
