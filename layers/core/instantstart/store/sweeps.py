"""The reconciliation sweep's records: one small claim item per cluster (``SWEEP#<tag>`` / ``META``) and the sweep's
cursor (``SWEEPS`` / ``CURSOR``).

A claim item holds ``claimedBy`` (the sweep's id), ``claimedUntil`` (epoch seconds), ``underTarget`` (instance group
-> when it was first seen under its target, ISO-8601; only groups under target, so it never grows past the cluster's
groups) and ``expiration`` (the table's TTL: a deleted cluster's item goes by itself). The cursor holds ``afterTag``:
the last cluster tag a sweep that ran out of time reached, where the next one continues.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from instantstart.models.common import ClusterStatus, StageName, StageStatus
from instantstart.models.records import ClusterRecord
from instantstart.store import keys
from instantstart.store.base import StoreBase, _Write
from instantstart.store.codec import deserialize, serialize

SWEEP_KEEP_SECONDS = 7 * 86_400
"""How long a claim item outlives the last sweep that touched it (seconds; the table's TTL removes it after)."""


@dataclass
class SweepClaim:
    """A cluster claimed by one sweep, with what earlier sweeps remembered about it."""

    cluster_tag: str
    sweep_id: str
    under_target: dict[str, str] = field(default_factory=dict)
    """Instance group -> ISO-8601 time it was first seen under its target count."""


class SweepStore(StoreBase):
    """The sweep's methods of :class:`~instantstart.store.table.Store`."""

    def claim_cluster(self, tag: str, *, sweep_id: str, now: int, hold_seconds: int) -> SweepClaim | None:
        """Claim cluster ``tag`` for sweep ``sweep_id`` for ``hold_seconds``; None when another sweep holds it.

        One conditional ``UpdateItem`` of ``SWEEP#<tag>`` (created when absent): it succeeds when no claim is held
        (``claimedUntil`` absent or before ``now``, epoch seconds) or this sweep holds it. Two sweeps at once thus
        check each cluster once.
        """
        try:
            out = self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": keys.sweep_pk(tag), "SK": keys.META}),
                UpdateExpression="SET #by = :me, #until = :until, #exp = :exp",
                ConditionExpression="attribute_not_exists(#until) OR #until < :now OR #by = :me",
                ExpressionAttributeNames={"#by": "claimedBy", "#until": "claimedUntil", "#exp": "expiration"},
                ExpressionAttributeValues=serialize(
                    {":me": sweep_id, ":until": now + hold_seconds, ":now": now, ":exp": now + SWEEP_KEEP_SECONDS}
                ),
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise
        item = deserialize(out["Attributes"])
        return SweepClaim(cluster_tag=tag, sweep_id=sweep_id, under_target=dict(item.get("underTarget") or {}))

    def record_under_target(self, claim: SweepClaim, under_target: dict[str, str]) -> None:
        """Store the groups under target (``{}`` removes the attribute); conditional on ``claim`` still being held
        by its sweep (``UpdateItem``).

        Raises:
            ConditionFailed: another sweep holds the claim now.
        """
        updates: dict[str, Any] = {"underTarget": under_target} if under_target else {}
        self._update(
            _Write(
                keys.sweep_pk(claim.cluster_tag),
                keys.META,
                updates,
                removes=[] if under_target else ["underTarget"],
                equals={"claimedBy": claim.sweep_id},
            )
        )
        claim.under_target = dict(under_target)

    def sweep_cursor(self) -> str | None:
        """The tag after which the next sweep continues (None: start at the first cluster). ``GetItem``."""
        out = self._db.get_item(
            TableName=self.table_name, Key=serialize({"PK": keys.SWEEPS_PK, "SK": keys.SWEEP_CURSOR_SK})
        )
        item = deserialize(out["Item"]) if "Item" in out else {}
        tag = item.get("afterTag")
        return str(tag) if tag else None

    def record_sweep_cursor(self, after_tag: str | None, *, now: str) -> None:
        """Remember where the next sweep continues (``PutItem``), or forget it (``DeleteItem``) when the sweep reached
        the last cluster."""
        key = {"PK": keys.SWEEPS_PK, "SK": keys.SWEEP_CURSOR_SK}
        if after_tag is None:
            self._db.delete_item(TableName=self.table_name, Key=serialize(key))
            return
        self._db.put_item(TableName=self.table_name, Item=serialize({**key, "afterTag": after_tag, "updatedAt": now}))

    def clusters_after(self, after_tag: str | None, limit: int) -> tuple[list[ClusterRecord], bool]:
        """Up to ``limit`` cluster records ordered by tag, after ``after_tag`` (None: from the first), and whether
        more follow. ``Query`` on the cluster listing index (GSI1)."""
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": keys.GSI1,
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": serialize({":pk": keys.CLUSTERS_INDEX_PK}),
            "Limit": limit,
        }
        if after_tag:
            kwargs["ExclusiveStartKey"] = serialize(
                {
                    "PK": keys.cluster_pk(after_tag),
                    "SK": keys.META,
                    "GSI1PK": keys.CLUSTERS_INDEX_PK,
                    "GSI1SK": keys.cluster_index_sk(after_tag),
                }
            )
        out = self._db.query(**kwargs)
        records = [ClusterRecord.model_validate(deserialize(i)) for i in out.get("Items", [])]
        return records, bool(out.get("LastEvaluatedKey"))

    def degrade_ready(
        self, tag: str, generation: int, *, error: dict[str, Any], observed_status: str, now: str
    ) -> None:
        """A READY cluster lost capacity: the cluster DEGRADED and its ``verify`` stage FAILED with ``error``
        (a ``StageError`` as JSON), atomically; the reverse of ``recover_degraded``, which turns it READY again.

        Conditional on the cluster being READY at ``generation`` with no operation other than
        ``currentOperationId`` as read (``TransactWriteItems``).

        Raises:
            ConditionFailed: the cluster is no longer READY at this generation, or the stage not SUCCEEDED.
        """
        self._transact(
            [],
            [
                _Write(
                    keys.cluster_pk(tag),
                    keys.META,
                    {"status": ClusterStatus.DEGRADED.value, "updatedAt": now},
                    expected_status=[ClusterStatus.READY.value],
                    equals={"generation": generation},
                ),
                _Write(
                    keys.cluster_pk(tag),
                    keys.stage_sk(generation, StageName.VERIFY),
                    {
                        "status": StageStatus.FAILED.value,
                        "observedStatus": observed_status,
                        "error": error,
                        "endedAt": now,
                        "updatedAt": now,
                    },
                    expected_status=[StageStatus.SUCCEEDED.value],
                ),
            ],
        )
