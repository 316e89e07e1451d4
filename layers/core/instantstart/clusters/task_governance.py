"""Task governance of a cluster: its scheduler config (cluster policy) and per-team compute quotas.

The API side reads and writes SageMaker's task governance resources of the cluster's HyperPod cluster
(``ClusterArn``). Every write:

1. needs a READY or DEGRADED cluster whose HyperPod cluster exists (:func:`governed_cluster`);
2. needs the ``amazon-sagemaker-hyperpod-taskgovernance`` add-on ACTIVE on the EKS cluster, checked with EKS
   ``DescribeAddon`` before SageMaker is called (:func:`require_task_governance`: 409 naming the feature
   ``taskGovernance`` and ``PATCH /clusters/{clusterTag}/features``); SageMaker's own refusal of the same kind is
   mapped to the same 409 with its message verbatim (:func:`sagemaker_call`);
3. carries a deterministic Name (:func:`instantstart.naming.scheduler_config_name`, ``compute_quota_name``) and
   the ownership tags, so a retried create finds what the first attempt made; resources without the ownership tags
   are shown (``managed: false``) but never changed or deleted;
4. passes ``TargetVersion`` on updates (the caller's ``targetVersion`` or the version just read): SageMaker's
   ``ConflictException`` becomes a 409 with AWS's message verbatim.

Writes answer at once with SageMaker's status (``Creating``/``Updating``/``Deleting``); the resource settles within
about a minute and ``GET`` shows ``Created``/``Updated`` or a ``*Failed`` status with ``FailureReason`` verbatim (see
docs/decisions.md). The delete workflow removes the resources it owns before the HyperPod cluster
(:func:`release_owned`, called by the ``hyperpod`` stage's teardown).

The use cases are here; the rules of a write are :mod:`instantstart.clusters.task_governance_rules`, the views
:mod:`instantstart.clusters.task_governance_views`, the SageMaker listings, ownership and teardown
:mod:`instantstart.clusters.task_governance_resources`. Every public name of those is importable from here too.

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateClusterSchedulerConfig.html,
API_UpdateClusterSchedulerConfig.html, API_CreateComputeQuota.html, API_UpdateComputeQuota.html,
API_DeleteComputeQuota.html; https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAddon.html.
"""

from __future__ import annotations

from typing import Any

from instantstart.clusters.task_governance_resources import (
    GONE_STATUSES,
    compute_quota_summaries,
    described_compute_quota,
    is_owned,
    release_owned,
    scheduler_config_summaries,
)
from instantstart.clusters.task_governance_rules import (
    WRITABLE,
    GovernedCluster,
    feature_not_enabled,
    governed_cluster,
    not_managed,
    require_task_governance,
    sagemaker_call,
)
from instantstart.clusters.task_governance_views import compute_quota_view, scheduler_config_view
from instantstart.errors import Conflict, NotFound, ValidationFailed
from instantstart.models.task_governance import (
    ComputeQuotaList,
    ComputeQuotaView,
    CreateComputeQuotaRequest,
    PutSchedulerConfigRequest,
    SchedulerConfigView,
    UpdateComputeQuotaRequest,
)
from instantstart.naming import (
    compute_quota_name,
    ownership_tags,
    scheduler_config_name,
    tag_list,
)
from instantstart.runtime import Runtime

__all__ = [
    "GONE_STATUSES",
    "WRITABLE",
    "GovernedCluster",
    "compute_quota_summaries",
    "compute_quota_view",
    "create_compute_quota",
    "delete_compute_quota",
    "feature_not_enabled",
    "get_compute_quota",
    "get_scheduler_config",
    "governed_cluster",
    "is_owned",
    "list_compute_quotas",
    "not_managed",
    "put_scheduler_config",
    "release_owned",
    "require_task_governance",
    "sagemaker_call",
    "scheduler_config_summaries",
    "scheduler_config_view",
    "update_compute_quota",
]


