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

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateClusterSchedulerConfig.html,
API_UpdateClusterSchedulerConfig.html, API_CreateComputeQuota.html, API_UpdateComputeQuota.html,
API_DeleteComputeQuota.html; https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAddon.html.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import records
from instantstart.errors import Conflict, NotFound, UpstreamUnavailable, ValidationFailed
from instantstart.models.common import ClusterStatus, iso
from instantstart.models.records import ClusterRecord
from instantstart.models.task_governance import (
    TASK_GOVERNANCE_ADDON,
    TASK_GOVERNANCE_FEATURE,
    ComputeQuotaConfig,
    ComputeQuotaList,
    ComputeQuotaTarget,
    ComputeQuotaView,
    CreateComputeQuotaRequest,
    PutSchedulerConfigRequest,
    SchedulerConfig,
    SchedulerConfigView,
    UpdateComputeQuotaRequest,
)
from instantstart.naming import (
    compute_quota_name,
    owned_by,
    ownership_tags,
    scheduler_config_name,
    tag_list,
)
from instantstart.runtime import Runtime

WRITABLE = (ClusterStatus.READY, ClusterStatus.DEGRADED)
"""Cluster statuses in which task governance can change."""

GONE_STATUSES = ("Deleted",)
"""SageMaker statuses of a resource that no longer counts (a listing may still show it for a while)."""

_ADDON_REFUSAL_HINTS = ("task governance", "taskgovernance")
"""Words of a SageMaker ``ValidationException`` refusing a cluster without the task governance add-on."""


@dataclass(frozen=True)
class GovernedCluster:
    """A cluster whose task governance is read or changed.

    Attributes:
        record: the cluster record.
        cluster_arn: the HyperPod cluster's ARN (``ClusterArn`` of every task governance call).
        eks_cluster_name: the EKS cluster that runs the task governance add-on.
    """

    record: ClusterRecord
    cluster_arn: str
    eks_cluster_name: str


# -- rules ------------------------------------------------------------------------------------------
def feature_not_enabled(tag: str, status: str | None, aws_message: str | None = None) -> Conflict:
    """409 ``FeatureNotEnabled`` naming the ``taskGovernance`` feature and the route that turns it on."""
    seen = f"is {status}" if status else "is not installed"
    message = (
        f"task governance is not enabled on cluster '{tag}': the EKS add-on {TASK_GOVERNANCE_ADDON} {seen}. Turn on "
        f"the '{TASK_GOVERNANCE_FEATURE}' feature with PATCH /clusters/{tag}/features "
        f'{{"{TASK_GOVERNANCE_FEATURE}": {{"enabled": true}}}} and retry once it is ACTIVE'
    )
    if aws_message:
        message += f" (SageMaker: {aws_message})"
    return Conflict(
        message,
        code="FeatureNotEnabled",
        details=[
            {"field": TASK_GOVERNANCE_FEATURE, "status": status or "NOT_INSTALLED", "addonName": TASK_GOVERNANCE_ADDON}
        ],
    )


def governed_cluster(rt: Runtime, tag: str, *, write: bool) -> GovernedCluster:
    """The cluster and its HyperPod cluster ARN (SageMaker ``DescribeCluster``).

    Raises:
        NotFound: no live cluster (``ClusterNotFound``).
        Conflict: ``write`` and the cluster is not READY or DEGRADED (``ClusterNotReady``); the HyperPod cluster does
            not exist (``HyperPodClusterNotFound``).
    """
    record = records.live_cluster(rt, tag)
    if write and record.status not in WRITABLE:
        raise Conflict(
            f"cluster '{tag}' is {record.status.value}; task governance can change only on a READY or DEGRADED cluster",
            code="ClusterNotReady",
            details=[{"field": "clusterTag", "status": record.status.value}],
        )
    name = record.hyper_pod_cluster_name
    try:
        found = rt.client("sagemaker").describe_cluster(ClusterName=name)
    except ClientError as exc:
        if error_code(exc) in ("ResourceNotFound", "ValidationException"):
            raise Conflict(
                f"HyperPod cluster {name} of cluster '{tag}' does not exist; task governance needs it",
                code="HyperPodClusterNotFound",
                details=[{"field": "clusterTag"}],
            ) from exc
        raise UpstreamUnavailable(
            f"SageMaker DescribeCluster failed ({error_code(exc)}: {error_message(exc)})"
        ) from exc
    eks = record.eks_cluster_name
    return GovernedCluster(record=record, cluster_arn=str(found["ClusterArn"]), eks_cluster_name=eks)


