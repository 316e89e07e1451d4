"""SageMaker HyperPod (EKS orchestrator) emulation on the simulated clock.

moto's HyperPod clusters are InService at once, do not echo ``Orchestrator``/``NodeRecovery`` and
require ``ThreadsPerCore``, so the sandbox answers the cluster operations itself:

- CreateCluster validates like the real service (unique name, ACTIVE EKS cluster with API
  authentication, subnets / security groups in moto EC2, execution roles in moto IAM, lifecycle
  script in moto S3, ``ml.*`` instance types from the botocore enum) and answers the ARN.
- Continuous provisioning (``NodeProvisioningMode=Continuous``, what the product uses): Creating
  for :data:`CLUSTER_READY_SECONDS`, then the cluster and its groups are InService with no
  instance yet; each group then launches its instances one at a time (Pending for
  :data:`INSTANCE_LAUNCH_SECONDS`, then Running: ``CurrentCount`` + 1 and the Kubernetes ``Node``
  registers, Ready, with the ``sagemaker.amazonaws.com/*`` labels). A capacity fault makes each
  launch attempt fail with Error cluster events carrying EC2's message; the cluster and the group stay
  InService below ``TargetCount`` and HyperPod retries every :data:`LAUNCH_RETRY_SECONDS`.
  UpdateCluster keeps the cluster InService and scales groups the same way. Every step is a cluster
  event (ListClusterEvents / DescribeClusterEvent, and EventBridge "SageMaker HyperPod Cluster
  Event"); initial provisioning and each count change are ``Scaling`` cluster operations.
- Without it (the older mode): Creating for ``600 + 60 * max(InstanceCount)`` s (at most 1200 s) ->
  InService with every node registered at once; a capacity fault makes it go Creating -> Failed.
  UpdateCluster: Updating -> InService.
- Cluster-level failures (security groups and subnets in different VPCs) end Failed with a
  FailureMessage in both modes. DeleteCluster: Deleting ~300 s -> gone.
- Every ClusterStatus change emits ``aws.sagemaker`` "SageMaker HyperPod Cluster State Change"
  through moto's PutEvents (default bus), detail shaped like DescribeCluster, unless
  ``state_change_events`` is off.
"""

from __future__ import annotations

import datetime as dt
import functools
import ipaddress
import logging
import random
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import botocore.session

from instantstart_sandbox.aws import backends
from instantstart_sandbox.aws.calls import IamTarget, ownership_tags, request_tags
from instantstart_sandbox.aws.faults import FaultInjector
from instantstart_sandbox.aws.hyperpod_events import (
    CLUSTER_EVENT_DETAIL_TYPE,
    ClusterEvent,
    ClusterOperation,
    ScalingDetail,
    list_events,
    list_operations,
)
from instantstart_sandbox.aws.instances import node_shape
from instantstart_sandbox.aws.kubetypes import KubeApiServerLike
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse
from instantstart_sandbox.clock import SimClock

log = logging.getLogger(__name__)

DELETE_SECONDS = 300.0
UPDATE_BASE_SECONDS = 300.0
SOFTWARE_UPDATE_SECONDS = 900.0
CLUSTER_READY_SECONDS = 300.0
"""Continuous mode: simulated seconds until the cluster-level resources exist (cluster InService)."""
INSTANCE_LAUNCH_SECONDS = 240.0
"""Continuous mode: simulated seconds from an instance's launch to its Kubernetes node being Ready."""
LAUNCH_RETRY_SECONDS = 300.0
"""Continuous mode: simulated seconds between HyperPod's retries of failed instance launches."""
GROUP_READY_SECONDS = 120.0
"""Continuous mode: simulated seconds until an instance group added by UpdateCluster is InService."""
EVENT_DETAIL_TYPE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH_DETAIL_TYPE = "SageMaker HyperPod Cluster Node Health Event"
SPEC_FIELDS = (
    "InstanceGroupName",
    "InstanceType",
    "InstanceRequirements",
    "LifeCycleConfig",
    "ExecutionRole",
    "ThreadsPerCore",
    "InstanceStorageConfigs",
    "OnStartDeepHealthChecks",
    "TrainingPlanArn",
    "OverrideVpcConfig",
    "ScheduledUpdateConfig",
    "ImageId",
    "CapacityRequirements",
    "NetworkInterface",
)

Emit = Callable[[str, str, dict[str, Any], list[str]], None]
LaunchCheck = Callable[["HpCluster", "HpGroup", str], "str | None"]
"""A check before each continuous-mode launch: (cluster, group, zone) -> a failure message or None."""


def creation_seconds(groups: list[dict[str, Any]]) -> float:
    """Simulated seconds a cluster with ``groups`` takes to create: 600 + 60 * max count, at most 1200."""
    biggest = max((int(g.get("InstanceCount", 0)) for g in groups), default=0)
    return float(min(1200, 600 + 60 * biggest))


def _instance_types() -> frozenset[str]:
    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(getattr(model.shape_for("ClusterInstanceType"), "enum", []))


_INSTANCE_TYPES: frozenset[str] | None = None


def cluster_instance_types() -> frozenset[str]:
    """The ``ClusterInstanceType`` enum of the botocore SageMaker model."""
    global _INSTANCE_TYPES
    if _INSTANCE_TYPES is None:
        _INSTANCE_TYPES = _instance_types()
    return _INSTANCE_TYPES


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class HpNode:
    """One HyperPod instance."""

    instance_id: str
    group: str
    instance_type: str
    launch_time: float
    subnet_id: str
    zone: str
    zone_id: str
    ip: str
    status: str = "Running"
    health: str = "Schedulable"
    status_message: str = ""
    logical_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def node_name(self) -> str:
        """The Kubernetes Node name HyperPod gives the instance."""
        return f"hyperpod-{self.instance_id}"

    @property
    def dns(self) -> str:
        """The private DNS hostname."""
        return f"ip-{self.ip.replace('.', '-')}.{self.zone[:-1]}.compute.internal"


def _finish_software_update(group: HpGroup) -> None:
    """The group's software update ended: Succeeded, its AMI the desired one."""
    group.software_update = "Succeeded"
    if group.desired_image:
        group.spec["ImageId"] = group.desired_image
        group.desired_image = None


@dataclass
class HpGroup:
    """One instance group: its specification and observed state."""

    spec: dict[str, Any]
    status: str = "Creating"
    nodes: list[HpNode] = field(default_factory=list)
    launching: bool = False  # continuous mode: a launch loop is scheduled
    logical_ids: list[str] = field(default_factory=list)  # NodeLogicalIds promised by BatchAddClusterNodes
    software_update: str | None = None  # SoftwareUpdateStatus of the last UpdateClusterSoftware (None: never)
    desired_image: str | None = None  # the ImageId an update in progress moves to (DesiredImageId)

    @property
    def name(self) -> str:
        """InstanceGroupName."""
        return str(self.spec["InstanceGroupName"])

    @property
    def target(self) -> int:
        """InstanceCount of the specification."""
        return int(self.spec.get("InstanceCount", 0))


@dataclass
class HpCluster:
    """A HyperPod cluster."""

    name: str
    arn: str
    created_at: float
    request: dict[str, Any]
    groups: dict[str, HpGroup]
    eks_name: str | None
    status: str = "Creating"
    failure_message: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    generation: int = 0
    pending_groups: list[dict[str, Any]] = field(default_factory=list)
    events: list[ClusterEvent] = field(default_factory=list)
    operations: list[ClusterOperation] = field(default_factory=list)

    @property
    def continuous(self) -> bool:
        """Whether the cluster was created with ``NodeProvisioningMode=Continuous``."""
        return self.request.get("NodeProvisioningMode") == "Continuous"


