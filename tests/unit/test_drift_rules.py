"""The comparison rules of drift detection (``clusters/drift_rules.py``): records against what AWS reported."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from instantstart.clusters.drift_rules import Expected, ExpectedGroup, Observed, bounded, compare, merge
from instantstart.models.drift import MAX_DRIFT_ITEMS, DriftItem

T0 = "2026-12-01T10:00:00Z"
T1 = "2026-12-01T10:10:00Z"
TAGS = {"instantstart:cluster-tag": "demo", "instantstart:managed": "true"}

EXPECTED = Expected(
    tag="demo",
    eks_cluster_name="eks-cluster-demo",
    eks_owned=True,
    kubernetes_version="1.32",
    addons=("cert-manager", "metrics-server"),
    foreign_addons=(),
    repairable_addons=frozenset({"cert-manager", "metrics-server"}),
    hyperpod_name="hp-cluster-demo",
    hyperpod_owned=True,
    hyperpod_in_service=True,
    groups=(ExpectedGroup("accel", "ml.g6.4xlarge", 2),),
    roles=("instantstart-demo-s3-csi",),
    bucket="instantstart-demo-123456789012-us-west-2",
    claim=("default", "s3-claim"),
)


def _addon(status: str = "ACTIVE", tags: dict[str, str] | None = None, issues: Any = ()) -> dict[str, Any]:
    return {"status": status, "tags": TAGS if tags is None else tags, "health": {"issues": list(issues)}}


def _observed(**changes: Any) -> Observed:
    base = Observed(
        eks={"name": "eks-cluster-demo", "version": "1.32", "status": "ACTIVE"},
        addons={"cert-manager": _addon(), "metrics-server": _addon()},
        hyperpod={
            "ClusterStatus": "InService",
            "InstanceGroups": [
                {"InstanceGroupName": "accel", "InstanceType": "ml.g6.4xlarge", "TargetCount": 2, "CurrentCount": 2}
            ],
        },
        roles={
            "instantstart-demo-s3-csi": {
                "RoleName": "instantstart-demo-s3-csi",
                "Tags": [{"Key": k, "Value": v} for k, v in TAGS.items()],
            }
        },
        bucket_tags=[{"Key": k, "Value": v} for k, v in TAGS.items()],
        claim={"metadata": {"name": "s3-claim"}, "status": {"phase": "Bound"}},
    )
    return replace(base, **changes)


def _keys(items: list[DriftItem]) -> set[tuple[str, str, str]]:
    return {i.key for i in items}


def test_given_aws_as_recorded_then_no_drift() -> None:
    assert compare(EXPECTED, _observed(), T0) == []


def test_given_an_owned_addon_deleted_then_a_repairable_item() -> None:
    items = compare(EXPECTED, _observed(addons={"cert-manager": _addon(), "metrics-server": None}), T0)
    assert [(i.key, i.owned, i.repairable, i.observed, i.since) for i in items] == [
        (("Addon", "metrics-server", "exists"), True, True, None, T0)
    ]


def test_given_an_addon_recreated_without_ownership_tags_then_foreign_and_not_repairable() -> None:
    items = compare(EXPECTED, _observed(addons={"cert-manager": _addon(), "metrics-server": _addon(tags={})}), T0)
    assert [(i.key, i.owned, i.repairable) for i in items] == [(("Addon", "metrics-server", "tags"), False, False)]


def test_given_an_unhealthy_owned_addon_then_its_health_verbatim_not_repairable() -> None:
    degraded = _addon("DEGRADED", issues=[{"code": "ConfigurationConflict", "message": "conflicts found"}])
    items = compare(EXPECTED, _observed(addons={"cert-manager": _addon(), "metrics-server": degraded}), T0)
    assert len(items) == 1 and items[0].key == ("Addon", "metrics-server", "health")
    assert items[0].observed == "DEGRADED" and "ConfigurationConflict: conflicts found" in items[0].message
    assert not items[0].repairable


def test_given_a_feature_addon_with_ownership_tags_unhealthy_then_reported() -> None:
    addons = {
        "cert-manager": _addon(),
        "metrics-server": _addon(),
        "amazon-cloudwatch-observability": _addon("DEGRADED"),
    }
    items = compare(EXPECTED, _observed(addons=addons), T0)
    assert _keys(items) == {("Addon", "amazon-cloudwatch-observability", "health")}
    # someone else's add-on is none of the control plane's business
    foreign = {"cert-manager": _addon(), "metrics-server": _addon(), "coredns": _addon("DEGRADED", tags={})}
    assert compare(EXPECTED, _observed(addons=foreign), T0) == []


def test_given_an_addon_found_at_import_deleted_then_foreign() -> None:
    exp = replace(EXPECTED, foreign_addons=("eks-pod-identity-agent",))
    items = compare(exp, _observed(addons={"cert-manager": _addon(), "metrics-server": _addon()}), T0)
    assert [(i.key, i.owned, i.repairable) for i in items] == [
        (("Addon", "eks-pod-identity-agent", "exists"), False, False)
    ]


def test_given_the_eks_version_upgraded_elsewhere_then_reported() -> None:
    items = compare(EXPECTED, _observed(eks={"version": "1.33"}), T0)
    assert [(i.key, i.expected, i.observed, i.repairable) for i in items] == [
        (("EksCluster", "eks-cluster-demo", "version"), "1.32", "1.33", False)
    ]


def test_given_the_eks_cluster_gone_then_one_item_not_one_per_addon() -> None:
    items = compare(EXPECTED, _observed(eks=None, addons={}), T0)
    assert _keys(items) == {("EksCluster", "eks-cluster-demo", "exists")}


def test_given_the_hyperpod_cluster_deleted_then_one_item_not_one_per_group() -> None:
    items = compare(EXPECTED, _observed(hyperpod=None), T0)
    assert [(i.key, i.owned, i.repairable) for i in items] == [
        (("HyperPodCluster", "hp-cluster-demo", "exists"), True, False)
    ]


def test_given_hyperpod_not_in_service_then_drift_only_while_the_records_say_ready() -> None:
    hp = {"ClusterStatus": "Failed", "InstanceGroups": _observed().hyperpod["InstanceGroups"]}  # type: ignore[index]
    assert _keys(compare(EXPECTED, _observed(hyperpod=hp), T0)) == {("HyperPodCluster", "hp-cluster-demo", "status")}
    assert compare(replace(EXPECTED, hyperpod_in_service=False), _observed(hyperpod=hp), T0) == []


def test_given_a_group_scaled_or_retyped_outside_then_each_field_reported() -> None:
    group = {"InstanceGroupName": "accel", "InstanceType": "ml.g6.8xlarge", "TargetCount": 3}
    items = compare(EXPECTED, _observed(hyperpod={"ClusterStatus": "InService", "InstanceGroups": [group]}), T0)
    by_field = {i.field: (i.expected, i.observed) for i in items}
    assert by_field == {"TargetCount": ("2", "3"), "InstanceType": ("ml.g6.4xlarge", "ml.g6.8xlarge")}
    assert {i.name for i in items} == {"hp-cluster-demo/accel"}


def test_given_an_autoscaled_group_then_its_count_is_karpenters() -> None:
    exp = replace(EXPECTED, groups=(ExpectedGroup("accel", "ml.g6.4xlarge", 0, autoscaled=True),))
    assert compare(exp, _observed(), T0) == []


def test_given_a_group_deleted_and_another_added_outside_then_both_reported() -> None:
    hp = {"ClusterStatus": "InService", "InstanceGroups": [{"InstanceGroupName": "extra", "TargetCount": 1}]}
    items = compare(EXPECTED, _observed(hyperpod=hp), T0)
    assert {(i.name, i.field, i.owned) for i in items} == {
        ("hp-cluster-demo/accel", "exists", True),
        ("hp-cluster-demo/extra", "exists", False),
    }


def test_given_the_role_and_bucket_deleted_or_untagged_then_reported() -> None:
    gone = compare(EXPECTED, _observed(roles={"instantstart-demo-s3-csi": None}, bucket_tags=None), T0)
    assert _keys(gone) == {
        ("IamRole", "instantstart-demo-s3-csi", "exists"),
        ("S3Bucket", "instantstart-demo-123456789012-us-west-2", "exists"),
    }
    untagged = compare(EXPECTED, _observed(roles={"instantstart-demo-s3-csi": {"Tags": []}}, bucket_tags=[]), T0)
    assert {(i.field, i.owned) for i in untagged} == {("tags", False)}
    assert len(untagged) == 2


def test_given_the_same_item_at_the_next_check_then_its_since_is_kept_and_it_is_not_new() -> None:
    first = compare(EXPECTED, _observed(addons={"cert-manager": None, "metrics-server": _addon()}), T0)
    again = compare(EXPECTED, _observed(addons={"cert-manager": None, "metrics-server": None}), T1)
    items, new = merge(first, again)
    assert {i.name: i.since for i in items} == {"cert-manager": T0, "metrics-server": T1}
    assert [i.name for i in new] == ["metrics-server"]
    cleared, none_new = merge(items, [])
    assert cleared == [] and none_new == []


def test_given_a_new_observed_value_then_the_item_is_new_again() -> None:
    def scaled(n: int) -> Observed:
        group = {"InstanceGroupName": "accel", "InstanceType": "ml.g6.4xlarge", "TargetCount": n}
        return _observed(hyperpod={"ClusterStatus": "InService", "InstanceGroups": [group]})

    items, _ = merge([], compare(EXPECTED, scaled(3), T0))
    later, new = merge(items, compare(EXPECTED, scaled(4), T1))
    assert [(i.observed, i.since) for i in later] == [("4", T1)] and len(new) == 1


def test_the_stored_list_is_bounded_repairable_first() -> None:
    many = [
        DriftItem(
            resource_type="InstanceGroup",
            name=f"g{i}",
            field="exists",
            since=T0,
            owned=True,
            repairable=False,
            message="m",
        )
        for i in range(MAX_DRIFT_ITEMS + 5)
    ]
    fixable = DriftItem(
        resource_type="Addon", name="a", field="exists", since=T0, owned=True, repairable=True, message="m"
    )
    stored, more = bounded([*many, fixable])
    assert len(stored) == MAX_DRIFT_ITEMS and more == 6 and stored[0] is fixable


def test_given_the_s3_claim_deleted_or_not_bound_then_reported_and_unread_kubernetes_compares_nothing() -> None:
    gone = compare(EXPECTED, _observed(claim=None), T0)
    assert [(i.key, i.owned, i.repairable) for i in gone] == [
        (("PersistentVolumeClaim", "default/s3-claim", "exists"), True, False)
    ]
    pending = compare(EXPECTED, _observed(claim={"status": {"phase": "Pending"}}), T0)
    assert [(i.field, i.observed) for i in pending] == [("phase", "Pending")]
    assert compare(EXPECTED, _observed(claim=None, kubernetes_error="Kubernetes answered 403 Forbidden"), T0) == []
