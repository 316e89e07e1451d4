"""``POST /clusters/{clusterTag}/reconcile``: check drift now, repair what is the control plane's own.

:func:`reconcile_cluster` (the API's side) checks drift once (:func:`instantstart.clusters.drift.check_drift`) and
records it, then:

- nothing differs: answers so (:class:`~instantstart.models.drift.ReconcileAnswer`, no operation);
- something is ``repairable`` (today: an add-on of the dependencies stage that was deleted outside): starts a
  ``RECONCILE_CLUSTER`` operation of the update workflow carrying what it repairs
  (:class:`~instantstart.models.drift.ReconcileChange`); the rest stays reported;
- nothing is repairable: refuses with 409 ``DriftNotRepairable`` naming each resource and why (not the control
  plane's own, or not something it re-creates).

The workflow's change (:data:`CHANGES`): :func:`apply_repair` re-creates each add-on with the dependencies stage's
own rule (:func:`instantstart.clusters.addons.ensure_addon`: its ownership tags, its role through EKS Pod Identity),
:func:`check_repair` waits until each is ACTIVE (on a DEGRADED cluster, one whose workload needs nodes may be only
waiting for them, as the stage allows), :func:`finish_repair` clears the repaired items from the recorded drift.
"""

from __future__ import annotations

from instantstart.clusters import changes, records
from instantstart.clusters.addons import ADDONS_BY_NAME, addon_state, ensure_addon
from instantstart.clusters.drift import CHECKED, check_drift, record_drift
from instantstart.clusters.drift_rules import ADDON
from instantstart.clusters.executions import refuse_while_running
from instantstart.errors import Conflict, StageFailed
from instantstart.models.common import ClusterStatus, OperationType, StageName
from instantstart.models.drift import DriftItem, ReconcileAnswer, ReconcileChange
from instantstart.models.operation import OperationView
from instantstart.models.resources import AddonResource, DependenciesResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime
from instantstart.store.errors import ConditionFailed

NO_DRIFT = "no drift: AWS reports what the records say; nothing to do"


def _why(item: DriftItem) -> str:
    if not item.owned:
        return "not the control plane's own (no instantstart ownership tags): never touched"
    return "reported only: the control plane does not re-create or undo it"


def not_repairable(tag: str, items: list[DriftItem]) -> Conflict:
    """The 409 ``DriftNotRepairable`` naming each drifted resource and why it is left alone."""
    details = [
        {
            "field": "clusterTag",
            "resourceType": i.resource_type,
            "name": i.name,
            "driftField": i.field,
            "owned": i.owned,
            "reason": _why(i),
            "message": i.message,
        }
        for i in items
    ]
    named = "; ".join(f"{i.resource_type} {i.name} ({i.field}): {_why(i)}" for i in items)
    return Conflict(
        f"cluster '{tag}' drifted, but nothing of it is the control plane's to repair: {named}; nothing was done",
        code="DriftNotRepairable",
        details=details,
    )


def reconcile_cluster(rt: Runtime, tag: str) -> OperationView | ReconcileAnswer:
    """Check the drift of cluster ``tag`` now, record it, and repair what is the control plane's own.

    Returns the ``RECONCILE_CLUSTER`` operation started (202), or a :class:`ReconcileAnswer` when nothing
    differs (200). Reads AWS as :func:`instantstart.clusters.drift.check_drift`; calls Step Functions
    ``StartExecution``.

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady`` (not READY or DEGRADED), ``OperationInProgress`` (another operation holds the
            cluster), ``DriftNotRepairable`` (drift, none of it repairable: each resource and why).
        ClientError: an AWS read failed (the API answers 503 for throttling and 5xx).
    """
    cluster = records.live_cluster(rt, tag)
    if cluster.status not in CHECKED:
        raise Conflict(
            f"cluster '{tag}' is {cluster.status.value}; reconcile needs a READY or DEGRADED cluster",
            code="ClusterNotReady",
            details=[{"field": "clusterTag", "status": cluster.status.value}],
        )
    refuse_while_running(rt, cluster)
    now = records.now()
    items = check_drift(rt, cluster, now=now)
    record_drift(rt, cluster, items, now=now)
    if not items:
        return ReconcileAnswer(cluster_tag=tag, drift=[], checked_at=now, message=NO_DRIFT)
    repairable = [i for i in items if i.repairable]
    if not repairable:
        raise not_repairable(tag, items)
    change = ReconcileChange(addons=sorted({i.name for i in repairable if i.resource_type == ADDON}))
    return changes.start_change(rt, cluster, OperationType.RECONCILE_CLUSTER, change)


