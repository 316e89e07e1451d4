"""Managed features: ``GET``/``PATCH /clusters/{clusterTag}/features`` and the ``UPDATE_FEATURES`` day-2 change.

API side: :func:`get_features` (observed state now, what was last applied, what each feature installed) and
:func:`update_features` (observe, validate pinned versions, diff; an empty diff answers at once with every
feature ``unchanged`` and no AWS write; otherwise an ``UPDATE_FEATURES`` operation of the update workflow).

Workflow side (:data:`CHANGES`): ``apply`` re-observes, re-diffs and makes one converging round of writes for
each feature to change; each ``check`` round re-observes and makes the next writes (a feature's operator add-on
is created only once the add-ons it requires are ACTIVE) until every feature is settled. Each round writes only
what is missing, so a redelivered task writes nothing twice. A feature that fails (AWS error verbatim) stops
only itself; the operation ends FAILED naming the failed features, with every feature's outcome on it.

Ownership: add-ons, roles, associations and buckets made here carry the cluster's ownership tags; a shared
add-on lists who needs it in its ``instantstart:needed-by`` tag (read back from EKS), and "off" releases only
this feature's claim: the add-on is deleted when nobody needs it any more, never when it existed before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, records, service, task_governance
from instantstart.clusters.addons import (
    AddonHealth,
    create_addon,
    delete_owned_role,
    ensure_pod_identity_association,
    ensure_role,
    pod_identity_trust,
)
from instantstart.errors import Conflict, StageFailed, ValidationFailed
from instantstart.features import amp, fsx, kuberay
from instantstart.features.catalog import (
    FEATURES,
    FeatureSpec,
    PodIdentityRole,
    PolicyContext,
    addons_of,
    all_roles,
    feature_role_name,
    own_addons,
    roles_of,
    tls_bucket_name,
    wanted_addons,
)
from instantstart.features.observe import (
    ABSENT,
    KUBERNETES_KINDS,
    KUBERNETES_READ_BUDGET_SECONDS,
    NEEDED_BY_KEY,
    AddonObservation,
    ClusterObservation,
    observe,
)
from instantstart.features.plan import (
    FeatureRequest,
    claim_names,
    compatible_versions,
    in_place,
    live_file_system,
    plan,
    requested,
)
from instantstart.models.cluster import StageError
from instantstart.models.common import ClusterStatus, OperationType
from instantstart.models.features import (
    AddonFeatureRequest,
    FeatureList,
    FeatureOutcome,
    FeatureResult,
    FeaturesChange,
    FeatureState,
    FeatureUpdateResult,
    FsxRequest,
    InstalledAddon,
    InstalledAssociation,
    InstalledDataRepositoryAssociation,
    InstalledFileSystem,
    TieredCheckpointingRequest,
    UpdateFeaturesRequest,
)
from instantstart.models.operation import OperationView
from instantstart.models.task_governance import TASK_GOVERNANCE_FEATURE
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import owned_by, ownership_tags, storage_bucket_name, tag_list
from instantstart.runtime import Runtime

_CHANGEABLE = (ClusterStatus.READY, ClusterStatus.DEGRADED)


class FeatureFailure(Exception):
    """One feature cannot converge: ``code`` and ``message`` (AWS's verbatim when AWS refused)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


# -- API side -----------------------------------------------------------------------------------
def _state(spec: FeatureSpec, obs: ClusterObservation, desired: dict[str, Any] | None) -> FeatureState:
    fo = obs.features[spec.key]
    addons = [
        InstalledAddon(
            addon_name=a.name,
            addon_version=a.version,
            status=a.status,
            managed=a.managed,
            needed_by=sorted(a.needed_by),
        )
        for a in (obs.addons[n] for n in addons_of(spec))
    ]
    primary = obs.addons[spec.addon] if spec.addon else None
    associations = [
        InstalledAssociation(namespace=a.namespace, service_account=a.service_account, association_id=a.association_id)
        for found in fo.associations.values()
        for a in found
    ]
    enabled = obs.enabled(spec)
    settings = None
    if spec.tiered_storage:
        settings = dict(obs.tiered_storage or {})
    if spec.prometheus_workspace and fo.prometheus_workspaces:
        settings = {
            "prometheusWorkspaces": [
                {
                    "workspaceId": w.workspace_id,
                    "arn": w.arn,
                    "status": w.status,
                    "prometheusEndpoint": w.prometheus_endpoint,
                }
                for w in fo.prometheus_workspaces
            ]
        }
    return FeatureState(
        enabled=enabled,
        desired=desired,
        version=primary.version if primary else None,
        status=primary.status if primary else (obs.tiered_storage or {}).get("Mode") if spec.tiered_storage else None,
        settings=settings,
        managed=bool(primary.managed) if primary else any(fo.roles.values()),
        addons=addons,
        roles=[arn for arn in fo.roles.values() if arn],
        pod_identity_associations=associations,
        kubernetes_objects=(list(spec.kubernetes_objects) if enabled and not spec.operator_objects else [])
        + sorted(fo.kubernetes or ()),
        kubernetes_unknown=dict(fo.kubernetes_unknown),
        buckets=[fo.tls_bucket] if fo.tls_bucket else [],
        file_systems=[
            InstalledFileSystem(
                file_system_id=f.file_system_id,
                lifecycle=f.lifecycle,
                storage_capacity=f.storage_capacity,
                deployment_type=f.deployment_type,
                per_unit_storage_throughput=f.per_unit_storage_throughput,
                dns_name=f.dns_name,
                mount_name=f.mount_name,
                file_system_type_version=f.file_system_type_version,
                data_repository_associations=[
                    InstalledDataRepositoryAssociation(
                        association_id=a.association_id,
                        lifecycle=a.lifecycle,
                        file_system_path=a.file_system_path,
                        data_repository_path=a.data_repository_path,
                        failure=a.failure,
                    )
                    for a in fo.data_repository_associations
                    if a.file_system_id == f.file_system_id
                ],
            )
            for f in fo.file_systems
        ],
        security_groups=[fo.security_group] if fo.security_group else [],
    )


def get_features(rt: Runtime, tag: str) -> FeatureList:
    """Every managed feature of the cluster: observed from AWS and Kubernetes now, plus what PATCH last applied.

    Calls EKS DescribeCluster/DescribeAddon/ListPodIdentityAssociations, IAM GetRole, S3 GetBucketTagging and
    SageMaker DescribeCluster, and lists the features' own Kubernetes objects through the API role's read-only
    access entry within :data:`~instantstart.features.observe.KUBERNETES_READ_BUDGET_SECONDS` (a kind that cannot be
    read is shown in ``kubernetesUnknown``, never an error; reads only: :func:`instantstart.features.observe.observe`).

    Raises:
        NotFound: no live cluster with this tag.
    """
    cluster = records.live_cluster(rt, tag)
    obs = observe(rt, tag, kubernetes=True, kubernetes_budget=KUBERNETES_READ_BUDGET_SECONDS)
    desired = cluster.desired_features.wire() if cluster.desired_features else {}
    return FeatureList(
        cluster_tag=tag,
        kubernetes_version=obs.kubernetes_version,
        features={key: _state(spec, obs, desired.get(key)) for key, spec in FEATURES.items()},
    )


def _check_versions(rt: Runtime, request: UpdateFeaturesRequest, obs: ClusterObservation) -> None:
    """A pinned version must be offered for the cluster's Kubernetes version (EKS DescribeAddonVersions).

    Raises:
        ValidationFailed: names ``<feature>.version`` and the versions offered (``allowedValues``).
    """
    for key, req in requested(request).items():
        spec = FEATURES[key]
        version = getattr(req, "version", None)
        if version is None or spec.addon is None:
            continue
        offered = compatible_versions(rt.client("eks"), spec.addon, str(obs.kubernetes_version))
        if version not in offered:
            raise ValidationFailed(
                f"{key}.version '{version}' is not offered for {spec.addon} on Kubernetes {obs.kubernetes_version}; "
                f"allowed values: {', '.join(offered) or 'none'}",
                details=[
                    {
                        "field": f"{key}.version",
                        "message": f"not offered for Kubernetes {obs.kubernetes_version}",
                        "allowedValues": offered,
                    }
                ],
            )


def update_features(rt: Runtime, tag: str, request: UpdateFeaturesRequest) -> FeatureUpdateResult | OperationView:
    """Diff the body against AWS now; start an ``UPDATE_FEATURES`` operation for what differs.

    Returns a :class:`FeatureUpdateResult` (every feature ``unchanged``, nothing written, no operation) when AWS
    already matches the body (``{}`` included), else the operation's view (202).

    Raises:
        NotFound: no live cluster.
        Conflict: an operation runs on the cluster, or the cluster is not READY or DEGRADED.
        ValidationFailed: a pinned version is not offered for the cluster's Kubernetes version, or
            ``fsx.fileSystem`` is one FSx would refuse (:func:`instantstart.features.fsx.check_file_system`).

    Features with Kubernetes objects of their own (fsx with ``fileSystem``) are not known to be in place here
    (PATCH does not read Kubernetes at the API): they go to the operation, whose workflow reads Kubernetes and writes
    nothing when they are.
    """
    cluster = records.live_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    if cluster.status not in _CHANGEABLE:
        raise Conflict(
            f"cluster '{tag}' is {cluster.status.value}; features can change only on a READY or DEGRADED cluster",
            code="ClusterNotReady",
            details=[{"field": "clusterTag", "status": cluster.status.value}],
        )
    if request.fsx is not None:
        fsx.check_file_system(request.fsx.file_system, request.fsx.enabled)
    obs = observe(rt, tag)
    _check_versions(rt, request, obs)
    to_change, same = plan(request, obs)
    if not to_change:
        return FeatureUpdateResult(
            cluster_tag=tag, features={k: FeatureOutcome(result=FeatureResult.UNCHANGED) for k in same}
        )
    return changes.start_change(
        rt, cluster, OperationType.UPDATE_FEATURES, FeaturesChange(request=request, plan=to_change)
    )


# -- converging writes --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Ctx:
    rt: Runtime
    tag: str
    obs: ClusterObservation

    @property
    def eks(self) -> Any:
        return self.rt.client("eks")

    @property
    def cluster_name(self) -> str:
        return self.obs.eks_cluster_name


def _needed_by_value(names: frozenset[str] | set[str]) -> str:
    return " ".join(sorted(names))


def _register(ctx: _Ctx, addon: AddonObservation, key: str, actions: list[str]) -> None:
    """Add ``key`` to the needers of an add-on this control plane owns (EKS TagResource); others are left alone."""
    if addon.managed and addon.arn and key not in addon.needed_by:
        ctx.eks.tag_resource(resourceArn=addon.arn, tags={NEEDED_BY_KEY: _needed_by_value(addon.needed_by | {key})})
        actions.append(f"TagResource {addon.name} {NEEDED_BY_KEY} +{key}")


def _release(ctx: _Ctx, addon: AddonObservation, key: str, actions: list[str]) -> None:
    """Drop ``key`` from an owned add-on's needers; delete the add-on when nobody needs it any more."""
    if not (addon.managed and addon.arn and key in addon.needed_by) or addon.status in (ABSENT, "DELETING"):
        return
    remaining = addon.needed_by - {key}
    if remaining:
        ctx.eks.tag_resource(resourceArn=addon.arn, tags={NEEDED_BY_KEY: _needed_by_value(remaining)})
        actions.append(f"TagResource {addon.name} {NEEDED_BY_KEY} -{key}")
    else:
        ctx.eks.delete_addon(clusterName=ctx.cluster_name, addonName=addon.name)
        actions.append(f"DeleteAddon {addon.name}")


def _health(addon: AddonObservation) -> AddonHealth:
    return AddonHealth(addon.name, addon.status, addon.issues)


def _fail_if_failed(addon: AddonObservation) -> None:
    health = _health(addon)
    if health.failed:
        err = health.error()
        raise FeatureFailure(err.code, err.message)


def _create(
    ctx: _Ctx,
    name: str,
    key: str,
    *,
    version: str | None,
    roles: dict[PodIdentityRole, str],
    configuration: str | None = None,
) -> str:
    """CreateAddon ``name`` for feature ``key`` at ``version`` (default: the newest EKS offers for the cluster's
    Kubernetes version) with its pod identity associations and ``configuration`` (configurationValues); returns
    the version requested."""
    if version is None:
        offered = compatible_versions(ctx.eks, name, str(ctx.obs.kubernetes_version))
        version = offered[0] if offered else None
    namespace = next((r.namespace for r in roles), "kube-system")
    create_addon(
        ctx.eks,
        cluster_name=ctx.cluster_name,
        addon_name=name,
        namespace=namespace,
        tags=ownership_tags(ctx.tag, **{NEEDED_BY_KEY: key}),
        version=version,
        associations=[(r.service_account, arn) for r, arn in roles.items() if r.via_addon],
        association_tags=ownership_tags(ctx.tag),
        configuration_values=configuration,
    )
    return str(version)


def _policy_context(
    rt: Runtime, tag: str, eks_cluster_name: str = "", workspace_arn: str | None = None
) -> PolicyContext:
    partition = "aws-cn" if rt.region.startswith("cn-") else "aws-us-gov" if rt.region.startswith("us-gov-") else "aws"
    return PolicyContext(
        partition=partition,
        region=rt.region,
        account_id=rt.account_id,
        tag=tag,
        storage_bucket=storage_bucket_name(tag, rt.account_id, rt.region),
        tls_bucket=tls_bucket_name(tag, rt.account_id, rt.region),
        eks_cluster_name=eks_cluster_name,
        prometheus_workspace_arn=workspace_arn,
    )


def _ensure_roles(
    ctx: _Ctx,
    spec: FeatureSpec,
    actions: list[str],
    roles: tuple[PodIdentityRole, ...] | None = None,
    workspace_arn: str | None = None,
) -> dict[PodIdentityRole, str]:
    """The feature's roles (``roles``, default its own), created when missing; ``workspace_arn`` scopes the
    observability collector's aps:RemoteWrite."""
    fo = ctx.obs.features[spec.key]
    out: dict[PodIdentityRole, str] = {}
    for role in spec.roles if roles is None else roles:
        name = feature_role_name(ctx.tag, role)
        if name in fo.foreign_roles:
            raise FeatureFailure("RoleNotOwned", f"IAM role {name} exists and is not managed by InstantStart")
        arn = fo.roles.get(name)
        if arn is None:
            settings = ctx.rt.settings
            arn, created = ensure_role(
                ctx.rt.client("iam"),
                name=name,
                tag=ctx.tag,
                path=settings.STORAGE_ROLE_PATH,
                trust=pod_identity_trust(
                    ctx.rt.account_id,
                    cluster_name=ctx.cluster_name,
                    namespace=role.namespace,
                    service_account=role.service_account,
                ),
                policy_name=f"{spec.key}-access",
                policy=role.policy(_policy_context(ctx.rt, ctx.tag, ctx.cluster_name, workspace_arn)),
                description=f"{spec.key} of InstantStart cluster {ctx.tag} ({role.namespace}/{role.service_account})",
                boundary=settings.STORAGE_PERMISSIONS_BOUNDARY_ARN or None,
                extra_tags={"instantstart:feature": spec.key},
            )
            if created:
                actions.append(f"CreateRole {name}")
        out[role] = arn
    return out


def _ensure_tls_bucket(ctx: _Ctx, actions: list[str]) -> None:
    s3 = ctx.rt.client("s3")
    name = tls_bucket_name(ctx.tag, ctx.rt.account_id, ctx.rt.region)
    kwargs: dict[str, Any] = {"Bucket": name}
    if ctx.rt.region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": ctx.rt.region}
    try:
        s3.create_bucket(**kwargs)
        actions.append(f"CreateBucket {name}")
    except ClientError as exc:
        if error_code(exc) != "BucketAlreadyOwnedByYou":
            raise
    s3.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": tag_list(ownership_tags(ctx.tag))})


def _delete_tls_bucket(ctx: _Ctx, name: str, actions: list[str]) -> None:
    """Empty and delete the TLS bucket (observed as this cluster's: it carries the ownership tags)."""
    s3 = ctx.rt.client("s3")
    while True:
        out = s3.list_objects_v2(Bucket=name)
        keys = [{"Key": o["Key"]} for o in out.get("Contents", [])]
        if not keys:
            break
        s3.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
    s3.delete_bucket(Bucket=name)
    actions.append(f"DeleteBucket {name}")


def _kube() -> Any:
    from instantstart.kube import client as kube

    return kube


def _ensure_service_accounts(ctx: _Ctx, spec: FeatureSpec, actions: list[str]) -> None:
    if not spec.service_accounts:
        return
    kube = _kube()
    dyn = kube.connect(ctx.cluster_name, ctx.rt.region)
    for namespace, name in spec.service_accounts:
        if kube.get(dyn, "v1", "ServiceAccount", name, namespace) is None:
            kube.apply(
                dyn,
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "labels": {"app.kubernetes.io/managed-by": "instantstart", "instantstart/feature": spec.key},
                    },
                },
            )
            actions.append(f"apply ServiceAccount {namespace}/{name}")