# -- scheduler config -----------------------------------------------------------------------------
def _current_scheduler_config(rt: Runtime, governed: GovernedCluster) -> tuple[dict[str, Any], bool] | None:
    sm = rt.client("sagemaker")
    summaries = scheduler_config_summaries(sm, governed.cluster_arn)
    if not summaries:
        return None
    summary = summaries[0]
    described = dict(sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=summary["ClusterSchedulerConfigId"]))
    return described, is_owned(sm, described["ClusterSchedulerConfigArn"], governed.record.cluster_tag)


def get_scheduler_config(rt: Runtime, tag: str) -> SchedulerConfigView:
    """The cluster's scheduler config (``ListClusterSchedulerConfigs`` + ``DescribeClusterSchedulerConfig``).

    Raises:
        NotFound: no live cluster, or no scheduler config (``SchedulerConfigNotFound``, naming the PUT route).
        Conflict: the HyperPod cluster does not exist.
    """
    governed = governed_cluster(rt, tag, write=False)
    current = sagemaker_call(
        rt, tag, "DescribeClusterSchedulerConfig", lambda sm: {"found": _current_scheduler_config(rt, governed)}
    )["found"]
    if current is None:
        raise NotFound(
            f"cluster '{tag}' has no scheduler config; create one with PUT /clusters/{tag}/scheduler-config",
            code="SchedulerConfigNotFound",
            details=[{"field": "clusterTag"}],
        )
    described, managed = current
    return scheduler_config_view(tag, described, managed)


def put_scheduler_config(rt: Runtime, tag: str, request: PutSchedulerConfigRequest) -> SchedulerConfigView:
    """Create the cluster's scheduler config, or replace the one this control plane created.

    ``CreateClusterSchedulerConfig`` (Name ``<tag>-scheduler-config``, ``ClusterArn``, ownership tags) when the
    cluster has none; else ``UpdateClusterSchedulerConfig`` with ``TargetVersion`` = ``request.target_version`` or
    the version just read. Answers the description right after the write (status ``Creating``/``Updating``).

    Raises:
        NotFound: no live cluster.
        Conflict: cluster not READY/DEGRADED, no HyperPod cluster, the add-on not ACTIVE (``FeatureNotEnabled``), a
            scheduler config not created here (``NotManaged``), or SageMaker's ``ConflictException`` (stale
            ``targetVersion``, still settling) verbatim.
        ValidationFailed: SageMaker refused a value (verbatim).
    """
    governed = governed_cluster(rt, tag, write=True)
    require_task_governance(rt, tag, governed.eks_cluster_name)
    current = sagemaker_call(
        rt, tag, "ListClusterSchedulerConfigs", lambda sm: {"found": _current_scheduler_config(rt, governed)}
    )["found"]
    config = request.scheduler_config.to_aws()
    if current is None:
        params: dict[str, Any] = {
            "Name": scheduler_config_name(tag),
            "ClusterArn": governed.cluster_arn,
            "SchedulerConfig": config,
            "Tags": tag_list(ownership_tags(tag)),
        }
        if request.description is not None:
            params["Description"] = request.description
        created = sagemaker_call(
            rt, tag, "CreateClusterSchedulerConfig", lambda sm: sm.create_cluster_scheduler_config(**params)
        )
        config_id = str(created["ClusterSchedulerConfigId"])
    else:
        described, managed = current
        if not managed:
            raise not_managed("scheduler config", str(described["Name"]), tag)
        config_id = str(described["ClusterSchedulerConfigId"])
        update: dict[str, Any] = {
            "ClusterSchedulerConfigId": config_id,
            "TargetVersion": request.target_version or int(described["ClusterSchedulerConfigVersion"]),
            "SchedulerConfig": config,
        }
        if request.description is not None:
            update["Description"] = request.description
        sagemaker_call(rt, tag, "UpdateClusterSchedulerConfig", lambda sm: sm.update_cluster_scheduler_config(**update))
    described = sagemaker_call(
        rt,
        tag,
        "DescribeClusterSchedulerConfig",
        lambda sm: sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id),
    )
    return scheduler_config_view(tag, described, True)


