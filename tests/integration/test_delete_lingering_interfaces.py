"""Given network interfaces that outlive the deleted EKS and HyperPod clusters (EC2 answers DependencyViolation
while they exist), DELETE waits them out and succeeds once they are released."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal

LINGER_SECONDS = 900.0
"""Simulated seconds the interfaces stay after their cluster is deleted (several network-deletion polls)."""


@pytest.fixture
def lingering_interfaces(sandbox: Sandbox) -> Iterator[None]:
    """Turn on lingering network interfaces for the test, then back off."""
    faults = sandbox.aws.extension.faults
    before = faults.eni_linger_seconds
    faults.linger_network_interfaces(LINGER_SECONDS)
    yield
    faults.linger_network_interfaces(before)


def test_given_lingering_network_interfaces_when_deleting_then_it_succeeds_after_they_are_released(
    lingering_interfaces: None, api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    api.create_cluster("linger", "us-west-2c", [GROUP])
    ready = wait_for(api, "linger", terminal)
    assert ready["status"] == "READY", ready["stages"]
    ec2 = boto3.client("ec2", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    vpcs = ec2.describe_vpcs(Filters=[{"Name": "tag:instantstart:cluster-tag", "Values": ["linger"]}])["Vpcs"]
    assert len(vpcs) == 1
    vpc_id = vpcs[0]["VpcId"]

    op = api.delete_cluster("linger")
    seen_lingering: set[str] = set()
    deadline = time.monotonic() + 240
    while (operation := api.get_operation(op["operationId"]))["status"] not in ("SUCCEEDED", "FAILED"):
        assert time.monotonic() < deadline, "delete did not finish"
        interfaces = ec2.describe_network_interfaces(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        seen_lingering |= {
            i["NetworkInterfaceId"] for i in interfaces["NetworkInterfaces"] if i.get("RequesterManaged")
        }
        time.sleep(0.3)

    assert operation["status"] == "SUCCEEDED", operation
    assert seen_lingering, "the deleted clusters left requester-managed interfaces in the VPC for a while"
    with pytest.raises(ApiError) as gone:
        api.get_cluster("linger")
    assert gone.value.status == 404
    assert ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Vpcs"] == []
    remaining = ec2.describe_network_interfaces(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
    assert remaining["NetworkInterfaces"] == []
