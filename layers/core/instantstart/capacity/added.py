"""Preflight of a day-2 change that adds capacity (``POST .../instance-groups``, a scale-up by ``PATCH``), before
any write: the same rules as a create (:mod:`instantstart.capacity.preflight`,
:mod:`instantstart.capacity.training_plans`), for what the change adds.

- Offerings: each instance type of an added group is offered in the cluster's zone.
- Quotas: the "<type> for cluster usage" quota has room for the instances added (an added group's count, a
  scale's increase over the group's current target: the account's HyperPod clusters, this one included, already
  hold the rest). A flexible group's count is charged to every type it lists (the harsher reading).
- Training plans: an added TrainingPlan group passes the create's plan rules and its plan reserves capacity in
  the cluster's zone; a scale-up of a TrainingPlan group asks for at most the plan's ``AvailableInstanceCount``.

Every failure is one 422 (409 for a plan in another zone) whose details name the request's own field
(``instanceCount``, ``instanceType``, ``trainingPlanArn``) and carry ``asked`` and ``available`` for counts.
"""

from __future__ import annotations

import re
from typing import Any

from instantstart.capacity.preflight import check_offerings, cluster_usage_quotas, instances_in_use, quota_name
from instantstart.capacity.training_plans import check_training_plans, plan_name
from instantstart.errors import Conflict, ValidationFailed
from instantstart.models.cluster import CreateClusterRequest, InstanceGroupRequest

_GROUP_PREFIX = re.compile(r"instanceGroups\[\d+\]\.")


def _own_fields(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The create's details (``instanceGroups[0].<field>``) as the day-2 request's own fields (``<field>``)."""
    return [
        {
            **p,
            "field": _GROUP_PREFIX.sub("", str(p.get("field", ""))),
            "message": _GROUP_PREFIX.sub("", str(p.get("message", ""))),
        }
        for p in problems
    ]


def _raise(problems: list[dict[str, Any]]) -> None:
    if problems:
        raise ValidationFailed("invalid request: " + "; ".join(p["message"] for p in problems), details=problems)


def quota_problems(quotas: Any, sm: Any, asks: dict[str, int], field: str) -> list[dict[str, Any]]:
    """Problems (422 details with ``asked``, ``available``, ``quota``, ``inUse``) of instance types whose
    cluster-usage quota has no room for ``asks`` (``{instance type: instances added}``) on top of what the
    account's HyperPod clusters target now. Service Quotas ``ListServiceQuotas``; SageMaker ``ListClusters``,
    ``DescribeCluster``. A type without such a quota is not checked."""
    limits = cluster_usage_quotas(quotas)
    checked = [t for t, n in asks.items() if t in limits and n > 0]
    if not checked:
        return []
    used = instances_in_use(sm)
    problems: list[dict[str, Any]] = []
    for instance_type in checked:
        value, code = limits[instance_type]
        in_use = used.get(instance_type, 0)
        available = max(0, int(value) - in_use)
        if asks[instance_type] > available:
            problems.append(
                {
                    "field": field,
                    "message": f"{field}: adds {asks[instance_type]} {instance_type} but the SageMaker service quota "
                    f"'{quota_name(instance_type)}' ({code}) is {int(value)} with {in_use} in use by HyperPod "
                    f"clusters (this one included): {available} available; request an increase in Service Quotas "
                    "or ask for fewer",
                    "asked": asks[instance_type],
                    "available": available,
                    "quota": int(value),
                    "inUse": in_use,
                }
            )
    return problems


def check_added_group(
    ec2: Any, quotas: Any, sm: Any, *, cluster_tag: str, zone: str, group: InstanceGroupRequest
) -> None:
    """The preflight of ``POST /clusters/{tag}/instance-groups`` for ``group`` in the cluster's ``zone``.

    Calls EC2 ``DescribeInstanceTypeOfferings`` (and ``DescribeSubnets`` for a pinned subnet of a plan group),
    SageMaker ``DescribeTrainingPlan``, Service Quotas ``ListServiceQuotas``, SageMaker ``ListClusters`` /
    ``DescribeCluster``.

    Raises:
        ValidationFailed: a type not offered in the zone, no quota room, a training plan that does not fit (422
            naming ``instanceType``/``instanceTypes``, ``instanceCount``, ``trainingPlanArn``).
        Conflict: the training plan reserves its capacity in another zone than the cluster's
            (``TrainingPlanZoneConflict``, naming both zones).
    """
    # the create's checks read only the zone and the groups (no create validation: this is not a create)
    request = CreateClusterRequest.model_construct(
        cluster_tag=cluster_tag, availability_zone=zone, instance_groups=[group]
    )
    try:
        placement = check_training_plans(sm, ec2, request)
    except ValidationFailed as exc:
        raise ValidationFailed(_GROUP_PREFIX.sub("", exc.message), details=_own_fields(exc.details)) from exc
    if placement.change is not None:
        plan_zone = placement.availability_zone
        raise Conflict(
            f"trainingPlanArn: the training plan reserves its capacity in {plan_zone}, but cluster '{cluster_tag}' "
            f"runs in {zone}; use a plan reserved in {zone}",
            code="TrainingPlanZoneConflict",
            details=[{"field": "trainingPlanArn", "message": f"plan in {plan_zone}, cluster in {zone}"}],
        )
    problems = _own_fields(check_offerings(ec2, request, zone))
    asks = {t: group.instance_count for t in group.launch_types}
    problems += quota_problems(quotas, sm, asks, "instanceCount")
    _raise(problems)


def check_scale_up(quotas: Any, sm: Any, *, described: dict[str, Any], desired: int) -> None:
    """The preflight of a scale of the HyperPod group ``described`` (its ``DescribeCluster`` entry) to
    ``desired`` instances: nothing when it does not grow; else quota room for the increase and, for a
    TrainingPlan group, the plan's ``AvailableInstanceCount`` (SageMaker ``DescribeTrainingPlan``).

    Raises:
        ValidationFailed: no quota room or too few instances left in the plan (422 naming ``instanceCount``,
            with ``asked`` and ``available``).
    """
    current = int(described.get("TargetCount", described.get("CurrentCount", 0)) or 0)
    added = desired - current
    if added <= 0:
        return
    types = [str(described["InstanceType"])] if described.get("InstanceType") else []
    problems = quota_problems(quotas, sm, dict.fromkeys(types, added), "instanceCount")
    plan_arn = described.get("TrainingPlanArn")
    if plan_arn:
        plan = sm.describe_training_plan(TrainingPlanName=plan_name(str(plan_arn)))
        available = int(plan.get("AvailableInstanceCount", 0) or 0)
        if added > available:
            problems.append(
                {
                    "field": "instanceCount",
                    "message": f"instanceCount: adds {added} instances (from {current} to {desired}) from training "
                    f"plan {plan.get('TrainingPlanName')}, which has {available} available (of "
                    f"{plan.get('TotalInstanceCount', available)})",
                    "asked": added,
                    "available": available,
                }
            )
    _raise(problems)