def require_task_governance(rt: Runtime, tag: str, eks_cluster: str) -> None:
    """Refuse unless the task governance add-on is ACTIVE on ``eks_cluster`` (EKS ``DescribeAddon``).

    Raises:
        Conflict: ``FeatureNotEnabled`` (:func:`feature_not_enabled`) with the add-on's status.
        UpstreamUnavailable: EKS failed otherwise.
    """
    try:
        addon = rt.client("eks").describe_addon(clusterName=eks_cluster, addonName=TASK_GOVERNANCE_ADDON)["addon"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            raise feature_not_enabled(tag, None) from exc
        raise UpstreamUnavailable(f"EKS DescribeAddon failed ({error_code(exc)}: {error_message(exc)})") from exc
    status = str(addon.get("status") or "")
    if status != "ACTIVE":
        raise feature_not_enabled(tag, status)


def sagemaker_call(rt: Runtime, tag: str, operation: str, call: Callable[[Any], Any]) -> dict[str, Any]:
    """Run one SageMaker task governance call and map its refusals to the API's errors, messages verbatim.

    Raises:
        Conflict: ``ConflictException`` (a second policy or quota, a stale ``TargetVersion``, a resource still
            settling: code ``ConflictException``), ``ResourceLimitExceeded``, or a ``ValidationException`` about the
            task governance add-on (``FeatureNotEnabled``).
        ValidationFailed: any other ``ValidationException`` (422, SageMaker's message verbatim).
        NotFound: ``ResourceNotFound``.
        UpstreamUnavailable: anything else (throttling after retries, access denied, ...).
    """
    try:
        return dict(call(rt.client("sagemaker")) or {})
    except (ClientError, BotoCoreError) as exc:
        code, message = error_code(exc) or type(exc).__name__, error_message(exc)
        if code in ("ConflictException", "ResourceLimitExceeded"):
            raise Conflict(f"SageMaker {operation} refused: {message}", code=code) from exc
        if code == "ValidationException" and any(h in message.lower() for h in _ADDON_REFUSAL_HINTS):
            raise feature_not_enabled(tag, None, message) from exc
        if code == "ValidationException":
            raise ValidationFailed(f"SageMaker {operation} refused: {message}", code=code) from exc
        if code == "ResourceNotFound":
            raise NotFound(f"SageMaker {operation}: {message}", code=code) from exc
        raise UpstreamUnavailable(f"SageMaker {operation} failed ({code}: {message}); retry later") from exc


def _all_pages(method: Callable[..., Any], key: str, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        out = method(**params)
        items += list(out.get(key) or [])
        if not out.get("NextToken"):
            return items
        params["NextToken"] = out["NextToken"]


def scheduler_config_summaries(sm: Any, cluster_arn: str) -> list[dict[str, Any]]:
    """The cluster's scheduler configs not yet Deleted (SageMaker ``ListClusterSchedulerConfigs``, every page)."""
    found = _all_pages(
        sm.list_cluster_scheduler_configs, "ClusterSchedulerConfigSummaries", ClusterArn=cluster_arn, MaxResults=100
    )
    return [s for s in found if s.get("Status") not in GONE_STATUSES]


def compute_quota_summaries(sm: Any, cluster_arn: str) -> list[dict[str, Any]]:
    """The cluster's compute quotas not yet Deleted (SageMaker ``ListComputeQuotas``, every page)."""
    found = _all_pages(sm.list_compute_quotas, "ComputeQuotaSummaries", ClusterArn=cluster_arn, MaxResults=100)
    return [s for s in found if s.get("Status") not in GONE_STATUSES]


def is_owned(sm: Any, arn: str, tag: str) -> bool:
    """True when the resource carries this cluster's ownership tags (SageMaker ``ListTags``)."""
    return owned_by(_all_pages(sm.list_tags, "Tags", ResourceArn=arn), tag)


def _lenient(model: Any, value: Any) -> Any:
    """``model`` of an AWS member in API casing, or None when AWS holds something our rules would refuse."""
    if not value:
        return None
    try:
        return model.model_validate(_camel(value))
    except ValidationError:
        return None


def _camel(value: Any) -> Any:
    """AWS PascalCase members to the API's camelCase (``VCpu`` -> ``vCpu``, ``MemoryInGiB`` -> ``memoryInGiB``)."""
    if isinstance(value, dict):
        return {k[:1].lower() + k[1:]: _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _time(value: Any) -> str | None:
    return iso(value) if hasattr(value, "astimezone") else (str(value) if value is not None else None)


def scheduler_config_view(tag: str, described: dict[str, Any], managed: bool) -> SchedulerConfigView:
    """The API view of a ``DescribeClusterSchedulerConfig`` answer."""
    return SchedulerConfigView(
        cluster_tag=tag,
        name=described["Name"],
        cluster_scheduler_config_id=described["ClusterSchedulerConfigId"],
        cluster_scheduler_config_arn=described["ClusterSchedulerConfigArn"],
        cluster_scheduler_config_version=int(described.get("ClusterSchedulerConfigVersion") or 1),
        status=described["Status"],
        failure_reason=described.get("FailureReason"),
        cluster_arn=described.get("ClusterArn"),
        scheduler_config=_lenient(SchedulerConfig, described.get("SchedulerConfig")),
        description=described.get("Description"),
        managed=managed,
        creation_time=_time(described.get("CreationTime")),
        last_modified_time=_time(described.get("LastModifiedTime")),
    )


def compute_quota_view(tag: str, described: dict[str, Any], managed: bool) -> ComputeQuotaView:
    """The API view of a ``DescribeComputeQuota`` answer (or a ``ComputeQuotaSummary``)."""
    return ComputeQuotaView(
        cluster_tag=tag,
        name=described["Name"],
        compute_quota_id=described["ComputeQuotaId"],
        compute_quota_arn=described["ComputeQuotaArn"],
        compute_quota_version=described.get("ComputeQuotaVersion"),
        status=described["Status"],
        failure_reason=described.get("FailureReason"),
        cluster_arn=described.get("ClusterArn"),
        compute_quota_config=_lenient(ComputeQuotaConfig, described.get("ComputeQuotaConfig")),
        compute_quota_target=_lenient(ComputeQuotaTarget, described.get("ComputeQuotaTarget")),
        activation_state=described.get("ActivationState"),
        description=described.get("Description"),
        managed=managed,
        creation_time=_time(described.get("CreationTime")),
        last_modified_time=_time(described.get("LastModifiedTime")),
    )


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


def not_managed(kind: str, name: str, tag: str) -> Conflict:
    """409 ``NotManaged``: a task governance resource without this cluster's ownership tags is never changed here."""
    return Conflict(
        f"{kind} {name} of cluster '{tag}' was not created by InstantStart (no ownership tags); change it where it "
        "was created",
        code="NotManaged",
        details=[{"field": "clusterTag", "name": name}],
    )


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
            described = dict(sm.describe_compute_quota(ComputeQuotaId=summary["ComputeQuotaId"]))
            out.append(compute_quota_view(tag, described, is_owned(sm, described["ComputeQuotaArn"], tag)))
        return {"views": sorted(out, key=lambda v: v.name)}

    return ComputeQuotaList(
        cluster_tag=tag, compute_quotas=sagemaker_call(rt, tag, "ListComputeQuotas", views)["views"]
    )


def _quota_by_name(rt: Runtime, tag: str, governed: GovernedCluster, name: str) -> tuple[dict[str, Any], bool]:
    def find(sm: Any) -> dict[str, Any]:
        for summary in compute_quota_summaries(sm, governed.cluster_arn):
            if summary.get("Name") == name:
                described = dict(sm.describe_compute_quota(ComputeQuotaId=summary["ComputeQuotaId"]))
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


# -- teardown -------------------------------------------------------------------------------------
def _deleted(delete: Callable[..., Any], **params: Any) -> bool:
    """Run a delete call; False when the resource was already gone (``ResourceNotFound``), True otherwise."""
    try:
        delete(**params)
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFound":
            return False
        raise
    return True


def release_owned(sm: Any, cluster_arn: str, tag: str) -> list[str]:
    """Start deleting the cluster's task governance resources that carry our ownership tags; what is left of them.

    SageMaker ``ListComputeQuotas``/``ListClusterSchedulerConfigs`` (``ClusterArn``), ``ListTags``, then
    ``DeleteComputeQuota``/``DeleteClusterSchedulerConfig`` for each owned one not already Deleting. Resources
    without the ownership tags are left alone. Returns ``"<Name> (<Status>)"`` of every owned resource still there
    (empty: none left). AWS does not document whether ``DeleteCluster`` is refused while a cluster policy or compute
    quota exists; the harsher reading is modelled: the HyperPod cluster is deleted only once these are gone.
    """
    left: list[str] = []
    for summary in compute_quota_summaries(sm, cluster_arn):
        if not is_owned(sm, summary["ComputeQuotaArn"], tag):
            continue
        if summary.get("Status") != "Deleting" and not _deleted(
            sm.delete_compute_quota, ComputeQuotaId=summary["ComputeQuotaId"]
        ):
            continue
        left.append(f"{summary['Name']} (Deleting)")
    for summary in scheduler_config_summaries(sm, cluster_arn):
        if not is_owned(sm, summary["ClusterSchedulerConfigArn"], tag):
            continue
        if summary.get("Status") != "Deleting" and not _deleted(
            sm.delete_cluster_scheduler_config, ClusterSchedulerConfigId=summary["ClusterSchedulerConfigId"]
        ):
            continue
        left.append(f"{summary['Name']} (Deleting)")
    return left