def _delete_service_accounts(ctx: _Ctx, spec: FeatureSpec, actions: list[str]) -> None:
    if not spec.service_accounts:
        return
    kube = _kube()
    dyn = kube.connect(ctx.cluster_name, ctx.rt.region)
    for namespace, name in spec.service_accounts:
        found = kube.get(dyn, "v1", "ServiceAccount", name, namespace)
        labels = ((found or {}).get("metadata") or {}).get("labels") or {}
        if found is not None and labels.get("instantstart/feature") == spec.key:
            kube.delete(dyn, "v1", "ServiceAccount", name, namespace)
            actions.append(f"delete ServiceAccount {namespace}/{name}")


def _tiered_on(ctx: _Ctx, req: TieredCheckpointingRequest, actions: list[str]) -> None:
    config = ctx.obs.tiered_storage or {}
    pct = req.instance_memory_allocation_percentage
    if config.get("Mode") == "Enable" and (pct is None or config.get("InstanceMemoryAllocationPercentage") == pct):
        return
    wanted: dict[str, Any] = {"Mode": "Enable"}
    if pct is not None:
        wanted["InstanceMemoryAllocationPercentage"] = pct
    ctx.rt.client("sagemaker").update_cluster(
        ClusterName=records.hyperpod_name(ctx.rt, ctx.tag), TieredStorageConfig=wanted
    )
    actions.append(f"UpdateCluster TieredStorageConfig {wanted}")


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


