"""The IAM identities of a cluster's MLflow connection: names, trust and least-privilege policies.

- the **pod role** ``instantstart-<tag>-mlflow``: assumed through EKS Pod Identity only by the MLflow service account
  of the training namespace of this cluster's EKS cluster (session tags); it may call every ``sagemaker-mlflow:*``
  action on the one tracking server or app (MLflow's REST API behind SageMaker's authorization:
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemakerwithmlflow.html) and read
  and write the artifact store's prefix in S3 (MLflow clients upload artifacts to S3 themselves);
- the **server role** ``instantstart-<tag>-mlflow-server`` (only for a server or app created here): assumed by
  SageMaker (``sagemaker.amazonaws.com``, this account) to reach the artifact store prefix of the cluster bucket.

Both carry the cluster's ownership tags; a role of that name without them is never adopted nor deleted.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters.addons import create_owned_role
from instantstart.errors import StageFailed
from instantstart.naming import owned_by, ownership_tags, tag_list

SERVICE_ACCOUNT = "instantstart-mlflow"
"""The service account of the training namespace whose pods log to MLflow."""
POD_POLICY = "mlflow-logging"
SERVER_POLICY = "mlflow-artifact-store"
ARTIFACT_PREFIX = "mlflow/"
"""The artifact store of a server or app created here: ``s3://<cluster bucket>/mlflow/``."""


def pod_role_name(tag: str) -> str:
    """IAM role of the training pods' MLflow identity: ``instantstart-<tag>-mlflow`` (<= 64 characters)."""
    return f"instantstart-{tag}-mlflow"


def server_role_name(tag: str) -> str:
    """IAM role SageMaker assumes for a server or app created here: ``instantstart-<tag>-mlflow-server``."""
    return f"instantstart-{tag}-mlflow-server"


def resource_name(tag: str) -> str:
    """Name of the tracking server or MLflow app created for the cluster: ``instantstart-<tag>``."""
    return f"instantstart-{tag}"


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` -> ``(bucket, prefix)`` (prefix without a leading slash, may be empty).

    Raises:
        ValueError: not an ``s3://`` URI.
    """
    if not uri.startswith("s3://") or len(uri) <= 5:
        raise ValueError(f"{uri} is not an s3:// URI")
    bucket, _, prefix = uri[5:].partition("/")
    return bucket, prefix


def _s3_statements(artifact_store_uri: str, *, delete: bool) -> list[dict[str, Any]]:
    bucket, prefix = split_s3_uri(artifact_store_uri)
    objects = f"arn:aws:s3:::{bucket}/{prefix}*" if prefix else f"arn:aws:s3:::{bucket}/*"
    actions = ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"] + (["s3:DeleteObject"] if delete else [])
    listing: dict[str, Any] = {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": f"arn:aws:s3:::{bucket}"}
    if prefix:
        listing["Condition"] = {"StringLike": {"s3:prefix": [f"{prefix}*"]}}
    return [listing, {"Effect": "Allow", "Action": actions, "Resource": objects}]


def pod_policy(resource_arn: str, artifact_store_uri: str | None) -> dict[str, Any]:
    """The pod role's policy: ``sagemaker-mlflow:*`` on ``resource_arn`` and the artifact store prefix (when known)."""
    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Action": ["sagemaker-mlflow:*"], "Resource": resource_arn},
    ]
    if artifact_store_uri and artifact_store_uri.startswith("s3://"):
        statements += _s3_statements(artifact_store_uri, delete=False)
    return {"Version": "2012-10-17", "Statement": statements}


def server_policy(artifact_store_uri: str) -> dict[str, Any]:
    """The server role's policy: read, write and delete under the artifact store prefix."""
    return {"Version": "2012-10-17", "Statement": _s3_statements(artifact_store_uri, delete=True)}


def server_trust(account_id: str) -> dict[str, Any]:
    """SageMaker of this account assumes the server role."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            }
        ],
    }


def ensure_owned_role(
    iam: Any,
    *,
    name: str,
    tag: str,
    path: str,
    trust: dict[str, Any],
    policy_name: str,
    policy: dict[str, Any],
    description: str,
    boundary: str | None,
) -> str:
    """The ARN of role ``name``, created with the ownership tags when absent; its trust and one inline policy are
    (re)put every time (a connection to another server changes the policy).

    Calls IAM ``GetRole``, ``ListRoleTags``, ``CreateRole``, ``UpdateAssumeRolePolicy``, ``PutRolePolicy``.

    Raises:
        StageFailed: ``RoleNotOwned``, the role exists without this cluster's ownership tags.
    """
    try:
        arn = str(iam.get_role(RoleName=name)["Role"]["Arn"])
    except ClientError as exc:
        if error_code(exc) != "NoSuchEntity":
            raise
        kwargs: dict[str, Any] = {
            "RoleName": name,
            "Path": path,
            "AssumeRolePolicyDocument": json.dumps(trust),
            "Description": description,
            "Tags": tag_list(ownership_tags(tag)),
        }
        if boundary:
            kwargs["PermissionsBoundary"] = boundary
        arn = create_owned_role(iam, kwargs, tag)
    else:
        if not owned_by(iam.list_role_tags(RoleName=name).get("Tags", []), tag):
            raise StageFailed("RoleNotOwned", f"IAM role {name} exists but is not managed by InstantStart for {tag}")
        iam.update_assume_role_policy(RoleName=name, PolicyDocument=json.dumps(trust))
    iam.put_role_policy(RoleName=name, PolicyName=policy_name, PolicyDocument=json.dumps(policy))
    return arn
