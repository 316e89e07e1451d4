"""Day-2 changes of a running cluster's instance groups: list, add, scale or update, delete.

The API side (:func:`list_instance_groups`, :func:`add_instance_group`, :func:`update_instance_group`,
:func:`delete_instance_group`) checks the request against what HyperPod reports now (SageMaker
``DescribeCluster``) and the rules of :mod:`instantstart.capacity.groups`, records a PENDING operation
that carries the change (one operation per cluster at a time) and starts the update workflow
(``statemachines/update_cluster.asl.json``). Its steps (:mod:`instantstart.clusters.instance_group_steps`, whose
public names are importable from here too; :data:`CHANGES`) apply the change once, then wait
event-or-poll (:mod:`instantstart.clusters.waits`, on the operation's own record) until HyperPod
reports it done, and end the operation SUCCEEDED, or FAILED with the AWS code and message verbatim.
A day-2 operation never changes the cluster's status: the cluster stays usable while a group changes.

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateCluster.html,
API_BatchAddClusterNodes.html, API_BatchDeleteClusterNodes.html, API_ListClusterNodes.html.
"""

from __future__ import annotations

from typing import Any

from instantstart.capacity import added
from instantstart.capacity import autoscaling as autoscaling_rules
from instantstart.capacity import groups as rules
from instantstart.clusters import changes, records, service
from instantstart.clusters.instance_group_steps import (
    BATCH_ADD_MAX,
    BATCH_DELETE_MAX,
    CHANGES,
    LaunchFailure,
    apply_instance_group_change,
    check_instance_group_change,
    classify_launch_failure,
    groups_after_change,
    launch_failure,
    refresh_cluster_record,
)
from instantstart.clusters.stages import hyperpod
from instantstart.errors import Conflict, InvalidRequest, NotFound
from instantstart.models.cluster import InstanceGroupRequest
from instantstart.models.common import ClusterStatus, OperationType, StageName
from instantstart.models.instance_groups import (
    InstanceGroupChange,
    InstanceGroupList,
    UpdateInstanceGroupRequest,
)
from instantstart.models.operation import OperationView
from instantstart.models.records import ClusterRecord
from instantstart.models.resources import HyperPodResources
from instantstart.runtime import Runtime

MAX_INSTANCE_GROUPS = 20
"""Instance groups a cluster may have (``POST /clusters`` accepts 1-20)."""

_CHANGEABLE_CLUSTER = (ClusterStatus.READY, ClusterStatus.DEGRADED)

__all__ = [
    "BATCH_ADD_MAX",
    "BATCH_DELETE_MAX",
    "CHANGES",
    "MAX_INSTANCE_GROUPS",
    "LaunchFailure",
    "add_instance_group",
    "apply_instance_group_change",
    "changeable",
    "check_instance_group_change",
    "classify_launch_failure",
    "delete_instance_group",
    "groups_after_change",
    "launch_failure",
    "list_instance_groups",
    "refresh_cluster_record",
    "update_instance_group",
]


# -- API side -----------------------------------------------------------------------------------
def _describe(rt: Runtime, tag: str) -> dict[str, Any] | None:
    return hyperpod.describe(rt.client("sagemaker"), records.hyperpod_name(rt, tag))


def list_instance_groups(rt: Runtime, tag: str) -> InstanceGroupList:
    """The cluster's instance groups as HyperPod reports them now (SageMaker ``DescribeCluster``).

    Empty while the HyperPod cluster does not exist (yet).

    Raises:
        NotFound: no live cluster with this tag.
    """
    records.live_cluster(rt, tag)
    found = _describe(rt, tag)
    return InstanceGroupList(
        cluster_tag=tag,
        hyper_pod_cluster_name=records.hyperpod_name(rt, tag),
        hyper_pod_status=found.get("ClusterStatus") if found else None,
        instance_groups=[rules.detail_of(g) for g in (found or {}).get("InstanceGroups", [])],
    )


def _changeable(rt: Runtime, tag: str) -> tuple[ClusterRecord, dict[str, Any]]:
    """The cluster and its HyperPod description, when a group may change now.

    Raises:
        NotFound: no live cluster.
        Conflict: an operation runs (names it and its cancel route), the cluster is not READY or DEGRADED,
            or HyperPod is not InService.
    """
    cluster = records.live_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    if cluster.status not in _CHANGEABLE_CLUSTER:
        raise Conflict(
            f"cluster '{tag}' is {cluster.status.value}; instance groups can change only on a READY or DEGRADED "
            "cluster",
            code="ClusterNotReady",
            details=[{"field": "clusterTag", "status": cluster.status.value}],
        )
    found = _describe(rt, tag)
    status = found.get("ClusterStatus") if found else None
    if found is None or status != "InService":
        raise Conflict(
            f"HyperPod cluster {records.hyperpod_name(rt, tag)} is {status or 'absent'}; instance groups can change "
            "only while it is InService",
            code="HyperPodClusterNotInService",
            details=[{"field": "clusterTag", "status": status}],
        )
    return cluster, found


changeable = _changeable
"""The cluster and its HyperPod description when a day-2 change may start now (also used by autoscaling)."""


def _group_or_404(found: dict[str, Any], name: str) -> dict[str, Any]:
    group = rules.find_group(found.get("InstanceGroups", []), name)
    if group is None:
        names = ", ".join(g["InstanceGroupName"] for g in found.get("InstanceGroups", []))
        raise NotFound(
            f"instance group '{name}' does not exist; the cluster's groups: {names}",
            code="InstanceGroupNotFound",
            details=[{"field": "instanceGroupName"}],
        )
    return group


