"""The network modules' EC2 building blocks: ownership tag specifications and filters, and the find-or-create of
one subnet, one route table, its association and its default route (each inspects before it creates).

Used by :mod:`.vpc` (the cluster network), :mod:`.compute` (HyperPod compute subnets) and :mod:`.teardown`.
"""

from __future__ import annotations

from typing import Any

from instantstart.naming import MANAGED_KEY, ROLE_KEY, TAG_KEY, ownership_tags, tag_list

Ec2 = Any  # a boto3 EC2 client


def _spec(resource_type: str, tag: str, name: str, role: str, **extra: str) -> list[dict[str, Any]]:
    tags = ownership_tags(tag, Name=name, **{ROLE_KEY: role}, **extra)
    return [{"ResourceType": resource_type, "Tags": tag_list(tags)}]


def _owned_filters(tag: str, role: str | None = None) -> list[dict[str, Any]]:
    filters = [
        {"Name": f"tag:{TAG_KEY}", "Values": [tag]},
        {"Name": f"tag:{MANAGED_KEY}", "Values": ["true"]},
    ]
    if role:
        filters.append({"Name": f"tag:{ROLE_KEY}", "Values": [role]})
    return filters


def _ensure_subnet(ec2: Ec2, tag: str, vpc_id: str, cidr: str, az: str, name: str, role: str) -> str:
    found = ec2.describe_subnets(
        Filters=[
            *_owned_filters(tag, role),
            {"Name": "vpc-id", "Values": [vpc_id]},
            {"Name": "tag:Name", "Values": [name]},
        ]
    )["Subnets"]
    if found:
        return str(found[0]["SubnetId"])
    subnet = ec2.create_subnet(
        VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=az, TagSpecifications=_spec("subnet", tag, name, role)
    )["Subnet"]
    return str(subnet["SubnetId"])


def _ensure_route_table(ec2: Ec2, tag: str, vpc_id: str, name: str, role: str) -> str:
    found = ec2.describe_route_tables(
        Filters=[
            *_owned_filters(tag, role),
            {"Name": "vpc-id", "Values": [vpc_id]},
            {"Name": "tag:Name", "Values": [name]},
        ]
    )["RouteTables"]
    if found:
        return str(found[0]["RouteTableId"])
    table = ec2.create_route_table(VpcId=vpc_id, TagSpecifications=_spec("route-table", tag, name, role))
    return str(table["RouteTable"]["RouteTableId"])


def _associate(ec2: Ec2, route_table_id: str, subnet_id: str) -> None:
    table = ec2.describe_route_tables(RouteTableIds=[route_table_id])["RouteTables"][0]
    if any(a.get("SubnetId") == subnet_id for a in table.get("Associations", [])):
        return
    ec2.associate_route_table(RouteTableId=route_table_id, SubnetId=subnet_id)


def _ensure_default_route(ec2: Ec2, route_table_id: str, **target: str) -> None:
    table = ec2.describe_route_tables(RouteTableIds=[route_table_id])["RouteTables"][0]
    for route in table.get("Routes", []):
        if route.get("DestinationCidrBlock") == "0.0.0.0/0":
            return
    ec2.create_route(RouteTableId=route_table_id, DestinationCidrBlock="0.0.0.0/0", **target)
