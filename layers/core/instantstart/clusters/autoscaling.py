"""Managed Karpenter of a running cluster: ``GET``/``PUT /clusters/{clusterTag}/autoscaling``.

Turning it on (an ``UPDATE_AUTOSCALING`` operation in the update workflow, :mod:`instantstart.clusters.changes`):

1. the API side checks the request against what HyperPod reports now (SageMaker ``DescribeCluster``, EC2
   ``DescribeSubnets`` for the zones) and the rules of :mod:`instantstart.capacity.autoscaling` before anything
   changes in AWS (a 4xx naming the rule and the group), then starts the operation;
2. ``apply``: the cluster's ``ClusterRole`` (IAM, :mod:`instantstart.clusters.autoscaling_role`), then
   ``UpdateCluster`` with ``AutoScaling {Mode: Enable, AutoScalerType: Karpenter}`` and ``ClusterRole``;
3. ``check`` (event-or-poll): once ``DescribeCluster`` reports ``AutoScaling.Status`` InService (HyperPod has
   installed Karpenter and its kinds), the ``HyperpodNodeClass`` (the groups) and the ``NodePool``
   (consolidation on, the limits) are applied with server-side apply; done;
4. ``finish``: what was applied is recorded on the hyperpod stage (``karpenter``), which ``GET`` and the
   group-delete guard read.

Turning it off reverses exactly that: ``apply`` deletes our NodePool and HyperpodNodeClass (only objects
labelled managed-by instantstart) and sends ``AutoScaling {Mode: Disable}``; ``check`` waits until HyperPod no
longer reports it enabled, then deletes our ClusterRole (only a role carrying this cluster's ownership tags).
A failure ends the operation FAILED with the AWS code and message verbatim; turning it off again cleans up
what a failed turn-on left.

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateCluster.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterAutoScalingConfig.html
"""

from __future__ import annotations

from typing import Any

from instantstart.capacity import autoscaling as rules
from instantstart.clusters import autoscaling_role, changes, instance_groups, records
from instantstart.clusters.stages import hyperpod
from instantstart.errors import StageFailed
from instantstart.kube import objects
from instantstart.models.autoscaling import (
    AutoScalingChange,
    AutoScalingView,
    KarpenterResources,
    UpdateAutoScalingRequest,
)
from instantstart.models.common import OperationType, StageName
from instantstart.models.operation import OperationView
from instantstart.models.records import ClusterRecord
from instantstart.models.resources import HyperPodResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime

AUTO_SCALER_TYPE = "Karpenter"
DEFAULT_CONSOLIDATE_AFTER = "30s"
"""NodePool ``disruption.consolidateAfter`` when the request gives none."""


# -- API side -----------------------------------------------------------------------------------
def recorded_karpenter(rt: Runtime, cluster: ClusterRecord) -> KarpenterResources:
    """What the last successful autoscaling operation left on the cluster (off and empty when none ran)."""
    found = records.stage_resources(rt, cluster.cluster_tag, cluster.generation, StageName.HYPERPOD, HyperPodResources)
    return found.karpenter or KarpenterResources()


def get_autoscaling(rt: Runtime, tag: str) -> AutoScalingView:
    """Managed Karpenter of the cluster: HyperPod's ``AutoScaling`` and ``ClusterRole`` now (``DescribeCluster``),
    and the NodePool / HyperpodNodeClass the last autoscaling operation applied (from the records: the API does
    not read the cluster's Kubernetes API).

    Raises:
        NotFound: no live cluster with this tag.
    """
    cluster = records.live_cluster(rt, tag)
    found = hyperpod.describe(rt.client("sagemaker"), records.hyperpod_name(rt, tag)) or {}
    auto = found.get("AutoScaling") or {}
    karpenter = recorded_karpenter(rt, cluster)
    on = karpenter.enabled
    return AutoScalingView(
        cluster_tag=tag,
        hyper_pod_cluster_name=records.hyperpod_name(rt, tag),
        mode=auto.get("Mode"),
        auto_scaler_type=auto.get("AutoScalerType"),
        status=auto.get("Status"),
        failure_message=auto.get("FailureMessage"),
        cluster_role_arn=found.get("ClusterRole"),
        node_pool=karpenter.node_pool if on else None,
        node_class=karpenter.node_class if on else None,
        instance_groups=list(karpenter.instance_groups) if on else [],
        limits=karpenter.limits if on else None,
        consolidate_after=karpenter.consolidate_after if on else None,
        updated_at=karpenter.updated_at,
        operation_id=karpenter.operation_id,
    )


