"""The stages of a cluster, one module each: its create steps, its checks and its teardown.

:data:`STAGE_MODULES` names every :class:`~instantstart.models.common.StageName`'s module; each module exposes
``STAGE``, ``CREATE_STEPS`` and ``TEARDOWN_STEPS`` (task action name -> step function). :data:`STAGE_ACTIONS`
names the stage of every task action: :mod:`instantstart.clusters.steps` registers each stage's actions by module
(:mod:`instantstart.clusters.registry`), so a step imports only its own stage's module (a Lambda cold start does not
pay for the five others); a unit test checks it against the modules' tables.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from instantstart.clusters.stages.common import Step
from instantstart.models.common import StageName

STAGE_MODULES: dict[StageName, str] = {
    StageName.NETWORK: "instantstart.clusters.stages.network",
    StageName.ACCESS: "instantstart.clusters.stages.access",
    StageName.DEPENDENCIES: "instantstart.clusters.stages.dependencies",
    StageName.HYPERPOD: "instantstart.clusters.stages.hyperpod",
    StageName.STORAGE: "instantstart.clusters.stages.storage",
    StageName.VERIFY: "instantstart.clusters.stages.verify",
}
"""Every stage's module, in stage order."""

STAGE_ACTIONS: dict[str, StageName] = {
    "ensure_network": StageName.NETWORK,
    "create_eks_cluster": StageName.NETWORK,
    "check_nat_gateway": StageName.NETWORK,
    "ensure_compute_subnet": StageName.NETWORK,
    "check_eks_cluster": StageName.NETWORK,
    "delete_eks_cluster": StageName.NETWORK,
    "delete_network": StageName.NETWORK,
    "grant_access": StageName.ACCESS,
    "check_kubernetes_access": StageName.ACCESS,
    "revoke_access": StageName.ACCESS,
    "create_addons": StageName.DEPENDENCIES,
    "apply_hyperpod_prerequisites": StageName.DEPENDENCIES,
    "check_addons": StageName.DEPENDENCIES,
    "delete_addons": StageName.DEPENDENCIES,
    "clear_failed_hyperpod_cluster": StageName.HYPERPOD,
    "create_hyperpod_cluster": StageName.HYPERPOD,
    "check_hyperpod_cluster": StageName.HYPERPOD,
    "delete_hyperpod_cluster": StageName.HYPERPOD,
    "ensure_bucket": StageName.STORAGE,
    "check_storage_access": StageName.STORAGE,
    "check_storage": StageName.STORAGE,
    "delete_storage": StageName.STORAGE,
    "check_cluster_verification": StageName.VERIFY,
    "report_node_shortfall": StageName.VERIFY,
}
"""The stage whose module defines each create and teardown task action."""


def stage_module(stage: StageName) -> ModuleType:
    """The module of ``stage`` (imported on first use)."""
    return importlib.import_module(STAGE_MODULES[stage])


def stage_steps() -> dict[str, Step]:
    """Every create and teardown step of every stage, by task action name (imports every stage module).

    Raises:
        ValueError: two stages expose the same action name.
    """
    steps: dict[str, Step] = {}
    for stage in STAGE_MODULES:
        module = stage_module(stage)
        for name, step in {**module.CREATE_STEPS, **module.TEARDOWN_STEPS}.items():
            if name in steps:
                raise ValueError(f"step {name} is exposed by two stages")
            steps[name] = step
    return steps
