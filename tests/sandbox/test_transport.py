"""The in-process transport: this process's botocore clients reach the sandbox endpoint without a socket, and
see what they would see over HTTP."""

from __future__ import annotations

import contextvars
import socket
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

from instantstart_sandbox.aws import transport

try:
    from tests.sandbox.conftest_aws import _no_leftover_faults, aws, client, clock, kube, unique
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        _no_leftover_faults,
        aws,
        client,
        clock,
        kube,
        unique,
    )

Client = Callable[[str], Any]


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every new TCP connection of this process fails (and is recorded) while the test runs."""
    attempts: list[Any] = []

    def refuse(address: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(address)
        raise ConnectionRefusedError(f"no sockets in this test: {address}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr("urllib3.util.connection.create_connection", refuse)
    yield attempts


def test_given_no_sockets_then_the_sandbox_endpoint_still_answers_in_process(
    client: Client, no_sockets: list[Any]
) -> None:
    table = unique("transport")
    ddb = client("dynamodb")
    ddb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.put_item(TableName=table, Item={"pk": {"S": "a"}, "n": {"N": "1"}})
    assert ddb.get_item(TableName=table, Key={"pk": {"S": "a"}})["Item"]["n"] == {"N": "1"}
    with pytest.raises(ClientError) as refused:
        ddb.put_item(TableName=table, Item={"pk": {"S": "a"}}, ConditionExpression="attribute_not_exists(pk)")
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert no_sockets == []


def test_an_s3_key_with_spaces_and_non_ascii_round_trips_in_process(client: Client, no_sockets: list[Any]) -> None:
    bucket = unique("transport-bucket")
    s3 = client("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    key = "logs/a b+c/ü 1.txt"
    s3.put_object(Bucket=bucket, Key=key, Body=b"hello\n")
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"hello\n"
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="logs/a b+c/")
    assert [o["Key"] for o in listed["Contents"]] == [key]
    assert no_sockets == []


def test_after_unregister_the_endpoint_is_reached_over_http_and_registered_again_in_process(
    aws: Any, no_sockets: list[Any]
) -> None:
    sqs = boto3.client(
        "sqs",
        endpoint_url=aws.endpoint_url,
        region_name="us-west-2",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )
    transport.unregister(aws.endpoint_url)
    try:
        with pytest.raises(EndpointConnectionError):
            sqs.list_queues()
        tried = len(no_sockets)
        assert tried, "the request should have tried the network"
    finally:
        transport.register(aws.endpoint_url, aws.app)
    assert sqs.list_queues()["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert len(no_sockets) == tried


_CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="nobody")


def test_the_endpoint_answers_in_a_context_of_its_own_with_status_and_headers_as_sent() -> None:
    seen: dict[str, Any] = {}

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        seen.update(
            caller=_CALLER.get(),
            path=environ["PATH_INFO"],
            query=environ["QUERY_STRING"],
            host=environ["HTTP_HOST"],
            target=environ.get("HTTP_X_AMZ_TARGET"),
            body=environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])),
        )
        start_response(
            "400 Bad Request",
            [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-RequestId", "req-1")],
        )
        return [b'{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",', b'"message":"gone"}']

    endpoint = "http://127.0.0.1:9"  # the discard port: nothing listens there
    transport.register(endpoint, app)
    token = _CALLER.set("the handler")
    try:
        ddb = boto3.client(
            "dynamodb", endpoint_url=endpoint, region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b"
        )
        with pytest.raises(ClientError) as failed:
            ddb.describe_table(TableName="t")
    finally:
        _CALLER.reset(token)
        transport.unregister(endpoint)
    error = failed.value.response
    assert error["Error"] == {"Code": "ResourceNotFoundException", "Message": "gone"}
    assert error["ResponseMetadata"]["RequestId"] == "req-1"
    assert seen == {
        "caller": "nobody",
        "path": "/",
        "query": "",
        "host": "127.0.0.1:9",
        "target": "DynamoDB_20120810.DescribeTable",
        "body": b'{"TableName": "t"}',
    }
