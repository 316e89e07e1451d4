"""The observed state of every managed feature, read from AWS now (never from the control plane's records).

Reads only: EKS ``DescribeCluster``, ``DescribeAddon`` and ``ListPodIdentityAssociations``, IAM ``GetRole``
(ownership by tag), S3 ``HeadBucket``/``GetBucketTagging``, SageMaker ``DescribeCluster``
(``TieredStorageConfig``), FSx ``DescribeFileSystems``/``DescribeDataRepositoryAssociations``, Amazon Managed
Service for Prometheus ``ListWorkspaces``/``DescribeWorkspace``.
Who needs a shared add-on is read back from the add-on's own tag
(:data:`NEEDED_BY_KEY`), so the rule "a dependency another feature or the create workflow installed is never
removed" holds whatever the records say.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.clusters.stages import hyperpod
from instantstart.features import amp, fsx, kuberay
from instantstart.features.catalog import (
    FEATURES,
    FeatureSpec,
    addons_of,
    all_roles,
    feature_role_name,
    own_addons,
    tls_bucket_name,
)
from instantstart.kube.reads import KUBERNETES_READ_BUDGET_SECONDS as KUBERNETES_READ_BUDGET_SECONDS  # re-exported
from instantstart.kube.reads import KUBERNETES_READ_SECONDS as KUBERNETES_READ_SECONDS
from instantstart.kube.reads import kubernetes_failure as kubernetes_failure
from instantstart.naming import owned_by

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
    configuration: str | None = None
    """Its ``configurationValues`` (None when EKS reports none)."""

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
    file_systems: list[fsx.FileSystemObservation] = field(default_factory=list)
    """FSx for Lustre file systems it created (fsx), DELETING ones included."""
    security_group: str | None = None
    """The security group it created (fsx), when it exists."""
    data_repository_associations: list[fsx.DataRepositoryAssociation] = field(default_factory=list)
    """The data repository associations of its file systems (fsx), ours or not, DELETING ones included."""
    prometheus_workspaces: list[amp.WorkspaceObservation] = field(default_factory=list)
    """The Prometheus workspaces it created (observability), DELETING ones included."""
    kubernetes: set[str] | None = None
    """``Kind/namespace/name`` of the Kubernetes objects it created that exist now (of the kinds that could be
    read); None when Kubernetes was not read."""
    kubernetes_unknown: dict[str, str] = field(default_factory=dict)
    """Kind -> why the API could not read it (forbidden, no answer in time, unreachable): that part is unknown."""

    @property
    def kubernetes_complete(self) -> bool:
        """Every kind of its Kubernetes objects was read."""
        return self.kubernetes is not None and not self.kubernetes_unknown


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
    vpc_id: str | None = None
    """The EKS cluster's VPC (DescribeCluster ``resourcesVpcConfig.vpcId``)."""
    compute_subnets: tuple[str, ...] = ()
    """HyperPod ``VpcConfig.Subnets``: where the nodes, and a new FSx file system, live."""
    cluster_security_groups: tuple[str, ...] = ()
    """HyperPod ``VpcConfig.SecurityGroupIds``: the nodes' security groups (the Lustre clients)."""
    hyperpod_cluster_arn: str | None = None
    """HyperPod ``ClusterArn`` (None when it does not exist): the task governance resources hang off it."""

    def enabled(self, spec: FeatureSpec) -> bool:
        """Observed on: its add-on exists (not DELETING), or its cluster setting is ``Enable``."""
        if spec.addon:
            return any(self.addons[a].present for a in own_addons(spec))
        if spec.tiered_storage:
            return (self.tiered_storage or {}).get("Mode") == "Enable"
        if spec.operator_objects:  # False when not observed or none of its readable objects exists
            return bool(self.features[spec.key].kubernetes)
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
        configuration=addon.get("configurationValues") or None,
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


def _kubernetes_objects(
    dyn: Any, spec: FeatureSpec, *, tolerant: bool = False, timeout: float | None = None
) -> tuple[set[str], dict[str, str]]:
    """``(found, unknown)``: ``Kind/namespace/name`` of the objects feature ``spec`` created that exist now (label
    ``instantstart/feature=<key>``), and, with ``tolerant``, the kinds that could not be read with the reason
    (otherwise the error is raised). ``timeout``: seconds per Kubernetes request."""
    from instantstart.kube import client as kube

    found: set[str] = set()
    unknown: dict[str, str] = {}
    for api_version, kind in KUBERNETES_KINDS.get(spec.key, ()):
        try:
            objects = kube.list_objects(
                dyn, api_version, kind, label_selector=f"instantstart/feature={spec.key}", timeout=timeout
            )
        except Exception as exc:
            if not tolerant:
                raise
            unknown[kind] = kubernetes_failure(exc)
            continue
        for obj in objects:
            meta = obj.get("metadata") or {}
            ns = meta.get("namespace")
            found.add(f"{kind}/{ns + '/' if ns else ''}{meta.get('name')}")
    return found, unknown


