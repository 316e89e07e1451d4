"""The stage records (``CLUSTER#<tag>`` / ``STAGE#<generation>#...``): reads and each stage's lifecycle."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from botocore.exceptions import ClientError

from instantstart.models.cluster import StageError
from instantstart.models.common import StageName, StageStatus
from instantstart.models.records import StageRecord
from instantstart.store import keys
from instantstart.store.base import LIVE_OPERATION, RETRYABLE_STAGE, StoreBase, _Check, _Write
from instantstart.store.codec import Item, _dynamo, _plain, _serializer, deserialize, serialize
from instantstart.store.errors import ConditionFailed


def _holds(item: Item, resources: Mapping[str, Any], observed_status: str | None) -> bool:
    """Whether a stage ``item`` (as read) already has each non-None value of ``resources`` in its ``resources`` map
    and, when given, ``observed_status``: writing them would change nothing but ``updatedAt``."""
    stored = item.get("resources")
    if not isinstance(stored, dict):
        return False
    if observed_status is not None and item.get("observedStatus") != observed_status:
        return False
    return all(value is None or stored.get(key) == _plain(_dynamo(value)) for key, value in resources.items())


def _stage_item(record: StageRecord) -> Item:
    return {
        "PK": keys.cluster_pk(record.cluster_tag),
        "SK": keys.stage_sk(record.generation, record.name),
        **record.to_item(),
    }


@dataclass
class StageCancellation:
    """What :meth:`StageStore.stage_cancellation` read: the ``updates`` that cancel the operation's RUNNING
    ``stages`` and the ``checks`` that the others did not move, for the transaction that ends the operation."""

    updates: list[_Write] = field(default_factory=list)
    checks: list[_Check] = field(default_factory=list)
    stages: list[StageName] = field(default_factory=list)


def _cancel_write(
    tag: str, generation: int, stage: StageName, *, operation_id: str, error: StageError, now: str
) -> _Write:
    """RUNNING (run by ``operation_id``) -> CANCELLED with ``error``, its waits dropped."""
    return _Write(
        keys.cluster_pk(tag),
        keys.stage_sk(generation, stage),
        {
            "status": StageStatus.CANCELLED.value,
            "error": error.model_dump(mode="json"),
            "endedAt": now,
            "updatedAt": now,
            "waits": {},
        },
        expected_status=[StageStatus.RUNNING.value],
        equals={"operationId": operation_id},
    )


BATCH_GET_KEYS = 100
"""DynamoDB ``BatchGetItem``'s limit of keys per call."""
BATCH_GET_ROUNDS = 4
"""How many times one batch's ``UnprocessedKeys`` (throttled or over 16 MB) are asked for before giving up."""


