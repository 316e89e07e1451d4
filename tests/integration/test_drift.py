"""Drift through the HTTP API: changes made outside the control plane (with the AWS APIs, as a console user makes
them) show in ``GET /clusters/{tag}`` (``drift``) and as a ``Cluster Drift Detected`` event on the control plane's
bus; ``POST /clusters/{tag}/reconcile`` re-creates an owned add-on deleted outside, refuses (409) what is not its
own to repair, and answers 200 without an operation when nothing differs.

One READY cluster for the module; the tests run in order, each leaving the drift the next one builds on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, drift_subscription, eventually, finished, ready_cluster, refusal

TAG = "drifty"
EKS = f"eks-cluster-{TAG}"
HP = f"hp-cluster-{TAG}"


def _client(sandbox: Sandbox, service: str) -> Any:
    return boto3.client(service, endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient) -> dict[str, Any]:
    return ready_cluster(api, TAG, [GROUP])


@pytest.fixture(scope="module")
def drift_events(sandbox: Sandbox) -> Iterator[Any]:
    """The drift events of this module's cluster received so far (their details), through a user's subscription."""
    with drift_subscription(sandbox, "drift-events") as read:
        yield lambda: read(TAG)


def _items(api: InstantStartClient) -> dict[tuple[str, str, str], dict[str, Any]]:
    drift = api.get_cluster(TAG)["drift"]
    return {(i["resourceType"], i["name"], i["field"]): i for i in drift["items"]}


def _announced(drift_events: Any, before: int, wanted: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """The new items of the drift events after the first ``before``, once they name every (type, name) of
    ``wanted`` (one check, or the scheduled sweep's checks before it, may have announced them)."""

    def new_items() -> list[dict[str, Any]]:
        return [i for e in drift_events()[before:] for i in e["newItems"]]

    items = eventually(new_items, lambda found: wanted <= {(i["resourceType"], i["name"]) for i in found}, timeout=30)
    assert wanted <= {(i["resourceType"], i["name"]) for i in items}, items
    return items


def _addon_gone(eks: Any, name: str) -> None:
    listed = eventually(lambda: eks.list_addons(clusterName=EKS)["addons"], lambda a: name not in a)
    assert name not in listed, listed


def test_given_a_cluster_as_created_when_reconciled_then_200_no_drift_no_operation(
    api: InstantStartClient, cluster: dict[str, Any]
) -> None:
    assert cluster["drift"]["items"] == [] and cluster["drift"]["moreItems"] == 0

    answer = api.reconcile_cluster(TAG, idempotency_key="drift-check-1")

    assert api.reconcile_cluster(TAG, idempotency_key="drift-check-1") == answer, "a repeat answers the same"
    assert "operationId" not in answer
    assert answer["drift"] == [] and answer["message"].startswith("no drift")
    after = api.get_cluster(TAG)
    assert after["drift"]["checkedAt"] == answer["checkedAt"] and after["drift"]["items"] == []
    assert after["currentOperationId"] == cluster["currentOperationId"], "no operation was started"


def test_given_an_owned_addon_deleted_outside_when_reconciled_then_recreated_and_the_drift_cleared(
    api: InstantStartClient, sandbox: Sandbox, cluster: dict[str, Any], drift_events: Any
) -> None:
    eks = _client(sandbox, "eks")
    before = len(drift_events())
    eks.delete_addon(clusterName=EKS, addonName="metrics-server")
    _addon_gone(eks, "metrics-server")

    op = api.reconcile_cluster(TAG)

    assert op["type"] == "RECONCILE_CLUSTER" and op["status"] in ("PENDING", "RUNNING")
    seen = _items(api)[("Addon", "metrics-server", "exists")]
    assert seen["owned"] is True and seen["repairable"] is True and seen["observed"] is None
    announced = _announced(drift_events, before, {("Addon", "metrics-server")})
    assert [i["repairable"] for i in announced if i["name"] == "metrics-server"] == [True]
    assert drift_events()[before]["repairable"] is True

    done = finished(api, op)
    assert done["status"] == "SUCCEEDED", done
    addon = eks.describe_addon(clusterName=EKS, addonName="metrics-server")["addon"]
    assert addon["status"] == "ACTIVE"
    assert addon["tags"]["instantstart:cluster-tag"] == TAG
    assert ("Addon", "metrics-server", "exists") not in _items(api)
    assert api.reconcile_cluster(TAG)["drift"] == [], "nothing differs after the repair"


def test_given_a_group_scaled_an_addon_replaced_and_the_claim_deleted_outside_then_reconcile_refuses_naming_them(
    api: InstantStartClient, sandbox: Sandbox, cluster: dict[str, Any], drift_events: Any
) -> None:
    sm, eks = _client(sandbox, "sagemaker"), _client(sandbox, "eks")
    before = len(drift_events())
    group = sm.describe_cluster(ClusterName=HP)["InstanceGroups"][0]
    sm.update_cluster(
        ClusterName=HP,
        InstanceGroups=[
            {
                "InstanceGroupName": group["InstanceGroupName"],
                "InstanceType": group["InstanceType"],
                "InstanceCount": 2,
                "LifeCycleConfig": group["LifeCycleConfig"],
                "ExecutionRole": group["ExecutionRole"],
            }
        ],
    )
    # cert-manager deleted and installed again by hand: the same name, without the control plane's tags
    eks.delete_addon(clusterName=EKS, addonName="cert-manager")
    _addon_gone(eks, "cert-manager")
    eks.create_addon(clusterName=EKS, addonName="cert-manager")
    sandbox.kube.cluster(EKS).delete("v1", "PersistentVolumeClaim", "s3-claim", "default")  # as kubectl delete pvc

    refused = refusal(lambda: api.reconcile_cluster(TAG))

    assert refused.status == 409 and refused.code == "DriftNotRepairable", refused
    named = {(d["resourceType"], d["name"], d["driftField"]): d for d in refused.details}
    assert named[("Addon", "cert-manager", "tags")]["owned"] is False
    assert named[("InstanceGroup", f"{HP}/accel", "TargetCount")]["owned"] is True
    assert named[("PersistentVolumeClaim", "default/s3-claim", "exists")]["owned"] is True
    assert "cert-manager" in refused.message and f"{HP}/accel" in refused.message
    items = _items(api)
    scaled = items[("InstanceGroup", f"{HP}/accel", "TargetCount")]
    assert (scaled["expected"], scaled["observed"], scaled["repairable"]) == ("1", "2", False)
    assert items[("Addon", "cert-manager", "tags")]["repairable"] is False
    assert eks.describe_addon(clusterName=EKS, addonName="cert-manager")["addon"].get("tags", {}) == {}, "untouched"
    _announced(drift_events, before, {("Addon", "cert-manager"), ("InstanceGroup", f"{HP}/accel")})

    again = refusal(lambda: api.reconcile_cluster(TAG))
    assert again.code == "DriftNotRepairable"
    kept = _items(api)[("InstanceGroup", f"{HP}/accel", "TargetCount")]
    assert kept["since"] == scaled["since"], "the same drift keeps the time it was first seen"


def test_given_the_hyperpod_cluster_deleted_outside_then_drift_and_an_event_name_it(
    api: InstantStartClient, sandbox: Sandbox, cluster: dict[str, Any], drift_events: Any
) -> None:
    sm = _client(sandbox, "sagemaker")
    before = len(drift_events())
    eventually(lambda: sm.describe_cluster(ClusterName=HP)["ClusterStatus"], lambda s: s == "InService")
    sm.delete_cluster(ClusterName=HP)
    names = [
        c["ClusterName"]
        for c in eventually(
            lambda: sm.list_clusters()["ClusterSummaries"], lambda found: HP not in [c["ClusterName"] for c in found]
        )
    ]
    assert HP not in names

    refused = refusal(lambda: api.reconcile_cluster(TAG))

    assert refused.status == 409 and refused.code == "DriftNotRepairable"
    assert ("HyperPodCluster", HP, "exists") in {
        (d["resourceType"], d["name"], d["driftField"]) for d in refused.details
    }
    gone = _items(api)[("HyperPodCluster", HP, "exists")]
    assert gone["owned"] is True and gone["repairable"] is False and gone["observed"] is None
    assert ("InstanceGroup", f"{HP}/accel", "TargetCount") not in _items(api), (
        "one item for the cluster, not its groups"
    )
    announced = _announced(drift_events, before, {("HyperPodCluster", HP)})
    # its nodes went with it: the add-ons whose pods ran there report their health (EKS's issue verbatim)
    assert {i["field"] for i in announced if i["resourceType"] == "Addon"} <= {"health"}
