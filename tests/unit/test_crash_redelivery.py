"""A step that died after one of its AWS calls and before it answered is run again by Step Functions: the second
run converges to what one clean run leaves (no duplicate, no setting lost, records as if it ran once).

``Crashing`` wraps a boto3 client and ends the "process" right after its n-th call returned (a ``BaseException``,
so nothing of the step after that call runs, as when Lambda's runtime dies).
"""

from __future__ import annotations

import ipaddress
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from instantstart.clusters import addons, records
from instantstart.models.common import ClusterStatus, OperationStatus, StageName
from instantstart.naming import MANAGED_KEY, TAG_KEY
from instantstart.network import vpc
from instantstart.runtime import Runtime
from instantstart.store.table import ConditionFailed

ZONE = "us-west-2c"


class Crash(BaseException):
    """The runtime died (not an ``Exception``: no handler of the step sees it)."""


class Crashing:
    """A boto3 client whose ``after``-th API call returns and then the process dies."""

    def __init__(self, client: Any, after: int) -> None:
        self._client, self._after, self.calls = client, after, 0
        self.operations: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name in ("get_paginator", "can_paginate", "get_waiter"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            finally:
                self.calls += 1
                self.operations.append(name)
                if self.calls == self._after:
                    raise Crash(name)

        return call


def network_state(ec2: Any, tag: str) -> dict[str, Any]:
    """What a user would compare of one cluster's network, without ids: counts, CIDRs relative to the VPC, routes,
    associations, DNS attributes, the security group's rules."""
    owned = [{"Name": f"tag:{TAG_KEY}", "Values": [tag]}]
    [found] = ec2.describe_vpcs(Filters=owned)["Vpcs"]
    vpc_id, base = found["VpcId"], ipaddress.ip_network(found["CidrBlock"])
    in_vpc = [{"Name": "vpc-id", "Values": [vpc_id]}]

    def rel(cidr: str) -> str:
        net = ipaddress.ip_network(cidr)
        if not net.subnet_of(base):  # type: ignore[arg-type]
            return cidr
        return f"+{int(net.network_address) - int(base.network_address)}/{net.prefixlen}"

    subnets = {s["SubnetId"]: s for s in ec2.describe_subnets(Filters=in_vpc)["Subnets"]}
    tables = ec2.describe_route_tables(Filters=in_vpc)["RouteTables"]
    groups = [g for g in ec2.describe_security_groups(Filters=in_vpc)["SecurityGroups"] if g["GroupName"] != "default"]
    return {
        "dns": [
            ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute=a)[k]["Value"]
            for a, k in (("enableDnsSupport", "EnableDnsSupport"), ("enableDnsHostnames", "EnableDnsHostnames"))
        ],
        "subnets": sorted((rel(s["CidrBlock"]), s["AvailabilityZone"]) for s in subnets.values()),
        "route_tables": sorted(
            (
                sorted(rel(subnets[a["SubnetId"]]["CidrBlock"]) for a in t.get("Associations", []) if "SubnetId" in a),
                sorted(
                    (rel(r["DestinationCidrBlock"]), "nat" if r.get("NatGatewayId") else r.get("GatewayId", "")[:3])
                    for r in t.get("Routes", [])
                    if r.get("DestinationCidrBlock")
                ),
            )
            for t in tables
        ),
        "internet_gateways": len(ec2.describe_internet_gateways(Filters=owned)["InternetGateways"]),
        "nat_gateways": len(
            [n for n in ec2.describe_nat_gateways(Filters=in_vpc)["NatGateways"] if n["State"] != "deleted"]
        ),
        "addresses": len(ec2.describe_addresses(Filters=owned)["Addresses"]),
        "endpoints": len(ec2.describe_vpc_endpoints(Filters=in_vpc)["VpcEndpoints"]),
        "security_groups": [
            sorted(
                (r["IpProtocol"], len(r.get("UserIdGroupPairs", [])), len(r.get("IpRanges", [])))
                for r in g["IpPermissions"]
            )
            for g in groups
        ],
    }


