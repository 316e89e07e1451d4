"""``Store.get_stages_of``: the cluster list's stage statuses in batches of BatchGetItem's 100 keys, unprocessed keys
asked again, and a throttle that does not clear is an error, not a short answer."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from instantstart.models.common import StageName
from instantstart.models.records import StageRecord
from instantstart.store import keys
from instantstart.store.codec import serialize
from instantstart.store.stages import BATCH_GET_KEYS, BATCH_GET_ROUNDS
from instantstart.store.table import Store


class FakeDynamoDB:
    """Answers ``BatchGetItem`` from ``items``, leaving the last ``unprocessed`` keys of each call unprocessed."""

    def __init__(self, items: dict[tuple[str, str], dict[str, Any]], unprocessed: int = 0) -> None:
        self.items = items
        self.unprocessed = unprocessed
        self.calls: list[int] = []

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        ((table, request),) = RequestItems.items()
        asked = request["Keys"]
        self.calls.append(len(asked))
        assert len(asked) <= BATCH_GET_KEYS
        served, left = (asked[: -self.unprocessed], asked[-self.unprocessed :]) if self.unprocessed else (asked, [])
        found = [self.items[(k["PK"]["S"], k["SK"]["S"])] for k in served if (k["PK"]["S"], k["SK"]["S"]) in self.items]
        return {"Responses": {table: found}, "UnprocessedKeys": {table: {"Keys": left}} if left else {}}


def _stages(tag: str, generation: int) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for stage in StageName:
        record = StageRecord.pending(tag, generation, stage, "2026-12-03T00:00:00Z")
        out[(keys.cluster_pk(tag), keys.stage_sk(generation, stage))] = serialize(
            {"PK": keys.cluster_pk(tag), "SK": keys.stage_sk(generation, stage), **record.to_item()}
        )
    return out


def test_given_30_clusters_then_their_stages_come_in_batches_of_100_keys_in_stage_order() -> None:
    items = {k: v for n in range(30) for k, v in _stages(f"c{n}", 1 + n % 2).items()}
    db = FakeDynamoDB(items)
    found = Store(db, "t").get_stages_of([(f"c{n}", 1 + n % 2) for n in range(30)])  # type: ignore[arg-type]
    assert db.calls == [100, 80]  # 30 clusters x 6 stages
    assert set(found) == {f"c{n}" for n in range(30)}
    assert all([s.name for s in stages] == list(StageName) for stages in found.values())


def test_given_unprocessed_keys_then_they_are_asked_again_and_a_throttle_that_stays_is_an_error() -> None:
    db = FakeDynamoDB(_stages("demo", 1), unprocessed=2)
    with pytest.raises(ClientError) as raised:
        Store(db, "t").get_stages_of([("demo", 1)])  # type: ignore[arg-type]
    assert raised.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert len(db.calls) == BATCH_GET_ROUNDS
