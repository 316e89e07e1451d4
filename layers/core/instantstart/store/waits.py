"""The event-or-poll waits held by a stage or an operation record (``waits``, ``waitRounds``, ``waitsSatisfied``)."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

from botocore.exceptions import ClientError

from instantstart.models.common import StageName
from instantstart.store import keys
from instantstart.store.base import RUNNING, StoreBase
from instantstart.store.codec import deserialize, serialize
from instantstart.store.errors import ConditionFailed


class WaitRound(NamedTuple):
    """What :meth:`WaitStore.start_wait_round` saw: the rounds that timed out and the seconds since the first."""

    rounds: int
    elapsed: float


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


class WaitStore(StoreBase):
    """The waits' methods of :class:`~instantstart.store.table.Store` (on the record a :class:`WaitHolder` names)."""

    def start_wait_round(self, holder: WaitHolder, wait: str, task_token: str, now: float | None = None) -> WaitRound:
        """Store the task token of ``holder``'s ``wait`` for this round; the rounds that timed out and the seconds
        since the wait's first round.

        One key of the record's ``waits`` map (parallel waits of a stage never overwrite each other). A
        token still stored when the next round starts was not consumed by :meth:`consume_wait_token`
        (no event woke it): that round timed out, so ``waitRounds.<wait>`` grows by one. Woken rounds
        are not counted, so a burst of events never exhausts a wait's rounds; the time since the first round
        (``waitStarted.<wait>``, epoch seconds, written once when ``now`` is given) bounds a wait that events wake
        more often than its poll interval, which would otherwise never time out.

        Raises:
            ConditionFailed: the holder (stage or operation) is not RUNNING.
        """
        key = serialize({"PK": holder.pk, "SK": holder.sk})
        try:
            out = self._db.update_item(
                TableName=self.table_name,
                Key=key,
                UpdateExpression="SET #waits.#w = :t, #rounds = if_not_exists(#rounds, :empty), "
                "#started = if_not_exists(#started, :empty)",
                ConditionExpression="attribute_exists(#waits) AND #s = :running",
                ExpressionAttributeNames={
                    "#waits": "waits",
                    "#w": wait,
                    "#s": "status",
                    "#rounds": "waitRounds",
                    "#started": "waitStarted",
                },
                ExpressionAttributeValues=serialize({":t": task_token, ":running": RUNNING, ":empty": {}}),
                ReturnValues="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"{holder.what} is not RUNNING") from exc
            raise
        old = deserialize(out.get("Attributes", {}))
        started = (old.get("waitStarted") or {}).get(wait)
        if started is None and now is not None:
            self._db.update_item(
                TableName=self.table_name,
                Key=key,
                UpdateExpression="SET #started.#w = if_not_exists(#started.#w, :now)",
                ExpressionAttributeNames={"#started": "waitStarted", "#w": wait},
                ExpressionAttributeValues=serialize({":now": Decimal(str(now))}),
            )
        elapsed = max(0.0, now - float(started)) if now is not None and started is not None else 0.0
        rounds = int((old.get("waitRounds") or {}).get(wait, 0))
        if not (old.get("waits") or {}).get(wait):
            return WaitRound(rounds, elapsed)
        out = self._db.update_item(
            TableName=self.table_name,
            Key=key,
            UpdateExpression="SET #rounds.#w = if_not_exists(#rounds.#w, :zero) + :one",
            ExpressionAttributeNames={"#rounds": "waitRounds", "#w": wait},
            ExpressionAttributeValues=serialize({":zero": 0, ":one": 1}),
            ReturnValues="UPDATED_NEW",
        )
        return WaitRound(int(deserialize(out["Attributes"])["waitRounds"][wait]), elapsed)

    def restart_wait_budget(self, holder: WaitHolder, wait: str, now: float) -> None:
        """Start ``holder``'s ``wait`` budget afresh: no timed-out rounds, first round ``now`` (epoch seconds).

        For a round whose wait is held by another running stage (``PollResult.held``). One ``UpdateItem``.

        Raises:
            ConditionFailed: the holder (stage or operation) is not RUNNING.
        """
        try:
            self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": holder.pk, "SK": holder.sk}),
                UpdateExpression="SET #rounds.#w = :zero, #started.#w = :now",
                ConditionExpression="attribute_exists(#rounds) AND attribute_exists(#started) AND #s = :running",
                ExpressionAttributeNames={
                    "#rounds": "waitRounds",
                    "#started": "waitStarted",
                    "#w": wait,
                    "#s": "status",
                },
                ExpressionAttributeValues=serialize({":zero": 0, ":now": Decimal(str(now)), ":running": RUNNING}),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"{holder.what} is not RUNNING") from exc
            raise

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
        with suppress(ClientError):  # a record of before waitStarted has no such map: nothing to forget
            self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": holder.pk, "SK": holder.sk}),
                UpdateExpression="REMOVE #started.#w",
                ConditionExpression="attribute_exists(#started)",
                ExpressionAttributeNames={"#started": "waitStarted", "#w": wait},
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
