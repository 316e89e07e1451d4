"""A HyperPod cluster's task governance resources at SageMaker: listing them, their ownership, releasing them.

The listings (``ListClusterSchedulerConfigs``, ``ListComputeQuotas``, every page) leave out what is already
Deleted; :func:`is_owned` reads the ownership tags (``ListTags``); :func:`release_owned`, called by the ``hyperpod``
stage's teardown and the features' convergence, starts deleting the owned ones. Every function takes the SageMaker
client. The use cases are :mod:`instantstart.clusters.task_governance`, from which every public name here is
importable too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.naming import owned_by

GONE_STATUSES = ("Deleted",)
"""SageMaker statuses of a resource that no longer counts (a listing may still show it for a while)."""


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


def described_compute_quota(sm: Any, summary: dict[str, Any]) -> dict[str, Any] | None:
    """SageMaker ``DescribeComputeQuota`` of a listed quota; None when it was deleted since it was listed
    (``ResourceNotFound``): a listing taken while another request deletes a quota leaves it out instead of failing.

    Raises:
        ClientError: any other error of the call.
    """
    try:
        return dict(sm.describe_compute_quota(ComputeQuotaId=summary["ComputeQuotaId"]))
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFound":
            return None
        raise


def is_owned(sm: Any, arn: str, tag: str) -> bool:
    """True when the resource carries this cluster's ownership tags (SageMaker ``ListTags``)."""
    return owned_by(_all_pages(sm.list_tags, "Tags", ResourceArn=arn), tag)


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
