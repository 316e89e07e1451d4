"""The cluster record (``CLUSTER#<tag>`` / ``META``): reads, the create of a generation, what stages and events
observed, the day-2 records written on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from botocore.exceptions import ClientError

from instantstart.models.cluster import EksView, HyperPodView, InstanceGroupRequest, NodeView, StorageView
from instantstart.models.common import ClusterStatus, StageName, StageStatus
from instantstart.models.drift import DriftItem
from instantstart.models.features import UpdateFeaturesRequest
from instantstart.models.mlflow import MlflowConnection
from instantstart.models.records import ClusterRecord, OperationRecord, StageRecord
from instantstart.store import keys
from instantstart.store.base import StoreBase, _Put, _Write
from instantstart.store.codec import RECORD_GROWTH_BYTES, Item, decode_token, deserialize, encode_token, serialize
from instantstart.store.errors import ConditionFailed, InvalidPageToken
from instantstart.store.operations import _operation_item
from instantstart.store.stages import _stage_item

_UNSET: Any = object()


def _cluster_item(record: ClusterRecord) -> Item:
    return {
        "PK": keys.cluster_pk(record.cluster_tag),
        "SK": keys.META,
        "GSI1PK": keys.CLUSTERS_INDEX_PK,
        "GSI1SK": keys.cluster_index_sk(record.cluster_tag),
        **record.to_item(),
    }


class ClusterStore(StoreBase):
    """The cluster records' methods of :class:`~instantstart.store.table.Store`."""

    def get_cluster(self, tag: str) -> ClusterRecord | None:
        """The cluster record of ``tag`` (any generation, any status) or None."""
        item = self._get(keys.cluster_pk(tag))
        return ClusterRecord.model_validate(item) if item else None

    def list_clusters(self, limit: int, next_token: str | None) -> tuple[list[ClusterRecord], str | None]:
        """A page of cluster records ordered by tag, and the token of the next page (or None).

        Raises:
            InvalidPageToken: ``next_token`` was not issued by this store.
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
                raise InvalidPageToken("the token points outside the cluster listing")
            kwargs["ExclusiveStartKey"] = start
        out = self._db.query(**kwargs)
        records = [ClusterRecord.model_validate(deserialize(i)) for i in out.get("Items", [])]
        return records, encode_token(out.get("LastEvaluatedKey"))

    def create_cluster(
        self,
        cluster: ClusterRecord,
        stages: Sequence[StageRecord],
        operation: OperationRecord,
        *,
        replaces_generation: int | None,
    ) -> None:
        """Write a new cluster generation, its PENDING stages and its PENDING operation, all or nothing.

        ``replaces_generation`` is the generation of the DELETED record this one replaces (None for a
        tag never used): the write is conditional on that record still being DELETED at that generation.

        Raises:
            ConditionFailed: the tag has a live record (or a concurrent create won); nothing was written.
            ItemTooLarge: the cluster or operation record would not fit DynamoDB's item size with
                ``RECORD_GROWTH_BYTES`` kept free (a create request too large to store); nothing was written.
        """
        put = _Put(_cluster_item(cluster), reserve=RECORD_GROWTH_BYTES)
        if replaces_generation is not None:
            # Overwrite the DELETED record of the previous generation, only if it is still that record.
            put = _Put(
                put.item,
                "#s = :deleted AND #gen = :gen",
                {"#s": "status", "#gen": "generation"},
                {":deleted": ClusterStatus.DELETED.value, ":gen": replaces_generation},
                reserve=RECORD_GROWTH_BYTES,
            )
        op_put = _Put(_operation_item(operation), reserve=RECORD_GROWTH_BYTES)
        self._transact([put, op_put, *(_Put(_stage_item(s)) for s in stages)])

    def record_desired_features(self, tag: str, desired: UpdateFeaturesRequest, now: str) -> ClusterRecord:
        """Store what PATCH /features applied, by feature key (``desiredFeatures``, the whole map; written by the
        cluster's one running operation).

        Raises:
            ConditionFailed: the cluster record does not exist.
        """
        item = self._update(
            _Write(keys.cluster_pk(tag), keys.META, {"desiredFeatures": desired.wire(), "updatedAt": now})
        )
        return ClusterRecord.model_validate(item)

    def record_mlflow(self, tag: str, connection: MlflowConnection | None, now: str) -> ClusterRecord:
        """Store the cluster's MLflow connection (``mlflow``, whole; None removes it), written by the cluster's one
        running ``UPDATE_MLFLOW`` operation.

        Raises:
            ConditionFailed: the cluster record does not exist.
        """
        if connection is None:
            write = _Write(keys.cluster_pk(tag), keys.META, {"updatedAt": now}, removes=("mlflow",))
        else:
            write = _Write(
                keys.cluster_pk(tag),
                keys.META,
                {"mlflow": connection.model_dump(mode="json", by_alias=True, exclude_none=True), "updatedAt": now},
            )
        item = self._update(write)
        return ClusterRecord.model_validate(item)

    # -- observations on the cluster record --------------------------------------------------
    def record_drift(
        self,
        tag: str,
        generation: int,
        items: Sequence[DriftItem],
        *,
        more: int,
        checked_at: str,
        if_checked_at: str | None,
    ) -> ClusterRecord:
        """Store the drift found by a check (``drift``, ``driftMore``, ``driftCheckedAt``), conditional on the
        generation that was checked and on ``driftCheckedAt`` being ``if_checked_at`` (None: never checked), the
        value the check read. ``updatedAt`` is kept: a check observes, it changes nothing.

        Raises:
            ConditionFailed: the record does not exist, is of another generation, or another check stored since.
        """
        updates = {
            "drift": [i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in items],
            "driftMore": more,
            "driftCheckedAt": checked_at,
        }
        equals: dict[str, Any] = {"generation": generation}
        if if_checked_at is not None:
            equals["driftCheckedAt"] = if_checked_at
        absent = () if if_checked_at is not None else ("driftCheckedAt",)
        item = self._update(_Write(keys.cluster_pk(tag), keys.META, updates, equals=equals, absent=absent))
        return ClusterRecord.model_validate(item)

    def record_observations(
        self,
        tag: str,
        *,
        now: str,
        eks: EksView | None = _UNSET,
        hyper_pod: HyperPodView | None = _UNSET,
        nodes: Sequence[NodeView] = _UNSET,
        storage: StorageView | None = _UNSET,
        if_updated_at: str | None = None,
    ) -> ClusterRecord:
        """Record what a stage or an event observed on the cluster record (only the views passed).

        A view passed as None is removed. With ``if_updated_at``, the write is conditional on the record
        not having changed since it was read (for read-modify-write of ``nodes``).

        Raises:
            ConditionFailed: the record does not exist, or changed since ``if_updated_at``.
        """
        updates: dict[str, Any] = {"updatedAt": now}
        removes: list[str] = []
        for attribute, view in (("eks", eks), ("hyperPod", hyper_pod), ("storage", storage)):
            if view is _UNSET:
                continue
            if view is None:
                removes.append(attribute)
                if attribute == "hyperPod":
                    removes.extend(["hyperPodObservedAt", "hyperPodPolledAt"])
            else:
                updates[attribute] = view.model_dump(mode="json", by_alias=True, exclude_none=True)
        if nodes is not _UNSET:
            updates["nodes"] = [n.model_dump(mode="json", by_alias=True, exclude_none=True) for n in nodes]
        equals = {"updatedAt": if_updated_at} if if_updated_at is not None else {}
        item = self._update(_Write(keys.cluster_pk(tag), keys.META, updates, removes=removes, equals=equals))
        return ClusterRecord.model_validate(item)

    def record_hyperpod_observation(
        self, tag: str, view: HyperPodView, *, now: str, event_time: str | None = None
    ) -> bool:
        """Record the HyperPod cluster as a poll (``event_time`` None) or an event observed it.

        Events arrive late and out of order, and their ``time`` has one-second resolution. An event is
        recorded only when it is newer than every recorded poll (``hyperPodPolledAt`` < its time: a
        poll in the same second may have read a later state than the event carries) and not older
        than the newest recorded event (``hyperPodObservedAt`` <= its time: two events of one second
        keep their delivery order). A poll (DescribeCluster) is a fresh read: it is always recorded
        and moves ``hyperPodPolledAt`` forward to ``now``. Returns False when an event was not newer
        (nothing written).

        Raises:
            ConditionFailed: the cluster record is missing.
        """
        key = serialize({"PK": keys.cluster_pk(tag), "SK": keys.META})
        hp = view.model_dump(mode="json", by_alias=True, exclude_none=True)
        if event_time is None:
            self._update(_Write(keys.cluster_pk(tag), keys.META, {"hyperPod": hp, "updatedAt": now}))
            with suppress(ClientError):  # a later poll's mark stays
                self._db.update_item(
                    TableName=self.table_name,
                    Key=key,
                    UpdateExpression="SET #polled = :at",
                    ConditionExpression="attribute_not_exists(#polled) OR #polled < :at",
                    ExpressionAttributeNames={"#polled": "hyperPodPolledAt"},
                    ExpressionAttributeValues=serialize({":at": now}),
                )
            return True
        try:
            self._db.update_item(
                TableName=self.table_name,
                Key=key,
                UpdateExpression="SET #hp = :hp, #at = :at, #ua = :ua",
                ConditionExpression=(
                    "attribute_exists(PK) AND (attribute_not_exists(#polled) OR #polled < :at)"
                    " AND (attribute_not_exists(#at) OR #at <= :at)"
                ),
                ExpressionAttributeNames={
                    "#hp": "hyperPod",
                    "#at": "hyperPodObservedAt",
                    "#polled": "hyperPodPolledAt",
                    "#ua": "updatedAt",
                },
                ExpressionAttributeValues=serialize({":hp": hp, ":ua": now, ":at": event_time}),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if self.get_cluster(tag) is None:
                raise ConditionFailed(f"cluster {tag} does not exist") from exc
            return False
        return True

    def record_instance_groups(
        self,
        tag: str,
        *,
        generation: int,
        instance_groups: Sequence[InstanceGroupRequest],
        nodes: Sequence[NodeView],
        now: str,
    ) -> ClusterRecord:
        """After a day-2 change of the instance groups: the record's ``request.instanceGroups`` and ``nodes``.

        One ``UpdateItem`` of the cluster record, conditional on ``generation`` (a change of an earlier
        generation never writes over a re-created cluster).

        Raises:
            ConditionFailed: no cluster record of that generation.
        """
        names = {
            "#req": "request",
            "#ig": "instanceGroups",
            "#nodes": "nodes",
            "#ua": "updatedAt",
            "#gen": "generation",
        }
        values = {
            ":ig": [g.model_dump(mode="json", by_alias=True, exclude_none=True) for g in instance_groups],
            ":nodes": [n.model_dump(mode="json", by_alias=True, exclude_none=True) for n in nodes],
            ":ua": now,
            ":gen": generation,
        }
        try:
            out = self._db.update_item(
                TableName=self.table_name,
                Key=serialize({"PK": keys.cluster_pk(tag), "SK": keys.META}),
                UpdateExpression="SET #req.#ig = :ig, #nodes = :nodes, #ua = :ua",
                ConditionExpression="attribute_exists(PK) AND #gen = :gen",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=serialize(values),
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ConditionFailed(f"cluster {tag} has no record of generation {generation}") from exc
            raise
        return ClusterRecord.model_validate(deserialize(out["Attributes"]))

    def recover_degraded(self, tag: str, generation: int, *, observed_status: str, now: str) -> None:
        """A DEGRADED cluster got its nodes: the cluster READY and its FAILED ``verify`` stage SUCCEEDED, atomically.

        Raises:
            ConditionFailed: the cluster is no longer DEGRADED at this generation (another writer won).
        """
        self._transact(
            [],
            [
                _Write(
                    keys.cluster_pk(tag),
                    keys.META,
                    {"status": ClusterStatus.READY.value, "updatedAt": now},
                    expected_status=[ClusterStatus.DEGRADED.value],
                    equals={"generation": generation},
                ),
                _Write(
                    keys.cluster_pk(tag),
                    keys.stage_sk(generation, StageName.VERIFY),
                    {
                        "status": StageStatus.SUCCEEDED.value,
                        "observedStatus": observed_status,
                        "endedAt": now,
                        "updatedAt": now,
                    },
                    removes=["error"],
                    expected_status=[StageStatus.FAILED.value],
                ),
            ],
        )
