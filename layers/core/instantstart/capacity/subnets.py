"""The subnet of an instance group: pinned (``subnetId``), dedicated (``dedicatedSubnet``) or the zone's.

Pinned subnets are checked when the ``hyperpod`` stage runs (:func:`check_pinned_subnets`). The others are
found or created by :func:`ensure_group_subnet` under the VPC's subnet lock, so a create and a group add
(or two adds, of two workflows) never make two subnets for one zone or pick the same free address block.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.errors import StageFailed
from instantstart.models.cluster import InstanceGroupRequest
from instantstart.models.resources import ComputeSubnet
from instantstart.network import vpc
from instantstart.store.table import ConditionFailed, Store

SUBNET_LOCK_LEASE_SECONDS = 60
"""How long a holder may keep a VPC's subnet lock; a holder that crashed blocks the others this long at most.
Finding or creating a subnet and its route table is a handful of EC2 calls (seconds)."""

SUBNET_LOCK_WAIT_SECONDS = 90
"""How long a caller waits for the lock before failing (longer than a lease, so a stale lock is taken over)."""

_FIRST_DELAY, _MAX_DELAY = 0.2, 5.0
"""Backoff between attempts to take the lock (seconds): doubling from the first delay, capped."""


def subnet_lock_name(vpc_id: str) -> str:
    """The lock of every subnet find-or-create in a VPC (``LOCK#SUBNETS#<vpc-id>``)."""
    return f"SUBNETS#{vpc_id}"


def subnet_lock_owner(operation_id: str) -> str:
    """The subnet lock's owner id of a workflow operation (``<operationId>:subnets``): its steps, retried after a
    crash inside the lock, take back the lease their dead attempt left."""
    return f"{operation_id}:subnets"


@contextmanager
def subnet_lock(
    store: Store,
    vpc_id: str,
    *,
    owner: str | None = None,
    lease_seconds: int = SUBNET_LOCK_LEASE_SECONDS,
    wait_seconds: float = SUBNET_LOCK_WAIT_SECONDS,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """Hold the VPC's subnet lock (a conditional lock record of the table) for the ``with`` block.

    A caller that finds it held retries with capped exponential backoff (0.2 s doubling, at most 5 s)
    for ``wait_seconds``; a lease whose holder crashed expires after ``lease_seconds`` and is taken over.
    The lock is released when the block ends, also by an exception. Yields the owner id: ``owner`` when given
    (a workflow step passes its operation's, so the step retried after its Lambda died mid-block takes back the
    lease its dead attempt left, at once, instead of waiting it out), else a new one.

    Raises:
        StageFailed: ``SubnetLockTimeout`` when the lock stayed held for ``wait_seconds``.
    """
    name, owner = subnet_lock_name(vpc_id), owner or uuid.uuid4().hex
    deadline, delay = clock() + wait_seconds, _FIRST_DELAY
    while True:
        try:
            store.acquire_lock(name, owner, now=int(clock()), lease_seconds=lease_seconds)
            break
        except ConditionFailed:
            if clock() >= deadline:
                raise StageFailed(
                    "SubnetLockTimeout",
                    f"the subnets of {vpc_id} are being changed by another operation for over {wait_seconds:g} s; "
                    "retry later",
                ) from None
            sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)
    try:
        yield owner
    finally:
        store.release_lock(name, owner)


def ensure_group_subnet(
    store: Store,
    ec2: Any,
    *,
    tag: str,
    vpc_id: str,
    availability_zone: str,
    nat_gateway_id: str,
    s3_endpoint_id: str,
    dedicated_group: str | None = None,
    operation_id: str | None = None,
) -> ComputeSubnet:
    """The compute subnet of the zone, or the dedicated subnet of ``dedicated_group``, found or created once.

    Holds the VPC's subnet lock (:func:`subnet_lock`) around
    :func:`instantstart.network.vpc.ensure_compute_subnet` (or ``ensure_dedicated_subnet``): a caller that
    waited for the lock then finds the subnet the holder created by its tags, so concurrent callers get one
    subnet per zone (per dedicated group), and no two new subnets take the same free /20 of the VPC.

    Harsher reading of EC2: ``DescribeSubnets`` is eventually consistent, so a subnet created by the previous
    holder might not be listed yet; the lock is released only after ``CreateSubnet`` and the route table
    calls answered, which leaves the next holder that time.

    ``operation_id``: the workflow operation calling, which owns the lock (:func:`subnet_lock_owner`).

    Raises:
        StageFailed: ``SubnetLockTimeout``; ``InsufficientVpcAddressSpace`` when the VPC has no free /20.
    """
    with subnet_lock(store, vpc_id, owner=subnet_lock_owner(operation_id) if operation_id else None):
        if dedicated_group is not None:
            return vpc.ensure_dedicated_subnet(
                ec2,
                tag=tag,
                vpc_id=vpc_id,
                availability_zone=availability_zone,
                instance_group_name=dedicated_group,
                nat_gateway_id=nat_gateway_id,
                s3_endpoint_id=s3_endpoint_id,
            )
        return vpc.ensure_compute_subnet(
            ec2,
            tag=tag,
            vpc_id=vpc_id,
            availability_zone=availability_zone,
            nat_gateway_id=nat_gateway_id,
            s3_endpoint_id=s3_endpoint_id,
        )


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
