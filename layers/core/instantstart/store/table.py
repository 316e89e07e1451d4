"""DynamoDB access for the cluster, stage and operation records (single table, keys from :mod:`.keys`).

The store speaks in intents (create a cluster, start an operation, begin a stage, record a stage's
resources, finish an operation, ...) over the typed records of :mod:`instantstart.models.records`.
Every state change is a conditional write on the expected current status, so two writers can never
both win (no lost updates, no double starts); a lost race raises :class:`ConditionFailed`, the store's
own error, which callers map to what it means for them. Calls the DynamoDB ``GetItem``, ``Query``,
``UpdateItem`` and ``TransactWriteItems`` APIs
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Operations_Amazon_DynamoDB.html).
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast, overload

from botocore.exceptions import ClientError

from instantstart.models.cluster import (
    EksView,
    HyperPodView,
    InstanceGroupRequest,
    NodeView,
    StageError,
    StorageView,
)
from instantstart.models.common import ClusterStatus, OperationStatus, StageName, StageStatus
from instantstart.models.features import FeatureOutcome, UpdateFeaturesRequest
from instantstart.models.mlflow import MlflowConnection
from instantstart.models.operation import OperationProgress
from instantstart.models.records import ClusterRecord, OperationRecord, StageRecord
from instantstart.store import keys

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]


@lru_cache(maxsize=1)
def _serializer() -> TypeSerializer:
    # boto3 (its package, the whole SDK) is imported by the first record written or read, not with this module.
    from boto3.dynamodb.types import TypeSerializer

    return TypeSerializer()


@lru_cache(maxsize=1)
def _deserializer() -> TypeDeserializer:
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


_UNSET: Any = object()


class StoreError(Exception):
    """Base of the store's errors (never HTTP-flavoured: callers decide what a lost race means)."""


class ConditionFailed(StoreError):
    """A conditional write found the item missing or in another state than expected; nothing was written."""


def condition_failed(exc: ClientError) -> bool:
    """Whether a cancelled ``TransactWriteItems`` failed on one of its conditions.

    DynamoDB cancels a transaction for several reasons, one ``CancellationReasons`` entry per item:
    ``ConditionalCheckFailed`` (an item is not in the expected state: :class:`ConditionFailed`), but also
    ``TransactionConflict`` (another transaction or write holds an item), ``ThrottlingError``,
    ``ProvisionedThroughputExceeded`` or ``ValidationError``. Only the first is a condition; the others leave the
    ``TransactionCanceledException`` as it is, code and message verbatim, so it is retried or recorded, never
    read as "the record moved on". An answer without reasons is read as a condition failure.
    """
    reasons = exc.response.get("CancellationReasons") or []
    codes = {str(r.get("Code")) for r in reasons if isinstance(r, dict)}
    return not codes or "ConditionalCheckFailed" in codes


class InvalidPageToken(StoreError):
    """A pagination token that this store did not issue (edited, truncated or from another listing)."""


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [_plain(v) for v in value]
    return value


def _dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _dynamo(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_dynamo(v) for v in value]
    return value


def _holds(item: Item, resources: Mapping[str, Any], observed_status: str | None) -> bool:
    """Whether a stage ``item`` (as read) already has each non-None value of ``resources`` in its ``resources`` map
    and, when given, ``observed_status``: writing them would change nothing but ``updatedAt``."""
    stored = item.get("resources")
    if not isinstance(stored, dict):
        return False
    if observed_status is not None and item.get("observedStatus") != observed_status:
        return False
    return all(value is None or stored.get(key) == _plain(_dynamo(value)) for key, value in resources.items())


def serialize(item: Mapping[str, Any]) -> dict[str, Any]:
    """A plain dict as a DynamoDB attribute map (``None`` values dropped, floats as Decimal)."""
    return {k: _serializer().serialize(_dynamo(v)) for k, v in item.items() if v is not None}


def deserialize(item: Mapping[str, Any]) -> Item:
    """A DynamoDB attribute map as a plain dict (whole Decimals as int)."""
    return {k: _plain(_deserializer().deserialize(v)) for k, v in item.items()}


def encode_token(key: Mapping[str, Any] | None) -> str | None:
    """An opaque pagination token for a DynamoDB ``LastEvaluatedKey`` (None when there is no more)."""
    if not key:
        return None
    raw = json.dumps(deserialize(key), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str | None, allowed_keys: set[str]) -> dict[str, Any] | None:
    """Decode a token from :func:`encode_token` into a DynamoDB start key (None for no token).

    Raises:
        InvalidPageToken: the token is not one this store issued.
    """
    if not token:
        return None
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidPageToken("not a token issued by this store") from exc
    if not isinstance(data, dict) or set(data) != allowed_keys or not all(isinstance(v, str) for v in data.values()):
        raise InvalidPageToken("not a token issued by this store")
    return serialize(data)


@dataclass
class _Write:
    """One conditional write: ``SET`` ``updates`` / ``REMOVE`` ``removes`` under ``condition``."""

    pk: str
    sk: str
    updates: Mapping[str, Any]
    removes: Iterable[str] = ()
    expected_status: Sequence[str] | None = None
    equals: Mapping[str, Any] = field(default_factory=dict)
    """Further conditions: attribute == value."""

    def request(self, table: str) -> dict[str, Any]:
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        sets = []
        for i, (name, value) in enumerate(self.updates.items()):
            names[f"#u{i}"] = name
            values[f":u{i}"] = _serializer().serialize(_dynamo(value))
            sets.append(f"#u{i} = :u{i}")
        rems = []
        for j, name in enumerate(self.removes):
            names[f"#r{j}"] = name
            rems.append(f"#r{j}")
        expr = ("SET " + ", ".join(sets) if sets else "") + (" REMOVE " + ", ".join(rems) if rems else "")
        conditions = ["attribute_exists(PK)"]
        if self.expected_status:
            names["#cstatus"] = "status"
            placeholders = []
            for i, status in enumerate(self.expected_status):
                values[f":c{i}"] = {"S": status}
                placeholders.append(f":c{i}")
            conditions.append(f"#cstatus IN ({', '.join(placeholders)})")
        for i, (name, value) in enumerate(self.equals.items()):
            names[f"#e{i}"] = name
            values[f":e{i}"] = _serializer().serialize(_dynamo(value))
            conditions.append(f"#e{i} = :e{i}")
        out: dict[str, Any] = {
            "TableName": table,
            "Key": serialize({"PK": self.pk, "SK": self.sk}),
            "UpdateExpression": expr.strip(),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
        }
        if values:
            out["ExpressionAttributeValues"] = values
        return out


