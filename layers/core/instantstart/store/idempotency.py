"""The ``Idempotency-Key`` records (``IDEMPOTENCY#<key hash>`` / ``META``, expiring by the table's TTL).

One record per key: ``status`` ``IN_PROGRESS`` (a request with the key runs until ``inProgressUntil``, the end of
its Lambda invocation's time) or ``COMPLETED`` (``response``, its stored answer), the hash of the request it was used
for (``payloadHash``), the operation id the request reserved before it wrote anything (``operationId``) and
``expiration`` (epoch seconds, the table's TTL attribute).
"""

from __future__ import annotations

import json
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.store.base import StoreBase
from instantstart.store.codec import deserialize, serialize
from instantstart.store.errors import ConditionFailed

IN_PROGRESS, COMPLETED = "IN_PROGRESS", "COMPLETED"


def idempotency_pk(key_hash: str) -> str:
    """Partition key of the record of one ``Idempotency-Key`` (its hash)."""
    return f"IDEMPOTENCY#{key_hash}"


@dataclass(frozen=True)
class IdempotencyRecord:
    """One key's record as read: ``in_progress_until`` and ``expiration`` in epoch seconds, ``response`` the stored
    answer of a COMPLETED request (None while IN_PROGRESS)."""

    key_hash: str
    status: str
    payload_hash: str
    operation_id: str
    in_progress_until: int
    expiration: int
    response: dict[str, Any] | None = None


class IdempotencyStore(StoreBase):
    """The idempotency records' methods of :class:`~instantstart.store.table.Store` (``GetItem``, ``PutItem``,
    ``UpdateItem``, ``DeleteItem``, every write conditional)."""

    def get_idempotency(self, key_hash: str) -> IdempotencyRecord | None:
        """The record of ``key_hash`` (a consistent read, never one reused within the request), or None."""
        out = self._db.get_item(
            TableName=self.table_name,
            Key=serialize({"PK": idempotency_pk(key_hash), "SK": "META"}),
            ConsistentRead=True,
        )
        if "Item" not in out:
            return None
        item = deserialize(out["Item"])
        response = item.get("response")
        return IdempotencyRecord(
            key_hash=key_hash,
            status=str(item["status"]),
            payload_hash=str(item["payloadHash"]),
            operation_id=str(item["operationId"]),
            in_progress_until=int(item["inProgressUntil"]),
            expiration=int(item["expiration"]),
            response=json.loads(str(response)) if response else None,
        )

    def claim_idempotency(
        self,
        key_hash: str,
        *,
        payload_hash: str,
        operation_id: str,
        now: int,
        in_progress_until: int,
        expiration: int,
        taking_over: IdempotencyRecord | None = None,
    ) -> None:
        """Write ``key_hash``'s IN_PROGRESS record: a new one (none, or an expired one, exists) or, with
        ``taking_over``, the record of a request whose invocation ended without completing (its
        ``inProgressUntil`` unchanged since it was read: one taker wins).

        Raises:
            ConditionFailed: another request claimed the key first; nothing was written.
        """
        if taking_over is None:
            condition = "attribute_not_exists(PK) OR #exp < :now"
            values: dict[str, Any] = {":now": now}
        else:
            condition = "#status = :in_progress AND #until = :previous"
            values = {":in_progress": IN_PROGRESS, ":previous": taking_over.in_progress_until}
        item = {
            "PK": idempotency_pk(key_hash),
            "SK": "META",
            "status": IN_PROGRESS,
            "payloadHash": payload_hash,
            "operationId": operation_id,
            "inProgressUntil": in_progress_until,
            "expiration": expiration,
        }
        names = {"#exp": "expiration"} if taking_over is None else {"#status": "status", "#until": "inProgressUntil"}
        try:
            self._db.put_item(
                TableName=self.table_name,
                Item=serialize(item),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=serialize(values),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"Idempotency-Key {key_hash} was claimed by another request") from exc
            raise

    def complete_idempotency(self, key_hash: str, operation_id: str, response: dict[str, Any]) -> None:
        """Store the answer of the request that holds ``key_hash`` (its reserved ``operation_id``): COMPLETED.

        A record another request took over meanwhile (another ``operationId``) is left alone.
        """
        with suppress(ClientError):
            self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": idempotency_pk(key_hash), "SK": "META"}),
                UpdateExpression="SET #status = :completed, #response = :response",
                ConditionExpression="#op = :op",
                ExpressionAttributeNames={"#status": "status", "#response": "response", "#op": "operationId"},
                ExpressionAttributeValues=serialize(
                    {":completed": COMPLETED, ":response": json.dumps(response), ":op": operation_id}
                ),
            )

    def release_idempotency(self, key_hash: str, operation_id: str) -> None:
        """Delete the IN_PROGRESS record of the request that holds ``key_hash`` (it failed: a retry runs anew)."""
        with suppress(ClientError):
            self._db.delete_item(
                TableName=self.table_name,
                Key=serialize({"PK": idempotency_pk(key_hash), "SK": "META"}),
                ConditionExpression="#op = :op AND #status = :in_progress",
                ExpressionAttributeNames={"#op": "operationId", "#status": "status"},
                ExpressionAttributeValues=serialize({":op": operation_id, ":in_progress": IN_PROGRESS}),
            )
