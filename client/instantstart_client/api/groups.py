"""The routes of a cluster's instance groups, autoscaling and features."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from instantstart_client.api.operations import OperationsApi
from instantstart_client.shapes import AutoScaling, InstanceGroupList, InstanceGroupSpec, Operation


class InstanceGroupsApi(OperationsApi):
    """``/clusters/{clusterTag}/instance-groups``, ``.../autoscaling`` and ``.../features``."""

    def list_instance_groups(self, cluster_tag: str) -> InstanceGroupList:
        """``GET /clusters/{clusterTag}/instance-groups``: the groups as HyperPod reports them now.

        Returns:
            ``{"clusterTag", "hyperPodClusterName", "hyperPodStatus", "instanceGroups": [{"instanceGroupName",
            "instanceType", "targetCount", "currentCount", "capacityType", "trainingPlanArn", "status", "subnetIds",
            "labels"}]}``.

        Raises:
            ApiError: 404 ``ClusterNotFound``.
        """
        return cast(InstanceGroupList, self.call_operation("ListInstanceGroups", {"clusterTag": cluster_tag}))

    def add_instance_group(
        self, cluster_tag: str, group: InstanceGroupSpec, *, idempotency_key: str | None = None
    ) -> Operation:
        """``POST /clusters/{clusterTag}/instance-groups``: start adding a group (``ADD_INSTANCE_GROUP``).

        Raises:
            ApiError: 404 unknown cluster; 409 an operation is running (names it), the name is taken, or the
                cluster is not READY/DEGRADED; 422 a field breaks its rule.
        """
        arguments = {"clusterTag": cluster_tag}
        op = self.call_operation("AddInstanceGroup", arguments, body=dict(group), idempotency_key=idempotency_key)
        return cast(Operation, op)

    def update_instance_group(
        self,
        cluster_tag: str,
        instance_group_name: str,
        changes: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``PATCH /clusters/{clusterTag}/instance-groups/{instanceGroupName}``: scale or relabel a group.

        Args:
            changes: ``{"instanceCount": n}`` (0 allowed) and/or ``{"labels": {...}}``; ``instanceType``,
                ``capacityType``, ``trainingPlanArn`` and ``subnetId`` only with their current values.

        Returns:
            The Operation (``SCALE_INSTANCE_GROUP`` or ``UPDATE_INSTANCE_GROUP``) from the 202 answer.

        Raises:
            ApiError: 404 unknown cluster or group; 409 ``ImmutableField`` (``details[0]["field"]`` names it) or an
                operation is running; 422 a field breaks its rule.
        """
        arguments = {"clusterTag": cluster_tag, "instanceGroupName": instance_group_name}
        op = self.call_operation("UpdateInstanceGroup", arguments, body=dict(changes), idempotency_key=idempotency_key)
        return cast(Operation, op)

    def delete_instance_group(
        self, cluster_tag: str, instance_group_name: str, *, idempotency_key: str | None = None
    ) -> Operation:
        """``DELETE /clusters/{clusterTag}/instance-groups/{instanceGroupName}``: remove a group and its instances.

        Raises:
            ApiError: 404 unknown cluster or group; 409 ``LastInstanceGroup`` or an operation is running.
        """
        arguments = {"clusterTag": cluster_tag, "instanceGroupName": instance_group_name}
        op = self.call_operation("DeleteInstanceGroup", arguments, idempotency_key=idempotency_key)
        return cast(Operation, op)

    def get_autoscaling(self, cluster_tag: str) -> AutoScaling:
        """``GET /clusters/{clusterTag}/autoscaling``: managed Karpenter of the cluster.

        Returns:
            ``{"clusterTag", "mode", "status", "failureMessage", "clusterRoleArn", "nodePool", "nodeClass",
            "instanceGroups", "limits", "consolidateAfter", ...}``: HyperPod's AutoScaling now, and what the last
            autoscaling operation applied.

        Raises:
            ApiError: 404 unknown cluster.
        """
        return cast(AutoScaling, self.call_operation("GetAutoScaling", {"clusterTag": cluster_tag}))

    def update_autoscaling(
        self,
        cluster_tag: str,
        *,
        enabled: bool,
        instance_groups: list[str] | None = None,
        limits: Mapping[str, str | int] | None = None,
        consolidate_after: str | None = None,
        idempotency_key: str | None = None,
    ) -> Operation:
        """``PUT /clusters/{clusterTag}/autoscaling``: turn managed Karpenter on (with these groups) or off.

        Args:
            enabled: True for on (``instance_groups`` required), False for off (no other argument).
            instance_groups: 1-10 groups Karpenter scales: each at 0 instances, On-Demand, no on-start deep health
                checks, all in one zone.
            limits: the NodePool's resource limits, e.g. ``{"nvidia.com/gpu": 64}``.
            consolidate_after: Karpenter duration before an empty or underutilised node is removed (default 30s).

        Returns:
            The ``UPDATE_AUTOSCALING`` Operation from the 202 answer.

        Raises:
            ApiError: 404 unknown cluster or group; 409 a rule is broken (``code`` names it, e.g.
                ``KarpenterGroupNotAtZero``, and ``details[0]["instanceGroupName"]`` the group) or an operation
                runs; 422 a field breaks its rule.
        """
        body: dict[str, Any] = {"enabled": enabled}
        if instance_groups is not None:
            body["instanceGroups"] = list(instance_groups)
        if limits is not None:
            body["limits"] = dict(limits)
        if consolidate_after is not None:
            body["consolidateAfter"] = consolidate_after
        arguments = {"clusterTag": cluster_tag}
        op = self.call_operation("UpdateAutoScaling", arguments, body=body, idempotency_key=idempotency_key)
        return cast(Operation, op)

    def get_features(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/features``: each managed feature observed now, desired, and what it installed.

        Returns:
            ``{"clusterTag", "kubernetesVersion", "features": {key: {"enabled", "desired", "version", "status",
            "settings", "managed", "addons", "roles", "podIdentityAssociations", "kubernetesObjects", "buckets"}}}``.

        Raises:
            ApiError: 404 ``ClusterNotFound``.
        """
        return dict(self.call_operation("GetClusterFeatures", {"clusterTag": cluster_tag}))

    def update_features(
        self, cluster_tag: str, features: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``PATCH /clusters/{clusterTag}/features``: only the features given act (an explicit diff).

        Args:
            features: e.g. ``{"trainingOperator": {"enabled": true}, "tieredCheckpointing": {"enabled": true,
                "instanceMemoryAllocationPercentage": 20}}``.

        Returns:
            The ``UPDATE_FEATURES`` Operation (202; its ``features`` map holds each feature's outcome), or, when AWS
            already matches the body, ``{"clusterTag", "features": {key: {"result": "unchanged"}}}`` (200).

        Raises:
            ApiError: 404 unknown cluster; 409 an operation is running or the cluster is not READY/DEGRADED;
                422 an unknown feature or a value out of range (``details[0]["field"]`` names it).
        """
        arguments = {"clusterTag": cluster_tag}
        out = self.call_operation(
            "UpdateClusterFeatures", arguments, body=dict(features), idempotency_key=idempotency_key
        )
        return dict(out)