# -- compute quotas -------------------------------------------------------------------------------
def list_compute_quotas(rt: Runtime, tag: str) -> ComputeQuotaList:
    """The cluster's compute quotas, by name (``ListComputeQuotas`` + ``DescribeComputeQuota`` each).

    Raises:
        NotFound: no live cluster.
        Conflict: the HyperPod cluster does not exist.
    """
    governed = governed_cluster(rt, tag, write=False)

    def views(sm: Any) -> dict[str, Any]:
        out = []
        for summary in compute_quota_summaries(sm, governed.cluster_arn):
            described = described_compute_quota(sm, summary)
            if described is not None:
                out.append(compute_quota_view(tag, described, is_owned(sm, described["ComputeQuotaArn"], tag)))
        return {"views": sorted(out, key=lambda v: v.name)}

    return ComputeQuotaList(
        cluster_tag=tag, compute_quotas=sagemaker_call(rt, tag, "ListComputeQuotas", views)["views"]
    )


def _quota_by_name(rt: Runtime, tag: str, governed: GovernedCluster, name: str) -> tuple[dict[str, Any], bool]:
    def find(sm: Any) -> dict[str, Any]:
        for summary in compute_quota_summaries(sm, governed.cluster_arn):
            described = described_compute_quota(sm, summary) if summary.get("Name") == name else None
            if described is not None:
                return {"found": (described, is_owned(sm, described["ComputeQuotaArn"], tag))}
        return {"found": None}

    found = sagemaker_call(rt, tag, "ListComputeQuotas", find)["found"]
    if found is None:
        raise NotFound(
            f"compute quota '{name}' does not exist on cluster '{tag}' (see GET /clusters/{tag}/compute-quotas)",
            code="ComputeQuotaNotFound",
            details=[{"field": "computeQuotaName"}],
        )
    return found  # type: ignore[no-any-return]


def get_compute_quota(rt: Runtime, tag: str, name: str) -> ComputeQuotaView:
    """One compute quota by its SageMaker Name.

    Raises:
        NotFound: no live cluster, or no such quota (``ComputeQuotaNotFound``).
    """
    governed = governed_cluster(rt, tag, write=False)
    described, managed = _quota_by_name(rt, tag, governed, name)
    return compute_quota_view(tag, described, managed)


def _same_quota(described: dict[str, Any], params: dict[str, Any]) -> bool:
    """True when a described quota already is what a create asks (a retried create)."""
    return bool(
        described.get("ComputeQuotaConfig") == params["ComputeQuotaConfig"]
        and described.get("ComputeQuotaTarget") == params["ComputeQuotaTarget"]
        and (described.get("ActivationState") or "Enabled") == params["ActivationState"]
    )


def create_compute_quota(rt: Runtime, tag: str, request: CreateComputeQuotaRequest) -> ComputeQuotaView:
    """Create a team's compute quota: SageMaker ``CreateComputeQuota`` named ``<tag>-<teamName>``, ownership tags.

    A retried create that finds the same quota already made answers it without a write.

    Raises:
        NotFound: no live cluster.
        Conflict: cluster not READY/DEGRADED, no HyperPod cluster, the add-on not ACTIVE (``FeatureNotEnabled``), the
            name taken with other settings (``ComputeQuotaAlreadyExists``, naming the PATCH route), or SageMaker's
            ``ConflictException`` (the team already has a quota) verbatim.
        ValidationFailed: SageMaker refused a value (verbatim).
    """
    governed = governed_cluster(rt, tag, write=True)
    require_task_governance(rt, tag, governed.eks_cluster_name)
    team = request.compute_quota_target.team_name
    name = compute_quota_name(tag, team)
    params: dict[str, Any] = {
        "Name": name,
        "ClusterArn": governed.cluster_arn,
        "ComputeQuotaConfig": request.compute_quota_config.to_aws(),
        "ComputeQuotaTarget": request.compute_quota_target.to_aws(),
        "ActivationState": (request.activation_state.value if request.activation_state else "Enabled"),
        "Tags": tag_list(ownership_tags(tag)),
    }
    if request.description is not None:
        params["Description"] = request.description
    try:
        existing, managed = _quota_by_name(rt, tag, governed, name)
    except NotFound:
        existing, managed = {}, False
    if existing:
        if managed and _same_quota(existing, params):
            return compute_quota_view(tag, existing, managed)
        raise Conflict(
            f"compute quota '{name}' already exists on cluster '{tag}' with other settings; change it with PATCH "
            f"/clusters/{tag}/compute-quotas/{name}",
            code="ComputeQuotaAlreadyExists",
            details=[{"field": "computeQuotaTarget.teamName", "name": name}],
        )
    created = sagemaker_call(rt, tag, "CreateComputeQuota", lambda sm: sm.create_compute_quota(**params))
    described = sagemaker_call(
        rt, tag, "DescribeComputeQuota", lambda sm: sm.describe_compute_quota(ComputeQuotaId=created["ComputeQuotaId"])
    )
    return compute_quota_view(tag, described, True)


