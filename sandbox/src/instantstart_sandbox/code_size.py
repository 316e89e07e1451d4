"""The unzipped size of the code a template's function or layer would ship, measured on this machine.

The sandbox deploys placeholders and runs each function from the built artifacts, so Lambda's 250 MB unzipped limit
(:mod:`instantstart_sandbox.aws.lambda_limits`) is checked against what the build holds (``make build-host``: the
files of each function's and layer's directory, bytecode included). A template deployed without a build (a test's
own) is measured from its source directories: a directory's files, and for a layer also the distributions its
``requirements.txt`` installs, as installed in this environment (a lower bound).
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

_SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def directory_bytes(path: Path, skip_caches: bool = True) -> int:
    """The total size in bytes of the files under ``path`` (caches skipped unless ``skip_caches`` is False: a build's
    ``__pycache__`` ships); 0 for a path that is not a directory."""
    if not path.is_dir():
        return 0
    total = 0
    for file in path.rglob("*"):
        if file.is_file() and not (skip_caches and _SKIPPED_DIRS.intersection(file.relative_to(path).parts)):
            total += file.stat().st_size
    return total


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements_bytes(requirements: Path) -> int:
    """The installed size in bytes of the distributions ``requirements`` names and of what they require, once each
    (from their ``RECORD``); 0 when the file does not exist."""
    from packaging.requirements import InvalidRequirement, Requirement

    if not requirements.is_file():
        return 0
    seen: set[str] = set()
    total = 0
    pending: list[tuple[str, tuple[str, ...]]] = []
    for line in requirements.read_text().splitlines():
        text = line.split("#", 1)[0].strip()
        if text and not text.startswith("-"):
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            pending.append((req.name, tuple(req.extras)))
    while pending:
        name, extras = pending.pop()
        key = _canonical(name)
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        total += sum(f.size or 0 for f in dist.files or [])
        for spec in dist.requires or []:
            try:
                req = Requirement(spec)
            except InvalidRequirement:
                continue
            wanted = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in wanted):
                pending.append((req.name, tuple(req.extras)))
    return total


def layer_bytes(path: Path) -> int:
    """The unzipped size in bytes of a layer from directory ``path``: its files, plus the installed distributions of
    its ``requirements.txt`` (what ``sam build`` installs into a Python layer)."""
    return directory_bytes(path) + requirements_bytes(path / "requirements.txt")
