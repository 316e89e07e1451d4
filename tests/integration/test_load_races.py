"""The small version of ``make load``: concurrent creates, deletes and stage retries on three cluster tags.

One tag's create is cancelled and retried by five racing retries (and a racing DELETE), one is deleted by
three racing DELETEs while two creates race them and is then created again, one stays READY; the end deletes
every tag. Every accepted request has exactly one operation record and one Step Functions execution, every
replay answers the first answer, every tag ends READY, FAILED with a reason or DELETED, and AWS agrees
(tests/load/driver.py).
"""

from __future__ import annotations

from typing import Any

from instantstart_client.api import InstantStartClient
from tests.load.driver import run_load


def test_given_racing_requests_then_no_operation_is_lost_or_duplicated(api: InstantStartClient, sandbox: Any) -> None:
    report = run_load(api, sandbox, tags=3, prefix="race", timeout=240)

    assert report.mismatches == []
    statuses = report.statuses()
    # the first burst: one create per tag accepted, two replays of k1, the rest refused
    assert statuses["create 202"] >= 3 and statuses["create 409 ClusterAlreadyExists"] >= 3
    assert report.replays() >= 3
    assert report.operations == report.executions
    assert report.end_states["E"] == {"DELETED": 3}
