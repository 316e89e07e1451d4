"""The HyperPod ``ClusterRole`` of a cluster's managed Karpenter: created when autoscaling turns on, deleted when
it turns off or the cluster is deleted. Only a role carrying this cluster's ownership tags is ever changed.

HyperPod assumes the role to add and remove nodes for Karpenter. Trust and permissions follow AWS's guide
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-autoscaling-iam.html), narrowed:

- trusted by ``hyperpod.sagemaker.amazonaws.com`` only (the guide's principal; not all of SageMaker), for this
  account (``aws:SourceAccount``);
- ``sagemaker:BatchAddClusterNodes`` and ``sagemaker:BatchDeleteClusterNodes`` on HyperPod clusters of this
  account and Region carrying this cluster's ownership tag (the guide grants ``cluster/*`` of the account;
  HyperPod cluster ARNs end in a generated id, so the tag is what names this cluster);
- no KMS grant: the guide's ``kms:CreateGrant``/``DescribeKey`` are for groups whose volumes use a customer
  managed key, which this control plane never configures.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters.addons import create_owned_role
from instantstart.errors import StageFailed
from instantstart.naming import TAG_KEY, owned_by, ownership_tags, tag_list

TRUSTED_SERVICE = "hyperpod.sagemaker.amazonaws.com"
"""The service principal that assumes a HyperPod autoscaling ClusterRole."""
POLICY_NAME = "hyperpod-karpenter-scaling"
"""The role's one inline policy."""


def cluster_role_name(tag: str) -> str:
    """IAM role name of the cluster's autoscaling ClusterRole: ``instantstart-<tag>-hp-autoscaling`` (<= 52)."""
    return f"instantstart-{tag}-hp-autoscaling"


def trust_policy(account_id: str) -> dict[str, Any]:
    """The role's trust policy: HyperPod of this account assumes it."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": TRUSTED_SERVICE},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            }
        ],
    }


def scaling_policy(tag: str, *, account_id: str, region: str, partition: str = "aws") -> dict[str, Any]:
    """The role's inline policy: add and delete nodes of this cluster's HyperPod cluster only."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"],
                "Resource": f"arn:{partition}:sagemaker:{region}:{account_id}:cluster/*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/{TAG_KEY}": tag}},
            }
        ],
    }


def ensure_cluster_role(iam: Any, *, tag: str, account_id: str, region: str, path: str, boundary: str | None) -> str:
    """The ARN of the cluster's autoscaling ClusterRole, created (with its inline policy) when absent.

    Idempotent: an existing role of this cluster gets its policy (re)put. Calls IAM ``GetRole``,
    ``ListRoleTags``, ``CreateRole`` (tags on create), ``PutRolePolicy``.

    Raises:
        StageFailed: ``RoleNotOwned``, a role of that name exists without this cluster's ownership tags (never
            adopted).
    """
    name = cluster_role_name(tag)
    arn: str | None = None
    try:
        arn = str(iam.get_role(RoleName=name)["Role"]["Arn"])
    except ClientError as exc:
        if error_code(exc) != "NoSuchEntity":
            raise
    if arn is not None:
        if not owned_by(iam.list_role_tags(RoleName=name).get("Tags", []), tag):
            raise StageFailed(
                "RoleNotOwned", f"IAM role {name} exists but is not managed by InstantStart for cluster {tag}"
            )
    else:
        kwargs: dict[str, Any] = {
            "RoleName": name,
            "Path": path,
            "AssumeRolePolicyDocument": json.dumps(trust_policy(account_id)),
            "Description": f"HyperPod managed Karpenter of InstantStart cluster {tag}: adds and removes its nodes",
            "Tags": tag_list(ownership_tags(tag)),
        }
        if boundary:
            kwargs["PermissionsBoundary"] = boundary
        arn = create_owned_role(iam, kwargs, tag)
    partition = arn.split(":")[1] if arn.count(":") >= 2 else "aws"
    iam.put_role_policy(
        RoleName=name,
        PolicyName=POLICY_NAME,
        PolicyDocument=json.dumps(scaling_policy(tag, account_id=account_id, region=region, partition=partition)),
    )
    return arn


def delete_cluster_role(iam: Any, tag: str) -> bool:
    """Delete the cluster's autoscaling ClusterRole and its inline policies; True when one was deleted.

    A role of that name without this cluster's ownership tags is left alone (False). Calls IAM ``GetRole``,
    ``ListRoleTags``, ``ListRolePolicies``, ``DeleteRolePolicy``, ``DeleteRole``.
    """
    name = cluster_role_name(tag)
    try:
        iam.get_role(RoleName=name)
        if not owned_by(iam.list_role_tags(RoleName=name).get("Tags", []), tag):
            return False
        for policy in iam.list_role_policies(RoleName=name).get("PolicyNames", []):
            iam.delete_role_policy(RoleName=name, PolicyName=policy)
        iam.delete_role(RoleName=name)
    except ClientError as exc:
        if error_code(exc) == "NoSuchEntity":
            return False
        raise
    return True
