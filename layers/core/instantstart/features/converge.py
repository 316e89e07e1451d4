"""One converging round of a feature toward "on" or "off" (:func:`converge`), the rules of what to write next.

On: the required add-ons first (created, claimed in ``instantstart:needed-by``), then the feature's roles, its own
add-on and pod identity associations once those are ACTIVE (observability's options, :func:`_converge_parts`; fsx's
file system, :mod:`.converge_fsx`; kubeRay's operator objects, :func:`_converge_operator`). Off: only what this
control plane created, a shared add-on only once nobody needs it. Also :func:`teardown`, called when the cluster is
deleted.
"""

from __future__ import annotations

import json

from instantstart.clusters import records, task_governance
from instantstart.clusters.addons import delete_owned_role, ensure_pod_identity_association
from instantstart.errors import StageFailed
from instantstart.features import amp, kuberay
from instantstart.features.catalog import (
    FEATURES,
    FeatureSpec,
    all_roles,
    feature_role_name,
    own_addons,
    roles_of,
    tls_bucket_name,
    wanted_addons,
)
from instantstart.features.converge_fsx import _converge_file_system, _remove_file_system
from instantstart.features.observe import ABSENT, AddonObservation, ClusterObservation
from instantstart.features.plan import FeatureRequest, in_place
from instantstart.features.writes import (
    FeatureFailure,
    _create,
    _Ctx,
    _delete_service_accounts,
    _delete_tls_bucket,
    _ensure_roles,
    _ensure_service_accounts,
    _ensure_tls_bucket,
    _fail_if_failed,
    _health,
    _kube,
    _policy_context,
    _register,
    _release,
    _tiered_on,
)
from instantstart.models.features import AddonFeatureRequest, FsxRequest, TieredCheckpointingRequest
from instantstart.models.task_governance import TASK_GOVERNANCE_FEATURE
from instantstart.naming import owned_by, ownership_tags
from instantstart.runtime import Runtime


def _converge_on(ctx: _Ctx, spec: FeatureSpec, req: FeatureRequest, actions: list[str]) -> bool:
    """One round of writes toward "on"; True when the feature is on and healthy (its add-ons ACTIVE)."""
    if spec.companions or spec.addon_option:
        return _converge_parts(ctx, spec, req, actions)
    obs = ctx.obs
    primary = obs.addons[spec.addon] if spec.addon else None
    version = req.version if isinstance(req, AddonFeatureRequest) else None
    if primary is not None and primary.present and not primary.managed:
        # installed before and outside this control plane: on as it is; never changed here
        if version is not None and primary.version != version:
            raise FeatureFailure(
                "AddonNotManaged",
                f"add-on {primary.name} {primary.version} was not installed by InstantStart; it is not updated here",
            )
        return True
    deps_ready = True
    for dep in spec.requires:
        addon = obs.addons[dep]
        if addon.status == ABSENT:
            _create(ctx, dep, spec.key, version=None, roles={})
            actions.append(f"CreateAddon {dep}")
            deps_ready = False
            continue
        _register(ctx, addon, spec.key, actions)
        if addon.status == "DELETING":
            deps_ready = False
            continue
        _fail_if_failed(addon)
        deps_ready = deps_ready and _health(addon).active
    roles = _ensure_roles(ctx, spec, actions)
    if spec.tls_bucket and obs.features[spec.key].tls_bucket is None:
        _ensure_tls_bucket(ctx, actions)
    if spec.tiered_storage and isinstance(req, TieredCheckpointingRequest):
        _tiered_on(ctx, req, actions)
        _ensure_service_accounts(ctx, spec, actions)
    eks, fo = ctx.eks, obs.features[spec.key]
    for role, arn in roles.items():
        if not role.via_addon and not fo.associations.get((role.namespace, role.service_account)):
            ensure_pod_identity_association(
                eks, ctx.cluster_name, role.namespace, role.service_account, arn, ownership_tags(ctx.tag)
            )
            actions.append(f"CreatePodIdentityAssociation {role.namespace}/{role.service_account}")
    if primary is None:
        return deps_ready and isinstance(req, TieredCheckpointingRequest) and in_place(spec, req, obs)
    if not deps_ready:
        return False
    if primary.status == ABSENT:
        created = _create(ctx, primary.name, spec.key, version=version, roles=roles)
        actions.append(f"CreateAddon {primary.name} {created}")
        return False
    if primary.status == "DELETING":
        return False
    _register(ctx, primary, spec.key, actions)
    if version is not None and primary.version != version and primary.status not in ("CREATING", "UPDATING"):
        eks.update_addon(clusterName=ctx.cluster_name, addonName=primary.name, addonVersion=version)
        actions.append(f"UpdateAddon {primary.name} {version}")
        return False
    _fail_if_failed(primary)
    if not _health(primary).active:
        return False
    for role, arn in roles.items():
        if role.via_addon and not fo.associations.get((role.namespace, role.service_account)):
            ensure_pod_identity_association(
                eks, ctx.cluster_name, role.namespace, role.service_account, arn, ownership_tags(ctx.tag)
            )
            actions.append(f"CreatePodIdentityAssociation {role.namespace}/{role.service_account}")
    if isinstance(req, FsxRequest) and req.file_system is not None:
        return _converge_file_system(ctx, spec, req, actions)
    return True


