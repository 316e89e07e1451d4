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

from instantstart.store.errors import InvalidPageToken

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

Item = dict[str, Any]
"""One record as a plain dict (keys and attributes), as read or about to be written."""


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
