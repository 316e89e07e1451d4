"""The steps function's dispatch table, filled by each use-case area: task actions, day-2 changes, teardown hooks.

The workflows (``statemachines/*.asl.json``) are the clusters area's, but what runs in them belongs to every area: a
day-2 change of features, training, inference or MLflow, and what each area created that a cluster deletion removes.
The areas above ``clusters`` may import it, never the other way round, so they *register* here what they own, each
in its own ``steps`` module (``instantstart.<area>.steps``); :mod:`instantstart.steps` imports every area's ``steps``
module and runs the task payloads through :data:`REGISTRY`.

A registration names a module, not its functions: :meth:`StepRegistry.step` and :meth:`StepRegistry.change` import
the module of the action (or of the change's operation type) when it is first looked up, so a Lambda invocation
imports only the area of its action. Teardown hooks are functions of the area's ``steps`` module that import their
module when they run.

Raises (from the lookups of changes and teardown hooks): ``RuntimeError`` when :mod:`instantstart.steps` has not
assembled the table yet (an area's registrations would be silently missing).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from instantstart.clusters.stages.common import Step
from instantstart.models.common import OperationType
from instantstart.runtime import Runtime

if TYPE_CHECKING:
    from instantstart.clusters.changes import ClusterChange

TeardownHook = Callable[[Runtime, str], Sequence[str]]
"""``hook(rt, cluster_tag)``: one round of deleting what an area created for the cluster; returns what is still
being deleted (empty: done). Idempotent: called again every round until the phase is done."""


DependentsHook = Callable[[Runtime, str, bool], Sequence[str]]
"""``hook(rt, cluster_tag, remove)``: what of an area depends on a feature of the cluster (e.g. the managed inference
endpoints on ``inferenceOperator``), each as ``Kind namespace/name``. With ``remove`` False a read (the API's
refusal names them); with ``remove`` True one round of removing them (the feature's workflow, before the feature
goes): what is still there (empty: done). Idempotent."""


class Teardown(StrEnum):
    """When a cluster deletion runs an area's teardown hooks (in registration order)."""

    BUCKET = "bucket"
    """The storage stage's teardown, before the cluster's bucket is deleted: what writes to the bucket is asked to
    go (the stage does not wait for it: :attr:`NETWORK` does)."""
    NETWORK = "network"
    """Every round of the dependencies stage's teardown, before its add-ons go: what holds network interfaces or
    writes to the bucket; the stage polls until every hook returns nothing (the network teardown comes after)."""
    ROLES = "roles"
    """The dependencies stage's teardown once the add-ons and pod identity associations are gone: roles and buckets
    an area created (the stage does not poll them)."""


