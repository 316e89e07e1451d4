"""The template's IAM resources created in emulated IAM, as CloudFormation creates them: roles with their trust,
managed policy attachments and inline policies, and customer managed policies.

Every call goes through the sandbox's IAM, so IAM's size and count quotas (:mod:`instantstart_sandbox.aws.iam_limits`)
fail a deploy of a template over them with IAM's own error, as ``sam deploy`` would fail.
"""

from __future__ import annotations

import json
from typing import Any

VERSION = "2012-10-17"


def _document(document: dict[str, Any]) -> str:
    # SAM policy templates omit Version (IAM then assumes 2008-10-17); moto rejects that.
    return json.dumps({"Version": VERSION, **document})


def create_role(iam: Any, name: str, props: dict[str, Any]) -> dict[str, str]:
    """``AWS::IAM::Role`` ``name`` from its resolved properties: CreateRole, AttachRolePolicy for each of
    ``ManagedPolicyArns``, PutRolePolicy for each of ``Policies``. Returns its attributes (``Arn``, ``RoleId``).

    Raises:
        botocore.exceptions.ClientError: IAM's refusal (``LimitExceeded`` for a document or count over a quota).
    """
    kwargs: dict[str, Any] = {
        "RoleName": name,
        "AssumeRolePolicyDocument": json.dumps(props["AssumeRolePolicyDocument"]),
        "Path": props.get("Path", "/"),
    }
    if props.get("Description"):
        kwargs["Description"] = props["Description"]
    if props.get("Tags"):
        kwargs["Tags"] = props["Tags"]
    role = iam.create_role(**kwargs)["Role"]
    for arn in props.get("ManagedPolicyArns", []):
        iam.attach_role_policy(RoleName=name, PolicyArn=arn)
    for policy in props.get("Policies", []):
        iam.put_role_policy(
            RoleName=name, PolicyName=policy["PolicyName"], PolicyDocument=_document(policy["PolicyDocument"])
        )
    return {"Arn": str(role["Arn"]), "RoleId": str(role["RoleId"])}


def create_managed_policy(iam: Any, name: str, props: dict[str, Any], role_names: list[str]) -> str:
    """``AWS::IAM::ManagedPolicy`` ``name`` (its ``ManagedPolicyName`` when set) from its resolved properties:
    CreatePolicy, then AttachRolePolicy to each role of ``role_names`` (its ``Roles``, as physical names). Returns
    the policy ARN (what ``Ref`` answers).

    Raises:
        botocore.exceptions.ClientError: IAM's refusal (``LimitExceeded`` for a document or count over a quota).
    """
    kwargs: dict[str, Any] = {
        "PolicyName": props.get("ManagedPolicyName") or name,
        "Path": props.get("Path", "/"),
        "PolicyDocument": _document(props["PolicyDocument"]),
    }
    if props.get("Description"):
        kwargs["Description"] = props["Description"]
    arn = str(iam.create_policy(**kwargs)["Policy"]["Arn"])
    for role in role_names:
        iam.attach_role_policy(RoleName=role, PolicyArn=arn)
    return arn
