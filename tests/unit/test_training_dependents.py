"""Which training workloads depend on a feature (``PATCH features`` refuses to turn it off while any exists, unless
``removeDependents``): task governance's are the jobs in a Kueue queue, FSx's the jobs whose pods mount
``fsx-claim``, and a kind whose operator is not installed (not served) has none; a request turning a feature off
asks for removal only where its body says so."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from instantstart.features.service import _removing_with_dependents
from instantstart.kube import client as kube
from instantstart.models.features import UpdateFeaturesRequest
from instantstart.training import builders, dependents


def _job(name: str, *, queue: str | None = None, claim: str | None = None) -> dict[str, Any]:
    labels = {builders.KUEUE_QUEUE: queue} if queue else {}
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}] if claim else []
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"replicaSpecs": [{"template": {"spec": {"volumes": volumes}}}]},
    }


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[dict[str, Any]]]:
    """The objects Kubernetes serves, by kind (a kind left out is not served: its operator is not installed)."""
    objects: dict[str, list[dict[str, Any]]] = {}

    def list_objects(dyn: Any, api_version: str, kind: str, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        if kind not in objects:
            raise ResourceNotFoundError(f"no {kind} in {api_version}")
        return objects[kind]

    monkeypatch.setattr(kube, "list_objects", list_objects)
    return objects


def _found(feature: str) -> list[str]:
    return sorted(dependents.label(kind, obj) for _, kind, obj in dependents.FINDERS[feature](object()))


def test_task_governance_depends_on_queued_jobs_and_fsx_on_jobs_mounting_its_claim(
    served: dict[str, list[dict[str, Any]]],
) -> None:
    served[builders.PYTORCH_JOB_KIND] = [
        _job("queued", queue="team-a"),
        _job("on-fsx", claim=builders.FSX_CLAIM),
        _job("other-claim", claim="my-claim"),
        _job("plain"),
    ]
    served[builders.RAY_JOB_KIND] = [_job("ray-queued", queue="team-b")]

    assert _found("taskGovernance") == ["HyperPodPyTorchJob default/queued", "RayJob default/ray-queued"]
    assert _found("fsx") == ["HyperPodPyTorchJob default/on-fsx"]
    assert _found("trainingOperator") == [
        "HyperPodPyTorchJob default/on-fsx",
        "HyperPodPyTorchJob default/other-claim",
        "HyperPodPyTorchJob default/plain",
        "HyperPodPyTorchJob default/queued",
    ]


def test_a_kind_that_is_not_served_has_no_dependents(served: dict[str, list[dict[str, Any]]]) -> None:
    served["RayCluster"] = [_job("ray-head")]

    assert _found("kubeRay") == ["RayCluster default/ray-head"]
    assert _found("trainingOperator") == []


def test_only_features_turned_off_are_checked_and_removal_only_where_the_body_asks() -> None:
    request = UpdateFeaturesRequest.model_validate(
        {
            "trainingOperator": {"enabled": False, "removeDependents": True},
            "kubeRay": {"enabled": False},
            "fsx": {"enabled": True},
            "observability": {"enabled": False},
        }
    )

    assert _removing_with_dependents(request) == {"trainingOperator": True, "kubeRay": False}
