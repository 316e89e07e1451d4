"""The cluster network in moto's EC2: inspect-before-create, ownership tags, the compute-subnet rule, teardown."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from instantstart.naming import MANAGED_KEY, TAG_KEY
from instantstart.network import vpc
from instantstart.network.cidr import control_plane_cidrs, free_compute_cidr, free_vpc_cidr

ZONE = "us-west-2c"


@pytest.fixture
def ec2(aws: Any) -> Any:
    return aws.client("ec2")


def tags_of(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def inventory(ec2: Any) -> dict[str, set[str]]:
    """Every id of every kind of network resource in the account (moto's defaults included)."""
    return {
        "vpcs": {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]},
        "subnets": {s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]},
        "igws": {g["InternetGatewayId"] for g in ec2.describe_internet_gateways()["InternetGateways"]},
        "route_tables": {r["RouteTableId"] for r in ec2.describe_route_tables()["RouteTables"]},
        "nat_gateways": {
            n["NatGatewayId"] for n in ec2.describe_nat_gateways()["NatGateways"] if n["State"] != "deleted"
        },
        "addresses": {a["AllocationId"] for a in ec2.describe_addresses()["Addresses"]},
        "endpoints": {
            e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints()["VpcEndpoints"] if e["State"] != "deleted"
        },
        "security_groups": {g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]},
    }


def test_given_no_network_when_ensuring_it_twice_then_the_second_call_creates_nothing_and_returns_the_same_ids(
    ec2: Any,
) -> None:
    before = inventory(ec2)

    first = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)
    after_first = inventory(ec2)
    second = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)

    assert second == first
    assert inventory(ec2) == after_first
    created = {kind: after_first[kind] - before[kind] for kind in before}
    assert {kind: len(ids) for kind, ids in created.items()} == {
        "vpcs": 1,
        "subnets": 4,
        "igws": 1,
        "route_tables": 3,  # public, private, and the VPC's main table
        "nat_gateways": 1,
        "addresses": 1,
        "endpoints": 1,
        "security_groups": 2,  # the cluster group and the VPC's default group
    }


def test_given_a_new_network_then_subnets_span_two_zones_with_the_requested_zone_first(ec2: Any) -> None:
    ids = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)

    assert ids["zones"][0] == ZONE and len(set(ids["zones"])) == 2
    subnets = ec2.describe_subnets(SubnetIds=ids["publicSubnetIds"] + ids["privateSubnetIds"])["Subnets"]
    by_id = {s["SubnetId"]: s for s in subnets}
    assert [by_id[s]["AvailabilityZone"] for s in ids["publicSubnetIds"]] == ids["zones"]
    assert [by_id[s]["AvailabilityZone"] for s in ids["privateSubnetIds"]] == ids["zones"]
    assert {s["VpcId"] for s in subnets} == {ids["vpcId"]}
    public_rt = ec2.describe_route_tables(RouteTableIds=[ids["publicRouteTableId"]])["RouteTables"][0]
    assert {"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": ids["internetGatewayId"]}.items() <= next(
        r for r in public_rt["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"
    ).items()
    assert {a["SubnetId"] for a in public_rt["Associations"] if "SubnetId" in a} == set(ids["publicSubnetIds"])


def test_given_a_new_network_then_every_resource_it_created_carries_the_ownership_tags(ec2: Any) -> None:
    before = inventory(ec2)
    ids = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)
    compute = vpc.ensure_compute_subnet(
        ec2,
        tag="demo",
        vpc_id=ids["vpcId"],
        availability_zone=ZONE,
        nat_gateway_id=ids["natGatewayId"],
        s3_endpoint_id=ids["s3EndpointId"],
    )
    assert compute.source == "created"

    resources: list[dict[str, Any]] = [
        *ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [ids["vpcId"]]}])["Vpcs"],
        *ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [ids["vpcId"]]}])["Subnets"],
        *ec2.describe_internet_gateways(InternetGatewayIds=[ids["internetGatewayId"]])["InternetGateways"],
        *[
            rt
            for rt in ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [ids["vpcId"]]}])["RouteTables"]
            if not any(a.get("Main") for a in rt.get("Associations", []))
        ],
        *ec2.describe_nat_gateways(NatGatewayIds=[ids["natGatewayId"]])["NatGateways"],
        *[a for a in ec2.describe_addresses()["Addresses"] if a["AllocationId"] not in before["addresses"]],
        *ec2.describe_vpc_endpoints(VpcEndpointIds=[ids["s3EndpointId"]])["VpcEndpoints"],
        *ec2.describe_security_groups(GroupIds=[ids["securityGroupId"]])["SecurityGroups"],
    ]

    assert len(resources) == 1 + 5 + 1 + 3 + 1 + 1 + 1 + 1
    for resource in resources:
        tags = tags_of(resource)
        assert tags.get(TAG_KEY) == "demo", resource
        assert tags.get(MANAGED_KEY) == "true", resource


