"""The handled EventBridge events (``EVENT#<id>`` / ``META``, expiring by the table's TTL)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from instantstart.store import keys
from instantstart.store.base import StoreBase, _Put
from instantstart.store.codec import serialize


class EventStore(StoreBase):
    """The handled events' methods of :class:`~instantstart.store.table.Store`."""

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
