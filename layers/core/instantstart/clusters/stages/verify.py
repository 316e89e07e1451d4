"""Stage ``verify``: every instance group at target count of Ready, schedulable nodes; add-ons ACTIVE; PVC Bound.

Create steps: event-or-poll ``check_cluster_verification`` (:mod:`instantstart.clusters.waits`: HyperPod
cluster events and node health events wake it, else it checks every poll interval), and
``report_node_shortfall`` when the wait's time budget ran out. It creates nothing, so it has no
teardown step. Under continuous provisioning HyperPod brings instances up one by one and retries
the ones it cannot launch (capacity, quota): progress is ``currentCount``/``targetCount`` per group,
and the reasons are Error-level cluster events, recorded verbatim on the cluster's ``hyperPod`` view.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.clusters import records
from instantstart.clusters.addons import ADDONS, AddonHealth, addon_state
from instantstart.clusters.events_feed import event_failure_message, event_view
from instantstart.clusters.records import INSUFFICIENT_CAPACITY
from instantstart.clusters.stages import hyperpod
from instantstart.clusters.stages.common import Step
from instantstart.clusters.stages.storage import pvc_phase
from instantstart.errors import StageFailed
from instantstart.models.cluster import NodeView
from instantstart.models.cluster_events import ClusterEventView
from instantstart.models.common import StageName, seconds_between
from instantstart.models.resources import VerifyResources
from instantstart.models.workflow import LoopConfig, PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime

STAGE = StageName.VERIFY
HYPERPOD_NODES = "sagemaker.amazonaws.com/compute-type=hyperpod"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
LATEST_ERRORS = 5


def node_view(node: dict[str, Any]) -> NodeView:
    """The API view of a Kubernetes Node object of a HyperPod instance group."""
    labels = node.get("metadata", {}).get("labels", {}) or {}
    conditions = node.get("status", {}).get("conditions", []) or []
    name = str(node["metadata"]["name"])
    return NodeView(
        node_name=name,
        # HyperPod names its Kubernetes nodes hyperpod-<EC2 instance id>
        instance_id=name.removeprefix("hyperpod-") if name.startswith("hyperpod-i-") else None,
        instance_type=labels.get("node.kubernetes.io/instance-type"),
        instance_group_name=labels.get("sagemaker.amazonaws.com/instance-group-name"),
        ready=any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
        health_status=labels.get(HEALTH_LABEL),
    )


def latest_error_events(sm: Any, cluster_name: str, limit: int = LATEST_ERRORS) -> list[ClusterEventView]:
    """The newest Error-level HyperPod cluster events (SageMaker ``ListClusterEvents``, newest first), verbatim.

    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ListClusterEvents.html
    """
    out = sm.list_cluster_events(ClusterName=cluster_name, SortBy="EventTime", SortOrder="Descending", MaxResults=50)
    return [event_view(e) for e in out.get("Events", []) if e.get("EventLevel") == "Error"][:limit]


@dataclass
class GroupCounts:
    """Per instance group: the requested count and HyperPod's ``CurrentCount`` (``DescribeCluster``)."""

    targets: dict[str, int]
    current: dict[str, int]


def _observe_hyperpod(rt: Runtime, tag: str, generation: int) -> GroupCounts:
    """Refresh the cluster's ``hyperPod`` view (counts and latest Error events) from ``DescribeCluster``.

    Raises:
        StageFailed: ``ResourceNotFound`` when the HyperPod cluster does not exist.
    """
    cluster = records.cluster_record(rt, tag)
    groups = cluster.request.instance_groups
    sm = rt.client("sagemaker")
    name = cluster.hyper_pod_cluster_name
    found = hyperpod.describe(sm, name)
    if found is None:
        raise StageFailed("ResourceNotFound", f"HyperPod cluster {name} does not exist")
    hyperpod.observe(rt, tag, generation, found, groups, latest_errors=latest_error_events(sm, name))
    return GroupCounts(
        targets={g.instance_group_name: g.instance_count for g in groups},
        current={str(g["InstanceGroupName"]): int(g.get("CurrentCount", 0)) for g in found.get("InstanceGroups", [])},
    )