class StageStore(StoreBase):
    """The stage records' methods of :class:`~instantstart.store.table.Store`."""

    def get_stage(self, tag: str, generation: int, stage: StageName) -> StageRecord | None:
        """One stage record of one generation or None."""
        item = self._get(keys.cluster_pk(tag), keys.stage_sk(generation, stage))
        return StageRecord.model_validate(item) if item else None

    def get_stages(self, tag: str, generation: int) -> list[StageRecord]:
        """Every stage record of a generation, in stage order."""
        out = self._db.query(
            TableName=self.table_name,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :prefix)",
            ExpressionAttributeValues=serialize(
                {":pk": keys.cluster_pk(tag), ":prefix": keys.stage_prefix(generation)}
            ),
            ConsistentRead=True,
        )
        return [StageRecord.model_validate(deserialize(i)) for i in out.get("Items", [])]

    def get_stages_of(self, clusters: Sequence[tuple[str, int]]) -> dict[str, list[StageRecord]]:
        """The stage records of several clusters' current generations (``(tag, generation)`` pairs), by tag, each
        in stage order: one DynamoDB ``BatchGetItem`` per :data:`BATCH_GET_KEYS` keys (a stage missing from a
        generation is simply absent), its ``UnprocessedKeys`` asked again up to :data:`BATCH_GET_ROUNDS` times.

        Raises:
            botocore.exceptions.ClientError: DynamoDB refused a call, or keys were still unprocessed after the last
                round (code ``ProvisionedThroughputExceededException``: the API answers 503 with ``Retry-After``).
        """
        wanted = [
            {"PK": keys.cluster_pk(tag), "SK": keys.stage_sk(generation, stage)}
            for tag, generation in clusters
            for stage in StageName
        ]
        found: list[Item] = []
        for start in range(0, len(wanted), BATCH_GET_KEYS):
            pending: list[dict[str, Any]] = [serialize(k) for k in wanted[start : start + BATCH_GET_KEYS]]
            for _ in range(BATCH_GET_ROUNDS):
                out: dict[str, Any] = cast(
                    Any,
                    self._db.batch_get_item(
                        RequestItems={self.table_name: {"Keys": cast(Any, pending), "ConsistentRead": True}}
                    ),
                )
                found += [deserialize(i) for i in out.get("Responses", {}).get(self.table_name, [])]
                pending = list(out.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", []))
                if not pending:
                    break
            else:
                raise ClientError(
                    {
                        "Error": {
                            "Code": "ProvisionedThroughputExceededException",
                            "Message": f"{len(pending)} stage records were still unprocessed after "
                            f"{BATCH_GET_ROUNDS} BatchGetItem rounds",
                        }
                    },
                    "BatchGetItem",
                )
        by_tag: dict[str, list[StageRecord]] = {tag: [] for tag, _ in clusters}
        for record in sorted((StageRecord.model_validate(i) for i in found), key=lambda r: r.order):
            by_tag.setdefault(record.cluster_tag, []).append(record)
        return by_tag

    # -- lifecycle ---------------------------------------------------------------------------
    def begin_stage(self, tag: str, generation: int, stage: StageName, *, operation_id: str, now: str) -> StageRecord:
        """PENDING/FAILED/CANCELLED -> RUNNING for ``stage``, counting the attempt and noting the operation.

        Conditional on the operation still being PENDING or RUNNING (one transaction), so a step of a
        cancelled operation that Step Functions had already invoked cannot start a stage after the cancel.

        Raises:
            ConditionFailed: the stage is in another status (e.g. already RUNNING), or the operation ended.
        """
        current = self.get_stage(tag, generation, stage)
        self._transact(
            [],
            [
                _Write(
                    keys.cluster_pk(tag),
                    keys.stage_sk(generation, stage),
                    {
                        "status": StageStatus.RUNNING.value,
                        "attempts": (current.attempts if current else 0) + 1,
                        "startedAt": now,
                        "updatedAt": now,
                        "operationId": operation_id,
                        "waits": {},
                        "waitRounds": {},
                        "waitsSatisfied": {},
                    },
                    removes=["error", "endedAt"],
                    expected_status=[StageStatus.PENDING.value, *(s.value for s in RETRYABLE_STAGE)],
                )
            ],
            [_Check(keys.operation_pk(operation_id), keys.META, LIVE_OPERATION)],
        )
        record = self.get_stage(tag, generation, stage)
        assert record is not None  # written just above
        return record

    def complete_stage(
        self, tag: str, generation: int, stage: StageName, *, now: str, observed_status: str | None = None
    ) -> StageRecord:
        """RUNNING -> SUCCEEDED for ``stage`` (its task token, if any, is dropped).

        Raises:
            ConditionFailed: the stage is not RUNNING.
        """
        updates: dict[str, Any] = {"status": StageStatus.SUCCEEDED.value, "endedAt": now, "updatedAt": now}
        if observed_status is not None:
            updates["observedStatus"] = observed_status
        item = self._update(
            _Write(
                keys.cluster_pk(tag),
                keys.stage_sk(generation, stage),
                updates,
                expected_status=[StageStatus.RUNNING.value],
            )
        )
        return StageRecord.model_validate(item)

    def fail_stage(
        self,
        tag: str,
        generation: int,
        stage: StageName,
        *,
        error: StageError,
        now: str,
        from_statuses: Sequence[StageStatus] = (StageStatus.RUNNING, StageStatus.PENDING),
        operation_id: str | None = None,
    ) -> StageRecord:
        """``from_statuses`` -> FAILED for ``stage`` with ``error`` verbatim (its task token dropped).

        With ``operation_id``, only while that operation is the one running the stage.

        Raises:
            ConditionFailed: the stage is in another status (or run by another operation).
        """
        item = self._update(
            _Write(
                keys.cluster_pk(tag),
                keys.stage_sk(generation, stage),
                {
                    "status": StageStatus.FAILED.value,
                    "error": error.model_dump(mode="json"),
                    "endedAt": now,
                    "updatedAt": now,
                },
                expected_status=[s.value for s in from_statuses],
                equals={"operationId": operation_id} if operation_id else {},
            )
        )
        return StageRecord.model_validate(item)

    def cancel_stage(
        self, tag: str, generation: int, stage: StageName, *, operation_id: str, error: StageError, now: str
    ) -> StageRecord:
        """RUNNING -> CANCELLED for ``stage`` while ``operation_id`` runs it (its task tokens dropped).

        Raises:
            ConditionFailed: the stage is not RUNNING, or is run by another operation.
        """
        item = self._update(_cancel_write(tag, generation, stage, operation_id=operation_id, error=error, now=now))
        return StageRecord.model_validate(item)

    def stage_cancellation(
        self, tag: str, generation: int, *, operation_id: str, error: StageError, now: str
    ) -> StageCancellation:
        """The writes that cancel, in the transaction that ends ``operation_id``, every stage of ``generation`` it
        runs (RUNNING -> CANCELLED with ``error``), and the checks that every other stage is still as read now: a
        stage that begins or ends between this read and the transaction fails the transaction (read again), so the
        operation never ends with one of its stages left RUNNING (one DynamoDB ``Query``; at most six stages, far
        inside ``TransactWriteItems``' 100 items)."""
        cancelling = StageCancellation()
        for stage in self.get_stages(tag, generation):
            if stage.status is StageStatus.RUNNING and stage.operation_id == operation_id:
                cancelling.updates.append(
                    _cancel_write(tag, generation, stage.name, operation_id=operation_id, error=error, now=now)
                )
                cancelling.stages.append(stage.name)
            else:
                cancelling.checks.append(
                    _Check(keys.cluster_pk(tag), keys.stage_sk(generation, stage.name), [stage.status.value])
                )
        return cancelling

    def merge_stage_resources(
        self,
        tag: str,
        generation: int,
        stage: StageName,
        resources: Mapping[str, Any],
        *,
        now: str,
        observed_status: str | None = None,
    ) -> StageRecord:
        """Set ``resources`` as keys of the stage's ``resources`` map (other keys untouched).

        Each key is its own ``SET #map.#key`` clause, so parallel steps of one stage (add-ons,
        Kubernetes objects) never lose each other's writes, as a read-modify-write of the map would.
        Inside :meth:`reusing_reads`, when the stage record read there already holds every value and the
        observed status, nothing is written (``updatedAt`` is when the stage last changed, not last checked).

        Raises:
            ConditionFailed: the stage record (or its map) does not exist.
        """
        item_key = {"PK": keys.cluster_pk(tag), "SK": keys.stage_sk(generation, stage)}
        current = self._reused(item_key["PK"], item_key["SK"])
        if current is not None and _holds(current, resources, observed_status):
            return StageRecord.model_validate(copy.deepcopy(current))
        names: dict[str, str] = {"#map": "resources", "#ua": "updatedAt"}
        values: dict[str, Any] = {":ua": _serializer().serialize(now)}
        clauses = ["#ua = :ua"]
        for i, (key, value) in enumerate(resources.items()):
            if value is None:
                continue
            names[f"#k{i}"] = key
            values[f":k{i}"] = _serializer().serialize(_dynamo(value))
            clauses.append(f"#map.#k{i} = :k{i}")
        if observed_status is not None:
            names["#os"] = "observedStatus"
            values[":os"] = _serializer().serialize(observed_status)
            clauses.append("#os = :os")
        try:
            out = self._db.update_item(
                TableName=self.table_name,
                Key=serialize(item_key),
                UpdateExpression="SET " + ", ".join(clauses),
                ConditionExpression="attribute_exists(#map)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"stage {stage.value} of {tag} has no resources map") from exc
            raise
        return StageRecord.model_validate(
            self._remember(item_key["PK"], item_key["SK"], deserialize(out["Attributes"]))
        )

    def set_teardown_status(self, tag: str, generation: int, stage: StageName, status: StageStatus, now: str) -> None:
        """Record teardown progress of a stage (``teardownStatus`` RUNNING or SUCCEEDED, with its timestamp).

        Raises:
            ConditionFailed: the stage record does not exist.
        """
        stamp = "teardownStartedAt" if status is StageStatus.RUNNING else "teardownEndedAt"
        self._update(
            _Write(
                keys.cluster_pk(tag),
                keys.stage_sk(generation, stage),
                {"teardownStatus": status.value, stamp: now, "updatedAt": now},
            )
        )
