"""botocore's in-process transport to the AWS sandbox (``instantstart_sandbox.aws.transport``): the same answers
as over HTTP, served in the caller's thread, without the caller's context variables, faults included."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

try:
    from tests.sandbox.conftest_aws import REGION, aws, client, clock, kube, pk_table, single_attempt_client, unique
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        REGION,
        aws,
        client,
        clock,
        kube,
        pk_table,
        single_attempt_client,
        unique,
    )

from instantstart_sandbox.aws import transport
from instantstart_sandbox.aws.calls import AwsCall
from instantstart_sandbox.aws.server import AwsSandboxServer

Client = Callable[[str], Any]
PROBE: contextvars.ContextVar[str | None] = contextvars.ContextVar("transport_probe", default=None)


@contextmanager
def over_http(aws: AwsSandboxServer) -> Iterator[None]:
    """This process's requests to ``aws`` go over the socket while the block runs."""
    assert aws.app is not None
    transport.unregister(aws.endpoint_url)
    try:
        yield
    finally:
        transport.register(aws.endpoint_url, aws.app)


def _served_by(aws: AwsSandboxServer, service: str, operation: str, call: Callable[[], Any]) -> dict[str, Any]:
    """Make ``call`` once; the thread that served ``operation`` and the probe variable it saw there."""
    seen: dict[str, Any] = {}

    def observe(c: AwsCall) -> bool:
        seen["thread"] = threading.current_thread()
        seen["probe"] = PROBE.get()
        return False  # observe only: the call is answered normally

    aws.extension.faults.inject(service, operation, "Unused", "never answered", when=observe)
    try:
        call()
    finally:
        aws.extension.faults.clear()
    return seen


def test_given_the_sandbox_endpoint_when_called_in_its_process_then_the_caller_thread_serves_it_without_its_context(
    aws: AwsSandboxServer, client: Client
) -> None:
    assert transport.registered(aws.endpoint_url)
    assert transport.registered(aws.endpoint_url.replace("127.0.0.1", "localhost"))
    sts = client("sts")
    token = PROBE.set("the caller's")
    try:
        in_process = _served_by(aws, "sts", "GetCallerIdentity", sts.get_caller_identity)
        with over_http(aws):
            assert not transport.registered(aws.endpoint_url)
            http = _served_by(aws, "sts", "GetCallerIdentity", sts.get_caller_identity)
    finally:
        PROBE.reset(token)
    assert in_process["thread"] is threading.current_thread()
    assert in_process["probe"] is None, "the caller's context variables do not reach the server"
    assert http["thread"] is not threading.current_thread()
    assert http["probe"] is None


def test_given_each_protocol_when_called_both_ways_then_the_answers_are_the_same(
    client: Client, aws: AwsSandboxServer
) -> None:
    ddb, s3, ec2 = client("dynamodb"), client("s3"), client("ec2")
    table = pk_table(ddb, "transport")
    ddb.put_item(TableName=table, Item={"PK": {"S": "a/b c"}, "n": {"N": "7"}, "m": {"M": {"x": {"BOOL": True}}}})
    bucket = unique("transport")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    body = bytes(range(256)) * 300  # binary, larger than one read
    s3.put_object(Bucket=bucket, Key="dir/a b+c.bin", Body=body, Metadata={"owner": "tests"})
    vpc = ec2.create_vpc(CidrBlock="10.91.0.0/16")["Vpc"]["VpcId"]

    def answers() -> tuple[Any, ...]:
        item = ddb.get_item(TableName=table, Key={"PK": {"S": "a/b c"}})["Item"]
        obj = s3.get_object(Bucket=bucket, Key="dir/a b+c.bin")
        listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="dir/")["Contents"]]
        vpcs = ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"]
        with pytest.raises(ClientError) as missing:
            ddb.get_item(TableName=unique("missing"), Key={"PK": {"S": "x"}})
        error = missing.value.response
        return (
            item,
            obj["Body"].read(),
            obj["Metadata"],
            obj["ContentLength"],
            listed,
            [(v["VpcId"], v["CidrBlock"]) for v in vpcs],
            error["Error"]["Code"],
            error["ResponseMetadata"]["HTTPStatusCode"],
        )

    in_process = answers()
    with over_http(aws):
        http = answers()
    assert in_process == http
    assert in_process[1] == body
    assert in_process[2] == {"owner": "tests"}
    assert in_process[6:] == ("ResourceNotFoundException", 400)


