"""Importing an existing EKS cluster (and its HyperPod cluster): inspect, refuse, and plan the stage records.

``POST /clusters/import`` brings a cluster built outside this control plane under management. The rules, one
function each, used by the API (and by any other caller):

- :func:`describe_eks_cluster`: the EKS cluster exists (else 404 naming ``eksClusterName``) and is ACTIVE;
- :func:`check_authentication_mode`: ``API`` or ``API_AND_CONFIG_MAP`` (HyperPod refuses ``CONFIG_MAP``);
- :func:`check_kubernetes_version`: a version of :data:`~instantstart.models.cluster.HYPERPOD_KUBERNETES_VERSIONS`;
- :func:`check_not_managed`: not already a cluster of this control plane (ownership tags, or imported by another tag);
- :func:`describe_hyperpod_cluster`: the named HyperPod cluster exists and is orchestrated by this EKS cluster;
- :func:`attached_hyperpod_clusters`: without a name, no HyperPod cluster may already be attached (import it instead).

:func:`inspect` runs them and reads what exists (VPC, subnets, security group, add-ons, the control plane's
access entry); :func:`plan_stages` turns that into stage records: SUCCEEDED and ``imported`` where the resources
exist, PENDING where the create workflow must build them. Resources found here carry no ownership tags, so no
teardown step deletes them (every teardown step checks ownership or skips an imported stage).

EKS API: https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeCluster.html,
SageMaker: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeCluster.html
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from instantstart.aws.clients import error_code
from instantstart.clusters.addons import ADDONS
from instantstart.clusters.stages.access import EKS_ADMIN_POLICY
from instantstart.errors import Conflict, NotFound, ValidationFailed
from instantstart.models.cluster import (
    HYPERPOD_KUBERNETES_VERSIONS,
    CreateClusterRequest,
    ImportClusterRequest,
    ImportedView,
    InstanceGroupRequest,
    RetainedResource,
)
from instantstart.models.common import CapacityType, StageName, StageStatus
from instantstart.models.records import StageRecord
from instantstart.models.resources import (
    AccessResources,
    DependenciesResources,
    HyperPodResources,
    NetworkResources,
)
from instantstart.naming import MANAGED_KEY, TAG_KEY

SUPPORTED_AUTHENTICATION_MODES = ("API", "API_AND_CONFIG_MAP")
"""EKS ``accessConfig.authenticationMode`` values HyperPod supports (it needs EKS access entries)."""


@dataclass
class Inspection:
    """What :func:`inspect` found about the EKS cluster to import."""

    eks: dict[str, Any]
    """EKS ``DescribeCluster`` ``cluster``."""
    vpc_cidr: str
    zones: list[str]
    """The zones of the cluster's subnets, in subnet order."""
    addons: list[str]
    """Add-ons installed now (EKS ``ListAddons``)."""
    access_entry: bool
    """The control plane's role has an access entry with the cluster-admin policy already."""
    hyperpod: dict[str, Any] | None = None
    """SageMaker ``DescribeCluster`` of the imported HyperPod cluster."""
    notes: list[str] = field(default_factory=list)
    access_entry_exists: bool = False
    """The control plane's role has an access entry (with or without the cluster-admin policy): it is retained,
    and what the access stage adds to it is taken back by DELETE."""

    @property
    def security_group_id(self) -> str:
        """The EKS cluster security group (``clusterSecurityGroupId``), else its first additional group."""
        vpc_config = self.eks.get("resourcesVpcConfig", {})
        groups = list(vpc_config.get("securityGroupIds") or [])
        return str(vpc_config.get("clusterSecurityGroupId") or (groups[0] if groups else ""))


def describe_eks_cluster(eks: Any, name: str) -> dict[str, Any]:
    """EKS ``DescribeCluster`` of ``name``, which must be ACTIVE.

    Raises:
        NotFound: no EKS cluster of that name (``EksClusterNotFound`` naming ``eksClusterName``).
        Conflict: the cluster is not ACTIVE (``EksClusterNotActive``, naming its status).
    """
    try:
        found: dict[str, Any] = eks.describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
        raise NotFound(
            f"EKS cluster '{name}' does not exist in this account and Region",
            code="EksClusterNotFound",
            details=[{"field": "eksClusterName", "message": f"no EKS cluster named {name}"}],
        ) from exc
    if found.get("status") != "ACTIVE":
        raise Conflict(
            f"EKS cluster '{name}' is {found.get('status')}; only an ACTIVE cluster can be imported",
            code="EksClusterNotActive",
            details=[{"field": "eksClusterName", "status": found.get("status")}],
        )
    return found


