"""HyperPod's own cluster operations: software updates, deep health checks, and reading the operations.

- ``update_software``: SageMaker ``UpdateClusterSoftware``
  (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateClusterSoftware.html), optionally
  rolling (``DeploymentConfig``) and for chosen instance groups.
- ``start_health_check``: ``StartClusterHealthCheck``
  (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_StartClusterHealthCheck.html), a
  ``DeepHealthCheck`` cluster operation.
- ``list_operations`` / ``get_operation``: ``ListClusterOperations`` and ``DescribeClusterOperation``
  (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeClusterOperation.html), with the
  operation's events from ``ListClusterEvents`` (``OperationId``).

Writes are guarded like the node actions (:func:`instantstart.clusters.nodes.writable_cluster`, one operation per
cluster at a time) and every group name (and instance id) is checked against the cluster before anything is
written. Each is then a day-2 operation of the update workflow (:mod:`instantstart.clusters.changes`):
``UPDATE_CLUSTER_SOFTWARE`` (:func:`apply_software_update`, then :func:`check_software_update` waits until
HyperPod reports the update done) and ``START_CLUSTER_HEALTH_CHECK`` (:func:`apply_health_check`, then
:func:`check_health_check` waits for the DeepHealthCheck operation to end; a node that failed a check fails the
operation with HyperPod's failure message). Those workflow steps are
:mod:`instantstart.clusters.hyperpod_operation_steps`; its public names are importable from here too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from instantstart.clusters import changes, page_tokens, records, service
from instantstart.clusters.events_feed import event_view
from instantstart.clusters.hyperpod_operation_steps import (
    CHANGES,
    SOFTWARE_UPDATE_RUNNING,
    apply_health_check,
    apply_software_update,
    check_health_check,
    check_software_update,
    software_update_params,
)
from instantstart.clusters.nodes import (
    NoHyperPodCluster,
    all_nodes,
    call_sagemaker,
    writable_cluster,
)
from instantstart.clusters.records import live_cluster
from instantstart.errors import Conflict, InvalidRequest, NotFound, UpstreamUnavailable, ValidationFailed
from instantstart.models.common import OperationType, iso
from instantstart.models.hyperpod_operations import (
    OPERATION_EVENTS_PAGE_SIZE,
    OPERATIONS_MAX_PAGE_SIZE,
    DeepHealthCheckDetail,
    HealthCheckRequest,
    HyperPodOperationList,
    HyperPodOperationStatus,
    HyperPodOperationSummary,
    HyperPodOperationType,
    HyperPodOperationView,
    ScalingCounts,
    ScalingDetail,
    SoftwareUpdateRequest,
)
from instantstart.models.operation import OperationView
from instantstart.runtime import Runtime

TOKEN_PURPOSE = "hyperpod-operations"
"""Kind of the API's ``nextToken`` of the operation listing (:mod:`instantstart.clusters.page_tokens`)."""

__all__ = [
    "CHANGES",
    "SOFTWARE_UPDATE_RUNNING",
    "TOKEN_PURPOSE",
    "apply_health_check",
    "apply_software_update",
    "check_group_names",
    "check_health_check",
    "check_software_update",
    "get_operation",
    "list_operations",
    "software_update_params",
    "start_health_check",
    "update_software",
]


def _when(value: Any) -> str | None:
    return iso(value) if isinstance(value, datetime) else (str(value) if value is not None else None)


def _no_hyperpod_cluster(name: str, exc: Exception) -> Conflict:
    return Conflict(
        f"HyperPod cluster {name} does not exist; nothing was done",
        code="HyperPodClusterNotFound",
        details=[{"field": "clusterTag"}],
    )


def check_group_names(names: list[str], cluster_groups: set[str], field: str) -> None:
    """Refuse instance group names the cluster does not have.

    Args:
        names: the request's group names, in order.
        cluster_groups: the names of the cluster's groups (``DescribeCluster``).
        field: the request field of the list (``instanceGroupNames`` -> ``instanceGroupNames[1]``); a
            ``{i}`` in it is the index (``instanceGroups[{i}].instanceGroupName``).

    Raises:
        ValidationFailed: one detail per unknown name, listing the cluster's groups; nothing was done.
    """
    where = field if "{i}" in field else field + "[{i}]"
    unknown = [(where.format(i=i), n) for i, n in enumerate(names) if n not in cluster_groups]
    if not unknown:
        return
    allowed = sorted(cluster_groups)
    details = [
        {
            "field": f,
            "message": f"{f}: {n} is not an instance group of this cluster; its groups: {', '.join(allowed)}",
            "type": "instance_group_not_in_cluster",
            "allowedValues": allowed,
        }
        for f, n in unknown
    ]
    messages = "; ".join(f"{f}: {n} is not an instance group of this cluster" for f, n in unknown)
    raise ValidationFailed(
        f"invalid request: {messages} (its groups: {', '.join(allowed)}); nothing was done", details=details
    )


