"""The cluster network's teardown: every EC2 resource carrying the cluster's ownership tags, dependants first (NAT
gateways, Elastic IPs, endpoints, route tables, subnets, internet gateway, security groups, then the VPC).

:mod:`instantstart.network.vpc` re-exports :func:`delete_network`.
"""

from __future__ import annotations

from instantstart.naming import owned_by
from instantstart.network.parts import Ec2, _owned_filters


def _delete_vpc(ec2: Ec2, tag: str, vpc_id: str, *, keep_vpc: bool = False) -> None:
    """Delete the owned endpoints, route tables, subnets, internet gateway and security group, then the VPC
    (``keep_vpc``: an imported VPC, which is not ours, stays)."""
    endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["VpcEndpoints"]
    # an endpoint deleted by an earlier poll (which then met DependencyViolation) is listed as deleted
    owned_endpoints = [
        e["VpcEndpointId"]
        for e in endpoints
        if owned_by(e.get("Tags", []), tag) and str(e.get("State", "")).lower() not in ("deleting", "deleted")
    ]
    if owned_endpoints:
        ec2.delete_vpc_endpoints(VpcEndpointIds=owned_endpoints)
    for table in ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["RouteTables"]:
        if not owned_by(table.get("Tags", []), tag):
            continue
        for assoc in table.get("Associations", []):
            if not assoc.get("Main"):
                ec2.disassociate_route_table(AssociationId=assoc["RouteTableAssociationId"])
        ec2.delete_route_table(RouteTableId=table["RouteTableId"])
    for subnet in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]:
        if owned_by(subnet.get("Tags", []), tag):
            ec2.delete_subnet(SubnetId=subnet["SubnetId"])
    for igw in ec2.describe_internet_gateways(Filters=_owned_filters(tag))["InternetGateways"]:
        if not owned_by(igw.get("Tags", []), tag):  # never another owner's gateway, whatever the filter did
            continue
        for att in igw.get("Attachments", []):
            ec2.detach_internet_gateway(InternetGatewayId=igw["InternetGatewayId"], VpcId=att["VpcId"])
        ec2.delete_internet_gateway(InternetGatewayId=igw["InternetGatewayId"])
    for group in ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["SecurityGroups"]:
        if group["GroupName"] != "default" and owned_by(group.get("Tags", []), tag):
            ec2.delete_security_group(GroupId=group["GroupId"])
    if not keep_vpc:
        ec2.delete_vpc(VpcId=vpc_id)


def delete_network(ec2: Ec2, tag: str, imported_vpc_id: str | None = None) -> list[str]:
    """Delete every network resource carrying this cluster's ownership tags, dependants first.

    Returns the NAT gateways still deleting: while the list is not empty the caller polls and calls
    again (the function is idempotent); an empty list means everything is gone. Resources without
    the ownership tags are never touched: in an ``imported_vpc_id`` (a VPC of an imported cluster) only
    what :func:`.vpc.ensure_egress` and :func:`.compute.ensure_compute_subnet` created goes, the VPC stays.
    """
    deleting = []
    for nat in ec2.describe_nat_gateways(Filters=_owned_filters(tag))["NatGateways"]:
        if not owned_by(nat.get("Tags", []), tag):
            continue
        if nat["State"] in ("pending", "available"):
            ec2.delete_nat_gateway(NatGatewayId=nat["NatGatewayId"])
            deleting.append(str(nat["NatGatewayId"]))
        elif nat["State"] == "deleting":
            deleting.append(str(nat["NatGatewayId"]))
    if deleting:
        return deleting
    for address in ec2.describe_addresses(Filters=_owned_filters(tag))["Addresses"]:
        if owned_by(address.get("Tags", []), tag) and not address.get("AssociationId"):
            ec2.release_address(AllocationId=address["AllocationId"])
    for vpc in ec2.describe_vpcs(Filters=_owned_filters(tag, "vpc"))["Vpcs"]:
        if owned_by(vpc.get("Tags", []), tag):
            _delete_vpc(ec2, tag, vpc["VpcId"])
    if imported_vpc_id:
        _delete_vpc(ec2, tag, imported_vpc_id, keep_vpc=True)
    return []
