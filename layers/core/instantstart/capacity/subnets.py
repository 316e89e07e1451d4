"""Pinned subnets (an instance group's ``subnetId``): checked when the ``hyperpod`` stage runs."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.errors import StageFailed
from instantstart.models.cluster import InstanceGroupRequest


def check_pinned_subnets(ec2: Any, groups: list[InstanceGroupRequest], *, vpc_id: str, availability_zone: str) -> None:
    """Every pinned ``subnetId`` exists, is in the cluster's VPC and in its zone (EC2 ``DescribeSubnets``).

    Raises:
        StageFailed: ``InvalidSubnet`` naming the group, the subnet, its VPC/zone and the cluster's; or EC2's
            own error verbatim (e.g. ``InvalidSubnetID.NotFound``).
    """
    for group in groups:
        if group.subnet_id is None:
            continue
        try:
            [subnet] = ec2.describe_subnets(SubnetIds=[group.subnet_id])["Subnets"]
        except ClientError as exc:
            raise StageFailed(error_code(exc) or "InvalidSubnet", error_message(exc)) from exc
        where = f"instance group {group.instance_group_name}: subnet {group.subnet_id}"
        if subnet["VpcId"] != vpc_id:
            raise StageFailed("InvalidSubnet", f"{where} is in {subnet['VpcId']}, not in the cluster's VPC {vpc_id}")
        if subnet["AvailabilityZone"] != availability_zone:
            raise StageFailed(
                "InvalidSubnet",
                f"{where} is in {subnet['AvailabilityZone']}, not in the cluster's zone {availability_zone}",
            )
