"""Record -> API view mapping: what ``GET /clusters``, ``GET /clusters/{tag}``, its stages and operations answer."""

from __future__ import annotations

from instantstart.models.cluster import (
    ClusterSummary,
    ClusterView,
    EksView,
    HyperPodView,
    InstanceGroupCounts,
    InstanceGroupView,
    StageStatusView,
    StageView,
)
from instantstart.models.common import OperationType
from instantstart.models.drift import DriftView
from instantstart.models.nodes import NodeActionChange
from instantstart.models.operation import ChangeResult, OperationProgress, OperationView
from instantstart.models.records import ClusterRecord, OperationRecord, StageRecord


def operation_view(record: OperationRecord) -> OperationView:
    """The API view of an operation record."""
    return OperationView(
        operation_id=record.operation_id,
        type=record.type,
        status=record.status,
        cluster_tag=record.cluster_tag,
        status_url=f"/operations/{record.operation_id}",
        created_at=record.created_at,
        updated_at=record.updated_at,
        started_at=record.started_at,
        ended_at=record.ended_at,
        stage=record.stage.value if record.stage else None,
        instance_group_name=record.instance_group_name,
        execution_arn=record.execution_arn,
        error=record.error,
        result=change_result(record),
        features=record.feature_results,
        retained=record.retained,
        revoked_grants=record.revoked_grants,
    )


NODE_ACTION_TYPES = frozenset(
    {OperationType.REBOOT_CLUSTER_NODES, OperationType.REPLACE_CLUSTER_NODES, OperationType.DELETE_CLUSTER_NODES}
)
"""Operation types whose ``change`` is a :class:`~instantstart.models.nodes.NodeActionChange`."""


def change_result(record: OperationRecord) -> ChangeResult | None:
    """The public part of a day-2 operation's ``result`` (the handlers' bookkeeping stays internal); for a node
    action that has not run yet, the ids it was asked for."""
    asked = (
        NodeActionChange.model_validate(record.change).node_ids
        if record.type in NODE_ACTION_TYPES and record.change is not None
        else None
    )
    if record.result is None and not asked:
        return None
    public = (record.result or OperationProgress()).public()
    if asked and not public.node_ids:
        public.node_ids = list(asked)
    return public


def stage_view(record: StageRecord) -> StageView:
    """The API view of a stage record."""
    return StageView(
        name=record.name,
        order=record.order,
        status=record.status,
        attempts=record.attempts,
        started_at=record.started_at,
        ended_at=record.ended_at,
        observed_status=record.observed_status,
        resources=record.resources,
        error=record.error,
        teardown_status=record.teardown_status,
        imported=bool(record.imported),
    )


def planned_hyperpod(record: ClusterRecord) -> HyperPodView:
    """The HyperPod cluster as requested, before anything was observed."""
    return HyperPodView(
        cluster_name=record.hyper_pod_cluster_name,
        instance_groups=[
            InstanceGroupView(
                instance_group_name=g.instance_group_name,
                instance_type=g.instance_type,
                instance_count=g.instance_count,
                **InstanceGroupView.requested_fields(g),
            )
            for g in record.request.instance_groups
        ],
    )


def cluster_view(record: ClusterRecord, stages: list[StageRecord]) -> ClusterView:
    """The API view of a cluster: its record, its stages and what they last observed."""
    return ClusterView(
        cluster_tag=record.cluster_tag,
        generation=record.generation,
        status=record.status,
        availability_zone=record.availability_zone,
        region=record.region,
        created_at=record.created_at,
        updated_at=record.updated_at,
        current_operation_id=record.current_operation_id,
        stages=[stage_view(s) for s in stages],
        eks=record.eks or EksView(cluster_name=record.eks_cluster_name),
        hyper_pod=record.hyper_pod or planned_hyperpod(record),
        nodes=record.nodes,
        storage=record.storage,
        imported=record.imported is not None,
        imported_resources=record.imported,
        drift=DriftView(checked_at=record.drift_checked_at, items=record.drift, more_items=record.drift_more),
    )


def group_counts(record: ClusterRecord) -> list[InstanceGroupCounts]:
    """Each instance group's node counts: HyperPod's as last observed (or the request's before that) and the
    Kubernetes nodes last seen Ready and schedulable."""
    ready: dict[str, int] = {}
    for node in record.nodes:
        if node.ready and node.instance_group_name:
            ready[node.instance_group_name] = ready.get(node.instance_group_name, 0) + 1
    groups = (record.hyper_pod or planned_hyperpod(record)).instance_groups
    return [
        InstanceGroupCounts(
            instance_group_name=g.instance_group_name,
            instance_type=g.instance_type,
            target_count=g.target_count if g.target_count is not None else g.instance_count,
            current_count=g.current_count,
            ready_nodes=ready.get(g.instance_group_name, 0),
            status=g.status,
        )
        for g in groups
    ]


def cluster_summary(record: ClusterRecord, stages: list[StageRecord]) -> ClusterSummary:
    """One entry of the cluster list: the record, its current generation's ``stages`` (name and status) and the
    node counts per group."""
    return ClusterSummary(
        cluster_tag=record.cluster_tag,
        status=record.status,
        availability_zone=record.availability_zone,
        created_at=record.created_at,
        updated_at=record.updated_at,
        eks_cluster_name=record.eks_cluster_name,
        hyper_pod_cluster_name=record.hyper_pod_cluster_name,
        current_operation_id=record.current_operation_id,
        stages=[StageStatusView(name=s.name, status=s.status) for s in stages],
        instance_groups=group_counts(record),
    )
