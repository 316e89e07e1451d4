"""AWS hard limits the sandbox enforces where moto does not (``instantstart_sandbox.aws.limits``), met through boto3,
the deployer and the HTTP API, answered with each service's own errors."""

from __future__ import annotations

import base64
import http.client
import io
import json
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from instantstart_sandbox.aws import lambda_limits, limits
from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.clock import SimClock
from instantstart_sandbox.deploy import Deployer, Route
from instantstart_sandbox.httpapi import HttpApiServer

try:
    from tests.sandbox.conftest_aws import ACCOUNT, REGION, aws, client, clock, kube, lambda_zip, pk_table, role, unique
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        ACCOUNT,
        REGION,
        aws,
        client,
        clock,
        kube,
        lambda_zip,
        pk_table,
        role,
        unique,
    )

Client = Callable[[str], Any]
CREDENTIALS = {"access_key": "AKIDLIMITS", "secret_key": "limits-secret"}


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return exc.value.response["Error"]["Code"], exc.value.response["Error"]["Message"]


def _function(client: Client, role: str, **extra: Any) -> str:
    name = unique("limits")
    client("lambda").create_function(
        FunctionName=name,
        Runtime="python3.13",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": lambda_zip()},
        **extra,
    )
    return name


def _declared_zip(size: int) -> bytes:
    """A placeholder archive standing for ``size`` unzipped bytes, as the sandbox deployer makes them."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("app.py", "def handler(event, context):\n    return event\n")
        zf.writestr(lambda_limits.DECLARED_SIZE_ENTRY, str(size))
    return buf.getvalue()


# -- Lambda --------------------------------------------------------------------------------------------------------
def test_given_environment_variables_over_4kb_then_create_and_update_are_refused_with_the_string_measured(
    client: Client, role: str
) -> None:
    big = {"Variables": {"BIG": "x" * 4090}}  # {"BIG":"xxx…"} is 4,100 bytes
    with pytest.raises(ClientError) as refused:
        _function(client, role, Environment=big)
    code, message = _error(refused)
    measured = json.dumps(big["Variables"], separators=(",", ":"))
    assert code == "InvalidParameterValueException"
    assert message == (
        "Lambda was unable to configure your environment variables because the environment variables you have "
        f"provided exceeded the 4KB limit. String measured: {measured}"
    )
    name = _function(client, role, Environment={"Variables": {"BIG": "x" * 4080}})  # 4,090 bytes: accepted
    with pytest.raises(ClientError) as update:
        client("lambda").update_function_configuration(FunctionName=name, Environment=big)
    assert _error(update)[0] == "InvalidParameterValueException"


def test_given_code_that_unzips_past_250_mb_then_create_function_is_refused(client: Client, role: str) -> None:
    buf = io.BytesIO()
    chunk = bytes(1 << 20)
    with (
        zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf,
        zf.open("blob.bin", "w") as blob,
    ):
        for _ in range(lambda_limits.MAX_UNZIPPED_BYTES // len(chunk) + 1):  # 251 MiB of zeros, 250 KB zipped
            blob.write(chunk)
    with pytest.raises(ClientError) as refused:
        client("lambda").create_function(
            FunctionName=unique("huge"),
            Runtime="python3.13",
            Role=role,
            Handler="a.b",
            Code={"ZipFile": buf.getvalue()},
        )
    assert _error(refused) == ("InvalidParameterValueException", "Unzipped size must be smaller than 262144000 bytes")


def test_given_a_function_and_its_layers_past_250_mb_then_create_update_code_and_update_layers_are_refused(
    client: Client, role: str
) -> None:
    lam = client("lambda")
    layer = lam.publish_layer_version(LayerName=unique("layer"), Content={"ZipFile": _declared_zip(200_000_000)})
    combined = (
        "InvalidParameterValueException",
        "Function code combined with layers exceeds the maximum allowed size of 262144000 bytes. "
        "The actual size is 300000000 bytes.",
    )
    with pytest.raises(ClientError) as create:
        lam.create_function(
            FunctionName=unique("layered"),
            Runtime="python3.13",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": _declared_zip(100_000_000)},
            Layers=[layer["LayerVersionArn"]],
        )
    assert _error(create) == combined
    name = _function(client, role, Layers=[layer["LayerVersionArn"]])
    with pytest.raises(ClientError) as code:
        lam.update_function_code(FunctionName=name, ZipFile=_declared_zip(100_000_000))
    assert _error(code) == combined
    plain = _function(client, role)
    lam.update_function_code(FunctionName=plain, ZipFile=_declared_zip(100_000_000))
    with pytest.raises(ClientError) as layers:
        lam.update_function_configuration(FunctionName=plain, Layers=[layer["LayerVersionArn"]])
    assert _error(layers) == combined
    with pytest.raises(ClientError) as alone:
        lam.publish_layer_version(LayerName=unique("layer"), Content={"ZipFile": _declared_zip(262_144_000)})
    assert _error(alone) == ("InvalidParameterValueException", "Unzipped size must be smaller than 262144000 bytes")


def test_given_a_template_past_the_lambda_limits_then_its_deployment_fails_with_lambdas_errors(
    aws: AwsSandboxServer, role: str, tmp_path: Path
) -> None:
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "app.py").write_text("def handler(event, context):\n    return event\n")
    template = tmp_path / "template.yaml"
    body = """Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Handler: app.handler
      Runtime: python3.13
      Role: {role}
      Environment:
        Variables:
          BIG: "{big}"
