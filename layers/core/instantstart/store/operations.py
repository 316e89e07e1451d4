"""The operation records (``OP#<id>`` / ``META``, on GSI1 under their cluster): reads, start, end and what their
steps record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from instantstart.models.cluster import StageError
from instantstart.models.cluster_views import RetainedResource
from instantstart.models.common import ClusterStatus, OperationStatus, StageName
from instantstart.models.features import FeatureOutcome
from instantstart.models.operation import OperationProgress
from instantstart.models.records import OperationRecord
from instantstart.store import keys
from instantstart.store.base import ENDED_OPERATION, OPERATING_CLUSTER, RETRYABLE_STAGE, StoreBase, _Check, _Put, _Write
from instantstart.store.codec import RECORD_GROWTH_BYTES, Item, decode_token, deserialize, encode_token, serialize
from instantstart.store.errors import ConditionFailed, InvalidPageToken
from instantstart.store.stages import StageCancellation


def _operation_item(record: OperationRecord) -> Item:
    return {
        "PK": keys.operation_pk(record.operation_id),
        "SK": keys.META,
        "GSI1PK": keys.cluster_pk(record.cluster_tag),
        "GSI1SK": keys.operation_index_sk(record.created_at, record.operation_id),
        **record.to_item(),
    }


class OperationStore(StoreBase):
    """The operation records' methods of :class:`~instantstart.store.table.Store`."""

    def get_operation(self, operation_id: str) -> OperationRecord | None:
        """The operation record or None."""
        item = self._get(keys.operation_pk(operation_id))
        return OperationRecord.model_validate(item) if item else None

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

    def start_operation(
        self,
        operation: OperationRecord,
        *,
        cluster_status: ClusterStatus,
        from_status: ClusterStatus,
        expected_operation_id: str | None,
        retry_stage: StageName | None = None,
    ) -> None:
        """Write a PENDING operation on an existing cluster and make it the cluster's current one: the lock of
        one operation per cluster is this write.

        One ``TransactWriteItems``: the cluster moves ``from_status`` -> ``cluster_status``, conditional on the
        status, the operation's generation and the cluster's ``currentOperationId`` still being
        ``expected_operation_id`` (absent when None, the value read before the start), and on that operation
        having ended (a ``ConditionCheck`` of its record: SUCCEEDED, FAILED or CANCELLED). Of several concurrent
        starts that read the same cluster, exactly one wins; the others write nothing. For a retry,
        ``retry_stage`` must still be FAILED or CANCELLED.

        Raises:
            ConditionFailed: the cluster, its current operation or the stage changed since it was read, or a
                concurrent transaction held the cluster record (``TransactionConflict``: another start was being
                written); nothing was written.
            ItemTooLarge: the operation record (its ``change``: the request it carries) would not fit DynamoDB's
                item size with ``RECORD_GROWTH_BYTES`` kept free; nothing was written.
        """
        tag, generation, now = operation.cluster_tag, operation.generation, operation.created_at
        current = {"currentOperationId": expected_operation_id} if expected_operation_id else {}
        updates = [
            _Write(
                keys.cluster_pk(tag),
                keys.META,
                {"status": cluster_status.value, "currentOperationId": operation.operation_id, "updatedAt": now},
                expected_status=[from_status.value],
                equals={"generation": generation} | current,
                absent=() if expected_operation_id else ("currentOperationId",),
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
        checks = (
            [_Check(keys.operation_pk(expected_operation_id), keys.META, ENDED_OPERATION)]
            if expected_operation_id
            else []
        )
        try:
            self._transact([_Put(_operation_item(operation), reserve=RECORD_GROWTH_BYTES)], updates, checks)
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if any(isinstance(r, dict) and r.get("Code") == "TransactionConflict" for r in reasons):
                raise ConditionFailed(f"cluster {tag}: a concurrent start holds the record") from exc
            raise

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
                    equals={"currentOperationId": operation.operation_id},
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

    def record_retained(self, operation_id: str, retained: Sequence[RetainedResource], now: str) -> OperationRecord:
        """Replace the ``retained`` list of a PENDING or RUNNING operation (what its delete keeps, and why).

        Raises:
            ConditionFailed: the operation does not exist or already ended.
        """
        item = self._update(
            _Write(
                keys.operation_pk(operation_id),
                keys.META,
                {
                    "retained": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in retained],
                    "updatedAt": now,
                },
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

    def finish_operation(
        self,
        operation_id: str,
        tag: str,
        *,
        status: OperationStatus,
        cluster_status: ClusterStatus,
        now: str,
        error: StageError | None = None,
        cancelling: StageCancellation | None = None,
    ) -> OperationRecord:
        """End a PENDING/RUNNING operation with ``status`` and move its cluster to ``cluster_status``, atomically.

        The cluster write is conditional on the operation still being the cluster's current one. ``cancelling``
        (from :meth:`~instantstart.store.stages.StageStore.stage_cancellation`): its stage writes and checks join
        the same ``TransactWriteItems``.

        Raises:
            ConditionFailed: the operation already ended, the cluster moved on to another operation, or a stage of
                ``cancelling`` moved since it was read; nothing was written.
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
                *(cancelling.updates if cancelling else ()),
            ],
            cancelling.checks if cancelling else (),
        )
        op = self.get_operation(operation_id)
        assert op is not None  # written just above
        return op
