"""Fixtures for the AWS sandbox tests: a fast server, boto3 clients, and a Kubernetes stand-in.

The stand-in implements only the interface of ``instantstart_sandbox.kube.KubeApiServer`` the AWS side uses
(``add_cluster``, ``remove_cluster``, ``ca_pem``, ``cluster(name)`` with create/apply/get/list/
delete/patch_status) in memory, so these tests do not depend on the Kubernetes emulator.
"""

from __future__ import annotations

import io
import json
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.clock import SimClock

REGION = "us-west-2"
ACCOUNT = "123456789012"
FAKE_CA = "-----BEGIN CERTIFICATE-----\nMIIBfakeSandboxCA\n-----END CERTIFICATE-----\n"


class FakeKubeCluster:
    """In-memory objects of one cluster, keyed by (apiVersion, kind, namespace, name)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str | None, str], dict[str, Any]] = {}
        self.lock = threading.Lock()

    @staticmethod
    def _key(obj: dict[str, Any]) -> tuple[str, str, str | None, str]:
        meta = obj["metadata"]
        return obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"]

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            key = self._key(obj)
            if key in self.objects:
                raise KeyError(f"AlreadyExists {key}")
            self.objects[key] = obj
            return obj

    def apply(self, obj: dict[str, Any], field_manager: str = "sandbox") -> dict[str, Any]:
        # like a real API server, writes to the main resource do not set status
        stored = {k: v for k, v in obj.items() if k != "status"}
        with self.lock:
            previous = self.objects.get(self._key(obj))
            if previous is not None and "status" in previous:
                stored["status"] = previous["status"]
            self.objects[self._key(obj)] = stored
            return stored

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        with self.lock:
            return self.objects.get((api_version, kind, namespace, name))

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        wanted = dict(part.split("=", 1) for part in label_selector.split(",")) if label_selector else {}
        with self.lock:
            return [
                o
                for (v, k, ns, _), o in self.objects.items()
                if v == api_version
                and k == kind
                and (namespace is None or ns == namespace)
                and all(o["metadata"].get("labels", {}).get(a) == b for a, b in wanted.items())
            ]

    def patch_status(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        status: dict[str, Any],
        field_manager: str = "sandbox",
    ) -> None:
        with self.lock:
            self.objects[(api_version, kind, namespace, name)]["status"] = status

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        with self.lock:
            del self.objects[(api_version, kind, namespace, name)]


class FakeKube:
    """The stand-in ``KubeApiServer``."""

    ca_pem = FAKE_CA

    def __init__(self) -> None:
        self.clusters: dict[str, FakeKubeCluster] = {}

    def add_cluster(self, name: str) -> str:
        self.clusters.setdefault(name, FakeKubeCluster())
        return f"https://127.0.0.1:6443/k8s/{name}"

    def remove_cluster(self, name: str) -> None:
        self.clusters.pop(name, None)

    def cluster(self, name: str) -> FakeKubeCluster:
        return self.clusters[name]


def add_node(
    kube: FakeKube, cluster: str, name: str = "node-1", ready: bool = True, taints: list[dict[str, str]] | None = None
) -> None:
    """Register a Node in the stand-in cluster ``cluster`` (Ready unless ``ready`` is False)."""
    kube.cluster(cluster).apply(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/os": "linux"}},
            "spec": {"taints": list(taints or [])},
        }
    )
    kube.cluster(cluster).patch_status(
        "v1",
        "Node",
        name,
        None,
        {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    )


@pytest.fixture(scope="session")
def kube() -> FakeKube:
    """The Kubernetes stand-in shared by the session's AWS server."""
    return FakeKube()


@pytest.fixture(scope="session")
def clock() -> Iterator[SimClock]:
    """A simulated clock 3000 times faster than wall time (EKS create: 0.2 s)."""
    sim = SimClock(scale=3000)
    yield sim
    sim.stop()


