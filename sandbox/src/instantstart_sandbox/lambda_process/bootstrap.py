"""The sandbox's ``/var/runtime/bootstrap``: starts AWS's Lambda runtime interface client in a function's process.

Run as ``python -I -S bootstrap.py`` (no ``PYTHONPATH``, no user or venv ``site-packages``): only the standard library
is importable until this script sets ``sys.path`` the way Lambda's Python runtime does — the function's code
(``LAMBDA_TASK_ROOT``), each layer's ``python`` directory (``/opt/python``), the runtime's own directory
(``LAMBDA_RUNTIME_DIR``, holding ``awslambdaric``), then the standard library. Nothing of the development environment
or of the sandbox is on it, so a package missing from the built artifacts fails the import as on Lambda
(``Runtime.ImportModuleError``).

Standard library only. The one sandbox-specific thing it does: time. ``INSTANTSTART_SANDBOX_CLOCK`` is
``sim0,monotonic0,scale`` of the sandbox's :class:`~instantstart_sandbox.clock.SimClock` (``CLOCK_MONOTONIC`` is the
same for every process of the machine), and when the product's clock module (``instantstart.models.common``) or
botocore's endpoint module is first imported, the same hooks the in-process runtime installs are applied to it: the
record timestamps read the simulated time, and the SDK's retry backoff sleeps simulated seconds.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

CLOCK_VARIABLE = "INSTANTSTART_SANDBOX_CLOCK"
LAYERS_VARIABLE = "INSTANTSTART_SANDBOX_LAYERS"


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``hooks[name](module)`` right after the module ``name`` was executed (once)."""

    def __init__(self, hooks: dict[str, Callable[[ModuleType], None]]) -> None:
        self.hooks = hooks

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        hook = self.hooks.pop(fullname, None)
        if hook is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader: Any = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            hook(module)

        loader.exec_module = exec_module
        return spec


class _SdkTime:
    """Stands in for ``time`` in ``botocore.endpoint`` (its retry backoff sleep), sleeping simulated seconds."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds / self.scale)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def _clock_hooks(value: str) -> dict[str, Callable[[ModuleType], None]]:
    sim0, monotonic0, scale = (float(part) for part in value.split(","))

    def now() -> float:
        return sim0 + (time.monotonic() - monotonic0) * scale

    def product_clock(module: ModuleType) -> None:
        module.set_clock(now, lambda seconds: time.sleep(max(0.0, seconds) / scale))

    def sdk_backoff(module: ModuleType) -> None:
        module.time = _SdkTime(scale)  # type: ignore[attr-defined]

    return {"instantstart.models.common": product_clock, "botocore.endpoint": sdk_backoff}


def main() -> None:
    """Set ``sys.path`` and the clock hooks, then hand over to ``awslambdaric`` with the handler in ``_HANDLER``."""
    task_root = os.environ["LAMBDA_TASK_ROOT"]
    layers = [path for path in os.environ.get(LAYERS_VARIABLE, "").split(os.pathsep) if path]
    runtime_dir = os.environ["LAMBDA_RUNTIME_DIR"]
    stdlib = [path for path in sys.path if path]
    sys.path[:] = [task_root, *layers, runtime_dir, *stdlib]
    clock = os.environ.get(CLOCK_VARIABLE)
    if clock:
        sys.meta_path.insert(0, _AfterImport(_clock_hooks(clock)))
    os.chdir(task_root)
    from awslambdaric.__main__ import main as runtime_interface_client

    runtime_interface_client([sys.argv[0], os.environ["_HANDLER"]])


if __name__ == "__main__":
    main()
