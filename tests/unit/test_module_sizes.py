"""Module size: no module of a split package grows past 500 lines (issue 32, item 5).

A package listed here was split by what its parts do (the store by record kind behind one ``Store`` class); a
module that outgrows the limit is split again rather than let grow.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "core" / "instantstart"

MAX_LINES = 500

PACKAGES = ("store",)
"""Packages under the core whose every module stays within :data:`MAX_LINES`."""


@pytest.mark.parametrize("package", PACKAGES)
def test_given_a_split_package_when_counting_its_modules_lines_then_none_exceeds_the_limit(package: str) -> None:
    modules = sorted((CORE / package).rglob("*.py"))
    assert modules, f"no module under {package}"
    sizes = {str(m.relative_to(ROOT)): len(m.read_text(encoding="utf-8").splitlines()) for m in modules}
    assert {path: lines for path, lines in sizes.items() if lines > MAX_LINES} == {}
