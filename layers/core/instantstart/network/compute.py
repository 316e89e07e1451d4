"""HyperPod compute subnets: the per-zone ``hp-compute-<az>`` /20 and an instance group's dedicated one, each with
its own route table through the NAT gateway and associated with the S3 gateway endpoint.

:mod:`instantstart.network.vpc` re-exports these; callers go through
:func:`instantstart.capacity.subnets.ensure_group_subnet`, which holds the VPC's subnet lock.
"""

from __future__ import annotations

from typing import Any

from instantstart.errors import StageFailed
from instantstart.models.resources import ComputeSubnet
from instantstart.naming import INSTANCE_GROUP_KEY, MANAGED_KEY, TAG_KEY, compute_subnet_name, dedicated_subnet_name
from instantstart.network.cidr import free_compute_cidr
from instantstart.network.parts import (
    Ec2,
    _associate,
    _ensure_default_route,
    _ensure_route_table,
    _owned_filters,
    _spec,
)


def ensure_compute_subnet(
    ec2: Ec2,
    *,
    tag: str,
    vpc_id: str,
    availability_zone: str,
    nat_gateway_id: str,
    s3_endpoint_id: str,
) -> ComputeSubnet:
    """The HyperPod compute subnet of one Availability Zone. The one rule every capacity path uses.

    The tagged per-AZ /20 ``hp-compute-<az>`` of the VPC when it exists, else a new /20 at the first
    free block of the VPC; either way with its own route table (default route to the NAT gateway)
    associated with the S3 gateway endpoint. Calls ``DescribeSubnets``, ``CreateSubnet``,
    ``CreateRouteTable``, ``CreateRoute``, ``AssociateRouteTable``, ``ModifyVpcEndpoint``.

    Not safe against a concurrent caller on its own (two could both create, or pick the same free
    block): callers go through :func:`instantstart.capacity.subnets.ensure_group_subnet`, which holds
    the VPC's subnet lock.
    """
    name = compute_subnet_name(availability_zone)
    filters = [
        {"Name": "vpc-id", "Values": [vpc_id]},
        {"Name": "availability-zone", "Values": [availability_zone]},
        {"Name": "tag:Name", "Values": [name]},
        {"Name": f"tag:{MANAGED_KEY}", "Values": ["true"]},
    ]
    return _ensure_routed_subnet(
        ec2,
        tag=tag,
        vpc_id=vpc_id,
        availability_zone=availability_zone,
        name=name,
        filters=filters,
        tags={},
        nat_gateway_id=nat_gateway_id,
        s3_endpoint_id=s3_endpoint_id,
    )


def ensure_dedicated_subnet(
    ec2: Ec2,
    *,
    tag: str,
    vpc_id: str,
    availability_zone: str,
    instance_group_name: str,
    nat_gateway_id: str,
    s3_endpoint_id: str,
) -> ComputeSubnet:
    """An instance group's own compute subnet (``dedicatedSubnet: true``), found by its tags or created.

    A /20 named ``hp-group-<name>`` and tagged ``instantstart:instance-group=<name>`` (plus the ownership
    tags), with its own route table like :func:`ensure_compute_subnet`. It outlives the group: deleting the
    group leaves it, a later group of the same name gets it again, and the cluster's network teardown
    (:func:`.teardown.delete_network`, by ownership tags) deletes it. Same EC2 calls and the same locking rule as
    :func:`ensure_compute_subnet`.
    """
    name = dedicated_subnet_name(instance_group_name)
    filters = [
        {"Name": "vpc-id", "Values": [vpc_id]},
        *_owned_filters(tag, "dedicated-subnet"),
        {"Name": f"tag:{INSTANCE_GROUP_KEY}", "Values": [instance_group_name]},
    ]
    return _ensure_routed_subnet(
        ec2,
        tag=tag,
        vpc_id=vpc_id,
        availability_zone=availability_zone,
        name=name,
        filters=filters,
        tags={INSTANCE_GROUP_KEY: instance_group_name},
        role="dedicated-subnet",
        nat_gateway_id=nat_gateway_id,
        s3_endpoint_id=s3_endpoint_id,
    )


def _ensure_routed_subnet(
    ec2: Ec2,
    *,
    tag: str,
    vpc_id: str,
    availability_zone: str,
    name: str,
    filters: list[dict[str, Any]],
    tags: dict[str, str],
    nat_gateway_id: str,
    s3_endpoint_id: str,
    role: str = "compute-subnet",
) -> ComputeSubnet:
    found = ec2.describe_subnets(Filters=filters)["Subnets"]
    source = "reused"
    if found:
        subnet = found[0]
    else:
        vpc_cidr = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]["CidrBlock"]
        used = [
            s["CidrBlock"] for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]
        ]
        try:
            cidr = free_compute_cidr(vpc_cidr, used)
        except ValueError as exc:
            raise StageFailed(
                "InsufficientVpcAddressSpace", f"{exc}: subnet {name} cannot be created in {vpc_id}"
            ) from exc
        subnet = ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=availability_zone,
            TagSpecifications=_spec("subnet", tag, name, role, **tags),
        )["Subnet"]
        source = "created"
    sid = str(subnet["SubnetId"])
    route_table_id = _ensure_route_table(ec2, tag, vpc_id, name, "compute-route-table")
    _ensure_default_route(ec2, route_table_id, NatGatewayId=nat_gateway_id)
    _associate(ec2, route_table_id, sid)
    endpoint = ec2.describe_vpc_endpoints(VpcEndpointIds=[s3_endpoint_id])["VpcEndpoints"][0]
    if route_table_id not in endpoint.get("RouteTableIds", []):
        ec2.modify_vpc_endpoint(VpcEndpointId=s3_endpoint_id, AddRouteTableIds=[route_table_id])
    return ComputeSubnet(
        subnet_id=sid,
        route_table_id=route_table_id,
        cidr_block=str(subnet["CidrBlock"]),
        source=source,
        owner_tag={t["Key"]: t["Value"] for t in subnet.get("Tags", [])}.get(
            TAG_KEY, tag if source == "created" else None
        ),
    )
