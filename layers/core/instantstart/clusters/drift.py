"""Drift detection: a cluster's records against what AWS reports of its resources, read-only.

- :func:`check_drift` reads AWS for one cluster (EKS ``DescribeCluster``, ``ListAddons``, ``DescribeAddon``;
  SageMaker ``DescribeCluster``; IAM ``GetRole``; S3 ``GetBucketTagging``) and Kubernetes (the storage stage's
  PersistentVolumeClaim, through the caller's access entry, within the read budget) and compares it with the records
  (:mod:`instantstart.clusters.drift_rules`, the rules).
- :func:`record_drift` stores the drift on the cluster record (``drift``, ``driftCheckedAt``: what ``GET
  /clusters/{clusterTag}`` shows) and publishes one ``Cluster Drift Detected`` event on the control plane's bus
  when new items appear.
- :func:`observe_drift` is both, for one cluster: what the scheduled sweep calls per cluster.

What is the control plane's own and it can re-create is ``repairable`` (``POST /clusters/{clusterTag}/reconcile``,
:mod:`instantstart.clusters.repair`); the rest is reported, never silently undone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import events
from instantstart.clusters.addons import ADDONS_BY_NAME
from instantstart.clusters.drift_rules import (
    KUBERNETES_KINDS,
    Expected,
    ExpectedGroup,
    Observed,
    bounded,
    compare,
    merge,
)
from instantstart.clusters.executions import running_operation
from instantstart.models.common import ClusterStatus, StageName
from instantstart.models.drift import DriftItem
from instantstart.models.records import ClusterRecord
from instantstart.models.resources import DependenciesResources, HyperPodResources, StorageResources
from instantstart.naming import storage_bucket_name
from instantstart.runtime import Runtime
from instantstart.store.errors import ConditionFailed

logger = logging.getLogger(__name__)

CHECKED = frozenset({ClusterStatus.READY, ClusterStatus.DEGRADED})
"""Statuses whose clusters are checked: a creating, failed or deleting cluster is the workflows' to converge."""

__all__ = ["CHECKED", "check_drift", "expected_of", "observe_drift", "read_aws", "record_drift"]


def _resources(rt: Runtime, cluster: ClusterRecord, stage: StageName) -> dict[str, Any]:
    record = rt.store.get_stage(cluster.cluster_tag, cluster.generation, stage)
    return dict(record.resources) if record is not None else {}


def expected_of(rt: Runtime, cluster: ClusterRecord) -> Expected:
    """What the records say ``cluster`` has: the cluster record and its dependencies, hyperpod and storage stages
    (DynamoDB ``GetItem`` each)."""
    deps = DependenciesResources.model_validate(_resources(rt, cluster, StageName.DEPENDENCIES))
    hyperpod = HyperPodResources.model_validate(_resources(rt, cluster, StageName.HYPERPOD))
    storage = StorageResources.model_validate(_resources(rt, cluster, StageName.STORAGE))
    imported = set(deps.imported_addons or [])
    if cluster.imported:
        imported |= set(cluster.imported.addons) & set(deps.addons)
    owned_addons = tuple(sorted(set(deps.addons) - imported))
    autoscaled = set(hyperpod.karpenter.instance_groups) if hyperpod.karpenter and hyperpod.karpenter.enabled else set()
    role_arns = {a.role_arn for n, a in deps.addons.items() if a.role_arn and n not in imported}
    if hyperpod.karpenter and hyperpod.karpenter.enabled and hyperpod.karpenter.cluster_role_arn:
        role_arns.add(hyperpod.karpenter.cluster_role_arn)  # managed Karpenter's ClusterRole (autoscaling_role.py)
    roles = sorted({arn.rsplit("/", 1)[-1] for arn in role_arns})
    bucket = storage.bucket_name
    if bucket and (storage.bucket_retained or bucket != _own_bucket(rt, cluster)):
        bucket = None
    version = (cluster.eks.kubernetes_version if cluster.eks else None) or (
        cluster.imported.kubernetes_version if cluster.imported else None
    )
    return Expected(
        tag=cluster.cluster_tag,
        eks_cluster_name=cluster.eks_cluster_name,
        eks_owned=cluster.imported is None,
        kubernetes_version=version,
        addons=owned_addons,
        foreign_addons=tuple(sorted(imported)),
        repairable_addons=frozenset(n for n in owned_addons if n in ADDONS_BY_NAME),
        hyperpod_name=cluster.hyper_pod_cluster_name,
        hyperpod_owned=not (cluster.imported and cluster.imported.hyper_pod_cluster_name),
        hyperpod_in_service=cluster.status is ClusterStatus.READY,
        groups=tuple(
            ExpectedGroup(
                name=g.instance_group_name,
                instance_type=g.instance_type,
                instance_count=g.instance_count,
                autoscaled=g.instance_group_name in autoscaled,
            )
            for g in cluster.request.instance_groups
        ),
        roles=tuple(roles),
        bucket=bucket,
        claim=(storage.namespace, storage.persistent_volume_claim)
        if storage.namespace and storage.persistent_volume_claim
        else None,
    )