def _converge_file_system(ctx: _Ctx, spec: FeatureSpec, req: FsxRequest, actions: list[str]) -> bool:
    """One round toward fsx's file system: security group and CreateFileSystem when absent, then (once AVAILABLE)
    its models data repository association (:func:`_converge_association`), then (once that is AVAILABLE) the
    PersistentVolume and claim ``fsx-claim``; True when all are in place."""
    assert req.file_system is not None
    obs, fo = ctx.obs, ctx.obs.features[spec.key]
    found = live_file_system(fo)
    if found is None:
        if fo.file_systems:  # the previous one is still DELETING
            return False
        if not obs.compute_subnets or not obs.vpc_id:
            raise FeatureFailure("NoComputeSubnet", "the HyperPod cluster reports no VpcConfig subnet to put FSx in")
        ec2 = ctx.rt.client("ec2")
        group = fo.security_group
        if group is None:
            group = fsx.create_security_group(ec2, ctx.tag, obs.vpc_id, list(obs.cluster_security_groups))
            actions.append(f"CreateSecurityGroup {group}")
        fs_id = fsx.create_file_system(
            ctx.rt.client("fsx"),
            ctx.tag,
            req.file_system,
            obs.compute_subnets[0],
            [group, *[g for g in obs.cluster_security_groups if g != group]],
        )
        actions.append(f"CreateFileSystem {fs_id}")
        return False
    if not fsx.matches(found, req.file_system):
        raise FeatureFailure(
            "FileSystemNotChanged",
            f"file system {found.file_system_id} is {found.storage_capacity} GiB {found.deployment_type} "
            f"({found.per_unit_storage_throughput} MB/s/TiB); it is not changed here: turn fsx off, then on again",
        )
    if found.lifecycle == "FAILED":
        raise FeatureFailure("FileSystemFailed", found.failure or f"file system {found.file_system_id} FAILED")
    if found.lifecycle != "AVAILABLE" or fo.kubernetes is None:
        return False
    if not _converge_association(ctx, found, fo.data_repository_associations, actions):
        return False
    if not claim_names() <= fo.kubernetes:
        kube = _kube()
        dyn = kube.connect(ctx.cluster_name, ctx.rt.region)
        for obj in fsx.claim_objects(found):
            kube.apply(dyn, obj)
            ns = obj["metadata"].get("namespace")
            actions.append(f"apply {obj['kind']}/{ns + '/' if ns else ''}{obj['metadata']['name']}")
    return True


