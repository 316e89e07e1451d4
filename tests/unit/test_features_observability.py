"""Rules of the observability feature: which parts a request turns on, when AWS already matches it, the
workspace the HyperPod add-on must name, and the request's validation."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from instantstart.features import amp
from instantstart.features.catalog import FEATURES, PolicyContext, all_roles, wanted_addons
from instantstart.features.observe import AddonObservation, AssociationObservation
from instantstart.features.plan import in_place
from instantstart.models.features import ObservabilityRequest, UpdateFeaturesRequest
from tests.unit.test_features_rules import TAG, observation

SPEC = FEATURES["observability"]
HYPERPOD = "amazon-sagemaker-hyperpod-observability"
CLOUDWATCH = "amazon-cloudwatch-observability"
WS = amp.WorkspaceObservation(
    "ws-1", "arn:aws:aps:us-west-2:123456789012:workspace/ws-1", "ACTIVE", "https://aps/workspaces/ws-1/"
)


def owned(name: str, configuration: str | None = None) -> AddonObservation:
    return AddonObservation(
        name, "ACTIVE", "v1.0.1-eksbuild.1", f"arn:{name}", True, frozenset({"observability"}), (), configuration
    )


def request(**body: object) -> ObservabilityRequest:
    return ObservabilityRequest.model_validate(body)


def with_parts(hyperpod: bool, cloudwatch: bool, *, configured: bool = True, workspace: bool = True) -> object:
    """The cluster with the chosen parts fully installed (roles, associations, the workspace)."""
    addons = {"eks_pod_identity_agent": AddonObservation("eks-pod-identity-agent", "ACTIVE", managed=False)}
    if hyperpod:
        addons["amazon_sagemaker_hyperpod_observability"] = owned(
            HYPERPOD, amp.configuration_values(WS) if configured else None
        )
    if cloudwatch:
        addons["amazon_cloudwatch_observability"] = owned(CLOUDWATCH)
    obs = observation(**addons)
    fo = obs.features["observability"]
    for role in all_roles(SPEC):
        if cloudwatch if role.service_account == "cloudwatch-agent" else hyperpod:
            fo.roles[f"instantstart-{TAG}-{role.suffix}"] = f"arn:aws:iam::1:role/{role.suffix}"
            fo.associations[(role.namespace, role.service_account)] = [
                AssociationObservation(role.namespace, role.service_account, f"a-{role.suffix}", "arn:owner")
            ]
    if hyperpod and workspace:
        fo.prometheus_workspaces = [WS]
    return obs


def test_given_only_enabled_then_hyperpod_observability_is_on_and_cloudwatch_is_off() -> None:
    assert wanted_addons(SPEC, request(enabled=True)) == {HYPERPOD}
    assert wanted_addons(SPEC, request(enabled=True, cloudWatch=True)) == {HYPERPOD, CLOUDWATCH}
    assert wanted_addons(SPEC, request(enabled=True, hyperPodObservability=False, cloudWatch=True)) == {CLOUDWATCH}
    assert wanted_addons(SPEC, request(enabled=False, cloudWatch=True)) == frozenset()


def test_given_both_parts_installed_and_the_workspace_named_then_the_same_request_is_in_place() -> None:
    obs = with_parts(True, True)

    assert in_place(SPEC, request(enabled=True, cloudWatch=True), obs)
    assert not in_place(SPEC, request(enabled=True), obs)  # cloudWatch must go
    assert not in_place(SPEC, request(enabled=False), obs)


def test_given_the_addon_not_naming_the_workspace_or_no_workspace_then_on_is_a_change() -> None:
    assert not in_place(SPEC, request(enabled=True), with_parts(True, False, configured=False))
    assert not in_place(SPEC, request(enabled=True), with_parts(True, False, workspace=False))
    assert in_place(SPEC, request(enabled=True), with_parts(True, False))


def test_given_a_leftover_workspace_then_off_is_a_change() -> None:
    obs = with_parts(False, False)
    obs.features["observability"].prometheus_workspaces = [WS]  # type: ignore[attr-defined]

    assert not in_place(SPEC, request(enabled=False), obs)  # type: ignore[arg-type]
    assert in_place(SPEC, request(enabled=False), with_parts(False, False))  # type: ignore[arg-type]


def test_given_the_workspace_then_the_collector_may_remote_write_to_it_only() -> None:
    ctx = PolicyContext("aws", "us-west-2", "123456789012", TAG, "b", "t", "eks-cluster-demo", WS.arn)
    [collector] = SPEC.roles
    [cloudwatch] = SPEC.companions[0].roles

    statements = collector.policy(ctx)["Statement"]
    logs = [s for s in cloudwatch.policy(ctx)["Statement"] if "logs:PutLogEvents" in s["Action"]]

    assert next(s for s in statements if s["Action"] == ["aps:RemoteWrite"])["Resource"] == WS.arn
    assert all(
        "/aws/containerinsights/eks-cluster-demo/" in r or "application-signals" in r for r in logs[0]["Resource"]
    )


def test_given_a_configuration_then_references_checks_the_arn_and_endpoint() -> None:
    assert amp.references(amp.configuration_values(WS), WS)
    other = amp.WorkspaceObservation("ws-2", "arn:ws-2", "ACTIVE", "https://aps/workspaces/ws-2/")
    assert not amp.references(amp.configuration_values(other), WS)
    assert not amp.references(None, WS) and not amp.references("not json", WS)
    assert json.loads(amp.configuration_values(WS)) == {
        "ampWorkspace": {"prometheusEndpoint": WS.prometheus_endpoint, "arn": WS.arn}
    }


def test_given_an_unknown_part_or_no_part_then_validation_names_it() -> None:
    with pytest.raises(ValidationError) as err:
        UpdateFeaturesRequest.model_validate({"observability": {"enabled": True, "grafana": True}})
    assert err.value.errors()[0]["loc"] == ("observability", "grafana")
    with pytest.raises(ValidationError, match="hyperPodObservability or cloudWatch"):
        UpdateFeaturesRequest.model_validate(
            {"observability": {"enabled": True, "hyperPodObservability": False, "cloudWatch": False}}
        )
    with pytest.raises(ValidationError):
        UpdateFeaturesRequest.model_validate({"observability": {"enabled": True, "cloudWatch": "yes"}})