@pytest.fixture
def ec2(aws: Any) -> Any:
    return aws.client("ec2")


@pytest.mark.parametrize("dies_after", ["create_vpc", "create_security_group"])
def test_given_ensure_network_dies_right_after_creating_when_run_again_then_the_network_is_a_clean_runs(
    ec2: Any, dies_after: str
) -> None:
    counter = Crashing(ec2, after=0)
    vpc.ensure_network(counter, "clean", "us-west-2", ZONE)
    clean = network_state(ec2, "clean")
    assert clean["dns"] == [True, True] and clean["security_groups"] == [[("-1", 1, 0)]]

    with pytest.raises(Crash):
        vpc.ensure_network(Crashing(ec2, after=counter.operations.index(dies_after) + 1), "crash", "us-west-2", ZONE)
    vpc.ensure_network(ec2, "crash", "us-west-2", ZONE)

    assert network_state(ec2, "crash") == clean


@pytest.fixture
def iam(aws: Any) -> Any:
    return aws.client("iam")


def test_given_ensure_role_dies_between_create_role_and_put_role_policy_when_run_again_then_the_policy_is_there(
    iam: Any,
) -> None:
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "*"}]}
    kwargs: dict[str, Any] = {
        "name": "instantstart-demo-s3-csi",
        "tag": "demo",
        "path": "/instantstart/",
        "trust": addons.pod_identity_trust("123456789012"),
        "policy_name": "s3-claim-bucket-access",
        "policy": policy,
        "description": "test",
    }
    with pytest.raises(Crash):
        addons.ensure_role(Crashing(iam, after=2), **kwargs)  # GetRole (not found), CreateRole, then dead
    assert iam.list_role_policies(RoleName="instantstart-demo-s3-csi")["PolicyNames"] == []

    arn, created = addons.ensure_role(iam, **kwargs)

    assert not created and arn.endswith("role/instantstart/instantstart-demo-s3-csi")
    assert iam.list_role_policies(RoleName="instantstart-demo-s3-csi")["PolicyNames"] == ["s3-claim-bucket-access"]
    document = iam.get_role_policy(RoleName="instantstart-demo-s3-csi", PolicyName="s3-claim-bucket-access")
    assert document["PolicyDocument"] == policy
    assert len([r for r in iam.list_roles()["Roles"] if r["RoleName"] == "instantstart-demo-s3-csi"]) == 1