@dataclass
class Inspection:
    """What one check of the cluster found."""

    targets: dict[str, int]
    """Requested instance count per group."""
    short: dict[str, tuple[int, int]]
    """``{group: (healthy, target)}`` of the groups below target."""
    addons: list[AddonHealth]
    pvc_phase: str | None

    @property
    def pending_addons(self) -> list[AddonHealth]:
        """Add-ons not ACTIVE yet."""
        return [a for a in self.addons if not a.active]

    @property
    def complete(self) -> bool:
        """Every group at target, every add-on ACTIVE, the PVC Bound."""
        return not self.short and not self.pending_addons and self.pvc_phase == "Bound"

    def summary(self) -> str:
        """``n/m nodes Ready and Schedulable, a/b add-ons ACTIVE, PVC <phase>``."""
        expected = sum(self.targets.values())
        ready = expected - sum(t - h for h, t in self.short.values())
        active = len(self.addons) - len(self.pending_addons)
        return (
            f"{ready}/{expected} nodes Ready and Schedulable, {active}/{len(self.addons)} add-ons ACTIVE, "
            f"PVC {self.pvc_phase}"
        )


def inspect(rt: Runtime, tag: str, generation: int) -> Inspection:
    """Check the cluster as AWS and Kubernetes report it, recording what was seen (hyperPod view, nodes).

    Calls SageMaker ``DescribeCluster`` and ``ListClusterEvents``, lists the Kubernetes nodes labelled
    ``sagemaker.amazonaws.com/compute-type=hyperpod`` and the PVC, and EKS ``DescribeAddon`` of each add-on.
    """
    from instantstart.kube.client import connect, list_objects

    counts = _observe_hyperpod(rt, tag, generation)
    dyn = connect(records.eks_name(rt, tag, generation), rt.region)
    nodes = [node_view(n) for n in list_objects(dyn, "v1", "Node", label_selector=HYPERPOD_NODES)]
    rt.store.record_observations(tag, now=records.now(), nodes=nodes)
    ready = healthy_nodes(nodes, counts.current)
    short = {g: (ready.get(g, 0), t) for g, t in counts.targets.items() if ready.get(g, 0) < t}
    eks = rt.client("eks")
    addons = [addon_state(eks, records.eks_name(rt, tag, generation), a.name) for a in ADDONS]
    return Inspection(targets=counts.targets, short=short, addons=addons, pvc_phase=pvc_phase(dyn))


def healthy_nodes(nodes: list[NodeView], current: dict[str, int]) -> dict[str, int]:
    """Per instance group, the nodes that count as up: Ready and ``Schedulable`` in Kubernetes, at most
    HyperPod's ``CurrentCount`` of the group (both views must agree before a cluster is READY)."""
    healthy: dict[str, int] = {}
    for n in nodes:
        if n.ready and n.health_status == "Schedulable" and n.instance_group_name:
            healthy[n.instance_group_name] = healthy.get(n.instance_group_name, 0) + 1
    return {g: min(h, current.get(g, 0)) for g, h in healthy.items()}


def capacity_reached(rt: Runtime, tag: str, generation: int) -> tuple[bool, str]:
    """Whether every instance group runs its requested count and every add-on is ACTIVE, from AWS APIs only.

    The event reconciler's check (it has no Kubernetes access): SageMaker ``DescribeCluster``
    (``CurrentCount`` per group, recorded on the ``hyperPod`` view) and EKS ``DescribeAddon``.
    Returns ``(reached, summary)``.
    """
    counts = _observe_hyperpod(rt, tag, generation)
    targets, current = counts.targets, counts.current
    short = {g: (current.get(g, 0), t) for g, t in targets.items() if current.get(g, 0) < t}
    eks = rt.client("eks")
    pending = [a.name for a in ADDONS if not addon_state(eks, records.eks_name(rt, tag, generation), a.name).active]
    expected = sum(targets.values())
    running = expected - sum(t - c for c, t in short.values())
    summary = f"{running}/{expected} instances running, {len(ADDONS) - len(pending)}/{len(ADDONS)} add-ons ACTIVE"
    return (not short and not pending), summary


