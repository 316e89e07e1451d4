"""EKS add-ons of the dependencies stage and the identity they need.

One function per rule: :func:`ensure_addon` creates an add-on (and the IAM role and pod identity
association it needs) only when absent; :func:`addon_state` reads it back. EKS API reference:
https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.errors import StageFailed
from instantstart.models.resources import AddonResource
from instantstart.naming import TAG_KEY, owned_by, ownership_tags, storage_bucket_name, storage_role_name, tag_list


@dataclass(frozen=True)
class AddonSpec:
    """An EKS add-on to install; ``service_account`` set when it needs an IAM role via pod identity."""

    name: str
    service_account: str | None = None
    namespace: str = "kube-system"
    needs_nodes: bool = False
    """Its workload is a Deployment: it cannot be healthy before a node can run it (DEGRADED with
    ``InsufficientNumberOfReplicas`` until then), so it is checked after nodes joined, in ``verify``."""


ADDONS: tuple[AddonSpec, ...] = (
    AddonSpec("eks-pod-identity-agent"),  # a DaemonSet: ACTIVE with zero nodes; HyperPod needs it before nodes join
    AddonSpec("cert-manager", needs_nodes=True),
    # v2 of the Mountpoint for S3 CSI driver runs a controller Deployment beside its node DaemonSet
    AddonSpec("aws-mountpoint-s3-csi-driver", service_account="s3-csi-driver-sa", needs_nodes=True),
    AddonSpec("metrics-server", needs_nodes=True),
)
"""Add-ons of the dependencies stage, created in parallel; those that need nodes are checked in ``verify``."""

WAITING_FOR_NODES = "InsufficientNumberOfReplicas"
"""The EKS add-on health issue of a Deployment that has no node to run on."""

ADDONS_BY_NAME = {a.name: a for a in ADDONS}


def pod_identity_trust(
    account_id: str,
    *,
    cluster_name: str | None = None,
    namespace: str | None = None,
    service_account: str | None = None,
) -> dict[str, Any]:
    """The trust policy of a role assumed through EKS Pod Identity (``pods.eks.amazonaws.com``).

    With ``cluster_name``/``namespace``/``service_account`` the role is assumable only by that service account of
    that cluster, through the session tags Pod Identity sets (``aws:RequestTag/eks-cluster-name``,
    ``kubernetes-namespace``, ``kubernetes-service-account``:
    https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html).
    """
    condition: dict[str, Any] = {"aws:SourceAccount": account_id}
    if cluster_name:
        condition["aws:RequestTag/eks-cluster-name"] = cluster_name
    if namespace:
        condition["aws:RequestTag/kubernetes-namespace"] = namespace
    if service_account:
        condition["aws:RequestTag/kubernetes-service-account"] = service_account
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {"StringEquals": condition},
            }
        ],
    }


def ensure_role(
    iam: Any,
    *,
    name: str,
    tag: str,
    path: str,
    trust: dict[str, Any],
    policy_name: str,
    policy: dict[str, Any],
    description: str,
    boundary: str | None = None,
    extra_tags: dict[str, str] | None = None,
) -> tuple[str, bool]:
    """The role ``name`` (created with its ownership tags, trust and one inline policy when absent).

    A role that exists without its inline policy ``policy_name`` (an attempt died between ``CreateRole`` and
    ``PutRolePolicy``) gets it. Returns ``(arn, created)``. Calls IAM ``GetRole``, ``ListRoleTags``,
    ``ListRolePolicies``, ``CreateRole`` (:func:`create_owned_role`), ``PutRolePolicy``.

    Raises:
        StageFailed: ``RoleNotOwned``, a role of that name exists without this cluster's ownership tags (no
            policy is ever put on a role the control plane does not own).
    """
    try:
        arn = str(iam.get_role(RoleName=name)["Role"]["Arn"])
    except ClientError as exc:
        if error_code(exc) != "NoSuchEntity":
            raise
    else:
        require_owned_role(iam, name, tag)
        if policy_name not in iam.list_role_policies(RoleName=name)["PolicyNames"]:
            iam.put_role_policy(RoleName=name, PolicyName=policy_name, PolicyDocument=json.dumps(policy))
        return arn, False
    kwargs: dict[str, Any] = {
        "RoleName": name,
        "Path": path,
        "AssumeRolePolicyDocument": json.dumps(trust),
        "Description": description,
        "Tags": tag_list(ownership_tags(tag, **(extra_tags or {}))),
    }
    if boundary:
        kwargs["PermissionsBoundary"] = boundary
    arn = create_owned_role(iam, kwargs, tag)
    iam.put_role_policy(RoleName=name, PolicyName=policy_name, PolicyDocument=json.dumps(policy))
    return arn, True


def require_owned_role(iam: Any, name: str, tag: str) -> None:
    """Refuse a role ``name`` that lacks this cluster's ownership tags (IAM ``ListRoleTags``).

    Raises:
        StageFailed: ``RoleNotOwned``.
    """
    if not owned_by(iam.list_role_tags(RoleName=name).get("Tags", []), tag):
        raise StageFailed("RoleNotOwned", f"IAM role {name} exists but is not managed by InstantStart for {tag}")


def create_owned_role(iam: Any, kwargs: dict[str, Any], tag: str) -> str:
    """IAM ``CreateRole`` with ``kwargs`` (which carry the ownership tags); its ARN. When IAM answers
    ``EntityAlreadyExists`` (an earlier attempt made the role and its answer was lost), the role is taken as
    this one's if it carries the cluster's ownership tags (``GetRole``, ``ListRoleTags``).

    Raises:
        StageFailed: ``RoleNotOwned``, the existing role is someone else's.
    """
    try:
        return str(iam.create_role(**kwargs)["Role"]["Arn"])
    except ClientError as exc:
        if error_code(exc) != "EntityAlreadyExists":
            raise
    require_owned_role(iam, str(kwargs["RoleName"]), tag)
    return str(iam.get_role(RoleName=kwargs["RoleName"])["Role"]["Arn"])


def delete_owned_role(iam: Any, name: str, tag: str) -> bool:
    """Delete role ``name`` and its inline policies; False when it does not exist.

    Calls IAM ``ListRoleTags``, ``ListRolePolicies``, ``DeleteRolePolicy``, ``DeleteRole``.

    Raises:
        StageFailed: ``RoleNotOwned`` when the role lacks this cluster's ownership tags (it is never deleted).
    """
    try:
        tags = iam.list_role_tags(RoleName=name)["Tags"]
    except ClientError as exc:
        if error_code(exc) == "NoSuchEntity":
            return False
        raise
    if not owned_by(tags, tag):
        raise StageFailed("RoleNotOwned", f"IAM role {name} is not managed by InstantStart")
    for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    iam.delete_role(RoleName=name)
    return True


def storage_role_policy(tag: str, account_id: str, region: str) -> dict[str, Any]:
    """The S3 CSI driver role's inline policy: list, read, write and delete in the cluster's bucket only."""
    bucket = storage_bucket_name(tag, account_id, region)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": f"arn:aws:s3:::{bucket}"},
            {
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"],
                "Resource": f"arn:aws:s3:::{bucket}/*",
            },
        ],
    }


def _storage_role(iam: Any, *, tag: str, account_id: str, region: str, path: str, boundary: str | None) -> str:
    """The Mountpoint S3 CSI driver role of the cluster: trusted by EKS Pod Identity, S3 access to one bucket.

    Calls IAM ``GetRole``, ``CreateRole``, ``PutRolePolicy``.
    """
    arn, _ = ensure_role(
        iam,
        name=storage_role_name(tag),
        tag=tag,
        path=path,
        trust=pod_identity_trust(account_id),
        policy_name="s3-claim-bucket-access",
        policy=storage_role_policy(tag, account_id, region),
        description=f"Mountpoint for Amazon S3 CSI driver of InstantStart cluster {tag}",
        boundary=boundary,
    )
    return arn


def create_addon(
    eks: Any,
    *,
    cluster_name: str,
    addon_name: str,
    namespace: str,
    tags: dict[str, str],
    version: str | None = None,
    associations: Sequence[tuple[str, str]] = (),
    association_tags: dict[str, str] | None = None,
    configuration_values: str | None = None,
) -> dict[str, Any]:
    """EKS ``CreateAddon`` (``resolveConflicts=OVERWRITE``) with ``associations`` (``(serviceAccount, roleArn)``)
    inline as ``podIdentityAssociations`` and ``configuration_values`` (``configurationValues``, JSON); returns the
    add-on.

    Add-on versions that reject inline associations (``InvalidParameterException``) are created without them
    and each association is made with ``CreatePodIdentityAssociation`` (tagged ``association_tags``) instead.
    https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html
    """
    kwargs: dict[str, Any] = {
        "clusterName": cluster_name,
        "addonName": addon_name,
        "resolveConflicts": "OVERWRITE",
        "tags": tags,
    }
    if version:
        kwargs["addonVersion"] = version
    if configuration_values:
        kwargs["configurationValues"] = configuration_values
    if associations:
        kwargs["podIdentityAssociations"] = [{"serviceAccount": sa, "roleArn": arn} for sa, arn in associations]
    try:
        return _create_or_own(eks, kwargs)
    except ClientError as exc:
        if not (associations and error_code(exc) == "InvalidParameterException"):
            raise
    kwargs.pop("podIdentityAssociations")
    out = _create_or_own(eks, kwargs)
    for sa, arn in associations:
        ensure_pod_identity_association(eks, cluster_name, namespace, sa, arn, association_tags or tags)
    return out


def _create_or_own(eks: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """EKS ``CreateAddon`` with ``kwargs``; when EKS answers ``ResourceInUseException`` (an earlier attempt, or
    botocore's own retry of a call whose answer was lost, made it), the add-on found (``DescribeAddon``) when it
    carries the ownership tags of ``kwargs["tags"]``; else the error."""
    try:
        return dict(eks.create_addon(**kwargs)["addon"])
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
        tag = str(kwargs["tags"].get(TAG_KEY, ""))
        found = eks.describe_addon(clusterName=kwargs["clusterName"], addonName=kwargs["addonName"])["addon"]
        if not tag or not owned_by(found.get("tags"), tag):
            raise
        return dict(found)


def ensure_pod_identity_association(
    eks: Any, cluster_name: str, namespace: str, service_account: str, role_arn: str, tags: dict[str, str]
) -> bool:
    """Create the pod identity association of ``namespace``/``service_account`` unless one exists; True if created.

    Calls EKS ``ListPodIdentityAssociations``, ``CreatePodIdentityAssociation``.
    """
    found = eks.list_pod_identity_associations(
        clusterName=cluster_name, namespace=namespace, serviceAccount=service_account
    )["associations"]
    if found:
        return False
    try:
        eks.create_pod_identity_association(
            clusterName=cluster_name, namespace=namespace, serviceAccount=service_account, roleArn=role_arn, tags=tags
        )
    except ClientError as exc:
        # an earlier attempt's (or botocore's retried) call made it and its answer was lost: it is there now
        if error_code(exc) != "ResourceInUseException":
            raise
        return False
    return True


def ensure_addon(
    eks: Any,
    iam: Any,
    *,
    tag: str,
    cluster_name: str,
    addon: AddonSpec,
    account_id: str,
    region: str,
    role_path: str,
    permissions_boundary: str | None = None,
) -> AddonResource:
    """Create ``addon`` on the cluster unless it exists; returns its status (and role, when it needs one).

    Add-ons that need AWS permissions get a role through EKS Pod Identity (:func:`create_addon`: inline
    ``podIdentityAssociations`` first, ``CreatePodIdentityAssociation`` for versions that reject them). An owned
    add-on found without any association gets its association (an attempt died between the two calls).
    """
    try:
        existing = eks.describe_addon(clusterName=cluster_name, addonName=addon.name)["addon"]
    except ClientError as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
    else:
        if (
            addon.service_account
            and not existing.get("podIdentityAssociations")
            and owned_by(existing.get("tags"), tag)
        ):
            # created without inline associations (a version that refuses them) by an attempt that died before
            # CreatePodIdentityAssociation: the association is still owed
            owed = _storage_role(
                iam, tag=tag, account_id=account_id, region=region, path=role_path, boundary=permissions_boundary
            )
            tags = ownership_tags(tag)
            ensure_pod_identity_association(eks, cluster_name, addon.namespace, addon.service_account, owed, tags)
            return AddonResource(status=existing["status"], role_arn=owed)
        return AddonResource(status=existing["status"])
    role_arn = None
    associations: list[tuple[str, str]] = []
    if addon.service_account:
        role_arn = _storage_role(
            iam, tag=tag, account_id=account_id, region=region, path=role_path, boundary=permissions_boundary
        )
        associations = [(addon.service_account, role_arn)]
    out = create_addon(
        eks,
        cluster_name=cluster_name,
        addon_name=addon.name,
        namespace=addon.namespace,
        tags=ownership_tags(tag),
        associations=associations,
    )
    return AddonResource(status=out["status"], role_arn=role_arn)


@dataclass(frozen=True)
class AddonHealth:
    """An add-on's status and health issues (EKS ``DescribeAddon``)."""

    name: str
    status: str
    issues: tuple[tuple[str, str], ...] = ()
    """``(code, message)`` of each health issue, verbatim."""

    @property
    def active(self) -> bool:
        """ACTIVE."""
        return self.status == "ACTIVE"

    @property
    def waiting_for_nodes(self) -> bool:
        """CREATING, or DEGRADED only because no node can run its workload yet."""
        return self.status == "CREATING" or (
            self.status == "DEGRADED" and bool(self.issues) and all(c == WAITING_FOR_NODES for c, _ in self.issues)
        )

    @property
    def failed(self) -> bool:
        """CREATE_FAILED or UPDATE_FAILED, or DEGRADED for a reason other than missing nodes."""
        return self.status in ("CREATE_FAILED", "UPDATE_FAILED") or (
            self.status == "DEGRADED" and not self.waiting_for_nodes
        )

    def error(self) -> StageFailed:
        """The stage failure naming the first health issue (code) and every issue verbatim (message)."""
        message = "; ".join(f"{c}: {m}" for c, m in self.issues) or f"add-on {self.name} is {self.status}"
        return StageFailed(self.issues[0][0] if self.issues else f"Addon{self.status.title()}", message)


def addon_state(eks: Any, cluster_name: str, addon_name: str) -> AddonHealth:
    """The status and health issues of an add-on (EKS ``DescribeAddon``)."""
    addon = eks.describe_addon(clusterName=cluster_name, addonName=addon_name)["addon"]
    issues = tuple((str(i.get("code")), str(i.get("message"))) for i in addon.get("health", {}).get("issues", []))
    return AddonHealth(addon_name, str(addon["status"]), issues)