def _ensure_requires(ctx: _Ctx, spec: FeatureSpec, actions: list[str]) -> bool:
    """Create the add-ons the feature requires when absent and register it as their needer; True when all ACTIVE."""
    ready = True
    for dep in spec.requires:
        addon = ctx.obs.addons[dep]
        if addon.status == ABSENT:
            _create(ctx, dep, spec.key, version=None, roles={})
            actions.append(f"CreateAddon {dep}")
            ready = False
            continue
        _register(ctx, addon, spec.key, actions)
        if addon.status == "DELETING":
            ready = False
            continue
        _fail_if_failed(addon)
        ready = ready and _health(addon).active
    return ready


def _workspace(ctx: _Ctx, spec: FeatureSpec, actions: list[str]) -> amp.WorkspaceObservation | None:
    """The feature's ACTIVE Prometheus workspace; CreateWorkspace when there is none (None until ACTIVE)."""
    found = ctx.obs.features[spec.key].prometheus_workspaces
    ws = amp.live(found)
    if ws is None:
        failed = [w for w in found if w.status == "CREATION_FAILED"]
        if failed:
            raise FeatureFailure("WorkspaceCreationFailed", f"Prometheus workspace {failed[0].workspace_id} failed")
        workspace_id = amp.create_workspace(ctx.rt.client("amp"), ctx.tag)
        actions.append(f"CreateWorkspace {workspace_id}")
        return None
    return ws if ws.status == "ACTIVE" else None