"""
    template.write_text(body.format(big="x" * 4100, role=role))
    with pytest.raises(ClientError) as environment:
        Deployer(aws.endpoint_url, REGION, ACCOUNT, stack_name=unique("env")).deploy(template)
    assert "exceeded the 4KB limit" in _error(environment)[1]
    template.write_text(body.format(big="small", role=role))
    with (tmp_path / "fn" / "weights.bin").open("wb") as sparse:  # a sparse file: 300 MB on paper, none on disk
        sparse.truncate(300_000_000)
    with pytest.raises(ClientError) as size:
        Deployer(aws.endpoint_url, REGION, ACCOUNT, stack_name=unique("size")).deploy(template)
    assert _error(size) == ("InvalidParameterValueException", "Unzipped size must be smaller than 262144000 bytes")


def test_given_invoke_payloads_over_the_quotas_then_lambda_answers_413_or_a_response_size_error(
    client: Client, role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.awslambda.models import LambdaFunction

    lam = client("lambda")
    name = _function(client, role)
    with pytest.raises(ClientError) as sync:
        lam.invoke(FunctionName=name, Payload=json.dumps({"pad": "x" * lambda_limits.MAX_SYNC_PAYLOAD_BYTES}))
    assert sync.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413
    assert _error(sync) == (
        "RequestEntityTooLargeException",
        "Request must be smaller than 6291456 bytes for the InvokeFunction operation",
    )
    payload = json.dumps({"pad": "x" * 300_000})
    with pytest.raises(ClientError) as event:
        lam.invoke(FunctionName=name, InvocationType="Event", Payload=payload)
    assert _error(event) == (
        "RequestEntityTooLargeException",
        f"{len(payload)} byte payload is too large for the Event invocation type (limit 262144 bytes)",
    )
    monkeypatch.setattr(
        LambdaFunction, "_invoke_lambda", lambda self, event=None: (json.dumps("y" * 6_400_000), False, "")
    )
    out = lam.invoke(FunctionName=name, Payload=b"{}")
    assert out["FunctionError"] == "Unhandled"
    assert json.loads(out["Payload"].read())["errorType"] == "Function.ResponseSizeTooLarge"


# -- HTTP API ------------------------------------------------------------------------------------------------------
@pytest.fixture
def http_api(client: Client, role: str) -> Iterator[HttpApiServer]:
    """The HTTP API router in front of one function at ``POST /work``."""
    server = HttpApiServer(
        [Route("POST", "/work", _function(client, role))], client("lambda"), CREDENTIALS, REGION, ACCOUNT
    )
    server.start()
    yield server
    server.stop()


def _post(server: HttpApiServer, body: bytes) -> tuple[int, bytes]:
    url = f"{server.url}/work"
    request = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json"})
    SigV4Auth(Credentials(CREDENTIALS["access_key"], CREDENTIALS["secret_key"]), "execute-api", REGION).add_auth(
        request
    )
    connection = http.client.HTTPConnection("127.0.0.1", int(server.url.rsplit(":", 1)[1]), timeout=60)
    connection.request("POST", "/work", body=body, headers=dict(request.headers.items()))
    answer = connection.getresponse()
    return answer.status, answer.read()


def test_given_a_function_slower_than_the_integration_timeout_then_the_api_answers_503_while_it_keeps_running(
    http_api: HttpApiServer, clock: SimClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.awslambda.models import LambdaFunction

    release, finished = threading.Event(), threading.Event()

    def slow(self: Any, event: Any = None) -> tuple[str, bool, str]:
        release.wait(30)  # runs until the test lets it end: past the (test's) 1 s in wall and simulated time
        finished.set()
        return json.dumps({"statusCode": 200, "body": "done"}), False, ""

    monkeypatch.setattr(limits, "INTEGRATION_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(LambdaFunction, "_invoke_lambda", slow)
    started = time.monotonic()
    assert _post(http_api, b"{}") == (503, b'{"message":"Service Unavailable"}')
    assert time.monotonic() - started >= 1.0 and not finished.is_set()
    release.set()
    assert finished.wait(10), "the function goes on after API Gateway gave up"


def test_given_a_function_past_the_timeout_in_only_one_of_wall_and_simulated_time_then_it_is_answered(
    http_api: HttpApiServer, clock: SimClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.awslambda.models import LambdaFunction

    def simulated(self: Any, event: Any = None) -> tuple[str, bool, str]:
        clock.sleep(45)  # 45 simulated seconds, a few wall milliseconds
        return json.dumps({"statusCode": 200, "body": "simulated"}), False, ""

    monkeypatch.setattr(LambdaFunction, "_invoke_lambda", simulated)
    assert _post(http_api, b"{}") == (200, b"simulated")

    def wall(self: Any, event: Any = None) -> tuple[str, bool, str]:
        time.sleep(1.2)  # past 1 s of wall time, 0.6 s of a half-speed clock
        return json.dumps({"statusCode": 200, "body": "wall"}), False, ""

    monkeypatch.setattr(limits, "INTEGRATION_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(limits, "_clock", SimClock(scale=0.5))
    monkeypatch.setattr(LambdaFunction, "_invoke_lambda", wall)
    assert _post(http_api, b"{}") == (200, b"wall")


def test_given_a_request_body_over_10_mb_then_the_api_answers_413_before_any_function(http_api: HttpApiServer) -> None:
    assert _post(http_api, b"x" * (10 * 1024 * 1024 + 1)) == (413, b'{"message":"Request Entity Too Large"}')


# -- EventBridge ---------------------------------------------------------------------------------------------------
def test_given_put_events_over_10_entries_or_256_kb_then_the_request_is_refused(client: Client) -> None:
    events = client("events")
    entry = {"Source": "limits.test", "DetailType": "Limit", "Detail": "{}"}
    with pytest.raises(ClientError) as many:
        events.put_events(Entries=[entry] * 11)
    assert _error(many)[0] == "ValidationException" and "less than or equal to 10" in _error(many)[1]
    # 14 (Time) + 11 (Source) + 5 (DetailType) + Detail + 12 (a resource) bytes, at the quota exactly: accepted
    pad = 262_144 - 14 - 11 - 5 - 12 - len('{"p":""}')
    at_quota = {**entry, "Time": 1_700_000_000, "Resources": ["arn:aws:x:yz"]}
    at_quota["Detail"] = json.dumps({"p": "x" * pad}, separators=(",", ":"))
    assert limits.event_entry_bytes(at_quota) == 262_144
    assert events.put_events(Entries=[at_quota])["FailedEntryCount"] == 0
    over = {**at_quota, "Detail": at_quota["Detail"].replace('"p"', '"pp"')}
    with pytest.raises(ClientError) as big:
        events.put_events(Entries=[over])
    assert _error(big) == ("ValidationException", "Total size of the entries in the request is over the limit.")
    half = {**entry, "Detail": json.dumps({"p": "x" * 140_000})}
    with pytest.raises(ClientError) as total:
        events.put_events(Entries=[half, half])
    assert _error(total)[0] == "ValidationException"


# -- DynamoDB ------------------------------------------------------------------------------------------------------
def test_given_an_item_over_400_kb_then_put_update_and_transactions_are_refused(client: Client) -> None:
    ddb = client("dynamodb")
    table = pk_table(ddb, "limits")
    big = {"S": "x" * 410_000}
    with pytest.raises(ClientError) as put:
        ddb.put_item(TableName=table, Item={"PK": {"S": "a"}, "blob": big})
    assert _error(put) == ("ValidationException", "Item size has exceeded the maximum allowed size")
    ddb.put_item(TableName=table, Item={"PK": {"S": "a"}, "blob": {"S": "x" * 300_000}})
    with pytest.raises(ClientError) as update:
        ddb.update_item(
            TableName=table,
            Key={"PK": {"S": "a"}},
            UpdateExpression="SET more = :v",
            ExpressionAttributeValues={":v": {"S": "y" * 200_000}},
        )
    assert _error(update) == ("ValidationException", "Item size to update has exceeded the maximum allowed size")
    with pytest.raises(ClientError) as transaction:
        ddb.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": {"PK": {"S": "b"}, "blob": big}}}])
    # moto refuses the request as PutItem does (AWS may cancel the transaction with a ValidationError reason instead)
    assert _error(transaction) == ("ValidationException", "Item size has exceeded the maximum allowed size")


def test_given_a_transaction_over_100_actions_or_4_mb_then_it_is_refused(client: Client) -> None:
    ddb = client("dynamodb")
    table = pk_table(ddb, "limits")

    def put(n: int, size: int) -> dict[str, Any]:
        return {"Put": {"TableName": table, "Item": {"PK": {"S": f"i{n}"}, "blob": {"S": "x" * size}}}}

    with pytest.raises(ClientError) as many:
        ddb.transact_write_items(TransactItems=[put(n, 1) for n in range(101)])
    assert _error(many) == (
        "ValidationException",
        "1 validation error detected at 'transactItems' failed to satisfy constraint: "
        "Member must have length less than or equal to 100.",
    )
    with pytest.raises(ClientError) as large:
        ddb.transact_write_items(TransactItems=[put(n, 390_000) for n in range(11)])  # 4.29 MB
    assert _error(large) == ("ValidationException", "Transaction request cannot be larger than 4 MB")
    assert "Item" not in ddb.get_item(TableName=table, Key={"PK": {"S": "i0"}})
    ddb.transact_write_items(TransactItems=[put(n, 390_000) for n in range(10)])  # 3.9 MB: accepted


def test_placeholder_archives_declare_their_unzipped_size() -> None:
    assert lambda_limits.unzipped_bytes(_declared_zip(123_456_789)) == 123_456_789
    assert lambda_limits.unzipped_bytes(lambda_zip()) == len("def handler(event, context):\n    return event\n")
    assert lambda_limits.unzipped_bytes(base64.b64encode(b"not a zip")) == 0
