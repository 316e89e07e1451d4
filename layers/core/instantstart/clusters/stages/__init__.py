"""The stages of a cluster, one module each: its create steps, its checks and its teardown.

:data:`STAGE_MODULES` maps every :class:`~instantstart.models.common.StageName` to its module; each
module exposes ``STAGE``, ``CREATE_STEPS`` and ``TEARDOWN_STEPS`` (task action name -> step function).
"""

from __future__ import annotations

from types import ModuleType

from instantstart.clusters.stages import access, dependencies, hyperpod, network, storage, verify
from instantstart.clusters.stages.common import Step
from instantstart.models.common import StageName

STAGE_MODULES: dict[StageName, ModuleType] = {
    StageName.NETWORK: network,
    StageName.ACCESS: access,
    StageName.DEPENDENCIES: dependencies,
    StageName.HYPERPOD: hyperpod,
    StageName.STORAGE: storage,
    StageName.VERIFY: verify,
}
"""Every stage's module, in stage order."""


def stage_steps() -> dict[str, Step]:
    """Every create and teardown step of every stage, by task action name.

    Raises:
        ValueError: two stages expose the same action name.
    """
    steps: dict[str, Step] = {}
    for module in STAGE_MODULES.values():
        for name, step in {**module.CREATE_STEPS, **module.TEARDOWN_STEPS}.items():
            if name in steps:
                raise ValueError(f"step {name} is exposed by two stages")
            steps[name] = step
    return steps
