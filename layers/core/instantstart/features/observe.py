"""The observed state of every managed feature, read from AWS now (never from the control plane's records).

Reads only: EKS ``DescribeCluster``, ``DescribeAddon`` and ``ListPodIdentityAssociations``, IAM ``GetRole``
(ownership by tag), S3 ``HeadBucket``/``GetBucketTagging``, SageMaker ``DescribeCluster``
(``TieredStorageConfig``). Who needs a shared add-on is read back from the add-on's own tag
(:data:`NEEDED_BY_KEY`), so the rule "a dependency another feature or the create workflow installed is never
removed" holds whatever the records say.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters.stages import hyperpod
from instantstart.features.catalog import FEATURES, FeatureSpec, feature_role_name, tls_bucket_name
from instantstart.naming import eks_cluster_name, hyperpod_cluster_name, owned_by

NEEDED_BY_KEY = "instantstart:needed-by"
"""EKS add-on tag listing (space-separated) who needs the add-on: ``create`` and feature keys."""

CREATE_WORKFLOW = "create"
"""The needer of an add-on the create workflow installed (owned, without a needed-by tag)."""

ABSENT = "ABSENT"
"""Status of an add-on that does not exist."""

_GONE = ("ResourceNotFoundException", "NoSuchEntity", "404", "NoSuchBucket", "NotFound")


@dataclass(frozen=True)
class AddonObservation:
    """One EKS add-on as DescribeAddon reports it (``status`` ABSENT when it does not exist)."""

    name: str
    status: str = ABSENT
    version: str | None = None
    arn: str | None = None
    managed: bool = False
    needed_by: frozenset[str] = frozenset()
    issues: tuple[tuple[str, str], ...] = ()

    @property
    def present(self) -> bool:
        """It exists and is not being deleted."""
        return self.status not in (ABSENT, "DELETING")


@dataclass(frozen=True)
class AssociationObservation:
    """One pod identity association (ListPodIdentityAssociations summary)."""

    namespace: str
    service_account: str
    association_id: str
    owner_arn: str | None = None


@dataclass
class FeatureObservation:
    """What exists of one feature now."""

    key: str
    roles: dict[str, str | None] = field(default_factory=dict)
    """Role name -> ARN when the role exists and carries this cluster's ownership tags, else None."""
    foreign_roles: list[str] = field(default_factory=list)
    """Role names that exist without this cluster's ownership tags (never touched)."""
    associations: dict[tuple[str, str], list[AssociationObservation]] = field(default_factory=dict)
    tls_bucket: str | None = None
    """The TLS bucket's name when it exists and is this cluster's."""


@dataclass
class ClusterObservation:
    """Every managed feature of one cluster as AWS reports it now."""

    tag: str
    eks_cluster_name: str
    kubernetes_version: str | None
    addons: dict[str, AddonObservation]
    features: dict[str, FeatureObservation]
    tiered_storage: dict[str, Any] | None
    """HyperPod ``TieredStorageConfig`` (None when absent or the HyperPod cluster does not exist)."""
    hyperpod_status: str | None

    def enabled(self, spec: FeatureSpec) -> bool:
        """Observed on: its add-on exists (not DELETING), or its cluster setting is ``Enable``."""
        if spec.addon:
            return self.addons[spec.addon].present
        if spec.tiered_storage:
            return (self.tiered_storage or {}).get("Mode") == "Enable"
        return False


def needed_by(tags: dict[str, str] | None, tag: str) -> frozenset[str]:
    """Who needs an add-on, from its tags: the :data:`NEEDED_BY_KEY` list, else ``{create}`` when this cluster's
    ownership tags are on it (the create workflow made it), else nobody (it existed before)."""
    tags = tags or {}
    if NEEDED_BY_KEY in tags:
        return frozenset(v for v in tags[NEEDED_BY_KEY].split() if v)
    return frozenset({CREATE_WORKFLOW}) if owned_by(tags, tag) else frozenset()