class HyperPodEmulator:
    """The SageMaker HyperPod cluster operations of the sandbox. Thread-safe."""

    def __init__(
        self,
        clock: SimClock,
        kube: KubeApiServerLike,
        region: str,
        account_id: str,
        emit: Emit,
        faults: FaultInjector,
        eks_status: Callable[[str], str | None],
        eks_auth_mode: Callable[[str], str | None],
        state_change_events: bool = True,
    ) -> None:
        self.clock = clock
        self.state_change_events = state_change_events
        """Whether ClusterStatus changes emit "SageMaker HyperPod Cluster State Change" (settable at runtime)."""
        self.kube = kube
        self.region = region
        self.account_id = account_id
        self.emit = emit
        self.faults = faults
        self.eks_status = eks_status
        self.eks_auth_mode = eks_auth_mode
        self._lock = threading.RLock()
        self._clusters: dict[str, HpCluster] = {}
        self._rng = random.Random()
        self.launch_checks: list[LaunchCheck] = []
        """Checks run before each continuous-mode launch (service quotas, training plans, ...): the first
        message returned fails the attempt like a capacity shortage (Error events, retried)."""
        self.delete_checks: list[Callable[[str], str | None]] = []
        """Checks run before DeleteCluster starts: (cluster ARN) -> a refusal message (ValidationException) or None
        (task governance: a cluster with a scheduler config or compute quotas left)."""

    def handlers(self) -> dict[str, Callable[[AwsRequest, Callable[[], RawResponse]], Any]]:
        """Operation name -> handler."""
        return {
            "CreateCluster": self.create_cluster,
            "DescribeCluster": self.describe_cluster,
            "ListClusters": self.list_clusters,
            "DeleteCluster": self.delete_cluster,
            "UpdateCluster": self.update_cluster,
            "UpdateClusterSoftware": self.update_cluster_software,
            "ListClusterNodes": self.list_cluster_nodes,
            "DescribeClusterNode": self.describe_cluster_node,
            "ListClusterEvents": self.list_cluster_events,
            "DescribeClusterEvent": self.describe_cluster_event,
            "ListClusterOperations": self.list_cluster_operations,
            "DescribeClusterOperation": self.describe_cluster_operation,
            "AddTags": self.add_tags,
            "ListTags": self.list_tags,
            "DeleteTags": self.delete_tags,
        }

    # -- lookup -----------------------------------------------------------------------------------
    def _find(self, name_or_arn: str) -> HpCluster:
        with self._lock:
            for cluster in self._clusters.values():
                if name_or_arn in (cluster.name, cluster.arn):
                    return cluster
        raise AwsError("ResourceNotFound", f"Cluster not found: {name_or_arn}", 400)

    def _by_arn(self, arn: str) -> HpCluster | None:
        with self._lock:
            return next((c for c in self._clusters.values() if c.arn == arn), None)

    # -- IAM targets (the IAM audit's condition evaluation) ---------------------------------------
    CLUSTER_OPERATIONS = frozenset(
        {
            "DeleteCluster",
            "UpdateCluster",
            "BatchAddClusterNodes",
            "BatchDeleteClusterNodes",
            "BatchRebootClusterNodes",
            "BatchReplaceClusterNodes",
            "UpdateClusterSoftware",
            "StartClusterHealthCheck",
        }
    )
    """SageMaker writes that authorise on an existing HyperPod cluster (``ClusterName``: its name or ARN)."""

    def iam_target(self, operation: str, params: dict[str, Any]) -> IamTarget | None:
        """The HyperPod cluster IAM authorises for a SageMaker write, with its ``instantstart:`` tags now, or None.

        ``CreateCluster`` authorises on the new cluster's ARN (its id is not known yet: ``cluster/(new)``) with the
        request's ``Tags``; ``AddTags``/``DeleteTags`` on a HyperPod cluster ARN with the tags they set or remove.
        """
        if operation == "CreateCluster":
            arn = f"arn:aws:sagemaker:{self.region}:{self.account_id}:cluster/(new)"
            return IamTarget(arn, (), request_tags(params.get("Tags")))
        if operation in ("AddTags", "DeleteTags"):
            cluster = self._by_arn(str(params.get("ResourceArn") or ""))
            if cluster is None:
                return None
            tags = params.get("Tags") if operation == "AddTags" else {k: "" for k in params.get("TagKeys") or []}
            with self._lock:
                return IamTarget(cluster.arn, ownership_tags(cluster.tags), request_tags(tags))
        if operation in self.CLUSTER_OPERATIONS:
            try:
                cluster = self._find(str(params.get("ClusterName") or ""))
            except AwsError:
                return None
            with self._lock:
                return IamTarget(cluster.arn, ownership_tags(cluster.tags))
        return None

    # -- validation -------------------------------------------------------------------------------
    def _validate_vpc(self, vpc: dict[str, Any], where: str, eks_vpc: str | None) -> None:
        for subnet_id in vpc.get("Subnets") or []:
            subnet = backends.subnet(self.account_id, self.region, subnet_id)
            if subnet is None:
                raise AwsError("ValidationException", f"{where}: the subnet ID '{subnet_id}' does not exist")
            if eks_vpc and subnet.vpc_id != eks_vpc:
                raise AwsError(
                    "ValidationException",
                    f"{where}: subnet {subnet_id} is in {subnet.vpc_id}, not in the VPC of the EKS cluster ({eks_vpc})",
                )
        for group_id in vpc.get("SecurityGroupIds") or []:
            if not backends.security_group_exists(self.account_id, self.region, group_id):
                raise AwsError("ValidationException", f"{where}: the security group '{group_id}' does not exist")

    def _validate_group(self, spec: dict[str, Any], index: int, eks_vpc: str | None) -> None:
        name = spec.get("InstanceGroupName")
        where = f"InstanceGroups[{index}] ({name})"
        instance_type = spec.get("InstanceType")
        if instance_type is None and not spec.get("InstanceRequirements"):
            raise AwsError("ValidationException", f"{where}: InstanceType is required")
        for candidate in [instance_type] if instance_type else spec["InstanceRequirements"].get("InstanceTypes", []):
            if candidate not in cluster_instance_types():
                raise AwsError(
                    "ValidationException",
                    f"1 validation error detected: Value '{candidate}' at 'instanceGroups.{index + 1}.member."
                    "instanceType' failed to satisfy constraint: Member must satisfy enum value set: "
                    "[ml.p4d.24xlarge, ml.p5.48xlarge, ml.g5.xlarge, ml.g6.4xlarge, ...]",
                )
        role = spec.get("ExecutionRole", "")
        if ":role/" not in role or not backends.principal_exists(self.account_id, role):
            raise AwsError(
                "ValidationException",
                f"{where}: the execution role {role} does not exist or cannot be assumed",
            )
        lifecycle = spec.get("LifeCycleConfig")
        if lifecycle:
            uri = lifecycle.get("SourceS3Uri", "")
            if not uri.startswith("s3://"):
                raise AwsError("ValidationException", f"{where}: LifeCycleConfig.SourceS3Uri must be an s3:// URI")
            bucket, _, prefix = uri[5:].partition("/")
            on_create = lifecycle.get("OnCreate", "")
            key = f"{prefix.rstrip('/')}/{on_create}" if prefix.strip("/") else on_create
            if not backends.s3_object_exists(self.account_id, bucket, key):
                raise AwsError(
                    "ValidationException",
                    f"{where}: the lifecycle script s3://{bucket}/{key} (SourceS3Uri + OnCreate) was not found",
                )
        threads = spec.get("ThreadsPerCore")
        if threads is not None and threads not in (1, 2):
            raise AwsError("ValidationException", f"{where}: ThreadsPerCore must be 1 or 2")
        if spec.get("OverrideVpcConfig"):
            self._validate_vpc(spec["OverrideVpcConfig"], f"{where} OverrideVpcConfig", eks_vpc)

    def _eks_cluster(self, params: dict[str, Any]) -> tuple[str | None, str | None]:
        """(EKS cluster name, its VPC id) of the Orchestrator, validated; (None, None) for Slurm."""
        eks_arn = ((params.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
        if not eks_arn:
            return None, None
        parts = eks_arn.split(":")
        if len(parts) != 6 or parts[2] != "eks" or not parts[5].startswith("cluster/"):
            raise AwsError("ValidationException", f"Orchestrator.Eks.ClusterArn {eks_arn} is not an EKS cluster ARN")
        eks_name = parts[5].split("/", 1)[1]
        status = self.eks_status(eks_name) if parts[3] == self.region and parts[4] == self.account_id else None
        if status is None:
            raise AwsError("ValidationException", f"EKS cluster {eks_arn} does not exist")
        if status != "ACTIVE":
            raise AwsError("ValidationException", f"EKS cluster {eks_name} is in {status} status; it must be ACTIVE")
        mode = self.eks_auth_mode(eks_name)
        if mode not in ("API", "API_AND_CONFIG_MAP"):
            raise AwsError(
                "ValidationException",
                f"EKS cluster {eks_name} has authentication mode {mode}; HyperPod requires API or API_AND_CONFIG_MAP",
            )
        eks = backends.eks(self.account_id, self.region).clusters.get(eks_name)
        vpc_id = (getattr(eks, "resources_vpc_config", None) or {}).get("vpcId") if eks is not None else None
        return eks_name, vpc_id

    # -- operations -------------------------------------------------------------------------------
    @staticmethod
    def _validate_tiered_storage(config: Any, eks_orchestrated: bool) -> None:
        """``TieredStorageConfig`` (botocore ``ClusterTieredStorageConfig``): ``Mode`` Enable|Disable
        (required), ``InstanceMemoryAllocationPercentage`` 0-100. botocore checks neither the enum nor the
        maximum client-side; SageMaker answers ValidationException in its "1 validation error detected"
        form. Managed tiered checkpointing exists for EKS-orchestrated clusters only (refused on Slurm:
        the harsher reading of the documentation)."""
        if config is None:
            return
        mode = config.get("Mode")
        if mode not in ("Enable", "Disable"):
            raise AwsError(
                "ValidationException",
                f"1 validation error detected: Value '{mode}' at 'tieredStorageConfig.mode' failed to satisfy "
                "constraint: Member must satisfy enum value set: [Enable, Disable]",
            )
        percentage = config.get("InstanceMemoryAllocationPercentage")
        if percentage is not None and not 0 <= int(percentage) <= 100:
            bound = "less than or equal to 100" if int(percentage) > 100 else "greater than or equal to 0"
            raise AwsError(
                "ValidationException",
                f"1 validation error detected: Value '{percentage}' at "
                "'tieredStorageConfig.instanceMemoryAllocationPercentage' failed to satisfy constraint: "
                f"Member must have value {bound}",
            )
        if not eks_orchestrated:
            raise AwsError(
                "ValidationException", "TieredStorageConfig is supported only for clusters orchestrated by EKS"
            )

    def create_cluster(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreateCluster: validate, answer the ARN, then Creating -> InService (or Failed)."""
        params = req.params
        name = params["ClusterName"]
        with self._lock:
            if any(c.name == name for c in self._clusters.values()):
                raise AwsError(
                    "ResourceInUse",
                    f"Resource Already Exists: Cluster with name {name} already exists. Choose a different name.",
                )
        eks_name, eks_vpc = self._eks_cluster(params)
        self._validate_tiered_storage(params.get("TieredStorageConfig"), bool(eks_name))
        if eks_name and not params.get("VpcConfig"):
            raise AwsError("ValidationException", "VpcConfig is required for a cluster orchestrated by EKS")
        if params.get("VpcConfig"):
            self._validate_vpc(params["VpcConfig"], "VpcConfig", eks_vpc)
        groups = list(params.get("InstanceGroups") or [])
        seen: set[str] = set()
        for index, spec in enumerate(groups):
            self._validate_group(spec, index, eks_vpc)
            if spec["InstanceGroupName"] in seen:
                raise AwsError("ValidationException", f"Duplicate InstanceGroupName {spec['InstanceGroupName']}")
            seen.add(spec["InstanceGroupName"])
        if params.get("NodeProvisioningMode") and not eks_name:
            raise AwsError(
                "ValidationException", "NodeProvisioningMode is supported only for EKS orchestrated clusters"
            )
        continuous = params.get("NodeProvisioningMode") == "Continuous"
        problem = self._network_problem(params)
        failure = None
        if not continuous and groups:
            zone, others = self._zones(params, groups[0])
            failure = self.faults.take_capacity_failure([_instance_type(g) for g in groups], zone, others)
        now = self.clock.now()
        cluster = HpCluster(
            name=name,
            arn=f"arn:aws:sagemaker:{self.region}:{self.account_id}:cluster/{uuid.uuid4().hex[:12]}",
            created_at=now,
            request=dict(params),
            groups={g["InstanceGroupName"]: HpGroup(dict(g)) for g in groups},
            eks_name=eks_name,
            tags={t["Key"]: t["Value"] for t in params.get("Tags") or []},
        )
        with self._lock:
            self._clusters[cluster.arn] = cluster
            generation = cluster.generation
        self._emit_state(cluster)
        if continuous:
            self._start_continuous(cluster, generation, problem)
            return {"ClusterArn": cluster.arn}
        duration = creation_seconds(groups)
        if problem is not None:
            self.clock.call_at(now + duration / 2, lambda: self._fail(cluster.arn, generation, None, problem))
        elif failure is not None:
            failing = next((g for g in groups if self._failing_type(g, failure)), groups[0] if groups else None)
            self.clock.call_at(
                now + duration / 2,
                lambda: self._fail(cluster.arn, generation, failing["InstanceGroupName"] if failing else None, failure),
            )
        else:
            self.clock.call_at(now + duration, lambda: self._in_service(cluster.arn, generation))
        return {"ClusterArn": cluster.arn}

    @staticmethod
    def _failing_type(group: dict[str, Any], message: str) -> bool:
        return _instance_type(group) in message

    # -- continuous provisioning ------------------------------------------------------------------
    def _network_problem(self, params: dict[str, Any]) -> str | None:
        """A cluster-level failure HyperPod finds only when it creates network interfaces: security
        groups and subnets in different VPCs (EC2's message), or None."""
        ec2 = backends.ec2(self.account_id, self.region)
        configs = [params.get("VpcConfig") or {}] + [
            g.get("OverrideVpcConfig") or {} for g in params.get("InstanceGroups") or []
        ]
        for vpc in configs:
            for subnet_id in vpc.get("Subnets") or []:
                subnet = backends.subnet(self.account_id, self.region, subnet_id)
                for group_id in vpc.get("SecurityGroupIds") or []:
                    group = ec2.get_security_group_from_id(group_id)
                    if subnet is not None and group is not None and group.vpc_id != subnet.vpc_id:
                        return (
                            f"Failed to create network interface: Security group {group_id} and subnet "
                            f"{subnet_id} belong to different networks."
                        )
        return None

    def _event(
        self,
        cluster: HpCluster,
        out: list[ClusterEvent],
        resource_type: str,
        description: str,
        *,
        level: str = "Info",
        group: str | None = None,
        instance_id: str | None = None,
        operation_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Record a cluster event (call with the lock held); ``out`` collects it for :meth:`_publish`."""
        event = ClusterEvent(
            cluster_arn=cluster.arn,
            cluster_name=cluster.name,
            resource_type=resource_type,
            level=level,
            description=description,
            time=self.clock.now(),
            group=group,
            instance_id=instance_id,
            operation_id=operation_id,
            metadata=metadata or {},
        )
        cluster.events.append(event)
        out.append(event)

    def _publish(self, events: list[ClusterEvent]) -> None:
        """Emit each event on EventBridge as "SageMaker HyperPod Cluster Event" (call without the lock)."""
        for event in events:
            self.emit("aws.sagemaker", CLUSTER_EVENT_DETAIL_TYPE, event.eventbridge_detail(), [event.cluster_arn])

    @staticmethod
    def _counts(group: HpGroup, target: int | None = None) -> dict[str, int]:
        out = {
            "CurrentCount": sum(1 for n in group.nodes if n.status == "Running"),
            "TargetCount": group.target if target is None else target,
        }
        if group.spec.get("MinInstanceCount") is not None:
            out["MinCount"] = int(group.spec["MinInstanceCount"])
        return out

    def _start_scaling(
        self, cluster: HpCluster, changes: list[tuple[HpGroup, int]], out: list[ClusterEvent]
    ) -> ClusterOperation:
        """Open a Scaling operation for ``(group, previous target)`` pairs (lock held); older
        in-progress scaling of the same groups is superseded."""
        names = {group.name for group, _ in changes}
        for operation in cluster.operations:
            for detail in operation.details:
                if detail.group in names and detail.status == "InProgress":
                    detail.status = "Superseded"
        operation = ClusterOperation(
            cluster_arn=cluster.arn,
            created_at=self.clock.now(),
            details=[
                ScalingDetail(group.name, self._counts(group, previous), self._counts(group))
                for group, previous in changes
            ],
        )
        cluster.operations.append(operation)
        for group, previous in changes:
            self._event(
                cluster,
                out,
                "InstanceGroup",
                f"Scaling of InstanceGroup {group.name} in Cluster {cluster.name} from {previous} to "
                f"{group.target} instances started",
                group=group.name,
                operation_id=operation.operation_id,
                metadata={"InstanceGroupScaling": {"InstanceCount": len(group.nodes), "TargetCount": group.target}},
            )
        return operation

    def _operation_of(self, cluster: HpCluster, group: str) -> ClusterOperation | None:
        for operation in reversed(cluster.operations):
            if any(d.group == group and d.status == "InProgress" for d in operation.details):
                return operation
        return None

    def _start_continuous(self, cluster: HpCluster, generation: int, problem: str | None) -> None:
        events: list[ClusterEvent] = []
        with self._lock:
            self._event(cluster, events, "Cluster", f"Cluster {cluster.name} creation started")
            self._start_scaling(cluster, [(g, 0) for g in cluster.groups.values()], events)
        self._publish(events)
        if problem is not None:
            self.clock.call_later(CLUSTER_READY_SECONDS / 2, lambda: self._fail(cluster.arn, generation, None, problem))
        else:
            self.clock.call_later(CLUSTER_READY_SECONDS, lambda: self._cluster_ready(cluster.arn, generation))

    def _cluster_ready(self, arn: str, generation: int) -> None:
        """Continuous mode: cluster-level resources exist; the cluster and groups go InService, launches begin."""
        events: list[ClusterEvent] = []
        with self._lock:
            cluster = self._clusters.get(arn)
            if cluster is None or cluster.generation != generation or cluster.status != "Creating":
                return
            cluster.status = "InService"
            self._event(cluster, events, "Cluster", f"Cluster {cluster.name} is InService")
            for group in cluster.groups.values():
                group.status = "InService"
                self._event(
                    cluster,
                    events,
                    "InstanceGroup",
                    f"InstanceGroup {group.name} in Cluster {cluster.name} is InService; provisioning "
                    f"{group.target} instances",
                    group=group.name,
                    operation_id=(op.operation_id if (op := self._operation_of(cluster, group.name)) else None),
                )
        self._publish(events)
        self._emit_state(cluster)
        for name in list(cluster.groups):
            self._ensure_launching(cluster, name)

    def _ensure_launching(self, cluster: HpCluster, group_name: str, delay: float = 0.0) -> None:
        """Start the group's launch loop unless it runs already."""
        with self._lock:
            group = cluster.groups.get(group_name)
            if group is None or group.launching or group.status != "InService":
                return
            group.launching = True
        self.clock.call_later(delay, lambda: self._launch_step(cluster.arn, group_name))

    def _zones(self, request: dict[str, Any], spec: dict[str, Any], index: int = 0) -> tuple[str, str]:
        """(the AZ the group's ``index``-th instance launches in, the Region's other AZs as EC2 lists them)."""
        vpc = spec.get("OverrideVpcConfig") or request.get("VpcConfig") or {}
        subnets = list(vpc.get("Subnets") or [])
        subnet_id = subnets[index % len(subnets)] if subnets else ""
        subnet = backends.subnet(self.account_id, self.region, subnet_id) if subnet_id else None
        zone = subnet.availability_zone if subnet is not None else f"{self.region}a"
        others = [f"{self.region}{letter}" for letter in "abcd" if f"{self.region}{letter}" != zone]
        return zone, ", ".join(others)

    def _launch_step(self, arn: str, group_name: str) -> None:
        """One launch attempt of the group's next instance, or the end of its scaling at target."""
        events: list[ClusterEvent] = []
        retry = False
        launched: HpNode | None = None
        with self._lock:
            cluster = self._clusters.get(arn)
            group = cluster.groups.get(group_name) if cluster is not None else None
            if cluster is None or group is None:
                return
            if cluster.status in ("Deleting", "Failed") or group.status != "InService":
                group.launching = False
                return
            operation = self._operation_of(cluster, group.name)
            op_id = operation.operation_id if operation else None
            if len(group.nodes) >= group.target:
                group.launching = False
                if operation is not None:
                    for detail in operation.details:
                        if detail.group == group.name and detail.status == "InProgress":
                            detail.status = "Done"
                    self._event(
                        cluster,
                        events,
                        "InstanceGroup",
                        f"Scaling of InstanceGroup {group.name} in Cluster {cluster.name} completed: "
                        f"{len(group.nodes)} of {group.target} instances",
                        group=group.name,
                        operation_id=op_id,
                        metadata={
                            "InstanceGroupScaling": {"InstanceCount": len(group.nodes), "TargetCount": group.target}
                        },
                    )
            else:
                zone, others = self._zones(cluster.request, group.spec, len(group.nodes))
                failure = self.faults.take_capacity_failure([_instance_type(group.spec)], zone, others)
                for check in self.launch_checks:
                    if failure is not None:
                        break
                    failure = check(cluster, group, zone)
                if failure is not None:
                    missing = group.target - len(group.nodes)
                    self._event(
                        cluster,
                        events,
                        "InstanceGroup",
                        f"InstanceGroup {group.name} in Cluster {cluster.name} failed to launch {missing} "
                        f"instances; retrying",
                        level="Error",
                        group=group.name,
                        operation_id=op_id,
                        metadata={
                            "InstanceGroupScaling": {
                                "InstanceCount": len(group.nodes),
                                "TargetCount": group.target,
                                "FailureMessage": failure,
                            }
                        },
                    )
                    for _ in range(missing):
                        self._event(
                            cluster,
                            events,
                            "Instance",
                            f"Instance creation in Cluster {cluster.name} and InstanceGroup {group.name} failed",
                            level="Error",
                            group=group.name,
                            operation_id=op_id,
                            instance_id=self._instance_id(),  # as in AWS's reference: the failed attempt's id
                            metadata={"Instance": {"FailureMessage": failure, "NodeLogicalId": str(uuid.uuid4())}},
                        )
                    retry = True
                else:
                    launched = self._new_node(cluster, group)
                    launched.status = "Pending"
                    group.nodes.append(launched)
                    self._event(
                        cluster,
                        events,
                        "Instance",
                        f"Instance {launched.instance_id} launching in Cluster {cluster.name} and InstanceGroup "
                        f"{group.name}",
                        group=group.name,
                        instance_id=launched.instance_id,
                        operation_id=op_id,
                        metadata={"Instance": {"NodeLogicalId": launched.logical_id}},
                    )
        self._publish(events)
        if retry:
            self.clock.call_later(LAUNCH_RETRY_SECONDS, lambda: self._launch_step(arn, group_name))
        elif launched is not None:
            node = launched
            self.clock.call_later(INSTANCE_LAUNCH_SECONDS, lambda: self._instance_up(arn, group_name, node))

    def _instance_up(self, arn: str, group_name: str, node: HpNode) -> None:
        """The launched instance is Running: its Kubernetes node registers, the next launch starts."""
        events: list[ClusterEvent] = []
        with self._lock:
            cluster = self._clusters.get(arn)
            group = cluster.groups.get(group_name) if cluster is not None else None
            if cluster is None or group is None:
                return
            if cluster.status == "Deleting":
                group.launching = False
                return
            running = node in group.nodes  # False: scaled in while it launched
            if running:
                node.status = "Running"
                node.launch_time = self.clock.now()
                operation = self._operation_of(cluster, group.name)
                self._event(
                    cluster,
                    events,
                    "Instance",
                    f"Instance {node.instance_id} in Cluster {cluster.name} and InstanceGroup {group.name} is "
                    f"Running and registered as Kubernetes node {node.node_name}",
                    group=group.name,
                    instance_id=node.instance_id,
                    operation_id=operation.operation_id if operation else None,
                    metadata={"Instance": {"NodeLogicalId": node.logical_id}},
                )
        if running:
            self._register_node(cluster, node)
        self._publish(events)
        self._launch_step(arn, group_name)

    def _update_continuous(
        self, cluster: HpCluster, specs: list[dict[str, Any]], to_delete: list[str], params: dict[str, Any]
    ) -> None:
        """UpdateCluster of a continuous cluster: it stays InService; changed counts are a Scaling operation."""
        events: list[ClusterEvent] = []
        removed: list[HpNode] = []
        added: list[str] = []
        with self._lock:
            changes: list[tuple[HpGroup, int]] = []
            for spec in specs:
                group = cluster.groups.get(spec["InstanceGroupName"])
                if group is None:
                    group = HpGroup(dict(spec))
                    cluster.groups[group.name] = group
                    added.append(group.name)
                    changes.append((group, 0))
                    continue
                previous = group.target
                group.spec = dict(spec)
                if group.target != previous:
                    changes.append((group, previous))
                while len(group.nodes) > group.target:
                    pending = [n for n in group.nodes if n.status == "Pending"]
                    victim = pending[-1] if pending else group.nodes[-1]
                    group.nodes.remove(victim)
                    removed.append(victim)
            for name in to_delete:
                cluster.groups[name].status = "Deleting"
            if "NodeRecovery" in params:
                cluster.request["NodeRecovery"] = params["NodeRecovery"]
            if changes:
                self._start_scaling(cluster, changes, events)
            generation = cluster.generation
        self._publish(events)
        for node in removed:
            self._deregister_node(cluster, node)
        for name in to_delete:
            self.clock.call_later(
                GROUP_READY_SECONDS, functools.partial(self._group_gone, cluster.arn, generation, name)
            )
        for name in added:
            self.clock.call_later(
                GROUP_READY_SECONDS, functools.partial(self._group_ready, cluster.arn, generation, name)
            )
        for name in list(cluster.groups):
            if name not in added:
                self._ensure_launching(cluster, name)

    def _group_ready(self, arn: str, generation: int, name: str) -> None:
        events: list[ClusterEvent] = []
        with self._lock:
            cluster = self._clusters.get(arn)
            group = cluster.groups.get(name) if cluster is not None else None
            if cluster is None or group is None or cluster.generation != generation or group.status != "Creating":
                return
            group.status = "InService"
            self._event(
                cluster,
                events,
                "InstanceGroup",
                f"InstanceGroup {name} in Cluster {cluster.name} is InService",
                group=name,
            )
        self._publish(events)
        self._ensure_launching(cluster, name)

    def _group_gone(self, arn: str, generation: int, name: str) -> None:
        with self._lock:
            cluster = self._clusters.get(arn)
            if cluster is None or cluster.generation != generation:
                return
            group = cluster.groups.get(name)
            if group is None or group.status != "Deleting":
                return
            del cluster.groups[name]
        for node in group.nodes:
            self._deregister_node(cluster, node)

    # -- cluster events and operations -----------------------------------------------------------
    def _continuous_cluster(self, name_or_arn: str) -> HpCluster:
        cluster = self._find(name_or_arn)
        if not cluster.continuous:
            raise AwsError(
                "ValidationException",
                f"Cluster {cluster.name} does not use NodeProvisioningMode Continuous; cluster events and "
                "operations are available only for clusters that do",
            )
        return cluster

    def list_cluster_events(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListClusterEvents (continuous clusters): filters, SortOrder (default Descending), paging."""
        cluster = self._continuous_cluster(req.params["ClusterName"])
        with self._lock:
            events = list(cluster.events)
        return list_events(events, req.params)

    def describe_cluster_event(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeClusterEvent: the event's ``ClusterEventDetail`` (ResourceNotFound when unknown)."""
        cluster = self._continuous_cluster(req.params["ClusterName"])
        with self._lock:
            event = next((e for e in cluster.events if e.event_id == req.params["EventId"]), None)
        if event is None:
            raise AwsError("ResourceNotFound", f"Event {req.params['EventId']} not found in cluster {cluster.name}")
        return {"EventDetails": event.detail()}

    def list_cluster_operations(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListClusterOperations (continuous clusters): filters, SortOrder (default Descending), paging."""
        cluster = self._continuous_cluster(req.params["ClusterName"])
        with self._lock:
            return list_operations(list(cluster.operations), req.params)

    def describe_cluster_operation(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeClusterOperation: summary plus ScalingDetails (ResourceNotFound when unknown)."""
        cluster = self._continuous_cluster(req.params["ClusterName"])
        with self._lock:
            operation = next((o for o in cluster.operations if o.operation_id == req.params["OperationId"]), None)
            if operation is None:
                raise AwsError(
                    "ResourceNotFound", f"Operation {req.params['OperationId']} not found in cluster {cluster.name}"
                )
            return operation.describe()

    def _fail(self, arn: str, generation: int, group_name: str | None, message: str) -> None:
        with self._lock:
            cluster = self._clusters.get(arn)
            if cluster is None or cluster.generation != generation or cluster.status not in ("Creating", "Updating"):
                return
            cluster.status = "Failed"
            cluster.failure_message = (
                f"Instance group {group_name} failed to provision. {message}" if group_name else message
            )
            for group in cluster.groups.values():
                if group.name == group_name or group.status == "Creating":
                    group.status = "Failed" if group.name == group_name else group.status
            events: list[ClusterEvent] = []
            if cluster.continuous:
                self._event(
                    cluster,
                    events,
                    "Cluster",
                    f"Cluster {cluster.name} creation failed",
                    level="Error",
                    metadata={"Cluster": {"FailureMessage": cluster.failure_message}},
                )
                for operation in cluster.operations:
                    for detail in operation.details:
                        if detail.status == "InProgress":
                            detail.status = "Done"
        self._publish(events)
        self._emit_state(cluster)

    def _in_service(self, arn: str, generation: int) -> None:
        with self._lock:
            cluster = self._clusters.get(arn)
            if cluster is None or cluster.generation != generation:
                return
            if cluster.status not in ("Creating", "Updating", "SystemUpdating"):
                return
            for group in cluster.groups.values():
                if group.status == "SystemUpdating":
                    _finish_software_update(group)
            if cluster.continuous:  # after a software update: launches go on through the launch loops
                for group in cluster.groups.values():
                    if group.status == "SystemUpdating":
                        group.status = "InService"
                cluster.status = "InService"
        if cluster.continuous:
            self._emit_state(cluster)
            for name in list(cluster.groups):
                self._ensure_launching(cluster, name)
            return
        with self._lock:
            added: list[HpNode] = []
            removed: list[HpNode] = []
            for group in cluster.groups.values():
                if group.status == "Deleting":
                    continue
                while len(group.nodes) < group.target:
                    node = self._new_node(cluster, group)
                    group.nodes.append(node)
                    added.append(node)
                while len(group.nodes) > group.target:
                    removed.append(group.nodes.pop())
                group.status = "InService"
            for name in [n for n, g in cluster.groups.items() if g.status == "Deleting"]:
                removed.extend(cluster.groups.pop(name).nodes)
            cluster.status = "InService"
            cluster.failure_message = None
        for node in added:
            self._register_node(cluster, node)
        for node in removed:
            self._deregister_node(cluster, node)
        self._emit_state(cluster)

    def _instance_id(self) -> str:
        return "i-" + "".join(self._rng.choice("0123456789abcdef") for _ in range(17))

    def _new_node(self, cluster: HpCluster, group: HpGroup) -> HpNode:
        vpc = group.spec.get("OverrideVpcConfig") or cluster.request.get("VpcConfig") or {}
        subnets = list(vpc.get("Subnets") or [])
        subnet_id = subnets[len(group.nodes) % len(subnets)] if subnets else ""
        subnet = backends.subnet(self.account_id, self.region, subnet_id) if subnet_id else None
        zone = subnet.availability_zone if subnet is not None else f"{self.region}a"
        ip = "10.0.0.10"
        if subnet is not None:
            network = ipaddress.ip_network(subnet.cidr_block, strict=False)
            ip = str(network.network_address + self._rng.randrange(4, max(5, network.num_addresses - 2)))
        node = HpNode(
            instance_id=self._instance_id(),
            group=group.name,
            instance_type=_instance_type(group.spec),
            launch_time=self.clock.now(),
            subnet_id=subnet_id,
            zone=zone,
            zone_id=backends.zone_id(self.account_id, self.region, zone) or zone,
            ip=ip,
        )
        if group.logical_ids:
            node.logical_id = group.logical_ids.pop(0)
        return node

    def _node_object(self, cluster: HpCluster, group: HpGroup, node: HpNode) -> dict[str, Any]:
        shape = node_shape(node.instance_type)
        kube_config = group.spec.get("KubernetesConfig") or {}
        labels = {
            **(kube_config.get("Labels") or {}),
            "kubernetes.io/hostname": node.node_name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/instance-type": node.instance_type,
            "node.kubernetes.io/instance-type": node.instance_type,
            "topology.kubernetes.io/region": self.region,
            "topology.kubernetes.io/zone": node.zone,
            "topology.k8s.aws/zone-id": node.zone_id,
            "sagemaker.amazonaws.com/cluster-name": cluster.name,
            "sagemaker.amazonaws.com/instance-group-name": group.name,
            "sagemaker.amazonaws.com/compute-type": "hyperpod",
            "sagemaker.amazonaws.com/node-health-status": node.health,
            "sagemaker.amazonaws.com/deep-health-check-status": "Passed"
            if group.spec.get("OnStartDeepHealthChecks")
            else "NotApplicable",
        }
        if shape.gpus:
            labels["nvidia.com/gpu.count"] = str(shape.gpus)
        taints = [
            {"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]}
            for t in kube_config.get("Taints") or []
        ]
        now = _iso(self.clock.now())
        kubelet = f"v{self._eks_version(cluster)}.0-eks-1a2b3c4"
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node.node_name,
                "labels": labels,
                "annotations": {"alpha.kubernetes.io/provided-node-ip": node.ip},
            },
            "spec": {
                "providerID": f"aws:///{node.zone}/{node.instance_id}",
                **({"taints": taints} if taints else {}),
            },
            "status": {
                "capacity": shape.capacity(),
                "allocatable": shape.allocatable(),
                "conditions": [
                    {
                        "type": t,
                        "status": "False",
                        "reason": f"Kubelet{r}",
                        "message": m,
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                    for t, r, m in (
                        ("MemoryPressure", "HasSufficientMemory", "kubelet has sufficient memory available"),
                        ("DiskPressure", "HasNoDiskPressure", "kubelet has no disk pressure"),
                        ("PIDPressure", "HasSufficientPID", "kubelet has sufficient PID available"),
                    )
                ]
                + [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
                "addresses": [
                    {"type": "InternalIP", "address": node.ip},
                    {"type": "InternalDNS", "address": node.dns},
                    {"type": "Hostname", "address": node.dns},
                ],
                "nodeInfo": {
                    "architecture": "amd64",
                    "operatingSystem": "linux",
                    "osImage": "Amazon Linux 2023",
                    "kernelVersion": "6.1.134-152.225.amzn2023.x86_64",
                    "containerRuntimeVersion": "containerd://1.7.27",
                    "kubeletVersion": kubelet,
                    "kubeProxyVersion": kubelet,
                    "machineID": uuid.uuid4().hex,
                    "systemUUID": str(uuid.uuid4()),
                    "bootID": str(uuid.uuid4()),
                },
            },
        }

    def _eks_version(self, cluster: HpCluster) -> str:
        eks = backends.eks(self.account_id, self.region).clusters.get(cluster.eks_name or "")
        return str(getattr(eks, "version", "1.33"))

    def _kube(self, cluster: HpCluster) -> Any | None:
        if not cluster.eks_name:
            return None
        try:
            return self.kube.cluster(cluster.eks_name)
        except Exception:  # noqa: BLE001 - the EKS cluster's Kubernetes API may be gone
            log.warning("no Kubernetes API for EKS cluster %s", cluster.eks_name)
            return None

    def _register_node(self, cluster: HpCluster, node: HpNode) -> None:
        kube = self._kube(cluster)
        group = cluster.groups.get(node.group)
        if kube is None or group is None:
            return
        obj = self._node_object(cluster, group, node)
        try:
            kube.apply(obj, field_manager="sagemaker")
        except Exception:
            log.exception("registering node %s failed", node.node_name)
            return
        _write_status(kube, obj)

    def _deregister_node(self, cluster: HpCluster, node: HpNode) -> None:
        kube = self._kube(cluster)
        if kube is None:
            return
        try:
            kube.delete("v1", "Node", node.node_name)
        except Exception:
            log.debug("deleting node %s failed", node.node_name, exc_info=True)

    def _group_dict(self, cluster: HpCluster, group: HpGroup) -> dict[str, Any]:
        spec = group.spec
        out: dict[str, Any] = {
            "CurrentCount": sum(1 for n in group.nodes if n.status == "Running"),
            "TargetCount": group.target,
            "InstanceGroupName": group.name,
            "InstanceType": spec.get("InstanceType"),
            "ExecutionRole": spec.get("ExecutionRole"),
            "ThreadsPerCore": spec.get("ThreadsPerCore", 1),
            "InstanceStorageConfigs": spec.get("InstanceStorageConfigs", []),
            "Status": group.status,
        }
        if spec.get("MinInstanceCount") is not None:
            out["MinCount"] = spec["MinInstanceCount"]
        scaling = sum(
            1 for o in cluster.operations for d in o.details if d.group == group.name and d.status == "InProgress"
        )
        if scaling:
            out["ActiveOperations"] = {"Scaling": scaling}
        for key in (
            "LifeCycleConfig",
            "OnStartDeepHealthChecks",
            "TrainingPlanArn",
            "OverrideVpcConfig",
            "ScheduledUpdateConfig",
            "CapacityRequirements",
            "NetworkInterface",
        ):
            if spec.get(key) is not None:
                out[key] = spec[key]
        if spec.get("ImageId"):
            out["CurrentImageId"] = spec["ImageId"]
        if spec.get("ImageId") or group.desired_image:
            out["DesiredImageId"] = group.desired_image or spec["ImageId"]
        if group.software_update is not None:
            out["SoftwareUpdateStatus"] = group.software_update
        if spec.get("TrainingPlanArn"):
            out["TrainingPlanStatus"] = "Active"
        if spec.get("InstanceRequirements"):
            types = list(spec["InstanceRequirements"].get("InstanceTypes") or [])
            out["InstanceRequirements"] = {"CurrentInstanceTypes": types, "DesiredInstanceTypes": types}
        kube_config = spec.get("KubernetesConfig")
        if kube_config is not None:
            out["KubernetesConfig"] = {
                "CurrentLabels": kube_config.get("Labels") or {},
                "DesiredLabels": kube_config.get("Labels") or {},
                "CurrentTaints": kube_config.get("Taints") or [],
                "DesiredTaints": kube_config.get("Taints") or [],
            }
        return out

    def describe(self, cluster: HpCluster) -> dict[str, Any]:
        """DescribeCluster's answer for ``cluster``."""
        with self._lock:
            request = cluster.request
            out: dict[str, Any] = {
                "ClusterArn": cluster.arn,
                "ClusterName": cluster.name,
                "ClusterStatus": cluster.status,
                "CreationTime": cluster.created_at,
                "InstanceGroups": [self._group_dict(cluster, g) for g in cluster.groups.values()],
                "NodeRecovery": request.get("NodeRecovery", "Automatic"),
            }
            if cluster.failure_message:
                out["FailureMessage"] = cluster.failure_message
            for key in (
                "VpcConfig",
                "Orchestrator",
                "NodeProvisioningMode",
                "TieredStorageConfig",
                "ClusterRole",
            ):
                if request.get(key) is not None:
                    out[key] = request[key]
            if request.get("AutoScaling"):
                out["AutoScaling"] = {
                    **request["AutoScaling"],
                    "Status": "InService" if cluster.status == "InService" else "Creating",
                }
            return out

    def _emit_state(self, cluster: HpCluster) -> None:
        """Emit "SageMaker HyperPod Cluster State Change": DescribeCluster's answer as AWS's EventBridge reference
        shows it (``CreationTime`` in epoch milliseconds, ``FailureMessage`` always there, empty without a failure)."""
        if not self.state_change_events:
            return
        detail = self.describe(cluster)
        detail["CreationTime"] = int(detail["CreationTime"] * 1000)
        detail.setdefault("FailureMessage", "")
        self.emit("aws.sagemaker", EVENT_DETAIL_TYPE, detail, [cluster.arn])

    def describe_cluster(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeCluster (by name or ARN)."""
        return self.describe(self._find(req.params["ClusterName"]))

    def list_clusters(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListClusters with NameContains, CreationTime filters, sorting and paging."""
        params = req.params
        with self._lock:
            clusters = list(self._clusters.values())
        if params.get("NameContains"):
            clusters = [c for c in clusters if params["NameContains"] in c.name]
        if params.get("CreationTimeAfter") is not None:
            clusters = [c for c in clusters if c.created_at > float(params["CreationTimeAfter"])]
        if params.get("CreationTimeBefore") is not None:
            clusters = [c for c in clusters if c.created_at < float(params["CreationTimeBefore"])]
        if params.get("TrainingPlanArn"):
            clusters = [
                c
                for c in clusters
                if any(g.spec.get("TrainingPlanArn") == params["TrainingPlanArn"] for g in c.groups.values())
            ]
        by_name = params.get("SortBy") == "NAME"
        clusters.sort(
            key=lambda c: c.name if by_name else c.created_at,
            reverse=params.get("SortOrder", "Descending") == "Descending",
        )
        summaries = [
            {
                "ClusterArn": c.arn,
                "ClusterName": c.name,
                "CreationTime": c.created_at,
                "ClusterStatus": c.status,
                "TrainingPlanArns": sorted(
                    {g.spec["TrainingPlanArn"] for g in c.groups.values() if g.spec.get("TrainingPlanArn")}
                ),
            }
            for c in clusters
        ]
        page, token = _page(summaries, params)
        return {"ClusterSummaries": page, **({"NextToken": token} if token else {})}

    def delete_cluster(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DeleteCluster: Deleting ~300 s, then gone with its Kubernetes nodes; refused (ValidationException) while a
        :attr:`delete_checks` check objects (task governance resources left)."""
        cluster = self._find(req.params["ClusterName"])
        if cluster.status != "Deleting":
            for check in self.delete_checks:
                refusal = check(cluster.arn)
                if refusal:
                    raise AwsError("ValidationException", refusal)
        with self._lock:
            if cluster.status == "Deleting":
                return {"ClusterArn": cluster.arn}
            cluster.status = "Deleting"
            cluster.generation += 1
            generation = cluster.generation
            for group in cluster.groups.values():
                group.status = "Deleting"
        self._emit_state(cluster)
        self.clock.call_later(DELETE_SECONDS, lambda: self._gone(cluster.arn, generation))
        return {"ClusterArn": cluster.arn}

    def _gone(self, arn: str, generation: int) -> None:
        with self._lock:
            cluster = self._clusters.get(arn)
            if cluster is None or cluster.generation != generation:
                return
            del self._clusters[arn]
            nodes = [n for g in cluster.groups.values() for n in g.nodes]
        for node in nodes:
            self._deregister_node(cluster, node)

    def update_cluster(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """UpdateCluster: whole group specifications + InstanceGroupsToDelete; Updating -> InService."""
        params = req.params
        cluster = self._find(params["ClusterName"])
        with self._lock:
            if cluster.status != "InService":
                raise AwsError(
                    "ValidationException",
                    f"Cluster {cluster.name} is in {cluster.status} status; it can be updated only when InService",
                )
        eks_vpc = None
        if cluster.eks_name:
            eks = backends.eks(self.account_id, self.region).clusters.get(cluster.eks_name)
            eks_vpc = (getattr(eks, "resources_vpc_config", None) or {}).get("vpcId") if eks else None
        specs = list(params.get("InstanceGroups") or [])
        for index, spec in enumerate(specs):
            self._validate_group(spec, index, eks_vpc)
        to_delete = list(params.get("InstanceGroupsToDelete") or [])
        for name in to_delete:
            if name not in cluster.groups:
                raise AwsError("ValidationException", f"Instance group {name} does not exist in cluster {cluster.name}")
        if "TieredStorageConfig" in params:
            self._validate_tiered_storage(params["TieredStorageConfig"], bool(cluster.eks_name))
            with self._lock:
                cluster.request["TieredStorageConfig"] = dict(params["TieredStorageConfig"])
        if cluster.continuous:
            self._update_continuous(cluster, specs, to_delete, params)
            return {"ClusterArn": cluster.arn}
        zone, others = self._zones(cluster.request, specs[0]) if specs else ("", "")
        failure = self.faults.take_capacity_failure([_instance_type(s) for s in specs], zone, others)
        with self._lock:
            biggest_change = 0
            for spec in specs:
                group = cluster.groups.get(spec["InstanceGroupName"])
                if group is None:
                    cluster.groups[spec["InstanceGroupName"]] = HpGroup(dict(spec))
                    biggest_change = max(biggest_change, int(spec.get("InstanceCount", 0)))
                else:
                    biggest_change = max(biggest_change, abs(int(spec.get("InstanceCount", 0)) - len(group.nodes)))
                    group.spec = dict(spec)
                    group.status = "Updating"
            for name in to_delete:
                cluster.groups[name].status = "Deleting"
            if "NodeRecovery" in params:
                cluster.request["NodeRecovery"] = params["NodeRecovery"]
            cluster.status = "Updating"
            cluster.generation += 1
            generation = cluster.generation
        self._emit_state(cluster)
        duration = min(1200.0, UPDATE_BASE_SECONDS + 60 * biggest_change)
        if failure is not None:
            failing = next((s for s in specs if self._failing_type(s, failure)), None)
            name = failing["InstanceGroupName"] if failing else None
            self.clock.call_later(duration / 2, lambda: self._fail(cluster.arn, generation, name, failure))
        else:
            self.clock.call_later(duration, lambda: self._in_service(cluster.arn, generation))
        return {"ClusterArn": cluster.arn}

    def update_cluster_software(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """UpdateClusterSoftware: SystemUpdating for ~15 minutes, then InService.

        Each updated group reports ``SoftwareUpdateStatus`` InProgress, then Succeeded, and, when ``ImageId``
        names an AMI, ``DesiredImageId`` at once and ``CurrentImageId`` once the update ends.
        """
        params = req.params
        cluster = self._find(params["ClusterName"])
        with self._lock:
            if cluster.status != "InService":
                raise AwsError(
                    "ValidationException",
                    f"Cluster {cluster.name} is in {cluster.status} status; software can be updated only when "
                    "InService",
                )
            names = [g["InstanceGroupName"] for g in params.get("InstanceGroups") or []] or list(cluster.groups)
            for name in names:
                if name not in cluster.groups:
                    raise AwsError("ValidationException", f"Instance group {name} does not exist")
            for name in names:
                group = cluster.groups[name]
                group.status = "SystemUpdating"
                group.software_update = "InProgress"
                if params.get("ImageId") and params["ImageId"] != "default":
                    group.desired_image = params["ImageId"]
            cluster.status = "SystemUpdating"
            cluster.generation += 1
            generation = cluster.generation
        self._emit_state(cluster)
        self.clock.call_later(SOFTWARE_UPDATE_SECONDS, lambda: self._in_service(cluster.arn, generation))
        return {"ClusterArn": cluster.arn}

    def _node_summary(self, node: HpNode) -> dict[str, Any]:
        return {
            "InstanceGroupName": node.group,
            "InstanceId": node.instance_id,
            "NodeLogicalId": node.logical_id,
            "InstanceType": node.instance_type,
            "LaunchTime": node.launch_time,
            "InstanceStatus": {"Status": node.status, "Message": node.status_message},
            "PrivateDnsHostname": node.dns,
        }

    def list_cluster_nodes(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListClusterNodes."""
        params = req.params
        cluster = self._find(params["ClusterName"])
        with self._lock:
            nodes = [n for g in cluster.groups.values() for n in g.nodes]
        if params.get("InstanceGroupNameContains"):
            nodes = [n for n in nodes if params["InstanceGroupNameContains"] in n.group]
        if params.get("CreationTimeAfter") is not None:
            nodes = [n for n in nodes if n.launch_time > float(params["CreationTimeAfter"])]
        if params.get("CreationTimeBefore") is not None:
            nodes = [n for n in nodes if n.launch_time < float(params["CreationTimeBefore"])]
        by_name = params.get("SortBy") == "NAME"
        nodes.sort(
            key=lambda n: n.instance_id if by_name else n.launch_time,
            reverse=params.get("SortOrder", "Ascending") == "Descending",
        )
        page, token = _page([self._node_summary(n) for n in nodes], params)
        return {"ClusterNodeSummaries": page, **({"NextToken": token} if token else {})}

    def describe_cluster_node(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeClusterNode (NodeId is the instance id)."""
        cluster = self._find(req.params["ClusterName"])
        node_id = req.params.get("NodeId") or req.params.get("NodeLogicalId")
        with self._lock:
            for group in cluster.groups.values():
                for node in group.nodes:
                    if node_id in (node.instance_id, node.logical_id):
                        details = self._node_summary(node)
                        details.update(
                            {
                                "ThreadsPerCore": group.spec.get("ThreadsPerCore", 1),
                                "InstanceStorageConfigs": group.spec.get("InstanceStorageConfigs", []),
                                "PrivatePrimaryIp": node.ip,
                                "Placement": {
                                    "AvailabilityZone": node.zone,
                                    "AvailabilityZoneId": node.zone_id,
                                },
                            }
                        )
                        for key in ("LifeCycleConfig", "OverrideVpcConfig"):
                            if group.spec.get(key):
                                details[key] = group.spec[key]
                        if group.spec.get("CapacityRequirements"):
                            details["CapacityType"] = (
                                "Spot" if "Spot" in group.spec["CapacityRequirements"] else "OnDemand"
                            )
                        return {"NodeDetails": details}
        raise AwsError("ResourceNotFound", f"Node {node_id} not found in cluster {cluster.name}")

    def report_node_health(
        self,
        cluster_name_or_arn: str,
        instance_id: str,
        health_status: str = "Unschedulable",
        reason: str = "GPU health check failed",
        repair_action: str = "Replace",
        recommendation: str = "The node will be replaced automatically.",
    ) -> None:
        """Simulate a node health finding: relabel the Kubernetes node and emit the AWS event.

        Sets ``sagemaker.amazonaws.com/node-health-status`` (e.g. ``Unschedulable``,
        ``UnschedulablePendingReplacement``, ``UnschedulablePendingReboot``, ``Schedulable``) on the
        node and emits "SageMaker HyperPod Cluster Node Health Event" with
        ``detail{ClusterName, ClusterArn, InstanceId, Tags (the cluster's, a map), HealthSummary{...}}``.

        Raises:
            AwsError: ResourceNotFound when the cluster or the instance is unknown.
        """
        cluster = self._find(cluster_name_or_arn)
        with self._lock:
            found = [(g, n) for g in cluster.groups.values() for n in g.nodes if n.instance_id == instance_id]
            if not found:
                raise AwsError("ResourceNotFound", f"Node {instance_id} not found in cluster {cluster.name}")
            group, node = found[0]
            node.health = health_status
            obj = self._node_object(cluster, group, node)
            tags = dict(cluster.tags)
        kube = self._kube(cluster)
        if kube is not None:
            obj.pop("status")
            try:
                kube.apply(obj, field_manager="sagemaker")
            except Exception:
                log.exception("relabelling node %s failed", node.node_name)
        self.emit(
            "aws.sagemaker",
            NODE_HEALTH_DETAIL_TYPE,
            {
                "ClusterName": cluster.name,
                "ClusterArn": cluster.arn,
                "InstanceId": instance_id,
                "Tags": tags,
                "HealthSummary": {
                    "HealthStatus": health_status,
                    "HealthStatusReason": reason,
                    "RepairAction": repair_action,
                    "Recommendation": recommendation,
                },
            },
            [cluster.arn],
        )

    # -- tags -------------------------------------------------------------------------------------
    def add_tags(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """AddTags for HyperPod cluster ARNs; other ARNs go to moto."""
        cluster = self._by_arn(req.params.get("ResourceArn", ""))
        if cluster is None:
            return forward()
        with self._lock:
            for tag in req.params.get("Tags") or []:
                cluster.tags[tag["Key"]] = tag["Value"]
        return {"Tags": req.params.get("Tags") or []}

    def list_tags(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """ListTags for HyperPod cluster ARNs; other ARNs go to moto."""
        cluster = self._by_arn(req.params.get("ResourceArn", ""))
        if cluster is None:
            return forward()
        with self._lock:
            return {"Tags": [{"Key": k, "Value": v} for k, v in cluster.tags.items()]}

    def delete_tags(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DeleteTags for HyperPod cluster ARNs; other ARNs go to moto."""
        cluster = self._by_arn(req.params.get("ResourceArn", ""))
        if cluster is None:
            return forward()
        with self._lock:
            for key in req.params.get("TagKeys") or []:
                cluster.tags.pop(key, None)
        return {}


def _instance_type(spec: dict[str, Any]) -> str:
    """The instance type a group launches (the first of ``InstanceRequirements`` for flexible groups)."""
    if spec.get("InstanceType"):
        return str(spec["InstanceType"])
    types = (spec.get("InstanceRequirements") or {}).get("InstanceTypes") or ["ml.m5.xlarge"]
    return str(types[0])


def _page(items: list[Any], params: dict[str, Any], default_max: int = 100) -> tuple[list[Any], str | None]:
    start = int(params.get("NextToken") or 0)
    end = start + int(params.get("MaxResults") or default_max)
    return items[start:end], (str(end) if end < len(items) else None)


def _write_status(kube: Any, obj: dict[str, Any]) -> None:
    """Make sure the Node's status is stored (server-side apply of the main resource may drop it)."""
    patch_status = getattr(kube, "patch_status", None)
    if patch_status is None:
        return
    try:
        patch_status("v1", "Node", obj["metadata"]["name"], None, obj["status"], field_manager="sagemaker")
    except Exception:
        log.debug("patch_status of node %s failed", obj["metadata"]["name"], exc_info=True)
