"""Records as DynamoDB attribute maps and back, and the opaque pagination tokens of the listings.

boto3's ``TypeSerializer``/``TypeDeserializer`` are imported by the first record written or read, not with this
module (cold start).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from instantstart.store.errors import InvalidPageToken, ItemTooLarge

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

Item = dict[str, Any]
"""One record as a plain dict (keys and attributes), as read or about to be written."""

MAX_ITEM_BYTES = 400 * 1024
"""DynamoDB's maximum item size (400 KB = 409,600 bytes: attribute names and values, by :func:`item_bytes`)."""

RECORD_GROWTH_BYTES = 100 * 1024
"""What a cluster or operation record may still grow by after its first write, kept free when it is first written:
the workflow adds the cluster's observations (``eks``, ``hyperPod``, one ``nodes`` entry per node, ``storage``,
``desiredFeatures``, ``mlflow``) or the operation's ``result``, ``waits``, ``error``, ``featureResults``. A record
that carries a request (the create request on the cluster record, a day-2 change on the operation record) is
refused above ``MAX_ITEM_BYTES - RECORD_GROWTH_BYTES`` (307,200 bytes), so its later updates still fit."""


@lru_cache(maxsize=1)
def _serializer() -> TypeSerializer:
    # boto3 (its package, the whole SDK) is imported by the first record written or read, not with this module.
    from boto3.dynamodb.types import TypeSerializer

    return TypeSerializer()


@lru_cache(maxsize=1)
def _deserializer() -> TypeDeserializer:
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [_plain(v) for v in value]
    return value


def _dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _dynamo(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_dynamo(v) for v in value]
    return value


def _value_bytes(value: Any) -> int:
    """DynamoDB's size of one attribute value (a plain value as :func:`serialize` writes it)."""
    if value is None or isinstance(value, bool):
        return 1  # NULL, BOOL
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, int | float | Decimal):
        digits = len(str(abs(Decimal(str(value)))).replace(".", "").lstrip("0")) or 1
        return (digits + 1) // 2 + 1  # N: about one byte per two significant digits, plus one
    if isinstance(value, Mapping):
        # M: 3 bytes, plus each entry's name and value and 1 byte per entry (None entries are not written)
        return 3 + sum(len(str(k).encode("utf-8")) + _value_bytes(v) + 1 for k, v in value.items() if v is not None)
    if isinstance(value, set | frozenset):
        return sum(_value_bytes(v) for v in value)  # SS/NS/BS: the sum of the members
    if isinstance(value, list | tuple):
        return 3 + sum(_value_bytes(v) + 1 for v in value)  # L: 3 bytes, plus each element and 1 byte per element
    return len(str(value).encode("utf-8"))


def item_bytes(item: Mapping[str, Any]) -> int:
    """The size DynamoDB counts for ``item`` (a plain dict, keys included), in bytes: each attribute's name (UTF-8)
    plus its value (strings by their UTF-8 bytes, numbers about one byte per two significant digits plus one, a map
    or list 3 bytes plus 1 per element, as DynamoDB's developer guide "Item sizes and formats" states). ``None``
    attributes are left out, as :func:`serialize` leaves them. Calls nothing."""
    return sum(len(name.encode("utf-8")) + _value_bytes(v) for name, v in item.items() if v is not None)


def check_item_fits(item: Mapping[str, Any], *, reserve: int = 0) -> int:
    """Refuse ``item`` before it is written when it would not fit DynamoDB's item size with ``reserve`` bytes kept
    free for what later updates add (:data:`RECORD_GROWTH_BYTES` for a record that carries a request); returns its
    size in bytes. Calls nothing.

    Raises:
        ItemTooLarge: :func:`item_bytes` of ``item`` is above ``MAX_ITEM_BYTES - reserve``; names both numbers.
    """
    size = item_bytes(item)
    limit = MAX_ITEM_BYTES - reserve
    if size > limit:
        raise ItemTooLarge(str(item.get("PK", "")), size=size, limit=limit)
    return size


def serialize(item: Mapping[str, Any]) -> dict[str, Any]:
    """A plain dict as a DynamoDB attribute map (``None`` values dropped, floats as Decimal)."""
    return {k: _serializer().serialize(_dynamo(v)) for k, v in item.items() if v is not None}


def deserialize(item: Mapping[str, Any]) -> Item:
    """A DynamoDB attribute map as a plain dict (whole Decimals as int)."""
    return {k: _plain(_deserializer().deserialize(v)) for k, v in item.items()}


def encode_token(key: Mapping[str, Any] | None) -> str | None:
    """An opaque pagination token for a DynamoDB ``LastEvaluatedKey`` (None when there is no more)."""
    if not key:
        return None
    raw = json.dumps(deserialize(key), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str | None, allowed_keys: set[str]) -> dict[str, Any] | None:
    """Decode a token from :func:`encode_token` into a DynamoDB start key (None for no token).

    Raises:
        InvalidPageToken: the token is not one this store issued.
    """
    if not token:
        return None
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidPageToken("not a token issued by this store") from exc
    if not isinstance(data, dict) or set(data) != allowed_keys or not all(isinstance(v, str) for v in data.values()):
        raise InvalidPageToken("not a token issued by this store")
    return serialize(data)