def test_given_an_existing_10_0_vpc_when_planning_then_the_next_free_16_is_chosen(ec2: Any) -> None:
    ec2.create_vpc(CidrBlock="10.0.0.0/16")

    ids = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)

    assert ids["cidrBlock"] == "10.1.0.0/16"
    assert ec2.describe_vpcs(VpcIds=[ids["vpcId"]])["Vpcs"][0]["CidrBlock"] == "10.1.0.0/16"


def test_given_two_clusters_when_ensuring_networks_then_each_gets_its_own_vpc_and_nat_gateway(ec2: Any) -> None:
    first = vpc.ensure_network(ec2, "alpha", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)
    second = vpc.ensure_network(ec2, "bravo", "us-west-2", "us-west-2a").model_dump(by_alias=True, exclude_none=True)

    assert first["vpcId"] != second["vpcId"]
    assert not ipaddress.ip_network(first["cidrBlock"]).overlaps(ipaddress.ip_network(second["cidrBlock"]))
    shared = {k for k in first if k not in ("zones", "natGatewayState") and first[k] == second[k]}
    assert not shared, f"second cluster reused the first cluster's {shared}"
    nats = ec2.describe_nat_gateways(NatGatewayIds=[first["natGatewayId"], second["natGatewayId"]])["NatGateways"]
    assert {n["NatGatewayId"]: n["VpcId"] for n in nats} == {
        first["natGatewayId"]: first["vpcId"],
        second["natGatewayId"]: second["vpcId"],
    }


@pytest.fixture
def network(ec2: Any) -> dict[str, Any]:
    ids = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)
    vpc.ensure_private_routes(ec2, ids["privateRouteTableId"], ids["natGatewayId"])
    return ids