@dataclass
class _Put:
    """One conditional put of a whole item (by default: only if no item has its key)."""

    item: Item
    condition: str = "attribute_not_exists(PK)"
    names: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)

    def request(self, table: str) -> dict[str, Any]:
        out: dict[str, Any] = {"TableName": table, "Item": serialize(self.item), "ConditionExpression": self.condition}
        if self.names:
            out["ExpressionAttributeNames"] = dict(self.names)
        if self.values:
            out["ExpressionAttributeValues"] = serialize(self.values)
        return out


@dataclass
class _Check:
    """One condition of a transaction on an item it does not write: its ``status`` is one of ``expected_status``."""

    pk: str
    sk: str
    expected_status: Sequence[str]

    def request(self, table: str) -> dict[str, Any]:
        placeholders = {f":c{i}": {"S": status} for i, status in enumerate(self.expected_status)}
        return {
            "TableName": table,
            "Key": serialize({"PK": self.pk, "SK": self.sk}),
            "ConditionExpression": f"#cstatus IN ({', '.join(placeholders)})",
            "ExpressionAttributeNames": {"#cstatus": "status"},
            "ExpressionAttributeValues": placeholders,
        }


RETRYABLE_STAGE = (StageStatus.FAILED, StageStatus.CANCELLED)
"""Stage statuses a retry (and a new attempt of the stage) may start from."""

LIVE_OPERATION = (OperationStatus.PENDING.value, OperationStatus.RUNNING.value)
"""Operation statuses in which its workflow may still change records."""

OPERATING_CLUSTER = (ClusterStatus.CREATING, ClusterStatus.DELETING, ClusterStatus.READY, ClusterStatus.DEGRADED)
"""Cluster statuses while an operation runs: CREATING/DELETING for a create, retry or delete; a day-2 change of an
instance group leaves a READY or DEGRADED cluster as it is (it stays usable)."""


RUNNING = StageStatus.RUNNING.value
"""The status of a stage or an operation whose waits may hold task tokens (the same word for both)."""


@dataclass(frozen=True)
class WaitHolder:
    """The record that holds the task tokens and rounds of event-or-poll waits: a stage, or an operation.

    The create and delete workflows wait on their stage's record; a day-2 operation (one group change,
    no stages) waits on its own operation record. Both have ``status`` (RUNNING while waits may hold)
    and the ``waits`` / ``waitRounds`` / ``waitsSatisfied`` maps.
    """

    pk: str
    sk: str
    what: str

    @classmethod
    def stage(cls, tag: str, generation: int, stage: StageName) -> WaitHolder:
        """The waits of ``stage`` of the cluster's generation."""
        return cls(keys.cluster_pk(tag), keys.stage_sk(generation, stage), f"stage {stage.value} of {tag}")

    @classmethod
    def operation(cls, operation_id: str) -> WaitHolder:
        """The waits of a day-2 operation (its own record)."""
        return cls(keys.operation_pk(operation_id), keys.META, f"operation {operation_id}")


def _cluster_item(record: ClusterRecord) -> Item:
    return {
        "PK": keys.cluster_pk(record.cluster_tag),
        "SK": keys.META,
        "GSI1PK": keys.CLUSTERS_INDEX_PK,
        "GSI1SK": keys.cluster_index_sk(record.cluster_tag),
        **record.to_item(),
    }


def _stage_item(record: StageRecord) -> Item:
    return {
        "PK": keys.cluster_pk(record.cluster_tag),
        "SK": keys.stage_sk(record.generation, record.name),
        **record.to_item(),
    }


def _operation_item(record: OperationRecord) -> Item:
    return {
        "PK": keys.operation_pk(record.operation_id),
        "SK": keys.META,
        "GSI1PK": keys.cluster_pk(record.cluster_tag),
        "GSI1SK": keys.operation_index_sk(record.created_at, record.operation_id),
        **record.to_item(),
    }


_REUSED: ContextVar[dict[tuple[str, str], Item | None] | None] = ContextVar("store_reused_reads", default=None)
"""The items read in the current :meth:`Store.reusing_reads` block, by (PK, SK); None outside one."""

_READ_OPERATIONS = frozenset({"get_item", "query", "scan", "batch_get_item", "transact_get_items"})
"""DynamoDB client methods that change nothing; any other call forgets the reused reads."""


def _forget_reads() -> None:
    reused = _REUSED.get()
    if reused:
        reused.clear()


