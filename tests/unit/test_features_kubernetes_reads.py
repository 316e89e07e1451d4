"""GET /clusters/{tag}/features reads the features' Kubernetes objects through the API role's read-only access
entry: a kind it may not read, an unreachable API or one that does not answer in time is shown as unknown with
the reason (never an error), while the workflow's reads still raise."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from instantstart.features import kuberay, observe
from instantstart.features.catalog import FEATURES
from instantstart.features.plan import in_place
from instantstart.features.service import _state
from instantstart.kube import client as kube
from instantstart.models.features import KubeRayRequest
from tests.unit.test_features_rules import observation


class _Rt:
    region = "us-west-2"


def _objects(kind: str, api_version: str) -> list[dict[str, Any]]:
    """The KubeRay operator objects of one kind, as a list answer would hold them."""
    return [
        {"metadata": dict(o["metadata"])}
        for o in kuberay.operator_objects()
        if o["kind"] == kind and o["apiVersion"] == api_version
    ]


def test_given_a_kind_forbidden_to_the_api_role_then_kuberay_shows_what_it_read_and_that_kind_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def listing(dyn: Any, api_version: str, kind: str, **_: Any) -> list[dict[str, Any]]:
        if kind in ("CustomResourceDefinition", "PersistentVolume"):
            raise ApiException(status=403, reason="Forbidden")
        return _objects(kind, api_version)

    monkeypatch.setattr(kube, "connect", lambda *a, **k: object())
    monkeypatch.setattr(kube, "list_objects", listing)
    obs = observation()

    observe.read_kubernetes(_Rt(), obs.eks_cluster_name, obs.features, budget=5)

    fo = obs.features["kubeRay"]
    assert "Deployment/kuberay-system/kuberay-operator" in (fo.kubernetes or set())
    assert fo.kubernetes_unknown == {
        "CustomResourceDefinition": "Kubernetes answered 403 Forbidden (the API role's access entry does not allow it)"
    }
    assert obs.enabled(FEATURES["kubeRay"])
    assert not in_place(FEATURES["kubeRay"], KubeRayRequest(enabled=True), obs)  # not known: the workflow decides
    state = _state(FEATURES["kubeRay"], obs, None)
    assert state.enabled and "CustomResourceDefinition" in state.kubernetes_unknown
    assert "Deployment/kuberay-system/kuberay-operator" in state.kubernetes_objects
    assert not any(ref.startswith("CustomResourceDefinition/") for ref in state.kubernetes_objects)
    assert set(obs.features["fsx"].kubernetes_unknown) == {"PersistentVolume"}


def test_given_an_unreachable_kubernetes_api_then_every_kind_is_unknown_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_endpoint(*_: Any, **__: Any) -> Any:
        raise ValueError("EKS cluster eks-cluster-demo has no endpoint yet (status CREATING)")

    monkeypatch.setattr(kube, "connect", no_endpoint)
    obs = observation()

    observe.read_kubernetes(_Rt(), obs.eks_cluster_name, obs.features, budget=5)

    for key in ("kubeRay", "fsx"):
        fo = obs.features[key]
        assert fo.kubernetes == set()
        assert set(fo.kubernetes_unknown) == {kind for _, kind in observe.KUBERNETES_KINDS[key]}
        assert all("has no endpoint yet" in r for r in fo.kubernetes_unknown.values())
    assert not obs.enabled(FEATURES["kubeRay"])
    assert not in_place(FEATURES["kubeRay"], KubeRayRequest(enabled=False), obs)


def test_given_a_kubernetes_api_that_does_not_answer_then_the_read_ends_within_its_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def hang(*_: Any, **__: Any) -> Any:
        release.wait(10)
        return object()

    monkeypatch.setattr(kube, "connect", hang)
    obs = observation()
    started = time.monotonic()
    try:
        observe.read_kubernetes(_Rt(), obs.eks_cluster_name, obs.features, budget=0.3)
    finally:
        release.set()

    assert time.monotonic() - started < 2
    assert obs.features["kubeRay"].kubernetes_unknown["Deployment"] == "no answer from Kubernetes within 0.3 s"
    assert obs.features["fsx"].kubernetes == set()


def test_given_the_workflow_reads_then_a_kubernetes_error_is_raised_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*_: Any, **__: Any) -> Any:
        raise ApiException(status=403, reason="Forbidden")

    monkeypatch.setattr(kube, "connect", lambda *a, **k: object())
    monkeypatch.setattr(kube, "list_objects", forbidden)
    obs = observation()

    with pytest.raises(ApiException):
        observe.read_kubernetes(_Rt(), obs.eks_cluster_name, obs.features)
