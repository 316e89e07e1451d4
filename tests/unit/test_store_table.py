"""Store: conditional writes and opaque pagination tokens over the template's DynamoDB table (moto)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from instantstart.errors import Conflict, InvalidRequest
from instantstart.store import keys
from instantstart.store.table import ConditionFailed, Store, decode_token, encode_token, serialize

pytestmark = pytest.mark.usefixtures("table")


@pytest.fixture
def store(aws: Any, table: str) -> Store:
    return Store(aws.client("dynamodb"), table)


def put_cluster(store: Store, tag: str, status: str = "READY") -> None:
    store.transact(
        [
            {
                "put": {
                    "PK": keys.cluster_pk(tag),
                    "SK": keys.META,
                    "GSI1PK": keys.CLUSTERS_INDEX_PK,
                    "GSI1SK": keys.cluster_index_sk(tag),
                    "clusterTag": tag,
                    "status": status,
                    "generation": 1,
                },
                "condition": "attribute_not_exists(PK)",
            }
        ]
    )


def test_given_a_cluster_in_another_status_when_updating_conditionally_then_condition_failed_and_nothing_changes(
    store: Store,
) -> None:
    put_cluster(store, "demo", "READY")

    with pytest.raises(ConditionFailed):
        store.update(keys.cluster_pk("demo"), keys.META, {"status": "DELETING"}, expected_status=["CREATING"])

    assert store.get_cluster("demo")["status"] == "READY"  # type: ignore[index]


def test_given_a_cluster_in_the_expected_status_when_updating_then_the_new_item_is_returned(store: Store) -> None:
    put_cluster(store, "demo", "READY")

    item = store.update(
        keys.cluster_pk("demo"), keys.META, {"status": "DELETING", "note": 1.5}, expected_status=["READY", "FAILED"]
    )

    assert item["status"] == "DELETING"
    assert item["note"] == 1.5
    assert item["generation"] == 1 and isinstance(item["generation"], int)
    assert store.get_cluster("demo")["status"] == "DELETING"  # type: ignore[index]


def test_given_a_missing_item_when_updating_then_condition_failed_instead_of_creating_it(store: Store) -> None:
    with pytest.raises(ConditionFailed):
        store.update(keys.cluster_pk("ghost"), keys.META, {"status": "READY"})

    assert store.get_cluster("ghost") is None


def test_given_an_existing_tag_when_putting_it_again_in_a_transaction_then_conflict(store: Store) -> None:
    put_cluster(store, "demo")

    with pytest.raises(Conflict):
        put_cluster(store, "demo", "CREATING")

    assert store.get_cluster("demo")["status"] == "READY"  # type: ignore[index]


def test_given_five_clusters_when_paging_by_two_then_tokens_round_trip_to_every_cluster_once_in_tag_order(
    store: Store,
) -> None:
    tags = ["echo", "alpha", "delta", "bravo", "charlie"]
    for tag in tags:
        put_cluster(store, tag)

    seen: list[str] = []
    pages = 0
    token: str | None = None
    while True:
        items, token = store.list_clusters(2, token)
        pages += 1
        assert len(items) <= 2
        seen += [i["clusterTag"] for i in items]
        if token is None:
            break
        assert isinstance(token, str) and "=" not in token  # opaque, URL-safe
        assert pages < 10

    assert seen == sorted(tags)
    assert pages == 3


def test_given_a_token_when_decoding_then_it_is_the_dynamodb_start_key() -> None:
    key = serialize({"PK": "CLUSTER#a", "SK": "META", "GSI1PK": "CLUSTERS", "GSI1SK": "CLUSTER#a"})

    token = encode_token(key)

    assert decode_token(token, {"PK", "SK", "GSI1PK", "GSI1SK"}) == key
    assert encode_token(None) is None
    assert decode_token(None, {"PK"}) is None


def _b64(data: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("not-a-token!!", id="not-base64"),
        pytest.param(_b64(["CLUSTER#a"]), id="not-an-object"),
        pytest.param(_b64({"PK": "CLUSTER#a", "SK": "META"}), id="missing-index-keys"),
        pytest.param(
            _b64({"PK": "CLUSTER#a", "SK": "META", "GSI1PK": "CLUSTERS", "GSI1SK": "CLUSTER#a", "x": "1"}),
            id="extra-key",
        ),
        pytest.param(
            _b64({"PK": "CLUSTER#a", "SK": "META", "GSI1PK": "CLUSTERS", "GSI1SK": 7}),
            id="non-string-value",
        ),
        pytest.param(base64.urlsafe_b64encode(b"\xff\xfe").decode(), id="not-utf8"),
    ],
)
def test_given_a_tampered_token_when_listing_then_invalid_request_naming_next_token(store: Store, token: str) -> None:
    put_cluster(store, "alpha")

    with pytest.raises(InvalidRequest) as info:
        store.list_clusters(2, token)

    assert info.value.code == "BadRequest"
    assert info.value.details == [{"field": "nextToken"}]


def test_given_a_token_pointing_into_another_partition_when_listing_then_invalid_request_not_an_aws_error(
    store: Store,
) -> None:
    # DynamoDB refuses an ExclusiveStartKey outside the queried partition ("The provided starting key is
    # invalid"); a token edited to point at a cluster's operations must be a 400, never a 500.
    put_cluster(store, "alpha")
    forged = _b64({"PK": "OP#op-1", "SK": "META", "GSI1PK": "CLUSTER#alpha", "GSI1SK": "OP#2026-01-01T00:00:00Z"})

    with pytest.raises(InvalidRequest):
        store.list_clusters(2, forged)


def test_given_a_map_written_by_another_step_when_a_step_merges_its_key_then_both_survive_without_a_read(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parallel add-on steps record their keys without reading the item, so none can clobber another's."""
    store.transact([{"put": {"PK": "CLUSTER#par", "SK": "S", "status": "RUNNING", "resources": {}}}])
    store.merge_map("CLUSTER#par", "S", "resources", {"addon:cert-manager": {"status": "ACTIVE"}})

    def no_read(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("merge_map must not read the item (a read-modify-write loses parallel writes)")

    monkeypatch.setattr(store._db, "get_item", no_read)
    after = store.merge_map(
        "CLUSTER#par", "S", "resources", {"addon:metrics-server": {"status": "CREATING"}}, {"updatedAt": "t1"}
    )
    assert after["resources"] == {
        "addon:cert-manager": {"status": "ACTIVE"},
        "addon:metrics-server": {"status": "CREATING"},
    }
    assert after["updatedAt"] == "t1"


def test_given_no_map_when_merging_then_condition_failed(store: Any) -> None:
    from instantstart.store.table import ConditionFailed

    with pytest.raises(ConditionFailed):
        store.merge_map("CLUSTER#none", "S", "resources", {"k": "v"})
