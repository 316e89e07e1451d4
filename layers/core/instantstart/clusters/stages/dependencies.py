"""Stage ``dependencies``: EKS add-ons and the Kubernetes objects HyperPod needs before nodes join.

Create steps: ``create_addons`` (every add-on requested at once: EKS installs them in parallel),
``apply_hyperpod_prerequisites``, then the wait ``check_addons``: only what HyperPod needs before
nodes join (the pod identity agent, a DaemonSet) must be ACTIVE; add-ons whose workloads are
Deployments only need to exist without failing, and ``verify`` checks them after nodes joined.
Teardown step: poll ``delete_addons`` (with the FSx file systems and security group of the ``fsx`` feature, which
must be gone before the network teardown; then pod identity associations, the storage role and the roles and
bucket of managed features).
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.clusters.addons import ADDONS, ADDONS_BY_NAME, addon_state, delete_owned_role, ensure_addon
from instantstart.clusters.registry import REGISTRY, Teardown
from instantstart.clusters.stages.common import GONE, Step
from instantstart.kube import objects
from instantstart.models.common import StageName
from instantstart.models.resources import AddonResource, DependenciesResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import owned_by, storage_role_name
from instantstart.runtime import Runtime

STAGE = StageName.DEPENDENCIES


def _record(rt: Runtime, p: StepPayload, resources: DependenciesResources) -> None:
    records.update_stage_resources(rt, tag=p.cluster_tag, generation=p.generation, stage=STAGE, resources=resources)


def create_addons(rt: Runtime, p: StepPayload) -> StepResult:
    """Request every add-on of :data:`ADDONS` not there yet (:func:`instantstart.clusters.addons.ensure_addon`).

    EKS ``CreateAddon`` returns at once and EKS installs the add-ons in parallel; ``check_addons`` waits.
    """
    results = {
        a.name: ensure_addon(
            rt.client("eks"),
            rt.client("iam"),
            tag=p.cluster_tag,
            cluster_name=records.eks_name(rt, p.cluster_tag, p.generation),
            addon=a,
            account_id=rt.account_id,
            region=rt.region,
            role_path=rt.settings.STORAGE_ROLE_PATH,
            permissions_boundary=rt.settings.STORAGE_PERMISSIONS_BOUNDARY_ARN or None,
        )
        for a in ADDONS
    }
    _record(rt, p, DependenciesResources(addons=results))
    return StepResult(status=f"{len(results)} add-ons requested")


def check_addons(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once every add-on is ACTIVE, or, for one that needs nodes, created and only waiting for them.

    An add-on whose workload is a Deployment cannot be healthy before HyperPod nodes join: it is
    DEGRADED (``InsufficientNumberOfReplicas``) or CREATING until then, and ``verify`` checks it after
    the nodes are Ready. Calls EKS ``DescribeAddon`` for each add-on.

    Raises:
        StageFailed: an add-on failed (CREATE_FAILED, or DEGRADED for another reason): its health issue verbatim.
    """
    eks = rt.client("eks")
    states = {a.name: addon_state(eks, records.eks_name(rt, p.cluster_tag, p.generation), a.name) for a in ADDONS}
    _record(rt, p, DependenciesResources(addons={n: AddonResource(status=h.status) for n, h in states.items()}))
    for health in states.values():
        if health.failed:
            raise health.error()
    pending = [
        n for n, h in states.items() if not (h.active or (ADDONS_BY_NAME[n].needs_nodes and h.waiting_for_nodes))
    ]
    return PollResult(done=not pending, status=f"waiting for {', '.join(pending)}" if pending else "ready")


def apply_hyperpod_prerequisites(rt: Runtime, p: StepPayload) -> StepResult:
    """Server-side apply the Kubernetes objects HyperPod needs before nodes join."""
    from instantstart.kube.client import apply, connect

    dyn = connect(records.eks_name(rt, p.cluster_tag, p.generation), rt.region)
    applied = []
    for obj in objects.hyperpod_prerequisites(rt.region):
        apply(dyn, obj)
        ns = obj["metadata"].get("namespace")
        applied.append(f"{obj['kind']}/{ns + '/' if ns else ''}{obj['metadata']['name']}")
    _record(rt, p, DependenciesResources(kubernetes_objects=applied))
    return StepResult(status=f"{len(applied)} applied")


