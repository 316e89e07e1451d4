"""The routes of clusters and operations."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, cast

from instantstart_client.api.errors import ApiError
from instantstart_client.api.operations import OperationsApi
from instantstart_client.shapes import (
    Cluster,
    ClusterEventPage,
    ClusterPage,
    ClusterSummary,
    InstanceGroupSpec,
    Operation,
    OperationPage,
    Stage,
)


class ClustersApi(OperationsApi):
    """``/clusters`` (list, create, import, get, stages, events, retry, delete, operations) and ``/operations``."""

    def list_clusters(self, max_results: int | None = None, next_token: str | None = None) -> ClusterPage:
        """``GET /clusters``: one page of clusters.

        Returns:
            ``{"clusters": [ClusterSummary], "nextToken": str | None}``; ClusterSummary is
            ``{clusterTag, status, availabilityZone, createdAt, updatedAt, eksClusterName,
            hyperPodClusterName}``.

        Raises:
            ApiError: 422 for an out-of-range ``maxResults`` or a bad ``nextToken``.
        """
        page = self.call_operation("ListClusters", {"maxResults": max_results, "nextToken": next_token})
        return cast(ClusterPage, page)

    def iter_clusters(self, page_size: int | None = None) -> Iterator[ClusterSummary]:
        """Every cluster, following ``nextToken`` page by page (lazily).

        Raises:
            ApiError: as :meth:`list_clusters`; also ``InvalidResponse`` if the server repeats a token.
        """
        token: str | None = None
        seen: set[str] = set()
        while True:
            page = self.list_clusters(max_results=page_size, next_token=token)
            yield from page.get("clusters") or []
            token = page.get("nextToken")
            if not token:
                return
            if token in seen:
                raise ApiError(200, "InvalidResponse", f"GET /clusters repeated nextToken {token!r}")
            seen.add(token)

    def create_cluster(
        self,
        cluster_tag: str,
        availability_zone: str,
        instance_groups: Sequence[InstanceGroupSpec],
        *,
        kubernetes_version: str | None = None,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``POST /clusters``: start creating a cluster (stages network → ... → verify).

        Args:
            cluster_tag: the cluster's tag (names ``eks-cluster-<tag>``, ``hp-cluster-<tag>``).
            availability_zone: zone of the HyperPod compute subnet, e.g. ``us-west-2c``.
            instance_groups: ``[{"instanceGroupName", "instanceType", "instanceCount", "capacityType"}]``.
            kubernetes_version: EKS version (server default when None).
            idempotency_key: ``Idempotency-Key``; the same key and body returns the same operation
                (generated per call when None, which still makes this call's retries safe).

        Returns:
            The Operation (``type`` ``CREATE_CLUSTER``) from the 202 answer.

        Raises:
            ApiError: 422 validation (field details), 409 the tag is in use or the key was used with a
                different body, 429/503 after retries.
        """
        body: dict[str, Any] = {
            "clusterTag": cluster_tag,
            "availabilityZone": availability_zone,
            "instanceGroups": [dict(g) for g in instance_groups],
        }
        if kubernetes_version is not None:
            body["kubernetesVersion"] = kubernetes_version
        op = self.call_operation("CreateCluster", body=body, idempotency_key=idempotency_key)
        return cast(Operation, op)

    def import_cluster(
        self,
        eks_cluster_name: str,
        cluster_tag: str,
        *,
        hyper_pod_cluster_name: str | None = None,
        availability_zone: str | None = None,
        instance_groups: Sequence[InstanceGroupSpec] | None = None,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``POST /clusters/import``: bring an existing EKS cluster (and its HyperPod cluster) under management.

        Stages whose resources exist are recorded SUCCEEDED and ``imported``; the missing ones run (an
        ``IMPORT_CLUSTER`` operation). A later delete removes only what the control plane created.

        Args:
            eks_cluster_name: the existing EKS cluster.
            cluster_tag: the tag to manage it under.
            hyper_pod_cluster_name: an existing HyperPod cluster orchestrated by it, imported with it.
            availability_zone: without ``hyper_pod_cluster_name``: zone of the compute subnet (server default:
                the zone of the cluster's first subnet).
            instance_groups: without ``hyper_pod_cluster_name`` (required then): the groups of the HyperPod
                cluster the control plane creates.
            idempotency_key: ``Idempotency-Key`` (generated per call when None).

        Returns:
            The Operation (``type`` ``IMPORT_CLUSTER``) from the 202 answer.

        Raises:
            ApiError: 404 unknown EKS or HyperPod cluster, 422 CONFIG_MAP-only authentication or an unsupported
                Kubernetes version (details name the field), 409 the tag is in use.
        """
        body: dict[str, Any] = {"eksClusterName": eks_cluster_name, "clusterTag": cluster_tag}
        if hyper_pod_cluster_name is not None:
            body["hyperPodClusterName"] = hyper_pod_cluster_name
        if availability_zone is not None:
            body["availabilityZone"] = availability_zone
        if instance_groups is not None:
            body["instanceGroups"] = [dict(g) for g in instance_groups]
        op = self.call_operation("ImportCluster", body=body, idempotency_key=idempotency_key)
        return cast(Operation, op)

    def get_cluster(self, cluster_tag: str) -> Cluster:
        """``GET /clusters/{clusterTag}``: the cluster with its stages, EKS, HyperPod, nodes, storage.

        Raises:
            ApiError: 404 ``NotFound`` for an unknown tag.
        """
        return cast(Cluster, self.call_operation("GetCluster", {"clusterTag": cluster_tag}))

    def get_stages(self, cluster_tag: str) -> list[Stage]:
        """``GET /clusters/{clusterTag}/stages``: the stages of the cluster's current generation, in order.

        Returns:
            ``[Stage]``; Stage is ``{name, order, status, attempts, startedAt, endedAt, observedStatus,
            resources, error}``.

        Raises:
            ApiError: 404 for an unknown tag.
        """
        answer = self.call_operation("ListStages", {"clusterTag": cluster_tag})
        return cast(list[Stage], (answer or {}).get("stages") or [])

    def list_cluster_events(
        self,
        cluster_tag: str,
        *,
        max_results: int | None = None,
        next_token: str | None = None,
        level: str | None = None,
        instance_group_name: str | None = None,
    ) -> ClusterEventPage:
        """``GET /clusters/{clusterTag}/events``: one page of the cluster's HyperPod events, newest first.

        Args:
            cluster_tag: the cluster's tag (events of ``hp-cluster-<tag>``).
            max_results: most events on the page, 1-100 (server default 20 when None).
            next_token: ``nextToken`` of the previous page, asked with the same filters.
            level: only events of this level: ``Info``, ``Warn`` or ``Error``.
            instance_group_name: only events of this instance group.

        Returns:
            ``{"clusterTag", "hyperPodClusterName", "events": [ClusterEvent], "nextToken"}``; ClusterEvent is
            ``{eventId, eventTime, eventLevel, description, instanceGroupName, instanceId, resourceType,
            operationId, failureMessage, failureMessageNote}`` (an Error event's ``failureMessage``: the reason
            behind it, e.g. EC2's capacity message; ``failureMessageNote``: why it was not read). Empty while
            the HyperPod cluster does not exist yet. With ``level`` a page may be short (even empty) while
            ``nextToken`` is set.

        Raises:
            ApiError: 404 ``ClusterNotFound``; 400 for a ``nextToken`` the API did not issue for this listing;
                422 for a bad level, range or group name; 503 when SageMaker is unavailable.
        """
        arguments = {
            "clusterTag": cluster_tag,
            "maxResults": max_results,
            "nextToken": next_token,
            "level": level,
            "instanceGroupName": instance_group_name,
        }
        page = self.call_operation("ListClusterEvents", arguments)
        return cast(ClusterEventPage, page)

    def retry_stage(self, cluster_tag: str, stage: str, *, idempotency_key: str | None = None) -> Operation:
        """``POST /clusters/{clusterTag}/stages/{stage}/retry``: run a FAILED stage and the ones after it.

        Returns:
            The Operation (``type`` ``RETRY_STAGE``) from the 202 answer.

        Raises:
            ApiError: 404 unknown cluster; 422 unknown stage name (lists the stages); 409 when the stage
                is not FAILED (the message names its status) or another operation is running.
        """
        arguments = {"clusterTag": cluster_tag, "stage": stage}
        op = self.call_operation("RetryStage", arguments, idempotency_key=idempotency_key)
        return cast(Operation, op)

    def reconcile_cluster(self, cluster_tag: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/reconcile``: check the cluster for drift now, repair what the control plane
        owns.

        Returns:
            The ``RECONCILE_CLUSTER`` Operation (202, it has ``operationId``) when something is repaired, else the
            answer that nothing differs (200: ``clusterTag``, ``drift`` empty, ``checkedAt``, ``message``).

        Raises:
            ApiError: 404 unknown cluster; 409 ``DriftNotRepairable`` (drift none of which is the control plane's
                to repair; ``details`` name each resource and why), ``OperationInProgress`` or ``ClusterNotReady``.
        """
        answer = self.call_operation("ReconcileCluster", {"clusterTag": cluster_tag}, idempotency_key=idempotency_key)
        return cast(dict[str, Any], answer)

    def delete_cluster(self, cluster_tag: str, *, idempotency_key: str | None = None) -> Operation:
        """``DELETE /clusters/{clusterTag}``: start deleting the cluster's AWS and Kubernetes resources.

        Returns:
            The Operation (``type`` ``DELETE_CLUSTER``) from the 202 answer.

        Raises:
            ApiError: 404 unknown tag; 409 while another operation is running.
        """
        op = self.call_operation("DeleteCluster", {"clusterTag": cluster_tag}, idempotency_key=idempotency_key)
        return cast(Operation, op)

    def get_operation(self, operation_id: str) -> Operation:
        """``GET /operations/{operationId}``.

        Returns:
            ``{operationId, type, status, clusterTag, statusUrl, createdAt, updatedAt, endedAt, error}``;
            status is PENDING, RUNNING, SUCCEEDED, FAILED or CANCELLED.

        Raises:
            ApiError: 404 for an unknown id.
        """
        return cast(Operation, self.call_operation("GetOperation", {"operationId": operation_id}))

    def cancel_operation(self, operation_id: str, *, idempotency_key: str | None = None) -> Operation:
        """``POST /operations/{operationId}/cancel``: stop a PENDING or RUNNING operation's workflow.

        The operation ends CANCELLED, the stage it was running CANCELLED and the cluster FAILED, from which
        the cluster can be deleted (:meth:`delete_cluster` tears down whatever exists) or the stage retried.
        Cancelling a CANCELLED operation answers it again.

        Returns:
            The CANCELLED Operation from the 202 answer.

        Raises:
            ApiError: 404 ``OperationNotFound``; 409 ``OperationAlreadyEnded`` when it ended SUCCEEDED or FAILED
                (``details[0]["status"]`` names it); 503 when Step Functions did not stop it (nothing changed).
        """
        arguments = {"operationId": operation_id}
        op = self.call_operation("CancelOperation", arguments, idempotency_key=idempotency_key)
        return cast(Operation, op)

    def list_cluster_operations(
        self, cluster_tag: str, *, max_results: int | None = None, next_token: str | None = None
    ) -> OperationPage:
        """``GET /clusters/{clusterTag}/operations``: one page of the control plane's operations on the cluster.

        Args:
            cluster_tag: the cluster's tag (operations of every generation; also listed after it was DELETED).
            max_results: most operations on the page, 1-100 (server default 20 when None).
            next_token: ``nextToken`` of the previous page.

        Returns:
            ``{"clusterTag", "operations": [Operation], "nextToken"}``, newest first.

        Raises:
            ApiError: 404 ``ClusterNotFound`` for a tag never used; 400 for a ``nextToken`` the API did not issue
                for this listing; 422 for an out-of-range ``maxResults``.
        """
        arguments = {"clusterTag": cluster_tag, "maxResults": max_results, "nextToken": next_token}
        page = self.call_operation("ListClusterOperations", arguments)
        return cast(OperationPage, page)
