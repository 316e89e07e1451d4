"""Operations that do not take their cluster's lock, and the guards they hold instead (``CLUSTER#<tag>`` /
``GUARD#<kind>#...``).

A model download changes nothing of the cluster's shape, so it does not become the cluster's current operation
(``currentOperationId``): day-2 operations start and end beside it. What must not run twice at once is the download
of one model to one destination, so its operation holds a guard item keyed by that: written in the transaction that
writes the operation (conditional on no guard of that key, or one whose operation ended), deleted in the transaction
that ends it. Calls DynamoDB ``TransactWriteItems``, ``GetItem`` and ``Query``.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.models.cluster import StageError
from instantstart.models.common import ClusterStatus, OperationStatus
from instantstart.models.records import OperationGuardRecord, OperationRecord
from instantstart.store import keys
from instantstart.store.base import ENDED_OPERATION, LIVE_OPERATION, StoreBase, _Check, _Delete, _Put, _Write
from instantstart.store.codec import RECORD_GROWTH_BYTES, deserialize, serialize
from instantstart.store.errors import ConditionFailed
from instantstart.store.operations import _operation_item
from instantstart.store.stages import StageCancellation


def _guard_item(guard: OperationGuardRecord) -> dict[str, Any]:
    return {"PK": keys.cluster_pk(guard.cluster_tag), "SK": guard.guard, **guard.to_item()}


class GuardStore(StoreBase):
    """The guarded operations' methods of :class:`~instantstart.store.table.Store`."""

    def get_guard(self, tag: str, guard: str) -> OperationGuardRecord | None:
        """The guard ``guard`` (its sort key) of cluster ``tag``, or None (``GetItem``, strongly consistent)."""
        item = self._get(keys.cluster_pk(tag), guard)
        return OperationGuardRecord.model_validate(item) if item else None

    def list_guards(self, tag: str) -> list[OperationGuardRecord]:
        """Every guard of cluster ``tag`` (the guarded operations that have not ended), by sort key: one strongly
        consistent ``Query`` of the cluster's partition, every page."""
        found: list[OperationGuardRecord] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :prefix)",
            "ExpressionAttributeValues": serialize({":pk": keys.cluster_pk(tag), ":prefix": keys.GUARD_PREFIX}),
            "ConsistentRead": True,
        }
        while True:
            out = self._db.query(**kwargs)
            found += [OperationGuardRecord.model_validate(deserialize(i)) for i in out.get("Items", [])]
            if not out.get("LastEvaluatedKey"):
                return found
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    def start_guarded_operation(
        self,
        operation: OperationRecord,
        guard: OperationGuardRecord,
        *,
        cluster_statuses: tuple[ClusterStatus, ...],
        stale_operation_id: str | None = None,
    ) -> None:
        """Write a PENDING ``operation`` and its ``guard``, leaving the cluster record (and its current operation)
        as it is.

        One ``TransactWriteItems``: the operation (new), the guard (conditional on no guard of that key, or, with
        ``stale_operation_id``, on the guard still naming that operation, which a ``ConditionCheck`` requires to have
        ended: a guard its operation's end did not release is taken over), and a ``ConditionCheck`` of the cluster
        record: its status one of ``cluster_statuses`` at the operation's generation. A cluster delete moves the
        status first, so no guarded operation starts once it began.

        Raises:
            ConditionFailed: a live operation holds the guard, or the cluster is not in one of ``cluster_statuses``
                (or of another generation); nothing was written. Also for ``TransactionConflict`` (a concurrent
                write held one of the items).
            ItemTooLarge: the operation record would not fit DynamoDB's item size; nothing was written.
        """
        guard_put = _Put(_guard_item(guard))
        checks = [
            _Check(
                keys.cluster_pk(operation.cluster_tag),
                keys.META,
                [s.value for s in cluster_statuses],
                equals={"generation": operation.generation},
            )
        ]
        if stale_operation_id is not None:
            guard_put = _Put(
                guard_put.item,
                "attribute_not_exists(PK) OR #op = :stale",
                {"#op": "operationId"},
                {":stale": stale_operation_id},
            )
            checks.append(_Check(keys.operation_pk(stale_operation_id), keys.META, ENDED_OPERATION))
        try:
            self._transact([_Put(_operation_item(operation), reserve=RECORD_GROWTH_BYTES), guard_put], [], checks)
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if any(isinstance(r, dict) and r.get("Code") == "TransactionConflict" for r in reasons):
                raise ConditionFailed(f"guard {guard.guard}: a concurrent start holds the record") from exc
            raise

    def finish_guarded_operation(
        self,
        operation: OperationRecord,
        *,
        status: OperationStatus,
        now: str,
        error: StageError | None = None,
        only_pending: bool = False,
        cancelling: StageCancellation | None = None,
    ) -> OperationRecord:
        """End a PENDING/RUNNING guarded ``operation`` with ``status`` and release its guard, atomically; the
        cluster record is not written (its status and current operation belong to the cluster's own operations).

        One ``TransactWriteItems``: the operation (conditional on PENDING or RUNNING) and the ``Delete`` of its
        guard (conditional on the guard naming it, or being gone already). ``only_pending``: only a PENDING
        operation ends (the undo of a start whose execution never ran: one that began runs on). ``cancelling``
        (from :meth:`~instantstart.store.stages.StageStore.stage_cancellation`) joins the same transaction.

        Raises:
            ConditionFailed: the operation already ended (or, with ``only_pending``, began); nothing was written.
        """
        updates: dict[str, Any] = {"status": status.value, "endedAt": now, "updatedAt": now}
        if error is not None:
            updates["error"] = error.model_dump(mode="json")
        deletes = (
            [_Delete(keys.cluster_pk(operation.cluster_tag), operation.guard, "operationId", operation.operation_id)]
            if operation.guard
            else []
        )
        self._transact(
            [],
            [
                _Write(
                    keys.operation_pk(operation.operation_id),
                    keys.META,
                    updates,
                    expected_status=[OperationStatus.PENDING.value] if only_pending else list(LIVE_OPERATION),
                ),
                *(cancelling.updates if cancelling else ()),
            ],
            cancelling.checks if cancelling else (),
            deletes=deletes,
        )
        item = self._get(keys.operation_pk(operation.operation_id))
        assert item is not None  # written just above
        return OperationRecord.model_validate(item)

    def release_guard(self, tag: str, guard: str, operation_id: str) -> None:
        """Delete the guard ``guard`` of cluster ``tag`` while it still names ``operation_id`` (one whose operation
        ended without releasing it); a guard gone or taken over by another operation is left alone (``DeleteItem``)."""
        delete = _Delete(keys.cluster_pk(tag), guard, "operationId", operation_id)
        try:
            self._db.delete_item(**delete.request(self.table_name))
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
