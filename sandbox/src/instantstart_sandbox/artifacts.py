"""The built artifacts the sandbox runs: ``sam build``'s layout of the template's functions and layers.

``make build-host`` (``tools/lambda_build.py all --platform host``) writes ``<checkout>/.aws-sam/host``: the same lock
and sources ``sam build`` ships, for this machine's interpreter — ``<LogicalId>/`` a function's code,
``<LayerLogicalId>/python/`` a layer's packages. The deployer registers each function from there, never from the
source tree, and the sandbox refuses a build older than the sources (:func:`check`), so what the sandbox runs is what
a deploy would ship. ``INSTANTSTART_SANDBOX_ARTIFACTS`` names another build directory (a test builds one without a
locked package to see the import fail as on Lambda).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ARTIFACTS_VARIABLE = "INSTANTSTART_SANDBOX_ARTIFACTS"
CORE_LAYER = "CoreLayer"
RUNTIME_DIR = "Runtime"
"""The sandbox's ``/var/runtime`` (``awslambdaric``), built beside the functions by ``make build-host``."""
HOST_BUILD = Path(".aws-sam") / "host"
SAM_LAYER_SUFFIX = re.compile(r"^(?P<id>.+?)[0-9a-f]{10}$")
"""The SAM transform names a layer's ``AWS::Lambda::LayerVersion`` after its logical id plus a 10-digit hash."""


class ArtifactsError(RuntimeError):
    """The build directory is missing, incomplete or older than the sources (the message says how to build it)."""


def build_dir(template_path: Path, explicit: Path | str | None = None) -> Path:
    """The build directory of the checkout holding ``template_path``: ``explicit``, else
    ``$INSTANTSTART_SANDBOX_ARTIFACTS``, else ``<template's directory>/.aws-sam/host``."""
    chosen = explicit or os.environ.get(ARTIFACTS_VARIABLE)
    return Path(chosen).resolve() if chosen else (template_path.parent / HOST_BUILD).resolve()


def function_dir(build: Path, logical_id: str) -> Path:
    """``build/<logical_id>``, a function's ``LAMBDA_TASK_ROOT``.

    Raises:
        ArtifactsError: it was not built.
    """
    path = build / logical_id
    if not path.is_dir():
        raise ArtifactsError(f"{path} does not exist: build the artifacts first (make build-host)")
    return path


def layer_dir(build: Path, logical_id: str) -> Path:
    """``build/<layer logical id>/python`` (what Lambda mounts at ``/opt/python``) of the SAM-transformed layer
    ``logical_id`` (its hash suffix dropped).

    Raises:
        ArtifactsError: it was not built.
    """
    for candidate in (logical_id, *(m.group("id") for m in [SAM_LAYER_SUFFIX.match(logical_id)] if m)):
        if (build / candidate / "python").is_dir():
            return build / candidate / "python"
    raise ArtifactsError(f"no layer {logical_id} under {build}: build the artifacts first (make build-host)")


def check_sources(build: Path, local: dict[str, Path]) -> None:
    """Refuse a build older than the sources: ``local`` maps each logical id to its ``CodeUri``/``ContentUri``
    directory (the deployer's view of the template). A function's built directory must hold exactly the source's
    ``.py`` files, byte for byte; a layer's ``python/`` must hold each of the source's packages the same way (its
    third-party packages come from the lock, which ``make build-host`` follows).

    Raises:
        ArtifactsError: a directory is missing or a file differs (names the first one and ``make build-host``).
    """
    for logical_id, source in local.items():
        if not source.is_dir():
            continue  # a state machine's definition file
        if (source / "Makefile").is_file() and (build / logical_id / "python").is_dir():
            check_layer(build, logical_id, source)
        elif (source / "Makefile").is_file():
            _same_tree(source, build / logical_id)


def check_layer(build: Path, logical_id: str, source: Path) -> None:
    """Refuse a stale layer: each package of ``source`` (its ``ContentUri``) must be in ``build/<logical_id>/python``
    byte for byte (see :func:`check_sources`).

    Raises:
        ArtifactsError: the layer was not built or a file differs.
    """
    for package in (path for path in source.iterdir() if (path / "__init__.py").is_file()):
        _same_tree(package, build / logical_id / "python" / package.name)


def _same_tree(source: Path, built: Path) -> None:
    if not built.is_dir():
        raise ArtifactsError(f"{built} does not exist: build the artifacts first (make build-host)")
    wanted = {path.relative_to(source) for path in source.rglob("*.py") if "__pycache__" not in path.parts}
    have = {path.relative_to(built) for path in built.rglob("*.py") if "__pycache__" not in path.parts}
    for relative in sorted(wanted | have):
        if relative not in have or relative not in wanted:
            raise ArtifactsError(f"{built / relative} is out of date: rebuild the artifacts (make build-host)")
        if (source / relative).read_bytes() != (built / relative).read_bytes():
            raise ArtifactsError(f"{built / relative} is out of date: rebuild the artifacts (make build-host)")


def activate(layers: list[Path]) -> None:
    """In-process (``thread``) runtime: import the layers' packages from the artifacts, ahead of the development
    environment's (``sys.path``), as a function on Lambda finds ``/opt/python`` first.

    Raises:
        ArtifactsError: the core package (``instantstart``) was already imported from elsewhere, so the
            functions would not run the built copy (import the sandbox before the product, or use the process
            runtime).
    """
    for layer in reversed(layers):
        if str(layer) not in sys.path:
            sys.path.insert(0, str(layer))
    module = sys.modules.get("instantstart")
    origin = getattr(module, "__file__", None) if module is not None else None
    if origin and not any(Path(origin).resolve().is_relative_to(layer) for layer in layers):
        raise ArtifactsError(
            f"instantstart was imported from {Path(origin).parent} before the sandbox started; the in-process "
            "functions must run the built layer"
        )