def test_given_an_owned_addon_left_without_its_association_when_ensured_again_then_the_association_is_made(
    iam: Any,
) -> None:
    # what an attempt leaves that created the add-on without inline associations (a version refusing them) and died
    # before CreatePodIdentityAssociation: the add-on, owned, with no association; the storage role exists
    eks = boto3.client("eks", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    spec = addons.ADDONS_BY_NAME["aws-mountpoint-s3-csi-driver"]
    owned = {TAG_KEY: "demo", MANAGED_KEY: "true"}
    found = {"addon": {"addonName": spec.name, "clusterName": "eks-cluster-demo", "status": "ACTIVE", "tags": owned}}
    where = {"clusterName": "eks-cluster-demo", "namespace": "kube-system", "serviceAccount": "s3-csi-driver-sa"}
    role_arn = "arn:aws:iam::123456789012:role/instantstart/instantstart-demo-s3-csi"
    association = {"associationArn": "arn:a", "associationId": "a-1", **where}
    with Stubber(eks) as stub:
        stub.add_response("describe_addon", found, {"clusterName": "eks-cluster-demo", "addonName": spec.name})
        stub.add_response("list_pod_identity_associations", {"associations": []}, where)
        stub.add_response(
            "create_pod_identity_association",
            {"association": association | {"roleArn": role_arn}},
            {**where, "roleArn": role_arn, "tags": owned},
        )
        stub.add_response("describe_addon", found, {"clusterName": "eks-cluster-demo", "addonName": spec.name})
        stub.add_response("list_pod_identity_associations", {"associations": [association]}, where)

        def ensure() -> Any:
            return addons.ensure_addon(
                eks,
                iam,
                tag="demo",
                cluster_name="eks-cluster-demo",
                addon=spec,
                account_id="123456789012",
                region="us-west-2",
                role_path="/instantstart/",
            )

        first, second = ensure(), ensure()
        stub.assert_no_pending_responses()

    assert first.role_arn == second.role_arn == role_arn, "the association's role, made once, found again"
    assert iam.list_role_policies(RoleName="instantstart-demo-s3-csi")["PolicyNames"] == ["s3-claim-bucket-access"]


@pytest.fixture
def rt(demo: Runtime) -> Runtime:
    """A cluster ``demo`` whose network stage is RUNNING (records written by the real create path)."""
    records.begin_stage(demo, operation_id=_operation(demo), tag="demo", generation=1, stage=StageName.NETWORK)
    return demo


def _operation(rt: Runtime) -> str:
    return str(rt.store.get_cluster("demo").current_operation_id)  # type: ignore[union-attr]


def test_given_complete_stage_ran_when_it_runs_again_for_the_same_operation_then_the_stage_stays_succeeded(
    rt: Runtime,
) -> None:
    op = _operation(rt)
    first = records.complete_stage(rt, tag="demo", generation=1, stage=StageName.NETWORK, operation_id=op)
    ended = rt.store.get_stage("demo", 1, StageName.NETWORK)

    again = records.complete_stage(rt, tag="demo", generation=1, stage=StageName.NETWORK, operation_id=op)

    assert first.status == again.status == "SUCCEEDED"
    assert rt.store.get_stage("demo", 1, StageName.NETWORK) == ended, "nothing written the second time"
    with pytest.raises(ConditionFailed):
        records.complete_stage(rt, tag="demo", generation=1, stage=StageName.NETWORK, operation_id="another-op")
    with pytest.raises(ConditionFailed):
        records.complete_stage(rt, tag="demo", generation=1, stage=StageName.STORAGE, operation_id=op)  # PENDING


def test_given_an_operation_finished_when_the_same_end_runs_again_then_it_answers_the_same_and_writes_nothing(
    rt: Runtime,
) -> None:
    op = _operation(rt)
    end = {"operation_id": op, "tag": "demo", "cluster_status": ClusterStatus.READY}
    first = records.finish_operation(rt, status=OperationStatus.SUCCEEDED, **end)
    cluster, operation = rt.store.get_cluster("demo"), rt.store.get_operation(op)

    again = records.finish_operation(rt, status=OperationStatus.SUCCEEDED, **end)

    assert first == again
    assert (rt.store.get_cluster("demo"), rt.store.get_operation(op)) == (cluster, operation)
    with pytest.raises(ConditionFailed):
        records.finish_operation(rt, status=OperationStatus.FAILED, **end)


def test_given_a_compute_subnet_made_by_an_attempt_that_died_when_found_again_then_it_names_this_cluster_as_its_owner(
    ec2: Any,
) -> None:
    net = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE)
    where = {
        "tag": "demo",
        "vpc_id": str(net.vpc_id),
        "availability_zone": ZONE,
        "nat_gateway_id": str(net.nat_gateway_id),
        "s3_endpoint_id": str(net.s3_endpoint_id),
    }
    counter = Crashing(ec2, after=0)
    vpc.ensure_compute_subnet(counter, **where)  # a clean run elsewhere, only to learn where CreateSubnet falls

    with pytest.raises(Crash):
        vpc.ensure_compute_subnet(
            Crashing(ec2, after=counter.operations.index("create_subnet") + 1),
            **{**where, "availability_zone": "us-west-2a"},
        )
    found = vpc.ensure_compute_subnet(ec2, **{**where, "availability_zone": "us-west-2a"})

    # the network stage records "created" for a subnet carrying its own cluster tag, whichever attempt made it
    assert (found.source, found.owner_tag) == ("reused", "demo")
