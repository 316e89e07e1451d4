"""EKS add-ons of the dependencies stage and the identity they need.

One function per rule: :func:`ensure_addon` creates an add-on (and the IAM role and pod identity
association it needs) only when absent; :func:`addon_state` reads it back. EKS API reference:
https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.errors import StageFailed
from instantstart.models.resources import AddonResource
from instantstart.naming import ownership_tags, storage_bucket_name, storage_role_name, tag_list


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


def _storage_role(iam: Any, *, tag: str, account_id: str, region: str, path: str, boundary: str | None) -> str:
    """The Mountpoint S3 CSI driver role of the cluster: trusted by EKS Pod Identity, S3 access to one bucket.

    Calls IAM ``GetRole``, ``CreateRole``, ``PutRolePolicy``.
    """
    name = storage_role_name(tag)
    bucket = storage_bucket_name(tag, account_id, region)
    try:
        return str(iam.get_role(RoleName=name)["Role"]["Arn"])
    except ClientError as exc:
        if error_code(exc) != "NoSuchEntity":
            raise
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            }
        ],
    }
    kwargs: dict[str, Any] = {
        "RoleName": name,
        "Path": path,
        "AssumeRolePolicyDocument": json.dumps(trust),
        "Description": f"Mountpoint for Amazon S3 CSI driver of InstantStart cluster {tag}",
        "Tags": tag_list(ownership_tags(tag)),
    }
    if boundary:
        kwargs["PermissionsBoundary"] = boundary
    arn = str(iam.create_role(**kwargs)["Role"]["Arn"])
    policy = {
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
    iam.put_role_policy(RoleName=name, PolicyName="s3-claim-bucket-access", PolicyDocument=json.dumps(policy))
    return arn


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

    Add-ons that need AWS permissions get a role through EKS Pod Identity: inline
    ``podIdentityAssociations`` first; add-on versions that reject them fall back to
    ``CreatePodIdentityAssociation``.
    """
    try:
        existing = eks.describe_addon(clusterName=cluster_name, addonName=addon.name)["addon"]
        return AddonResource(status=existing["status"])
    except ClientError as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
    kwargs: dict[str, Any] = {
        "clusterName": cluster_name,
        "addonName": addon.name,
        "resolveConflicts": "OVERWRITE",
        "tags": ownership_tags(tag),
    }
    role_arn = None
    if addon.service_account:
        role_arn = _storage_role(
            iam, tag=tag, account_id=account_id, region=region, path=role_path, boundary=permissions_boundary
        )
        kwargs["podIdentityAssociations"] = [{"serviceAccount": addon.service_account, "roleArn": role_arn}]
    try:
        out = eks.create_addon(**kwargs)["addon"]
    except ClientError as exc:
        if not (addon.service_account and error_code(exc) == "InvalidParameterException"):
            raise
        kwargs.pop("podIdentityAssociations")
        out = eks.create_addon(**kwargs)["addon"]
        _ensure_pod_identity(eks, cluster_name, addon, str(role_arn), tag)
    return AddonResource(status=out["status"], role_arn=role_arn)


def _ensure_pod_identity(eks: Any, cluster_name: str, addon: AddonSpec, role_arn: str, tag: str) -> None:
    found = eks.list_pod_identity_associations(
        clusterName=cluster_name, namespace=addon.namespace, serviceAccount=addon.service_account
    )["associations"]
    if not found:
        eks.create_pod_identity_association(
            clusterName=cluster_name,
            namespace=addon.namespace,
            serviceAccount=str(addon.service_account),
            roleArn=role_arn,
            tags=ownership_tags(tag),
        )


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
