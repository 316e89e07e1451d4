"""Stage ``network``: the VPC and its gateways, then the EKS cluster; torn down last.

Create steps: ``ensure_network`` -> ``create_eks_cluster`` -> wait ``check_nat_gateway`` ->
``ensure_compute_subnet`` (the HyperPod compute subnets, while EKS still creates) -> wait ``check_eks_cluster``.
Teardown steps: poll ``delete_eks_cluster`` -> poll ``delete_network`` (every owned subnet, the compute ones too).
"""

from __future__ import annotations

import re
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.capacity.subnets import ensure_group_subnet
from instantstart.clusters import records
from instantstart.clusters.stages.common import GONE, Step
from instantstart.errors import StageFailed
from instantstart.models.cluster import EksView
from instantstart.models.common import StageName
from instantstart.models.resources import NetworkResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import eks_cluster_name, owned_by, ownership_tags
from instantstart.network import vpc
from instantstart.runtime import Runtime

STAGE = StageName.NETWORK

MAX_ZONE_FALLBACKS = 2
"""How many times one ``create_eks_cluster`` moves the control-plane subnets after EKS refused a zone."""

_OFFERED = re.compile(r"choose from these availability zones: ([a-z0-9-]+(?:,\s*[a-z0-9-]+)*)", re.IGNORECASE)


def _record(rt: Runtime, p: StepPayload, resources: NetworkResources, observed: str) -> None:
    records.update_stage_resources(
        rt, tag=p.cluster_tag, generation=p.generation, stage=STAGE, resources=resources, observed_status=observed
    )


def _resources(rt: Runtime, p: StepPayload) -> NetworkResources:
    return records.stage_resources(rt, p.cluster_tag, p.generation, STAGE, NetworkResources)


def ensure_network(rt: Runtime, p: StepPayload) -> StepResult:
    """VPC, subnets, gateways and security group (:func:`instantstart.network.vpc.ensure_network`)."""
    cluster = records.cluster_record(rt, p.cluster_tag)
    earlier = _resources(rt, p)  # a retried stage keeps the control-plane zones an earlier fallback chose
    moved = earlier.zones if earlier.refused_zones else None
    ids = vpc.ensure_network(rt.client("ec2"), p.cluster_tag, rt.region, cluster.availability_zone, moved)
    _record(rt, p, ids, f"NatGateway {ids.nat_gateway_state}")
    return StepResult(status=ids.nat_gateway_state)


