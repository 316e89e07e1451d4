"""Module size: no module of a split package grows past 500 lines (issue 32, item 5).

A package listed here was split by what its parts do (the store by record kind behind one ``Store`` class, the
features' service into use cases, rules, views and converging rounds); a module that outgrows the limit is split
again rather than let grow.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "core" / "instantstart"

MAX_LINES = 500

PACKAGES = ("store", "features")
"""Packages under the core whose every module stays within :data:`MAX_LINES`."""

NOT_YET_SPLIT = {"layers/core/instantstart/features/fsx.py"}
"""Modules of those packages still over the limit, waiting for their own split (each must still be over it)."""


def _sizes(package: str) -> dict[str, int]:
    modules = sorted((CORE / package).rglob("*.py"))
    assert modules, f"no module under {package}"
    return {m.relative_to(ROOT).as_posix(): len(m.read_text(encoding="utf-8").splitlines()) for m in modules}


@pytest.mark.parametrize("package", PACKAGES)
def test_given_a_split_package_when_counting_its_modules_lines_then_none_exceeds_the_limit(package: str) -> None:
    sizes = _sizes(package)
    assert {path: n for path, n in sizes.items() if n > MAX_LINES and path not in NOT_YET_SPLIT} == {}


def test_given_a_module_not_yet_split_then_it_is_still_over_the_limit() -> None:
    sizes = {path: n for package in PACKAGES for path, n in _sizes(package).items()}
    assert {path: sizes.get(path) for path in NOT_YET_SPLIT if sizes.get(path, 0) <= MAX_LINES} == {}
