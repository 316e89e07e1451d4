"""The rules of task governance writes: which cluster may change, the add-on check, SageMaker's refusals.

:func:`governed_cluster` finds the cluster and its HyperPod cluster's ARN (SageMaker ``DescribeCluster``; a write
needs a READY or DEGRADED cluster), :func:`require_task_governance` refuses unless the task governance add-on is
ACTIVE (EKS ``DescribeAddon``), :func:`sagemaker_call` maps SageMaker's refusals to the API's errors with their
messages verbatim, and :func:`feature_not_enabled` / :func:`not_managed` are the 409s they raise. The use cases are
:mod:`instantstart.clusters.task_governance`, from which every public name here is importable too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import records
from instantstart.errors import Conflict, NotFound, UpstreamUnavailable, ValidationFailed
from instantstart.models.common import ClusterStatus
from instantstart.models.records import ClusterRecord
from instantstart.models.task_governance import TASK_GOVERNANCE_ADDON, TASK_GOVERNANCE_FEATURE
from instantstart.runtime import Runtime

WRITABLE = (ClusterStatus.READY, ClusterStatus.DEGRADED)
"""Cluster statuses in which task governance can change."""

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


def not_managed(kind: str, name: str, tag: str) -> Conflict:
    """409 ``NotManaged``: a task governance resource without this cluster's ownership tags is never changed here."""
    return Conflict(
        f"{kind} {name} of cluster '{tag}' was not created by InstantStart (no ownership tags); change it where it "
        "was created",
        code="NotManaged",
        details=[{"field": "clusterTag", "name": name}],
    )
