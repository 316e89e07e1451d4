"""The cluster network: VPC, control-plane subnets, NAT, S3 gateway endpoint, an imported VPC's egress; the compute
subnets are in :mod:`.compute`, the teardown in :mod:`.teardown` (both re-exported), the EC2 building blocks they share
in :mod:`.parts`.

Every function inspects before it creates (resources are found by their ownership tags), so a
retried step converges instead of duplicating. EC2 API reference:
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/OperationList-query.html
"""

from __future__ import annotations

from typing import Any

from instantstart.errors import StageFailed
from instantstart.models.resources import NetworkResources
from instantstart.naming import owned_by
from instantstart.network.cidr import control_plane_cidrs, free_compute_cidr, free_vpc_cidr
from instantstart.network.compute import (  # re-exported
    ensure_compute_subnet as ensure_compute_subnet,
)
from instantstart.network.compute import (
    ensure_dedicated_subnet as ensure_dedicated_subnet,
)
from instantstart.network.parts import (  # re-exported
    Ec2 as Ec2,
)
from instantstart.network.parts import (
    _associate,
    _ensure_default_route,
    _ensure_route_table,
    _ensure_subnet,
    _owned_filters,
    _spec,
)
from instantstart.network.teardown import (  # re-exported
    delete_network as delete_network,
)


def control_plane_zones(ec2: Ec2, preferred: str) -> list[str]:
    """Two Availability Zones for the EKS control-plane subnets, ``preferred`` first.

    Calls EC2 ``DescribeAvailabilityZones``.

    Raises:
        StageFailed: the Region has fewer than two available zones.
    """
    zones = [
        z["ZoneName"]
        for z in ec2.describe_availability_zones(
            Filters=[
                {"Name": "state", "Values": ["available"]},
                {"Name": "zone-type", "Values": ["availability-zone"]},
            ]
        )["AvailabilityZones"]
    ]
    ordered = [preferred, *sorted(z for z in zones if z != preferred)]
    if len(ordered) < 2:
        raise StageFailed("InsufficientAvailabilityZones", "EKS needs subnets in at least two Availability Zones")
    return ordered[:2]


def ensure_vpc(ec2: Ec2, tag: str) -> dict[str, str]:
    """The cluster's VPC (a free /16 of 10.0.0.0/8), created if absent, with DNS support and DNS hostnames on.

    The DNS attributes are checked on a VPC that exists too: an attempt that died between ``CreateVpc`` and
    ``ModifyVpcAttribute`` left one without them (EKS's private endpoint needs both). Returns ``{"vpcId",
    "cidrBlock"}``. Calls ``DescribeVpcs``, ``CreateVpc``, ``DescribeVpcAttribute``, ``ModifyVpcAttribute``.
    """
    found = ec2.describe_vpcs(Filters=_owned_filters(tag, "vpc"))["Vpcs"]
    if found:
        vpc_id, cidr = str(found[0]["VpcId"]), str(found[0]["CidrBlock"])
    else:
        used = [
            assoc["CidrBlock"]
            for vpc in ec2.describe_vpcs()["Vpcs"]
            for assoc in vpc.get("CidrBlockAssociationSet", [{"CidrBlock": vpc["CidrBlock"]}])
        ]
        cidr = free_vpc_cidr(used)
        vpc = ec2.create_vpc(CidrBlock=cidr, TagSpecifications=_spec("vpc", tag, f"instantstart-{tag}", "vpc"))
        vpc_id = str(vpc["Vpc"]["VpcId"])
    _ensure_dns(ec2, vpc_id)
    return {"vpcId": vpc_id, "cidrBlock": cidr}


def _ensure_dns(ec2: Ec2, vpc_id: str) -> None:
    """DNS support, then DNS hostnames (which needs support), on ``vpc_id`` where they are off."""
    for attribute, key in (("enableDnsSupport", "EnableDnsSupport"), ("enableDnsHostnames", "EnableDnsHostnames")):
        if not ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute=attribute)[key]["Value"]:
            ec2.modify_vpc_attribute(VpcId=vpc_id, **{key: {"Value": True}})


