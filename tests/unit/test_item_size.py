"""Store: a record that would not fit DynamoDB's 400 KB item size (with the room its later updates need) is refused
before anything is written, naming its size and the limit; the size is counted as DynamoDB (and moto) count it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from instantstart.models.common import ClusterStatus, OperationStatus, OperationType
from instantstart.models.records import OperationRecord
from instantstart.store.codec import MAX_ITEM_BYTES, RECORD_GROWTH_BYTES, check_item_fits, item_bytes, serialize
from instantstart.store.table import ItemTooLarge, Store
from tests.unit.test_store_table import NOW, new_cluster

pytestmark = pytest.mark.usefixtures("table")

SAMPLE: dict[str, Any] = {
    "PK": "OP#op-1",
    "SK": "META",
    "type": "CREATE_TRAINING_JOB",
    "generation": 12345,
    "ratio": 0.25,
    "done": False,
    "change": {"request": {"command": ["python", "-c", "print('é')"], "env": {"A": "1"}, "nodes": 2}, "empty": []},
}


@pytest.fixture
def store(aws: Any, table: str) -> Store:
    return Store(aws.client("dynamodb"), table)


def test_item_bytes_counts_what_dynamodb_counts() -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.utilities import bytesize

    moto_size = sum(bytesize(name) + DynamoType(value).size() for name, value in serialize(SAMPLE).items())

    # DynamoDB's documented rules (3 bytes per map or list, 1 per element) count more than moto does: what the store
    # accepts, the sandbox's DynamoDB (and AWS's) accepts too
    assert moto_size < item_bytes(SAMPLE)
    assert item_bytes({"s": "é" * 10}) == 1 + 20  # UTF-8 bytes, not characters
    assert item_bytes({"l": ["ab", "cd"]}) == 1 + 3 + (2 + 1) * 2


def test_an_item_within_the_limit_passes_and_one_byte_over_is_refused_with_both_numbers() -> None:
    limit = MAX_ITEM_BYTES - RECORD_GROWTH_BYTES
    base = item_bytes({"PK": "OP#x", "big": ""})
    fits = {"PK": "OP#x", "big": "a" * (limit - base)}

    assert check_item_fits(fits, reserve=RECORD_GROWTH_BYTES) == limit
    with pytest.raises(ItemTooLarge) as refused:
        check_item_fits({**fits, "big": fits["big"] + "a"}, reserve=RECORD_GROWTH_BYTES)
    assert (refused.value.size, refused.value.limit, refused.value.pk) == (limit + 1, limit, "OP#x")
    assert str(limit) in str(refused.value) and str(limit + 1) in str(refused.value)


def test_given_a_change_of_about_1_mb_when_starting_the_operation_then_it_is_refused_and_nothing_is_written(
    store: Store,
) -> None:
    new_cluster(store, "big")
    store.finish_operation(
        "op-big-1", "big", status=OperationStatus.SUCCEEDED, cluster_status=ClusterStatus.READY, now=NOW
    )
    op = OperationRecord(
        operation_id="op-huge",
        type=OperationType.CREATE_TRAINING_JOB,
        cluster_tag="big",
        generation=1,
        created_at=NOW,
        updated_at=NOW,
        change={"request": {"command": ["x" * 4096] * 128, "args": ["y" * 4096] * 128}},
    )

    start = {
        "cluster_status": ClusterStatus.READY,
        "from_status": ClusterStatus.READY,
        "expected_operation_id": "op-big-1",
    }

    with pytest.raises(ItemTooLarge) as refused:
        store.start_operation(op, **start)  # type: ignore[arg-type]

    assert refused.value.size > 1_000_000 and refused.value.limit == MAX_ITEM_BYTES - RECORD_GROWTH_BYTES
    assert store.get_operation("op-huge") is None
    assert store.get_cluster("big").current_operation_id == "op-big-1"  # type: ignore[union-attr]
    # the same start with a small change is written: the refusal was the size, not the cluster's state
    store.start_operation(op.model_copy(update={"change": {"request": {"command": ["x"]}}}), **start)  # type: ignore[arg-type]
    assert store.get_cluster("big").current_operation_id == "op-huge"  # type: ignore[union-attr]


def test_a_refused_record_is_answered_413_request_too_large_naming_the_limit_and_the_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "functions" / "api"))
    from api_errors import from_domain_error

    from instantstart.clusters.executions import request_too_large

    answer = from_domain_error(request_too_large(ItemTooLarge("OP#op-1", size=1_050_000, limit=307_200)))

    assert answer.status_code == 413
    error = json.loads(str(answer.body))["error"]
    assert error["code"] == "RequestTooLarge"
    assert error["details"][0] | {"message": ""} == {
        "field": "body",
        "limit": 307_200,
        "size": 1_050_000,
        "message": "",
    }
    assert "307200" in error["message"] and "1050000" in error["message"]


def test_given_a_create_request_too_large_for_its_record_then_post_clusters_is_413_and_nothing_is_written(
    inprocess_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from instantstart.store import codec
    from instantstart_client.api import ApiError

    inprocess_api.advance_on_poll = False
    # the same rule with a smaller item: a valid create request whose cluster record cannot keep RECORD_GROWTH_BYTES
    monkeypatch.setattr(codec, "MAX_ITEM_BYTES", RECORD_GROWTH_BYTES + 200)
    client = inprocess_api.client(max_attempts=1)
    group = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1}

    with pytest.raises(ApiError) as refused:
        client.create_cluster("toolarge", "us-west-2c", [group])

    assert refused.value.status == 413 and refused.value.code == "RequestTooLarge"
    detail = refused.value.details[0]
    assert detail["field"] == "body" and detail["limit"] == 200 < detail["size"]
    assert client.list_clusters()["clusters"] == []
    assert inprocess_api.driver.runtime.store.get_cluster("toolarge") is None