def _converge_association(
    ctx: _Ctx, found: fsx.FileSystemObservation, associations: list[fsx.DataRepositoryAssociation], actions: list[str]
) -> bool:
    """One round toward the ``/models`` data repository association of an AVAILABLE file system (auto-export to
    ``s3://<cluster bucket>/fsx/models/``); True when it is AVAILABLE, or when FSx offers none for the file system
    (SCRATCH_1, Lustre before 2.12: the model list then says it cannot list it).

    Raises:
        FeatureFailure: ``DataRepositoryAssociationFailed`` (FAILED or MISCONFIGURED, FSx's FailureDetails verbatim).
    """
    if fsx.association_unsupported(found) is not None:
        return True
    dra = fsx.models_association(found, associations)
    if dra is None:
        if any(a.file_system_id == found.file_system_id and a.lifecycle == "DELETING" for a in associations):
            return False
        from instantstart.inference.service import cluster_bucket

        bucket = cluster_bucket(ctx.rt, ctx.tag)
        dra_id = fsx.create_models_association(ctx.rt.client("fsx"), ctx.tag, found.file_system_id, bucket)
        actions.append(f"CreateDataRepositoryAssociation {dra_id} {fsx.MODELS_PATH} -> {fsx.export_path(bucket)}")
        return False
    if dra.lifecycle in ("FAILED", "MISCONFIGURED"):
        raise FeatureFailure(
            "DataRepositoryAssociationFailed",
            f"data repository association {dra.association_id} is {dra.lifecycle}: "
            + (dra.failure or "FSx gave no FailureDetails"),
        )
    return dra.lifecycle in fsx.LISTED_LIFECYCLES


