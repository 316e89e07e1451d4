"""The AWS sandbox server: routing by the botocore model, fault injection, pass-through, EC2 fills."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

try:
    from tests.sandbox.conftest_aws import _no_leftover_faults, aws, client, clock, kube, pk_table, unique
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        _no_leftover_faults,
        aws,
        client,
        clock,
        kube,
        pk_table,
        unique,
    )

Client = Callable[[str], Any]


@pytest.mark.parametrize(
    ("service", "operation", "call", "code", "status"),
    [
        ("sagemaker", "ListClusters", lambda c: c("sagemaker").list_clusters(), "ResourceLimitExceeded", 400),
        ("eks", "ListClusters", lambda c: c("eks").list_clusters(), "ResourceInUseException", 409),
        ("eks", "DescribeAddonVersions", lambda c: c("eks").describe_addon_versions(), "ServerException", 400),
        ("ec2", "DescribeVpcs", lambda c: c("ec2").describe_vpcs(), "UnauthorizedOperation", 403),
        (
            "states",
            "ListStateMachines",
            lambda c: c("stepfunctions").list_state_machines(),
            "AccessDeniedException",
            400,
        ),
        ("iam", "ListRoles", lambda c: c("iam").list_roles(), "NoSuchEntity", 404),
        ("s3", "ListBuckets", lambda c: c("s3").list_buckets(), "AccessDenied", 403),
        ("sqs", "ListQueues", lambda c: c("sqs").list_queues(), "AWS.SimpleQueueService.NonExistentQueue", 400),
    ],
    ids=["json", "rest-json", "rest-json-query-uri", "ec2", "signing-name", "query", "rest-xml", "json-query-compat"],
)
def test_given_an_injected_fault_when_the_operation_is_called_then_botocore_raises_that_error_once(
    aws: Any, client: Client, service: str, operation: str, call: Callable[[Client], Any], code: str, status: int
) -> None:
    aws.extension.faults.inject(service, operation, code, "injected by the test", status=status)
    with pytest.raises(ClientError) as exc:
        call(client)
    assert exc.value.response["Error"]["Code"] == code
    assert "injected by the test" in exc.value.response["Error"]["Message"]
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    call(client)  # consumed: the next call passes


def test_given_a_fault_for_several_times_when_called_then_it_fails_that_many_times(aws: Any, client: Client) -> None:
    aws.extension.faults.inject("eks", "ListClusters", "InvalidRequestException", "no", times=2)
    eks = client("eks")
    for _ in range(2):
        with pytest.raises(ClientError):
            eks.list_clusters()
    eks.list_clusters()


def test_given_faults_when_cleared_then_calls_pass(aws: Any, client: Client) -> None:
    aws.extension.faults.inject("eks", "ListClusters", "InvalidRequestException", "no", times=5)
    aws.extension.faults.clear()
    client("eks").list_clusters()


def test_given_us_west_2_when_gpu_offerings_are_described_by_zone_with_wildcards_then_hyperpod_types_are_there(
    client: Client,
) -> None:
    ec2 = client("ec2")
    offerings = ec2.describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": ["g5.*", "g6.4xlarge", "p4d.24xlarge", "p5.48xlarge"]}],
    )["InstanceTypeOfferings"]
    by_type: dict[str, set[str]] = {}
    for offering in offerings:
        assert offering["LocationType"] == "availability-zone"
        by_type.setdefault(offering["InstanceType"], set()).add(offering["Location"])
    assert {"g5.xlarge", "g5.8xlarge", "g5.48xlarge", "g6.4xlarge", "p4d.24xlarge", "p5.48xlarge"} <= set(by_type)
    assert "g6.8xlarge" not in by_type
    assert by_type["g6.4xlarge"] >= {"us-west-2a", "us-west-2b"}

    in_zone = ec2.describe_instance_type_offerings(
        LocationType="availability-zone-id",
        Filters=[{"Name": "location", "Values": ["usw2-az1"]}, {"Name": "instance-type", "Values": ["p5.48xlarge"]}],
    )["InstanceTypeOfferings"]
    assert [(o["InstanceType"], o["Location"]) for o in in_zone] == [("p5.48xlarge", "usw2-az1")]

    paged = ec2.describe_instance_type_offerings(LocationType="availability-zone", MaxResults=5)
    assert len(paged["InstanceTypeOfferings"]) == 5
    assert paged["NextToken"]


def test_given_us_west_2_when_zones_are_described_then_names_come_with_zone_ids(client: Client) -> None:
    zones = client("ec2").describe_availability_zones()["AvailabilityZones"]
    assert {"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"} <= {z["ZoneName"] for z in zones}
    assert all(z["ZoneId"].startswith("usw2-az") for z in zones)


def test_given_operations_the_sandbox_does_not_emulate_when_called_then_moto_answers(client: Client) -> None:
    sqs = client("sqs")
    url = sqs.create_queue(QueueName=unique("passthrough"))["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="hello")
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "hello"
    ddb = client("dynamodb")
    table = pk_table(ddb, "table")
    ddb.put_item(TableName=table, Item={"PK": {"S": "a"}})
    assert ddb.get_item(TableName=table, Key={"PK": {"S": "a"}})["Item"] == {"PK": {"S": "a"}}