def _part_on(
    ctx: _Ctx,
    spec: FeatureSpec,
    addon: AddonObservation,
    version: str | None,
    ws: amp.WorkspaceObservation | None,
    actions: list[str],
) -> bool:
    """One round toward one of the feature's own add-ons on (its roles, the add-on, its associations, and for the
    feature's add-on the workspace in its configuration); True when ACTIVE and complete."""
    if addon.present and not addon.managed:
        if version is not None and addon.version != version:
            raise FeatureFailure(
                "AddonNotManaged",
                f"add-on {addon.name} {addon.version} was not installed by InstantStart; it is not updated here",
            )
        return True
    needs_ws = spec.prometheus_workspace and addon.name == spec.addon
    if needs_ws and ws is None:
        return False
    roles = _ensure_roles(ctx, spec, actions, roles_of(spec, addon.name), ws.arn if ws else None)
    configuration = amp.configuration_values(ws) if needs_ws and ws else None
    if addon.status == ABSENT:
        created = _create(ctx, addon.name, spec.key, version=version, roles=roles, configuration=configuration)
        actions.append(f"CreateAddon {addon.name} {created}")
        return False
    if addon.status == "DELETING":
        return False
    _register(ctx, addon, spec.key, actions)
    if addon.status in ("CREATING", "UPDATING"):
        return False
    if version is not None and addon.version != version:
        ctx.eks.update_addon(clusterName=ctx.cluster_name, addonName=addon.name, addonVersion=version)
        actions.append(f"UpdateAddon {addon.name} {version}")
        return False
    if needs_ws and ws is not None and not amp.references(addon.configuration, ws):
        # the workspace was replaced: the collector's policy and the add-on's configuration follow it
        for role in roles:
            policy = role.policy(_policy_context(ctx.rt, ctx.tag, ctx.cluster_name, ws.arn))
            name = feature_role_name(ctx.tag, role)
            ctx.rt.client("iam").put_role_policy(
                RoleName=name, PolicyName=f"{spec.key}-access", PolicyDocument=json.dumps(policy)
            )
            actions.append(f"PutRolePolicy {name}")
        ctx.eks.update_addon(
            clusterName=ctx.cluster_name, addonName=addon.name, configurationValues=configuration or "{}"
        )
        actions.append(f"UpdateAddon {addon.name} configurationValues ampWorkspace {ws.workspace_id}")
        return False
    _fail_if_failed(addon)
    if not _health(addon).active:
        return False
    fo = ctx.obs.features[spec.key]
    for role, arn in roles.items():
        if not fo.associations.get((role.namespace, role.service_account)):
            ensure_pod_identity_association(
                ctx.eks, ctx.cluster_name, role.namespace, role.service_account, arn, ownership_tags(ctx.tag)
            )
            actions.append(f"CreatePodIdentityAssociation {role.namespace}/{role.service_account}")
    return True


def _part_off(ctx: _Ctx, spec: FeatureSpec, addon: AddonObservation, actions: list[str]) -> bool:
    """One round toward one of the feature's own add-ons off while the feature stays on: the add-on (when this
    control plane installed it), then our associations and roles of it; True when gone."""
    if addon.present and not addon.managed:
        return True  # not ours: left in place
    if addon.status != ABSENT:
        if addon.status != "DELETING":
            ctx.eks.delete_addon(clusterName=ctx.cluster_name, addonName=addon.name)
            actions.append(f"DeleteAddon {addon.name}")
        return False
    fo = ctx.obs.features[spec.key]
    for role in roles_of(spec, addon.name):
        for assoc in fo.associations.get((role.namespace, role.service_account), []):
            if assoc.owner_arn:
                continue
            described = ctx.eks.describe_pod_identity_association(
                clusterName=ctx.cluster_name, associationId=assoc.association_id
            )["association"]
            if owned_by(described.get("tags") or {}, ctx.tag):
                ctx.eks.delete_pod_identity_association(
                    clusterName=ctx.cluster_name, associationId=assoc.association_id
                )
                actions.append(f"DeletePodIdentityAssociation {assoc.namespace}/{assoc.service_account}")
        name = feature_role_name(ctx.tag, role)
        if fo.roles.get(name) is not None and delete_owned_role(ctx.rt.client("iam"), name, ctx.tag):
            actions.append(f"DeleteRole {name}")
    return True


def _converge_parts(ctx: _Ctx, spec: FeatureSpec, req: FeatureRequest, actions: list[str]) -> bool:
    """One round toward "on" for a feature with options (observability): the required add-ons first, then the
    Prometheus workspace (before the collector role, whose policy names it), then each own add-on on or off as the
    request says; a workspace no longer wanted is deleted once the add-on that wrote to it is gone."""
    obs = ctx.obs
    wanted = wanted_addons(spec, req)
    version = getattr(req, "version", None)
    deps_ready = _ensure_requires(ctx, spec, actions)
    primary = obs.addons[spec.addon] if spec.addon else None
    foreign_primary = primary is not None and primary.present and not primary.managed
    ws = None
    if spec.prometheus_workspace and spec.addon in wanted and not foreign_primary:
        ws = _workspace(ctx, spec, actions)
    done = deps_ready
    for name in own_addons(spec):
        addon = obs.addons[name]
        if name in wanted:
            if not deps_ready:
                continue
            done = _part_on(ctx, spec, addon, version if name == spec.addon else None, ws, actions) and done
        else:
            done = _part_off(ctx, spec, addon, actions) and done
    fo = obs.features[spec.key]
    if spec.prometheus_workspace and spec.addon not in wanted and fo.prometheus_workspaces:
        if primary is not None and primary.status == ABSENT:
            deleted = amp.delete_workspaces(ctx.rt.client("amp"), fo.prometheus_workspaces)
            actions += [f"DeleteWorkspace {i}" for i in deleted]
        done = False
    if spec.prometheus_workspace and spec.addon in wanted and not foreign_primary and ws is None:
        done = False
    return done