def _own_bucket(rt: Runtime, cluster: ClusterRecord) -> str:
    return storage_bucket_name(cluster.cluster_tag, rt.account_id, rt.region)


def _missing(exc: ClientError, *codes: str) -> bool:
    return error_code(exc) in codes


HyperPodReader = Callable[[str], "dict[str, Any] | None"]
"""SageMaker ``DescribeCluster`` of a HyperPod cluster by name, None when it does not exist (the sweep passes one that
reads once per cluster and sweep, shared with its other checks)."""


def read_aws(rt: Runtime, exp: Expected, describe_hyperpod: HyperPodReader | None = None) -> Observed:
    """What AWS reports of the resources ``exp`` names (read-only; a resource not found is None).

    Calls EKS ``DescribeCluster``, ``ListAddons``, ``DescribeAddon`` (each listed or expected add-on), SageMaker
    ``DescribeCluster``, IAM ``GetRole`` (each role), S3 ``GetBucketTagging``, and Kubernetes ``GET`` of the
    storage stage's PersistentVolumeClaim (a failed Kubernetes read is ``kubernetes_error``, not an error).

    Raises:
        ClientError: any other AWS error (throttling, access denied): the check is not recorded.
    """
    eks = rt.client("eks")
    obs = Observed(eks=None)
    try:
        obs.eks = dict(eks.describe_cluster(name=exp.eks_cluster_name)["cluster"])
    except ClientError as exc:
        if not _missing(exc, "ResourceNotFoundException"):
            raise
    if obs.eks is not None:
        listed = list(eks.list_addons(clusterName=exp.eks_cluster_name).get("addons") or [])
        for name in sorted(set(listed) | set(exp.addons) | set(exp.foreign_addons)):
            if name not in listed:
                obs.addons[name] = None
                continue
            try:
                obs.addons[name] = dict(eks.describe_addon(clusterName=exp.eks_cluster_name, addonName=name)["addon"])
            except ClientError as exc:
                if not _missing(exc, "ResourceNotFoundException"):
                    raise
                obs.addons[name] = None
    if describe_hyperpod is not None:
        obs.hyperpod = describe_hyperpod(exp.hyperpod_name)
    else:
        try:
            obs.hyperpod = dict(rt.client("sagemaker").describe_cluster(ClusterName=exp.hyperpod_name))
        except ClientError as exc:
            if not _missing(exc, "ResourceNotFound"):
                raise
    iam = rt.client("iam")
    for role in exp.roles:
        try:
            obs.roles[role] = dict(iam.get_role(RoleName=role)["Role"])
        except ClientError as exc:
            if not _missing(exc, "NoSuchEntity"):
                raise
            obs.roles[role] = None
    if exp.bucket:
        try:
            obs.bucket_tags = list(rt.client("s3").get_bucket_tagging(Bucket=exp.bucket).get("TagSet") or [])
        except ClientError as exc:
            if _missing(exc, "NoSuchTagSet"):
                obs.bucket_tags = []
            elif not _missing(exc, "NoSuchBucket", "404"):
                raise
    if obs.eks is not None and exp.claim is not None:
        _read_claim(rt, exp, obs)
    return obs