def check_authentication_mode(found: dict[str, Any]) -> str:
    """The cluster's ``accessConfig.authenticationMode``, which must allow EKS access entries.

    HyperPod supports ``API`` and ``API_AND_CONFIG_MAP`` (the EKS prerequisites of SageMaker HyperPod).
    A cluster without ``accessConfig`` is ``CONFIG_MAP`` (EKS's default for clusters created before access entries).

    Raises:
        ValidationFailed: ``CONFIG_MAP`` only (``UnsupportedAuthenticationMode`` naming ``eksClusterName``).
    """
    mode = str((found.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")
    if mode not in SUPPORTED_AUTHENTICATION_MODES:
        raise ValidationFailed(
            f"eksClusterName: EKS cluster '{found.get('name')}' uses authentication mode {mode}; SageMaker HyperPod "
            f"needs {' or '.join(SUPPORTED_AUTHENTICATION_MODES)} (switch it with EKS UpdateClusterConfig "
            "accessConfig.authenticationMode=API_AND_CONFIG_MAP, then import again)",
            code="UnsupportedAuthenticationMode",
            details=[
                {
                    "field": "eksClusterName",
                    "message": f"authentication mode {mode} is not supported",
                    "allowedValues": list(SUPPORTED_AUTHENTICATION_MODES),
                    "got": mode,
                }
            ],
        )
    return mode


def check_kubernetes_version(found: dict[str, Any]) -> str:
    """The cluster's Kubernetes version, which must be one HyperPod supports.

    Raises:
        ValidationFailed: another version (``UnsupportedKubernetesVersion`` naming ``eksClusterName``, the
            supported versions in ``allowedValues``).
    """
    version = str(found.get("version") or "")
    if version not in HYPERPOD_KUBERNETES_VERSIONS:
        raise ValidationFailed(
            f"eksClusterName: EKS cluster '{found.get('name')}' runs Kubernetes {version}; SageMaker HyperPod "
            f"supports {', '.join(HYPERPOD_KUBERNETES_VERSIONS)}",
            code="UnsupportedKubernetesVersion",
            details=[
                {
                    "field": "eksClusterName",
                    "message": f"Kubernetes version {version} is not supported by SageMaker HyperPod",
                    "allowedValues": list(HYPERPOD_KUBERNETES_VERSIONS),
                    "got": version,
                }
            ],
        )
    return version


def check_not_managed(found: dict[str, Any], imported_by: str | None) -> None:
    """The EKS cluster is not already a cluster of this control plane.

    Args:
        imported_by: the tag of a live cluster that imported it already, if any.

    Raises:
        Conflict: it carries our ownership tags, or another live cluster imported it (``EksClusterAlreadyManaged``).
    """
    tags = found.get("tags") or {}
    owner = imported_by or (tags.get(TAG_KEY) if tags.get(MANAGED_KEY) == "true" else None)
    if owner:
        raise Conflict(
            f"EKS cluster '{found.get('name')}' is already managed as cluster '{owner}'",
            code="EksClusterAlreadyManaged",
            details=[{"field": "eksClusterName", "clusterTag": owner}],
        )


def describe_hyperpod_cluster(sm: Any, name: str, eks_cluster_arn: str) -> dict[str, Any]:
    """SageMaker ``DescribeCluster`` of ``name``: it must exist, be orchestrated by ``eks_cluster_arn`` and not
    be Failed or Deleting.

    Raises:
        NotFound: no HyperPod cluster of that name (``HyperPodClusterNotFound`` naming ``hyperPodClusterName``).
        ValidationFailed: its ``Orchestrator.Eks.ClusterArn`` is another EKS cluster (``OrchestratorMismatch``).
        Conflict: it is Failed or Deleting (``HyperPodClusterNotUsable``).
    """
    try:
        found: dict[str, Any] = dict(sm.describe_cluster(ClusterName=name))
    except ClientError as exc:
        if error_code(exc) not in ("ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
            raise
        raise NotFound(
            f"HyperPod cluster '{name}' does not exist in this account and Region",
            code="HyperPodClusterNotFound",
            details=[{"field": "hyperPodClusterName", "message": f"no HyperPod cluster named {name}"}],
        ) from exc
    orchestrator = str(((found.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn") or "")
    if orchestrator != eks_cluster_arn:
        raise ValidationFailed(
            f"hyperPodClusterName: HyperPod cluster '{name}' is orchestrated by "
            f"{orchestrator or 'no EKS cluster'}, not by {eks_cluster_arn}",
            code="OrchestratorMismatch",
            details=[
                {
                    "field": "hyperPodClusterName",
                    "message": "must be a HyperPod cluster orchestrated by eksClusterName",
                    "orchestrator": orchestrator or None,
                }
            ],
        )
    if found.get("ClusterStatus") in ("Failed", "Deleting"):
        raise Conflict(
            f"HyperPod cluster '{name}' is {found.get('ClusterStatus')}; it cannot be imported",
            code="HyperPodClusterNotUsable",
            details=[{"field": "hyperPodClusterName", "status": found.get("ClusterStatus")}],
        )
    return found


def attached_hyperpod_clusters(sm: Any, eks_cluster_arn: str) -> list[str]:
    """Names of the HyperPod clusters orchestrated by ``eks_cluster_arn`` (SageMaker ``ListClusters``, every page,
    then ``DescribeCluster`` of each: the listing does not carry the orchestrator)."""
    names: list[str] = []
    token: str | None = None
    while True:
        page = sm.list_clusters(**({"NextToken": token} if token else {}))
        for summary in page.get("ClusterSummaries", []):
            try:
                found = sm.describe_cluster(ClusterName=summary["ClusterName"])
            except ClientError as exc:
                if error_code(exc) in ("ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
                    continue
                raise
            arn = ((found.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
            if arn == eks_cluster_arn and found.get("ClusterStatus") != "Deleting":
                names.append(str(found["ClusterName"]))
        token = page.get("NextToken")
        if not token:
            return names


def _access_entry_state(eks: Any, cluster_name: str, principal_arn: str) -> tuple[bool, bool]:
    """``(exists, ready)``: the principal has an access entry, and it has the cluster-admin policy (EKS
    ``DescribeAccessEntry``, ``ListAssociatedAccessPolicies``)."""
    try:
        eks.describe_access_entry(clusterName=cluster_name, principalArn=principal_arn)
        policies = eks.list_associated_access_policies(clusterName=cluster_name, principalArn=principal_arn)
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return False, False
        raise
    return True, any(p.get("policyArn") == EKS_ADMIN_POLICY for p in policies.get("associatedAccessPolicies", []))


def inspect(
    eks: Any,
    ec2: Any,
    sm: Any,
    request: ImportClusterRequest,
    *,
    principal_arn: str,
    imported_by: str | None = None,
) -> Inspection:
    """Inspect the EKS cluster (and HyperPod cluster) to import and apply every refusal rule, before any write.

    Calls EKS ``DescribeCluster``, ``ListAddons``, ``DescribeAccessEntry``, ``ListAssociatedAccessPolicies``; EC2
    ``DescribeVpcs``, ``DescribeSubnets``; SageMaker ``DescribeCluster`` (and ``ListClusters`` without
    ``hyperPodClusterName``).

    Raises:
        NotFound: unknown ``eksClusterName`` or ``hyperPodClusterName``.
        ValidationFailed: ``CONFIG_MAP`` authentication, an unsupported Kubernetes version, a HyperPod cluster
            orchestrated by another EKS cluster; neither ``hyperPodClusterName`` nor ``instanceGroups``.
        Conflict: not ACTIVE, already managed, or (without ``hyperPodClusterName``) a HyperPod cluster is already
            attached (``HyperPodClusterAttached``: name it in ``hyperPodClusterName``).
    """
    found = describe_eks_cluster(eks, request.eks_cluster_name)
    check_not_managed(found, imported_by)
    check_authentication_mode(found)
    check_kubernetes_version(found)
    hyperpod = None
    if request.hyper_pod_cluster_name:
        hyperpod = describe_hyperpod_cluster(sm, request.hyper_pod_cluster_name, str(found["arn"]))
    else:
        attached = attached_hyperpod_clusters(sm, str(found["arn"]))
        if attached:
            raise Conflict(
                f"EKS cluster '{request.eks_cluster_name}' already orchestrates HyperPod cluster "
                f"{', '.join(attached)}; import it with hyperPodClusterName",
                code="HyperPodClusterAttached",
                details=[{"field": "hyperPodClusterName", "allowedValues": attached}],
            )
        if not request.instance_groups:
            raise ValidationFailed(
                "instanceGroups: required without hyperPodClusterName (the HyperPod cluster created for the "
                "imported EKS cluster needs its instance groups, as in POST /clusters)",
                details=[{"field": "instanceGroups", "message": "required without hyperPodClusterName"}],
            )
    vpc_config = found.get("resourcesVpcConfig") or {}
    vpc_id = str(vpc_config.get("vpcId") or "")
    subnet_ids = [str(s) for s in vpc_config.get("subnetIds") or []]
    vpc = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]
    by_id = {s["SubnetId"]: s["AvailabilityZone"] for s in ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"]}
    zones = [str(by_id[s]) for s in subnet_ids if s in by_id]
    addons = [str(a) for a in eks.list_addons(clusterName=request.eks_cluster_name).get("addons", [])]
    entry_exists, entry_ready = _access_entry_state(eks, request.eks_cluster_name, principal_arn)
    return Inspection(
        eks=found,
        vpc_cidr=str(vpc["CidrBlock"]),
        zones=zones,
        addons=addons,
        access_entry=entry_ready,
        hyperpod=hyperpod,
        access_entry_exists=entry_exists,
    )


def imported_instance_groups(hyperpod: dict[str, Any]) -> list[InstanceGroupRequest]:
    """The imported HyperPod cluster's groups as the API's instance groups (what ``verify`` counts toward).

    ``InstanceType`` (or ``InstanceRequirements.InstanceTypes``), ``TargetCount`` (else ``CurrentCount``) and the
    capacity type (``TrainingPlanArn``, ``CapacityRequirements.Spot``, else On-Demand).

    Raises:
        ValidationFailed: a group this API cannot describe (e.g. a target count of 0), naming ``hyperPodClusterName``.
    """
    groups = []
    for g in hyperpod.get("InstanceGroups", []):
        capacity = (
            CapacityType.TRAINING_PLAN
            if g.get("TrainingPlanArn")
            else CapacityType.SPOT
            if "Spot" in (g.get("CapacityRequirements") or {})
            else CapacityType.ON_DEMAND
        )
        types = (g.get("InstanceRequirements") or {}).get("InstanceTypes")
        try:
            groups.append(
                InstanceGroupRequest(
                    instance_group_name=g["InstanceGroupName"],
                    instance_type=None if types else g.get("InstanceType"),
                    instance_types=list(types) if types else None,
                    instance_count=int(g.get("TargetCount") or g.get("CurrentCount") or 0),
                    capacity_type=capacity,
                    training_plan_arn=g.get("TrainingPlanArn"),
                )
            )
        except ValidationError as exc:
            raise ValidationFailed(
                f"hyperPodClusterName: instance group {g.get('InstanceGroupName')} of HyperPod cluster "
                f"{hyperpod.get('ClusterName')} cannot be managed: {exc.errors()[0]['msg']}",
                details=[{"field": "hyperPodClusterName", "instanceGroupName": g.get("InstanceGroupName")}],
            ) from exc
    return groups


def create_request(request: ImportClusterRequest, found: Inspection) -> CreateClusterRequest:
    """The cluster's ``request`` record: the zone, instance groups and Kubernetes version it is managed with.

    The zone is the requested one, else the zone of the cluster's first subnet.
    """
    groups = imported_instance_groups(found.hyperpod) if found.hyperpod else list(request.instance_groups or [])
    return CreateClusterRequest(
        cluster_tag=request.cluster_tag,
        availability_zone=request.availability_zone or found.zones[0],
        instance_groups=groups,
        kubernetes_version=str(found.eks.get("version")),
    )


def imported_view(request: ImportClusterRequest, found: Inspection, *, principal_arn: str) -> ImportedView:
    """The cluster record's ``imported`` view, with the list of what DELETE leaves (:class:`RetainedResource`)."""
    vpc_config = found.eks.get("resourcesVpcConfig") or {}
    subnets = [str(s) for s in vpc_config.get("subnetIds") or []]
    kept = list(found.addons)
    retained = [
        RetainedResource(resource_type="EksCluster", name=request.eks_cluster_name),
        RetainedResource(resource_type="Vpc", name=str(vpc_config.get("vpcId"))),
        *(RetainedResource(resource_type="Subnet", name=s) for s in subnets),
        RetainedResource(resource_type="SecurityGroup", name=found.security_group_id),
        *(RetainedResource(resource_type="EksAddon", name=a) for a in kept),
    ]
    if found.access_entry or found.access_entry_exists:
        retained.append(RetainedResource(resource_type="EksAccessEntry", name=principal_arn))
    if found.hyperpod:
        retained.insert(1, RetainedResource(resource_type="HyperPodCluster", name=str(found.hyperpod["ClusterName"])))
    return ImportedView(
        eks_cluster_name=request.eks_cluster_name,
        eks_cluster_arn=str(found.eks["arn"]),
        kubernetes_version=str(found.eks.get("version")),
        authentication_mode=str((found.eks.get("accessConfig") or {}).get("authenticationMode")),
        vpc_id=str(vpc_config.get("vpcId")),
        subnet_ids=subnets,
        security_group_id=found.security_group_id,
        hyper_pod_cluster_name=str(found.hyperpod["ClusterName"]) if found.hyperpod else None,
        hyper_pod_cluster_arn=str(found.hyperpod["ClusterArn"]) if found.hyperpod else None,
        addons=kept,
        access_entry=found.access_entry,
        retained=retained,
    )


def _stage(
    tag: str, generation: int, stage: StageName, now: str, resources: Any = None, *, imported: bool
) -> StageRecord:
    record = StageRecord.pending(tag, generation, stage, now)
    updates: dict[str, Any] = {}
    if resources is not None:
        updates["resources"] = resources.model_dump(mode="json", by_alias=True, exclude_none=True)
    if imported:
        updates |= {
            "status": StageStatus.SUCCEEDED,
            "imported": True,
            "started_at": now,
            "ended_at": now,
            "observed_status": "imported",
        }
    return record.model_copy(update=updates)


def plan_stages(
    request: ImportClusterRequest, found: Inspection, *, generation: int, now: str, principal_arn: str
) -> list[StageRecord]:
    """The six stage records of an imported cluster: SUCCEEDED ``imported`` where the resources exist.

    - ``network``: always imported (the VPC, subnets, security group and EKS cluster);
    - ``access``: imported when the control plane's role already has an access entry with the cluster-admin
      policy, else it runs (the entry it creates carries our tags and is deleted with the cluster);
    - ``dependencies``: imported when every add-on of the stage is present and the HyperPod cluster is imported
      (its Kubernetes prerequisites then exist too); else it runs and creates only the missing add-ons (the
      present ones are recorded under ``importedAddons`` and never deleted);
    - ``hyperpod``: imported with ``hyperPodClusterName``, else it runs (compute subnet and egress owned by us);
    - ``storage`` and ``verify`` always run.
    """
    tag = request.cluster_tag
    vpc_config = found.eks.get("resourcesVpcConfig") or {}
    network = NetworkResources(
        vpc_id=str(vpc_config.get("vpcId")),
        cidr_block=found.vpc_cidr,
        zones=found.zones,
        private_subnet_ids=[str(s) for s in vpc_config.get("subnetIds") or []],
        security_group_id=found.security_group_id,
        eks_cluster_name=request.eks_cluster_name,
        eks_cluster_arn=str(found.eks["arn"]),
    )
    present = [a.name for a in ADDONS if a.name in found.addons]
    dependencies = DependenciesResources(imported_addons=present)
    hyperpod = HyperPodResources(hyper_pod_cluster_arn=str(found.hyperpod["ClusterArn"])) if found.hyperpod else None
    return [
        _stage(tag, generation, StageName.NETWORK, now, network, imported=True),
        _stage(
            tag,
            generation,
            StageName.ACCESS,
            now,
            AccessResources(principal_arn=principal_arn, access_policy_arn=EKS_ADMIN_POLICY)
            if found.access_entry
            else None,
            imported=found.access_entry,
        ),
        _stage(
            tag,
            generation,
            StageName.DEPENDENCIES,
            now,
            dependencies,
            imported=len(present) == len(ADDONS) and found.hyperpod is not None,
        ),
        _stage(tag, generation, StageName.HYPERPOD, now, hyperpod, imported=found.hyperpod is not None),
        _stage(tag, generation, StageName.STORAGE, now, imported=False),
        _stage(tag, generation, StageName.VERIFY, now, imported=False),
    ]


def first_missing_stage(stages: list[StageRecord]) -> StageName:
    """Where the import's create workflow starts: the first stage not SUCCEEDED (``verify`` when all are)."""
    for stage in sorted(stages, key=lambda s: s.order):
        if stage.status is not StageStatus.SUCCEEDED:
            return stage.name
    return StageName.VERIFY