def compute_subnet(ec2: Any, network: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return vpc.ensure_compute_subnet(
        ec2,
        tag="demo",
        vpc_id=network["vpcId"],
        availability_zone=kwargs.pop("availability_zone", ZONE),
        nat_gateway_id=network["natGatewayId"],
        s3_endpoint_id=network["s3EndpointId"],
        **kwargs,
    ).model_dump(by_alias=True)


def test_given_no_compute_subnet_when_ensuring_then_a_20_named_hp_compute_az_routes_through_the_nat_and_s3(
    ec2: Any, network: dict[str, Any]
) -> None:
    result = compute_subnet(ec2, network)

    assert result["source"] == "created"
    subnet = ec2.describe_subnets(SubnetIds=[result["subnetId"]])["Subnets"][0]
    assert subnet["VpcId"] == network["vpcId"] and subnet["AvailabilityZone"] == ZONE
    assert ipaddress.ip_network(subnet["CidrBlock"]).prefixlen == 20
    assert result["cidrBlock"] == subnet["CidrBlock"]
    assert tags_of(subnet)["Name"] == f"hp-compute-{ZONE}"
    vpc_net = ipaddress.ip_network(network["cidrBlock"])
    assert ipaddress.ip_network(subnet["CidrBlock"]).subnet_of(vpc_net)  # type: ignore[arg-type]
    control_plane = [
        ipaddress.ip_network(c) for group in control_plane_cidrs(network["cidrBlock"]).values() for c in group
    ]
    assert not any(ipaddress.ip_network(subnet["CidrBlock"]).overlaps(c) for c in control_plane)

    table = ec2.describe_route_tables(RouteTableIds=[result["routeTableId"]])["RouteTables"][0]
    assert result["routeTableId"] not in (network["privateRouteTableId"], network["publicRouteTableId"])
    default = [r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"]
    assert [r.get("NatGatewayId") for r in default] == [network["natGatewayId"]]
    assert [a["SubnetId"] for a in table["Associations"] if "SubnetId" in a] == [result["subnetId"]]
    endpoint = ec2.describe_vpc_endpoints(VpcEndpointIds=[network["s3EndpointId"]])["VpcEndpoints"][0]
    assert result["routeTableId"] in endpoint["RouteTableIds"]


def test_given_a_compute_subnet_exists_when_ensuring_again_then_it_is_reused_and_nothing_is_added(
    ec2: Any, network: dict[str, Any]
) -> None:
    created = compute_subnet(ec2, network)
    before = inventory(ec2)
    endpoint_tables = ec2.describe_vpc_endpoints(VpcEndpointIds=[network["s3EndpointId"]])["VpcEndpoints"][0][
        "RouteTableIds"
    ]

    reused = compute_subnet(ec2, network)

    assert reused == {**created, "source": "reused"}
    assert inventory(ec2) == before
    table = ec2.describe_route_tables(RouteTableIds=[created["routeTableId"]])["RouteTables"][0]
    assert len([r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"]) == 1
    assert len([a for a in table["Associations"] if "SubnetId" in a]) == 1
    endpoint = ec2.describe_vpc_endpoints(VpcEndpointIds=[network["s3EndpointId"]])["VpcEndpoints"][0]
    assert endpoint["RouteTableIds"] == endpoint_tables


def test_given_a_compute_subnet_in_one_zone_when_another_zone_is_asked_then_a_second_20_is_created(
    ec2: Any, network: dict[str, Any]
) -> None:
    first = compute_subnet(ec2, network)

    second = compute_subnet(ec2, network, availability_zone="us-west-2a")

    assert second["source"] == "created"
    assert second["subnetId"] != first["subnetId"] and second["routeTableId"] != first["routeTableId"]
    assert not ipaddress.ip_network(first["cidrBlock"]).overlaps(ipaddress.ip_network(second["cidrBlock"]))


def test_given_an_owned_network_and_foreign_vpcs_when_deleting_then_only_the_owned_resources_go(ec2: Any) -> None:
    untagged = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    untagged_subnet = ec2.create_subnet(VpcId=untagged, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    other = vpc.ensure_network(ec2, "other", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)
    ids = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)

    first = vpc.delete_network(ec2, "demo")
    assert first == [ids["natGatewayId"]]
    done = vpc.delete_network(ec2, "demo")
    assert done == []

    remaining = inventory(ec2)
    assert ids["vpcId"] not in remaining["vpcs"]
    assert not set(ids["publicSubnetIds"] + ids["privateSubnetIds"]) & remaining["subnets"]
    assert ids["internetGatewayId"] not in remaining["igws"]
    assert not {ids["publicRouteTableId"], ids["privateRouteTableId"]} & remaining["route_tables"]
    assert ids["s3EndpointId"] not in remaining["endpoints"]
    assert ids["securityGroupId"] not in remaining["security_groups"]
    assert untagged in remaining["vpcs"] and untagged_subnet in remaining["subnets"]
    assert other["vpcId"] in remaining["vpcs"]
    assert set(other["publicSubnetIds"] + other["privateSubnetIds"]) <= remaining["subnets"]
    assert other["natGatewayId"] in remaining["nat_gateways"]


def test_given_a_deleted_network_when_deleting_again_then_it_is_done_and_nothing_else_is_touched(ec2: Any) -> None:
    vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)
    vpc.delete_network(ec2, "demo")
    vpc.delete_network(ec2, "demo")
    before = inventory(ec2)

    assert vpc.delete_network(ec2, "demo") == []
    assert inventory(ec2) == before


# -- address planning ------------------------------------------------------------------------------
def test_given_used_ranges_when_planning_a_vpc_then_the_first_non_overlapping_16_of_10_8_is_chosen() -> None:
    assert free_vpc_cidr([]) == "10.0.0.0/16"
    assert free_vpc_cidr(["172.31.0.0/16"]) == "10.0.0.0/16"
    assert free_vpc_cidr(["10.0.0.0/16", "10.1.128.0/17"]) == "10.2.0.0/16"
    assert free_vpc_cidr(["10.0.0.0/15", "10.2.5.0/24"]) == "10.3.0.0/16"


def test_given_a_wider_used_range_when_planning_a_vpc_then_every_16_inside_it_is_skipped() -> None:
    assert free_vpc_cidr(["10.0.0.0/12"]) == "10.16.0.0/16"


def test_given_every_16_taken_when_planning_a_vpc_then_value_error() -> None:
    with pytest.raises(ValueError, match="no free /16"):
        free_vpc_cidr(["10.0.0.0/8"])


def test_given_a_vpc_when_laying_out_control_plane_subnets_then_two_public_and_two_private_24s() -> None:
    assert control_plane_cidrs("10.3.0.0/16") == {
        "public": ["10.3.0.0/24", "10.3.1.0/24"],
        "private": ["10.3.2.0/24", "10.3.3.0/24"],
    }


def test_given_the_control_plane_24s_when_planning_a_compute_subnet_then_the_first_free_20_follows_them() -> None:
    used = ["10.3.0.0/24", "10.3.1.0/24", "10.3.2.0/24", "10.3.3.0/24"]

    assert free_compute_cidr("10.3.0.0/16", used) == "10.3.16.0/20"
    assert free_compute_cidr("10.3.0.0/16", [*used, "10.3.16.0/20", "10.3.48.0/20"]) == "10.3.32.0/20"


def test_given_a_full_vpc_when_planning_a_compute_subnet_then_value_error() -> None:
    with pytest.raises(ValueError, match="no free /20"):
        free_compute_cidr(
            "10.3.0.0/16", ["10.3.0.0/17", "10.3.128.0/18", "10.3.192.0/19", "10.3.224.0/20", "10.3.240.0/21"]
        )
