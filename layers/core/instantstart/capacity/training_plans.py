"""Training plans: listing, searching offerings, and the create-time rule that a TrainingPlan group fits its plan.

SageMaker ``ListTrainingPlans``, ``DescribeTrainingPlan`` and ``SearchTrainingPlanOfferings``
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingPlan.html). A plan reserves
capacity in one Availability Zone; HyperPod places the group's instances only there (the harsher reading),
so the plan's zone wins over the request's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message, service_model
from instantstart.errors import Conflict, ValidationFailed
from instantstart.models.capacity import (
    AvailabilityZoneChange,
    ReservedCapacityView,
    TrainingPlanOfferingView,
    TrainingPlanView,
)
from instantstart.models.cluster import CreateClusterRequest
from instantstart.models.common import CapacityType

TARGET_RESOURCE = "hyperpod-cluster"
"""The ``TargetResources`` value of plans HyperPod clusters can use."""

USABLE_STATUSES = ("Active", "Scheduled")
"""Plan statuses a new instance group may use."""


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromtimestamp(float(value), UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plan_view(summary: dict[str, Any]) -> TrainingPlanView:
    """The API view of a ``TrainingPlanSummary`` / ``DescribeTrainingPlan`` answer."""
    capacities = summary.get("ReservedCapacitySummaries") or []
    first = capacities[0] if capacities else {}
    return TrainingPlanView(
        training_plan_arn=summary["TrainingPlanArn"],
        training_plan_name=summary["TrainingPlanName"],
        status=summary["Status"],
        instance_type=first.get("InstanceType"),
        total_instance_count=summary.get("TotalInstanceCount"),
        available_instance_count=summary.get("AvailableInstanceCount"),
        in_use_instance_count=summary.get("InUseInstanceCount"),
        availability_zone=first.get("AvailabilityZone"),
        start_time=_iso(summary.get("StartTime")),
        end_time=_iso(summary.get("EndTime")),
        target_resources=list(summary.get("TargetResources") or []),
        reserved_capacities=[
            ReservedCapacityView(
                instance_type=c["InstanceType"],
                total_instance_count=c["TotalInstanceCount"],
                status=c["Status"],
                availability_zone=c.get("AvailabilityZone"),
                start_time=_iso(c.get("StartTime")),
                end_time=_iso(c.get("EndTime")),
            )
            for c in capacities
        ],
    )


def list_training_plans(sm: Any) -> list[TrainingPlanView]:
    """The account's training plans in the Region, by start time (SageMaker ``ListTrainingPlans``, every page)."""
    out: list[TrainingPlanView] = []
    kwargs: dict[str, Any] = {}
    while True:
        page = sm.list_training_plans(**kwargs)
        out.extend(plan_view(s) for s in page.get("TrainingPlanSummaries", []))
        if not page.get("NextToken"):
            return out
        kwargs["NextToken"] = page["NextToken"]


def reserved_capacity_instance_types() -> list[str]:
    """The SageMaker ``ReservedCapacityInstanceType`` enum (instance types training plans can reserve)."""
    shape: Any = service_model("sagemaker").shape_for("ReservedCapacityInstanceType")
    return list(shape.enum)


def parse_start_after(value: str) -> datetime:
    """``startAfter`` (``YYYY-MM-DDTHH:MM:SSZ``) as an aware UTC datetime.

    Raises:
        ValidationFailed: 422 naming ``startAfter`` when the text matches the pattern but is no calendar time
            (e.g. month 00 or February 30).
    """
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError as exc:
        raise ValidationFailed(
            f"startAfter must be a real UTC time such as 2026-11-29T17:04:05Z; got {value!r} ({exc})",
            details=[{"field": "startAfter", "message": str(exc), "value": value}],
        ) from exc


