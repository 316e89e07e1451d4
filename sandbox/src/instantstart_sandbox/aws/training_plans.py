"""SageMaker training plans (reserved capacity for HyperPod) in the sandbox.

- ``ListTrainingPlans`` / ``DescribeTrainingPlan`` answer seeded plans (botocore ``TrainingPlanSummary``
  with ``ReservedCapacitySummaries`` incl. ``AvailabilityZone``); status is ``Scheduled`` before
  StartTime, ``Active`` until EndTime, ``Expired`` after (simulated clock).
- ``SearchTrainingPlanOfferings`` (target resource ``hyperpod-cluster``) answers seeded offerings that
  fit the InstanceType, InstanceCount, time window and duration; ``CreateTrainingPlan`` buys one
  (an offering can be bought once).
- HyperPod refuses (``ValidationException``) an instance group with a ``TrainingPlanArn`` unless the plan
  exists, is not Expired, targets ``hyperpod-cluster``, has the group's instance type, the group's
  subnets are all in the plan's Availability Zone (harsher reading: AWS places reserved instances only
  in that zone) and the group's InstanceCount fits the plan's instances not used by other groups.
  Continuous-mode launches of a group whose plan is still Scheduled fail (Error events) until it starts.

Test hooks: :meth:`TrainingPlans.seed_plan`, :meth:`TrainingPlans.seed_offering`, :meth:`TrainingPlans.reset`.

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_SearchTrainingPlanOfferings.html
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from instantstart_sandbox.aws import backends
from instantstart_sandbox.aws.hyperpod import HpCluster, HpGroup, HyperPodEmulator
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse

HOUR = 3600.0
TARGET = "hyperpod-cluster"


@dataclass
class TrainingPlan:
    """One training plan with a single reserved capacity (instance type x count in one zone)."""

    name: str
    arn: str
    instance_type: str
    count: int
    zone: str
    start: float  # epoch seconds
    end: float
    upfront_fee: str = "0.00"
    target_resources: list[str] = field(default_factory=lambda: [TARGET])

    def status(self, now: float) -> str:
        """Scheduled before StartTime, Active until EndTime, then Expired."""
        return "Scheduled" if now < self.start else "Active" if now < self.end else "Expired"

    def summary(self, now: float, in_use: int, zone_id: str) -> dict[str, Any]:
        """``TrainingPlanSummary`` (also the body of DescribeTrainingPlan)."""
        hours, minutes = divmod(int((self.end - self.start) // 60), 60)
        status = self.status(now)
        return {
            "TrainingPlanArn": self.arn,
            "TrainingPlanName": self.name,
            "Status": status,
            "DurationHours": hours,
            "DurationMinutes": minutes,
            "StartTime": self.start,
            "EndTime": self.end,
            "UpfrontFee": self.upfront_fee,
            "CurrencyCode": "USD",
            "TotalInstanceCount": self.count,
            "AvailableInstanceCount": max(0, self.count - in_use),
            "InUseInstanceCount": in_use,
            "TargetResources": list(self.target_resources),
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": self.arn.replace(":training-plan/", ":reserved-capacity/"),
                    "ReservedCapacityType": "Instance",
                    "InstanceType": self.instance_type,
                    "TotalInstanceCount": self.count,
                    "Status": status,
                    "AvailabilityZone": self.zone,
                    "AvailabilityZoneId": zone_id,
                    "DurationHours": hours,
                    "DurationMinutes": minutes,
                    "StartTime": self.start,
                    "EndTime": self.end,
                }
            ],
        }


@dataclass
class Offering:
    """A training plan offering (one reserved capacity offering)."""

    offering_id: str
    instance_type: str
    count: int
    zone: str
    start: float
    end: float
    upfront_fee: str

    def to_api(self) -> dict[str, Any]:
        """``TrainingPlanOffering``."""
        hours, minutes = divmod(int((self.end - self.start) // 60), 60)
        return {
            "TrainingPlanOfferingId": self.offering_id,
            "TargetResources": [TARGET],
            "RequestedStartTimeAfter": self.start,
            "RequestedEndTimeBefore": self.end,
            "DurationHours": hours,
            "DurationMinutes": minutes,
            "UpfrontFee": self.upfront_fee,
            "CurrencyCode": "USD",
            "ReservedCapacityOfferings": [
                {
                    "ReservedCapacityType": "Instance",
                    "InstanceType": self.instance_type,
                    "InstanceCount": self.count,
                    "AvailabilityZone": self.zone,
                    "DurationHours": hours,
                    "DurationMinutes": minutes,
                    "StartTime": self.start,
                    "EndTime": self.end,
                }
            ],
        }


class TrainingPlans:
    """Training plans and offerings of the sandbox account, and HyperPod's checks of groups that use them.

    Args:
        hyperpod: the HyperPod emulator (its clock, clusters, and launch checks: a check is added).
    """

    def __init__(self, hyperpod: HyperPodEmulator) -> None:
        self.hp = hyperpod
        self._lock = threading.Lock()
        self._plans: dict[str, TrainingPlan] = {}
        self._offerings: dict[str, Offering] = {}
        hyperpod.launch_checks.append(self._launch_check)
        self.reset()

    # -- test API -----------------------------------------------------------------------------------
    def reset(self) -> None:
        """Replace every plan and offering by the seeded ones.

        Plans (relative to the simulated now): ``p5-active`` (ml.p5.48xlarge x4, us-west-2a, active for
        30 days), ``p4d-scheduled`` (ml.p4d.24xlarge x2, us-west-2b, starts in 7 days), ``p5-expired``
        (ml.p5.48xlarge x2, us-west-2c, ended yesterday). Offerings: ml.p5.48xlarge x{1,2,4} in
        us-west-2a/b starting in 1 day for 7 days, ml.p4d.24xlarge x2 in us-west-2c.
        """
        now = self.hp.clock.now()
        with self._lock:
            self._plans.clear()
            self._offerings.clear()
        self.seed_plan("p5-active", "ml.p5.48xlarge", 4, f"{self.hp.region}a", now - HOUR, now + 30 * 24 * HOUR)
        self.seed_plan(
            "p4d-scheduled", "ml.p4d.24xlarge", 2, f"{self.hp.region}b", now + 7 * 24 * HOUR, now + 14 * 24 * HOUR
        )
        self.seed_plan("p5-expired", "ml.p5.48xlarge", 2, f"{self.hp.region}c", now - 8 * 24 * HOUR, now - 24 * HOUR)
        for count in (1, 2, 4):
            for zone in "ab":
                self.seed_offering("ml.p5.48xlarge", count, f"{self.hp.region}{zone}", now + 24 * HOUR, 7 * 24)
        self.seed_offering("ml.p4d.24xlarge", 2, f"{self.hp.region}c", now + 24 * HOUR, 7 * 24)

    def seed_plan(
        self,
        name: str,
        instance_type: str,
        count: int,
        zone: str,
        start: float,
        end: float,
        target_resources: list[str] | None = None,
    ) -> str:
        """Add (or replace, by name) a plan reserving ``count`` x ``instance_type`` in ``zone`` from
        ``start`` to ``end`` (epoch seconds, simulated clock); returns its ARN."""
        arn = f"arn:aws:sagemaker:{self.hp.region}:{self.hp.account_id}:training-plan/{name}"
        plan = TrainingPlan(name, arn, instance_type, count, zone, start, end, f"{count * 1000:.2f}")
        if target_resources is not None:
            plan.target_resources = list(target_resources)
        with self._lock:
            self._plans[name] = plan
        return arn

    def seed_offering(self, instance_type: str, count: int, zone: str, start: float, duration_hours: int) -> str:
        """Add an offering of ``count`` x ``instance_type`` in ``zone`` from ``start`` for ``duration_hours``;
        returns its TrainingPlanOfferingId."""
        offering_id = "tpo-" + uuid.uuid4().hex[:16]
        offering = Offering(
            offering_id,
            instance_type,
            count,
            zone,
            start,
            start + duration_hours * HOUR,
            f"{count * duration_hours * 98.32:.2f}",
        )
        with self._lock:
            self._offerings[offering_id] = offering
        return offering_id

    # -- API --------------------------------------------------------------------------------------
    def handlers(self) -> dict[str, Callable[[AwsRequest, Callable[[], RawResponse]], Any]]:
        """SageMaker operation name -> handler."""
        return {
            "ListTrainingPlans": self.list_training_plans,
            "DescribeTrainingPlan": self.describe_training_plan,
            "SearchTrainingPlanOfferings": self.search_training_plan_offerings,
            "CreateTrainingPlan": self.create_training_plan,
        }

    def _in_use(self, arn: str, exclude: tuple[str, str] | None = None) -> int:
        with self.hp._lock:
            return sum(
                group.target
                for cluster in self.hp._clusters.values()
                for group in cluster.groups.values()
                if group.spec.get("TrainingPlanArn") == arn and (cluster.arn, group.name) != exclude
            )

    def _summary(self, plan: TrainingPlan) -> dict[str, Any]:
        zone_id = backends.zone_id(self.hp.account_id, self.hp.region, plan.zone) or plan.zone
        return plan.summary(self.hp.clock.now(), self._in_use(plan.arn), zone_id)

    def _plan(self, name_or_arn: str) -> TrainingPlan | None:
        with self._lock:
            return next((p for p in self._plans.values() if name_or_arn in (p.name, p.arn)), None)

    def list_training_plans(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListTrainingPlans: Filters (Status), StartTimeAfter/Before, SortBy, SortOrder, paging."""
        params = req.params
        with self._lock:
            plans = list(self._plans.values())
        summaries = [self._summary(p) for p in plans]
        for f in params.get("Filters") or []:
            if f.get("Name") == "Status":
                summaries = [s for s in summaries if s["Status"] == f.get("Value")]
        if params.get("StartTimeAfter") is not None:
            summaries = [s for s in summaries if s["StartTime"] > float(params["StartTimeAfter"])]
        if params.get("StartTimeBefore") is not None:
            summaries = [s for s in summaries if s["StartTime"] < float(params["StartTimeBefore"])]
        key = {"TrainingPlanName": "TrainingPlanName", "Status": "Status"}.get(params.get("SortBy", ""), "StartTime")
        summaries.sort(key=lambda s: s[key], reverse=params.get("SortOrder", "Ascending") == "Descending")
        start = int(params.get("NextToken") or 0)
        end = start + int(params.get("MaxResults") or 100)
        return {
            "TrainingPlanSummaries": summaries[start:end],
            **({"NextToken": str(end)} if end < len(summaries) else {}),
        }

    def describe_training_plan(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeTrainingPlan by name or ARN.

        Raises:
            AwsError: ResourceNotFound for an unknown plan.
        """
        plan = self._plan(req.params["TrainingPlanName"])
        if plan is None:
            raise AwsError("ResourceNotFound", f"Training plan {req.params['TrainingPlanName']} does not exist.")
        return self._summary(plan)

    def search_training_plan_offerings(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """SearchTrainingPlanOfferings for ``hyperpod-cluster``: offerings of the type with at least the count,
        inside StartTimeAfter/EndTimeBefore and of the DurationHours (when given)."""
        params = req.params
        targets = params.get("TargetResources") or [TARGET]
        if TARGET not in targets:
            return {"TrainingPlanOfferings": []}
        with self._lock:
            offerings = list(self._offerings.values())
        found = [
            o
            for o in offerings
            if (not params.get("InstanceType") or o.instance_type == params["InstanceType"])
            and (params.get("InstanceCount") is None or o.count == int(params["InstanceCount"]))
            and (params.get("StartTimeAfter") is None or o.start >= float(params["StartTimeAfter"]))
            and (params.get("EndTimeBefore") is None or o.end <= float(params["EndTimeBefore"]))
            and (params.get("DurationHours") is None or (o.end - o.start) / HOUR == int(params["DurationHours"]))
        ]
        return {"TrainingPlanOfferings": [o.to_api() for o in found]}

    def create_training_plan(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreateTrainingPlan: buy an offering (it is then gone from the search).

        Raises:
            AwsError: ResourceInUse for an existing name; ResourceNotFound for an unknown offering.
        """
        params = req.params
        name = params["TrainingPlanName"]
        if self._plan(name) is not None:
            raise AwsError("ResourceInUse", f"Training plan {name} already exists.")
        with self._lock:
            offering = self._offerings.pop(params["TrainingPlanOfferingId"], None)
        if offering is None:
            raise AwsError(
                "ResourceNotFound", f"Training plan offering {params['TrainingPlanOfferingId']} does not exist."
            )
        arn = self.seed_plan(name, offering.instance_type, offering.count, offering.zone, offering.start, offering.end)
        return {"TrainingPlanArn": arn}

    # -- HyperPod checks --------------------------------------------------------------------------
    def validate_groups(self, params: dict[str, Any], cluster: HpCluster | None) -> None:
        """CreateCluster/UpdateCluster: refuse groups whose TrainingPlanArn they cannot use.

        Raises:
            AwsError: ValidationException naming the group and the reason.
        """
        default_vpc = (cluster.request if cluster is not None else params).get("VpcConfig") or {}
        for spec in params.get("InstanceGroups") or []:
            arn = spec.get("TrainingPlanArn")
            if not arn:
                continue
            name = spec.get("InstanceGroupName")
            plan = self._plan(arn)
            if plan is None:
                raise AwsError("ValidationException", f"Training plan {arn} for instance group {name} does not exist.")
            status = plan.status(self.hp.clock.now())
            if status == "Expired" or TARGET not in plan.target_resources:
                raise AwsError(
                    "ValidationException",
                    f"Training plan {plan.name} is {status} and cannot be used by instance group {name}; "
                    f"it must be Active or Scheduled and target {TARGET}.",
                )
            instance_type = spec.get("InstanceType")
            if instance_type != plan.instance_type:
                raise AwsError(
                    "ValidationException",
                    f"Instance type {instance_type} of instance group {name} does not match the instance type "
                    f"{plan.instance_type} of training plan {plan.name}.",
                )
            vpc = spec.get("OverrideVpcConfig") or default_vpc
            for subnet_id in vpc.get("Subnets") or []:
                subnet = backends.subnet(self.hp.account_id, self.hp.region, subnet_id)
                zone = subnet.availability_zone if subnet is not None else None
                if zone != plan.zone:
                    raise AwsError(
                        "ValidationException",
                        f"Subnet {subnet_id} of instance group {name} is in {zone}, but training plan {plan.name} "
                        f"reserves capacity in {plan.zone}. Use subnets in {plan.zone}.",
                    )
            used = self._in_use(plan.arn, (cluster.arn, str(name)) if cluster is not None else None)
            count = int(spec.get("InstanceCount", 0))
            if count > plan.count - used:
                raise AwsError(
                    "ValidationException",
                    f"Instance group {name} requests {count} instances, but training plan {plan.name} has "
                    f"{plan.count - used} of {plan.count} {plan.instance_type} instances available.",
                )

    def _launch_check(self, cluster: HpCluster, group: HpGroup, zone: str) -> str | None:
        arn = group.spec.get("TrainingPlanArn")
        plan = self._plan(arn) if arn else None
        if plan is None:
            return None
        status = plan.status(self.hp.clock.now())
        if status != "Active":
            return f"Training plan {plan.name} is {status}; its reserved capacity is not available now."
        return None
