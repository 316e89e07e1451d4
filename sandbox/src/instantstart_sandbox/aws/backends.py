"""Lookups into moto's in-process backends shared by the emulators (EC2, IAM, S3, EKS)."""

from __future__ import annotations

from typing import Any

from instantstart_sandbox.aws.protocol import AwsError


def ec2(account_id: str, region: str) -> Any:
    """moto's EC2 backend."""
    from moto.ec2.models import ec2_backends

    return ec2_backends[account_id][region]


def eks(account_id: str, region: str) -> Any:
    """moto's EKS backend."""
    from moto.eks.models import eks_backends

    return eks_backends[account_id][region]


def function_role(account_id: str, region: str, function_name: str) -> str | None:
    """The execution role ARN of a deployed Lambda function (moto's Lambda backend), or None."""
    from moto.awslambda.models import lambda_backends

    try:
        return str(lambda_backends[account_id][region].get_function(function_name).role)
    except Exception:  # noqa: BLE001 - unknown function
        return None


def subnet(account_id: str, region: str, subnet_id: str) -> Any | None:
    """The moto Subnet ``subnet_id``, or None when it does not exist."""
    try:
        return ec2(account_id, region).get_subnet(subnet_id)
    except Exception:  # noqa: BLE001 - moto raises InvalidSubnetIdError
        return None


def security_group_exists(account_id: str, region: str, group_id: str) -> bool:
    """Whether security group ``group_id`` exists."""
    return ec2(account_id, region).get_security_group_from_id(group_id) is not None


def zone_id(account_id: str, region: str, zone_name: str) -> str | None:
    """The AZ id (``usw2-az2``) of ``zone_name`` (``us-west-2a``)."""
    try:
        for zone in ec2(account_id, region).describe_availability_zones():
            if zone.name == zone_name:
                return str(zone.zone_id)
    except Exception:  # noqa: BLE001 - best effort
        return None
    return None


def principal_exists(account_id: str, arn: str) -> bool:
    """Whether the IAM role or user ``arn`` exists in moto IAM (other principal kinds: True)."""
    from moto.iam.models import iam_backends

    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[2] != "iam":
        return False
    account = parts[4] or account_id
    partition = parts[1] or "aws"
    backend = iam_backends[account][partition]
    resource = parts[5]
    if resource.startswith("role/"):
        try:
            backend.get_role_by_arn(arn)
            return True
        except Exception:  # noqa: BLE001 - moto raises NotFoundException
            return False
    if resource.startswith("user/"):
        return any(user.arn == arn for user in backend.users.values())
    return True


def s3_object_exists(account_id: str, bucket: str, key: str) -> bool:
    """Whether ``s3://bucket/key`` exists in moto S3."""
    from moto.s3.models import s3_backends

    try:
        return s3_backends[account_id]["aws"].get_object(bucket, key) is not None
    except Exception:  # noqa: BLE001 - moto raises MissingBucket / MissingKey
        return False


def s3_bucket_exists(account_id: str, bucket: str) -> bool:
    """Whether bucket ``bucket`` exists in moto S3."""
    from moto.s3.models import s3_backends

    try:
        return s3_backends[account_id]["aws"].get_bucket(bucket) is not None
    except Exception:  # noqa: BLE001 - moto raises MissingBucket
        return False


def put_object(account_id: str, bucket: str, key: str, body: bytes) -> bool:
    """PutObject into moto S3; False when the bucket does not exist."""
    from moto.s3.models import s3_backends

    if not s3_bucket_exists(account_id, bucket):
        return False
    s3_backends[account_id]["aws"].put_object(bucket, key, body)
    return True


def require_role(account_id: str, arn: str, code: str, what: str) -> None:
    """Raise AwsError ``code`` unless the IAM role ``arn`` exists."""
    if not principal_exists(account_id, arn) or ":role/" not in arn:
        raise AwsError(code, f"{what} {arn} is not a valid IAM role or does not exist.")