def search_offerings(
    sm: Any,
    *,
    instance_type: str,
    instance_count: int,
    duration_hours: int | None = None,
    start_after: datetime | None = None,
) -> list[TrainingPlanOfferingView]:
    """Purchasable offerings for HyperPod clusters (SageMaker ``SearchTrainingPlanOfferings``,
    ``TargetResources=[hyperpod-cluster]``), one view per reserved capacity offering.

    Raises:
        ValidationFailed: ``instance_type`` is not a type training plans reserve (details list them).
    """
    allowed = reserved_capacity_instance_types()
    if instance_type not in allowed:
        raise ValidationFailed(
            f"instanceType must be one of: {', '.join(allowed)}; got '{instance_type}'",
            details=[
                {"field": "instanceType", "message": "not a training plan instance type", "allowedValues": allowed}
            ],
        )
    params: dict[str, Any] = {
        "InstanceType": instance_type,
        "InstanceCount": instance_count,
        "TargetResources": [TARGET_RESOURCE],
    }
    if duration_hours is not None:
        params["DurationHours"] = duration_hours
    if start_after is not None:
        params["StartTimeAfter"] = start_after
    answer = sm.search_training_plan_offerings(**params)
    views: list[TrainingPlanOfferingView] = []
    for offering in answer.get("TrainingPlanOfferings", []):
        for capacity in offering.get("ReservedCapacityOfferings") or [{}]:
            views.append(
                TrainingPlanOfferingView(
                    training_plan_offering_id=offering["TrainingPlanOfferingId"],
                    instance_type=capacity.get("InstanceType"),
                    instance_count=capacity.get("InstanceCount"),
                    availability_zone=capacity.get("AvailabilityZone"),
                    start_time=_iso(capacity.get("StartTime") or offering.get("RequestedStartTimeAfter")),
                    end_time=_iso(capacity.get("EndTime") or offering.get("RequestedEndTimeBefore")),
                    duration_hours=offering.get("DurationHours"),
                    upfront_fee=offering.get("UpfrontFee"),
                    currency_code=offering.get("CurrencyCode"),
                )
            )
    return views


@dataclass(frozen=True)
class PlanPlacement:
    """Where the request's training plans put the cluster.

    Attributes:
        availability_zone: the zone the cluster is created in (the plans' zone, else the requested one).
        change: set when that differs from the requested zone.
    """

    availability_zone: str
    change: AvailabilityZoneChange | None = None


def plan_name(arn: str) -> str:
    """The training plan's name of its ARN (``...:training-plan/<name>``), as ``DescribeTrainingPlan`` takes it."""
    return arn.rsplit("/", 1)[-1]


