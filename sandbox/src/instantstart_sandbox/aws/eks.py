"""EKS emulation on top of moto: cluster lifecycle, add-ons, access entries, pod identity.

moto 5.2.5 creates EKS clusters ACTIVE at once, drops ``accessConfig``, answers a random string as
CA data, and lacks add-ons, access entries and pod identity associations. Clusters stay in moto's
backend (so CloudFormation and other moto code see them); this module owns their lifecycle on the
simulated clock (CREATING ~600 s -> ACTIVE, DELETING ~300 s -> gone) and answers the operations moto
lacks. Once ACTIVE, a cluster's ``endpoint`` and ``certificateAuthority.data`` are the sandbox
Kubernetes API's URL and CA (base64 of the PEM, as EKS encodes it).

Add-on health follows the cluster's nodes: an add-on that runs a Deployment is ``DEGRADED``
(``InsufficientNumberOfReplicas``) while no Ready, schedulable Node can run its pods, and turns
``ACTIVE`` at the next health check (every :data:`ADDON_HEALTH_CHECK_SECONDS`) once one can; the
"EKS Addon Health Degraded/Restored" events go to EventBridge. DaemonSet-only add-ons are ACTIVE
with zero nodes.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from instantstart_sandbox.aws import backends
from instantstart_sandbox.aws import ec2 as ec2_answers
from instantstart_sandbox.aws.addons import (
    CATALOG,
    KUBERNETES_VERSIONS,
    AddonSpec,
    addon_objects,
    addon_version_info,
    all_versions,
    versions_for,
)
from instantstart_sandbox.aws.calls import IamTarget, ownership_tags, request_tags
from instantstart_sandbox.aws.faults import FaultInjector
from instantstart_sandbox.aws.kubetypes import KubeApiServerLike
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse
from instantstart_sandbox.clock import SimClock
from instantstart_sandbox.kube.controllers import node_matches, node_ready

log = logging.getLogger(__name__)

CLUSTER_CREATE_SECONDS = 600.0
CLUSTER_DELETE_SECONDS = 300.0
ADDON_UPDATE_SECONDS = 60.0
ADDON_DELETE_SECONDS = 60.0
ADDON_HEALTH_CHECK_SECONDS = 60.0
"""How often EKS re-checks an add-on's workloads (simulated seconds)."""
INSUFFICIENT_REPLICAS = "InsufficientNumberOfReplicas"
INSUFFICIENT_REPLICAS_MESSAGE = "The add-on is unhealthy because it doesn't have the desired number of replicas."
SUPPORTED_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
DEFAULT_VERSION = "1.33"
ACCESS_POLICIES = (
    "AmazonEKSAdminPolicy",
    "AmazonEKSAdminViewPolicy",
    "AmazonEKSClusterAdminPolicy",
    "AmazonEKSEditPolicy",
    "AmazonEKSViewPolicy",
    "AmazonEKSAutoNodePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSComputePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
    "AmazonSagemakerHyperpodClusterPolicy",
    "AmazonSagemakerHyperpodControllerPolicy",
    "AmazonSagemakerHyperpodSystemNamespacePolicy",
)
ACCESS_ENTRY_TYPES = ("STANDARD", "EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "EC2", "HYPERPOD_LINUX")

Emit = Callable[[str, str, dict[str, Any], list[str]], None]


@dataclass
class ClusterMeta:
    """What the sandbox knows about an EKS cluster beyond moto's model."""

    name: str
    status: str
    created_at: float
    access_config: dict[str, Any]
    upgrade_policy: dict[str, Any] = field(default_factory=lambda: {"supportType": "STANDARD"})
    generation: int = 0
    moto_cluster: Any = None  # the moto object this meta describes (a re-created name is a new object)


@dataclass
class Addon:
    """An EKS add-on."""

    cluster: str
    name: str
    version: str
    arn: str
    status: str
    created_at: float
    modified_at: float
    service_account_role_arn: str | None = None
    configuration_values: str | None = None
    resolve_conflicts: str | None = None
    pod_identity_arns: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    issues: list[dict[str, Any]] = field(default_factory=list)
    generation: int = 0


@dataclass
class AccessEntry:
    """An EKS access entry and its associated access policies."""

    cluster: str
    principal_arn: str
    arn: str
    type: str
    username: str
    kubernetes_groups: list[str]
    created_at: float
    modified_at: float
    tags: dict[str, str] = field(default_factory=dict)
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class PodIdentityAssociation:
    """An EKS pod identity association."""

    cluster: str
    namespace: str
    service_account: str
    role_arn: str
    association_id: str
    arn: str
    created_at: float
    modified_at: float
    owner_arn: str | None = None
    disable_session_tags: bool = False
    target_role_arn: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


_PARTITIONS: tuple[str, ...] = ()


def _validate_role_arn(arn: str) -> None:
    """moto's EKS role-ARN check, with the partition list loaded once instead of per call."""
    global _PARTITIONS
    from moto.eks.exceptions import InvalidParameterException

    if not _PARTITIONS:
        import boto3

        _PARTITIONS = tuple(boto3.Session().get_available_partitions())
    match = re.match(r"arn:(?P<partition>.+):iam::(?P<account_id>[0-9]{12}):role/.+", arn or "")
    if match is None or match.group("partition") not in _PARTITIONS:
        raise InvalidParameterException(message="Invalid Role Arn: '" + arn + "'")


def install_moto_patches() -> None:
    """Speed up moto's EKS CreateCluster/CreateNodegroup (its role check builds a boto3 Session per call)."""
    import moto.eks.models

    moto.eks.models.validate_role_arn = _validate_role_arn  # type: ignore[attr-defined]


def _page(items: list[Any], params: dict[str, Any], default_max: int = 100) -> tuple[list[Any], str | None]:
    start = int(params.get("nextToken") or 0)
    size = int(params.get("maxResults") or default_max)
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def _random_id(length: int) -> str:
    return uuid.uuid4().hex[:length]


def _deployments(spec: AddonSpec, version: str, region: str) -> list[dict[str, Any]]:
    """The Deployment objects add-on ``spec`` installs (empty for DaemonSet-only add-ons)."""
    if not any(w.kind == "Deployment" for w in spec.workloads):
        return []
    return [o for o in addon_objects(spec, version, region) if o["kind"] == "Deployment"]


class EksEmulator:
    """The EKS operations of the sandbox (see module docstring). Thread-safe."""

    def __init__(
        self,
        clock: SimClock,
        kube: KubeApiServerLike,
        region: str,
        account_id: str,
        emit: Emit,
        faults: FaultInjector | None = None,
    ) -> None:
        self.clock = clock
        self.faults = faults or FaultInjector(clock.now)
        self.kube = kube
        self.region = region
        self.account_id = account_id
        self.emit = emit
        self._lock = threading.RLock()
        self._health_lock = threading.Lock()  # add-on health evaluations take turns (_reevaluate_health)
        self._meta: dict[str, ClusterMeta] = {}
        self._addons: dict[tuple[str, str], Addon] = {}
        self._access: dict[tuple[str, str], AccessEntry] = {}
        self._pod_identity: dict[tuple[str, str], PodIdentityAssociation] = {}
        self._updates: dict[str, dict[str, Any]] = {}
        self._pinned_issues: dict[tuple[str, str], list[dict[str, Any]]] = {}

    # -- routing table --------------------------------------------------------------------------
    def handlers(self) -> dict[str, Callable[[AwsRequest, Callable[[], RawResponse]], Any]]:
        """Operation name -> handler."""
        return {
            "CreateCluster": self.create_cluster,
            "DescribeCluster": lambda req, fwd: {"cluster": self.describe_cluster(req.params["name"])},
            "DeleteCluster": self.delete_cluster,
            "CreateAddon": self.create_addon,
            "DescribeAddon": self.describe_addon,
            "ListAddons": self.list_addons,
            "UpdateAddon": self.update_addon,
            "DeleteAddon": self.delete_addon,
            "DescribeAddonVersions": self.describe_addon_versions,
            "DescribeAddonConfiguration": self.describe_addon_configuration,
            "DescribeUpdate": self.describe_update,
            "CreateAccessEntry": self.create_access_entry,
            "DescribeAccessEntry": self.describe_access_entry,
            "ListAccessEntries": self.list_access_entries,
            "UpdateAccessEntry": self.update_access_entry,
            "DeleteAccessEntry": self.delete_access_entry,
            "AssociateAccessPolicy": self.associate_access_policy,
            "DisassociateAccessPolicy": self.disassociate_access_policy,
            "ListAssociatedAccessPolicies": self.list_associated_access_policies,
            "ListAccessPolicies": self.list_access_policies,
            "CreatePodIdentityAssociation": self.create_pod_identity_association,
            "DescribePodIdentityAssociation": self.describe_pod_identity_association,
            "ListPodIdentityAssociations": self.list_pod_identity_associations,
            "UpdatePodIdentityAssociation": self.update_pod_identity_association,
            "DeletePodIdentityAssociation": self.delete_pod_identity_association,
            "TagResource": self.tag_resource,
            "UntagResource": self.untag_resource,
            "ListTagsForResource": self.list_tags_for_resource,
        }

    # -- clusters ---------------------------------------------------------------------------------
    def _arn(self, kind: str, rest: str) -> str:
        return f"arn:aws:eks:{self.region}:{self.account_id}:{kind}/{rest}"

    def _moto_cluster(self, name: str) -> Any:
        cluster = backends.eks(self.account_id, self.region).clusters.get(name)
        if cluster is None:
            raise AwsError("ResourceNotFoundException", f"No cluster found for name: {name}.", 404, clusterName=name)
        return cluster

    def _cluster_meta(self, name: str) -> ClusterMeta:
        """Meta of ``name``; clusters created in moto directly (e.g. by CloudFormation) are adopted."""
        cluster = self._moto_cluster(name)
        with self._lock:
            meta = self._meta.get(name)
            if meta is not None and meta.moto_cluster is not None and meta.moto_cluster is not cluster:
                meta = None  # the name was deleted and created again behind our back (e.g. CloudFormation)
            if meta is None:
                access = getattr(cluster, "access_config", None) or {
                    "authenticationMode": "API_AND_CONFIG_MAP",
                    "bootstrapClusterCreatorAdminPermissions": True,
                }
                meta = ClusterMeta(name, cluster.status, self.clock.now(), dict(access), moto_cluster=cluster)
                self._meta[name] = meta
            if meta.status == "ACTIVE" and not getattr(cluster, "_sandbox_endpoint", None):
                self._attach_kube(cluster)
            return meta

    def _attach_kube(self, cluster: Any) -> None:
        endpoint = self.kube.add_cluster(cluster.name)
        cluster.endpoint = endpoint
        cluster._sandbox_endpoint = endpoint
        cluster.certificate_authority = {"data": base64.b64encode(self.kube.ca_pem.encode()).decode()}

    def cluster_status(self, name: str) -> str | None:
        """The status of EKS cluster ``name``, or None when it does not exist."""
        try:
            return self._cluster_meta(name).status
        except AwsError:
            return None

    def make_active(self, name: str) -> None:
        """Test hook: finish the creation of CREATING cluster ``name`` now (ACTIVE, Kubernetes API attached)."""
        meta = self._cluster_meta(name)
        self._cluster_active(name, meta.generation)

    def finish_addon(self, cluster: str, addon: str) -> None:
        """Test hook: finish the creation/update of add-on ``addon`` now (objects installed; ACTIVE, or
        DEGRADED with its health issues)."""
        with self._lock:
            found = self._addons.get((cluster, addon))
            if found is None:
                return
            generation, phase = found.generation, "Creation" if found.status == "CREATING" else "Update"
        self._addon_ready(cluster, addon, generation, phase)

    def degrade_addon(self, cluster: str, addon: str, code: str, message: str) -> None:
        """Test hook: add-on ``addon`` of ``cluster`` reports ``DEGRADED`` with this health issue from now on, whatever
        its workloads do, until :meth:`restore_addon` (e.g. ``ConfigurationConflict`` after a conflicting field
        manager, ``AccessDenied`` when its role lost a permission, or ``InsufficientNumberOfReplicas`` when its pods
        cannot be scheduled on the nodes that exist). An installed add-on changes at once ("EKS Addon Health
        Degraded" event); one still CREATING reports it when it is created."""
        issue = {"code": code, "message": message, "resourceIds": []}
        with self._lock:
            self._pinned_issues[(cluster, addon)] = [issue]
        self._recheck_now(cluster, addon)

    def restore_addon(self, cluster: str, addon: str) -> None:
        """Test hook: undo :meth:`degrade_addon`; the add-on's health follows its workloads again at once."""
        with self._lock:
            self._pinned_issues.pop((cluster, addon), None)
        self._recheck_now(cluster, addon)

    def _recheck_now(self, cluster: str, addon: str) -> None:
        self._reevaluate_health(cluster, addon, None, on_issue_change=True)

    def _reevaluate_health(self, cluster: str, name: str, generation: int | None, *, on_issue_change: bool) -> bool:
        """Re-check the health of add-on ``name`` if it is ACTIVE/DEGRADED (and of ``generation``, when given); emit
        Health Degraded/Restored when its status changed (or, with ``on_issue_change``, its issues). False when the
        add-on is gone, of another generation or not ACTIVE/DEGRADED. Evaluations take turns (``_health_lock``): one
        that read the workloads before a change cannot write its older verdict, or emit its event, after the newer
        one."""
        with self._health_lock:
            with self._lock:
                addon = self._addons.get((cluster, name))
                if addon is None or addon.status not in ("ACTIVE", "DEGRADED"):
                    return False
                if generation is None:
                    generation = addon.generation
                elif addon.generation != generation:
                    return False
                version = addon.version
            issues = self._health_issues(cluster, CATALOG[name], version)
            with self._lock:
                if addon.generation != generation or addon.status not in ("ACTIVE", "DEGRADED"):
                    return False
                status = "DEGRADED" if issues else "ACTIVE"
                changed = status != addon.status or (on_issue_change and issues != addon.issues)
                addon.status, addon.issues = status, issues
                if changed:
                    addon.modified_at = self.clock.now()
            if changed:
                self._emit_addon(addon, "EKS Addon Health Degraded" if issues else "EKS Addon Health Restored")
        return True

    def addon_status(self, cluster: str, addon: str) -> str | None:
        """The status of add-on ``addon`` on EKS cluster ``cluster``, or None when it is not installed."""
        with self._lock:
            found = self._addons.get((cluster, addon))
            return found.status if found is not None else None

    def authentication_mode(self, name: str) -> str | None:
        """The ``accessConfig.authenticationMode`` of cluster ``name``, or None when it does not exist."""
        try:
            return str(self._cluster_meta(name).access_config.get("authenticationMode"))
        except AwsError:
            return None

    def create_cluster(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreateCluster: validate, let moto create it, then hold it CREATING for ~600 s."""
        params = req.params
        name = params["name"]
        version = params.get("version") or DEFAULT_VERSION
        if version not in SUPPORTED_VERSIONS:
            raise AwsError("InvalidParameterException", f"unsupported Kubernetes version {version}", 400)
        vpc = params.get("resourcesVpcConfig") or {}
        subnet_ids = vpc.get("subnetIds") or []
        zones = set()
        vpc_ids = set()
        for subnet_id in subnet_ids:
            subnet = backends.subnet(self.account_id, self.region, subnet_id)
            if subnet is None:
                raise AwsError("InvalidParameterException", f"The subnet ID '{subnet_id}' does not exist", 400)
            zones.add(subnet.availability_zone)
            vpc_ids.add(subnet.vpc_id)
        if subnet_ids and len(zones) < 2:
            raise AwsError(
                "InvalidParameterException",
                "Subnets specified must be in at least two different AZs",
                400,
                clusterName=name,
            )
        for group_id in vpc.get("securityGroupIds") or []:
            if not backends.security_group_exists(self.account_id, self.region, group_id):
                raise AwsError("InvalidParameterException", f"The security group '{group_id}' does not exist", 400)
        role_arn = str(params.get("roleArn") or "")
        if self.faults.role_propagating(role_arn):
            raise AwsError(
                "InvalidParameterException",
                f"Role with arn: {role_arn}, could not be assumed because it does not exist or the trusted entity "
                "is not correct",
                400,
            )
        refused = self.faults.take_refused_zone(sorted(zones))
        if refused is not None:
            valid = [z for z in self._region_zones() if z != refused]
            raise AwsError(
                "UnsupportedAvailabilityZoneException",
                f"Cannot create cluster '{name}' because {refused}, the targeted availability zone, does not "
                "currently have sufficient capacity to support the cluster. Retry and choose from these "
                f"availability zones: {', '.join(valid)}",
                400,
                clusterName=name,
                validZones=valid,
            )
        access = dict(params.get("accessConfig") or {})
        access.setdefault("authenticationMode", "CONFIG_MAP")
        access.setdefault("bootstrapClusterCreatorAdminPermissions", True)
        # hold the lock until the cluster is CREATING, so no concurrent DescribeCluster adopts it ACTIVE
        with self._lock:
            response = forward()
            if response.status >= 300:
                return response
            cluster = self._moto_cluster(name)
            cluster.version = version
            cluster.platformVersion = "eks.12"
            cluster.status = "CREATING"
            cluster.endpoint = None
            cluster.certificate_authority = {}
            cluster.access_config = access
            vpc_id = next(iter(vpc_ids), None)
            cluster.resources_vpc_config = {
                "subnetIds": list(subnet_ids),
                "securityGroupIds": list(vpc.get("securityGroupIds") or []),
                "vpcId": vpc_id,
                "endpointPublicAccess": vpc.get("endpointPublicAccess", True),
                "endpointPrivateAccess": vpc.get("endpointPrivateAccess", False),
                "publicAccessCidrs": vpc.get("publicAccessCidrs") or ["0.0.0.0/0"],
            }
            if vpc_id:
                try:
                    group = backends.ec2(self.account_id, self.region).create_security_group(
                        name=f"eks-cluster-sg-{name}-{_random_id(10)}",
                        description="EKS created security group applied to ENI that is attached to EKS Control "
                        "Plane master nodes, as well as any managed workloads.",
                        vpc_id=vpc_id,
                        tags={"aws:eks:cluster-name": name, f"kubernetes.io/cluster/{name}": "owned"},
                    )
                    cluster.resources_vpc_config["clusterSecurityGroupId"] = group.id
                except Exception:
                    log.exception("creating the cluster security group of %s failed", name)
            now = self.clock.now()
            meta = ClusterMeta(name, "CREATING", now, access, moto_cluster=cluster)
            self._meta[name] = meta
            generation = meta.generation
            if access["bootstrapClusterCreatorAdminPermissions"] and access["authenticationMode"] != "CONFIG_MAP":
                self._bootstrap_creator_entry(name, req, now)
        self.clock.call_at(now + CLUSTER_CREATE_SECONDS, lambda: self._cluster_active(name, generation))
        return {"cluster": self.describe_cluster(name)}

    def _region_zones(self) -> list[str]:
        try:
            return sorted(z.name for z in backends.ec2(self.account_id, self.region).describe_availability_zones())
        except Exception:  # noqa: BLE001 - moto knows every Region's zones; be safe anyway
            return []

    def _bootstrap_creator_entry(self, cluster: str, req: AwsRequest, now: float) -> None:
        """``bootstrapClusterCreatorAdminPermissions``: EKS gives the IAM principal that called CreateCluster an
        access entry with AmazonEKSClusterAdminPolicy at once. Like in AWS, the entry carries no tags (the request's
        ``tags`` are the cluster's). The sandbox knows the principal only for a deployed function's call (its
        execution role); other callers get no entry. Caller holds the lock."""
        function = req.environ.get("HTTP_X_SANDBOX_FUNCTION")
        principal = backends.function_role(self.account_id, self.region, str(function)) if function else None
        if not principal or ":role/" not in principal:
            return
        short = principal.rsplit("/", 1)[-1]
        policy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
        self._access[(cluster, principal)] = AccessEntry(
            cluster=cluster,
            principal_arn=principal,
            arn=self._arn("access-entry", f"{cluster}/role/{self.account_id}/{short}/{uuid.uuid4()}"),
            type="STANDARD",
            username=f"arn:aws:sts::{self.account_id}:assumed-role/{short}/{{{{SessionName}}}}",
            kubernetes_groups=[],
            created_at=now,
            modified_at=now,
            policies={
                policy: {
                    "policyArn": policy,
                    "accessScope": {"type": "cluster", "namespaces": []},
                    "associatedAt": now,
                    "modifiedAt": now,
                }
            },
        )

    def _cluster_active(self, name: str, generation: int) -> None:
        with self._lock:
            meta = self._meta.get(name)
            if meta is None or meta.generation != generation or meta.status != "CREATING":
                return
            cluster = backends.eks(self.account_id, self.region).clusters.get(name)
            if cluster is None:
                return
            self._attach_kube(cluster)
            meta.status = cluster.status = "ACTIVE"

    def describe_cluster(self, name: str) -> dict[str, Any]:
        """DescribeCluster's ``cluster``: moto's model with the sandbox's status, access and endpoint."""
        meta = self._cluster_meta(name)
        cluster = self._moto_cluster(name)
        out: dict[str, Any] = {
            "name": cluster.name,
            "arn": cluster.arn,
            "createdAt": meta.created_at,
            "version": cluster.version,
            "roleArn": cluster.role_arn,
            "resourcesVpcConfig": dict(cluster.resources_vpc_config or {}),
            "kubernetesNetworkConfig": {
                "serviceIpv4Cidr": "172.20.0.0/16",
                "ipFamily": "ipv4",
                "elasticLoadBalancing": {"enabled": False},
                **(cluster.kubernetes_network_config or {}),
            },
            "logging": cluster.logging,
            "identity": cluster.identity,
            "status": meta.status,
            "certificateAuthority": {},
            "platformVersion": cluster.platformVersion,
            "tags": dict(cluster.tags or {}),
            "accessConfig": dict(meta.access_config),
            "upgradePolicy": dict(meta.upgrade_policy),
            "health": {"issues": []},
        }
        if cluster.client_request_token:
            out["clientRequestToken"] = cluster.client_request_token
        if cluster.encryption_config:
            out["encryptionConfig"] = cluster.encryption_config
        if meta.status in ("ACTIVE", "UPDATING", "DELETING") and getattr(cluster, "_sandbox_endpoint", None):
            out["endpoint"] = cluster.endpoint
            out["certificateAuthority"] = dict(cluster.certificate_authority)
        return out

    def delete_cluster(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DeleteCluster: DELETING for ~300 s, then the cluster, its add-ons and Kubernetes API go."""
        name = req.params["name"]
        meta = self._cluster_meta(name)
        cluster = self._moto_cluster(name)
        if cluster.nodegroups:
            raise AwsError(
                "ResourceInUseException",
                "Cluster has nodegroups attached",
                409,
                clusterName=name,
                nodegroupName=",".join(cluster.nodegroups),
            )
        with self._lock:
            if meta.status != "DELETING":
                meta.status = cluster.status = "DELETING"
                meta.generation += 1
                generation = meta.generation
                now = self.clock.now()
                for addon in self._cluster_addons(name):
                    self._start_addon_delete(addon, preserve=False)
                self.clock.call_at(now + CLUSTER_DELETE_SECONDS, lambda: self._cluster_gone(name, generation))
            out = self.describe_cluster(name)
        return {"cluster": out}

    def _cluster_gone(self, name: str, generation: int) -> None:
        with self._lock:
            meta = self._meta.get(name)
            if meta is None or meta.generation != generation:
                return
            del self._meta[name]
            cluster = backends.eks(self.account_id, self.region).clusters.pop(name, None)
            for key in [k for k in self._addons if k[0] == name]:
                del self._addons[key]
            for key in [k for k in self._access if k[0] == name]:
                del self._access[key]
            for key in [k for k in self._pod_identity if k[0] == name]:
                del self._pod_identity[key]
        try:
            self.kube.remove_cluster(name)
        except Exception:
            log.debug("remove_cluster(%s) failed", name, exc_info=True)
        vpc = dict(getattr(cluster, "resources_vpc_config", None) or {})
        if cluster is not None and self.faults.eni_linger_seconds > 0:
            groups = list(vpc.get("securityGroupIds") or [])
            if vpc.get("clusterSecurityGroupId"):
                groups.append(vpc["clusterSecurityGroupId"])
            ec2_answers.linger_network_interfaces(
                self.account_id,
                self.region,
                list(vpc.get("subnetIds") or []),
                groups,
                f"Amazon EKS {name}",
                self.faults.eni_linger_seconds,
                self.clock.call_later,
            )

    def _require_active(self, name: str) -> ClusterMeta:
        meta = self._cluster_meta(name)
        if meta.status != "ACTIVE":
            raise AwsError(
                "InvalidRequestException",
                f"Cluster {name} is in {meta.status} state; the operation requires an ACTIVE cluster.",
                400,
                clusterName=name,
            )
        return meta

    # -- add-ons ----------------------------------------------------------------------------------
    def _cluster_addons(self, cluster: str) -> list[Addon]:
        with self._lock:
            return [a for (c, _), a in sorted(self._addons.items()) if c == cluster]

    def _addon(self, cluster: str, name: str) -> Addon:
        self._cluster_meta(cluster)
        with self._lock:
            addon = self._addons.get((cluster, name))
        if addon is None:
            raise AwsError(
                "ResourceNotFoundException",
                f"No addon: {name} found in cluster: {cluster}",
                404,
                clusterName=cluster,
                addonName=name,
            )
        return addon

    def _addon_dict(self, addon: Addon) -> dict[str, Any]:
        spec = CATALOG[addon.name]
        out: dict[str, Any] = {
            "addonName": addon.name,
            "clusterName": addon.cluster,
            "status": addon.status,
            "addonVersion": addon.version,
            "health": {"issues": list(addon.issues)},
            "addonArn": addon.arn,
            "createdAt": addon.created_at,
            "modifiedAt": addon.modified_at,
            "tags": dict(addon.tags),
            "publisher": spec.publisher,
            "owner": spec.owner,
        }
        if addon.service_account_role_arn:
            out["serviceAccountRoleArn"] = addon.service_account_role_arn
        if addon.configuration_values:
            out["configurationValues"] = addon.configuration_values
        if addon.pod_identity_arns:
            out["podIdentityAssociations"] = list(addon.pod_identity_arns)
        return out

    def _check_version(self, spec: AddonSpec, version: str, kubernetes_version: str, cluster: str) -> None:
        """InvalidParameterException for an unknown add-on version or one not compatible with the cluster's
        Kubernetes version (the message is modelled: AWS names the version it refuses)."""
        if version in versions_for(spec, kubernetes_version):
            return
        detail = "" if version not in all_versions(spec) else f" for Kubernetes version {kubernetes_version}"
        raise AwsError(
            "InvalidParameterException",
            f"Addon version specified is not supported{detail}: {version}",
            400,
            clusterName=cluster,
            addonName=spec.name,
        )

    def _validate_addon_settings(self, spec: AddonSpec, params: dict[str, Any], version: str) -> None:
        role = params.get("serviceAccountRoleArn")
        if role and not backends.principal_exists(self.account_id, role):
            raise AwsError("InvalidParameterException", f"Role {role} is not valid or does not exist", 400)
        values = params.get("configurationValues")
        if values:
            try:
                loaded = yaml.safe_load(values)
            except yaml.YAMLError as exc:
                raise AwsError(
                    "InvalidParameterException",
                    f"ConfigurationValue provided in request is not supported: {exc}",
                ) from exc
            if not isinstance(loaded, dict):
                raise AwsError(
                    "InvalidParameterException",
                    "ConfigurationValue provided in request is not supported: must be a JSON or YAML object",
                )
        for assoc in params.get("podIdentityAssociations") or []:
            if not spec.pod_identity_service_accounts:
                raise AwsError(
                    "InvalidParameterException",
                    f"Addon {spec.name} does not support Pod Identity associations",
                )
            if not spec.supports_inline_pod_identity(version):
                raise AwsError(
                    "InvalidParameterException",
                    f"Addon {spec.name} version {version} does not support Pod Identity associations; "
                    "use CreatePodIdentityAssociation",
                )
            if assoc.get("serviceAccount") not in spec.pod_identity_service_accounts:
                raise AwsError(
                    "InvalidParameterException",
                    f"Service account {assoc.get('serviceAccount')} is not supported by addon {spec.name}; "
                    f"supported: {', '.join(spec.pod_identity_service_accounts)}",
                )
            if not backends.principal_exists(self.account_id, assoc.get("roleArn", "")):
                raise AwsError("InvalidParameterException", f"Role {assoc.get('roleArn')} does not exist", 400)

    def _create_addon_associations(self, cluster: str, spec: AddonSpec, addon_arn: str, assocs: list[Any]) -> list[str]:
        arns = []
        for assoc in assocs:
            created = self._new_pod_identity(
                cluster, spec.namespace, assoc["serviceAccount"], assoc["roleArn"], owner_arn=addon_arn
            )
            arns.append(created.arn)
        return arns

    def create_addon(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreateAddon: CREATING for the catalog's 60-180 s, then ACTIVE with its objects installed."""
        params = req.params
        cluster_name = params["clusterName"]
        name = params["addonName"]
        meta = self._require_active(cluster_name)
        spec = CATALOG.get(name)
        if spec is None:
            raise AwsError(
                "InvalidParameterException",
                f"Addon {name} specified is not supported",
                400,
                clusterName=cluster_name,
                addonName=name,
            )
        cluster = self._moto_cluster(cluster_name)
        versions = versions_for(spec, cluster.version)
        version = params.get("addonVersion") or (versions[0] if versions else "")
        self._check_version(spec, version, cluster.version, cluster_name)
        self._validate_addon_settings(spec, params, version)
        with self._lock:
            if (cluster_name, name) in self._addons:
                raise AwsError(
                    "ResourceInUseException",
                    "Addon already exists.",
                    409,
                    clusterName=cluster_name,
                    addonName=name,
                )
            now = self.clock.now()
            arn = self._arn("addon", f"{cluster_name}/{name}/{uuid.uuid4()}")
            # validate inline pod identity conflicts before creating anything
            for assoc in params.get("podIdentityAssociations") or []:
                self._check_pod_identity_free(cluster_name, spec.namespace, assoc["serviceAccount"])
            addon = Addon(
                cluster=cluster_name,
                name=name,
                version=version,
                arn=arn,
                status="CREATING",
                created_at=now,
                modified_at=now,
                service_account_role_arn=params.get("serviceAccountRoleArn"),
                configuration_values=params.get("configurationValues"),
                resolve_conflicts=params.get("resolveConflicts"),
                tags=dict(params.get("tags") or {}),
            )
            addon.pod_identity_arns = self._create_addon_associations(
                cluster_name, spec, arn, params.get("podIdentityAssociations") or []
            )
            self._addons[(cluster_name, name)] = addon
            generation = addon.generation
        del meta
        self.clock.call_at(
            now + spec.create_seconds, lambda: self._addon_ready(cluster_name, name, generation, "Creation")
        )
        return {"addon": self._addon_dict(addon)}

    def _addon_ready(self, cluster: str, name: str, generation: int, phase: str) -> None:
        """Timer: an add-on finishes creating/updating; install its objects and emit the event.

        The add-on stays CREATING/UPDATING while its objects are installed and its health is evaluated, then turns
        ACTIVE or DEGRADED at once: a ``DescribeAddon`` in between never sees an ACTIVE that the evaluation is about
        to take back (a Deployment add-on before any node exists)."""
        with self._lock:
            addon = self._addons.get((cluster, name))
            if addon is None or addon.generation != generation or addon.status not in ("CREATING", "UPDATING"):
                return
            spec = CATALOG[name]
            version = addon.version
        self._install(cluster, spec, version)
        issues = self._health_issues(cluster, spec, version)
        with self._lock:
            if addon.generation != generation or addon.status not in ("CREATING", "UPDATING"):
                return  # deleted or updated again while it was installed
            addon.status = status = "DEGRADED" if issues else "ACTIVE"
            addon.issues = issues
            addon.modified_at = self.clock.now()
        if _deployments(spec, version, self.region) or spec.requires:
            self._schedule_health_check(cluster, name, generation)
        if status == "DEGRADED":
            # the add-on is installed but its Deployments have no node: EKS reports it as a health change
            self._emit_addon(addon, "EKS Addon Health Degraded")
            return
        outcome = "Succeeded" if status == "ACTIVE" else "Failed"
        self._emit_addon(addon, f"EKS Addon {phase} {outcome}")

    def _emit_addon(self, addon: Addon, detail_type: str) -> None:
        """Emit an "EKS Addon ..." event (source ``aws.eks``) with the add-on's status and health issues."""
        with self._lock:
            detail = {
                "clusterName": addon.cluster,
                "addonName": addon.name,
                "addonVersion": addon.version,
                "status": addon.status,
                "health": {"issues": [dict(i) for i in addon.issues]},
            }
            arn = addon.arn
        self.emit("aws.eks", detail_type, detail, [arn])

    def _missing_dependencies(self, cluster: str, spec: AddonSpec) -> list[str]:
        """The add-ons ``spec`` requires that are not ACTIVE on ``cluster`` (harsher: DEGRADED does not count)."""
        with self._lock:
            return [
                dep
                for dep in spec.requires
                if (other := self._addons.get((cluster, dep))) is None or other.status != "ACTIVE"
            ]

    def _health_issues(self, cluster: str, spec: AddonSpec, version: str) -> list[dict[str, Any]]:
        """The add-on's health issues: missing dependencies, then missing nodes.

        A dependency (``AddonSpec.requires``: cert-manager and the pod identity agent for the training
        and inference operators) that is not installed and healthy is an issue (``AdmissionRequestDenied``
        when cert-manager is missing: the operator's webhook certificate cannot be issued;
        ``ConfigurationConflict`` otherwise). AWS documents these add-ons as prerequisites but not
        what EKS reports without them; the sandbox takes the harsher reading: the add-on is
        ``DEGRADED`` (objects installed, not working) until every dependency is there, and again when
        one is removed later. ``InsufficientNumberOfReplicas`` when some Deployment of the add-on has
        no Node to run on: a Node can run a Deployment's pods when it is Ready, not cordoned, and its
        labels and taints admit the pod template (nodeSelector, required node affinity, tolerations).
        """
        with self._lock:
            issues: list[dict[str, Any]] = [dict(i) for i in self._pinned_issues.get((cluster, spec.name), [])]
        missing = self._missing_dependencies(cluster, spec)
        if missing:
            issues.append(
                {
                    "code": "AdmissionRequestDenied" if "cert-manager" in missing else "ConfigurationConflict",
                    "message": f"Addon {spec.name} requires the following addons to be installed and ACTIVE: "
                    f"{', '.join(missing)}",
                    "resourceIds": [],
                }
            )
        deployments = _deployments(spec, version, self.region)
        if not deployments or any(i["code"] == INSUFFICIENT_REPLICAS for i in issues):
            return issues
        try:
            nodes = list(self.kube.cluster(cluster).list("v1", "Node") or [])
        except Exception:  # noqa: BLE001 - no Kubernetes side (yet): no nodes
            nodes = []
        starved = [
            d
            for d in deployments
            if not any(node_ready(n) and node_matches(d["spec"]["template"]["spec"], n) is None for n in nodes)
        ]
        if starved:
            issues.append({"code": INSUFFICIENT_REPLICAS, "message": INSUFFICIENT_REPLICAS_MESSAGE, "resourceIds": []})
        return issues

    def _schedule_health_check(self, cluster: str, name: str, generation: int) -> None:
        self.clock.call_later(ADDON_HEALTH_CHECK_SECONDS, lambda: self._health_check(cluster, name, generation))

    def _health_check(self, cluster: str, name: str, generation: int) -> None:
        """Timer: re-check an ACTIVE/DEGRADED add-on's workloads; emit Health Degraded/Restored on a change; again
        after :data:`ADDON_HEALTH_CHECK_SECONDS` while the add-on of that generation stays ACTIVE/DEGRADED."""
        if self._reevaluate_health(cluster, name, generation, on_issue_change=False):
            self._schedule_health_check(cluster, name, generation)

    def _install(self, cluster: str, spec: AddonSpec, version: str) -> None:
        try:
            kube_cluster = self.kube.cluster(cluster)
        except Exception:  # noqa: BLE001 - the Kubernetes side of the cluster may be gone
            log.warning("no Kubernetes API for cluster %s; add-on %s not installed", cluster, spec.name)
            return
        for obj in addon_objects(spec, version, self.region):
            try:
                kube_cluster.apply(obj, field_manager="eks")
            except Exception:
                log.exception("installing %s %s of add-on %s failed", obj["kind"], obj["metadata"]["name"], spec.name)

    def _uninstall(self, cluster: str, spec: AddonSpec, version: str) -> None:
        try:
            kube_cluster = self.kube.cluster(cluster)
        except Exception:  # noqa: BLE001 - nothing to remove
            return
        for obj in reversed(addon_objects(spec, version, self.region)):
            if obj["kind"] == "Namespace" and not spec.owns_namespace:
                continue
            meta = obj["metadata"]
            try:
                kube_cluster.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            except Exception:
                log.debug("deleting %s %s failed", obj["kind"], meta["name"], exc_info=True)

    def describe_addon(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeAddon."""
        return {"addon": self._addon_dict(self._addon(req.params["clusterName"], req.params["addonName"]))}

    def list_addons(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListAddons."""
        cluster = req.params["clusterName"]
        self._cluster_meta(cluster)
        names = [a.name for a in self._cluster_addons(cluster)]
        page, token = _page(names, req.params)
        return {"addons": page, **({"nextToken": token} if token else {})}

    def update_addon(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """UpdateAddon: UPDATING for ~60 s, then ACTIVE with the new version's objects applied."""
        params = req.params
        cluster_name, name = params["clusterName"], params["addonName"]
        addon = self._addon(cluster_name, name)
        spec = CATALOG[name]
        cluster = self._moto_cluster(cluster_name)
        version = params.get("addonVersion") or addon.version
        self._check_version(spec, version, cluster.version, cluster_name)
        self._validate_addon_settings(spec, params, version)
        with self._lock:
            if addon.status not in ("ACTIVE", "DEGRADED", "CREATE_FAILED", "UPDATE_FAILED"):
                raise AwsError(
                    "ResourceInUseException",
                    f"Addon {name} is in {addon.status} state and cannot be updated",
                    409,
                    clusterName=cluster_name,
                    addonName=name,
                )
            update_params = [{"type": "AddonVersion", "value": version}]
            if "serviceAccountRoleArn" in params:
                addon.service_account_role_arn = params["serviceAccountRoleArn"] or None
                update_params.append({"type": "ServiceAccountRoleArn", "value": params["serviceAccountRoleArn"]})
            if "configurationValues" in params:
                addon.configuration_values = params["configurationValues"] or None
                update_params.append({"type": "ConfigurationValues", "value": params["configurationValues"]})
            if "resolveConflicts" in params:
                addon.resolve_conflicts = params["resolveConflicts"]
                update_params.append({"type": "ResolveConflicts", "value": params["resolveConflicts"]})
            if "podIdentityAssociations" in params:
                for arn in addon.pod_identity_arns:
                    self._drop_pod_identity_by_arn(arn)
                addon.pod_identity_arns = self._create_addon_associations(
                    cluster_name, spec, addon.arn, params["podIdentityAssociations"] or []
                )
                update_params.append({"type": "PodIdentityAssociations", "value": ",".join(addon.pod_identity_arns)})
            addon.version = version
            addon.status = "UPDATING"
            addon.generation += 1
            generation = addon.generation
            now = self.clock.now()
            addon.modified_at = now
            update_id = str(uuid.uuid4())
            update = {
                "id": update_id,
                "status": "InProgress",
                "type": "AddonUpdate",
                "params": update_params,
                "createdAt": now,
                "errors": [],
                "_done_at": now + ADDON_UPDATE_SECONDS,
                "_cluster": cluster_name,
                "_addon": name,
            }
            self._updates[update_id] = update
        self.clock.call_at(
            now + ADDON_UPDATE_SECONDS, lambda: self._addon_ready(cluster_name, name, generation, "Update")
        )
        return {"update": self._update_dict(update)}

    def _update_dict(self, update: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in update.items() if not k.startswith("_")}
        if self.clock.now() >= update["_done_at"]:
            with self._lock:
                addon = self._addons.get((update["_cluster"], update["_addon"]))
            out["status"] = "Failed" if addon is not None and addon.status == "UPDATE_FAILED" else "Successful"
        return out

    def describe_update(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeUpdate (add-on updates only; other updates go to moto)."""
        update = self._updates.get(req.params.get("updateId", ""))
        if update is None or update["_cluster"] != req.params.get("name"):
            raise AwsError("ResourceNotFoundException", f"No update found for ID: {req.params.get('updateId')}", 404)
        return {"update": self._update_dict(update)}

    def _start_addon_delete(self, addon: Addon, preserve: bool) -> None:
        with self._lock:
            addon.status = "DELETING"
            addon.generation += 1
            generation = addon.generation
        self.clock.call_later(
            ADDON_DELETE_SECONDS, lambda: self._addon_gone(addon.cluster, addon.name, generation, preserve)
        )

    def _addon_gone(self, cluster: str, name: str, generation: int, preserve: bool) -> None:
        with self._lock:
            addon = self._addons.get((cluster, name))
            if addon is None or addon.generation != generation:
                return
            del self._addons[(cluster, name)]
            for arn in addon.pod_identity_arns:
                self._drop_pod_identity_by_arn(arn)
        if not preserve:
            self._uninstall(cluster, CATALOG[name], addon.version)
        addon.status = "DELETED"
        addon.issues = []
        self._emit_addon(addon, "EKS Addon Deletion Succeeded")

    def delete_addon(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DeleteAddon: DELETING for ~60 s, then gone (its objects removed unless ``preserve``)."""
        addon = self._addon(req.params["clusterName"], req.params["addonName"])
        if addon.status != "DELETING":
            self._start_addon_delete(addon, bool(req.params.get("preserve")))
        return {"addon": self._addon_dict(addon)}

    def describe_addon_versions(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeAddonVersions from the catalog, filtered as the real API filters."""
        params = req.params
        k8s = params.get("kubernetesVersion")
        k8s_versions = (k8s,) if k8s else KUBERNETES_VERSIONS
        out = []
        for spec in CATALOG.values():
            if params.get("addonName") and spec.name != params["addonName"]:
                continue
            if params.get("types") and spec.type not in params["types"]:
                continue
            if params.get("publishers") and spec.publisher not in params["publishers"]:
                continue
            if params.get("owners") and spec.owner not in params["owners"]:
                continue
            if k8s and k8s not in KUBERNETES_VERSIONS + SUPPORTED_VERSIONS:
                continue
            out.append(
                {
                    "addonName": spec.name,
                    "type": spec.type,
                    "addonVersions": addon_version_info(spec, k8s_versions),
                    "publisher": spec.publisher,
                    "owner": spec.owner,
                    "defaultNamespace": spec.namespace,
                }
            )
        page, token = _page(out, params)
        return {"addons": page, **({"nextToken": token} if token else {})}

    def describe_addon_configuration(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeAddonConfiguration: the configuration schema and, for versions that support EKS Pod
        Identity, ``podIdentityConfiguration`` (one entry per service account the add-on uses)."""
        name, version = req.params["addonName"], req.params["addonVersion"]
        spec = CATALOG.get(name)
        if spec is None or version not in all_versions(spec):
            raise AwsError(
                "ResourceNotFoundException", f"Addon {name} version {version} not found", 404, addonName=name
            )
        out: dict[str, Any] = {
            "addonName": name,
            "addonVersion": version,
            "configurationSchema": '{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}',
        }
        if spec.supports_inline_pod_identity(version):
            out["podIdentityConfiguration"] = [
                {"serviceAccount": sa, "recommendedManagedPolicies": []} for sa in spec.pod_identity_service_accounts
            ]
        return out

    # -- access entries ---------------------------------------------------------------------------
    def kubernetes_access(self, cluster: str, method: str, path: str) -> tuple[int, str] | None:
        """The Kubernetes API's answer while an access entry of ``cluster`` propagates, or None.

        For :attr:`FaultInjector.kube_access_seconds` after a STANDARD access entry is created the
        cluster's API answers 401 for the first half, then 403 (as do requests within that window
        of a policy association). Used by the sandbox Kubernetes API server before each
        authenticated request (``(status, message)``).
        """
        window = self.faults.kube_access_seconds
        if window <= 0:
            return None
        now = self.clock.now()
        with self._lock:
            entries = [e for (c, _), e in self._access.items() if c == cluster and e.type == "STANDARD"]
            associated = {e.principal_arn: [p["associatedAt"] for p in e.policies.values()] for e in entries}
        answer: tuple[int, str] | None = None
        for entry in entries:
            age = now - entry.created_at
            if age < window / 2:
                return 401, "Unauthorized"
            recent_policy = any(now - at < window for at in associated.get(entry.principal_arn, []))
            if age < window or recent_policy:
                verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
                answer = 403, f'forbidden: User "{entry.principal_arn}" cannot {verb.get(method, "get")} path "{path}"'
        return answer

    def kubernetes_groups(self, cluster: str) -> set[str]:
        """The ``kubernetesGroups`` of every access entry of ``cluster`` (the sandbox's Kubernetes API server binds
        them to RBAC subjects of kind Group)."""
        with self._lock:
            return {g for (c, _), e in self._access.items() if c == cluster for g in e.kubernetes_groups}

    def _require_api_auth(self, name: str) -> None:
        meta = self._require_active(name)
        if meta.access_config.get("authenticationMode") not in ("API", "API_AND_CONFIG_MAP"):
            raise AwsError(
                "InvalidRequestException",
                "The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] "
                "to perform this operation.",
                400,
                clusterName=name,
            )

    def _access_entry(self, cluster: str, principal: str) -> AccessEntry:
        self._cluster_meta(cluster)
        with self._lock:
            entry = self._access.get((cluster, principal))
        if entry is None:
            raise AwsError(
                "ResourceNotFoundException",
                f"The specified principalArn could not be found. You can view your available access entries "
                f"with 'list-access-entries'. ({principal})",
                404,
                clusterName=cluster,
            )
        return entry

    def _entry_dict(self, entry: AccessEntry) -> dict[str, Any]:
        return {
            "clusterName": entry.cluster,
            "principalArn": entry.principal_arn,
            "kubernetesGroups": list(entry.kubernetes_groups),
            "accessEntryArn": entry.arn,
            "createdAt": entry.created_at,
            "modifiedAt": entry.modified_at,
            "tags": dict(entry.tags),
            "username": entry.username,
            "type": entry.type,
        }

    def _validate_groups(self, groups: list[str]) -> None:
        for group in groups:
            if group.startswith("system:"):
                raise AwsError(
                    "InvalidParameterException",
                    f"The kubernetes group name {group} is invalid, it cannot start with system:",
                )

    def create_access_entry(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreateAccessEntry (API or API_AND_CONFIG_MAP clusters; the IAM principal must exist)."""
        params = req.params
        cluster = params["clusterName"]
        principal = params["principalArn"]
        self._require_api_auth(cluster)
        if not backends.principal_exists(self.account_id, principal) or not (
            ":role/" in principal or ":user/" in principal
        ):
            raise AwsError(
                "InvalidParameterException",
                f"The specified principalArn is invalid: invalid principal {principal}",
            )
        entry_type = params.get("type") or "STANDARD"
        if entry_type not in ACCESS_ENTRY_TYPES:
            raise AwsError("InvalidParameterException", f"The access entry type {entry_type} is invalid.")
        groups = list(params.get("kubernetesGroups") or [])
        self._validate_groups(groups)
        kind, _, rest = principal.split(":", 5)[5].partition("/")
        short = rest.rsplit("/", 1)[-1]
        username = params.get("username") or (
            f"arn:aws:sts::{self.account_id}:assumed-role/{short}/{{{{SessionName}}}}" if kind == "role" else principal
        )
        if entry_type in ("EC2_LINUX", "EC2_WINDOWS", "HYPERPOD_LINUX"):
            username = "system:node:{{EC2PrivateDNSName}}"
        with self._lock:
            if (cluster, principal) in self._access:
                raise AwsError(
                    "ResourceInUseException",
                    "The specified access entry resource is already in use on this cluster.",
                    409,
                    clusterName=cluster,
                )
            now = self.clock.now()
            entry = AccessEntry(
                cluster=cluster,
                principal_arn=principal,
                arn=self._arn("access-entry", f"{cluster}/{kind}/{self.account_id}/{short}/{uuid.uuid4()}"),
                type=entry_type,
                username=username,
                kubernetes_groups=groups,
                created_at=now,
                modified_at=now,
                tags=dict(params.get("tags") or {}),
            )
            self._access[(cluster, principal)] = entry
        return {"accessEntry": self._entry_dict(entry)}

    def describe_access_entry(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeAccessEntry."""
        return {
            "accessEntry": self._entry_dict(self._access_entry(req.params["clusterName"], req.params["principalArn"]))
        }

    def list_access_entries(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListAccessEntries (optionally by associated policy)."""
        cluster = req.params["clusterName"]
        self._cluster_meta(cluster)
        policy = req.params.get("associatedPolicyArn")
        with self._lock:
            arns = sorted(
                e.principal_arn
                for (c, _), e in self._access.items()
                if c == cluster and (not policy or policy in e.policies)
            )
        page, token = _page(arns, req.params)
        return {"accessEntries": page, **({"nextToken": token} if token else {})}

    def update_access_entry(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """UpdateAccessEntry (kubernetesGroups, username)."""
        entry = self._access_entry(req.params["clusterName"], req.params["principalArn"])
        with self._lock:
            if "kubernetesGroups" in req.params:
                groups = list(req.params["kubernetesGroups"] or [])
                self._validate_groups(groups)
                entry.kubernetes_groups = groups
            if req.params.get("username"):
                entry.username = req.params["username"]
            entry.modified_at = self.clock.now()
        return {"accessEntry": self._entry_dict(entry)}

    def delete_access_entry(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DeleteAccessEntry."""
        entry = self._access_entry(req.params["clusterName"], req.params["principalArn"])
        with self._lock:
            self._access.pop((entry.cluster, entry.principal_arn), None)
        return {}

    def associate_access_policy(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """AssociateAccessPolicy (a known EKS access policy; ``accessScope`` cluster or namespace)."""
        params = req.params
        entry = self._access_entry(params["clusterName"], params["principalArn"])
        policy = params["policyArn"]
        if policy.rsplit("/", 1)[-1] not in ACCESS_POLICIES or ":cluster-access-policy/" not in policy:
            raise AwsError("InvalidParameterException", f"The specified policyArn is invalid: {policy}")
        scope = dict(params.get("accessScope") or {})
        if scope.get("type") == "namespace" and not scope.get("namespaces"):
            raise AwsError(
                "InvalidParameterException",
                "The namespaces field must be specified for a namespace access scope.",
            )
        if scope.get("type") == "cluster" and scope.get("namespaces"):
            raise AwsError(
                "InvalidParameterException",
                "The namespaces field must not be specified for a cluster access scope.",
            )
        with self._lock:
            now = self.clock.now()
            previous = entry.policies.get(policy)
            entry.policies[policy] = {
                "policyArn": policy,
                "accessScope": {
                    "type": scope.get("type", "cluster"),
                    "namespaces": list(scope.get("namespaces") or []),
                },
                "associatedAt": previous["associatedAt"] if previous else now,
                "modifiedAt": now,
            }
            associated = dict(entry.policies[policy])
        return {
            "clusterName": entry.cluster,
            "principalArn": entry.principal_arn,
            "associatedAccessPolicy": associated,
        }

    def disassociate_access_policy(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DisassociateAccessPolicy."""
        entry = self._access_entry(req.params["clusterName"], req.params["principalArn"])
        with self._lock:
            if entry.policies.pop(req.params["policyArn"], None) is None:
                raise AwsError(
                    "ResourceNotFoundException",
                    f"The specified policy {req.params['policyArn']} is not associated with the access entry.",
                    404,
                )
        return {}

    def list_associated_access_policies(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListAssociatedAccessPolicies."""
        entry = self._access_entry(req.params["clusterName"], req.params["principalArn"])
        with self._lock:
            policies = [dict(p) for _, p in sorted(entry.policies.items())]
        page, token = _page(policies, req.params)
        return {
            "clusterName": entry.cluster,
            "principalArn": entry.principal_arn,
            "associatedAccessPolicies": page,
            **({"nextToken": token} if token else {}),
        }

    def list_access_policies(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListAccessPolicies."""
        policies = [{"name": name, "arn": f"arn:aws:eks::aws:cluster-access-policy/{name}"} for name in ACCESS_POLICIES]
        page, token = _page(policies, req.params)
        return {"accessPolicies": page, **({"nextToken": token} if token else {})}

    # -- pod identity -----------------------------------------------------------------------------
    def _check_pod_identity_free(self, cluster: str, namespace: str, service_account: str) -> None:
        for assoc in self._pod_identity.values():
            if (assoc.cluster, assoc.namespace, assoc.service_account) == (
                cluster,
                namespace,
                service_account,
            ):
                raise AwsError(
                    "ResourceInUseException",
                    f"Association already exists: {assoc.association_id}",
                    409,
                    clusterName=cluster,
                )

    def _new_pod_identity(
        self,
        cluster: str,
        namespace: str,
        service_account: str,
        role_arn: str,
        *,
        owner_arn: str | None = None,
        disable_session_tags: bool = False,
        target_role_arn: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> PodIdentityAssociation:
        with self._lock:
            self._check_pod_identity_free(cluster, namespace, service_account)
            association_id = "a-" + _random_id(17)
            now = self.clock.now()
            assoc = PodIdentityAssociation(
                cluster=cluster,
                namespace=namespace,
                service_account=service_account,
                role_arn=role_arn,
                association_id=association_id,
                arn=self._arn("podidentityassociation", f"{cluster}/{association_id}"),
                created_at=now,
                modified_at=now,
                owner_arn=owner_arn,
                disable_session_tags=disable_session_tags,
                target_role_arn=target_role_arn,
                tags=dict(tags or {}),
            )
            self._pod_identity[(cluster, association_id)] = assoc
            return assoc

    def _drop_pod_identity_by_arn(self, arn: str) -> None:
        with self._lock:
            for key, assoc in list(self._pod_identity.items()):
                if assoc.arn == arn:
                    del self._pod_identity[key]

    def _assoc_dict(self, assoc: PodIdentityAssociation) -> dict[str, Any]:
        out: dict[str, Any] = {
            "clusterName": assoc.cluster,
            "namespace": assoc.namespace,
            "serviceAccount": assoc.service_account,
            "roleArn": assoc.role_arn,
            "associationArn": assoc.arn,
            "associationId": assoc.association_id,
            "tags": dict(assoc.tags),
            "createdAt": assoc.created_at,
            "modifiedAt": assoc.modified_at,
            "disableSessionTags": assoc.disable_session_tags,
        }
        if assoc.owner_arn:
            out["ownerArn"] = assoc.owner_arn
        if assoc.target_role_arn:
            out["targetRoleArn"] = assoc.target_role_arn
        return out

    def _association(self, cluster: str, association_id: str) -> PodIdentityAssociation:
        self._cluster_meta(cluster)
        with self._lock:
            assoc = self._pod_identity.get((cluster, association_id))
        if assoc is None:
            raise AwsError(
                "ResourceNotFoundException",
                f"No Pod Identity Association found with id {association_id}",
                404,
                clusterName=cluster,
            )
        return assoc

    def create_pod_identity_association(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreatePodIdentityAssociation (the role must exist; one association per service account)."""
        params = req.params
        cluster = params["clusterName"]
        self._require_active(cluster)
        for key in ("roleArn", "targetRoleArn"):
            if params.get(key) and not backends.principal_exists(self.account_id, params[key]):
                raise AwsError("InvalidParameterException", f"Role {params[key]} does not exist")
        assoc = self._new_pod_identity(
            cluster,
            params["namespace"],
            params["serviceAccount"],
            params["roleArn"],
            disable_session_tags=bool(params.get("disableSessionTags")),
            target_role_arn=params.get("targetRoleArn"),
            tags=params.get("tags"),
        )
        return {"association": self._assoc_dict(assoc)}

    def describe_pod_identity_association(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribePodIdentityAssociation."""
        return {
            "association": self._assoc_dict(self._association(req.params["clusterName"], req.params["associationId"]))
        }

    def list_pod_identity_associations(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListPodIdentityAssociations (filters ``namespace`` and ``serviceAccount``)."""
        params = req.params
        cluster = params["clusterName"]
        self._cluster_meta(cluster)
        with self._lock:
            found = [
                a
                for (c, _), a in sorted(self._pod_identity.items())
                if c == cluster
                and (not params.get("namespace") or a.namespace == params["namespace"])
                and (not params.get("serviceAccount") or a.service_account == params["serviceAccount"])
            ]
        summaries = []
        for a in found:
            summary = {
                "clusterName": a.cluster,
                "namespace": a.namespace,
                "serviceAccount": a.service_account,
                "associationArn": a.arn,
                "associationId": a.association_id,
            }
            if a.owner_arn:
                summary["ownerArn"] = a.owner_arn
            summaries.append(summary)
        page, token = _page(summaries, params)
        return {"associations": page, **({"nextToken": token} if token else {})}

    def update_pod_identity_association(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """UpdatePodIdentityAssociation (roleArn, disableSessionTags, targetRoleArn)."""
        params = req.params
        assoc = self._association(params["clusterName"], params["associationId"])
        if params.get("roleArn") and not backends.principal_exists(self.account_id, params["roleArn"]):
            raise AwsError("InvalidParameterException", f"Role {params['roleArn']} does not exist")
        with self._lock:
            if params.get("roleArn"):
                assoc.role_arn = params["roleArn"]
            if "disableSessionTags" in params:
                assoc.disable_session_tags = bool(params["disableSessionTags"])
            if "targetRoleArn" in params:
                assoc.target_role_arn = params["targetRoleArn"] or None
            assoc.modified_at = self.clock.now()
        return {"association": self._assoc_dict(assoc)}

    def delete_pod_identity_association(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DeletePodIdentityAssociation (not for associations an add-on owns)."""
        assoc = self._association(req.params["clusterName"], req.params["associationId"])
        if assoc.owner_arn:
            raise AwsError(
                "InvalidRequestException",
                f"Pod Identity Association {assoc.association_id} is owned by {assoc.owner_arn} "
                "and can only be changed through it.",
            )
        with self._lock:
            self._pod_identity.pop((assoc.cluster, assoc.association_id), None)
        return {"association": self._assoc_dict(assoc)}

    # -- IAM targets (the IAM audit's condition evaluation) ---------------------------------------
    def iam_target(self, operation: str, params: dict[str, Any]) -> IamTarget | None:
        """The resource IAM authorises for an EKS write, with its ``instantstart:`` tags now, or None.

        Creates authorise on the cluster (add-ons, access entries, pod identity associations) or on the new
        cluster's ARN, with the request's ``tags``; changes and deletes on the resource itself. A resource the
        sandbox does not hold answers None (the call fails on its own).
        """
        name = str(params.get("clusterName") or params.get("name") or "")
        if operation == "CreateCluster":
            return IamTarget(self._arn("cluster", name), (), request_tags(params.get("tags")))
        if operation in ("CreateAddon", "CreateAccessEntry", "CreatePodIdentityAssociation", "DeleteCluster"):
            cluster = backends.eks(self.account_id, self.region).clusters.get(name)
            if cluster is None:
                return None
            request = None if operation == "DeleteCluster" else request_tags(params.get("tags"))
            return IamTarget(self._arn("cluster", name), ownership_tags(cluster.tags), request)
        obj: Any = None
        with self._lock:
            if operation in ("DeleteAddon", "UpdateAddon"):
                obj = self._addons.get((name, str(params.get("addonName") or "")))
            elif operation in (
                "DeleteAccessEntry",
                "UpdateAccessEntry",
                "AssociateAccessPolicy",
                "DisassociateAccessPolicy",
            ):
                obj = self._access.get((name, str(params.get("principalArn") or "")))
            elif operation in ("DeletePodIdentityAssociation", "UpdatePodIdentityAssociation"):
                obj = self._pod_identity.get((name, str(params.get("associationId") or "")))
        if obj is not None:
            return IamTarget(obj.arn, ownership_tags(obj.tags))
        if operation in ("TagResource", "UntagResource"):
            arn = str(params.get("resourceArn") or "")
            tagged = self._tagged(arn)
            if tagged is not None:
                tags = tagged.tags
            else:
                cluster = backends.eks(self.account_id, self.region).clusters.get(arn.rsplit("/", 1)[-1])
                if cluster is None:
                    return None
                tags = cluster.tags
            if operation == "TagResource":
                request = request_tags(params.get("tags"))
            else:
                request = request_tags({str(k): "" for k in params.get("tagKeys") or []})
            return IamTarget(arn, ownership_tags(tags), request)
        return None

    # -- tags -------------------------------------------------------------------------------------
    def _tagged(self, arn: str) -> Any | None:
        with self._lock:
            candidates: list[Any] = [
                *self._addons.values(),
                *self._access.values(),
                *self._pod_identity.values(),
            ]
            for obj in candidates:
                if obj.arn == arn:
                    return obj
        return None

    def tag_resource(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """TagResource for add-ons, access entries and pod identity associations; others go to moto."""
        obj = self._tagged(req.params["resourceArn"])
        if obj is None:
            return forward()
        with self._lock:
            obj.tags.update(req.params.get("tags") or {})
        return {}

    def untag_resource(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """UntagResource (see :meth:`tag_resource`)."""
        obj = self._tagged(req.params["resourceArn"])
        if obj is None:
            return forward()
        with self._lock:
            for key in req.params.get("tagKeys") or []:
                obj.tags.pop(key, None)
        return {}

    def list_tags_for_resource(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListTagsForResource (see :meth:`tag_resource`)."""
        obj = self._tagged(req.params["resourceArn"])
        if obj is None:
            return forward()
        return {"tags": dict(obj.tags)}
