"""Rules of managed Karpenter (HyperPod ``AutoScaling``): which instance groups a ``HyperpodNodeClass`` may list.

Each rule is one function over what ``DescribeCluster`` reports (``ClusterInstanceGroupDetails``), raising a
4xx that names the rule (its ``code``) and the group; :func:`check_node_class_groups` applies them in order.
They are checked before the control plane changes anything in AWS. From HyperPod's documentation
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-autoscaling-nodeclass.html):

- a node class lists at most 10 instance groups (:func:`check_group_limit`);
- its groups start at 0 nodes: Karpenter owns the count from then on (:func:`check_group_at_zero`). AWS says
  a group started above 0 is scaled down to 0 by Karpenter; the harsher reading here refuses it, so
  turning autoscaling on never removes running nodes behind the user's back;
- the groups' subnets belong to one Availability Zone (:func:`check_one_zone`);
- no on-start deep health checks (:func:`check_no_deep_health_checks`): they hold pods Pending for an hour
  or more, so Karpenter would over-provision;
- On-Demand capacity only (:func:`check_on_demand`): training plans and Spot are not supported (AWS names
  training plans and reserved capacity; Spot is refused too, the harsher reading);
- the groups exist (:func:`check_groups_exist`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from instantstart.errors import Conflict, NotFound, ValidationFailed
from instantstart.models.autoscaling import MAX_NODE_CLASS_GROUPS

Group = Mapping[str, Any]
"""One ``DescribeCluster`` instance group (``ClusterInstanceGroupDetails``)."""


def _detail(name: str, rule: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"field": "instanceGroups", "instanceGroupName": name, "rule": rule, **extra}]


def check_group_limit(names: list[str]) -> None:
    """At most :data:`MAX_NODE_CLASS_GROUPS` groups in one node class.

    Raises:
        ValidationFailed: ``TooManyNodeClassGroups`` (422).
    """
    if len(names) > MAX_NODE_CLASS_GROUPS:
        raise ValidationFailed(
            f"a HyperpodNodeClass lists at most {MAX_NODE_CLASS_GROUPS} instance groups; {len(names)} were given",
            code="TooManyNodeClassGroups",
            details=[{"field": "instanceGroups", "rule": "TooManyNodeClassGroups", "limit": MAX_NODE_CLASS_GROUPS}],
        )


def check_groups_exist(groups: Iterable[Group], names: list[str]) -> None:
    """Every name is an instance group of the cluster.

    Raises:
        NotFound: ``InstanceGroupNotFound`` (404) naming the first missing group and the cluster's groups.
    """
    existing = [str(g.get("InstanceGroupName")) for g in groups]
    for name in names:
        if name not in existing:
            raise NotFound(
                f"instance group '{name}' does not exist; the cluster's groups: {', '.join(existing)}",
                code="InstanceGroupNotFound",
                details=_detail(name, "InstanceGroupNotFound"),
            )


def check_group_at_zero(group: Group) -> None:
    """The group has 0 instances (``TargetCount`` and ``CurrentCount``): Karpenter starts it from 0.

    Raises:
        Conflict: ``KarpenterGroupNotAtZero`` (409) naming the group and its counts.
    """
    name = str(group.get("InstanceGroupName"))
    target, current = int(group.get("TargetCount") or 0), int(group.get("CurrentCount") or 0)
    if target or current:
        raise Conflict(
            f"instance group '{name}' has {current} instances (target {target}); a group Karpenter scales must start "
            f"at 0 instances. Scale it to 0 first (PATCH instance-groups/{name} with instanceCount 0) or choose "
            "another group",
            code="KarpenterGroupNotAtZero",
            details=_detail(name, "KarpenterGroupNotAtZero", targetCount=target, currentCount=current),
        )


def check_no_deep_health_checks(group: Group) -> None:
    """The group runs no on-start deep health checks (``OnStartDeepHealthChecks`` empty).

    Raises:
        Conflict: ``KarpenterGroupHasDeepHealthChecks`` (409) naming the group and its checks.
    """
    name = str(group.get("InstanceGroupName"))
    checks = list(group.get("OnStartDeepHealthChecks") or [])
    if checks:
        raise Conflict(
            f"instance group '{name}' runs on-start deep health checks ({', '.join(checks)}); Karpenter cannot "
            "scale a group with onStartDeepHealthChecks (pods would stay Pending for the hour the checks take). "
            "Choose a group without them",
            code="KarpenterGroupHasDeepHealthChecks",
            details=_detail(name, "KarpenterGroupHasDeepHealthChecks", onStartDeepHealthChecks=checks),
        )


def check_on_demand(group: Group) -> None:
    """The group is On-Demand: no ``TrainingPlanArn``, no ``CapacityRequirements.Spot``.

    Raises:
        Conflict: ``KarpenterGroupNotOnDemand`` (409) naming the group and its capacity type.
    """
    name = str(group.get("InstanceGroupName"))
    capacity = (
        "TrainingPlan"
        if group.get("TrainingPlanArn")
        else "Spot"
        if "Spot" in (group.get("CapacityRequirements") or {})
        else None
    )
    if capacity is not None:
        raise Conflict(
            f"instance group '{name}' is {capacity} capacity; managed Karpenter scales On-Demand groups only",
            code="KarpenterGroupNotOnDemand",
            details=_detail(name, "KarpenterGroupNotOnDemand", capacityType=capacity),
        )


def check_not_in_node_class(name: str, node_class_groups: Iterable[str], tag: str) -> None:
    """A group managed Karpenter's HyperpodNodeClass lists is not deleted (HyperPod would mark the node class not
    Ready and stop scaling every group of it).

    Raises:
        Conflict: ``InstanceGroupInNodeClass`` (409) naming the group and how to release it.
    """
    listed = list(node_class_groups)
    if name in listed:
        raise Conflict(
            f"instance group '{name}' is in managed Karpenter's HyperpodNodeClass ({', '.join(listed)}); remove it "
            f"first: PUT /clusters/{tag}/autoscaling with the other groups, or with enabled false",
            code="InstanceGroupInNodeClass",
            details=[{"field": "instanceGroupName", "rule": "InstanceGroupInNodeClass", "nodeClassGroups": listed}],
        )


def group_subnets(group: Group, cluster_subnets: list[str]) -> list[str]:
    """The subnets a group's instances use: its ``OverrideVpcConfig.Subnets``, else the cluster's ``VpcConfig``."""
    return list((group.get("OverrideVpcConfig") or {}).get("Subnets") or cluster_subnets)


def check_one_zone(groups: list[Group], cluster_subnets: list[str], zone_of: Mapping[str, str]) -> None:
    """Every subnet of every group is in one Availability Zone.

    Args:
        groups: the node class's groups (DescribeCluster).
        cluster_subnets: the cluster's ``VpcConfig.Subnets`` (used by groups without ``OverrideVpcConfig``).
        zone_of: subnet id -> Availability Zone name (EC2 ``DescribeSubnets``); a subnet it lacks is an
            unknown zone and breaks the rule.

    Raises:
        Conflict: ``KarpenterGroupsInSeveralZones`` (409) naming the first group outside the first group's zone.
    """
    first_zone: str | None = None
    first_group = ""
    for group in groups:
        name = str(group.get("InstanceGroupName"))
        zones = sorted({zone_of.get(s, f"unknown zone of {s}") for s in group_subnets(group, cluster_subnets)})
        if len(zones) > 1 or (first_zone is not None and zones and zones[0] != first_zone):
            raise Conflict(
                f"instance group '{name}' is in {', '.join(zones)} but a HyperpodNodeClass's groups must sit in one "
                f"Availability Zone ({first_zone or zones[0]}{f', of {first_group}' if first_group else ''}); "
                "choose groups of one zone",
                code="KarpenterGroupsInSeveralZones",
                details=_detail(name, "KarpenterGroupsInSeveralZones", zones=zones, zone=first_zone or zones[0]),
            )
        if first_zone is None and zones:
            first_zone, first_group = zones[0], name


def check_node_class_groups(
    groups: list[Group],
    names: list[str],
    *,
    cluster_subnets: list[str],
    zone_of: Mapping[str, str],
    already_managed: Iterable[str] = (),
) -> list[Group]:
    """Every rule, in order: limit, existence, then per group On-Demand, no deep health checks, at 0; one zone.

    Groups in ``already_managed`` (the node class Karpenter scales now) are exempt from the at-0 rule: Karpenter
    owns their count. Pure: calls nothing.

    Returns:
        the named groups, in the order of ``names``.

    Raises:
        ValidationFailed, NotFound, Conflict: the first rule broken (see each rule).
    """
    check_group_limit(names)
    check_groups_exist(groups, names)
    by_name = {str(g.get("InstanceGroupName")): g for g in groups}
    chosen = [by_name[n] for n in names]
    managed = set(already_managed)
    for group in chosen:
        check_on_demand(group)
        check_no_deep_health_checks(group)
        if group.get("InstanceGroupName") not in managed:
            check_group_at_zero(group)
    check_one_zone(chosen, cluster_subnets, zone_of)
    return chosen


def subnet_zones(ec2: Any, subnet_ids: Iterable[str]) -> dict[str, str]:
    """Subnet id -> Availability Zone name (EC2 ``DescribeSubnets``; a read, nothing changes).

    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSubnets.html
    """
    ids = sorted(set(subnet_ids))
    if not ids:
        return {}
    out = ec2.describe_subnets(SubnetIds=ids)
    return {str(s["SubnetId"]): str(s["AvailabilityZone"]) for s in out.get("Subnets", [])}
