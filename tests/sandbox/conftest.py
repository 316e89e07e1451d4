"""Fixtures shared by the AWS sandbox suites that run on the slow (600x) sandbox of the continuous suite.

``slow_aws`` (an AwsSandboxServer on a 600x clock in front of the real sandbox Kubernetes API, one per test
module), ``sb`` (its boto3 clients), ``eks`` (an ACTIVE EKS cluster in it) and ``core`` (the official
Kubernetes client on that cluster); after each test that used it, its faults are cleared. Helpers that build
HyperPod requests are in ``hyperpod_helpers``. The moto-backed fixtures (``network``, ``role``, ...) stay in
``conftest_aws``, which the test modules import.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

try:
    from tests.sandbox.conftest_aws import REGION, unique, wait_for
    from tests.sandbox.hyperpod_helpers import TIMEOUT, Client
except ImportError:  # rootdir not on sys.path
    from conftest_aws import REGION, unique, wait_for  # type: ignore[no-redef]
    from hyperpod_helpers import TIMEOUT, Client  # type: ignore[no-redef]

from instantstart_sandbox import moto_speedups
from instantstart_sandbox.aws import transport
from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.clock import SimClock

# As the Sandbox runner does: moto's shortcuts (same answers, less CPU) and botocore's in-process transport to the
# sandbox's servers, for every test of this suite, not only for those that run after the first Sandbox started.
moto_speedups.install()
transport.install()

SCALE = 600.0
"""Simulated seconds per wall second of the slow sandbox (an instance launch takes 0.4 s of wall time)."""


@pytest.fixture(scope="module")
def slow_aws() -> Iterator[AwsSandboxServer]:
    """An AwsSandboxServer on a 600x clock in front of the real sandbox KubeApiServer."""
    from instantstart_sandbox.kube import server as kube_server

    sim = SimClock(scale=SCALE)
    api = kube_server.KubeApiServer(clock=sim)
    api.start()
    server = AwsSandboxServer(sim, api)
    server.start()
    yield server
    server.stop()
    api.stop()
    sim.stop()


@pytest.fixture(autouse=True)
def _reset(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used the slow sandbox: its faults cleared, its state change events on again."""
    yield
    if "slow_aws" in request.fixturenames:
        server: AwsSandboxServer = request.getfixturevalue("slow_aws")
        server.extension.faults.clear()
        server.extension.hyperpod.state_change_events = True


@pytest.fixture(scope="module")
def sb(slow_aws: AwsSandboxServer) -> Client:
    """``sb("sagemaker")``: boto3 clients of the slow sandbox."""
    clients: dict[str, Any] = {}

    def make(service: str) -> Any:
        if service not in clients:
            clients[service] = boto3.client(
                service,
                endpoint_url=slow_aws.endpoint_url,
                region_name=REGION,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
        return clients[service]

    return make


@pytest.fixture(scope="module")
def eks(sb: Client, network: dict[str, Any], role: str) -> dict[str, Any]:
    """An ACTIVE EKS cluster (API authentication) of the slow sandbox: its DescribeCluster ``cluster``."""
    name = unique("eks-cluster")
    sb("eks").create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": network["subnets"], "securityGroupIds": [network["sg"]]},
        accessConfig={"authenticationMode": "API"},
    )
    return dict(
        wait_for(
            lambda: (c := sb("eks").describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c,
            timeout=TIMEOUT,
        )
    )


@pytest.fixture(scope="module")
def core(eks: dict[str, Any]) -> Iterator[Any]:
    """The official Kubernetes client's CoreV1Api on the EKS cluster (endpoint and CA from DescribeCluster)."""
    import kubernetes

    ca = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)  # noqa: SIM115 - kept for the client
    ca.write(base64.b64decode(eks["certificateAuthority"]["data"]).decode())
    ca.close()
    config = kubernetes.client.Configuration()
    config.host = eks["endpoint"]
    config.ssl_ca_cert = ca.name
    config.api_key = {"authorization": "Bearer k8s-aws-v1.test"}
    with kubernetes.client.ApiClient(config) as api:
        yield kubernetes.client.CoreV1Api(api)