def update_autoscaling(rt: Runtime, tag: str, request: UpdateAutoScalingRequest) -> OperationView:
    """Turn managed Karpenter on (with these groups and limits) or off: an ``UPDATE_AUTOSCALING`` operation.

    On: the rules of :func:`instantstart.capacity.autoscaling.check_node_class_groups` (groups exist, at 0
    unless Karpenter already scales them, On-Demand, no on-start deep health checks, one zone, at most 10)
    are checked before any change. Calls SageMaker ``DescribeCluster`` and EC2 ``DescribeSubnets`` (reads),
    then Step Functions ``StartExecution``. Off is accepted in any state (it removes whatever is ours).

    Raises:
        NotFound: no live cluster, or a named group does not exist (``InstanceGroupNotFound``).
        Conflict: an operation runs, the cluster or HyperPod is not ready, or a rule is broken (its code names
            it: ``KarpenterGroupNotAtZero``, ``KarpenterGroupHasDeepHealthChecks``, ``KarpenterGroupNotOnDemand``,
            ``KarpenterGroupsInSeveralZones``).
        ValidationFailed: more than 10 groups (``TooManyNodeClassGroups``).
    """
    cluster, found = instance_groups.changeable(rt, tag)
    if not request.enabled:
        return changes.start_change(rt, cluster, OperationType.UPDATE_AUTOSCALING, AutoScalingChange(enabled=False))
    names = list(request.instance_groups or [])
    groups = list(found.get("InstanceGroups", []))
    rules.check_group_limit(names)
    rules.check_groups_exist(groups, names)
    cluster_subnets = list((found.get("VpcConfig") or {}).get("Subnets") or [])
    subnets = [
        s for g in groups if g.get("InstanceGroupName") in names for s in rules.group_subnets(g, cluster_subnets)
    ]
    zone_of = rules.subnet_zones(rt.client("ec2"), subnets)
    recorded = recorded_karpenter(rt, cluster)
    rules.check_node_class_groups(
        groups,
        names,
        cluster_subnets=cluster_subnets,
        zone_of=zone_of,
        already_managed=recorded.instance_groups if recorded.enabled else (),
    )
    change = AutoScalingChange(
        enabled=True,
        instance_groups=names,
        limits={k: str(v) for k, v in request.limits.items()} if request.limits else None,
        consolidate_after=request.consolidate_after or DEFAULT_CONSOLIDATE_AFTER,
    )
    return changes.start_change(rt, cluster, OperationType.UPDATE_AUTOSCALING, change)


# -- workflow steps -----------------------------------------------------------------------------
def _change(rt: Runtime, p: StepPayload) -> AutoScalingChange:
    return changes.operation_change(rt, p, AutoScalingChange)[1]


def _describe_or_fail(rt: Runtime, tag: str) -> dict[str, Any]:
    found = hyperpod.describe(rt.client("sagemaker"), records.hyperpod_name(rt, tag))
    if found is None:
        raise StageFailed("ResourceNotFound", f"HyperPod cluster {records.hyperpod_name(rt, tag)} does not exist")
    return found


def _kube(rt: Runtime, tag: str) -> Any:
    from instantstart.kube.client import connect

    return connect(records.eks_name(rt, tag), rt.region)


def _delete_ours(dyn: Any, api_version: str, kind: str, name: str) -> bool:
    """Delete our object (label managed-by instantstart); absent kinds (Karpenter never installed) count as gone."""
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    from instantstart.kube.client import delete, get

    try:
        found = get(dyn, api_version, kind, name)
    except ResourceNotFoundError:
        return False
    labels = ((found or {}).get("metadata") or {}).get("labels") or {}
    if found is None or any(labels.get(k) != v for k, v in objects.MANAGED_LABELS.items()):
        return False
    return delete(dyn, api_version, kind, name)


