"""SageMaker HyperPod task governance: cluster scheduler configs (cluster policy) and compute quotas.

Operations (botocore ``sagemaker`` shapes): Create/Describe/Update/Delete/ListClusterSchedulerConfig(s)
and Create/Describe/Update/Delete/ListComputeQuota(s). Each resource is versioned
(``...Version`` starts at 1; Update needs ``TargetVersion`` equal to the current version, else
``ConflictException``; Describe with a version answers that version) and moves ``Creating`` ->
``Created``, ``Updating`` -> ``Updated`` after :data:`SETTLE_SECONDS`; Delete is ``Deleting`` and
then the resource is gone (``ResourceNotFound``).

Rules (botocore's ranges are checked server-side because botocore checks only minimums; the
rest is the harsher reading of the HyperPod documentation where the API reference is silent):

- the cluster must be an EKS-orchestrated HyperPod cluster whose EKS cluster has the
  ``amazon-sagemaker-hyperpod-taskgovernance`` add-on ACTIVE, else ``ValidationException``;
- one scheduler config per cluster and one compute quota per team per cluster
  (``ConflictException``); priority class names unique within a config.

What the task governance add-on materialises in the cluster's Kubernetes API once a resource is
Created/Updated (and removes on delete), with the names HyperPod uses:

- scheduler config: a Kueue ``WorkloadPriorityClass`` per priority class (``value`` = ``Weight``);
- compute quota for team T: Namespace ``hyperpod-ns-T``, a ``ResourceFlavor`` per instance type,
  ``ClusterQueue`` ``hyperpod-ns-T-clusterqueue`` (nominal quota = Count x the type's vCPU, memory and
  GPUs; fair-share weight; cohort ``shared-pool`` unless ``DontLend``) and ``LocalQueue``
  ``hyperpod-ns-T-localqueue`` in the namespace. A Disabled quota keeps its objects with a zero quota.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from instantstart_sandbox.aws.calls import IamTarget, ownership_tags, request_tags
from instantstart_sandbox.aws.instances import node_shape
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse

SETTLE_SECONDS = 30.0
"""Simulated seconds from Creating/Updating to Created/Updated."""
TASK_GOVERNANCE_ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
KUEUE = "kueue.x-k8s.io/v1beta1"
MANAGED_LABELS = {"app.kubernetes.io/managed-by": "sagemaker-hyperpod-task-governance"}
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_DNS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?$")

Handler = Callable[[AwsRequest, Callable[[], RawResponse]], Any]


@dataclass
class GovernanceResource:
    """A scheduler config (``kind`` = "scheduler") or a compute quota (``kind`` = "quota")."""

    kind: str
    id: str
    arn: str
    name: str
    cluster_arn: str
    body: dict[str, Any]  # SchedulerConfig | {ComputeQuotaConfig, ComputeQuotaTarget, ActivationState}
    description: str | None
    created_at: float
    modified_at: float
    status: str = "Creating"
    version: int = 1
    history: dict[int, dict[str, Any]] = field(default_factory=dict)
    tags: list[dict[str, str]] = field(default_factory=list)
    generation: int = 0


def _invalid(field_path: str, value: Any, constraint: str) -> AwsError:
    return AwsError(
        "ValidationException",
        f"1 validation error detected: Value '{value}' at '{field_path}' failed to satisfy constraint: {constraint}",
    )


def _range(field_path: str, value: Any, low: float, high: float) -> None:
    if value is None:
        return
    if value < low:
        raise _invalid(field_path, value, f"Member must have value greater than or equal to {low}")
    if value > high:
        raise _invalid(field_path, value, f"Member must have value less than or equal to {high}")


def _enum(field_path: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise _invalid(field_path, value, f"Member must satisfy enum value set: [{', '.join(allowed)}]")


class TaskGovernance:
    """The task governance operations of the sandbox (see module docstring). Thread-safe.

    Args:
        hyperpod: the HyperPod emulator (clusters by ARN, the clock, the Kubernetes API).
        addon_status: ``(eks_cluster, addon_name) -> status or None`` (the EKS emulator's).
    """

    def __init__(self, hyperpod: Any, addon_status: Callable[[str, str], str | None]) -> None:
        self.hyperpod = hyperpod
        self.clock = hyperpod.clock
        self.kube = hyperpod.kube
        self.addon_status = addon_status
        self._lock = threading.RLock()
        self._resources: dict[str, GovernanceResource] = {}

    def handlers(self) -> dict[str, Handler]:
        """Operation name -> handler."""
        return {
            "CreateClusterSchedulerConfig": lambda req, fwd: self._create("scheduler", req.params),
            "DescribeClusterSchedulerConfig": lambda req, fwd: self._describe("scheduler", req.params),
            "UpdateClusterSchedulerConfig": lambda req, fwd: self._update("scheduler", req.params),
            "DeleteClusterSchedulerConfig": lambda req, fwd: self._delete("scheduler", req.params),
            "ListClusterSchedulerConfigs": lambda req, fwd: self._list("scheduler", req.params),
            "CreateComputeQuota": lambda req, fwd: self._create("quota", req.params),
            "DescribeComputeQuota": lambda req, fwd: self._describe("quota", req.params),
            "UpdateComputeQuota": lambda req, fwd: self._update("quota", req.params),
            "DeleteComputeQuota": lambda req, fwd: self._delete("quota", req.params),
            "ListComputeQuotas": lambda req, fwd: self._list("quota", req.params),
        }

    # -- IAM targets (the IAM audit's condition evaluation) ---------------------------------------
    OPERATIONS = frozenset(
        {
            "CreateClusterSchedulerConfig",
            "UpdateClusterSchedulerConfig",
            "DeleteClusterSchedulerConfig",
            "CreateComputeQuota",
            "UpdateComputeQuota",
            "DeleteComputeQuota",
        }
    )
    """The task governance writes (their IAM targets: :meth:`iam_target`)."""

    def iam_target(self, operation: str, params: dict[str, Any]) -> IamTarget | None:
        """The scheduler config or compute quota IAM authorises for a write, with its ``instantstart:`` tags now
        (a create: the new resource's ARN pattern and the request's ``Tags``), or None."""
        scheduler = "SchedulerConfig" in operation
        if operation.startswith("Create"):
            kind = "cluster-scheduler-config" if scheduler else "compute-quota"
            arn = f"arn:aws:sagemaker:{self.hyperpod.region}:{self.hyperpod.account_id}:{kind}/(new)"
            return IamTarget(arn, (), request_tags(params.get("Tags")))
        key = "ClusterSchedulerConfigId" if scheduler else "ComputeQuotaId"
        with self._lock:
            found = self._resources.get(str(params.get(key) or ""))
            if found is None:
                return None
            tags = {t["Key"]: t["Value"] for t in found.tags}
            return IamTarget(found.arn, ownership_tags(tags))

    # -- validation --------------------------------------------------------------------------------
    def _cluster(self, cluster_arn: str) -> Any:
        cluster = self.hyperpod._by_arn(cluster_arn)
        if cluster is None:
            raise AwsError("ResourceNotFound", f"Cluster not found: {cluster_arn}")
        if not cluster.eks_name:
            raise AwsError("ValidationException", f"Cluster {cluster_arn} is not orchestrated by Amazon EKS")
        if self.addon_status(cluster.eks_name, TASK_GOVERNANCE_ADDON) != "ACTIVE":
            raise AwsError(
                "ValidationException",
                f"Task governance is not enabled for cluster {cluster_arn}: install the "
                f"{TASK_GOVERNANCE_ADDON} add-on on EKS cluster {cluster.eks_name} first",
            )
        return cluster

    @staticmethod
    def _validate_scheduler(config: dict[str, Any]) -> None:
        classes = list(config.get("PriorityClasses") or [])
        if len(classes) > 10:
            raise _invalid("schedulerConfig.priorityClasses", len(classes), "Member must have length <= 10")
        seen: set[str] = set()
        for index, pc in enumerate(classes):
            name = str(pc.get("Name") or "")
            if not _DNS.match(name):
                raise _invalid(
                    f"schedulerConfig.priorityClasses.{index + 1}.member.name",
                    name,
                    "Member must satisfy regular expression pattern: [a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?",
                )
            _range(f"schedulerConfig.priorityClasses.{index + 1}.member.weight", pc.get("Weight"), 0, 100)
            if name in seen:
                raise AwsError("ValidationException", f"Duplicate priority class name: {name}")
            seen.add(name)
        _enum("schedulerConfig.fairShare", config.get("FairShare"), ("Enabled", "Disabled"))
        _enum("schedulerConfig.idleResourceSharing", config.get("IdleResourceSharing"), ("Enabled", "Disabled"))

    @staticmethod
    def _validate_quota(body: dict[str, Any]) -> None:
        config = body.get("ComputeQuotaConfig") or {}
        resources = list(config.get("ComputeQuotaResources") or [])
        if len(resources) > 15:
            raise _invalid("computeQuotaConfig.computeQuotaResources", len(resources), "Member must have length <= 15")
        for index, resource in enumerate(resources):
            where = f"computeQuotaConfig.computeQuotaResources.{index + 1}.member"
            if not str(resource.get("InstanceType") or "").startswith("ml."):
                raise _invalid(f"{where}.instanceType", resource.get("InstanceType"), "Member must be an ml.* type")
            for key in ("Count", "Accelerators", "VCpu", "MemoryInGiB"):
                _range(f"{where}.{key[0].lower()}{key[1:]}", resource.get(key), 0, 10_000_000)
        sharing = config.get("ResourceSharingConfig") or {}
        if sharing:
            _enum(
                "computeQuotaConfig.resourceSharingConfig.strategy",
                sharing.get("Strategy"),
                ("Lend", "DontLend", "LendAndBorrow"),
            )
            _range("computeQuotaConfig.resourceSharingConfig.borrowLimit", sharing.get("BorrowLimit"), 0, 10_000)
        _enum("computeQuotaConfig.preemptTeamTasks", config.get("PreemptTeamTasks"), ("Never", "LowerPriority"))
        target = body.get("ComputeQuotaTarget") or {}
        team = str(target.get("TeamName") or "")
        if not _DNS.match(team):
            raise _invalid(
                "computeQuotaTarget.teamName",
                team,
                "Member must satisfy regular expression pattern: [a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?",
            )
        _range("computeQuotaTarget.fairShareWeight", target.get("FairShareWeight"), 0, 100)
        _enum("activationState", body.get("ActivationState"), ("Enabled", "Disabled"))

    # -- operations --------------------------------------------------------------------------------
    def _find(self, kind: str, resource_id: str) -> GovernanceResource:
        with self._lock:
            found = self._resources.get(resource_id)
        if found is None or found.kind != kind:
            what = "Cluster scheduler config" if kind == "scheduler" else "Compute quota"
            raise AwsError("ResourceNotFound", f"{what} {resource_id} not found")
        return found

    def _create(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("Name") or "")
        if not _NAME.match(name):
            raise _invalid(
                "name", name, "Member must satisfy regular expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
            )
        cluster_arn = str(params.get("ClusterArn") or "")
        if kind == "scheduler":
            body = dict(params.get("SchedulerConfig") or {})
            self._validate_scheduler(body)
        else:
            body = {
                "ComputeQuotaConfig": dict(params.get("ComputeQuotaConfig") or {}),
                "ComputeQuotaTarget": dict(params.get("ComputeQuotaTarget") or {}),
                "ActivationState": params.get("ActivationState") or "Enabled",
            }
            self._validate_quota(body)
        cluster = self._cluster(cluster_arn)
        with self._lock:
            for other in self._resources.values():
                if other.kind != kind or other.cluster_arn != cluster.arn:
                    continue
                if kind == "scheduler":
                    raise AwsError(
                        "ConflictException",
                        f"Cluster {cluster.arn} already has a cluster scheduler config ({other.id})",
                    )
                if other.body["ComputeQuotaTarget"].get("TeamName") == body["ComputeQuotaTarget"]["TeamName"]:
                    raise AwsError(
                        "ConflictException",
                        f"Team {body['ComputeQuotaTarget']['TeamName']} already has a compute quota ({other.id})",
                    )
            resource_id = uuid.uuid4().hex[:12]
            kind_path = "cluster-scheduler-config" if kind == "scheduler" else "compute-quota"
            now = self.clock.now()
            resource = GovernanceResource(
                kind=kind,
                id=resource_id,
                arn=f"arn:aws:sagemaker:{self.hyperpod.region}:{self.hyperpod.account_id}:{kind_path}/{resource_id}",
                name=name,
                cluster_arn=cluster.arn,
                body=body,
                description=params.get("Description"),
                created_at=now,
                modified_at=now,
                tags=list(params.get("Tags") or []),
            )
            resource.history[1] = self._snapshot(resource)
            self._resources[resource_id] = resource
            generation = resource.generation
        self.clock.call_later(SETTLE_SECONDS, lambda: self._settle(resource_id, generation))
        if kind == "scheduler":
            return {"ClusterSchedulerConfigArn": resource.arn, "ClusterSchedulerConfigId": resource_id}
        return {"ComputeQuotaArn": resource.arn, "ComputeQuotaId": resource_id}

    def _update(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        key = "ClusterSchedulerConfigId" if kind == "scheduler" else "ComputeQuotaId"
        resource = self._find(kind, str(params.get(key) or ""))
        body = dict(resource.body)
        if kind == "scheduler" and "SchedulerConfig" in params:
            body = dict(params["SchedulerConfig"] or {})
            self._validate_scheduler(body)
        if kind == "quota":
            for member in ("ComputeQuotaConfig", "ComputeQuotaTarget", "ActivationState"):
                if member in params:
                    body[member] = params[member]
            if body["ComputeQuotaTarget"].get("TeamName") != resource.body["ComputeQuotaTarget"].get("TeamName"):
                raise AwsError("ValidationException", "ComputeQuotaTarget.TeamName cannot be changed")
            self._validate_quota(body)
        with self._lock:
            if resource.status in ("Creating", "Updating", "Deleting"):
                raise AwsError("ConflictException", f"{resource.id} is {resource.status}; retry when it settles")
            if params.get("TargetVersion") != resource.version:
                raise AwsError(
                    "ConflictException",
                    f"TargetVersion {params.get('TargetVersion')} does not match the current version "
                    f"{resource.version} of {resource.id}",
                )
            resource.body = body
            if "Description" in params:
                resource.description = params["Description"]
            resource.version += 1
            resource.status = "Updating"
            resource.modified_at = self.clock.now()
            resource.history[resource.version] = self._snapshot(resource)
            resource.generation += 1
            generation = resource.generation
        self.clock.call_later(SETTLE_SECONDS, lambda: self._settle(resource.id, generation))
        if kind == "scheduler":
            return {"ClusterSchedulerConfigArn": resource.arn, "ClusterSchedulerConfigVersion": resource.version}
        return {"ComputeQuotaArn": resource.arn, "ComputeQuotaVersion": resource.version}

    def _delete(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        key = "ClusterSchedulerConfigId" if kind == "scheduler" else "ComputeQuotaId"
        resource = self._find(kind, str(params.get(key) or ""))
        with self._lock:
            if resource.status != "Deleting":
                resource.status = "Deleting"
                resource.generation += 1
                generation = resource.generation
                self.clock.call_later(SETTLE_SECONDS, lambda: self._gone(resource.id, generation))
        return {}

    def _current(self, resource_id: str, generation: int) -> GovernanceResource | None:
        """The resource when it is still at ``generation`` (no later write superseded this timer), else None."""
        with self._lock:
            resource = self._resources.get(resource_id)
            return resource if resource is not None and resource.generation == generation else None

    def _settle(self, resource_id: str, generation: int) -> None:
        """Creating/Updating -> Created/Updated. The Kueue objects are written first, so whoever reads the new
        status also finds them."""
        resource = self._current(resource_id, generation)
        if resource is None:
            return
        self._materialise(resource)
        with self._lock:
            if self._current(resource_id, generation) is resource:
                resource.status = "Created" if resource.status == "Creating" else "Updated"
                resource.history[resource.version]["Status"] = resource.status

    def _gone(self, resource_id: str, generation: int) -> None:
        """Deleting -> gone. The Kueue objects are removed first, so whoever no longer lists the resource does not
        find them either."""
        resource = self._current(resource_id, generation)
        if resource is None:
            return
        self._remove_objects(resource)
        with self._lock:
            if self._current(resource_id, generation) is resource:
                del self._resources[resource_id]

    @staticmethod
    def _snapshot(resource: GovernanceResource) -> dict[str, Any]:
        return {"body": dict(resource.body), "Description": resource.description, "Status": resource.status}

    def _describe(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        key = "ClusterSchedulerConfigId" if kind == "scheduler" else "ComputeQuotaId"
        resource = self._find(kind, str(params.get(key) or ""))
        version_key = "ClusterSchedulerConfigVersion" if kind == "scheduler" else "ComputeQuotaVersion"
        with self._lock:
            version = params.get(version_key) or resource.version
            snapshot = resource.history.get(int(version))
            if snapshot is None:
                raise AwsError("ResourceNotFound", f"Version {version} of {resource.id} not found")
            status = resource.status if version == resource.version else snapshot["Status"]
            return self._view(resource, snapshot["body"], snapshot["Description"], int(version), status, True)

    def _view(
        self,
        resource: GovernanceResource,
        body: dict[str, Any],
        description: str | None,
        version: int,
        status: str,
        full: bool,
    ) -> dict[str, Any]:
        prefix = "ClusterSchedulerConfig" if resource.kind == "scheduler" else "ComputeQuota"
        out: dict[str, Any] = {
            f"{prefix}Arn": resource.arn,
            f"{prefix}Id": resource.id,
            "Name": resource.name,
            f"{prefix}Version": version,
            "Status": status,
            "ClusterArn": resource.cluster_arn,
            "CreationTime": resource.created_at,
            "LastModifiedTime": resource.modified_at,
        }
        if resource.kind == "scheduler":
            out["SchedulerConfig"] = body
        else:
            out.update(body)
        if full and description is not None:
            out["Description"] = description
        return out

    def _list(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            found = [r for r in self._resources.values() if r.kind == kind]
            views = []
            for r in found:
                if params.get("ClusterArn") and r.cluster_arn != params["ClusterArn"]:
                    continue
                if params.get("NameContains") and params["NameContains"] not in r.name:
                    continue
                if params.get("Status") and r.status != params["Status"]:
                    continue
                if params.get("CreatedAfter") is not None and r.created_at <= float(params["CreatedAfter"]):
                    continue
                if params.get("CreatedBefore") is not None and r.created_at >= float(params["CreatedBefore"]):
                    continue
                views.append(self._view(r, r.body, r.description, r.version, r.status, False))
        sort_key = {"Name": "Name", "Status": "Status", "ClusterArn": "ClusterArn"}.get(
            str(params.get("SortBy") or ""), "CreationTime"
        )
        views.sort(key=lambda v: v[sort_key], reverse=params.get("SortOrder", "Descending") == "Descending")
        start = int(params.get("NextToken") or 0)
        size = int(params.get("MaxResults") or 10)
        page = views[start : start + size]
        key = "ClusterSchedulerConfigSummaries" if kind == "scheduler" else "ComputeQuotaSummaries"
        out: dict[str, Any] = {key: page}
        if start + size < len(views):
            out["NextToken"] = str(start + size)
        return out

    # -- tags and the cluster's deletion -------------------------------------------------------------
    def list_tags(self, req: AwsRequest, forward: Callable[[], Any]) -> Any:
        """ListTags of a scheduler config or compute quota ARN (the tags given at creation); other ARNs: ``forward``."""
        arn = str(req.params.get("ResourceArn") or "")
        with self._lock:
            found = next((r for r in self._resources.values() if r.arn == arn), None)
            if found is not None:
                return {"Tags": [dict(t) for t in found.tags]}
        return forward()

    def refuse_cluster_delete(self, cluster_arn: str) -> str | None:
        """DeleteCluster's check: a refusal while the cluster has a scheduler config or compute quota (even Deleting).

        AWS does not document this; the sandbox models the harsher reading.
        """
        with self._lock:
            left = sorted(r.name for r in self._resources.values() if r.cluster_arn == cluster_arn)
        if not left:
            return None
        return (
            f"Cluster {cluster_arn} has task governance resources ({', '.join(left)}); delete its cluster scheduler "
            "config and compute quotas first"
        )

    # -- Kubernetes side ---------------------------------------------------------------------------
    def _kube(self, resource: GovernanceResource) -> Any | None:
        cluster = self.hyperpod._by_arn(resource.cluster_arn)
        if cluster is None or not cluster.eks_name:
            return None
        try:
            return self.kube.cluster(cluster.eks_name)
        except Exception:  # noqa: BLE001 - the EKS cluster's Kubernetes API is gone
            return None

    def objects(self, resource: GovernanceResource) -> list[dict[str, Any]]:
        """The Kubernetes objects the task governance add-on keeps for ``resource`` (apply order)."""
        labels = dict(MANAGED_LABELS)
        if resource.kind == "scheduler":
            return [
                {
                    "apiVersion": KUEUE,
                    "kind": "WorkloadPriorityClass",
                    "metadata": {"name": pc["Name"], "labels": labels},
                    "value": int(pc["Weight"]),
                    "description": f"HyperPod task governance priority class {pc['Name']}",
                }
                for pc in resource.body.get("PriorityClasses") or []
            ]
        team = resource.body["ComputeQuotaTarget"]["TeamName"]
        namespace = f"hyperpod-ns-{team}"
        config = resource.body.get("ComputeQuotaConfig") or {}
        enabled = resource.body.get("ActivationState", "Enabled") == "Enabled"
        flavors: list[dict[str, Any]] = []
        objects: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}}
        ]
        for item in config.get("ComputeQuotaResources") or []:
            instance_type = str(item["InstanceType"])
            shape = node_shape(instance_type)
            count = int(item.get("Count") or 0) if enabled else 0
            flavor = instance_type.replace(".", "-")
            objects.append(
                {
                    "apiVersion": KUEUE,
                    "kind": "ResourceFlavor",
                    "metadata": {"name": flavor, "labels": labels},
                    "spec": {"nodeLabels": {"node.kubernetes.io/instance-type": instance_type}},
                }
            )
            resources = [
                {"name": "cpu", "nominalQuota": count * shape.vcpus},
                {"name": "memory", "nominalQuota": f"{count * shape.memory_gib}Gi"},
            ]
            if shape.gpus:
                resources.append({"name": "nvidia.com/gpu", "nominalQuota": count * shape.gpus})
            flavors.append({"name": flavor, "resources": resources})
        spec: dict[str, Any] = {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}]
            if flavors
            else [],
            "fairSharing": {"weight": int((resource.body["ComputeQuotaTarget"]).get("FairShareWeight") or 0)},
            "preemption": {
                "withinClusterQueue": config.get("PreemptTeamTasks") or "LowerPriority",
            },
        }
        if (config.get("ResourceSharingConfig") or {}).get("Strategy", "LendAndBorrow") != "DontLend":
            spec["cohort"] = "shared-pool"
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "ClusterQueue",
                "metadata": {"name": f"{namespace}-clusterqueue", "labels": labels},
                "spec": spec,
            }
        )
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": f"{namespace}-localqueue", "namespace": namespace, "labels": labels},
                "spec": {"clusterQueue": f"{namespace}-clusterqueue"},
            }
        )
        return objects

    def _materialise(self, resource: GovernanceResource) -> None:
        kube = self._kube(resource)
        if kube is None:
            return
        wanted = self.objects(resource)
        if resource.kind == "scheduler":
            names = {o["metadata"]["name"] for o in wanted}
            for existing in kube.list(KUEUE, "WorkloadPriorityClass") or []:
                meta = existing.get("metadata", {})
                if (
                    meta.get("labels", {}).get("app.kubernetes.io/managed-by")
                    == MANAGED_LABELS["app.kubernetes.io/managed-by"]
                    and meta.get("name") not in names
                ):
                    kube.delete(KUEUE, "WorkloadPriorityClass", meta["name"])
        for obj in wanted:
            kube.apply(obj, field_manager="sagemaker-task-governance")

    def _remove_objects(self, resource: GovernanceResource) -> None:
        kube = self._kube(resource)
        if kube is None:
            return
        for obj in reversed(self.objects(resource)):
            if obj["kind"] == "ResourceFlavor":
                continue  # shared between teams' queues
            meta = obj["metadata"]
            try:
                kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            except Exception:  # noqa: BLE001 - already gone
                continue
