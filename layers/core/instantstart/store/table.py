"""DynamoDB access for the cluster, stage and operation records (single table, keys from :mod:`.keys`).

The store speaks in intents (create a cluster, start an operation, begin a stage, record a stage's
resources, finish an operation, ...) over the typed records of :mod:`instantstart.models.records`.
Every state change is a conditional write on the expected current status, so two writers can never
both win (no lost updates, no double starts); a lost race raises :class:`ConditionFailed`, the store's
own error, which callers map to what it means for them. Calls the DynamoDB ``GetItem``, ``Query``,
``UpdateItem`` and ``TransactWriteItems`` APIs
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Operations_Amazon_DynamoDB.html).

One class, :class:`Store`, composed of one part per record kind, each in its own module: :mod:`.clusters`,
:mod:`.operations`, :mod:`.guards` (operations that do not take their cluster's lock), :mod:`.stages`,
:mod:`.waits`, :mod:`.events` (handled events), :mod:`.locks`, :mod:`.idempotency` (``Idempotency-Key``
records), :mod:`.sweeps` (the reconciliation sweep's claims and cursor), all on :mod:`.base` (typed conditional
writes, :meth:`Store.reusing_reads`, the low-level reads and writes), with :mod:`.codec` (serialization, page
tokens) and :mod:`.errors`. Every name is importable from here.
"""

from __future__ import annotations

from instantstart.store.base import LIVE_OPERATION, OPERATING_CLUSTER, RETRYABLE_STAGE, RUNNING
from instantstart.store.clusters import ClusterStore
from instantstart.store.codec import Item, decode_token, deserialize, encode_token, serialize
from instantstart.store.errors import ConditionFailed, InvalidPageToken, ItemTooLarge, StoreError, condition_failed
from instantstart.store.events import EventStore
from instantstart.store.guards import GuardStore
from instantstart.store.idempotency import IdempotencyRecord, IdempotencyStore
from instantstart.store.locks import LockStore
from instantstart.store.operations import OperationStore
from instantstart.store.stages import StageStore
from instantstart.store.sweeps import SweepClaim, SweepStore
from instantstart.store.waits import WaitHolder, WaitStore

__all__ = [
    "LIVE_OPERATION",
    "OPERATING_CLUSTER",
    "RETRYABLE_STAGE",
    "RUNNING",
    "ConditionFailed",
    "IdempotencyRecord",
    "InvalidPageToken",
    "Item",
    "ItemTooLarge",
    "Store",
    "StoreError",
    "SweepClaim",
    "WaitHolder",
    "condition_failed",
    "decode_token",
    "deserialize",
    "encode_token",
    "serialize",
]


class Store(
    ClusterStore,
    OperationStore,
    GuardStore,
    StageStore,
    WaitStore,
    EventStore,
    LockStore,
    IdempotencyStore,
    SweepStore,
):
    """Repository of the control plane's records in one DynamoDB table.

    Args:
        client: a boto3 DynamoDB client.
        table_name: the table (template resource ``Table``).
    """
