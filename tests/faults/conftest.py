"""Fixtures of the fault matrices."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from instantstart_sandbox import iam_audit
from instantstart_sandbox.runner import Sandbox
from tests.faults import matrix


@pytest.fixture(scope="module")
def labelled(sandbox: Sandbox) -> Iterator[Sandbox]:
    """The sandbox with every workflow invocation labelled ``tag|action|stage``."""
    iam_audit.label_invocations(matrix.label)
    yield sandbox
    iam_audit.label_invocations(None)