def _remove_file_system(ctx: _Ctx, spec: FeatureSpec, actions: list[str]) -> bool:
    """One round toward no fsx storage: the claim and volume, then our data repository associations
    (DeleteDataInFileSystem false) and, once they are gone, DeleteFileSystem (AVAILABLE or FAILED ones; a CREATING
    one is waited for), then (once the file system is gone) its security group. True when gone."""
    fo = ctx.obs.features[spec.key]
    if fo.kubernetes:
        kube = _kube()
        dyn = kube.connect(ctx.cluster_name, ctx.rt.region)
        for ref in sorted(fo.kubernetes, key=lambda r: not r.startswith("PersistentVolumeClaim/")):
            kind, _, rest = ref.partition("/")
            namespace, _, name = rest.rpartition("/")
            if kube.delete(dyn, "v1", kind, name, namespace or None):
                actions.append(f"delete {ref}")
    associations = fsx.delete_associations(ctx.rt.client("fsx"), fo.data_repository_associations)
    if associations:
        actions += [
            f"DeleteDataRepositoryAssociation {a.association_id}"
            for a in fo.data_repository_associations
            if a.owned and a.lifecycle not in ("DELETING", "CREATING")
        ]
        return False
    if fo.file_systems:
        deletable = [f for f in fo.file_systems if f.lifecycle in fsx.DELETABLE]
        fsx.delete_file_systems(ctx.rt.client("fsx"), deletable)
        actions += [f"DeleteFileSystem {f.file_system_id}" for f in deletable]
        return False
    if fo.security_group is not None:
        if not fsx.delete_security_group(ctx.rt.client("ec2"), fo.security_group):
            return False
        actions.append(f"DeleteSecurityGroup {fo.security_group}")
    return True


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


