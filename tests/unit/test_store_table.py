"""Store: typed records, conditional intent-level writes and opaque pagination tokens (moto, the template's table)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from instantstart.models.cluster import CreateClusterRequest, StageError
from instantstart.models.common import ClusterStatus, OperationStatus, OperationType, StageName, StageStatus
from instantstart.models.records import ClusterRecord, OperationRecord, StageRecord
from instantstart.store.table import ConditionFailed, InvalidPageToken, Store, decode_token, encode_token, serialize

pytestmark = pytest.mark.usefixtures("table")

NOW = "2026-11-30T12:00:00Z"


@pytest.fixture
def store(aws: Any, table: str) -> Store:
    return Store(aws.client("dynamodb"), table)


def new_cluster(store: Store, tag: str, *, replaces_generation: int | None = None) -> OperationRecord:
    """Write a CREATING cluster with its six PENDING stages and its PENDING create operation."""
    generation = (replaces_generation or 0) + 1
    op = OperationRecord(
        operation_id=f"op-{tag}-{generation}",
        type=OperationType.CREATE_CLUSTER,
        cluster_tag=tag,
        generation=generation,
        created_at=NOW,
        updated_at=NOW,
    )
    request = CreateClusterRequest.model_validate(
        {
            "clusterTag": tag,
            "availabilityZone": "us-west-2c",
            "instanceGroups": [{"instanceType": "ml.g6.4xlarge", "instanceCount": 1}],
        }
    )
    cluster = ClusterRecord(
        cluster_tag=tag,
        generation=generation,
        status=ClusterStatus.CREATING,
        availability_zone="us-west-2c",
        region="us-west-2",
        request=request,
        created_at=NOW,
        updated_at=NOW,
        current_operation_id=op.operation_id,
    )
    stages = [StageRecord.pending(tag, generation, s, NOW) for s in StageName]
    store.create_cluster(cluster, stages, op, replaces_generation=replaces_generation)
    return op


def test_given_a_new_tag_when_creating_then_the_cluster_its_stages_and_its_operation_read_back_typed(
    store: Store,
) -> None:
    op = new_cluster(store, "demo")

    cluster = store.get_cluster("demo")
    assert cluster is not None and cluster.status is ClusterStatus.CREATING
    assert cluster.request.instance_groups[0].instance_count == 1
    assert [s.name for s in store.get_stages("demo", 1)] == list(StageName)
    assert all(s.status is StageStatus.PENDING for s in store.get_stages("demo", 1))
    read = store.get_operation(op.operation_id)
    assert read is not None and read.status is OperationStatus.PENDING and read.type is OperationType.CREATE_CLUSTER


def test_given_a_live_tag_when_creating_it_again_then_condition_failed_and_nothing_is_written(store: Store) -> None:
    new_cluster(store, "demo")

    with pytest.raises(ConditionFailed):
        new_cluster(store, "demo", replaces_generation=None)
    with pytest.raises(ConditionFailed):
        new_cluster(store, "demo", replaces_generation=1)  # generation 1 is CREATING, not DELETED

    assert store.get_operation("op-demo-2") is None
    cluster = store.get_cluster("demo")
    assert cluster is not None and cluster.generation == 1


def test_given_a_deleted_tag_when_creating_it_again_then_generation_two_replaces_it(store: Store) -> None:
    op = new_cluster(store, "demo")
    store.finish_operation(
        op.operation_id, "demo", status=OperationStatus.SUCCEEDED, cluster_status=ClusterStatus.DELETED, now=NOW
    )

    new_cluster(store, "demo", replaces_generation=1)

    cluster = store.get_cluster("demo")
    assert cluster is not None and (cluster.generation, cluster.status) == (2, ClusterStatus.CREATING)
    assert len(store.get_stages("demo", 2)) == len(StageName)


def test_given_a_pending_stage_when_begun_twice_then_the_second_begin_is_a_condition_failure(store: Store) -> None:
    op = new_cluster(store, "demo")

    first = store.begin_stage("demo", 1, StageName.NETWORK, operation_id=op.operation_id, now=NOW)
    with pytest.raises(ConditionFailed):
        store.begin_stage("demo", 1, StageName.NETWORK, operation_id=op.operation_id, now=NOW)

    assert (first.status, first.attempts, first.operation_id) == (StageStatus.RUNNING, 1, op.operation_id)


def test_given_a_failed_stage_when_begun_again_then_the_attempt_is_counted_and_the_error_cleared(store: Store) -> None:
    op = new_cluster(store, "demo")
    store.begin_stage("demo", 1, StageName.ACCESS, operation_id=op.operation_id, now=NOW)
    failed = store.fail_stage("demo", 1, StageName.ACCESS, error=StageError(code="PollTimeout", message="m"), now=NOW)
    assert failed.error is not None and failed.error.code == "PollTimeout"

    again = store.begin_stage("demo", 1, StageName.ACCESS, operation_id=op.operation_id, now=NOW)

    assert (again.status, again.attempts, again.error, again.operation_id) == (
        StageStatus.RUNNING,
        2,
        None,
        op.operation_id,
    )


def test_given_an_ended_operation_when_finishing_it_again_then_condition_failed_and_the_first_end_stays(
    store: Store,
) -> None:
    op = new_cluster(store, "demo")
    store.finish_operation(
        op.operation_id, "demo", status=OperationStatus.SUCCEEDED, cluster_status=ClusterStatus.READY, now=NOW
    )

    with pytest.raises(ConditionFailed):
        store.finish_operation(
            op.operation_id,
            "demo",
            status=OperationStatus.FAILED,
            cluster_status=ClusterStatus.FAILED,
            now=NOW,
            error=StageError(code="X", message="late"),
        )

    ended = store.get_operation(op.operation_id)
    cluster = store.get_cluster("demo")
    assert ended is not None and ended.status is OperationStatus.SUCCEEDED and ended.error is None
    assert cluster is not None and cluster.status is ClusterStatus.READY


def test_given_a_cluster_that_moved_on_when_starting_an_operation_from_its_old_status_then_condition_failed(
    store: Store,
) -> None:
    new_cluster(store, "demo")  # CREATING
    delete = OperationRecord(
        operation_id="op-delete",
        type=OperationType.DELETE_CLUSTER,
        cluster_tag="demo",
        generation=1,
        created_at=NOW,
        updated_at=NOW,
    )

    with pytest.raises(ConditionFailed):
        store.start_operation(
            delete,
            cluster_status=ClusterStatus.DELETING,
            from_status=ClusterStatus.READY,
            expected_operation_id="op-demo-1",
        )

    assert store.get_operation("op-delete") is None


def test_given_five_clusters_when_paging_by_two_then_tokens_round_trip_to_every_cluster_once_in_tag_order(
    store: Store,
) -> None:
    tags = ["echo", "alpha", "delta", "bravo", "charlie"]
    for tag in tags:
        new_cluster(store, tag)

    seen: list[str] = []
    pages = 0
    token: str | None = None
    while True:
        items, token = store.list_clusters(2, token)
        pages += 1
        assert len(items) <= 2
        seen += [r.cluster_tag for r in items]
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
def test_given_a_tampered_token_when_listing_then_invalid_page_token(store: Store, token: str) -> None:
    new_cluster(store, "alpha")

    with pytest.raises(InvalidPageToken):
        store.list_clusters(2, token)


def test_given_a_token_pointing_into_another_partition_when_listing_then_invalid_page_token_not_an_aws_error(
    store: Store,
) -> None:
    # DynamoDB refuses an ExclusiveStartKey outside the queried partition ("The provided starting key is
    # invalid"); a token edited to point at a cluster's operations must be a 400, never a 500.
    new_cluster(store, "alpha")
    forged = _b64({"PK": "OP#op-1", "SK": "META", "GSI1PK": "CLUSTER#alpha", "GSI1SK": "OP#2026-01-01T00:00:00Z"})

    with pytest.raises(InvalidPageToken):
        store.list_clusters(2, forged)


def test_given_resources_written_by_another_step_when_a_step_merges_its_keys_then_both_survive_without_a_read(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parallel add-on steps record their keys without reading the item, so none can clobber another's."""
    new_cluster(store, "par")
    store.merge_stage_resources("par", 1, StageName.DEPENDENCIES, {"addon:cert-manager": {"status": "ACTIVE"}}, now=NOW)

    def no_read(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("merging must not read the item (a read-modify-write loses parallel writes)")

    monkeypatch.setattr(store._db, "get_item", no_read)
    after = store.merge_stage_resources(
        "par", 1, StageName.DEPENDENCIES, {"addon:metrics-server": {"status": "CREATING"}}, now="t1"
    )
    assert after.resources == {
        "addon:cert-manager": {"status": "ACTIVE"},
        "addon:metrics-server": {"status": "CREATING"},
    }
    assert after.updated_at == "t1"


def _counting(store: Store, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the DynamoDB calls ``store`` makes, by client method."""
    counts: dict[str, int] = {}
    for name in ("get_item", "update_item"):
        real = getattr(store._db, name)

        def counted(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            counts[_name] = counts.get(_name, 0) + 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(store._db, name, counted)
    return counts


def test_given_a_block_reusing_reads_when_a_record_is_read_twice_then_dynamodb_is_read_once_until_a_write(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_cluster(store, "reuse")
    counts = _counting(store, monkeypatch)
    with store.reusing_reads():
        first = store.get_stage("reuse", 1, StageName.NETWORK)
        assert first is not None
        first.resources["vpcId"] = "changed by the caller"  # a caller's change never reaches the reused read
        second = store.get_stage("reuse", 1, StageName.NETWORK)
        assert counts == {"get_item": 1}
        assert second is not None and second.resources == {}
        store.merge_stage_resources("reuse", 1, StageName.NETWORK, {"vpcId": "vpc-1"}, now="t1")
        after = store.get_stage("reuse", 1, StageName.NETWORK)
        assert after is not None and after.resources == {"vpcId": "vpc-1"}, "a write's answer is what is reused"
        assert counts == {"get_item": 1, "update_item": 1}
        store.merge_stage_resources("reuse", 1, StageName.ACCESS, {"accessEntry": "arn"}, now="t1")
        store.get_stage("reuse", 1, StageName.NETWORK)
        assert counts == {"get_item": 2, "update_item": 2}, "a write forgets the records read before it"
    store.get_stage("reuse", 1, StageName.NETWORK)
    store.get_stage("reuse", 1, StageName.NETWORK)
    assert counts["get_item"] == 4, "outside the block every read reaches DynamoDB"


def test_given_another_store_in_the_same_context_when_it_writes_then_the_next_read_of_the_block_sees_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_cluster(store, "other")
    other = Store(store._db, store.table_name)
    with store.reusing_reads():
        assert store.get_stage("other", 1, StageName.STORAGE) is not None
        other.merge_stage_resources("other", 1, StageName.STORAGE, {"bucket": "theirs"}, now="t1")
        stage = store.get_stage("other", 1, StageName.STORAGE)
        assert stage is not None and stage.resources == {"bucket": "theirs"}, "any write of the process forgets"


def test_given_a_stage_that_already_holds_the_values_when_merging_in_a_block_then_nothing_is_written(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_cluster(store, "same")
    store.merge_stage_resources(
        "same",
        1,
        StageName.HYPERPOD,
        {"hyperPodClusterArn": "arn:1", "nodes": {"ready": 2, "ratio": 0.5}},
        now="t1",
        observed_status="Creating",
    )
    counts = _counting(store, monkeypatch)
    with store.reusing_reads():
        assert store.get_stage("same", 1, StageName.HYPERPOD) is not None
        same = store.merge_stage_resources(
            "same",
            1,
            StageName.HYPERPOD,
            {"hyperPodClusterArn": "arn:1", "nodes": {"ready": 2, "ratio": 0.5}, "unset": None},
            now="t2",
            observed_status="Creating",
        )
        assert counts == {"get_item": 1}, "the same values and status: no write"
        assert same.updated_at == "t1" and same.observed_status == "Creating"
        moved = store.merge_stage_resources(
            "same", 1, StageName.HYPERPOD, {"hyperPodClusterArn": "arn:1"}, now="t3", observed_status="InService"
        )
        assert counts == {"get_item": 1, "update_item": 1}
        assert moved.observed_status == "InService" and moved.updated_at == "t3"
    store.merge_stage_resources("same", 1, StageName.HYPERPOD, {"hyperPodClusterArn": "arn:1"}, now="t4")
    assert counts["update_item"] == 2, "outside a block the store cannot know: it writes"
    stage = store.get_stage("same", 1, StageName.HYPERPOD)
    assert stage is not None and stage.updated_at == "t4"
    assert stage.resources["nodes"] == {"ready": 2, "ratio": 0.5}


def test_given_no_stage_record_when_merging_then_condition_failed(store: Store) -> None:
    with pytest.raises(ConditionFailed):
        store.merge_stage_resources("none", 1, StageName.NETWORK, {"vpcId": "vpc-1"}, now=NOW)


def test_given_a_transaction_cancelled_by_a_conflict_when_writing_then_the_aws_error_is_raised_not_condition_failed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB cancels a transaction that meets another one (``TransactionConflict``): nothing was checked, so it
    is not "the record moved on" (which callers drop silently) but the AWS error, for the workflow to record."""
    from botocore.exceptions import ClientError

    op = new_cluster(store, "conflict")
    conflict = ClientError(
        {
            "Error": {
                "Code": "TransactionCanceledException",
                "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
                "[None, TransactionConflict]",
            },
            "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}],
        },
        "TransactWriteItems",
    )

    def refused(**_: Any) -> None:
        raise conflict

    monkeypatch.setattr(store._db, "transact_write_items", refused)
    with pytest.raises(ClientError) as raised:
        store.finish_operation(
            op.operation_id, "conflict", status=OperationStatus.FAILED, cluster_status=ClusterStatus.FAILED, now=NOW
        )
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"

    conflict.response["CancellationReasons"] = [{"Code": "ConditionalCheckFailed"}, {"Code": "None"}]
    with pytest.raises(ConditionFailed):
        store.finish_operation(
            op.operation_id, "conflict", status=OperationStatus.FAILED, cluster_status=ClusterStatus.FAILED, now=NOW
        )