def _delete_own_associations(ctx: _Ctx, spec: FeatureSpec, actions: list[str]) -> bool:
    """Delete the pod identity associations we created for the feature's roles; True when none of any kind is left.

    Associations an add-on owns (``ownerArn``) go with the add-on; associations without our tags are left.
    """
    eks, fo = ctx.eks, ctx.obs.features[spec.key]
    left = False
    for found in fo.associations.values():
        for assoc in found:
            if assoc.owner_arn:
                left = True
                continue
            described = eks.describe_pod_identity_association(
                clusterName=ctx.cluster_name, associationId=assoc.association_id
            )["association"]
            if owned_by(described.get("tags") or {}, ctx.tag):
                eks.delete_pod_identity_association(clusterName=ctx.cluster_name, associationId=assoc.association_id)
                actions.append(f"DeletePodIdentityAssociation {assoc.namespace}/{assoc.service_account}")
    return not left


def _converge_off(ctx: _Ctx, spec: FeatureSpec, actions: list[str]) -> bool:
    """One round of writes toward "off"; True when nothing the feature created is left.

    ``taskGovernance``: the compute quotas and scheduler config this control plane created on the HyperPod cluster
    are deleted first (:func:`instantstart.clusters.task_governance.release_owned`) and the add-on only once they
    are gone; others' are left alone.
    """
    obs = ctx.obs
    if spec.key == TASK_GOVERNANCE_FEATURE and obs.hyperpod_cluster_arn:
        # Our compute quotas and scheduler config go before the add-on that enforces them (others' stay).
        left = task_governance.release_owned(ctx.rt.client("sagemaker"), obs.hyperpod_cluster_arn, ctx.tag)
        if left:
            actions.extend(f"release task governance {name}" for name in left)
            return False
    storage_gone = _remove_file_system(ctx, spec, actions) if spec.lustre else True
    primary_gone = True
    for name in own_addons(spec):
        primary = obs.addons[name]
        if name != spec.addon and not primary.managed:
            continue  # a companion installed outside this control plane is not ours to remove
        if primary.status != ABSENT:
            if not primary.managed:
                raise FeatureFailure(
                    "AddonNotManaged",
                    f"add-on {primary.name} was not installed by InstantStart (no ownership tags); it is left in place",
                )
            primary_gone = False
            if primary.status != "DELETING":
                ctx.eks.delete_addon(clusterName=ctx.cluster_name, addonName=primary.name)
                actions.append(f"DeleteAddon {primary.name}")
    setting_off = True
    if spec.tiered_storage and (obs.tiered_storage or {}).get("Mode") == "Enable":
        ctx.rt.client("sagemaker").update_cluster(
            ClusterName=records.hyperpod_name(ctx.rt, ctx.tag), TieredStorageConfig={"Mode": "Disable"}
        )
        actions.append("UpdateCluster TieredStorageConfig {'Mode': 'Disable'}")
        setting_off = False
    associations_gone = _delete_own_associations(ctx, spec, actions)
    _delete_service_accounts(ctx, spec, actions)
    if not primary_gone:
        return False
    fo = obs.features[spec.key]
    for name, arn in fo.roles.items():
        if arn is not None and delete_owned_role(ctx.rt.client("iam"), name, ctx.tag):
            actions.append(f"DeleteRole {name}")
    if fo.tls_bucket:
        _delete_tls_bucket(ctx, fo.tls_bucket, actions)
    workspaces_gone = True
    if fo.prometheus_workspaces:
        actions += [
            f"DeleteWorkspace {i}" for i in amp.delete_workspaces(ctx.rt.client("amp"), fo.prometheus_workspaces)
        ]
        workspaces_gone = False
    for dep in spec.requires:
        _release(ctx, obs.addons[dep], spec.key, actions)
    return setting_off and associations_gone and storage_gone and workspaces_gone