# -- workflow steps -----------------------------------------------------------------------------
def _request(rt: Runtime, p: StepPayload) -> tuple[UpdateFeaturesRequest, dict[str, FeatureOutcome]]:
    op, change = changes.operation_change(rt, p, FeaturesChange)
    return change.request, dict(op.feature_results or {})


def _round(
    rt: Runtime, tag: str, key: str, req: FeatureRequest, obs: ClusterObservation, outcome: FeatureOutcome
) -> None:
    """Advance one pending feature; its outcome becomes changed or failed (AWS error verbatim) when it settles."""
    try:
        done, actions = converge(rt, tag, key, req, obs)
    except FeatureFailure as exc:
        outcome.result, outcome.error = FeatureResult.FAILED, StageError(code=exc.code, message=exc.message)
        return
    except ClientError as exc:
        outcome.result = FeatureResult.FAILED
        outcome.error = StageError(code=error_code(exc) or "AwsError", message=error_message(exc))
        return
    outcome.actions = [*outcome.actions, *actions]
    if done:
        outcome.result = FeatureResult.CHANGED


def apply_features(rt: Runtime, p: StepPayload) -> StepResult:
    """Apply an UPDATE_FEATURES operation: observe, diff, one round of writes for each feature that differs.

    A feature AWS already matches is ``unchanged`` (no write). Records the request as the cluster's desired
    features and each feature's outcome on the operation. Idempotent: a redelivered task finds the writes made.
    """
    request, results = _request(rt, p)
    obs = observe(rt, p.cluster_tag, kubernetes=_reads_kubernetes(request))
    to_change, same = plan(request, obs)
    wanted = requested(request)
    for key in same:
        results.setdefault(key, FeatureOutcome(result=FeatureResult.UNCHANGED))
    for key in to_change:
        outcome = results.setdefault(key, FeatureOutcome(result=FeatureResult.PENDING))
        if outcome.result is FeatureResult.PENDING:
            _round(rt, p.cluster_tag, key, wanted[key], obs, outcome)
    now = records.now()
    rt.store.record_feature_results(p.operation_id, results, now)
    cluster = records.cluster_record(rt, p.cluster_tag)
    before = cluster.desired_features or UpdateFeaturesRequest()
    desired = before.model_copy(update={name: getattr(request, name) for name in _given(request)})
    rt.store.record_desired_features(p.cluster_tag, desired, now)
    return StepResult(status=_summary(results))