def _read_claim(rt: Runtime, exp: Expected, obs: Observed) -> None:
    """The storage stage's PersistentVolumeClaim into ``obs`` (Kubernetes ``GET``, within the read budget), or why
    it could not be read (``obs.kubernetes_error``: the check goes on without it)."""
    from instantstart.errors import NotFound, UpstreamUnavailable
    from instantstart.kube import client as kube
    from instantstart.kube.reads import read_within_budget

    assert exp.claim is not None
    namespace, name = exp.claim
    try:
        obs.claim = read_within_budget(
            exp.eks_cluster_name,
            rt.region,
            exp.tag,
            lambda dyn: kube.get(dyn, "v1", "PersistentVolumeClaim", name, namespace),
        )
    except (NotFound, UpstreamUnavailable) as exc:
        obs.kubernetes_error = str(exc)
        logger.warning("drift of %s: Kubernetes not read: %s", exp.tag, exc)


def check_drift(
    rt: Runtime, cluster: ClusterRecord, *, now: str, describe_hyperpod: HyperPodReader | None = None
) -> list[DriftItem]:
    """What differs between ``cluster``'s records and AWS now, each item ``since`` = ``now`` (not stored).

    Reads the records (:func:`expected_of`) and AWS (:func:`read_aws`); the rules are
    :func:`instantstart.clusters.drift_rules.compare`.

    Raises:
        ClientError: an AWS read failed for another reason than not found.
    """
    exp = expected_of(rt, cluster)
    obs = read_aws(rt, exp, describe_hyperpod)
    items = compare(exp, obs, now)
    if obs.kubernetes_error is not None:  # not read: what was recorded of Kubernetes stands
        items += [i for i in cluster.drift if i.resource_type in KUBERNETES_KINDS]
    return items


def record_drift(rt: Runtime, cluster: ClusterRecord, items: list[DriftItem], *, now: str) -> list[DriftItem]:
    """Store ``items`` as the cluster's drift, checked at ``now``; returns the items that are new.

    An item recorded before (same resource, name, field and observed value) keeps its ``since``; what no longer
    differs is cleared; at most :data:`~instantstart.models.drift.MAX_DRIFT_ITEMS` are stored (the count of the
    rest too). The write is conditional on the ``driftCheckedAt`` read: when another check stored meanwhile, this
    one merges with what it stored (so an item is new once), or, when that one is later than ``now`` (a later check,
    or a repair that cleared items), is dropped. When items are new, one ``Cluster Drift Detected`` event
    is published on the control plane's bus (EventBridge ``PutEvents``, best effort).

    A cluster record that is gone or of another generation is left alone (returns []).
    """
    current = cluster
    for _ in range(3):
        merged, new = merge(current.drift, items)
        stored, more = bounded(merged)
        try:
            rt.store.record_drift(
                current.cluster_tag,
                current.generation,
                stored,
                more=more,
                checked_at=now,
                if_checked_at=current.drift_checked_at,
            )
        except ConditionFailed:
            fresh = rt.store.get_cluster(cluster.cluster_tag)
            if fresh is None or fresh.generation != cluster.generation:
                return []
            if fresh.drift_checked_at is not None and fresh.drift_checked_at > now:
                return []  # a later check (or a repair) stored after this one read AWS: this one is stale
            current = fresh
            continue
        if new:
            events.publish(rt, events.ClusterDriftDetected.of(current, new, stored, more))
        return new
    logger.warning("drift of %s not recorded: the record kept changing", cluster.cluster_tag)
    return []


def observe_drift(
    rt: Runtime, cluster: ClusterRecord, *, now: str, describe_hyperpod: HyperPodReader | None = None
) -> list[DriftItem]:
    """Check and record the drift of one cluster: what the scheduled sweep calls per cluster.

    A cluster that is not READY or DEGRADED, or has an operation running (its workflow is changing it), is not
    checked: returns its recorded drift unchanged. Otherwise :func:`check_drift` then :func:`record_drift`;
    returns the current items (``since`` kept for those recorded before).

    Raises:
        ClientError: an AWS read failed (throttling, access denied); nothing was recorded.
    """
    if cluster.status not in CHECKED or running_operation(rt, cluster) is not None:
        return list(cluster.drift)
    items = check_drift(rt, cluster, now=now, describe_hyperpod=describe_hyperpod)
    record_drift(rt, cluster, items, now=now)
    fresh = rt.store.get_cluster(cluster.cluster_tag)
    return list(fresh.drift) if fresh is not None else items
