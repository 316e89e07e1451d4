"""Preflight of a create, before any AWS write: the zones, the instance type offerings and the service quotas.

- The Region has the zones the network needs: the requested zone and at least one other (the EKS control
  plane's subnets span two zones).
- Each instance type of each group is offered in the cluster's zone (EC2 ``DescribeInstanceTypeOfferings``,
  ``LocationType=availability-zone``, the EC2 name without ``ml.``). A flexible group needs every listed
  type offered (the harsher reading: HyperPod may pick any of them).
- The SageMaker quota "<type> for cluster usage" (Service Quotas ``ListServiceQuotas``, ServiceCode
  ``sagemaker``) has room: quota - instances of that type the account's HyperPod clusters already target
  (SageMaker ``ListClusters`` + ``DescribeCluster``: ``TargetCount`` of groups of that ``InstanceType``)
  >= the count the request asks for. A flexible group's count is charged to every type it lists (harsher
  reading). Training plan groups are charged too (the harsher reading of how reserved capacity counts).
  A type without such a quota in the account is not checked.

Every failure is one 422 whose details name the group field and carry ``asked`` and ``available``.
"""

from __future__ import annotations

from typing import Any

from instantstart.errors import ValidationFailed
from instantstart.models.cluster import CreateClusterRequest

QUOTA_SERVICE_CODE = "sagemaker"
"""Service Quotas ServiceCode of the HyperPod cluster-usage quotas."""


def quota_name(instance_type: str) -> str:
    """The Service Quotas name of the cluster-usage quota of ``instance_type`` (e.g. ``ml.g6.4xlarge``)."""
    return f"{instance_type} for cluster usage"


def zones_offering(ec2: Any, instance_type: str) -> list[str]:
    """Zones of the Region offering the EC2 type of ``instance_type`` (``ml.`` dropped), sorted.

    Calls EC2 ``DescribeInstanceTypeOfferings`` with ``LocationType=availability-zone`` (every page).
    """
    zones: set[str] = set()
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    filters = [{"Name": "instance-type", "Values": [instance_type.removeprefix("ml.")]}]
    for page in paginator.paginate(LocationType="availability-zone", Filters=filters):
        zones.update(o["Location"] for o in page["InstanceTypeOfferings"])
    return sorted(zones)


def cluster_usage_quotas(quotas: Any) -> dict[str, tuple[float, str]]:
    """``{instance type: (value, QuotaCode)}`` of the "<type> for cluster usage" quotas (Service Quotas
    ``ListServiceQuotas``, ServiceCode ``sagemaker``, every page)."""
    out: dict[str, tuple[float, str]] = {}
    kwargs: dict[str, Any] = {"ServiceCode": QUOTA_SERVICE_CODE}
    suffix = " for cluster usage"
    while True:
        page = quotas.list_service_quotas(**kwargs)
        for q in page.get("Quotas", []):
            name = str(q.get("QuotaName", ""))
            if name.endswith(suffix):
                out[name.removesuffix(suffix)] = (float(q["Value"]), str(q.get("QuotaCode", "")))
        if not page.get("NextToken"):
            return out
        kwargs["NextToken"] = page["NextToken"]


def instances_in_use(sm: Any) -> dict[str, int]:
    """``{instance type: instances}`` the account's HyperPod clusters target now (SageMaker ``ListClusters``,
    then ``DescribeCluster`` of each cluster not being deleted: ``TargetCount`` per group ``InstanceType``)."""
    used: dict[str, int] = {}
    kwargs: dict[str, Any] = {}
    while True:
        page = sm.list_clusters(**kwargs)
        for summary in page.get("ClusterSummaries", []):
            if summary.get("ClusterStatus") in ("Deleting", "Failed"):
                continue
            found = sm.describe_cluster(ClusterName=summary["ClusterName"])
            for g in found.get("InstanceGroups", []):
                if g.get("InstanceType"):
                    count = int(g.get("TargetCount", g.get("CurrentCount", 0)) or 0)
                    used[g["InstanceType"]] = used.get(g["InstanceType"], 0) + count
        if not page.get("NextToken"):
            return used
        kwargs["NextToken"] = page["NextToken"]


def check_zones(zone: str, region_zones: list[str]) -> None:
    """The Region has ``zone`` and at least one other zone for the EKS control plane's second subnet.

    Raises:
        ValidationFailed: the zone is missing, or it is the Region's only zone (details name ``availabilityZone``).
    """
    if zone not in region_zones:
        raise ValidationFailed(
            f"availabilityZone '{zone}' is not an available zone of the Region; allowed values: "
            f"{', '.join(region_zones)}",
            details=[{"field": "availabilityZone", "message": "not in this Region", "allowedValues": region_zones}],
        )
    if len(region_zones) < 2:
        raise ValidationFailed(
            f"availabilityZone: the Region has only {len(region_zones)} available zone; the network needs two "
            "(the EKS control plane spans two zones)",
            details=[{"field": "availabilityZone", "message": "the network needs two zones", "available": 1}],
        )