def ensure_internet_gateway(ec2: Ec2, tag: str, vpc_id: str) -> str:
    """The cluster's internet gateway, attached to ``vpc_id``; returns its id.

    Calls ``DescribeInternetGateways``, ``CreateInternetGateway``, ``AttachInternetGateway``.
    """
    igws = ec2.describe_internet_gateways(Filters=_owned_filters(tag, "internet-gateway"))["InternetGateways"]
    if igws:
        igw_id = str(igws[0]["InternetGatewayId"])
    else:
        igw_id = str(
            ec2.create_internet_gateway(
                TagSpecifications=_spec("internet-gateway", tag, f"instantstart-{tag}", "internet-gateway")
            )["InternetGateway"]["InternetGatewayId"]
        )
    attached = ec2.describe_internet_gateways(InternetGatewayIds=[igw_id])["InternetGateways"][0].get("Attachments", [])
    if not any(a.get("VpcId") == vpc_id for a in attached):
        ec2.attach_internet_gateway(InternetGatewayId=igw_id, VpcId=vpc_id)
    return igw_id


def ensure_nat_gateway(ec2: Ec2, tag: str, vpc_id: str, public_subnet_id: str) -> tuple[str, str]:
    """The cluster's NAT gateway (pending or available) in ``public_subnet_id``; returns ``(id, State)``.

    Reuses an unassociated Elastic IP of the cluster before allocating one. Calls ``DescribeNatGateways``,
    ``DescribeAddresses``, ``AllocateAddress``, ``CreateNatGateway``.
    """
    # Ownership is re-checked on the answer: a filter an EC2 implementation ignores must not hand us
    # another cluster's NAT gateway (moto ignores tag filters on DescribeNatGateways).
    nats = [
        n
        for n in ec2.describe_nat_gateways(
            Filters=[*_owned_filters(tag, "nat-gateway"), {"Name": "vpc-id", "Values": [vpc_id]}]
        )["NatGateways"]
        if n["State"] in ("pending", "available") and n.get("VpcId") == vpc_id and owned_by(n.get("Tags", []), tag)
    ]
    if nats:
        return str(nats[0]["NatGatewayId"]), str(nats[0]["State"])
    addresses = [
        a
        for a in ec2.describe_addresses(Filters=_owned_filters(tag, "nat-eip"))["Addresses"]
        if not a.get("AssociationId")
    ]
    allocation_id = (
        addresses[0]["AllocationId"]
        if addresses
        else ec2.allocate_address(
            Domain="vpc", TagSpecifications=_spec("elastic-ip", tag, f"instantstart-{tag}-nat", "nat-eip")
        )["AllocationId"]
    )
    nat = ec2.create_nat_gateway(
        SubnetId=public_subnet_id,
        AllocationId=allocation_id,
        ConnectivityType="public",
        TagSpecifications=_spec("natgateway", tag, f"instantstart-{tag}", "nat-gateway"),
    )["NatGateway"]
    return str(nat["NatGatewayId"]), str(nat["State"])


def ensure_s3_endpoint(ec2: Ec2, tag: str, vpc_id: str, region: str, route_table_id: str) -> str:
    """The S3 gateway endpoint of the VPC (routes of ``route_table_id``); returns its id.

    Calls ``DescribeVpcEndpoints``, ``CreateVpcEndpoint``.
    """
    endpoints = ec2.describe_vpc_endpoints(
        Filters=[*_owned_filters(tag, "s3-endpoint"), {"Name": "vpc-id", "Values": [vpc_id]}]
    )["VpcEndpoints"]
    if endpoints:
        return str(endpoints[0]["VpcEndpointId"])
    return str(
        ec2.create_vpc_endpoint(
            VpcId=vpc_id,
            ServiceName=f"com.amazonaws.{region}.s3",
            VpcEndpointType="Gateway",
            RouteTableIds=[route_table_id],
            TagSpecifications=_spec("vpc-endpoint", tag, f"instantstart-{tag}-s3", "s3-endpoint"),
        )["VpcEndpoint"]["VpcEndpointId"]
    )


