"""``make load``: 50 concurrent creates over 10 cluster tags, deletes racing creates, retries racing retries.

Prints the figures (requests by answer, operations, executions, replays, end states, mismatches) and fails on
any mismatch. ``INSTANTSTART_LOAD_TAGS`` sets the number of tags (default 10: five creates each in the first
burst), ``INSTANTSTART_LOAD_ENVIRONMENTS`` the Lambda execution environments of the API function (default 8),
``INSTANTSTART_LOAD_EVERY_FUNCTION=1`` scales the workflow steps and event functions out too; the sandbox runs at
``INSTANTSTART_TEST_TIME_SCALE`` (default 240).
"""

from __future__ import annotations

import os
from typing import Any

from instantstart_client.api import InstantStartClient
from tests.load.driver import run_load

TAGS = int(os.environ.get("INSTANTSTART_LOAD_TAGS", "10"))
ENVIRONMENTS = int(os.environ.get("INSTANTSTART_LOAD_ENVIRONMENTS", "8"))
EVERY_FUNCTION = os.environ.get("INSTANTSTART_LOAD_EVERY_FUNCTION", "") == "1"


def test_no_operation_is_lost_or_duplicated_under_load(api: InstantStartClient, sandbox: Any) -> None:
    report = run_load(
        api, sandbox, tags=TAGS, prefix="load", timeout=600, environments=ENVIRONMENTS, every_function=EVERY_FUNCTION
    )

    assert report.mismatches == []
    assert report.statuses()["create 202"] >= TAGS
    assert report.operations == report.executions