def _nodes_ready_at(rt: Runtime, p: StepPayload, *, nodes_at_target: bool) -> str:
    """When the nodes were first seen at target (kept while they stay there), now when first seen; "" when not."""
    if not nodes_at_target:
        return ""
    previous = records.stage_resources(rt, p.cluster_tag, p.generation, STAGE, VerifyResources)
    return previous.nodes_ready_at or records.now()


def grace_elapsed(rt: Runtime, p: StepPayload, nodes_ready_at: str) -> float:
    """Seconds an add-on has had since the nodes were Ready, counted from this attempt's start when later.

    Measured between record timestamps (:func:`instantstart.clusters.records.now`), never by counting checks: a
    check woken by an event comes sooner than the poll interval. A retry of the stage gets a fresh grace.
    """
    stage = rt.store.get_stage(p.cluster_tag, p.generation, STAGE)
    since = nodes_ready_at
    if stage is not None and stage.started_at and seconds_between(since, stage.started_at) > 0:
        since = stage.started_at
    return seconds_between(since, records.now())


def check_cluster_verification(rt: Runtime, p: StepPayload) -> PollResult:
    """Check of the event-or-poll wait: done when every group is at target, every add-on ACTIVE, ``s3-claim`` Bound.

    Raises:
        StageFailed: an add-on failed, or is still not ACTIVE ``addonGraceSeconds`` after the nodes were
            Ready (its health issue verbatim).
    """
    config = p.config or LoopConfig()
    found = inspect(rt, p.cluster_tag, p.generation)
    for health in found.addons:
        if health.failed:
            raise health.error()
    pending = found.pending_addons
    ready_at = _nodes_ready_at(rt, p, nodes_at_target=not found.short)
    if pending and ready_at and grace_elapsed(rt, p, ready_at) > config.addon_grace_seconds:
        raise pending[0].error()
    expected = sum(found.targets.values())
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=STAGE,
        resources=VerifyResources(
            ready_nodes=expected - sum(t - h for h, t in found.short.values()),
            expected_nodes=expected,
            pvc_phase=found.pvc_phase,
            addons_active=len(found.addons) - len(pending),
            nodes_ready_at=ready_at,
        ),
        observed_status=found.summary(),
    )
    return PollResult(done=found.complete, status=found.summary())


def report_node_shortfall(rt: Runtime, p: StepPayload) -> StepResult:
    """The wait's time budget ran out: fail with the reason the user can act on.

    Raises:
        StageFailed: ``InsufficientCapacity`` with the latest Error-level cluster event verbatim (HyperPod
            keeps retrying; the cluster becomes DEGRADED and turns READY by itself when the nodes arrive),
            or the add-on that is not ACTIVE, or the PVC that is not Bound.
    """
    found = inspect(rt, p.cluster_tag, p.generation)
    if found.complete:  # the last round's check ran out of budget just as everything arrived
        return StepResult(status=found.summary())
    if found.short:
        counts = ", ".join(f"{g} {h}/{t}" for g, (h, t) in sorted(found.short.items()))
        cluster = records.cluster_record(rt, p.cluster_tag)
        errors = cluster.hyper_pod.latest_errors if cluster.hyper_pod else []
        reason = (errors[0].description if errors else None) or "HyperPod has not launched the instances yet"
        if errors:
            with suppress(ClientError):  # the summary is still worth reporting
                reason = (
                    event_failure_message(rt.client("sagemaker"), cluster.hyper_pod_cluster_name, errors[0].event_id)
                    or reason
                )
        raise StageFailed(INSUFFICIENT_CAPACITY, f"{reason} (Ready nodes: {counts}; HyperPod keeps retrying)")
    if found.pending_addons:
        raise found.pending_addons[0].error()
    raise StageFailed("PersistentVolumeClaimNotBound", f"s3-claim is {found.pvc_phase}, not Bound")


CREATE_STEPS: dict[str, Step] = {
    "check_cluster_verification": check_cluster_verification,
    "report_node_shortfall": report_node_shortfall,
}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {}
"""Nothing to tear down: the stage only checks."""
