"""The steps function's registry (``instantstart.clusters.registry``): what the areas register reaches the cluster
workflows, and a table not yet assembled refuses rather than run a deletion without an area's teardown."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart.clusters.registry import StepRegistry, Teardown
from instantstart.models.common import OperationType


def test_given_a_registry_not_assembled_when_a_change_or_teardown_is_looked_up_then_it_refuses() -> None:
    registry = StepRegistry()
    registry.add_changes("instantstart.features.service", (OperationType.UPDATE_FEATURES,))

    with pytest.raises(RuntimeError, match="not assembled"):
        registry.change(OperationType.UPDATE_FEATURES)
    with pytest.raises(RuntimeError, match="not assembled"):
        registry.teardown(Teardown.NETWORK, object(), "demo")


def test_given_two_areas_claiming_one_action_or_change_when_registered_then_the_second_is_refused() -> None:
    registry = StepRegistry()
    registry.add_step_module("instantstart.clusters.stages.network", ["ensure_network"], tables=("CREATE_STEPS",))
    registry.add_changes("instantstart.mlflow.service", (OperationType.UPDATE_MLFLOW,))

    with pytest.raises(ValueError, match="ensure_network"):
        registry.add_steps({"ensure_network": lambda rt, p: p})
    with pytest.raises(ValueError, match="UPDATE_MLFLOW"):
        registry.add_changes("instantstart.features.service", (OperationType.UPDATE_MLFLOW,))


def test_given_the_assembled_steps_when_a_cluster_is_deleted_then_areas_go_before_the_network_and_roles_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from instantstart.features import fsx
    from instantstart.features import service as features
    from instantstart.inference import downloads
    from instantstart.inference import teardown as inference
    from instantstart.mlflow import service as mlflow
    from instantstart.steps import REGISTRY

    calls: list[str] = []

    def called(name: str, left: list[str] | None) -> Any:
        def hook(rt: Any, tag: str) -> list[str] | None:
            calls.append(f"{name} {tag}")
            return left

        return hook

    monkeypatch.setattr(fsx, "teardown", called("fsx.teardown", ["fs-0123"]))
    monkeypatch.setattr(mlflow, "teardown", called("mlflow.teardown", ["instantstart-demo"]))
    monkeypatch.setattr(mlflow, "start_release", called("mlflow.start_release", None))
    monkeypatch.setattr(features, "teardown", called("features.teardown", ["DeleteRole x"]))
    monkeypatch.setattr(downloads, "stop_downloads", called("downloads.stop_downloads", []))
    monkeypatch.setattr(inference, "start_removal", called("inference.start_removal", []))
    monkeypatch.setattr(
        inference, "remove_sagemaker_resources", called("inference.remove_sagemaker_resources", ["endpoint e"])
    )

    before_bucket = REGISTRY.teardown(Teardown.BUCKET, object(), "demo")
    still_deleting = REGISTRY.teardown(Teardown.NETWORK, object(), "demo")
    after_addons = REGISTRY.teardown(Teardown.ROLES, object(), "demo")

    assert calls == [
        "downloads.stop_downloads demo",
        "inference.start_removal demo",
        "mlflow.start_release demo",
        "fsx.teardown demo",
        "inference.remove_sagemaker_resources demo",
        "mlflow.teardown demo",
        "features.teardown demo",
    ]
    assert (before_bucket, still_deleting, after_addons) == ([], ["fs-0123", "endpoint e", "instantstart-demo"], [])
