"""The leased locks (``LOCK#<name>`` / ``META``, expiring by the table's TTL)."""

from __future__ import annotations

from contextlib import suppress

from botocore.exceptions import ClientError

from instantstart.store import keys
from instantstart.store.base import StoreBase, _Put
from instantstart.store.codec import serialize
from instantstart.store.errors import ConditionFailed


class LockStore(StoreBase):
    """The locks' methods of :class:`~instantstart.store.table.Store`."""

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
