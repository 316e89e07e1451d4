"""The routes of task governance and of the catalog."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from instantstart_client.api.operations import OperationsApi
from instantstart_client.shapes import AvailabilityZone, TrainingPlan, TrainingPlanOffering


class GovernanceApi(OperationsApi):
    """``/clusters/{clusterTag}/scheduler-config``, ``.../compute-quotas`` and ``/catalog/...``."""

    # -- task governance -------------------------------------------------------------------------------
    def get_scheduler_config(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/scheduler-config``: the cluster policy as SageMaker describes it now.

        Returns:
            ``{"clusterTag", "name", "clusterSchedulerConfigId", "clusterSchedulerConfigVersion", "status",
            "failureReason", "schedulerConfig": {"priorityClasses", "fairShare", ...}, "managed", ...}``.

        Raises:
            ApiError: 404 ``ClusterNotFound`` or ``SchedulerConfigNotFound``.
        """
        return cast(dict[str, Any], self.call_operation("GetSchedulerConfig", {"clusterTag": cluster_tag}))

    def put_scheduler_config(self, cluster_tag: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``PUT /clusters/{clusterTag}/scheduler-config``: create or replace the cluster policy (202, Creating).

        Args:
            body: ``{"schedulerConfig": {"priorityClasses": [{"name", "weight"}], "fairShare"}, "targetVersion"?}``.

        Raises:
            ApiError: 409 ``FeatureNotEnabled`` (taskGovernance off), ``ConflictException`` (stale targetVersion, still
                settling); 422 a field breaks its rule.
        """
        answer = self.call_operation("PutSchedulerConfig", {"clusterTag": cluster_tag}, body=dict(body))
        return cast(dict[str, Any], answer)

    def list_compute_quotas(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/compute-quotas``: ``{"clusterTag", "computeQuotas": [...]}``.

        Raises:
            ApiError: 404 ``ClusterNotFound``.
        """
        return cast(dict[str, Any], self.call_operation("ListComputeQuotas", {"clusterTag": cluster_tag}))

    def create_compute_quota(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/compute-quotas``: a team's quota, named ``<clusterTag>-<teamName>`` (202).

        Raises:
            ApiError: 409 ``FeatureNotEnabled``, ``ConflictException`` (the team has a quota),
                ``ComputeQuotaAlreadyExists``; 422 a field breaks its rule.
        """
        arguments = {"clusterTag": cluster_tag}
        answer = self.call_operation("CreateComputeQuota", arguments, body=dict(body), idempotency_key=idempotency_key)
        return cast(dict[str, Any], answer)

    def update_compute_quota(
        self, cluster_tag: str, compute_quota_name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``PATCH /clusters/{clusterTag}/compute-quotas/{computeQuotaName}``: change the members given (202).

        Raises:
            ApiError: 404 unknown quota; 409 ``ConflictException`` (stale targetVersion), ``ImmutableField``
                (teamName), ``NotManaged``; 422 a field breaks its rule.
        """
        arguments = {"clusterTag": cluster_tag, "computeQuotaName": compute_quota_name}
        return cast(dict[str, Any], self.call_operation("UpdateComputeQuota", arguments, body=dict(body)))

    def delete_compute_quota(
        self, cluster_tag: str, compute_quota_name: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``DELETE /clusters/{clusterTag}/compute-quotas/{computeQuotaName}``: the quota, Deleting (202).

        Raises:
            ApiError: 404 unknown quota; 409 ``NotManaged``.
        """
        arguments = {"clusterTag": cluster_tag, "computeQuotaName": compute_quota_name}
        answer = self.call_operation("DeleteComputeQuota", arguments, idempotency_key=idempotency_key)
        return cast(dict[str, Any], answer)

    def list_availability_zones(self) -> list[AvailabilityZone]:
        """``GET /catalog/availability-zones``: ``[{"zoneName", "zoneId"}]`` of the API's region."""
        answer = self.call_operation("ListAvailabilityZones")
        return cast(list[AvailabilityZone], (answer or {}).get("availabilityZones") or [])

    def list_instance_types(self, availability_zone: str) -> list[str]:
        """``GET /catalog/instance-types?availabilityZone=``: HyperPod instance types offered in a zone.

        Returns:
            ``["ml.g6.4xlarge", ...]``: ``ClusterInstanceType`` values whose EC2 type the zone offers.

        Raises:
            ApiError: 422 for a malformed or unknown zone.
        """
        answer = self.call_operation("ListInstanceTypes", {"availabilityZone": availability_zone})
        return cast(list[str], (answer or {}).get("instanceTypes") or [])

    def list_training_plans(self) -> list[TrainingPlan]:
        """``GET /catalog/training-plans``: the account's SageMaker training plans (status, zone, instance type
        and count, start and end)."""
        answer = self.call_operation("ListTrainingPlans")
        return cast(list[TrainingPlan], (answer or {}).get("trainingPlans") or [])

    def search_training_plan_offerings(
        self,
        *,
        instance_type: str,
        instance_count: int,
        duration_hours: int | None = None,
        start_after: str | None = None,
    ) -> list[TrainingPlanOffering]:
        """``GET /catalog/training-plan-offerings``: purchasable offerings for HyperPod clusters.

        Args:
            instance_type: e.g. ``ml.p5.48xlarge``.
            instance_count: instances to reserve, 1-256.
            duration_hours: plan duration in hours (None: any).
            start_after: earliest start, ISO-8601 UTC ``2026-11-29T17:04:05Z`` (None: any).

        Raises:
            ApiError: 422 for a type training plans do not reserve, or a value out of range.
        """
        arguments = {
            "instanceType": instance_type,
            "instanceCount": instance_count,
            "durationHours": duration_hours,
            "startAfter": start_after,
        }
        answer = self.call_operation("SearchTrainingPlanOfferings", arguments)
        return cast(list[TrainingPlanOffering], (answer or {}).get("trainingPlanOfferings") or [])