@pytest.fixture(scope="session")
def aws(clock: SimClock, kube: FakeKube) -> Iterator[AwsSandboxServer]:
    """A started AwsSandboxServer."""
    server = AwsSandboxServer(clock, kube)  # type: ignore[arg-type]
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _no_leftover_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "aws" in request.fixturenames:
        request.getfixturevalue("aws").extension.faults.clear()


@pytest.fixture(scope="session")
def client(aws: AwsSandboxServer) -> Callable[[str], Any]:
    """``client("eks")``: a boto3 client of the sandbox with dummy credentials (cached per service)."""
    clients: dict[str, Any] = {}
    lock = threading.Lock()

    def make(service: str) -> Any:
        with lock:
            if service not in clients:
                clients[service] = boto3.client(
                    service,
                    endpoint_url=aws.endpoint_url,
                    region_name=REGION,
                    aws_access_key_id="testing",
                    aws_secret_access_key="testing",
                )
            return clients[service]

    return make


def single_attempt_client(aws: AwsSandboxServer, service: str) -> Any:
    """A boto3 client of ``aws`` that makes one attempt per call (botocore's retries off): a fault reaches the test."""
    from botocore.config import Config

    return boto3.client(
        service,
        endpoint_url=aws.endpoint_url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01) -> Any:
    """Poll ``predicate`` until it returns a truthy value; that value (AssertionError on timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


def unique(prefix: str) -> str:
    """A unique resource name."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def pk_table(ddb: Any, prefix: str) -> str:
    """The name of a new on-demand DynamoDB table (name ``unique(prefix)``) keyed by the string attribute ``PK``."""
    table = unique(prefix)
    ddb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return table


@pytest.fixture(scope="session")
def network(client: Callable[[str], Any]) -> dict[str, Any]:
    """A VPC with two subnets in two AZs and a security group."""
    ec2 = client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    a = ec2.create_subnet(VpcId=vpc, CidrBlock="10.1.0.0/20", AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    b = ec2.create_subnet(VpcId=vpc, CidrBlock="10.1.16.0/20", AvailabilityZone="us-west-2b")["Subnet"]["SubnetId"]
    sg = ec2.create_security_group(GroupName=unique("sg"), Description="test", VpcId=vpc)["GroupId"]
    return {"vpc": vpc, "subnets": [a, b], "sg": sg}


@pytest.fixture(scope="session")
def role(client: Callable[[str], Any]) -> str:
    """An IAM role ARN."""
    trust = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "sagemaker.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )
    return str(client("iam").create_role(RoleName=unique("role"), AssumeRolePolicyDocument=trust)["Role"]["Arn"])


@pytest.fixture(scope="session")
def lifecycle(client: Callable[[str], Any]) -> dict[str, str]:
    """A lifecycle script bucket: ``{"SourceS3Uri": ..., "OnCreate": "on_create.sh"}``."""
    s3 = client("s3")
    bucket = unique("sagemaker-lifecycle")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_object(Bucket=bucket, Key="scripts/on_create.sh", Body=b"#!/bin/bash\necho ok\n")
    return {"SourceS3Uri": f"s3://{bucket}/scripts", "OnCreate": "on_create.sh"}


def create_eks(client: Callable[[str], Any], network: dict[str, Any], role: str, mode: str = "API") -> str:
    """Create an EKS cluster and wait until ACTIVE; its name."""
    eks = client("eks")
    name = unique("eks-cluster")
    eks.create_cluster(
        name=name,
        version="1.31",
        roleArn=role,
        resourcesVpcConfig={"subnetIds": network["subnets"], "securityGroupIds": [network["sg"]]},
        accessConfig={"authenticationMode": mode},
        tags={"instantstart:managed": "true"},
    )
    wait_for(lambda: eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE")
    return name


@pytest.fixture(scope="session")
def eks_cluster(client: Callable[[str], Any], network: dict[str, Any], role: str) -> str:
    """The name of an ACTIVE EKS cluster with API authentication."""
    return create_eks(client, network, role)


def lambda_zip() -> bytes:
    """A minimal Lambda deployment package."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("app.py", "def handler(event, context):\n    return event\n")
    return buf.getvalue()