def update_compute_quota(rt: Runtime, tag: str, name: str, request: UpdateComputeQuotaRequest) -> ComputeQuotaView:
    """Change a quota this control plane created: SageMaker ``UpdateComputeQuota`` with only the members given and
    ``TargetVersion`` = ``request.target_version`` or the version just read.

    Raises:
        NotFound: no live cluster, or no such quota.
        Conflict: cluster not READY/DEGRADED, the add-on not ACTIVE, the quota not ours (``NotManaged``), a different
            ``teamName`` (``ImmutableField``), or SageMaker's ``ConflictException`` (stale version) verbatim.
        ValidationFailed: nothing to change, or SageMaker refused a value (verbatim).
    """
    governed = governed_cluster(rt, tag, write=True)
    require_task_governance(rt, tag, governed.eks_cluster_name)
    described, managed = _quota_by_name(rt, tag, governed, name)
    if not managed:
        raise not_managed("compute quota", name, tag)
    team = (described.get("ComputeQuotaTarget") or {}).get("TeamName")
    if request.compute_quota_target is not None and request.compute_quota_target.team_name != team:
        raise Conflict(
            f"computeQuotaTarget.teamName of compute quota '{name}' is '{team}' and cannot change; create a quota for "
            "the other team instead",
            code="ImmutableField",
            details=[{"field": "computeQuotaTarget.teamName", "current": team}],
        )
    update: dict[str, Any] = {
        "ComputeQuotaId": described["ComputeQuotaId"],
        "TargetVersion": request.target_version or int(described["ComputeQuotaVersion"]),
    }
    if request.compute_quota_config is not None:
        update["ComputeQuotaConfig"] = request.compute_quota_config.to_aws()
    if request.compute_quota_target is not None:
        update["ComputeQuotaTarget"] = request.compute_quota_target.to_aws()
    if request.activation_state is not None:
        update["ActivationState"] = request.activation_state.value
    if request.description is not None:
        update["Description"] = request.description
    if len(update) == 2:
        raise ValidationFailed(
            "nothing to change: give computeQuotaConfig, computeQuotaTarget, activationState and/or description",
            details=[
                {"field": f} for f in ("computeQuotaConfig", "computeQuotaTarget", "activationState", "description")
            ],
        )
    sagemaker_call(rt, tag, "UpdateComputeQuota", lambda sm: sm.update_compute_quota(**update))
    after = sagemaker_call(
        rt,
        tag,
        "DescribeComputeQuota",
        lambda sm: sm.describe_compute_quota(ComputeQuotaId=described["ComputeQuotaId"]),
    )
    return compute_quota_view(tag, after, True)


def delete_compute_quota(rt: Runtime, tag: str, name: str) -> ComputeQuotaView:
    """Delete a quota this control plane created (SageMaker ``DeleteComputeQuota``); answers it as ``Deleting``.

    Does not need the add-on (a quota can always be removed). Deleting a quota already Deleting calls nothing.

    Raises:
        NotFound: no live cluster, or no such quota.
        Conflict: cluster not READY/DEGRADED, or the quota not ours (``NotManaged``).
    """
    governed = governed_cluster(rt, tag, write=True)
    described, managed = _quota_by_name(rt, tag, governed, name)
    if not managed:
        raise not_managed("compute quota", name, tag)
    if described.get("Status") != "Deleting":
        sagemaker_call(
            rt,
            tag,
            "DeleteComputeQuota",
            lambda sm: sm.delete_compute_quota(ComputeQuotaId=described["ComputeQuotaId"]),
        )
    return compute_quota_view(tag, {**described, "Status": "Deleting"}, True)
