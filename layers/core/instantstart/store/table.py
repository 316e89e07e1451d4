"""DynamoDB access for clusters, stages and operations (single table, keys from :mod:`.keys`).

Every state change is a conditional write on the expected current status, so two writers can never
both win (no lost updates, no double starts). Calls the DynamoDB ``GetItem``, ``Query``,
``UpdateItem`` and ``TransactWriteItems`` APIs
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Operations_Amazon_DynamoDB.html).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from instantstart.errors import Conflict, InvalidRequest
from instantstart.models.common import StageName
from instantstart.store import keys

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]

_SER = TypeSerializer()
_DE = TypeDeserializer()


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
        return {k: _dynamo(v) for k, v in value.items() if v is not None or k == "error"}
    if isinstance(value, list | tuple):
        return [_dynamo(v) for v in value]
    return value


def serialize(item: Mapping[str, Any]) -> dict[str, Any]:
    """A plain dict as a DynamoDB attribute map (``None`` values dropped, floats as Decimal)."""
    return {k: _SER.serialize(_dynamo(v)) for k, v in item.items() if v is not None}


def deserialize(item: Mapping[str, Any]) -> Item:
    """A DynamoDB attribute map as a plain dict (whole Decimals as int)."""
    return {k: _plain(_DE.deserialize(v)) for k, v in item.items()}


class ConditionFailed(Exception):
    """A conditional write found the item in another state than expected."""


def _update_expression(
    updates: Mapping[str, Any], removes: Iterable[str] = ()
) -> tuple[str, dict[str, str], dict[str, Any]]:
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    sets = []
    for i, (name, value) in enumerate(updates.items()):
        names[f"#u{i}"] = name
        values[f":u{i}"] = _SER.serialize(_dynamo(value))
        sets.append(f"#u{i} = :u{i}")
    rems = []
    for j, name in enumerate(removes):
        names[f"#r{j}"] = name
        rems.append(f"#r{j}")
    expr = ""
    if sets:
        expr += "SET " + ", ".join(sets)
    if rems:
        expr += " REMOVE " + ", ".join(rems)
    return expr.strip(), names, values


def _status_condition(
    expected: Sequence[str] | None, names: dict[str, str], values: dict[str, Any], attr: str = "status"
) -> str:
    if not expected:
        return "attribute_exists(PK)"
    names["#cstatus"] = attr
    placeholders = []
    for i, status in enumerate(expected):
        values[f":c{i}"] = {"S": status}
        placeholders.append(f":c{i}")
    return f"attribute_exists(PK) AND #cstatus IN ({', '.join(placeholders)})"


def encode_token(key: Mapping[str, Any] | None) -> str | None:
    """An opaque pagination token for a DynamoDB ``LastEvaluatedKey`` (None when there is no more)."""
    if not key:
        return None
    raw = json.dumps(deserialize(key), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str | None, allowed_keys: set[str]) -> dict[str, Any] | None:
    """Decode a token from :func:`encode_token`.

    Raises:
        InvalidRequest: the token is not one this API issued (field ``nextToken``).
    """
    if not token:
        return None
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest("nextToken is not a token returned by this API", details=[{"field": "nextToken"}]) from exc
    if not isinstance(data, dict) or set(data) != allowed_keys or not all(isinstance(v, str) for v in data.values()):
        raise InvalidRequest("nextToken is not a token returned by this API", details=[{"field": "nextToken"}])
    return serialize(data)


class Store:
    """Repository of the control plane's records in one DynamoDB table.

    Args:
        client: a boto3 DynamoDB client.
        table_name: the table (template resource ``Table``).
    """

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._db = client
        self.table_name = table_name

    # -- reads -------------------------------------------------------------------------------
    def get(self, pk: str, sk: str = keys.META) -> Item | None:
        """One item by key, strongly consistent, or None."""
        out = self._db.get_item(TableName=self.table_name, Key=serialize({"PK": pk, "SK": sk}), ConsistentRead=True)
        return deserialize(out["Item"]) if "Item" in out else None

    def get_cluster(self, tag: str) -> Item | None:
        """The cluster record of ``tag`` (any generation, any status) or None."""
        return self.get(keys.cluster_pk(tag))

    def get_operation(self, operation_id: str) -> Item | None:
        """The operation record or None."""
        return self.get(keys.operation_pk(operation_id))

    def get_stage(self, tag: str, generation: int, stage: StageName) -> Item | None:
        """One stage record of one generation or None."""
        return self.get(keys.cluster_pk(tag), keys.stage_sk(generation, stage))

    def get_stages(self, tag: str, generation: int) -> list[Item]:
        """Every stage record of a generation, in stage order."""
        out = self._db.query(
            TableName=self.table_name,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :prefix)",
            ExpressionAttributeValues=serialize(
                {":pk": keys.cluster_pk(tag), ":prefix": keys.stage_prefix(generation)}
            ),
            ConsistentRead=True,
        )
        return [deserialize(i) for i in out.get("Items", [])]

    def list_clusters(self, limit: int, next_token: str | None) -> tuple[list[Item], str | None]:
        """A page of cluster records ordered by tag, and the token of the next page (or None).

        Raises:
            InvalidRequest: ``next_token`` was not issued by this API.
        """
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": keys.GSI1,
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": serialize({":pk": keys.CLUSTERS_INDEX_PK}),
            "Limit": limit,
        }
        start = decode_token(next_token, {"PK", "SK", "GSI1PK", "GSI1SK"})
        if start:
            # DynamoDB rejects a start key outside the queried partition (a 500 for an edited token).
            plain = deserialize(start)
            if plain["GSI1PK"] != keys.CLUSTERS_INDEX_PK or plain["SK"] != keys.META or plain["PK"] != plain["GSI1SK"]:
                raise InvalidRequest("nextToken is not a token returned by this API", details=[{"field": "nextToken"}])
            kwargs["ExclusiveStartKey"] = start
        out = self._db.query(**kwargs)
        return [deserialize(i) for i in out.get("Items", [])], encode_token(out.get("LastEvaluatedKey"))

    # -- writes ------------------------------------------------------------------------------
    def update(
        self,
        pk: str,
        sk: str,
        updates: Mapping[str, Any],
        *,
        expected_status: Sequence[str] | None = None,
        removes: Iterable[str] = (),
    ) -> Item:
        """Update attributes of an existing item, conditional on its current ``status``.

        Returns the item after the update.

        Raises:
            ConditionFailed: the item is missing or its status is not one of ``expected_status``.
        """
        expr, names, values = _update_expression(updates, removes)
        condition = _status_condition(expected_status, names, values)
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": serialize({"PK": pk, "SK": sk}),
            "UpdateExpression": expr,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ReturnValues": "ALL_NEW",
        }
        if values:
            kwargs["ExpressionAttributeValues"] = values
        try:
            out = self._db.update_item(**kwargs)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"{pk}/{sk}: status not in {expected_status}") from exc
            raise
        return deserialize(out["Attributes"])

    def merge_map(
        self, pk: str, sk: str, attribute: str, entries: Mapping[str, Any], updates: Mapping[str, Any] | None = None
    ) -> Item:
        """Set ``entries`` as keys of the map ``attribute`` (other keys untouched), plus top-level ``updates``.

        Each key is its own ``SET #map.#key`` clause, so parallel writers of different keys never lose
        each other's writes (a read-modify-write of the whole map would).

        Raises:
            ConditionFailed: the item or its map does not exist.
        """
        names: dict[str, str] = {"#map": attribute}
        values: dict[str, Any] = {}
        clauses = []
        for i, (key, value) in enumerate(entries.items()):
            names[f"#k{i}"] = key
            values[f":k{i}"] = _SER.serialize(_dynamo(value))
            clauses.append(f"#map.#k{i} = :k{i}")
        for j, (name, value) in enumerate((updates or {}).items()):
            names[f"#u{j}"] = name
            values[f":u{j}"] = _SER.serialize(_dynamo(value))
            clauses.append(f"#u{j} = :u{j}")
        if not clauses:
            item = self.get(pk, sk)
            if item is None:
                raise ConditionFailed(f"{pk}/{sk} does not exist")
            return item
        try:
            out = self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": pk, "SK": sk}),
                UpdateExpression="SET " + ", ".join(clauses),
                ConditionExpression="attribute_exists(#map)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"{pk}/{sk}: no map {attribute}") from exc
            raise
        return deserialize(out["Attributes"])

    def transact(self, writes: Sequence[dict[str, Any]]) -> None:
        """Run ``TransactWriteItems``: all writes or none.

        Each write is ``{"put": item, "condition": expr?, "names": {...}?, "values": {...}?}`` or
        ``{"update": (pk, sk), "set": {...}, "expected_status": [...]?, "removes": [...]?}``.

        Raises:
            Conflict: a condition failed (the request raced another writer or the state changed).
        """
        items: list[dict[str, Any]] = []
        for w in writes:
            if "put" in w:
                put: dict[str, Any] = {"TableName": self.table_name, "Item": serialize(w["put"])}
                if w.get("condition"):
                    put["ConditionExpression"] = w["condition"]
                if w.get("names"):
                    put["ExpressionAttributeNames"] = w["names"]
                if w.get("values"):
                    put["ExpressionAttributeValues"] = serialize(w["values"])
                items.append({"Put": put})
            else:
                pk, sk = w["update"]
                expr, names, values = _update_expression(w["set"], w.get("removes", ()))
                condition = _status_condition(w.get("expected_status"), names, values)
                if w.get("extra_condition"):
                    condition += " AND " + w["extra_condition"]
                    names.update(w.get("extra_names", {}))
                    values.update(serialize(w.get("extra_values", {})))
                upd: dict[str, Any] = {
                    "TableName": self.table_name,
                    "Key": serialize({"PK": pk, "SK": sk}),
                    "UpdateExpression": expr,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": names,
                }
                if values:
                    upd["ExpressionAttributeValues"] = values
                items.append({"Update": upd})
        try:
            self._db.transact_write_items(TransactItems=cast(Any, items))
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException":
                raise Conflict("the request conflicts with a concurrent change; read the state and retry") from exc
            raise