def _group_names(rt: Runtime, name: str) -> set[str]:
    out = call_sagemaker(rt, "DescribeCluster", "describe_cluster", ClusterName=name)
    return {str(g["InstanceGroupName"]) for g in out.get("InstanceGroups") or []}


def update_software(rt: Runtime, tag: str, request: SoftwareUpdateRequest) -> OperationView:
    """Start an AMI update of the cluster's nodes: an ``UPDATE_CLUSTER_SOFTWARE`` operation.

    The workflow calls ``UpdateClusterSoftware`` (rolling when ``deploymentConfig`` says so) and waits until
    HyperPod reports the update done (:func:`check_software_update`).

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady`` (names the status), ``OperationInProgress`` (names the running operation),
            ``HyperPodClusterNotFound``.
        ValidationFailed: a group name that is not a group of this cluster (names ``instanceGroupNames[i]``).
        UpstreamUnavailable: SageMaker failed.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    name = records.hyperpod_name(rt, tag)
    try:
        groups = _group_names(rt, name)
    except NoHyperPodCluster as exc:
        raise _no_hyperpod_cluster(name, exc) from exc
    if request.instance_group_names:
        check_group_names(request.instance_group_names, groups, "instanceGroupNames")
    return changes.start_change(rt, cluster, OperationType.UPDATE_CLUSTER_SOFTWARE, request)


def start_health_check(rt: Runtime, tag: str, request: HealthCheckRequest) -> OperationView:
    """Start deep health checks on instance groups of the cluster: a ``START_CLUSTER_HEALTH_CHECK`` operation.

    Each group must be a group of the cluster and each listed instance a node of that group (checked with
    ``DescribeCluster`` and ``ListClusterNodes`` first). The workflow calls ``StartClusterHealthCheck``; HyperPod
    marks the nodes ``DeepHealthCheckInProgress`` (unschedulable) while the checks run, a node that fails is
    replaced; the operation waits for HyperPod's DeepHealthCheck operation to end (:func:`check_health_check`).

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady`` (names the status), ``OperationInProgress``, ``HyperPodClusterNotFound``.
        ValidationFailed: an unknown group (``instanceGroups[i].instanceGroupName``) or an instance that is not a
            node of its group (``instanceGroups[i].instanceIds[j]``); nothing was done.
        UpstreamUnavailable: SageMaker failed.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    name = records.hyperpod_name(rt, tag)
    groups = request.instance_groups
    try:
        check_group_names(
            [g.instance_group_name for g in groups], _group_names(rt, name), "instanceGroups[{i}].instanceGroupName"
        )
        if any(g.instance_ids for g in groups):
            nodes = all_nodes(rt, name)
            details = []
            for i, group in enumerate(groups):
                wanted = group.instance_group_name
                members = {str(n["InstanceId"]) for n in nodes if n.get("InstanceGroupName") == wanted}
                for j, instance_id in enumerate(group.instance_ids or []):
                    if instance_id not in members:
                        f = f"instanceGroups[{i}].instanceIds[{j}]"
                        details.append(
                            {
                                "field": f,
                                "message": f"{f}: {instance_id} is not a node of instance group "
                                f"{group.instance_group_name} of this cluster",
                                "type": "node_not_in_group",
                            }
                        )
            if details:
                raise ValidationFailed(
                    "invalid request: " + "; ".join(d["message"] for d in details) + "; nothing was done",
                    details=details,
                )
    except NoHyperPodCluster as exc:
        raise _no_hyperpod_cluster(name, exc) from exc
    return changes.start_change(rt, cluster, OperationType.START_CLUSTER_HEALTH_CHECK, request)


def _summary(op: dict[str, Any]) -> HyperPodOperationSummary:
    return HyperPodOperationSummary(
        operation_id=str(op.get("OperationId")),
        type=str(op.get("Type")),
        status=str(op.get("Status")),
        creation_time=_when(op.get("CreationTime")),
    )