def _change(rt: Runtime, p: StepPayload) -> ReconcileChange:
    _, change = changes.operation_change(rt, p, ReconcileChange)
    return change


def apply_repair(rt: Runtime, p: StepPayload) -> StepResult:
    """Re-create each add-on of the change that is still missing (EKS ``DescribeAddon``, ``CreateAddon``, and IAM
    for the role of one that needs it: :func:`ensure_addon`, idempotent) and record them on the dependencies stage.

    Raises:
        StageFailed: ``UnknownAddon`` for a name the dependencies stage does not install; ``RoleNotOwned`` (from
            :func:`ensure_addon`).
    """
    change = _change(rt, p)
    unknown = [n for n in change.addons if n not in ADDONS_BY_NAME]
    if unknown:
        raise StageFailed("UnknownAddon", f"not an add-on the control plane installs: {', '.join(unknown)}")
    cluster_name = records.eks_name(rt, p.cluster_tag, p.generation)
    results = {
        name: ensure_addon(
            rt.client("eks"),
            rt.client("iam"),
            tag=p.cluster_tag,
            cluster_name=cluster_name,
            addon=ADDONS_BY_NAME[name],
            account_id=rt.account_id,
            region=rt.region,
            role_path=rt.settings.STORAGE_ROLE_PATH,
            permissions_boundary=rt.settings.STORAGE_PERMISSIONS_BOUNDARY_ARN or None,
        )
        for name in change.addons
    }
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=StageName.DEPENDENCIES,
        resources=DependenciesResources(addons=results),
    )
    return StepResult(status=f"re-created {', '.join(change.addons) or 'nothing'}")


def check_repair(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once each re-created add-on is ACTIVE; on a DEGRADED cluster (nodes missing), one whose workload needs
    nodes may be only waiting for them (the dependencies stage's rule). Calls EKS ``DescribeAddon``.

    Raises:
        StageFailed: an add-on failed: its health issue verbatim.
    """
    change = _change(rt, p)
    eks = rt.client("eks")
    cluster_name = records.eks_name(rt, p.cluster_tag, p.generation)
    states = {n: addon_state(eks, cluster_name, n) for n in change.addons}
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=StageName.DEPENDENCIES,
        resources=DependenciesResources(addons={n: AddonResource(status=h.status) for n, h in states.items()}),
    )
    for health in states.values():
        if health.failed:
            raise health.error()
    degraded = records.cluster_record(rt, p.cluster_tag).status is ClusterStatus.DEGRADED
    pending = [
        n
        for n, h in states.items()
        if not (h.active or (degraded and ADDONS_BY_NAME[n].needs_nodes and h.waiting_for_nodes))
    ]
    return PollResult(done=not pending, status=f"waiting for {', '.join(pending)}" if pending else "repaired")


def finish_repair(rt: Runtime, p: StepPayload) -> None:
    """Clear the repaired add-ons' items from the recorded drift, with ``driftCheckedAt`` = now (the repair saw
    them back; a check that read AWS before is older and is dropped by :func:`record_drift`)."""
    repaired = set(_change(rt, p).addons)
    for _ in range(3):
        cluster = rt.store.get_cluster(p.cluster_tag)
        if cluster is None or cluster.generation != p.generation:
            return
        kept = [i for i in cluster.drift if not (i.resource_type == ADDON and i.name in repaired)]
        if len(kept) == len(cluster.drift) or cluster.drift_checked_at is None:
            return
        try:
            rt.store.record_drift(
                p.cluster_tag,
                p.generation,
                kept,
                more=cluster.drift_more,
                checked_at=max(records.now(), cluster.drift_checked_at),
                if_checked_at=cluster.drift_checked_at,
            )
            return
        except ConditionFailed:
            continue


CHANGES = {
    OperationType.RECONCILE_CLUSTER: changes.ClusterChange(apply=apply_repair, check=check_repair, finish=finish_repair)
}
"""The update workflow's handler of ``RECONCILE_CLUSTER``."""
