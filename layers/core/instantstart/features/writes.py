"""The converging writes a feature's round is made of: add-ons (created, claimed, released), roles, the TLS
bucket, service accounts, tiered checkpointing; and :class:`FeatureFailure`, a feature that cannot converge.

Each write is made only when the observation (:class:`~instantstart.features.observe.ClusterObservation`) shows it
missing, and names itself in the round's ``actions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.clusters.addons import AddonHealth, create_addon, ensure_role, pod_identity_trust
from instantstart.features.catalog import (
    FeatureSpec,
    PodIdentityRole,
    PolicyContext,
    feature_role_name,
    tls_bucket_name,
)
from instantstart.features.observe import ABSENT, NEEDED_BY_KEY, AddonObservation, ClusterObservation
from instantstart.features.plan import compatible_versions
from instantstart.models.features import TieredCheckpointingRequest
from instantstart.naming import ownership_tags, storage_bucket_name, tag_list
from instantstart.runtime import Runtime


class FeatureFailure(Exception):
    """One feature cannot converge: ``code`` and ``message`` (AWS's verbatim when AWS refused)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


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
