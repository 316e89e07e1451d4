"""The catalog a user picks from before creating: the Region's zones and the instance types offered in one."""

from __future__ import annotations

from pydantic import Field

from instantstart.errors import ValidationFailed
from instantstart.models.cluster import hyperpod_instance_types
from instantstart.models.common import ApiModel
from instantstart.runtime import Runtime


class AvailabilityZone(ApiModel):
    """One zone of the Region."""

    zone_name: str = Field(description="Availability Zone name (use it as availabilityZone).", examples=["us-west-2c"])
    zone_id: str = Field(description="Availability Zone id (the same in every account).", examples=["usw2-az3"])


def list_availability_zones(rt: Runtime) -> list[AvailabilityZone]:
    """Available zones of the Region (EC2 ``DescribeAvailabilityZones``)."""
    out = rt.client("ec2").describe_availability_zones(
        Filters=[
            {"Name": "state", "Values": ["available"]},
            {"Name": "zone-type", "Values": ["availability-zone"]},
        ]
    )
    return [AvailabilityZone(zone_name=z["ZoneName"], zone_id=z["ZoneId"]) for z in out["AvailabilityZones"]]


def check_availability_zone(rt: Runtime, zone: str) -> str:
    """The zone name if it is an available zone of this Region.

    Calls EC2 ``DescribeAvailabilityZones``.

    Raises:
        ValidationFailed: the zone is not in the Region (details name ``availabilityZone`` and list the zones).
    """
    names = [z.zone_name for z in list_availability_zones(rt)]
    if zone not in names:
        raise ValidationFailed(
            f"availabilityZone '{zone}' is not an available zone of {rt.region}; allowed values: {', '.join(names)}",
            details=[{"field": "availabilityZone", "message": "not in this Region", "allowedValues": names}],
        )
    return zone


def list_instance_types(rt: Runtime, zone: str) -> list[str]:
    """HyperPod ``ClusterInstanceType`` values whose EC2 type is offered in ``zone``, sorted.

    Calls EC2 ``DescribeInstanceTypeOfferings`` with ``LocationType=availability-zone``.

    Raises:
        ValidationFailed: the zone is not in the Region.
    """
    check_availability_zone(rt, zone)
    offered: set[str] = set()
    paginator = rt.client("ec2").get_paginator("describe_instance_type_offerings")
    for page in paginator.paginate(LocationType="availability-zone", Filters=[{"Name": "location", "Values": [zone]}]):
        offered.update(o["InstanceType"] for o in page["InstanceTypeOfferings"])
    return sorted(t for t in hyperpod_instance_types() if t.removeprefix("ml.") in offered)
