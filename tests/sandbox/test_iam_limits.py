"""IAM's size and count quotas in the sandbox (moto enforces none): each exceeded through boto3 answers IAM's code
and message, and a deploy of a template over one fails with the same error (``instantstart_sandbox.aws.iam_limits``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.exceptions import ClientError

from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.deploy import Deployer

try:
    from tests.sandbox.conftest_aws import ACCOUNT, REGION, aws, client, clock, kube, unique
except ImportError:  # rootdir not on sys.path
    from conftest_aws import ACCOUNT, REGION, aws, client, clock, kube, unique  # type: ignore[no-redef]  # noqa: F401

TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


def size(document: dict[str, Any]) -> int:
    """Characters as IAM counts them (no whitespace)."""
    return len(json.dumps(document, separators=(",", ":")))


def policy(chars: int) -> dict[str, Any]:
    """A permissions policy of exactly ``chars`` characters (at least 105: its one statement's Sid pads it)."""
    doc = {"Version": "2012-10-17", "Statement": [{"Sid": "", "Effect": "Allow", "Action": "s3:GetObject"}]}
    doc["Statement"][0]["Resource"] = "*"
    doc["Statement"][0]["Sid"] = "P" * (chars - size(doc))
    assert size(doc) == chars
    return doc


def trust(chars: int) -> dict[str, Any]:
    """A trust policy of exactly ``chars`` characters."""
    doc = json.loads(json.dumps(TRUST))
    doc["Statement"][0]["Sid"] = ""
    doc["Statement"][0]["Sid"] = "T" * (chars - size(doc))
    assert size(doc) == chars
    return doc


def refused(call: Callable[[], Any]) -> tuple[str, str, int]:
    with pytest.raises(ClientError) as caught:
        call()
    error = caught.value.response
    return error["Error"]["Code"], error["Error"]["Message"], error["ResponseMetadata"]["HTTPStatusCode"]


def new_role(iam: Any) -> str:
    name = unique("limits")
    iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))
    return name


def test_given_a_trust_policy_over_2048_characters_then_create_and_update_answer_limit_exceeded(
    client: Callable[[str], Any],
) -> None:
    iam = client("iam")
    # whitespace is not counted: the document at the quota, pretty-printed, is accepted
    name = unique("trust")
    iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust(2048), indent=4))

    too_big = json.dumps(trust(2049))
    expected = ("LimitExceeded", "Cannot exceed quota for ACLSizePerRole: 2048", 409)
    assert refused(lambda: iam.create_role(RoleName=unique("trust"), AssumeRolePolicyDocument=too_big)) == expected
    assert refused(lambda: iam.update_assume_role_policy(RoleName=name, PolicyDocument=too_big)) == expected


def test_given_inline_policies_over_10240_characters_together_then_put_role_policy_answers_limit_exceeded(
    client: Callable[[str], Any],
) -> None:
    iam = client("iam")
    name = new_role(iam)
    iam.put_role_policy(RoleName=name, PolicyName="a", PolicyDocument=json.dumps(policy(6000)))
    iam.put_role_policy(RoleName=name, PolicyName="b", PolicyDocument=json.dumps(policy(4240), indent=2))

    # the aggregate counts: 6000 + 4241 is one over, on a new policy or on a replaced one
    assert refused(
        lambda: iam.put_role_policy(RoleName=name, PolicyName="b", PolicyDocument=json.dumps(policy(4241)))
    ) == ("LimitExceeded", f"Maximum policy size of 10240 bytes exceeded for role {name}", 409)
    assert refused(lambda: iam.put_role_policy(RoleName=name, PolicyName="c", PolicyDocument=json.dumps(policy(105))))
    # replacing a document with a smaller one is within the quota
    iam.put_role_policy(RoleName=name, PolicyName="a", PolicyDocument=json.dumps(policy(200)))


def test_given_a_managed_policy_over_6144_characters_then_create_policy_and_its_versions_answer_limit_exceeded(
    client: Callable[[str], Any],
) -> None:
    iam = client("iam")
    arn = iam.create_policy(PolicyName=unique("p"), PolicyDocument=json.dumps(policy(6144)))["Policy"]["Arn"]

    expected = ("LimitExceeded", "Cannot exceed quota for PolicySize: 6144", 409)
    too_big = json.dumps(policy(6145))
    assert refused(lambda: iam.create_policy(PolicyName=unique("p"), PolicyDocument=too_big)) == expected
    assert refused(lambda: iam.create_policy_version(PolicyArn=arn, PolicyDocument=too_big)) == expected


def test_given_a_role_with_10_managed_policies_then_an_eleventh_answers_limit_exceeded(
    client: Callable[[str], Any],
) -> None:
    iam = client("iam")
    name = new_role(iam)
    arns = [
        iam.create_policy(PolicyName=unique("p"), PolicyDocument=json.dumps(policy(200)))["Policy"]["Arn"]
        for _ in range(11)
    ]
    for arn in arns[:10]:
        iam.attach_role_policy(RoleName=name, PolicyArn=arn)

    assert refused(lambda: iam.attach_role_policy(RoleName=name, PolicyArn=arns[10])) == (
        "LimitExceeded",
        "Cannot exceed quota for PoliciesPerRole: 10",
        409,
    )
    iam.attach_role_policy(RoleName=name, PolicyArn=arns[0])  # attaching one already attached changes nothing


def test_given_a_template_over_a_quota_when_deploying_then_the_deploy_fails_with_iams_error(
    aws: AwsSandboxServer, tmp_path: Path
) -> None:
    def template(managed_chars: int) -> Path:
        path = tmp_path / f"template-{managed_chars}.yaml"
        body = {
            "AWSTemplateFormatVersion": "2010-09-09",
            "Transform": "AWS::Serverless-2016-10-31",
            "Resources": {
                "Permissions": {
                    "Type": "AWS::IAM::ManagedPolicy",
                    "Properties": {"PolicyDocument": policy(managed_chars)},
                },
                "Role": {
                    "Type": "AWS::IAM::Role",
                    "Properties": {"AssumeRolePolicyDocument": TRUST, "ManagedPolicyArns": [{"Ref": "Permissions"}]},
                },
            },
        }
        path.write_text(yaml.safe_dump(body))
        return path

    deployed = Deployer(aws.endpoint_url, REGION, ACCOUNT, stack_name=unique("fits")).deploy(template(6144))
    assert deployed.physical["Permissions"].startswith("arn:aws:iam::")

    with pytest.raises(ClientError) as caught:
        Deployer(aws.endpoint_url, REGION, ACCOUNT, stack_name=unique("over")).deploy(template(6145))
    assert caught.value.response["Error"]["Code"] == "LimitExceeded"
    assert caught.value.response["Error"]["Message"] == "Cannot exceed quota for PolicySize: 6144"