def list_operations(
    rt: Runtime,
    tag: str,
    *,
    max_results: int,
    next_token: str | None = None,
    status: HyperPodOperationStatus | None = None,
    type: HyperPodOperationType | None = None,
) -> HyperPodOperationList:
    """A page of HyperPod's operations on cluster ``tag``, newest first (``ListClusterOperations``).

    Raises:
        NotFound: ``ClusterNotFound``.
        InvalidRequest: a ``nextToken`` not issued by this API for this listing (or expired at SageMaker).
        UpstreamUnavailable: SageMaker failed (also when it refuses the listing, e.g. a cluster without
            continuous provisioning: its message verbatim).
    """
    cluster = live_cluster(rt, tag)
    name = records.hyperpod_name(rt, tag)
    listing = {
        "tag": tag,
        "generation": cluster.generation,
        "status": status.value if status else None,
        "type": type.value if type else None,
    }
    start = (
        page_tokens.open_token(TOKEN_PURPOSE, next_token, listing, max_page_size=OPERATIONS_MAX_PAGE_SIZE)
        if next_token
        else page_tokens.Position(None, max_results)
    )

    def fetch(token: str | None, size: int) -> tuple[list[dict[str, Any]], str | None]:
        params: dict[str, Any] = {
            "ClusterName": name,
            "SortBy": "CreationTime",
            "SortOrder": "Descending",
            "MaxResults": size,
        }
        if status:
            params["Status"] = status.value
        if type:
            params["Type"] = type.value
        if token:
            params["NextToken"] = token
        try:
            out = call_sagemaker(rt, "ListClusterOperations", "list_cluster_operations", **params)
        except Conflict as exc:
            if token:
                raise InvalidRequest(
                    f"nextToken is no longer valid ({exc.message}); list again without it",
                    details=[{"field": "nextToken"}],
                ) from exc
            raise UpstreamUnavailable(exc.message) from exc
        return list(out.get("ClusterOperationSummaries") or []), out.get("NextToken") or None

    try:
        raw, following = page_tokens.scan(
            fetch, start, max_results=max_results, fresh_size=max_results, item_id=lambda o: str(o.get("OperationId"))
        )
    except NoHyperPodCluster:
        raw, following = [], None
    return HyperPodOperationList(
        cluster_tag=tag,
        hyper_pod_cluster_name=name,
        operations=[_summary(o) for o in raw],
        next_token=page_tokens.seal(TOKEN_PURPOSE, listing, following) if following else None,
    )


def _counts(value: dict[str, Any] | None) -> ScalingCounts | None:
    if not value:
        return None
    return ScalingCounts(
        current_count=value.get("CurrentCount"), target_count=value.get("TargetCount"), min_count=value.get("MinCount")
    )


def get_operation(rt: Runtime, tag: str, operation_id: str) -> HyperPodOperationView:
    """One HyperPod operation of cluster ``tag`` (``DescribeClusterOperation``) with its newest events.

    Raises:
        NotFound: ``ClusterNotFound``; ``HyperPodOperationNotFound`` (unknown id, or no HyperPod cluster).
        UpstreamUnavailable: SageMaker failed or refused.
    """
    live_cluster(rt, tag)
    name = records.hyperpod_name(rt, tag)
    missing = NotFound(
        f"HyperPod operation '{operation_id}' does not exist on cluster '{tag}'",
        code="HyperPodOperationNotFound",
        details=[{"field": "operationId"}],
    )
    try:
        op = call_sagemaker(
            rt, "DescribeClusterOperation", "describe_cluster_operation", ClusterName=name, OperationId=operation_id
        )
        events = call_sagemaker(
            rt,
            "ListClusterEvents",
            "list_cluster_events",
            ClusterName=name,
            OperationId=operation_id,
            SortBy="EventTime",
            SortOrder="Descending",
            MaxResults=OPERATION_EVENTS_PAGE_SIZE,
        )
    except NoHyperPodCluster as exc:
        raise missing from exc
    except Conflict as exc:
        raise UpstreamUnavailable(exc.message) from exc
    summary = _summary(op)
    return HyperPodOperationView(
        **summary.model_dump(),
        cluster_tag=tag,
        scaling_details=[
            ScalingDetail(
                instance_group_name=d.get("InstanceGroupName"),
                status=d.get("Status"),
                original=_counts(d.get("Original")),
                desired=_counts(d.get("Desired")),
            )
            for d in op.get("ScalingDetails") or []
        ],
        deep_health_check_details=[
            DeepHealthCheckDetail(
                instance_group_name=str(d["InstanceGroupName"]),
                deep_health_checks=[str(c) for c in d.get("DeepHealthChecks") or []],
                instance_ids=list(d["InstanceIds"]) if d.get("InstanceIds") else None,
            )
            for d in op.get("DeepHealthCheckDetails") or []
        ],
        events=[event_view(e) for e in events.get("Events") or []],
        more_events=bool(events.get("NextToken")),
    )