def _describe(sm: Any, arn: str, field: str) -> dict[str, Any]:
    try:
        return dict(sm.describe_training_plan(TrainingPlanName=plan_name(arn)))
    except ClientError as exc:
        if error_code(exc) in ("ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
            raise ValidationFailed(
                f"{field}: training plan {arn} does not exist in this account and Region ({error_message(exc)}); "
                "GET /catalog/training-plans lists the plans",
                details=[{"field": field, "message": "training plan not found"}],
            ) from exc
        raise


def _subnet_zone(ec2: Any, subnet_id: str, field: str) -> str:
    try:
        subnets = ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"]
    except ClientError as exc:
        raise ValidationFailed(
            f"{field}: subnet {subnet_id} was not found ({error_code(exc)}: {error_message(exc)})",
            details=[{"field": field, "message": "subnet not found"}],
        ) from exc
    return str(subnets[0]["AvailabilityZone"])


def check_training_plans(sm: Any, ec2: Any, request: CreateClusterRequest) -> PlanPlacement:
    """Check every TrainingPlan group against its plan and place the cluster in the plans' zone.

    Rules, in order, per group (``instanceGroups[i]``): the plan exists (``DescribeTrainingPlan``); its
    status is Active or Scheduled; it targets ``hyperpod-cluster``; the group names one ``instanceType``
    (not a flexible group) reserved by the plan; the groups of the request using the plan ask for at most
    its ``AvailableInstanceCount``. Then the zone: every plan's reserved zone must be the same; if it is
    not the requested ``availabilityZone``, the cluster moves to it (``change`` says so), unless a group
    pins a ``subnetId`` in another zone (EC2 ``DescribeSubnets``).

    Raises:
        ValidationFailed: a plan is missing, not usable, of another type or too small (422; details name
            the group field and carry ``asked``/``available`` for counts).
        Conflict: plans in different zones, or a pinned subnet outside the plan's zone (409 naming both zones).
    """
    problems: list[dict[str, Any]] = []
    zones: dict[str, str] = {}  # plan zone -> plan name
    asked: dict[str, int] = {}
    plans: dict[str, dict[str, Any]] = {}
    for i, group in enumerate(request.instance_groups):
        if group.capacity_type is not CapacityType.TRAINING_PLAN or group.training_plan_arn is None:
            continue
        field = f"instanceGroups[{i}].trainingPlanArn"
        arn = group.training_plan_arn
        plan = plans.get(arn) or _describe(sm, arn, field)
        plans[arn] = plan
        name = plan["TrainingPlanName"]
        if plan["Status"] not in USABLE_STATUSES:
            problems.append(
                {
                    "field": field,
                    "message": f"{field}: training plan {name} is {plan['Status']}; it must be Active or Scheduled",
                    "status": plan["Status"],
                }
            )
            continue
        if TARGET_RESOURCE not in (plan.get("TargetResources") or [TARGET_RESOURCE]):
            problems.append(
                {
                    "field": field,
                    "message": f"{field}: training plan {name} targets {', '.join(plan['TargetResources'])}, "
                    f"not {TARGET_RESOURCE}",
                }
            )
            continue
        if group.instance_type is None:
            problems.append(
                {
                    "field": f"instanceGroups[{i}].instanceTypes",
                    "message": f"instanceGroups[{i}].instanceTypes: a TrainingPlan group names one instanceType "
                    "(the plan's), not a flexible list",
                }
            )
            continue
        capacities = [
            c for c in plan.get("ReservedCapacitySummaries") or [] if c.get("InstanceType") == group.instance_type
        ]
        if not capacities:
            reserved = sorted({str(c.get("InstanceType")) for c in plan.get("ReservedCapacitySummaries") or []})
            problems.append(
                {
                    "field": f"instanceGroups[{i}].instanceType",
                    "message": f"instanceGroups[{i}].instanceType: training plan {name} reserves "
                    f"{', '.join(reserved) or 'no instances'}, not {group.instance_type}",
                    "allowedValues": reserved,
                }
            )
            continue
        asked[arn] = asked.get(arn, 0) + group.instance_count
        available = int(plan.get("AvailableInstanceCount", capacities[0].get("TotalInstanceCount", 0)))
        if asked[arn] > available:
            problems.append(
                {
                    "field": f"instanceGroups[{i}].instanceCount",
                    "message": f"instanceGroups[{i}].instanceCount: asks for {asked[arn]} {group.instance_type} "
                    f"from training plan {name}, which has {available} available (of "
                    f"{plan.get('TotalInstanceCount', available)})",
                    "asked": asked[arn],
                    "available": available,
                }
            )
            continue
        zone = capacities[0].get("AvailabilityZone")
        if zone:
            zones.setdefault(str(zone), name)
    if problems:
        raise ValidationFailed("invalid request: " + "; ".join(p["message"] for p in problems), details=problems)
    if not zones:
        return PlanPlacement(request.availability_zone)
    if len(zones) > 1:
        listed = ", ".join(f"{plan} in {zone}" for zone, plan in zones.items())
        raise Conflict(
            f"the training plans reserve capacity in different zones ({listed}); a cluster runs in one zone",
            code="TrainingPlanZoneConflict",
            details=[{"field": "instanceGroups", "message": listed}],
        )
    [(plan_zone, plan_name)] = zones.items()
    for i, group in enumerate(request.instance_groups):
        if group.subnet_id is None:
            continue
        field = f"instanceGroups[{i}].subnetId"
        subnet_zone = _subnet_zone(ec2, group.subnet_id, field)
        if subnet_zone != plan_zone:
            raise Conflict(
                f"{field}: subnet {group.subnet_id} is in {subnet_zone}, but training plan {plan_name} reserves "
                f"its capacity in {plan_zone}; pin a subnet in {plan_zone} or leave subnetId out",
                code="TrainingPlanZoneConflict",
                details=[{"field": field, "message": f"subnet in {subnet_zone}, training plan in {plan_zone}"}],
            )
    if plan_zone == request.availability_zone:
        return PlanPlacement(plan_zone)
    return PlanPlacement(
        plan_zone,
        AvailabilityZoneChange(
            requested=request.availability_zone,
            availability_zone=plan_zone,
            reason=f"training plan {plan_name} reserves its capacity in {plan_zone}; the cluster is created there",
        ),
    )
