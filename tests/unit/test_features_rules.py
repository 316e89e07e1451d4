"""Rules of managed features: who needs an add-on, the diff of a PATCH, and what "off" releases."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from instantstart.clusters.addons import pod_identity_trust
from instantstart.features import service
from instantstart.features.catalog import FEATURES, addons_of, all_roles, feature_role_name, tls_bucket_name
from instantstart.features.observe import AddonObservation, ClusterObservation, FeatureObservation, needed_by
from instantstart.features.plan import plan
from instantstart.models.features import UpdateFeaturesRequest
from instantstart.naming import storage_bucket_name

TAG = "demo"
OWNED = {"instantstart:cluster-tag": TAG, "instantstart:managed": "true"}
ARN = "arn:aws:eks:us-west-2:123456789012:addon/eks-cluster-demo/{}/1"


def observation(**addons: AddonObservation) -> ClusterObservation:
    """A cluster where only ``addons`` exist (by name) and no feature role, association or bucket."""
    names = {a for s in FEATURES.values() for a in addons_of(s)}
    features = {}
    for key, spec in FEATURES.items():
        fo = FeatureObservation(key)
        for role in all_roles(spec):
            fo.roles[feature_role_name(TAG, role)] = None
            fo.associations[(role.namespace, role.service_account)] = []
        features[key] = fo
    return ClusterObservation(
        tag=TAG,
        eks_cluster_name=f"eks-cluster-{TAG}",
        kubernetes_version="1.32",
        addons={n: addons.get(n.replace("-", "_"), AddonObservation(n)) for n in names},
        features=features,
        tiered_storage=None,
        hyperpod_status="InService",
    )


def active(name: str, *, needers: frozenset[str] = frozenset({"create"}), managed: bool = True) -> AddonObservation:
    return AddonObservation(
        name, "ACTIVE", "v1.0.0-eksbuild.1", ARN.format(name), managed, needers if managed else frozenset()
    )


def test_given_tags_then_needed_by_reads_the_tag_else_create_for_owned_else_nobody() -> None:
    assert needed_by({**OWNED, "instantstart:needed-by": "create trainingOperator"}, TAG) == {
        "create",
        "trainingOperator",
    }
    assert needed_by(OWNED, TAG) == {"create"}
    assert needed_by({}, TAG) == frozenset()
    assert needed_by({**OWNED, "instantstart:cluster-tag": "other"}, TAG) == frozenset()


def test_given_an_empty_patch_then_the_plan_is_empty() -> None:
    assert plan(UpdateFeaturesRequest(), observation()) == ([], [])


def test_given_features_already_off_then_off_is_unchanged_and_on_is_a_change() -> None:
    request = UpdateFeaturesRequest.model_validate(
        {"trainingOperator": {"enabled": False}, "taskGovernance": {"enabled": True}}
    )

    assert plan(request, observation()) == (["taskGovernance"], ["trainingOperator"])


def test_given_an_operator_installed_outside_instantstart_then_on_is_unchanged_and_off_is_a_change() -> None:
    outside = active("amazon-sagemaker-hyperpod-taskgovernance", managed=False)
    obs = observation(amazon_sagemaker_hyperpod_taskgovernance=outside)

    on = plan(UpdateFeaturesRequest.model_validate({"taskGovernance": {"enabled": True}}), obs)
    pinned = plan(UpdateFeaturesRequest.model_validate({"taskGovernance": {"enabled": True, "version": "v2"}}), obs)

    assert on == ([], ["taskGovernance"])
    assert pinned == (["taskGovernance"], [])


def test_given_a_feature_still_listed_on_a_shared_addon_then_off_is_not_in_place() -> None:
    cert = active("cert-manager", needers=frozenset({"create", "trainingOperator"}))
    request = UpdateFeaturesRequest.model_validate({"trainingOperator": {"enabled": False}})

    assert plan(request, observation(cert_manager=cert)) == (["trainingOperator"], [])


def test_given_tiered_storage_enabled_at_another_percentage_then_it_is_a_change() -> None:
    obs = observation(eks_pod_identity_agent=active("eks-pod-identity-agent"))
    obs.tiered_storage = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 10}
    fo = obs.features["tieredCheckpointing"]
    for name in fo.roles:
        fo.roles[name] = "arn:aws:iam::123456789012:role/instantstart/x"
    for key in fo.associations:
        fo.associations[key] = [object()]  # type: ignore[list-item]

    same = UpdateFeaturesRequest.model_validate(
        {"tieredCheckpointing": {"enabled": True, "instanceMemoryAllocationPercentage": 10}}
    )
    other = UpdateFeaturesRequest.model_validate(
        {"tieredCheckpointing": {"enabled": True, "instanceMemoryAllocationPercentage": 20}}
    )

    assert plan(same, obs) == ([], ["tieredCheckpointing"])
    assert plan(other, obs) == (["tieredCheckpointing"], [])


@pytest.mark.parametrize("bad", [101, -1])
def test_given_a_percentage_out_of_range_then_the_request_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match=r"instanceMemoryAllocationPercentage|instance_memory_allocation_percentage"):
        UpdateFeaturesRequest.model_validate(
            {"tieredCheckpointing": {"enabled": True, "instanceMemoryAllocationPercentage": bad}}
        )


def test_given_an_unknown_feature_then_the_request_is_refused() -> None:
    with pytest.raises(ValueError, match="kubeFlow"):
        UpdateFeaturesRequest.model_validate({"kubeFlow": {"enabled": True}})


class _Rt:
    """The two things ``_release`` uses of a Runtime: an EKS client (stubbed) and nothing else."""

    def __init__(self, eks: Any) -> None:
        self._eks = eks

    def client(self, name: str) -> Any:
        assert name == "eks"
        return self._eks


def _release(addon: AddonObservation, key: str) -> tuple[list[str], Stubber, Any]:
    eks = boto3.client("eks", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(eks)
    return [], stub, service._Ctx(_Rt(eks), TAG, observation())  # type: ignore[arg-type]


def test_given_a_shared_addon_when_one_needer_leaves_then_only_its_name_is_removed_from_the_tag() -> None:
    cert = active("cert-manager", needers=frozenset({"create", "inferenceOperator", "trainingOperator"}))
    actions, stub, ctx = _release(cert, "trainingOperator")
    stub.add_response(
        "tag_resource", {}, {"resourceArn": cert.arn, "tags": {"instantstart:needed-by": "create inferenceOperator"}}
    )

    with stub:
        service._release(ctx, cert, "trainingOperator", actions)

    stub.assert_no_pending_responses()
    assert actions == ["TagResource cert-manager instantstart:needed-by -trainingOperator"]


def test_given_an_addon_only_this_feature_needs_when_it_leaves_then_the_addon_is_deleted() -> None:
    cert = active("cert-manager", needers=frozenset({"trainingOperator"}))
    actions, stub, ctx = _release(cert, "trainingOperator")
    stub.add_response("delete_addon", {}, {"clusterName": "eks-cluster-demo", "addonName": "cert-manager"})

    with stub:
        service._release(ctx, cert, "trainingOperator", actions)

    stub.assert_no_pending_responses()
    assert actions == ["DeleteAddon cert-manager"]


@pytest.mark.parametrize(
    "addon",
    [
        active("cert-manager", managed=False),  # installed before: never touched
        active("cert-manager", needers=frozenset({"create"})),  # the create workflow's, not this feature's
    ],
)
def test_given_an_addon_this_feature_does_not_hold_when_it_leaves_then_nothing_is_written(
    addon: AddonObservation,
) -> None:
    actions, stub, ctx = _release(addon, "trainingOperator")

    with stub:  # any call would fail: no response is queued
        service._release(ctx, addon, "trainingOperator", actions)

    assert actions == []


def test_given_a_role_then_it_trusts_only_its_cluster_namespace_and_service_account() -> None:
    trust = pod_identity_trust(
        "123456789012", cluster_name="eks-cluster-demo", namespace="aws-hyperpod", service_account="sa"
    )
    (statement,) = trust["Statement"]

    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Condition"]["StringEquals"] == {
        "aws:SourceAccount": "123456789012",
        "aws:RequestTag/eks-cluster-name": "eks-cluster-demo",
        "aws:RequestTag/kubernetes-namespace": "aws-hyperpod",
        "aws:RequestTag/kubernetes-service-account": "sa",
    }


@pytest.mark.parametrize("region", ["us-west-2", "ap-southeast-1"])
def test_given_any_tag_then_the_tls_bucket_is_a_valid_name_distinct_from_storage(region: str) -> None:
    tag = "a" * 24
    name = tls_bucket_name(tag, "123456789012", region)

    assert len(name) <= 63 and name.endswith("-tls")
    assert name != storage_bucket_name(tag, "123456789012", region)
    assert all(len(feature_role_name(tag, r)) <= 64 for s in FEATURES.values() for r in s.roles)


class _GovernanceRt:
    """An EKS client (stubbed) and a SageMaker client that must not be called (release_owned is replaced)."""

    def __init__(self, eks: Any) -> None:
        self._eks = eks

    def client(self, name: str) -> Any:
        assert name in ("eks", "sagemaker"), name
        return self._eks if name == "eks" else object()


@pytest.mark.parametrize("left", [["demo-research (Deleting)"], []])
def test_given_our_task_governance_resources_when_the_feature_is_turned_off_then_they_go_before_the_addon(
    left: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    addon = active("amazon-sagemaker-hyperpod-taskgovernance", needers=frozenset({"taskGovernance"}))
    obs = observation(amazon_sagemaker_hyperpod_taskgovernance=addon)
    obs.hyperpod_cluster_arn = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abc"
    released: list[tuple[str, str]] = []

    def release_owned(sm: Any, cluster_arn: str, tag: str) -> list[str]:
        released.append((cluster_arn, tag))
        return left

    monkeypatch.setattr(service.task_governance, "release_owned", release_owned)
    eks = boto3.client("eks", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(eks)
    if not left:
        stub.add_response("delete_addon", {}, {"clusterName": "eks-cluster-demo", "addonName": addon.name})
    ctx = service._Ctx(_GovernanceRt(eks), TAG, obs)  # type: ignore[arg-type]
    actions: list[str] = []

    with stub:  # while quotas are left no EKS call is queued: DeleteAddon would fail the test
        done = service._converge_off(ctx, FEATURES["taskGovernance"], actions)

    stub.assert_no_pending_responses()
    assert released == [(obs.hyperpod_cluster_arn, TAG)]
    assert done is False
    if left:
        assert actions == ["release task governance demo-research (Deleting)"]
    else:
        assert actions == [f"DeleteAddon {addon.name}"]