class _ForgettingClient:
    """The DynamoDB client, forgetting the reads of the current :meth:`Store.reusing_reads` block before and after
    every call that is not a read (a failed conditional write included: the caller will want to read again)."""

    def __init__(self, client: DynamoDBClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name in _READ_OPERATIONS or name.startswith("_") or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            _forget_reads()
            try:
                return attr(*args, **kwargs)
            finally:
                _forget_reads()

        return call


class Store:
    """Repository of the control plane's records in one DynamoDB table.

    Args:
        client: a boto3 DynamoDB client.
        table_name: the table (template resource ``Table``).
    """

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._db = cast("DynamoDBClient", _ForgettingClient(client))
        self.table_name = table_name

    @contextmanager
    def reusing_reads(self) -> Iterator[None]:
        """Within the block (this thread or task only), a record read once is served from memory until the store
        writes anything; the first write forgets every record read so far.

        For a short unit of work that reads the same record several times without writing in between (one round
        of a wait: is the wait satisfied, then the check reads the stage record again). A reused read is as fresh
        as the first read of the block, so a loop that waits for another writer must not run inside one. Nested
        blocks share the outer block's reads.
        """
        if _REUSED.get() is not None:
            yield
            return
        token = _REUSED.set({})
        try:
            yield
        finally:
            _REUSED.reset(token)

    # -- low level ---------------------------------------------------------------------------
    def _get(self, pk: str, sk: str = keys.META) -> Item | None:
        reused = _REUSED.get()
        if reused is not None and (pk, sk) in reused:
            return copy.deepcopy(reused[(pk, sk)])
        out = self._db.get_item(TableName=self.table_name, Key=serialize({"PK": pk, "SK": sk}), ConsistentRead=True)
        return self._remember(pk, sk, deserialize(out["Item"]) if "Item" in out else None)

    @overload
    def _remember(self, pk: str, sk: str, item: Item) -> Item: ...
    @overload
    def _remember(self, pk: str, sk: str, item: None) -> None: ...
    def _remember(self, pk: str, sk: str, item: Item | None) -> Item | None:
        """Keep ``item`` (as read, or as a write's ``ALL_NEW`` answer left it; None: it does not exist) for the reads
        of the current :meth:`reusing_reads` block; returns ``item``."""
        reused = _REUSED.get()
        if reused is not None:
            reused[(pk, sk)] = copy.deepcopy(item)
        return item

    def _reused(self, pk: str, sk: str) -> Item | None:
        """The item read earlier in the current :meth:`reusing_reads` block, or None (not read, or outside one)."""
        reused = _REUSED.get()
        return reused.get((pk, sk)) if reused is not None else None

    def _update(self, write: _Write) -> Item:
        try:
            out = self._db.update_item(**write.request(self.table_name), ReturnValues="ALL_NEW")
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"{write.pk}/{write.sk}: not in the expected state") from exc
            raise
        return self._remember(write.pk, write.sk, deserialize(out["Attributes"]))

    def _transact(self, puts: Sequence[_Put], updates: Sequence[_Write] = (), checks: Sequence[_Check] = ()) -> None:
        items: list[dict[str, Any]] = [{"Put": p.request(self.table_name)} for p in puts]
        items += [{"Update": w.request(self.table_name)} for w in updates]
        items += [{"ConditionCheck": c.request(self.table_name)} for c in checks]
        try:
            self._db.transact_write_items(TransactItems=cast(Any, items))
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException" and condition_failed(exc):
                raise ConditionFailed("a condition of the transaction failed; nothing was written") from exc
            raise

    # -- reads -------------------------------------------------------------------------------
    def get_cluster(self, tag: str) -> ClusterRecord | None:
        """The cluster record of ``tag`` (any generation, any status) or None."""
        item = self._get(keys.cluster_pk(tag))
        return ClusterRecord.model_validate(item) if item else None

    def get_operation(self, operation_id: str) -> OperationRecord | None:
        """The operation record or None."""
        item = self._get(keys.operation_pk(operation_id))
        return OperationRecord.model_validate(item) if item else None

    def get_stage(self, tag: str, generation: int, stage: StageName) -> StageRecord | None:
        """One stage record of one generation or None."""
        item = self._get(keys.cluster_pk(tag), keys.stage_sk(generation, stage))
        return StageRecord.model_validate(item) if item else None

    def get_stages(self, tag: str, generation: int) -> list[StageRecord]:
        """Every stage record of a generation, in stage order."""
        out = self._db.query(
            TableName=self.table_name,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :prefix)",
            ExpressionAttributeValues=serialize(
                {":pk": keys.cluster_pk(tag), ":prefix": keys.stage_prefix(generation)}
            ),
            ConsistentRead=True,
        )
        return [StageRecord.model_validate(deserialize(i)) for i in out.get("Items", [])]

    def list_clusters(self, limit: int, next_token: str | None) -> tuple[list[ClusterRecord], str | None]:
        """A page of cluster records ordered by tag, and the token of the next page (or None).

        Raises:
            InvalidPageToken: ``next_token`` was not issued by this store.
        """
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": keys.GSI1,
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": serialize({":pk": keys.CLUSTERS_INDEX_PK}),
            "Limit": limit,
        }
        start = decode_token(next_token, {"PK", "SK", "GSI1PK", "GSI1SK"})
        if start:
            # DynamoDB rejects a start key outside the queried partition (a 500 for an edited token).
            plain = deserialize(start)
            if plain["GSI1PK"] != keys.CLUSTERS_INDEX_PK or plain["SK"] != keys.META or plain["PK"] != plain["GSI1SK"]:
                raise InvalidPageToken("the token points outside the cluster listing")
            kwargs["ExclusiveStartKey"] = start
        out = self._db.query(**kwargs)
        records = [ClusterRecord.model_validate(deserialize(i)) for i in out.get("Items", [])]
        return records, encode_token(out.get("LastEvaluatedKey"))

    def list_operations(self, tag: str, limit: int, next_token: str | None) -> tuple[list[OperationRecord], str | None]:
        """A page of the operations on cluster ``tag`` (every generation), newest first, and the next token.

        Queries GSI1 (``CLUSTER#<tag>`` / ``OP#<createdAt>``) backwards.

        Raises:
            InvalidPageToken: ``next_token`` was not issued by this store for this cluster's listing.
        """
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": keys.GSI1,
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": serialize({":pk": keys.cluster_pk(tag)}),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        start = decode_token(next_token, {"PK", "SK", "GSI1PK", "GSI1SK"})
        if start:
            plain = deserialize(start)
            if (
                plain["GSI1PK"] != keys.cluster_pk(tag)
                or plain["SK"] != keys.META
                or not plain["PK"].startswith(keys.operation_pk(""))
                or not plain["GSI1SK"].startswith(keys.OPERATION_INDEX_PREFIX)
            ):
                raise InvalidPageToken("the token points outside this cluster's operations")
            kwargs["ExclusiveStartKey"] = start
        out = self._db.query(**kwargs)
        records = [OperationRecord.model_validate(deserialize(i)) for i in out.get("Items", [])]
        return records, encode_token(out.get("LastEvaluatedKey"))

    # -- operations --------------------------------------------------------------------------
    def create_cluster(
        self,
        cluster: ClusterRecord,
        stages: Sequence[StageRecord],
        operation: OperationRecord,
        *,
        replaces_generation: int | None,
    ) -> None:
        """Write a new cluster generation, its PENDING stages and its PENDING operation, all or nothing.

        ``replaces_generation`` is the generation of the DELETED record this one replaces (None for a
        tag never used): the write is conditional on that record still being DELETED at that generation.

        Raises:
            ConditionFailed: the tag has a live record (or a concurrent create won); nothing was written.
        """
        put = _Put(_cluster_item(cluster))
        if replaces_generation is not None:
            # Overwrite the DELETED record of the previous generation, only if it is still that record.
            put = _Put(
                put.item,
                "#s = :deleted AND #gen = :gen",
                {"#s": "status", "#gen": "generation"},
                {":deleted": ClusterStatus.DELETED.value, ":gen": replaces_generation},
            )
        self._transact([put, _Put(_operation_item(operation)), *(_Put(_stage_item(s)) for s in stages)])

    def start_operation(
        self,
        operation: OperationRecord,
        *,
        cluster_status: ClusterStatus,
        from_status: ClusterStatus,
        retry_stage: StageName | None = None,
    ) -> None:
        """Write a PENDING operation on an existing cluster and make it the cluster's current one.

        The cluster moves ``from_status`` -> ``cluster_status`` (conditional on both the status and the
        operation's generation); for a retry, ``retry_stage`` must still be FAILED or CANCELLED.

        Raises:
            ConditionFailed: the cluster or the stage changed since it was read; nothing was written.
        """
        tag, generation, now = operation.cluster_tag, operation.generation, operation.created_at
        updates = [
            _Write(
                keys.cluster_pk(tag),
                keys.META,
                {"status": cluster_status.value, "currentOperationId": operation.operation_id, "updatedAt": now},
                expected_status=[from_status.value],
                equals={"generation": generation},
            )
        ]
        if retry_stage is not None:
            updates.append(
                _Write(
                    keys.cluster_pk(tag),
                    keys.stage_sk(generation, retry_stage),
                    {"retryRequestedAt": now},
                    expected_status=[s.value for s in RETRYABLE_STAGE],
                )
            )
        self._transact([_Put(_operation_item(operation))], updates)

    def abandon_operation(
        self,
        operation: OperationRecord,
        *,
        error: StageError,
        now: str,
        cluster_status: ClusterStatus,
        current_operation_id: str | None,
        expected_cluster_status: ClusterStatus,
    ) -> None:
        """Undo a start whose execution never ran: the operation FAILED with ``error``, the cluster back.

        The cluster returns to ``cluster_status`` with ``current_operation_id`` (the values before the start).

        Raises:
            ConditionFailed: the records moved on meanwhile; nothing was written.
        """
        self._transact(
            [],
            [
                _Write(
                    keys.operation_pk(operation.operation_id),
                    keys.META,
                    {
                        "status": OperationStatus.FAILED.value,
                        "updatedAt": now,
                        "endedAt": now,
                        "error": error.model_dump(mode="json"),
                    },
                    expected_status=[OperationStatus.PENDING.value],
                ),
                _Write(
                    keys.cluster_pk(operation.cluster_tag),
                    keys.META,
                    {"status": cluster_status.value, "updatedAt": now}
                    | ({"currentOperationId": current_operation_id} if current_operation_id else {}),
                    removes=[] if current_operation_id else ["currentOperationId"],
                    expected_status=[expected_cluster_status.value],
                ),
            ],
        )

    def record_execution_arn(self, operation_id: str, execution_arn: str) -> OperationRecord:
        """Note the ARN of the operation's Step Functions execution.

        Raises:
            ConditionFailed: the operation does not exist.
        """
        item = self._update(_Write(keys.operation_pk(operation_id), keys.META, {"executionArn": execution_arn}))
        return OperationRecord.model_validate(item)

    def record_operation_result(self, operation_id: str, result: OperationProgress, now: str) -> OperationRecord:
        """Replace the ``result`` of a PENDING or RUNNING day-2 operation (what its steps recorded of AWS's answers).

        Raises:
            ConditionFailed: the operation does not exist or already ended.
        """
        item = self._update(
            _Write(
                keys.operation_pk(operation_id),
                keys.META,
                {"result": result.model_dump(mode="json", by_alias=True, exclude_none=True), "updatedAt": now},
                expected_status=[OperationStatus.PENDING.value, OperationStatus.RUNNING.value],
            )
        )
        return OperationRecord.model_validate(item)

    def mark_operation_running(self, operation_id: str, now: str) -> OperationRecord:
        """PENDING -> RUNNING for the operation.

        Raises:
            ConditionFailed: the operation is not PENDING (already running or ended).
        """
        item = self._update(
            _Write(
                keys.operation_pk(operation_id),
                keys.META,
                {"status": OperationStatus.RUNNING.value, "startedAt": now, "updatedAt": now},
                expected_status=[OperationStatus.PENDING.value],
            )
        )
        return OperationRecord.model_validate(item)

    def record_feature_results(
        self, operation_id: str, results: Mapping[str, FeatureOutcome], now: str
    ) -> OperationRecord:
        """Store each feature's outcome on an UPDATE_FEATURES operation (``featureResults``, the whole map: only the
        operation's own steps write it, one at a time).

        Raises:
            ConditionFailed: the operation does not exist.
        """
        item = self._update(
            _Write(
                keys.operation_pk(operation_id),
                keys.META,
                {
                    "featureResults": {
                        k: v.model_dump(mode="json", by_alias=True, exclude_none=True) for k, v in results.items()
                    },
                    "updatedAt": now,
                },
            )
        )
        return OperationRecord.model_validate(item)

    def record_desired_features(self, tag: str, desired: UpdateFeaturesRequest, now: str) -> ClusterRecord:
        """Store what PATCH /features applied, by feature key (``desiredFeatures``, the whole map; written by the
        cluster's one running operation).

        Raises:
            ConditionFailed: the cluster record does not exist.
        """
        item = self._update(
            _Write(keys.cluster_pk(tag), keys.META, {"desiredFeatures": desired.wire(), "updatedAt": now})
        )
        return ClusterRecord.model_validate(item)

    def record_mlflow(self, tag: str, connection: MlflowConnection | None, now: str) -> ClusterRecord:
        """Store the cluster's MLflow connection (``mlflow``, whole; None removes it), written by the cluster's one
        running ``UPDATE_MLFLOW`` operation.

        Raises:
            ConditionFailed: the cluster record does not exist.
        """
        if connection is None:
            write = _Write(keys.cluster_pk(tag), keys.META, {"updatedAt": now}, removes=("mlflow",))
        else:
            write = _Write(
                keys.cluster_pk(tag),
                keys.META,
                {"mlflow": connection.model_dump(mode="json", by_alias=True, exclude_none=True), "updatedAt": now},
            )
        item = self._update(write)
        return ClusterRecord.model_validate(item)

    def finish_operation(
        self,
        operation_id: str,
        tag: str,
        *,
        status: OperationStatus,
        cluster_status: ClusterStatus,
        now: str,
        error: StageError | None = None,
    ) -> OperationRecord:
        """End a PENDING/RUNNING operation with ``status`` and move its cluster to ``cluster_status``, atomically.

        The cluster write is conditional on the operation still being the cluster's current one.

        Raises:
            ConditionFailed: the operation already ended, or the cluster moved on to another operation.
        """
        op_updates: dict[str, Any] = {"status": status.value, "endedAt": now, "updatedAt": now}
        if error is not None:
            op_updates["error"] = error.model_dump(mode="json")
        self._transact(
            [],
            [
                _Write(
                    keys.operation_pk(operation_id),
                    keys.META,
                    op_updates,
                    expected_status=[OperationStatus.PENDING.value, OperationStatus.RUNNING.value],
                ),
                _Write(
                    keys.cluster_pk(tag),
                    keys.META,
                    {"status": cluster_status.value, "updatedAt": now},
                    expected_status=[s.value for s in OPERATING_CLUSTER],
                    equals={"currentOperationId": operation_id},
                ),
            ],
        )
        op = self.get_operation(operation_id)
        assert op is not None  # written just above
        return op

    # -- stages ------------------------------------------------------------------------------
    def begin_stage(self, tag: str, generation: int, stage: StageName, *, operation_id: str, now: str) -> StageRecord:
        """PENDING/FAILED/CANCELLED -> RUNNING for ``stage``, counting the attempt and noting the operation.

        Conditional on the operation still being PENDING or RUNNING (one transaction), so a step of a
        cancelled operation that Step Functions had already invoked cannot start a stage after the cancel.

        Raises:
            ConditionFailed: the stage is in another status (e.g. already RUNNING), or the operation ended.
        """
        current = self.get_stage(tag, generation, stage)
        self._transact(
            [],
            [
                _Write(
                    keys.cluster_pk(tag),
                    keys.stage_sk(generation, stage),
                    {
                        "status": StageStatus.RUNNING.value,
                        "attempts": (current.attempts if current else 0) + 1,
                        "startedAt": now,
                        "updatedAt": now,
                        "operationId": operation_id,
                        "waits": {},
                        "waitRounds": {},
                        "waitsSatisfied": {},
                    },
                    removes=["error", "endedAt"],
                    expected_status=[StageStatus.PENDING.value, *(s.value for s in RETRYABLE_STAGE)],
                )
            ],
            [_Check(keys.operation_pk(operation_id), keys.META, LIVE_OPERATION)],
        )
        record = self.get_stage(tag, generation, stage)
        assert record is not None  # written just above
        return record

    def complete_stage(
        self, tag: str, generation: int, stage: StageName, *, now: str, observed_status: str | None = None
    ) -> StageRecord:
        """RUNNING -> SUCCEEDED for ``stage`` (its task token, if any, is dropped).

        Raises:
            ConditionFailed: the stage is not RUNNING.
        """
        updates: dict[str, Any] = {"status": StageStatus.SUCCEEDED.value, "endedAt": now, "updatedAt": now}
        if observed_status is not None:
            updates["observedStatus"] = observed_status
        item = self._update(
            _Write(
                keys.cluster_pk(tag),
                keys.stage_sk(generation, stage),
                updates,
                expected_status=[StageStatus.RUNNING.value],
            )
        )
        return StageRecord.model_validate(item)

    def fail_stage(
        self,
        tag: str,
        generation: int,
        stage: StageName,
        *,
        error: StageError,
        now: str,
        from_statuses: Sequence[StageStatus] = (StageStatus.RUNNING, StageStatus.PENDING),
        operation_id: str | None = None,
    ) -> StageRecord:
        """``from_statuses`` -> FAILED for ``stage`` with ``error`` verbatim (its task token dropped).

        With ``operation_id``, only while that operation is the one running the stage.

        Raises:
            ConditionFailed: the stage is in another status (or run by another operation).
        """
        item = self._update(
            _Write(
                keys.cluster_pk(tag),
                keys.stage_sk(generation, stage),
                {
                    "status": StageStatus.FAILED.value,
                    "error": error.model_dump(mode="json"),
                    "endedAt": now,
                    "updatedAt": now,
                },
                expected_status=[s.value for s in from_statuses],
                equals={"operationId": operation_id} if operation_id else {},
            )
        )
        return StageRecord.model_validate(item)

    def cancel_stage(
        self, tag: str, generation: int, stage: StageName, *, operation_id: str, error: StageError, now: str
    ) -> StageRecord:
        """RUNNING -> CANCELLED for ``stage`` while ``operation_id`` runs it (its task tokens dropped).

        Raises:
            ConditionFailed: the stage is not RUNNING, or is run by another operation.
        """
        item = self._update(
            _Write(
                keys.cluster_pk(tag),
                keys.stage_sk(generation, stage),
                {
                    "status": StageStatus.CANCELLED.value,
                    "error": error.model_dump(mode="json"),
                    "endedAt": now,
                    "updatedAt": now,
                    "waits": {},
                },
                expected_status=[StageStatus.RUNNING.value],
                equals={"operationId": operation_id},
            )
        )
        return StageRecord.model_validate(item)

    def merge_stage_resources(
        self,
        tag: str,
        generation: int,
        stage: StageName,
        resources: Mapping[str, Any],
        *,
        now: str,
        observed_status: str | None = None,
    ) -> StageRecord:
        """Set ``resources`` as keys of the stage's ``resources`` map (other keys untouched).

        Each key is its own ``SET #map.#key`` clause, so parallel steps of one stage (add-ons,
        Kubernetes objects) never lose each other's writes, as a read-modify-write of the map would.
        Inside :meth:`reusing_reads`, when the stage record read there already holds every value and the
        observed status, nothing is written (``updatedAt`` is when the stage last changed, not last checked).

        Raises:
            ConditionFailed: the stage record (or its map) does not exist.
        """
        item_key = {"PK": keys.cluster_pk(tag), "SK": keys.stage_sk(generation, stage)}
        current = self._reused(item_key["PK"], item_key["SK"])
        if current is not None and _holds(current, resources, observed_status):
            return StageRecord.model_validate(copy.deepcopy(current))
        names: dict[str, str] = {"#map": "resources", "#ua": "updatedAt"}
        values: dict[str, Any] = {":ua": _serializer().serialize(now)}
        clauses = ["#ua = :ua"]
        for i, (key, value) in enumerate(resources.items()):
            if value is None:
                continue
            names[f"#k{i}"] = key
            values[f":k{i}"] = _serializer().serialize(_dynamo(value))
            clauses.append(f"#map.#k{i} = :k{i}")
        if observed_status is not None:
            names["#os"] = "observedStatus"
            values[":os"] = _serializer().serialize(observed_status)
            clauses.append("#os = :os")
        try:
            out = self._db.update_item(
                TableName=self.table_name,
                Key=serialize(item_key),
                UpdateExpression="SET " + ", ".join(clauses),
                ConditionExpression="attribute_exists(#map)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"stage {stage.value} of {tag} has no resources map") from exc
            raise
        return StageRecord.model_validate(
            self._remember(item_key["PK"], item_key["SK"], deserialize(out["Attributes"]))
        )

    def start_wait_round(self, holder: WaitHolder, wait: str, task_token: str) -> int:
        """Store the task token of ``holder``'s ``wait`` for this round; the number of rounds that timed out.

        One key of the record's ``waits`` map (parallel waits of a stage never overwrite each other). A
        token still stored when the next round starts was not consumed by :meth:`consume_wait_token`
        (no event woke it): that round timed out, so ``waitRounds.<wait>`` grows by one. Woken rounds
        are not counted, so a burst of events never exhausts a wait's time budget.

        Raises:
            ConditionFailed: the holder (stage or operation) is not RUNNING.
        """
        key = serialize({"PK": holder.pk, "SK": holder.sk})
        try:
            out = self._db.update_item(
                TableName=self.table_name,
                Key=key,
                UpdateExpression="SET #waits.#w = :t, #rounds = if_not_exists(#rounds, :empty)",
                ConditionExpression="attribute_exists(#waits) AND #s = :running",
                ExpressionAttributeNames={"#waits": "waits", "#w": wait, "#s": "status", "#rounds": "waitRounds"},
                ExpressionAttributeValues=serialize({":t": task_token, ":running": RUNNING, ":empty": {}}),
                ReturnValues="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"{holder.what} is not RUNNING") from exc
            raise
        old = deserialize(out.get("Attributes", {}))
        rounds = int((old.get("waitRounds") or {}).get(wait, 0))
        if not (old.get("waits") or {}).get(wait):
            return rounds
        out = self._db.update_item(
            TableName=self.table_name,
            Key=key,
            UpdateExpression="SET #rounds.#w = if_not_exists(#rounds.#w, :zero) + :one",
            ExpressionAttributeNames={"#rounds": "waitRounds", "#w": wait},
            ExpressionAttributeValues=serialize({":zero": 0, ":one": 1}),
            ReturnValues="UPDATED_NEW",
        )
        return int(deserialize(out["Attributes"])["waitRounds"][wait])

    def end_wait(self, holder: WaitHolder, wait: str) -> None:
        """Forget ``holder``'s ``wait`` (its token and rounds): the wait is over, a later one starts afresh."""
        with suppress(ClientError):  # the holder moved on: nothing to forget
            self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": holder.pk, "SK": holder.sk}),
                UpdateExpression="REMOVE #waits.#w, #rounds.#w",
                ConditionExpression="attribute_exists(#waits) AND attribute_exists(#rounds)",
                ExpressionAttributeNames={"#waits": "waits", "#rounds": "waitRounds", "#w": wait},
            )

    def mark_wait_satisfied(self, holder: WaitHolder, wait: str, check: str) -> None:
        """Record that ``check`` found ``holder``'s ``wait`` satisfied (its answer reached a timed-out task)."""
        with suppress(ClientError):  # the holder moved on: nobody waits any more
            self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": holder.pk, "SK": holder.sk}),
                UpdateExpression="SET #sat = if_not_exists(#sat, :empty)",
                ConditionExpression="#s = :running",
                ExpressionAttributeNames={"#sat": "waitsSatisfied", "#s": "status"},
                ExpressionAttributeValues=serialize({":empty": {}, ":running": RUNNING}),
            )
            self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": holder.pk, "SK": holder.sk}),
                UpdateExpression="SET #sat.#w = :check",
                ConditionExpression="#s = :running",
                ExpressionAttributeNames={"#sat": "waitsSatisfied", "#w": wait, "#s": "status"},
                ExpressionAttributeValues=serialize({":check": check, ":running": RUNNING}),
            )

    def wait_satisfied(self, holder: WaitHolder, wait: str, check: str) -> bool:
        """Whether ``check`` already found ``holder``'s ``wait`` satisfied (:meth:`mark_wait_satisfied`)."""
        item = self._get(holder.pk, holder.sk) or {}
        return (item.get("waitsSatisfied") or {}).get(wait) == check

    def consume_wait_token(self, holder: WaitHolder, wait: str) -> str | None:
        """Take the stored task token of the RUNNING ``holder``'s ``wait`` (an event is about to send it), or None.

        Conditional on the token being the one read, so two events never both take it.
        """
        item = self._get(holder.pk, holder.sk)
        if item is None or item.get("status") != RUNNING:
            return None
        token = (item.get("waits") or {}).get(wait)
        if not token:
            return None
        try:
            self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": holder.pk, "SK": holder.sk}),
                UpdateExpression="REMOVE #waits.#w",
                ConditionExpression="#waits.#w = :t AND #s = :running",
                ExpressionAttributeNames={"#waits": "waits", "#w": wait, "#s": "status"},
                ExpressionAttributeValues=serialize({":t": token, ":running": RUNNING}),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise
        return str(token)

    def set_teardown_status(self, tag: str, generation: int, stage: StageName, status: StageStatus, now: str) -> None:
        """Record teardown progress of a stage (``teardownStatus`` RUNNING or SUCCEEDED, with its timestamp).

        Raises:
            ConditionFailed: the stage record does not exist.
        """
        stamp = "teardownStartedAt" if status is StageStatus.RUNNING else "teardownEndedAt"
        self._update(
            _Write(
                keys.cluster_pk(tag),
                keys.stage_sk(generation, stage),
                {"teardownStatus": status.value, stamp: now, "updatedAt": now},
            )
        )

    # -- observations on the cluster record --------------------------------------------------
    def record_observations(
        self,
        tag: str,
        *,
        now: str,
        eks: EksView | None = _UNSET,
        hyper_pod: HyperPodView | None = _UNSET,
        nodes: Sequence[NodeView] = _UNSET,
        storage: StorageView | None = _UNSET,
        if_updated_at: str | None = None,
    ) -> ClusterRecord:
        """Record what a stage or an event observed on the cluster record (only the views passed).

        A view passed as None is removed. With ``if_updated_at``, the write is conditional on the record
        not having changed since it was read (for read-modify-write of ``nodes``).

        Raises:
            ConditionFailed: the record does not exist, or changed since ``if_updated_at``.
        """
        updates: dict[str, Any] = {"updatedAt": now}
        removes: list[str] = []
        for attribute, view in (("eks", eks), ("hyperPod", hyper_pod), ("storage", storage)):
            if view is _UNSET:
                continue
            if view is None:
                removes.append(attribute)
                if attribute == "hyperPod":
                    removes.extend(["hyperPodObservedAt", "hyperPodPolledAt"])
            else:
                updates[attribute] = view.model_dump(mode="json", by_alias=True, exclude_none=True)
        if nodes is not _UNSET:
            updates["nodes"] = [n.model_dump(mode="json", by_alias=True, exclude_none=True) for n in nodes]
        equals = {"updatedAt": if_updated_at} if if_updated_at is not None else {}
        item = self._update(_Write(keys.cluster_pk(tag), keys.META, updates, removes=removes, equals=equals))
        return ClusterRecord.model_validate(item)

    def record_hyperpod_observation(
        self, tag: str, view: HyperPodView, *, now: str, event_time: str | None = None
    ) -> bool:
        """Record the HyperPod cluster as a poll (``event_time`` None) or an event observed it.

        Events arrive late and out of order, and their ``time`` has one-second resolution. An event is
        recorded only when it is newer than every recorded poll (``hyperPodPolledAt`` < its time: a
        poll in the same second may have read a later state than the event carries) and not older
        than the newest recorded event (``hyperPodObservedAt`` <= its time: two events of one second
        keep their delivery order). A poll (DescribeCluster) is a fresh read: it is always recorded
        and moves ``hyperPodPolledAt`` forward to ``now``. Returns False when an event was not newer
        (nothing written).

        Raises:
            ConditionFailed: the cluster record is missing.
        """
        key = serialize({"PK": keys.cluster_pk(tag), "SK": keys.META})
        hp = view.model_dump(mode="json", by_alias=True, exclude_none=True)
        if event_time is None:
            self._update(_Write(keys.cluster_pk(tag), keys.META, {"hyperPod": hp, "updatedAt": now}))
            with suppress(ClientError):  # a later poll's mark stays
                self._db.update_item(
                    TableName=self.table_name,
                    Key=key,
                    UpdateExpression="SET #polled = :at",
                    ConditionExpression="attribute_not_exists(#polled) OR #polled < :at",
                    ExpressionAttributeNames={"#polled": "hyperPodPolledAt"},
                    ExpressionAttributeValues=serialize({":at": now}),
                )
            return True
        try:
            self._db.update_item(
                TableName=self.table_name,
                Key=key,
                UpdateExpression="SET #hp = :hp, #at = :at, #ua = :ua",
                ConditionExpression=(
                    "attribute_exists(PK) AND (attribute_not_exists(#polled) OR #polled < :at)"
                    " AND (attribute_not_exists(#at) OR #at <= :at)"
                ),
                ExpressionAttributeNames={
                    "#hp": "hyperPod",
                    "#at": "hyperPodObservedAt",
                    "#polled": "hyperPodPolledAt",
                    "#ua": "updatedAt",
                },
                ExpressionAttributeValues=serialize({":hp": hp, ":ua": now, ":at": event_time}),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if self.get_cluster(tag) is None:
                raise ConditionFailed(f"cluster {tag} does not exist") from exc
            return False
        return True

    def record_instance_groups(
        self,
        tag: str,
        *,
        generation: int,
        instance_groups: Sequence[InstanceGroupRequest],
        nodes: Sequence[NodeView],
        now: str,
    ) -> ClusterRecord:
        """After a day-2 change of the instance groups: the record's ``request.instanceGroups`` and ``nodes``.

        One ``UpdateItem`` of the cluster record, conditional on ``generation`` (a change of an earlier
        generation never writes over a re-created cluster).

        Raises:
            ConditionFailed: no cluster record of that generation.
        """
        names = {
            "#req": "request",
            "#ig": "instanceGroups",
            "#nodes": "nodes",
            "#ua": "updatedAt",
            "#gen": "generation",
        }
        values = {
            ":ig": [g.model_dump(mode="json", by_alias=True, exclude_none=True) for g in instance_groups],
            ":nodes": [n.model_dump(mode="json", by_alias=True, exclude_none=True) for n in nodes],
            ":ua": now,
            ":gen": generation,
        }
        try:
            out = self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": keys.cluster_pk(tag), "SK": keys.META}),
                UpdateExpression="SET #req.#ig = :ig, #nodes = :nodes, #ua = :ua",
                ConditionExpression="attribute_exists(PK) AND #gen = :gen",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=serialize(values),
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"cluster {tag} has no record of generation {generation}") from exc
            raise
        return ClusterRecord.model_validate(deserialize(out["Attributes"]))

    def recover_degraded(self, tag: str, generation: int, *, observed_status: str, now: str) -> None:
        """A DEGRADED cluster got its nodes: the cluster READY and its FAILED ``verify`` stage SUCCEEDED, atomically.

        Raises:
            ConditionFailed: the cluster is no longer DEGRADED at this generation (another writer won).
        """
        self._transact(
            [],
            [
                _Write(
                    keys.cluster_pk(tag),
                    keys.META,
                    {"status": ClusterStatus.READY.value, "updatedAt": now},
                    expected_status=[ClusterStatus.DEGRADED.value],
                    equals={"generation": generation},
                ),
                _Write(
                    keys.cluster_pk(tag),
                    keys.stage_sk(generation, StageName.VERIFY),
                    {
                        "status": StageStatus.SUCCEEDED.value,
                        "observedStatus": observed_status,
                        "endedAt": now,
                        "updatedAt": now,
                    },
                    removes=["error"],
                    expected_status=[StageStatus.FAILED.value],
                ),
            ],
        )

    # -- handled events ----------------------------------------------------------------------
    def claim_event(self, event_id: str, *, now: int, keep_seconds: int) -> bool:
        """Record EventBridge event ``event_id`` as handled; False when it already was (a redelivery).

        One conditional ``PutItem`` of ``EVENT#<id>`` with ``expiration = now + keep_seconds`` (epoch
        seconds, the table's TTL attribute); a record past its expiration that TTL has not removed yet
        counts as absent.
        """
        put = _Put(
            {"PK": keys.event_pk(event_id), "SK": keys.META, "expiration": now + keep_seconds},
            "attribute_not_exists(PK) OR #exp < :now",
            {"#exp": "expiration"},
            {":now": now},
        )
        try:
            self._db.put_item(**put.request(self.table_name))
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def release_event(self, event_id: str) -> None:
        """Forget that ``event_id`` was handled (its handling failed: a redelivery should run it). ``DeleteItem``."""
        self._db.delete_item(TableName=self.table_name, Key=serialize({"PK": keys.event_pk(event_id), "SK": keys.META}))

    # -- locks -------------------------------------------------------------------------------
    def acquire_lock(self, name: str, owner: str, *, now: int, lease_seconds: int) -> None:
        """Take the lock ``name`` for ``owner`` until ``now + lease_seconds`` (epoch seconds).

        One conditional ``PutItem`` of ``LOCK#<name>``: it succeeds when no lock record exists, when the
        existing one has expired (its holder crashed or released it) or when ``owner`` already holds it.
        ``expiration`` is the table's TTL attribute, so released and stale records are eventually removed.

        Raises:
            ConditionFailed: another owner holds an unexpired lease; nothing was written.
        """
        put = _Put(
            {"PK": keys.lock_pk(name), "SK": keys.META, "owner": owner, "expiration": now + lease_seconds},
            "attribute_not_exists(PK) OR #exp < :now OR #owner = :owner",
            {"#exp": "expiration", "#owner": "owner"},
            {":now": now, ":owner": owner},
        )
        try:
            self._db.put_item(**put.request(self.table_name))
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"lock {name} is held by another owner") from exc
            raise

    def release_lock(self, name: str, owner: str) -> None:
        """Give up ``owner``'s lock ``name`` (its lease ends now: ``expiration`` 0, TTL removes the record).

        An ``UpdateItem`` conditional on ``owner`` holding it: a lease that expired and was taken over by
        another owner is left alone. Never raises for a lock not held.
        """
        with suppress(ClientError):
            self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": keys.lock_pk(name), "SK": keys.META}),
                UpdateExpression="SET #exp = :zero",
                ConditionExpression="#owner = :owner",
                ExpressionAttributeNames={"#exp": "expiration", "#owner": "owner"},
                ExpressionAttributeValues=serialize({":zero": 0, ":owner": owner}),
            )
