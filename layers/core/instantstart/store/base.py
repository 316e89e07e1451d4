"""The table class's foundation: typed conditional writes, the client that forgets reused reads, and the low-level
reads and writes (``GetItem``, ``UpdateItem``, ``TransactWriteItems``) every record kind's methods build on.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast, overload

from botocore.exceptions import ClientError

from instantstart.models.common import ClusterStatus, OperationStatus, StageStatus
from instantstart.store import keys
from instantstart.store.codec import Item, _dynamo, _serializer, check_item_fits, deserialize, serialize
from instantstart.store.errors import ConditionFailed, condition_failed

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


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
    absent: Sequence[str] = ()
    """Further conditions: the item has no such attribute (``attribute_not_exists``)."""

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
        for i, name in enumerate(self.absent):
            names[f"#a{i}"] = name
            conditions.append(f"attribute_not_exists(#a{i})")
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
    """One conditional put of a whole item (by default: only if no item has its key); ``reserve``: bytes of
    DynamoDB's item size kept free for later updates (``codec.RECORD_GROWTH_BYTES`` for a record carrying a
    request), checked by :meth:`StoreBase._transact` before anything is written."""

    item: Item
    condition: str = "attribute_not_exists(PK)"
    names: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)
    reserve: int = 0

    def request(self, table: str) -> dict[str, Any]:
        out: dict[str, Any] = {"TableName": table, "Item": serialize(self.item), "ConditionExpression": self.condition}
        if self.names:
            out["ExpressionAttributeNames"] = dict(self.names)
        if self.values:
            out["ExpressionAttributeValues"] = serialize(self.values)
        return out


@dataclass
class _Check:
    """One condition of a transaction on an item it does not write: its ``status`` is one of ``expected_status``
    (and each attribute of ``equals`` has that value)."""

    pk: str
    sk: str
    expected_status: Sequence[str]
    equals: Mapping[str, Any] = field(default_factory=dict)

    def request(self, table: str) -> dict[str, Any]:
        placeholders = {f":c{i}": {"S": status} for i, status in enumerate(self.expected_status)}
        names = {"#cstatus": "status"}
        values: dict[str, Any] = dict(placeholders)
        conditions = [f"#cstatus IN ({', '.join(placeholders)})"]
        for i, (name, value) in enumerate(self.equals.items()):
            names[f"#e{i}"] = name
            values[f":e{i}"] = _serializer().serialize(_dynamo(value))
            conditions.append(f"#e{i} = :e{i}")
        return {
            "TableName": table,
            "Key": serialize({"PK": self.pk, "SK": self.sk}),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }


@dataclass
class _Delete:
    """One conditional delete of an item: only while ``owner_attribute`` is ``owner`` (an item already gone is no
    failure: the condition also holds when it does not exist)."""

    pk: str
    sk: str
    owner_attribute: str
    owner: str

    def request(self, table: str) -> dict[str, Any]:
        return {
            "TableName": table,
            "Key": serialize({"PK": self.pk, "SK": self.sk}),
            "ConditionExpression": "attribute_not_exists(PK) OR #owner = :owner",
            "ExpressionAttributeNames": {"#owner": self.owner_attribute},
            "ExpressionAttributeValues": serialize({":owner": self.owner}),
        }


RETRYABLE_STAGE = (StageStatus.FAILED, StageStatus.CANCELLED)
"""Stage statuses a retry (and a new attempt of the stage) may start from."""

LIVE_OPERATION = (OperationStatus.PENDING.value, OperationStatus.RUNNING.value)
"""Operation statuses in which its workflow may still change records."""

ENDED_OPERATION = (OperationStatus.SUCCEEDED.value, OperationStatus.FAILED.value, OperationStatus.CANCELLED.value)
"""Operation statuses of an operation that ended (a cluster whose current operation ended may start another)."""

OPERATING_CLUSTER = (ClusterStatus.CREATING, ClusterStatus.DELETING, ClusterStatus.READY, ClusterStatus.DEGRADED)
"""Cluster statuses while an operation runs: CREATING/DELETING for a create, retry or delete; a day-2 change of an
instance group leaves a READY or DEGRADED cluster as it is (it stays usable)."""


RUNNING = StageStatus.RUNNING.value
"""The status of a stage or an operation whose waits may hold task tokens (the same word for both)."""


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


class StoreBase:
    """The client, the table and the low-level reads and writes shared by every record kind's methods.

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

    def _transact(
        self,
        puts: Sequence[_Put],
        updates: Sequence[_Write] = (),
        checks: Sequence[_Check] = (),
        deletes: Sequence[_Delete] = (),
    ) -> None:
        """One ``TransactWriteItems`` of ``puts``, ``updates``, ``checks`` and ``deletes``, all or nothing.

        Raises:
            ItemTooLarge: a put's item does not fit DynamoDB's item size less its ``reserve``; checked before the
                call, so nothing was written.
            ConditionFailed: a condition failed; nothing was written.
        """
        for put in puts:
            check_item_fits(put.item, reserve=put.reserve)
        items: list[dict[str, Any]] = [{"Put": p.request(self.table_name)} for p in puts]
        items += [{"Update": w.request(self.table_name)} for w in updates]
        items += [{"ConditionCheck": c.request(self.table_name)} for c in checks]
        items += [{"Delete": d.request(self.table_name)} for d in deletes]
        try:
            self._db.transact_write_items(TransactItems=cast(Any, items))
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException" and condition_failed(exc):
                raise ConditionFailed("a condition of the transaction failed; nothing was written") from exc
            raise
