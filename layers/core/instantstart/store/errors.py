"""The store's errors: never HTTP-flavoured, callers decide what a lost race means."""

from __future__ import annotations

from botocore.exceptions import ClientError


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


class ItemTooLarge(StoreError):
    """A record refused before it was written: it would not fit DynamoDB's 400 KB item size with the room its later
    updates need (:func:`instantstart.store.codec.check_item_fits`); nothing was written.

    Attributes:
        pk: the record's partition key.
        size: the record's size, in bytes, as DynamoDB counts it.
        limit: the largest size it may have, in bytes.
    """

    def __init__(self, pk: str, *, size: int, limit: int) -> None:
        super().__init__(f"{pk}: the record measures {size} bytes, above the limit of {limit} bytes")
        self.pk = pk
        self.size = size
        self.limit = limit