def _reads_kubernetes(request: UpdateFeaturesRequest) -> bool:
    """The request names a feature that creates Kubernetes objects of its own (the workflow reads them back)."""
    return any(key in KUBERNETES_KINDS for key in requested(request))


def _given(request: UpdateFeaturesRequest) -> list[str]:
    """The field names of the features present in ``request``."""
    return [name for name in UpdateFeaturesRequest.model_fields if getattr(request, name) is not None]


def _summary(results: dict[str, FeatureOutcome]) -> str:
    return ", ".join(f"{k} {v.result.value}" for k, v in sorted(results.items()))


def check_features(rt: Runtime, p: StepPayload) -> PollResult:
    """One round of the wait: re-observe and advance every pending feature; done when none is pending.

    Raises:
        StageFailed: ``FeatureFailed`` once every feature settled and some failed (each ``<feature>: <code>:
            <message>``); the per-feature outcomes stay on the operation.
    """
    request, results = _request(rt, p)
    pending = [k for k, v in results.items() if v.result is FeatureResult.PENDING]
    if pending:
        obs = observe(rt, p.cluster_tag, kubernetes=_reads_kubernetes(request))
        wanted = requested(request)
        for key in pending:
            _round(rt, p.cluster_tag, key, wanted[key], obs, results[key])
        rt.store.record_feature_results(p.operation_id, results, records.now())
    still = [k for k, v in results.items() if v.result is FeatureResult.PENDING]
    if still:
        return PollResult(done=False, status=f"waiting for {', '.join(sorted(still))}")
    failed = {k: v.error for k, v in results.items() if v.result is FeatureResult.FAILED}
    if failed:
        raise StageFailed(
            "FeatureFailed",
            "; ".join(f"{k}: {e.code}: {e.message}" if e else f"{k}: failed" for k, e in sorted(failed.items())),
        )
    return PollResult(done=True, status=_summary(results))


CHANGES = {OperationType.UPDATE_FEATURES: changes.ClusterChange(apply=apply_features, check=check_features)}
"""The update workflow's handler of feature changes."""