def observe_addon(eks: Any, cluster_name: str, name: str, tag: str) -> AddonObservation:
    """One add-on (EKS ``DescribeAddon``); ABSENT when EKS answers ResourceNotFoundException."""
    try:
        addon = eks.describe_addon(clusterName=cluster_name, addonName=name)["addon"]
    except ClientError as exc:
        if error_code(exc) in _GONE:
            return AddonObservation(name)
        raise
    tags = dict(addon.get("tags") or {})
    return AddonObservation(
        name=name,
        status=str(addon["status"]),
        version=addon.get("addonVersion"),
        arn=addon.get("addonArn"),
        managed=owned_by(tags, tag),
        needed_by=needed_by(tags, tag),
        issues=tuple((str(i.get("code")), str(i.get("message"))) for i in addon.get("health", {}).get("issues", [])),
    )


def _role(iam: Any, name: str, tag: str) -> tuple[str | None, bool]:
    """``(arn, foreign)``: the role's ARN when it is this cluster's; ``foreign`` when it exists without our tags."""
    try:
        role = iam.get_role(RoleName=name)["Role"]
    except ClientError as exc:
        if error_code(exc) in _GONE:
            return None, False
        raise
    tags = role.get("Tags")
    if tags is None:
        tags = iam.list_role_tags(RoleName=name)["Tags"]
    if owned_by(tags, tag):
        return str(role["Arn"]), False
    return None, True


def _associations(eks: Any, cluster_name: str, namespace: str, service_account: str) -> list[AssociationObservation]:
    out = eks.list_pod_identity_associations(
        clusterName=cluster_name, namespace=namespace, serviceAccount=service_account
    )["associations"]
    return [
        AssociationObservation(
            namespace=a["namespace"],
            service_account=a["serviceAccount"],
            association_id=a["associationId"],
            owner_arn=a.get("ownerArn"),
        )
        for a in out
    ]


def owned_bucket(s3: Any, name: str, tag: str) -> str | None:
    """``name`` when the bucket exists with this cluster's ownership tags, else None (S3 GetBucketTagging)."""
    try:
        tags = s3.get_bucket_tagging(Bucket=name).get("TagSet", [])
    except ClientError as exc:
        if error_code(exc) in (*_GONE, "NoSuchTagSet", "AccessDenied", "403"):
            return None
        raise
    return name if owned_by(tags, tag) else None


def observe(rt: Any, tag: str) -> ClusterObservation:
    """Every feature of cluster ``tag`` as AWS reports it now (reads only; see the module docstring).

    ``rt`` is a :class:`~instantstart.runtime.Runtime` (clients, Region, account).

    Raises:
        botocore.exceptions.ClientError: an AWS read failed (other than "not found").
    """
    eks, iam, s3 = rt.client("eks"), rt.client("iam"), rt.client("s3")
    name = eks_cluster_name(tag)
    cluster = eks.describe_cluster(name=name)["cluster"]
    addon_names = sorted(
        {a for spec in FEATURES.values() for a in ((spec.addon,) if spec.addon else ()) + spec.requires}
    )
    addons = {a: observe_addon(eks, name, a, tag) for a in addon_names}
    features: dict[str, FeatureObservation] = {}
    for key, spec in FEATURES.items():
        fo = FeatureObservation(key)
        for role in spec.roles:
            role_name = feature_role_name(tag, role)
            arn, foreign = _role(iam, role_name, tag)
            fo.roles[role_name] = arn
            if foreign:
                fo.foreign_roles.append(role_name)
            fo.associations[(role.namespace, role.service_account)] = _associations(
                eks, name, role.namespace, role.service_account
            )
        if spec.tls_bucket:
            fo.tls_bucket = owned_bucket(s3, tls_bucket_name(tag, rt.account_id, rt.region), tag)
        features[key] = fo
    hp = hyperpod.describe(rt.client("sagemaker"), hyperpod_cluster_name(tag)) or {}
    tiered, hp_status = hp.get("TieredStorageConfig"), hp.get("ClusterStatus")
    return ClusterObservation(
        tag=tag,
        eks_cluster_name=name,
        kubernetes_version=cluster.get("version"),
        addons=addons,
        features=features,
        tiered_storage=dict(tiered) if tiered else None,
        hyperpod_status=hp_status,
    )