class StepRegistry:
    """Task action -> step, day-2 operation type -> :class:`~instantstart.clusters.changes.ClusterChange`, teardown
    phase -> hooks; filled by the areas' ``steps`` modules, resolved lazily."""

    def __init__(self) -> None:
        self._steps: dict[str, Step] = {}
        self._step_modules: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._change_modules: dict[OperationType, str] = {}
        self._teardowns: dict[Teardown, list[TeardownHook]] = {phase: [] for phase in Teardown}
        self._dependents: dict[str, list[DependentsHook]] = {}
        self._complete = False

    # -- filled by the areas ---------------------------------------------------------------------------------------
    def add_steps(self, steps: Mapping[str, Step]) -> None:
        """Register steps by task action name (functions already imported: the bookkeeping at the stages' edges).

        Raises:
            ValueError: an action is registered already.
        """
        for action, step in steps.items():
            self._claim(action)
            self._steps[action] = step

    def add_step_module(self, module: str, actions: Iterable[str], tables: Sequence[str] = ("STEPS",)) -> None:
        """Register ``actions`` as steps of ``module``: found in its dicts named ``tables`` when first looked up.

        Raises:
            ValueError: an action is registered already.
        """
        for action in actions:
            self._claim(action)
            self._step_modules[action] = (module, tuple(tables))

    def add_changes(self, module: str, op_types: Iterable[OperationType]) -> None:
        """Register ``module``'s ``CHANGES`` (operation type -> ``ClusterChange``) as the handlers of ``op_types``.

        Raises:
            ValueError: an operation type has a handler module already.
        """
        for op_type in op_types:
            if self._change_modules.get(op_type, module) != module:
                raise ValueError(f"{op_type} is handled by {self._change_modules[op_type]} already")
            self._change_modules[op_type] = module

    def add_teardown(self, phase: Teardown, hook: TeardownHook) -> None:
        """Run ``hook`` when a cluster deletion reaches ``phase`` (after the hooks registered before it)."""
        self._teardowns[phase].append(hook)

    def add_dependents(self, feature: str, hook: DependentsHook) -> None:
        """``hook`` names (and removes) what depends on feature ``feature`` (its API key: ``inferenceOperator``)."""
        self._dependents.setdefault(feature, []).append(hook)

    def complete(self) -> None:
        """Every area has registered (called by :mod:`instantstart.steps` once it imported them all)."""
        self._complete = True

    # -- looked up by the steps --------------------------------------------------------------------------------------
    def step(self, action: str) -> Step | None:
        """The step of task action ``action`` (its module imported on first use); ``None`` for an unknown one.

        Raises:
            KeyError: the registered module has no step of that name (a registration out of date).
        """
        found = self._steps.get(action)
        if found is not None:
            return found
        if action not in self._step_modules:
            return None
        name, tables = self._step_modules[action]
        module = importlib.import_module(name)
        for table in tables:
            step: Step | None = getattr(module, table).get(action)
            if step is not None:
                return step
        raise KeyError(f"{name} defines no step {action!r} in {', '.join(tables)}")

    def change(self, op_type: OperationType) -> ClusterChange | None:
        """The handler of day-2 operation type ``op_type`` (its module imported on first use); ``None`` for none.

        Raises:
            RuntimeError: the table is not assembled yet (:meth:`complete` not called).
        """
        self._require_complete()
        name = self._change_modules.get(op_type)
        if name is None:
            return None
        handlers: Mapping[OperationType, ClusterChange] = importlib.import_module(name).CHANGES
        return handlers.get(op_type)

    def teardown(self, phase: Teardown, rt: Runtime, tag: str) -> list[str]:
        """Run the hooks of ``phase`` for cluster ``tag``, in registration order; what is still being deleted.

        Raises:
            RuntimeError: the table is not assembled yet (:meth:`complete` not called).
            Whatever a hook raises (AWS ``ClientError`` s included): the step fails or retries as its stage says.
        """
        self._require_complete()
        remaining: list[str] = []
        for hook in self._teardowns[phase]:
            remaining.extend(hook(rt, tag))
        return remaining

    def dependents(self, feature: str, rt: Runtime, tag: str, *, remove: bool) -> list[str]:
        """What depends on ``feature`` of cluster ``tag`` (``remove``: one round of removing it; what is left).

        Unlike the other lookups this one does not need the assembled table: the API imports the ``steps`` module
        of the areas whose dependents it checks (:mod:`instantstart.inference.steps`), the steps function all.

        Raises:
            Whatever a hook raises (AWS ``ClientError`` s, ``UpstreamUnavailable`` when Kubernetes cannot be read).
        """
        found: list[str] = []
        for hook in self._dependents.get(feature, []):
            found.extend(hook(rt, tag, remove))
        return found

    # -- the tables, for the dispatch and its tests --------------------------------------------------------------------
    def actions(self) -> list[str]:
        """Every registered task action name."""
        return [*self._steps, *self._step_modules]

    def step_modules(self) -> dict[str, str]:
        """The module of every action registered by module."""
        return {action: module for action, (module, _) in self._step_modules.items()}

    def change_modules(self) -> dict[OperationType, str]:
        """The module whose ``CHANGES`` handles each registered operation type."""
        return dict(self._change_modules)

    def changes(self) -> Mapping[OperationType, ClusterChange]:
        """The change handlers as a mapping, each module imported when its operation type is looked up."""
        return _Changes(self)

    def _claim(self, action: str) -> None:
        if action in self._steps or action in self._step_modules:
            raise ValueError(f"task action {action!r} is registered already")

    def _require_complete(self) -> None:
        if not self._complete:
            raise RuntimeError("the steps' registry is not assembled: import instantstart.steps first")


class _Changes(Mapping[OperationType, "ClusterChange"]):
    """:meth:`StepRegistry.changes`: a lookup imports the module of that operation type only."""

    def __init__(self, registry: StepRegistry) -> None:
        self._registry = registry

    def __getitem__(self, op_type: OperationType) -> ClusterChange:
        found = self._registry.change(op_type)
        if found is None:
            raise KeyError(op_type)
        return found

    def __iter__(self) -> Iterator[OperationType]:
        return iter(self._registry.change_modules())

    def __len__(self) -> int:
        return len(self._registry.change_modules())


REGISTRY = StepRegistry()
"""The steps function's table: filled by ``instantstart.<area>.steps``, assembled by :mod:`instantstart.steps`."""