def ensure_security_group(ec2: Ec2, tag: str, vpc_id: str) -> str:
    """The cluster security group (all traffic within itself; the rule is added to a group found without it);
    returns its id.

    Calls ``DescribeSecurityGroups``, ``CreateSecurityGroup``, ``AuthorizeSecurityGroupIngress``.
    """
    groups = ec2.describe_security_groups(
        Filters=[*_owned_filters(tag, "cluster-sg"), {"Name": "vpc-id", "Values": [vpc_id]}]
    )["SecurityGroups"]
    if groups:
        sg_id = str(groups[0]["GroupId"])
        # an attempt that died between CreateSecurityGroup and AuthorizeSecurityGroupIngress left it without its rule
        if _allows_itself(groups[0]):
            return sg_id
        ec2.authorize_security_group_ingress(
            GroupId=sg_id, IpPermissions=[{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": sg_id}]}]
        )
        return sg_id
    sg_id = str(
        ec2.create_security_group(
            GroupName=f"instantstart-{tag}-cluster",
            Description="InstantStart cluster: EKS control plane and HyperPod nodes (all traffic within the group)",
            VpcId=vpc_id,
            TagSpecifications=_spec("security-group", tag, f"instantstart-{tag}-cluster", "cluster-sg"),
        )["GroupId"]
    )
    # HyperPod nodes need all traffic among themselves (NCCL, EFA) and with the control plane.
    ec2.authorize_security_group_ingress(
        GroupId=sg_id, IpPermissions=[{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": sg_id}]}]
    )
    return sg_id


def _allows_itself(group: dict[str, Any]) -> bool:
    """Whether a described security group lets all traffic in from itself."""
    return any(
        rule.get("IpProtocol") == "-1"
        and any(pair.get("GroupId") == group["GroupId"] for pair in rule.get("UserIdGroupPairs", []))
        for rule in group.get("IpPermissions", [])
    )


def _private_subnet_name(tag: str, zone: str) -> str:
    return f"instantstart-{tag}-private-{zone}"


def ensure_network(
    ec2: Ec2, tag: str, region: str, availability_zone: str, private_zones: list[str] | None = None
) -> NetworkResources:
    """Everything of the cluster network except routes through the NAT gateway (it must be available).

    Creates (or finds) the VPC, two public and two private control-plane /24 subnets in two zones,
    the internet gateway and public route table, an Elastic IP and NAT gateway, the private route
    table, the S3 gateway endpoint and the cluster security group. Returns their ids; ``zones`` are
    the private (EKS control-plane) subnets' zones.

    Args:
        private_zones: the zones of the private subnets when an earlier attempt moved them
            (:func:`move_private_subnets`); default: the public subnets' zones.
    """
    vpc = ensure_vpc(ec2, tag)
    vpc_id = vpc["vpcId"]
    zones = control_plane_zones(ec2, availability_zone)
    layout = control_plane_cidrs(vpc["cidrBlock"])
    public = [
        _ensure_subnet(ec2, tag, vpc_id, cidr, az, f"instantstart-{tag}-public-{az}", "public-subnet")
        for cidr, az in zip(layout["public"], zones, strict=True)
    ]
    zones = list(private_zones or zones)
    private = [
        _ensure_subnet(ec2, tag, vpc_id, cidr, az, _private_subnet_name(tag, az), "private-subnet")
        for cidr, az in zip(layout["private"], zones, strict=True)
    ]
    igw_id = ensure_internet_gateway(ec2, tag, vpc_id)
    public_rt = _ensure_route_table(ec2, tag, vpc_id, f"instantstart-{tag}-public", "public-route-table")
    _ensure_default_route(ec2, public_rt, GatewayId=igw_id)
    for subnet_id in public:
        _associate(ec2, public_rt, subnet_id)
    private_rt = _ensure_route_table(ec2, tag, vpc_id, f"instantstart-{tag}-private", "private-route-table")
    for subnet_id in private:
        _associate(ec2, private_rt, subnet_id)
    nat_id, nat_state = ensure_nat_gateway(ec2, tag, vpc_id, public[0])
    return NetworkResources(
        vpc_id=vpc_id,
        cidr_block=vpc["cidrBlock"],
        zones=zones,
        public_subnet_ids=public,
        private_subnet_ids=private,
        internet_gateway_id=igw_id,
        public_route_table_id=public_rt,
        private_route_table_id=private_rt,
        nat_gateway_id=nat_id,
        nat_gateway_state=nat_state,
        s3_endpoint_id=ensure_s3_endpoint(ec2, tag, vpc_id, region, private_rt),
        security_group_id=ensure_security_group(ec2, tag, vpc_id),
    )


def fallback_zones(current: list[str], refused: list[str], offered: list[str]) -> list[str] | None:
    """The control-plane zones to try after EKS refused some: each zone of ``current`` stays in its slot
    unless refused, a refused one is replaced by the first zone of ``offered`` not used or refused.

    Pure. Returns None when ``offered`` has too few usable zones (EKS needs two distinct zones).
    """
    chosen = [z for z in current if z not in refused]
    spare = [z for z in offered if z not in current and z not in refused]
    out: list[str] = []
    for zone in current:
        if zone in chosen:
            out.append(zone)
        elif spare:
            out.append(spare.pop(0))
        else:
            return None
    return out if len(set(out)) == len(out) >= 2 else None


def move_private_subnets(
    ec2: Ec2,
    *,
    tag: str,
    vpc_id: str,
    vpc_cidr: str,
    private_route_table_id: str,
    old_zones: list[str],
    new_zones: list[str],
) -> list[str]:
    """Rebuild the private control-plane subnets in ``new_zones`` (slot by slot); returns their ids.

    A slot whose zone changes loses its subnet (``DisassociateRouteTable``, ``DeleteSubnet``: it holds
    no network interface, EKS refused the cluster) and gets a new one with the same /24 in the new
    zone, associated with the private route table. Idempotent: a subnet already in its zone is kept.
    """
    layout = control_plane_cidrs(vpc_cidr)["private"]
    ids = []
    for cidr, old, new in zip(layout, old_zones, new_zones, strict=True):
        if old != new:
            for subnet in ec2.describe_subnets(
                Filters=[
                    *_owned_filters(tag, "private-subnet"),
                    {"Name": "vpc-id", "Values": [vpc_id]},
                    {"Name": "tag:Name", "Values": [_private_subnet_name(tag, old)]},
                ]
            )["Subnets"]:
                table = ec2.describe_route_tables(RouteTableIds=[private_route_table_id])["RouteTables"][0]
                for assoc in table.get("Associations", []):
                    if assoc.get("SubnetId") == subnet["SubnetId"]:
                        ec2.disassociate_route_table(AssociationId=assoc["RouteTableAssociationId"])
                ec2.delete_subnet(SubnetId=subnet["SubnetId"])
        subnet_id = _ensure_subnet(ec2, tag, vpc_id, cidr, new, _private_subnet_name(tag, new), "private-subnet")
        _associate(ec2, private_route_table_id, subnet_id)
        ids.append(subnet_id)
    return ids


def eks_subnet_ids(ec2: Ec2, network: NetworkResources) -> list[str]:
    """The subnets of the EKS control plane: the private ones, then the public ones in the same zones.

    A public subnet outside ``network.zones`` (its zone was refused by EKS; it keeps the NAT gateway)
    is left out. Calls EC2 ``DescribeSubnets``.
    """
    public = list(network.public_subnet_ids or [])
    zones = set(network.zones or [])
    if public and zones:
        found = {s["SubnetId"]: s["AvailabilityZone"] for s in ec2.describe_subnets(SubnetIds=public)["Subnets"]}
        public = [s for s in public if found.get(s) in zones]
    return [*(network.private_subnet_ids or []), *public]


def nat_gateway_state(ec2: Ec2, nat_gateway_id: str) -> tuple[str, str | None]:
    """``(State, FailureMessage)`` of a NAT gateway (``pending``, ``available``, ``failed``, ...)."""
    nat = ec2.describe_nat_gateways(NatGatewayIds=[nat_gateway_id])["NatGateways"][0]
    return str(nat["State"]), nat.get("FailureMessage")


def ensure_private_routes(ec2: Ec2, private_route_table_id: str, nat_gateway_id: str) -> None:
    """Default route of the private route table through the (available) NAT gateway."""
    _ensure_default_route(ec2, private_route_table_id, NatGatewayId=nat_gateway_id)


def _free_block(ec2: Ec2, vpc_id: str, prefix: int) -> str:
    vpc_cidr = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]["CidrBlock"]
    used = [s["CidrBlock"] for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]]
    return free_compute_cidr(vpc_cidr, used, prefix=prefix)


def ensure_egress(ec2: Ec2, *, tag: str, vpc_id: str, region: str, availability_zone: str) -> NetworkResources:
    """Egress for HyperPod nodes in an imported VPC (one this control plane did not create), owned by ``tag``.

    The VPC's attached internet gateway is used when it has one (else an owned one is created and attached);
    an owned public /24 (the first free block) with its route table to the internet gateway, an owned NAT
    gateway there and an owned S3 gateway endpoint are found or created. Nothing of the VPC's own is changed,
    and :func:`delete_network` later deletes exactly these (``imported_vpc_id``). The NAT gateway may still be
    ``pending``: the caller waits for ``available`` before HyperPod is created. Calls ``DescribeVpcs``,
    ``DescribeSubnets``, ``DescribeInternetGateways``, ``CreateInternetGateway``, ``AttachInternetGateway``,
    ``CreateSubnet``, ``CreateRouteTable``, ``CreateRoute``, ``AssociateRouteTable``, ``CreateNatGateway``,
    ``CreateVpcEndpoint``.
    """
    attached = ec2.describe_internet_gateways(Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}])[
        "InternetGateways"
    ]
    igw_id = str(attached[0]["InternetGatewayId"]) if attached else ensure_internet_gateway(ec2, tag, vpc_id)
    name = f"instantstart-{tag}-public-{availability_zone}"
    found = ec2.describe_subnets(
        Filters=[
            *_owned_filters(tag, "public-subnet"),
            {"Name": "vpc-id", "Values": [vpc_id]},
            {"Name": "tag:Name", "Values": [name]},
        ]
    )["Subnets"]
    cidr = found[0]["CidrBlock"] if found else _free_block(ec2, vpc_id, 24)
    public = _ensure_subnet(ec2, tag, vpc_id, cidr, availability_zone, name, "public-subnet")
    public_rt = _ensure_route_table(ec2, tag, vpc_id, f"instantstart-{tag}-public", "public-route-table")
    _ensure_default_route(ec2, public_rt, GatewayId=igw_id)
    _associate(ec2, public_rt, public)
    nat_id, nat_state = ensure_nat_gateway(ec2, tag, vpc_id, public)
    return NetworkResources(
        internet_gateway_id=igw_id,
        public_subnet_ids=[public],
        public_route_table_id=public_rt,
        nat_gateway_id=nat_id,
        nat_gateway_state=nat_state,
        s3_endpoint_id=ensure_s3_endpoint(ec2, tag, vpc_id, region, public_rt),
    )