ADDONS_NEEDING_NODES = ("cert-manager", "metrics-server")
"""Add-ons the create installs that run on the HyperPod nodes, so cannot become healthy without one."""


def check_some_instances(request: CreateClusterRequest) -> None:
    """A create needs at least one group with ``instanceCount`` >= 1 (a group may start at 0, not all of them).

    The rule lives here, not on :class:`~instantstart.models.cluster.CreateClusterRequest`, because a stored
    cluster's request may have every group scaled to 0 later (``PATCH`` allows 0) and must still load.

    Raises:
        ValidationFailed: every group asks for 0 instances (422; the detail names ``instanceGroups``).
    """
    if any(g.instance_count >= 1 for g in request.instance_groups):
        return
    addons = " and ".join(ADDONS_NEEDING_NODES)
    message = (
        f"instanceGroups: every group has instanceCount 0; at least one group needs 1 or more, because the "
        f"add-ons the create installs ({addons}) cannot become healthy without a node (add the empty groups "
        "later, or give one group instances)"
    )
    raise ValidationFailed(
        message,
        details=[
            {
                "field": "instanceGroups",
                "message": message,
                "instanceCounts": [g.instance_count for g in request.instance_groups],
            }
        ],
    )


def check_offerings(ec2: Any, request: CreateClusterRequest, zone: str) -> list[dict[str, Any]]:
    """Problems (422 details) of groups whose instance types are not offered in ``zone``."""
    problems: list[dict[str, Any]] = []
    cache: dict[str, list[str]] = {}
    for i, group in enumerate(request.instance_groups):
        field = f"instanceGroups[{i}].instanceType" if group.instance_type else f"instanceGroups[{i}].instanceTypes"
        for instance_type in group.launch_types:
            offered = cache.get(instance_type)
            if offered is None:
                offered = cache[instance_type] = zones_offering(ec2, instance_type)
            if zone not in offered:
                problems.append(
                    {
                        "field": field,
                        "message": f"{field}: {instance_type} is not offered in {zone} (EC2 "
                        f"DescribeInstanceTypeOfferings); zones offering it: {', '.join(offered) or 'none'}",
                        "allowedValues": offered,
                    }
                )
    return problems


def check_quotas(quotas: Any, sm: Any, request: CreateClusterRequest) -> list[dict[str, Any]]:
    """Problems (422 details, with ``asked``, ``available``, ``quota``, ``inUse``) of instance types whose
    cluster-usage quota has no room for what the request asks."""
    asked: dict[str, int] = {}
    first_field: dict[str, str] = {}
    for i, group in enumerate(request.instance_groups):
        for instance_type in group.launch_types:
            asked[instance_type] = asked.get(instance_type, 0) + group.instance_count
            first_field.setdefault(instance_type, f"instanceGroups[{i}].instanceCount")
    limits = cluster_usage_quotas(quotas)
    checked = [t for t in asked if t in limits]
    if not checked:
        return []
    used = instances_in_use(sm)
    problems: list[dict[str, Any]] = []
    for instance_type in checked:
        value, code = limits[instance_type]
        available = max(0, int(value) - used.get(instance_type, 0))
        if asked[instance_type] > available:
            field = first_field[instance_type]
            problems.append(
                {
                    "field": field,
                    "message": f"{field}: asks for {asked[instance_type]} {instance_type} but the SageMaker "
                    f"service quota '{quota_name(instance_type)}' ({code}) is {int(value)} with "
                    f"{used.get(instance_type, 0)} in use by existing HyperPod clusters: {available} available; "
                    "request an increase in Service Quotas or ask for fewer",
                    "asked": asked[instance_type],
                    "available": available,
                    "quota": int(value),
                    "inUse": used.get(instance_type, 0),
                }
            )
    return problems


def preflight(ec2: Any, quotas: Any, sm: Any, request: CreateClusterRequest, region_zones: list[str]) -> None:
    """Every preflight check of a create in ``request.availability_zone`` (see the module docstring).

    Raises:
        ValidationFailed: one 422 listing every failed check (each detail names the group field).
    """
    check_zones(request.availability_zone, region_zones)
    problems = check_offerings(ec2, request, request.availability_zone)
    problems += check_quotas(quotas, sm, request)
    if problems:
        raise ValidationFailed("invalid request: " + "; ".join(p["message"] for p in problems), details=problems)
