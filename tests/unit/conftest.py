"""Shared fixtures of the unit tests: dummy AWS credentials, a network guard, moto, the template's table,
and the real HTTP API in process for the client tests (:mod:`inprocess_api`).

Nothing here is autouse.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from collections.abc import Iterator
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import boto3
import pytest
import typer.testing
from inprocess_api import (
    CREATE_SM,
    DELETE_SM,
    ROOT,
    STATE_MACHINE_ARN,
    STEPS_FUNCTION_ARN,
    UPDATE_SM,
    InProcessApi,
    WorkflowDriver,
)
from moto import mock_aws
from typer.main import get_command

from instantstart.clusters import service
from instantstart.config import Settings
from instantstart.models.cluster import CreateClusterRequest
from instantstart.runtime import Runtime
from instantstart_sandbox import moto_speedups
from instantstart_sandbox.aws import dynamodb_atomic

# moto with the sandbox's shortcuts (same answers, less CPU: DynamoDB items are the bulk of these tests' calls)
moto_speedups.install()
# and DynamoDB's isolation: a conditional write checks and writes as one step, also under threads
dynamodb_atomic.install()


@cache
def _click_command(app: typer.Typer) -> Any:
    """The click command of a typer ``app``, built once: typer's CliRunner rebuilt it from every callback's
    signature on each ``invoke`` (~0.14 s of CPU for the ``instantstart`` CLI, hundreds of times per run). A
    click command keeps no state between invocations, and the CLI's callbacks look up the module's helpers
    (``_sleep``, ``_monotonic``) when they run, so a test's monkeypatch of those still applies."""
    return get_command(app)


typer.testing._get_command = _click_command  # type: ignore[attr-defined]

REGION = "us-west-2"
ACCOUNT = "123456789012"  # moto's default account
TABLE_NAME = "instantstart-unit"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Dummy static credentials, Region us-west-2, no profile or endpoint override; settings re-read."""
    from instantstart.config import get_settings

    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    for var in [v for v in os.environ if v.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("TABLE_NAME", TABLE_NAME)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")  # the network tests need no AMIs; saves ~1 s each

    # The core's cached clients are kept across tests (building one costs ~50 ms): credentials and Region
    # never change here, and moto (imported by this conftest, before any test) intercepts every client.
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _loopback(host: Any) -> bool:
    if host in (None, "localhost"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving a name or connecting anywhere but loopback or a Unix socket fails the test at once."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family != getattr(socket, "AF_UNIX", None) and not _loopback(address[0]):
            raise AssertionError(f"unit test tried to reach the network: {address!r}")

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        check(sock, address)
        real_connect(sock, address)

    def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
        check(sock, address)
        return real_connect_ex(sock, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _loopback(host):
            raise AssertionError(f"unit test tried to resolve a network name: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)


class Clients:
    """boto3 clients of one shared session with dummy credentials (building a client costs ~50 ms)."""

    def __init__(self) -> None:
        self.session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        self._clients: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session.client(service)
        return self._clients[service]


@lru_cache(maxsize=1)
def _clients() -> Clients:
    return Clients()


def _no_service_quotas(self: Any) -> str:
    """moto 5.2.5 has no ListServiceQuotas: answer no quotas, so the create preflight checks none here
    (the quota rule has its own tests, tests/unit/test_capacity_rules.py, and runs in the sandbox)."""
    return '{"Quotas": []}'


@pytest.fixture
def aws(aws_env: None, no_network: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Clients]:
    """moto's in-process AWS (fresh state per test); yields cached clients for the test's own calls."""
    from moto.servicequotas.responses import ServiceQuotasResponse

    monkeypatch.setattr(ServiceQuotasResponse, "list_service_quotas", _no_service_quotas, raising=False)
    with mock_aws():
        yield _clients()


@lru_cache(maxsize=1)
def _template_text() -> str:
    import cfnlint.decode

    decoded, errors = cfnlint.decode.decode(str(ROOT / "template.yaml"))
    assert not errors and decoded is not None, errors
    return json.dumps(decoded, default=str)


@lru_cache(maxsize=1)
def _table_properties() -> str:
    return json.dumps(json.loads(_template_text())["Resources"]["Table"]["Properties"])


def create_table_from_template(name: str = TABLE_NAME) -> str:
    """Create the DynamoDB table with the key schema, indexes and TTL of the template's ``Table``."""
    props = json.loads(_table_properties())
    ddb = _clients().client("dynamodb")
    ddb.create_table(
        TableName=name,
        BillingMode=props["BillingMode"],
        AttributeDefinitions=props["AttributeDefinitions"],
        KeySchema=props["KeySchema"],
        GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
    )
    ttl = props.get("TimeToLiveSpecification")
    if ttl:
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
    return name


@pytest.fixture
def table(aws: Clients) -> str:
    """The control plane's table (from template.yaml) in moto; returns its name."""
    return create_table_from_template()


@pytest.fixture
def inprocess_api(table: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[InProcessApi]:
    """The real API function (``functions/api/api_app.py``) behind API Gateway's checks, in process.

    moto holds the table and both state machines (their executions do not run: the API's
    :class:`inprocess_api.WorkflowDriver` moves the records instead). Callers sign with the dummy
    credentials of ``aws_env``; :meth:`InProcessApi.client` builds a client that uses it as transport.
    """
    monkeypatch.setenv("CREATE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format(CREATE_SM))
    monkeypatch.setenv("DELETE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format(DELETE_SM))
    monkeypatch.setenv("UPDATE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format(UPDATE_SM))
    monkeypatch.delenv("INSTANTSTART_API_URL", raising=False)
    sfn = _clients().client("stepfunctions")
    for name, asl in (
        (CREATE_SM, "create_cluster.asl.json"),
        (DELETE_SM, "delete_cluster.asl.json"),
        (UPDATE_SM, "update_cluster.asl.json"),
    ):
        definition = (
            (ROOT / "statemachines" / asl).read_text().replace("${ClusterStepsFunctionArn}", STEPS_FUNCTION_ARN)
        )
        sfn.create_state_machine(name=name, definition=definition, roleArn=f"arn:aws:iam::{ACCOUNT}:role/workflows")
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "api"))
    import api_app

    runtime = Runtime(Settings())
    monkeypatch.setattr(api_app, "RUNTIME", runtime)  # this test's settings, not the first import's
    # and this test's table for the idempotency records (a module imported the handler first with another table)
    monkeypatch.setattr(api_app, "IDEMPOTENCY", api_app.api_idempotency.Idempotency(runtime.settings.TABLE_NAME))
    yield InProcessApi(api_app.lambda_handler, WorkflowDriver(runtime))


@pytest.fixture
def runtime(aws: Clients, table: str, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """A ``Runtime`` over moto whose create state machine exists (one ``Succeed`` state: no workflow runs)."""
    arn = aws.client("stepfunctions").create_state_machine(
        name="create",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn="arn:aws:iam::123456789012:role/workflows",
    )["stateMachineArn"]
    monkeypatch.setenv("CREATE_CLUSTER_STATE_MACHINE_ARN", arn)
    return Runtime(Settings())


@pytest.fixture
def demo(runtime: Runtime) -> Runtime:
    """``runtime`` with a cluster ``demo`` being created in us-west-2c (records written by the real create path)."""
    request = {
        "clusterTag": "demo",
        "availabilityZone": "us-west-2c",
        "instanceGroups": [{"instanceType": "ml.g6.4xlarge", "instanceCount": 1}],
    }
    service.create_cluster(runtime, CreateClusterRequest.model_validate(request))
    return runtime
