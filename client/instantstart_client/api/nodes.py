"""The routes of a cluster's nodes and HyperPod operations (day 2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from instantstart_client.api.operations import OperationsApi
from instantstart_client.shapes import ClusterNodePage, HyperPodOperation, HyperPodOperationPage, Operation


class NodesApi(OperationsApi):
    """``/clusters/{clusterTag}/nodes``, software updates, deep health checks and HyperPod's operations."""

    # -- nodes and HyperPod operations (day 2) -------------------------------------------------------

    def list_cluster_nodes(
        self,
        cluster_tag: str,
        *,
        max_results: int | None = None,
        next_token: str | None = None,
        instance_group_name: str | None = None,
    ) -> ClusterNodePage:
        """``GET /clusters/{clusterTag}/nodes``: one page of the cluster's nodes, oldest launch first.

        Returns:
            ``{"clusterTag", "hyperPodClusterName", "nodes": [ClusterNode], "nextToken"}``; each node has its
            instance id and status, Kubernetes node name and last observed ``healthStatus`` label (None when never
            observed). Empty while the HyperPod cluster does not exist.

        Raises:
            ApiError: 404 ``ClusterNotFound``; 400 for a ``nextToken`` of another listing; 422 bad range or name.
        """
        arguments = {
            "clusterTag": cluster_tag,
            "maxResults": max_results,
            "nextToken": next_token,
            "instanceGroupName": instance_group_name,
        }
        page = self.call_operation("ListClusterNodes", arguments)
        return cast(ClusterNodePage, page)

    def _node_action(self, operation_id: str, cluster_tag: str, node_ids: list[str], key: str | None) -> Operation:
        answer = self.call_operation(
            operation_id, {"clusterTag": cluster_tag}, body={"nodeIds": node_ids}, idempotency_key=key
        )
        return cast(Operation, answer)

    def reboot_cluster_nodes(
        self, cluster_tag: str, node_ids: list[str], *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/nodes/reboot``: reboot 1-25 nodes (same instance ids).

        Returns:
            The ``REBOOT_CLUSTER_NODES`` Operation from the 202 answer (follow it with :meth:`wait_for_operation`):
            SUCCEEDED once every accepted node is Running and Ready/Schedulable again; ``result.failed`` lists the
            nodes HyperPod refused (code and message verbatim), FAILED when it refused every node.

        Raises:
            ApiError: 422 naming ``nodeIds[i]`` for an id that is not a node of the cluster (nothing done); 409
                when the cluster is not READY/DEGRADED (names the status) or another operation runs (names it).
        """
        return self._node_action("RebootClusterNodes", cluster_tag, node_ids, idempotency_key)

    def replace_cluster_nodes(
        self, cluster_tag: str, node_ids: list[str], *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/nodes/replace``: replace 1-25 nodes with new instances (new ids).

        Returns:
            The ``REPLACE_CLUSTER_NODES`` Operation: SUCCEEDED once the old ids are gone and the group is back at
            its target with Running nodes.

        Raises:
            ApiError: as :meth:`reboot_cluster_nodes`.
        """
        return self._node_action("ReplaceClusterNodes", cluster_tag, node_ids, idempotency_key)

    def delete_cluster_nodes(
        self, cluster_tag: str, node_ids: list[str], *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/nodes/delete``: delete nodes; their group's count is lowered (destructive).

        Returns:
            The ``DELETE_CLUSTER_NODES`` Operation: SUCCEEDED once the ids are gone and the targets lowered.

        Raises:
            ApiError: as :meth:`reboot_cluster_nodes`.
        """
        return self._node_action("DeleteClusterNodes", cluster_tag, node_ids, idempotency_key)

    def update_cluster_software(
        self, cluster_tag: str, body: Mapping[str, Any] | None = None, *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/software-update``: patch the nodes' AMI (``UpdateClusterSoftware``).

        Args:
            cluster_tag: the cluster.
            body: ``{"instanceGroupNames"?, "deploymentConfig"?, "imageId"?}`` (camelCase); None for every group.
            idempotency_key: optional ``Idempotency-Key``.

        Returns:
            The ``UPDATE_CLUSTER_SOFTWARE`` Operation: SUCCEEDED once HyperPod's cluster and groups are InService
            with the update Succeeded; FAILED with HyperPod's words when it failed or rolled back.

        Raises:
            ApiError: 409 cluster not READY/DEGRADED or an operation runs; 422 unknown group (names the field).
        """
        arguments = {"clusterTag": cluster_tag}
        answer = self.call_operation(
            "UpdateClusterSoftware", arguments, body=dict(body or {}), idempotency_key=idempotency_key
        )
        return cast(Operation, answer)

    def start_cluster_health_check(
        self,
        cluster_tag: str,
        instance_groups: Sequence[Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``POST /clusters/{clusterTag}/health-checks``: deep health checks (``StartClusterHealthCheck``).

        Args:
            cluster_tag: the cluster.
            instance_groups: ``[{"instanceGroupName", "deepHealthChecks": [...], "instanceIds"?}]``.
            idempotency_key: optional ``Idempotency-Key``.

        Returns:
            The ``START_CLUSTER_HEALTH_CHECK`` Operation (``result.hyperPodOperationId`` once started): SUCCEEDED
            when HyperPod's DeepHealthCheck operation is Done with every node passed; FAILED with HyperPod's
            failure message when a node failed (``result.failed`` lists them).

        Raises:
            ApiError: 409 cluster not READY/DEGRADED or an operation runs; 422 unknown group or instance.
        """
        body = {"instanceGroups": [dict(g) for g in instance_groups]}
        arguments = {"clusterTag": cluster_tag}
        answer = self.call_operation("StartClusterHealthCheck", arguments, body=body, idempotency_key=idempotency_key)
        return cast(Operation, answer)

    def list_hyperpod_operations(
        self,
        cluster_tag: str,
        *,
        max_results: int | None = None,
        next_token: str | None = None,
        status: str | None = None,
        type: str | None = None,
    ) -> HyperPodOperationPage:
        """``GET /clusters/{clusterTag}/hyperpod-operations``: HyperPod's operations, newest first.

        Raises:
            ApiError: 404 ``ClusterNotFound``; 400 foreign ``nextToken``; 422 bad status/type (lists the values).
        """
        arguments = {
            "clusterTag": cluster_tag,
            "maxResults": max_results,
            "nextToken": next_token,
            "status": status,
            "type": type,
        }
        page = self.call_operation("ListHyperPodOperations", arguments)
        return cast(HyperPodOperationPage, page)

    def get_hyperpod_operation(self, cluster_tag: str, operation_id: str) -> HyperPodOperation:
        """``GET /clusters/{clusterTag}/hyperpod-operations/{operationId}``: one operation with its newest events.

        Raises:
            ApiError: 404 ``ClusterNotFound`` or ``HyperPodOperationNotFound``.
        """
        arguments = {"clusterTag": cluster_tag, "hyperPodOperationId": operation_id}
        return cast(HyperPodOperation, self.call_operation("GetHyperPodOperation", arguments))