def _start(rt: Runtime, cluster: ClusterRecord, op_type: OperationType, change: InstanceGroupChange) -> OperationView:
    return changes.start_change(rt, cluster, op_type, change, instance_group_name=change.instance_group_name)


def add_instance_group(rt: Runtime, tag: str, request: InstanceGroupRequest) -> OperationView:
    """Add an instance group (``ADD_INSTANCE_GROUP``): UpdateCluster with the new group's specification.

    The group gets the cluster zone's compute subnet, or with ``dedicatedSubnet`` its own (found again when a
    group of that name had one; :func:`instantstart.capacity.subnets.ensure_group_subnet`),
    the control plane's execution role and the lifecycle script of the existing groups.

    Before any write, the create's capacity preflight for the new group
    (:func:`instantstart.capacity.added.check_added_group`: offerings in the cluster's zone, quota room,
    training-plan fit and zone).

    Raises:
        NotFound: no live cluster.
        ValidationFailed: the preflight failed (422 naming the group's field, with the numbers).
        Conflict: an operation runs, the cluster or HyperPod is not ready, the name is taken
            (``InstanceGroupAlreadyExists``), the cluster has 20 groups (``TooManyInstanceGroups``), or the
            group's training plan reserves another zone (``TrainingPlanZoneConflict``).
    """
    cluster, found = _changeable(rt, tag)
    groups = found.get("InstanceGroups", [])
    name = request.instance_group_name
    if rules.find_group(groups, name) is not None:
        raise Conflict(
            f"instance group '{name}' already exists; choose another instanceGroupName or change it with "
            f"PATCH /clusters/{tag}/instance-groups/{name}",
            code="InstanceGroupAlreadyExists",
            details=[{"field": "instanceGroupName"}],
        )
    if len(groups) >= MAX_INSTANCE_GROUPS:
        raise Conflict(
            f"cluster '{tag}' already has {len(groups)} instance groups, the most a cluster may have",
            code="TooManyInstanceGroups",
            details=[{"field": "instanceGroupName", "limit": MAX_INSTANCE_GROUPS}],
        )
    added.check_added_group(
        rt.client("ec2"),
        rt.client("service-quotas"),
        rt.client("sagemaker"),
        cluster_tag=tag,
        zone=cluster.availability_zone,
        group=request,
    )
    return _start(
        rt, cluster, OperationType.ADD_INSTANCE_GROUP, InstanceGroupChange(instance_group_name=name, group=request)
    )


def update_instance_group(rt: Runtime, tag: str, name: str, request: UpdateInstanceGroupRequest) -> OperationView:
    """Change a group's ``instanceCount`` (``SCALE_INSTANCE_GROUP``) or its labels (``UPDATE_INSTANCE_GROUP``).

    A scale-up first passes the capacity preflight of what it adds
    (:func:`instantstart.capacity.added.check_scale_up`: quota room, the training plan's available instances);
    the operation carries the group's target before the scale, which a failed scale puts back.

    Raises:
        InvalidRequest: the body changes nothing (no instanceCount or labels).
        ValidationFailed: the scale-up's preflight failed (422 naming ``instanceCount``, with the numbers).
        NotFound: no live cluster or no such group.
        Conflict: an operation runs, the cluster or HyperPod is not ready, or a field HyperPod does not
            change is asked to change (``ImmutableField``, naming it).
    """
    cluster, found = _changeable(rt, tag)
    group = _group_or_404(found, name)
    rules.check_mutable(group, request)
    if request.instance_count is None and request.labels is None:
        raise InvalidRequest(
            "nothing to change: give instanceCount and/or labels",
            details=[{"field": "instanceCount"}, {"field": "labels"}],
        )
    if request.instance_count is not None:
        added.check_scale_up(
            rt.client("service-quotas"), rt.client("sagemaker"), described=group, desired=request.instance_count
        )
    op_type = OperationType.UPDATE_INSTANCE_GROUP if request.labels is not None else OperationType.SCALE_INSTANCE_GROUP
    change = InstanceGroupChange(
        instance_group_name=name,
        instance_count=request.instance_count,
        labels=request.labels,
        previous_count=int(group.get("TargetCount") or 0) if request.instance_count is not None else None,
    )
    return _start(rt, cluster, op_type, change)


def delete_instance_group(rt: Runtime, tag: str, name: str) -> OperationView:
    """Remove a group and its instances (``DELETE_INSTANCE_GROUP``: UpdateCluster ``InstanceGroupsToDelete``).

    Raises:
        NotFound: no live cluster or no such group.
        Conflict: an operation runs, the cluster or HyperPod is not ready, it is the last group
            (``LastInstanceGroup``: delete the cluster instead), or managed Karpenter's node class lists it
            (``InstanceGroupInNodeClass``).
    """
    cluster, found = _changeable(rt, tag)
    _group_or_404(found, name)
    karpenter = records.stage_resources(rt, tag, cluster.generation, StageName.HYPERPOD, HyperPodResources).karpenter
    if karpenter is not None and karpenter.enabled:
        autoscaling_rules.check_not_in_node_class(name, karpenter.instance_groups, tag)
    if len(found.get("InstanceGroups", [])) <= 1:
        raise Conflict(
            f"instance group '{name}' is the cluster's last group; a HyperPod cluster needs one. Scale it to 0 with "
            f"PATCH /clusters/{tag}/instance-groups/{name} or delete the cluster with DELETE /clusters/{tag}",
            code="LastInstanceGroup",
            details=[{"field": "instanceGroupName"}],
        )
    return _start(rt, cluster, OperationType.DELETE_INSTANCE_GROUP, InstanceGroupChange(instance_group_name=name))
