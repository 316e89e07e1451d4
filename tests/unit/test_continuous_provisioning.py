"""Rules of the create under continuous provisioning: add-on health, the cluster status after a failure, skips."""

from __future__ import annotations

import pytest

from instantstart.clusters.addons import ADDONS, AddonHealth
from instantstart.clusters.records import INSUFFICIENT_CAPACITY, cluster_status_after
from instantstart.clusters.stages.verify import healthy_nodes
from instantstart.models.cluster import NodeView, StageError
from instantstart.models.common import ClusterStatus, StageName

pytestmark = pytest.mark.usefixtures("no_network")

NO_REPLICAS = (
    "InsufficientNumberOfReplicas",
    "The add-on is unhealthy because it doesn't have the desired number of replicas.",
)


def test_given_a_deployment_add_on_without_nodes_then_it_waits_for_nodes_and_has_not_failed() -> None:
    health = AddonHealth("metrics-server", "DEGRADED", (NO_REPLICAS,))

    assert health.waiting_for_nodes and not health.failed and not health.active


def test_given_a_degraded_add_on_for_another_reason_then_it_failed_with_its_issue_verbatim() -> None:
    issue = (
        "ConfigurationConflict",
        "Conflicts found when trying to apply. Will not continue due to resolve conflicts mode.",
    )
    health = AddonHealth("cert-manager", "DEGRADED", (NO_REPLICAS, issue))

    error = health.error()

    assert health.failed and not health.waiting_for_nodes
    assert error.code == "InsufficientNumberOfReplicas" and issue[1] in error.message


@pytest.mark.parametrize("status", ["CREATE_FAILED", "UPDATE_FAILED"])
def test_given_a_failed_add_on_then_it_failed(status: str) -> None:
    assert AddonHealth("cert-manager", status).failed


def test_given_the_add_ons_then_only_the_daemonset_one_gates_hyperpod() -> None:
    assert [a.name for a in ADDONS if not a.needs_nodes] == ["eks-pod-identity-agent"]


def test_given_verify_short_of_capacity_when_it_fails_then_the_cluster_is_degraded_not_failed() -> None:
    shortage = StageError(code=INSUFFICIENT_CAPACITY, message="We currently do not have sufficient capacity")

    assert cluster_status_after(StageName.VERIFY, shortage) is ClusterStatus.DEGRADED
    assert cluster_status_after(StageName.HYPERPOD, shortage) is ClusterStatus.FAILED
    assert cluster_status_after(StageName.VERIFY, StageError(code="PollTimeout", message="")) is ClusterStatus.FAILED


def node(name: str, group: str, *, ready: bool = True, health: str = "Schedulable") -> NodeView:
    return NodeView(node_name=name, instance_group_name=group, ready=ready, health_status=health)


def test_given_ready_nodes_ahead_of_hyperpods_current_count_then_only_current_count_of_them_are_up() -> None:
    nodes = [node("hyperpod-i-1", "workers"), node("hyperpod-i-2", "workers"), node("hyperpod-i-3", "gpu")]

    up = healthy_nodes(nodes, {"workers": 1, "gpu": 1})

    assert up == {"workers": 1, "gpu": 1}


def test_given_unready_or_unschedulable_nodes_then_they_are_not_up_whatever_hyperpod_counts() -> None:
    nodes = [
        node("hyperpod-i-1", "workers", ready=False),
        node("hyperpod-i-2", "workers", health="UnschedulablePendingReboot"),
        node("hyperpod-i-3", "workers"),
    ]

    assert healthy_nodes(nodes, {"workers": 3}) == {"workers": 1}