def check_nat_gateway(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the NAT gateway is ``available`` (EC2 ``DescribeNatGateways``).

    Raises:
        StageFailed: the NAT gateway failed (``NatGatewayFailed``, its FailureMessage verbatim).
    """
    state, message = vpc.nat_gateway_state(rt.client("ec2"), str(_resources(rt, p).nat_gateway_id))
    _record(rt, p, NetworkResources(nat_gateway_state=state), f"NatGateway {state}")
    if state == "failed":
        raise StageFailed("NatGatewayFailed", message or "NAT gateway failed")
    return PollResult(done=state == "available", status=state)


def imported_egress(rt: Runtime, p: StepPayload, net: NetworkResources, zone: str) -> NetworkResources:
    """An imported VPC's owned egress (:func:`instantstart.network.vpc.ensure_egress`), merged into the (imported)
    network stage's resources so its teardown finds it; returns the network resources with it."""
    egress = vpc.ensure_egress(
        rt.client("ec2"), tag=p.cluster_tag, vpc_id=str(net.vpc_id), region=rt.region, availability_zone=zone
    )
    _record_resources(rt, p, egress)
    return net.model_copy(update=egress.model_dump(exclude_none=True))


def _record_resources(rt: Runtime, p: StepPayload, resources: NetworkResources) -> None:
    records.update_stage_resources(rt, tag=p.cluster_tag, generation=p.generation, stage=STAGE, resources=resources)


def ensure_compute_subnets(rt: Runtime, p: StepPayload) -> NetworkResources:
    """The per-AZ compute subnet of the requested zone and the own subnet of each ``dedicatedSubnet`` group.

    Both through :func:`instantstart.capacity.subnets.ensure_group_subnet` (under the VPC's subnet lock, so a
    concurrent group add never makes a second subnet for the zone); recorded on this stage (``computeSubnetId``,
    ``computeSubnetCidr``, ``computeSubnetSource``: ``created`` when the subnet carries this cluster's tag, whichever
    attempt made it, ``dedicatedSubnetIds``), whose teardown deletes them with
    the VPC's other owned subnets. In an imported VPC the NAT gateway, public subnet and S3 endpoint the subnets
    route through are created first, owned by the cluster (:func:`imported_egress`). Returns the network
    resources with the subnets.

    Raises:
        StageFailed: ``SubnetLockTimeout``; ``InsufficientVpcAddressSpace`` when the VPC has no free /20.
    """
    cluster = records.cluster_record(rt, p.cluster_tag)
    net = _resources(rt, p)
    if records.stage_imported(rt, p.cluster_tag, p.generation, STAGE):
        net = imported_egress(rt, p, net, cluster.availability_zone)
    where = {
        "tag": p.cluster_tag,
        "vpc_id": str(net.vpc_id),
        "availability_zone": cluster.availability_zone,
        "nat_gateway_id": str(net.nat_gateway_id),
        "s3_endpoint_id": str(net.s3_endpoint_id),
        "operation_id": p.operation_id,  # a retry after a crash inside the lock takes it back at once
    }
    ec2 = rt.client("ec2")
    subnet = ensure_group_subnet(rt.store, ec2, **where)
    dedicated = {
        g.instance_group_name: ensure_group_subnet(
            rt.store, ec2, **where, dedicated_group=g.instance_group_name
        ).subnet_id
        for g in cluster.request.instance_groups
        if g.dedicated_subnet
    }
    subnets = NetworkResources(
        compute_subnet_id=subnet.subnet_id,
        compute_subnet_cidr=subnet.cidr_block,
        # made by this cluster's control plane, possibly by an attempt that died before recording it: created
        compute_subnet_source="created" if subnet.owner_tag == p.cluster_tag else subnet.source,
        dedicated_subnet_ids={**(net.dedicated_subnet_ids or {}), **dedicated} or None,
    )
    _record_resources(rt, p, subnets)
    return net.model_copy(update=subnets.model_dump(exclude_none=True))


def ensure_compute_subnet(rt: Runtime, p: StepPayload) -> StepResult:
    """The HyperPod compute subnets (:func:`ensure_compute_subnets`), made once the NAT gateway is available.

    Runs while EKS creates its control plane (about ten minutes), so HyperPod's ``CreateCluster`` later finds
    its subnets recorded and waits for nothing here.
    """
    net = ensure_compute_subnets(rt, p)
    dedicated = net.dedicated_subnet_ids or {}
    return StepResult(
        status=f"{net.compute_subnet_id} ({net.compute_subnet_source})"
        + "".join(f", {g}: {s}" for g, s in dedicated.items())
    )


def offered_zones(exc: ClientError) -> list[str]:
    """The zones an EKS ``UnsupportedAvailabilityZoneException`` offers (its ``validZones`` member).

    Falls back to the list at the end of the message ("... choose from these availability zones:
    a, b, c") when the member is absent; empty when neither names a zone.
    """
    response: dict[str, Any] = getattr(exc, "response", {}) or {}
    zones = response.get("validZones") or response.get("Error", {}).get("validZones")
    if zones:
        return [str(z) for z in zones]
    found = _OFFERED.search(error_message(exc))
    return [z.strip() for z in found.group(1).split(",")] if found else []


def _fall_back(rt: Runtime, p: StepPayload, res: NetworkResources, exc: ClientError) -> NetworkResources | None:
    """Move the private control-plane subnets out of the zones EKS refused; None when no two zones are left."""
    current = list(res.zones or [])
    offered = offered_zones(exc)
    refused = [
        *(res.refused_zones or []),
        *(z for z in current if z not in offered and z not in (res.refused_zones or [])),
    ]
    zones = vpc.fallback_zones(current, refused, offered) if offered else None
    if zones is None or zones == current:
        return None
    private = vpc.move_private_subnets(
        rt.client("ec2"),
        tag=p.cluster_tag,
        vpc_id=str(res.vpc_id),
        vpc_cidr=str(res.cidr_block),
        private_route_table_id=str(res.private_route_table_id),
        old_zones=current,
        new_zones=zones,
    )
    moved = NetworkResources(zones=zones, refused_zones=refused, private_subnet_ids=private)
    _record(rt, p, moved, f"EKS refused {', '.join(refused)}: control plane moved to {', '.join(zones)}")
    return res.model_copy(update={"zones": zones, "refused_zones": refused, "private_subnet_ids": private})


def _eks_observed(status: str, res: NetworkResources) -> str:
    """``EKS <status>``, naming the control-plane zones when EKS refused some."""
    if res.refused_zones and res.zones:
        return f"EKS {status} in {', '.join(res.zones)} (EKS refused {', '.join(res.refused_zones)})"
    return f"EKS {status}"


def _owned_status(found: dict[str, Any], tag: str) -> str:
    """The status of EKS cluster ``found`` (a ``DescribeCluster`` ``cluster``) when cluster ``tag`` owns it.

    Raises:
        StageFailed: it exists without our ownership tags (``ClusterNotOwned``).
    """
    if not owned_by(found.get("tags", {}), tag):
        raise StageFailed("ClusterNotOwned", f"EKS cluster {found['name']} exists and is not managed by InstantStart")
    return str(found["status"])


def create_or_take_eks_cluster(eks: Any, tag: str, request: dict[str, Any]) -> str:
    """EKS ``CreateCluster`` with ``request``; its status. When EKS answers ``ResourceInUseException`` (an earlier
    attempt created the cluster and the ``DescribeCluster`` before this call lagged, answering NotFound), the existing
    cluster's status from ``DescribeCluster``, if cluster ``tag`` owns it.

    Raises:
        StageFailed: the existing cluster is not ours (``ClusterNotOwned``).
        ClientError: any other EKS error, verbatim.
    """
    try:
        return str(eks.create_cluster(**request)["cluster"]["status"])
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
    return _owned_status(eks.describe_cluster(name=request["name"])["cluster"], tag)


def create_eks_cluster(rt: Runtime, p: StepPayload) -> StepResult:
    """Private default route through the NAT, then the EKS cluster (``API_AND_CONFIG_MAP``) unless it exists.

    Calls EKS ``DescribeCluster`` / ``CreateCluster``
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html). When EKS answers
    ``UnsupportedAvailabilityZoneException`` (a zone without capacity for control planes), the
    private control-plane subnets move to zones the error offers (:func:`instantstart.network.vpc.fallback_zones`;
    the HyperPod compute subnet stays in the requested zone) and the cluster is created again, at most
    :data:`MAX_ZONE_FALLBACKS` times; the network stage records ``zones`` and ``refusedZones``. ``CreateCluster``
    answering ``ResourceInUseException`` after ``DescribeCluster`` said NotFound (an earlier attempt made it; EKS's
    reads can lag its writes) takes the existing cluster when it is ours.

    Raises:
        StageFailed: an EKS cluster of that name exists without our ownership tags (``ClusterNotOwned``).
        ClientError: EKS still refuses after the fallbacks (the last error, verbatim), or any other error.
    """
    tag = p.cluster_tag
    cluster = records.cluster_record(rt, tag)
    res = _resources(rt, p)
    ec2 = rt.client("ec2")
    vpc.ensure_private_routes(ec2, str(res.private_route_table_id), str(res.nat_gateway_id))
    eks = rt.client("eks")
    name = eks_cluster_name(tag)
    try:
        status = _owned_status(eks.describe_cluster(name=name)["cluster"], tag)
    except ClientError as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
        fallbacks = 0
        while True:
            try:
                request = {
                    "name": name,
                    "version": cluster.request.kubernetes_version or rt.settings.KUBERNETES_VERSION,
                    "roleArn": rt.settings.EKS_CLUSTER_ROLE_ARN,
                    "resourcesVpcConfig": {
                        "subnetIds": vpc.eks_subnet_ids(ec2, res),
                        "securityGroupIds": [str(res.security_group_id)],
                        "endpointPublicAccess": True,
                        "endpointPrivateAccess": True,
                    },
                    "accessConfig": {
                        "authenticationMode": "API_AND_CONFIG_MAP",
                        # EKS's own creator entry would carry no tags, so the steps role could not manage it
                        # (template.yaml EksChangeOwned): the access stage creates a tagged one instead.
                        "bootstrapClusterCreatorAdminPermissions": False,
                    },
                    "tags": ownership_tags(tag),
                }
                status = create_or_take_eks_cluster(eks, tag, request)
                break
            except ClientError as refused:
                if error_code(refused) != "UnsupportedAvailabilityZoneException" or fallbacks >= MAX_ZONE_FALLBACKS:
                    raise
                moved = _fall_back(rt, p, res, refused)
                if moved is None:
                    raise
                res, fallbacks = moved, fallbacks + 1
    _record(rt, p, NetworkResources(eks_cluster_name=name), _eks_observed(status, res))
    return StepResult(status=status)


def check_eks_cluster(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the EKS cluster is ACTIVE; records the EKS view (EKS ``DescribeCluster``).

    Raises:
        StageFailed: the cluster is FAILED (``EksClusterFailed``, with its health issues).
    """
    found = rt.client("eks").describe_cluster(name=eks_cluster_name(p.cluster_tag))["cluster"]
    status = found["status"]
    _record(rt, p, NetworkResources(eks_cluster_arn=found["arn"]), _eks_observed(status, _resources(rt, p)))
    view = EksView(
        cluster_name=found["name"],
        cluster_arn=found["arn"],
        status=status,
        kubernetes_version=found.get("version"),
        endpoint=found.get("endpoint"),
        vpc_id=found.get("resourcesVpcConfig", {}).get("vpcId"),
    )
    rt.store.record_observations(p.cluster_tag, now=records.now(), eks=view)
    if status == "FAILED":
        issues = found.get("health", {}).get("issues", [])
        message = "; ".join(f"{i.get('code')}: {i.get('message')}" for i in issues) or "EKS cluster creation failed"
        raise StageFailed("EksClusterFailed", message)
    return PollResult(done=status == "ACTIVE", status=status)


# -- teardown ----------------------------------------------------------------------------------
def delete_eks_cluster(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the EKS cluster is gone; starts EKS ``DeleteCluster`` if needed (ownership checked).

    An imported EKS cluster (the stage is ``imported``) is never deleted: done at once.

    Raises:
        StageFailed: the cluster is not ours (``ClusterNotOwned``).
    """
    if records.stage_imported(rt, p.cluster_tag, p.generation, STAGE):
        name = records.eks_name(rt, p.cluster_tag, p.generation)
        return PollResult(done=True, status=f"imported EKS cluster {name} retained")
    eks = rt.client("eks")
    name = eks_cluster_name(p.cluster_tag)
    try:
        found = eks.describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if error_code(exc) in GONE:
            return PollResult(done=True, status="deleted")
        raise
    if found["status"] != "DELETING":
        if not owned_by(found.get("tags", {}), p.cluster_tag):
            raise StageFailed("ClusterNotOwned", f"EKS cluster {name} is not managed by InstantStart")
        eks.delete_cluster(name=name)
    return PollResult(done=False, status="DELETING")


def delete_network(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once every owned network resource is gone (:func:`instantstart.network.vpc.delete_network`).

    Network interfaces of a deleted HyperPod or EKS cluster linger for a while (AWS releases them
    asynchronously), and EC2 refuses to delete their subnet, security group or VPC with
    ``DependencyViolation`` until then: that is "not yet", checked again at the next poll. In an imported
    VPC only the owned egress and compute resources go (:func:`instantstart.network.vpc.ensure_egress`).
    """
    imported = records.stage_imported(rt, p.cluster_tag, p.generation, STAGE)
    imported_vpc = _resources(rt, p).vpc_id if imported else None
    try:
        deleting = vpc.delete_network(rt.client("ec2"), p.cluster_tag, imported_vpc_id=imported_vpc)
    except ClientError as exc:
        if error_code(exc) != "DependencyViolation":
            raise
        return PollResult(done=False, status=f"waiting for network interfaces to be released: {exc}")
    return PollResult(done=not deleting, status=f"NAT gateways deleting: {', '.join(deleting)}" if deleting else None)


CREATE_STEPS: dict[str, Step] = {
    "ensure_network": ensure_network,
    "create_eks_cluster": create_eks_cluster,
    "check_nat_gateway": check_nat_gateway,
    "ensure_compute_subnet": ensure_compute_subnet,
    "check_eks_cluster": check_eks_cluster,
}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {"delete_eks_cluster": delete_eks_cluster, "delete_network": delete_network}
"""The delete workflow's steps of this stage, by task action name."""