def summary(rt: Runtime, tag: str, generation: int) -> str:
    """The observed status the stage ends with: add-ons ACTIVE and Kubernetes objects applied (its resources)."""
    res = records.stage_resources(rt, tag, generation, STAGE, DependenciesResources)
    active = sum(1 for a in res.addons.values() if a.status == "ACTIVE")
    waiting = sum(
        1 for a in ADDONS if a.needs_nodes and res.addons.get(a.name, AddonResource(status="")).status != "ACTIVE"
    )
    applied = len(res.kubernetes_objects or [])
    summary = f"{active}/{len(ADDONS)} add-ons ACTIVE, {applied} Kubernetes objects applied"
    return summary + (f"; {waiting} waiting for nodes (checked in verify)" if waiting else "")


# -- teardown ----------------------------------------------------------------------------------
def delete_addons(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once every add-on of the stage and what the areas' :attr:`~instantstart.clusters.registry.Teardown.
    NETWORK` hooks delete are gone (the ``fsx`` feature's file systems, then their security group; the MLflow server
    or app created for the cluster, then its association and roles); then deletes pod identity associations, the
    storage role and what the :attr:`~instantstart.clusters.registry.Teardown.ROLES` hooks delete (the features'
    roles and bucket).

    Only add-ons and associations carrying the cluster's ownership tags are deleted (EKS ``DescribeAddon``,
    ``DescribePodIdentityAssociation``): those that existed before ``POST /clusters/import`` stay. Associations an
    add-on owns (``ownerArn``) are skipped: EKS refuses to delete them, they go with the add-on.
    """
    eks = rt.client("eks")
    name = records.eks_name(rt, p.cluster_tag, p.generation)
    # an FSx file system's network interface would keep the subnet and security groups from the network teardown
    storage = REGISTRY.teardown(Teardown.NETWORK, rt, p.cluster_tag)
    remaining = []
    for addon in ADDONS:
        try:
            found = eks.describe_addon(clusterName=name, addonName=addon.name)["addon"]
        except ClientError as exc:
            if error_code(exc) in GONE:
                continue
            raise
        if not owned_by(found.get("tags", {}), p.cluster_tag):
            continue
        remaining.append(addon.name)
        if found["status"] != "DELETING":
            eks.delete_addon(clusterName=name, addonName=addon.name)
    if remaining or storage:
        return PollResult(done=False, status=f"deleting {', '.join(remaining + storage)}")
    try:
        for assoc in eks.list_pod_identity_associations(clusterName=name)["associations"]:
            if assoc.get("ownerArn"):  # an add-on's (a feature's add-on): EKS refuses; it goes with the add-on
                continue
            found = eks.describe_pod_identity_association(clusterName=name, associationId=assoc["associationId"])
            if owned_by(found["association"].get("tags", {}), p.cluster_tag):
                eks.delete_pod_identity_association(clusterName=name, associationId=assoc["associationId"])
    except ClientError as exc:
        if error_code(exc) not in GONE:
            raise
    _delete_storage_role(rt, p.cluster_tag)
    REGISTRY.teardown(Teardown.ROLES, rt, p.cluster_tag)
    return PollResult(done=True, status="deleted")


def _delete_storage_role(rt: Runtime, tag: str) -> None:
    delete_owned_role(rt.client("iam"), storage_role_name(tag), tag)


CREATE_STEPS: dict[str, Step] = {
    "create_addons": create_addons,
    "apply_hyperpod_prerequisites": apply_hyperpod_prerequisites,
    "check_addons": check_addons,
}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {"delete_addons": delete_addons}
"""The delete workflow's steps of this stage, by task action name."""