@pytest.mark.parametrize("way", ["in process", "over HTTP"])
def test_given_connection_faults_when_called_either_way_then_botocore_raises_its_timeouts(
    aws: AwsSandboxServer, way: str
) -> None:
    sqs = single_attempt_client(aws, "sqs")
    with over_http(aws) if way == "over HTTP" else nullcontext():
        aws.extension.faults.timeout("sqs", "CreateQueue", times=1)
        with pytest.raises(ConnectTimeoutError):
            sqs.create_queue(QueueName=unique("never"))
        aws.extension.faults.timeout("sqs", "CreateQueue", times=1, kind="read-timeout")
        name = unique("done")
        with pytest.raises(ReadTimeoutError):
            sqs.create_queue(QueueName=name)
        assert sqs.get_queue_url(QueueName=name)["QueueUrl"], "AWS did the work; only the answer was lost"


def test_given_an_answer_that_raises_in_the_server_when_called_in_process_then_the_caller_sees_a_500(
    aws: AwsSandboxServer, client: Client
) -> None:
    def broken(call: AwsCall) -> bool:
        raise RuntimeError("the server broke")

    sts = single_attempt_client(aws, "sts")
    aws.extension.faults.inject("sts", "GetCallerIdentity", "Unused", "never answered", when=broken)
    with pytest.raises(ClientError) as exc:
        sts.get_caller_identity()
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    aws.extension.faults.clear()
    assert client("sts").get_caller_identity()["Account"], "the next call is answered"


def test_given_dynamodb_calls_when_answered_without_motos_flask_layer_then_the_answers_are_flasks(
    aws: AwsSandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    from instantstart_sandbox.aws import extension
    from instantstart_sandbox.aws.protocol import call_app

    ddb = single_attempt_client(aws, "dynamodb")
    table = pk_table(ddb, "direct")

    def answers() -> list[Any]:
        out: list[Any] = []
        calls: list[Callable[[], Any]] = [
            lambda: ddb.put_item(TableName=table, Item={"PK": {"S": "k"}, "m": {"M": {"n": {"N": "1.50"}}}}),
            lambda: ddb.get_item(TableName=table, Key={"PK": {"S": "k"}}),
            lambda: ddb.update_item(
                TableName=table,
                Key={"PK": {"S": "k"}},
                UpdateExpression="SET #m.#n = #m.#n + :one",
                ExpressionAttributeNames={"#m": "m", "#n": "n"},
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValues="UPDATED_NEW",
            ),
            lambda: ddb.put_item(
                TableName=table, Item={"PK": {"S": "k"}}, ConditionExpression="attribute_not_exists(PK)"
            ),
            lambda: ddb.transact_write_items(
                TransactItems=[
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": {"PK": {"S": "k"}},
                            "ConditionExpression": "attribute_not_exists(PK)",
                        }
                    }
                ]
            ),
            lambda: ddb.get_item(TableName=table, Key={"Other": {"S": "k"}}),
            lambda: ddb.get_item(TableName=unique("missing"), Key={"PK": {"S": "k"}}),
            lambda: ddb.query(
                TableName=table, KeyConditionExpression="PK = :k", ExpressionAttributeValues={":k": {"S": "k"}}
            ),
            lambda: ddb.delete_item(TableName=table, Key={"PK": {"S": "k"}}, ReturnValues="ALL_OLD"),
        ]
        for call in calls:
            try:
                answer = call()
            except ClientError as exc:
                answer = exc.response
            metadata = answer.pop("ResponseMetadata")
            out.append((metadata["HTTPStatusCode"], answer))
        return out

    direct_calls: list[str] = []
    direct = extension.dynamodb_direct
    monkeypatch.setattr(extension, "dynamodb_direct", lambda environ: direct_calls.append("") or direct(environ))
    without_flask = answers()
    assert len(direct_calls) == 9, "every DynamoDB call was answered without moto's Flask layer"
    flask = DomainDispatcherApplication(create_backend_app)
    monkeypatch.setattr(extension, "dynamodb_direct", lambda environ: call_app(flask, environ))
    through_flask = answers()

    assert without_flask == through_flask
    assert [status for status, _ in without_flask] == [200, 200, 200, 400, 400, 400, 400, 200, 200]
    assert float(without_flask[2][1]["Attributes"]["m"]["M"]["n"]["N"]) == 2.5
    assert without_flask[3][1]["Error"]["Code"] == "ConditionalCheckFailedException"
    assert without_flask[4][1]["CancellationReasons"] == [
        {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
    ]
    assert without_flask[6][1]["Error"]["Code"] == "ResourceNotFoundException"