def apply_autoscaling_change(rt: Runtime, p: StepPayload) -> StepResult:
    """Make the change once (idempotent: what is already so is not asked again).

    On: IAM ClusterRole (create + inline policy), then SageMaker ``UpdateCluster`` ``AutoScaling``/``ClusterRole``
    unless HyperPod already reports Karpenter enabled with our role. Off: delete our NodePool and
    HyperpodNodeClass (Kubernetes API), then ``UpdateCluster`` ``AutoScaling {Mode: Disable}`` when enabled.

    Raises:
        StageFailed: the HyperPod cluster is gone; ``RoleNotOwned``; AWS errors leave named by their code.
    """
    change = _change(rt, p)
    sm = rt.client("sagemaker")
    found = _describe_or_fail(rt, p.cluster_tag)
    auto = found.get("AutoScaling") or {}
    if change.enabled:
        role_arn = autoscaling_role.ensure_cluster_role(
            rt.client("iam"),
            tag=p.cluster_tag,
            account_id=rt.account_id,
            region=rt.region,
            path=rt.settings.STORAGE_ROLE_PATH,
            boundary=rt.settings.STORAGE_PERMISSIONS_BOUNDARY_ARN or None,
        )
        if auto.get("Mode") == "Enable" and found.get("ClusterRole") == role_arn:
            return StepResult(status="Karpenter already enabled")
        sm.update_cluster(
            ClusterName=found["ClusterName"],
            AutoScaling={"Mode": "Enable", "AutoScalerType": AUTO_SCALER_TYPE},
            ClusterRole=role_arn,
        )
        return StepResult(status="UpdateCluster AutoScaling Enable")
    dyn = _kube(rt, p.cluster_tag)
    removed = [
        kind
        for api_version, kind in (objects.KARPENTER_NODE_POOL, objects.HYPERPOD_NODE_CLASS)
        if _delete_ours(dyn, api_version, kind, objects.KARPENTER_OBJECT_NAME)
    ]
    if auto.get("Mode") == "Enable":
        sm.update_cluster(ClusterName=found["ClusterName"], AutoScaling={"Mode": "Disable"})
        return StepResult(status=f"deleted {', '.join(removed) or 'nothing'}; UpdateCluster AutoScaling Disable")
    return StepResult(status=f"deleted {', '.join(removed) or 'nothing'}; AutoScaling not enabled")


def check_autoscaling_change(rt: Runtime, p: StepPayload) -> PollResult:
    """One round of the wait. On: done once ``AutoScaling.Status`` is InService and our HyperpodNodeClass and
    NodePool are applied (server-side apply, idempotent). Off: done once HyperPod no longer reports Karpenter
    enabled (nor Deleting) and our ClusterRole is deleted.

    Raises:
        StageFailed: ``AutoScalingFailed`` with HyperPod's FailureMessage verbatim; the HyperPod cluster is gone.
    """
    change = _change(rt, p)
    found = _describe_or_fail(rt, p.cluster_tag)
    auto = found.get("AutoScaling") or {}
    status = str(auto.get("Status") or "")
    if status == "Failed":
        raise StageFailed("AutoScalingFailed", str(auto.get("FailureMessage") or "HyperPod AutoScaling is Failed"))
    if change.enabled:
        if auto.get("Mode") != "Enable" or status != "InService":
            return PollResult(done=False, status=f"AutoScaling {auto.get('Mode')} {status or 'pending'}")
        from instantstart.kube.client import apply

        dyn = _kube(rt, p.cluster_tag)
        apply(dyn, objects.hyperpod_node_class(change.instance_groups))
        apply(dyn, objects.karpenter_node_pool(consolidate_after=change.consolidate_after, limits=change.limits))
        return PollResult(done=True, status="AutoScaling InService; NodePool and HyperpodNodeClass applied")
    if auto.get("Mode") == "Enable" or status == "Deleting":
        return PollResult(done=False, status=f"AutoScaling {auto.get('Mode')} {status}")
    deleted = autoscaling_role.delete_cluster_role(rt.client("iam"), p.cluster_tag)
    return PollResult(done=True, status="AutoScaling disabled" + ("; ClusterRole deleted" if deleted else ""))


def finish_autoscaling_change(rt: Runtime, p: StepPayload) -> None:
    """Record what the operation left (the hyperpod stage's ``karpenter``), written whole."""
    change = _change(rt, p)
    if change.enabled:
        found = _describe_or_fail(rt, p.cluster_tag)
        karpenter = KarpenterResources(
            enabled=True,
            cluster_role_arn=found.get("ClusterRole"),
            node_pool=objects.KARPENTER_OBJECT_NAME,
            node_class=objects.KARPENTER_OBJECT_NAME,
            instance_groups=change.instance_groups,
            limits=change.limits,
            consolidate_after=change.consolidate_after,
            operation_id=p.operation_id,
            updated_at=records.now(),
        )
    else:
        karpenter = KarpenterResources(enabled=False, operation_id=p.operation_id, updated_at=records.now())
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=StageName.HYPERPOD,
        resources=HyperPodResources(karpenter=karpenter),
    )


CHANGES = {
    OperationType.UPDATE_AUTOSCALING: changes.ClusterChange(
        apply=apply_autoscaling_change, check=check_autoscaling_change, finish=finish_autoscaling_change
    )
}
"""The update workflow's handler of autoscaling changes."""