def _converge_operator(ctx: _Ctx, spec: FeatureSpec, enabled: bool, actions: list[str]) -> bool:
    """kubeRay: server-side apply the operator objects that are missing (on), or delete the ones left, in reverse
    order (off); True when Kubernetes already matched (nothing written this round)."""
    fo = ctx.obs.features[spec.key]
    if fo.kubernetes is None:
        return False
    kube = _kube()
    objects = kuberay.operator_objects()
    if enabled:
        missing = [o for o in objects if kuberay.object_ref(o) not in fo.kubernetes]
        if missing:
            dyn = kube.connect(ctx.cluster_name, ctx.rt.region)
            for obj in missing:
                kube.apply(dyn, obj)
                actions.append(f"apply {kuberay.object_ref(obj)}")
        return not missing
    left = [o for o in reversed(objects) if kuberay.object_ref(o) in fo.kubernetes]
    if left:
        dyn = kube.connect(ctx.cluster_name, ctx.rt.region)
        for obj in left:
            meta = obj["metadata"]
            if kube.delete(dyn, obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")):
                actions.append(f"delete {kuberay.object_ref(obj)}")
    return not fo.kubernetes


def converge(rt: Runtime, tag: str, key: str, req: FeatureRequest, obs: ClusterObservation) -> tuple[bool, list[str]]:
    """One round toward ``req`` for feature ``key``: ``(settled, writes made)``.

    Settled when AWS matches the request (on: every add-on ACTIVE, roles and associations in place; off: nothing
    it created is left). Writes only what is missing (idempotent on redelivery).

    Raises:
        FeatureFailure: the feature cannot converge (an add-on failed, a resource is not ours).
        botocore.exceptions.ClientError: AWS refused a write (the caller records it verbatim).
    """
    spec = FEATURES[key]
    ctx = _Ctx(rt, tag, obs)
    actions: list[str] = []
    if spec.operator_objects:
        done = _converge_operator(ctx, spec, req.enabled, actions)
    else:
        done = _converge_on(ctx, spec, req, actions) if req.enabled else _converge_off(ctx, spec, actions)
    return done and not actions, actions


def teardown(rt: Runtime, tag: str) -> list[str]:
    """Delete what features created outside the EKS cluster when the cluster is deleted: every feature role and
    the TLS bucket that carry this cluster's ownership tags (add-ons and associations go with the EKS cluster).

    Called by the dependencies stage's teardown. Returns the deletions made.
    """
    actions: list[str] = []
    iam = rt.client("iam")
    for spec in FEATURES.values():
        for role in all_roles(spec):
            name = feature_role_name(tag, role)
            try:
                if delete_owned_role(iam, name, tag):
                    actions.append(f"DeleteRole {name}")
            except StageFailed:
                continue  # not ours: left in place
    actions += amp.teardown(rt.client("amp"), tag)
    bucket = obs_bucket(rt, tag)
    if bucket:
        obs = ClusterObservation(tag, "", None, {}, {}, None, None)
        _delete_tls_bucket(_Ctx(rt, tag, obs), bucket, actions)
    return actions


def obs_bucket(rt: Runtime, tag: str) -> str | None:
    """The cluster's TLS bucket when it exists and carries the cluster's ownership tags."""
    from instantstart.features.observe import owned_bucket

    return owned_bucket(rt.client("s3"), tls_bucket_name(tag, rt.account_id, rt.region), tag)