def read_kubernetes(
    rt: Any, cluster_name: str, features: dict[str, FeatureObservation], *, budget: float | None = None
) -> None:
    """Set ``kubernetes`` (and ``kubernetes_unknown``) of each feature with objects of its own.

    ``budget`` None (the workflow, cluster admin): every read must succeed (errors are raised). A ``budget`` in
    seconds (the API, read-only entry): the reads run in a worker bounded by it; a read that fails or does not
    answer in time marks that kind unknown with the reason, never an error.
    """
    from instantstart.kube import client as kube

    if budget is None:
        dyn = kube.connect(cluster_name, rt.region)
        for key in KUBERNETES_KINDS:
            features[key].kubernetes, _ = _kubernetes_objects(dyn, FEATURES[key])
        return

    def read() -> dict[str, tuple[set[str], dict[str, str]]]:
        try:
            dyn = kube.connect(cluster_name, rt.region, timeout=KUBERNETES_READ_SECONDS)
        except Exception as exc:  # noqa: BLE001 - any failure to connect is shown as unknown, never a 500
            reason = kubernetes_failure(exc)
            return {k: (set(), {kind: reason for _, kind in KUBERNETES_KINDS[k]}) for k in KUBERNETES_KINDS}
        return {
            k: _kubernetes_objects(dyn, FEATURES[k], tolerant=True, timeout=KUBERNETES_READ_SECONDS)
            for k in KUBERNETES_KINDS
        }

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kube-read")
    try:
        results = pool.submit(read).result(timeout=budget)
    except FutureTimeout:
        reason = f"no answer from Kubernetes within {budget:g} s"
        results = {k: (set(), {kind: reason for _, kind in KUBERNETES_KINDS[k]}) for k in KUBERNETES_KINDS}
    finally:
        pool.shutdown(wait=False)
    for key, (found, unknown) in results.items():
        features[key].kubernetes, features[key].kubernetes_unknown = found, unknown


KUBERNETES_KINDS: dict[str, tuple[tuple[str, str], ...]] = {
    "fsx": (("v1", "PersistentVolume"), ("v1", "PersistentVolumeClaim")),
    "kubeRay": kuberay.KINDS,
}
"""The kinds of the Kubernetes objects each feature creates itself (read back by label)."""


def observe(
    rt: Any, tag: str, *, kubernetes: bool = False, kubernetes_budget: float | None = None
) -> ClusterObservation:
    """Every feature of cluster ``tag`` as AWS (and, with ``kubernetes``, the Kubernetes API) reports it now
    (reads only; see the module docstring).

    ``rt`` is a :class:`~instantstart.runtime.Runtime` (clients, Region, account). ``kubernetes``: read the objects
    features create themselves (:func:`read_kubernetes`): the workflow (cluster admin) with no budget, errors
    raised; ``GET .../features`` with ``kubernetes_budget`` seconds through the API role's read-only access entry,
    failures shown as unknown. Left off, each feature's ``kubernetes`` is None (not observed). Also reads FSx
    DescribeFileSystems, DescribeDataRepositoryAssociations and EC2 DescribeSecurityGroups (fsx).

    Raises:
        botocore.exceptions.ClientError: an AWS read failed (other than "not found").
    """
    eks, iam, s3 = rt.client("eks"), rt.client("iam"), rt.client("s3")
    name = records.eks_name(rt, tag)
    cluster = eks.describe_cluster(name=name)["cluster"]
    addon_names = sorted({a for spec in FEATURES.values() for a in addons_of(spec)})
    addons = {a: observe_addon(eks, name, a, tag) for a in addon_names}
    features: dict[str, FeatureObservation] = {}
    for key, spec in FEATURES.items():
        fo = FeatureObservation(key)
        for role in all_roles(spec):
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
        if spec.lustre:
            fo.file_systems = fsx.observe_file_systems(rt.client("fsx"), tag)
            fo.data_repository_associations = fsx.observe_associations(rt.client("fsx"), tag, fo.file_systems)
            fo.security_group = fsx.observe_security_group(rt.client("ec2"), tag)
        if spec.prometheus_workspace:
            fo.prometheus_workspaces = amp.observe_workspaces(rt.client("amp"), tag)
        features[key] = fo
    if kubernetes:
        read_kubernetes(rt, name, features, budget=kubernetes_budget)
    hp = hyperpod.describe(rt.client("sagemaker"), records.hyperpod_name(rt, tag)) or {}
    tiered, hp_status = hp.get("TieredStorageConfig"), hp.get("ClusterStatus")
    vpc_config = hp.get("VpcConfig") or {}
    return ClusterObservation(
        tag=tag,
        eks_cluster_name=name,
        kubernetes_version=cluster.get("version"),
        addons=addons,
        features=features,
        tiered_storage=dict(tiered) if tiered else None,
        hyperpod_status=hp_status,
        vpc_id=(cluster.get("resourcesVpcConfig") or {}).get("vpcId"),
        compute_subnets=tuple(vpc_config.get("Subnets") or ()),
        cluster_security_groups=tuple(vpc_config.get("SecurityGroupIds") or ()),
        hyperpod_cluster_arn=hp.get("ClusterArn"),
    )
