"""Fixtures of the contract tests: the SAM template as data (parsed once per session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    """template.yaml with CloudFormation short-form tags decoded as intrinsic-function dicts (cfn-lint's decoder)."""
    import cfnlint.decode

    decoded, errors = cfnlint.decode.decode(str(ROOT / "template.yaml"))
    assert not errors and decoded is not None, errors
    return dict(json.loads(json.dumps(decoded, default=str)))
