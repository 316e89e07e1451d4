"""The AWS sandbox with the real sandbox Kubernetes API: the control plane's client path end to end.

DescribeCluster's endpoint and CA must let the official Kubernetes client connect over TLS, and
what add-ons and HyperPod install must be accepted by the emulated API server.
"""

from __future__ import annotations

import base64
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

try:
    # network/role/lifecycle are created through the stand-in server; moto's state is process-wide
    from tests.sandbox.conftest_aws import REGION, aws, client, clock, kube, lifecycle, network, role, unique, wait_for
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        REGION,
        aws,
        client,
        clock,
        kube,
        lifecycle,
        network,
        role,
        unique,
        wait_for,
    )

from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.clock import SimClock

kube_server = pytest.importorskip("instantstart_sandbox.kube.server")
kubernetes = pytest.importorskip("kubernetes")

Client = Callable[[str], Any]


@pytest.fixture(scope="module")
def real_aws(clock: SimClock) -> Iterator[AwsSandboxServer]:
    """An AwsSandboxServer in front of the real sandbox KubeApiServer."""
    api = kube_server.KubeApiServer(clock=clock)
    api.start()
    server = AwsSandboxServer(clock, api)
    server.start()
    yield server
    server.stop()
    api.stop()


@pytest.fixture(scope="module")
def real_client(real_aws: AwsSandboxServer) -> Client:
    clients: dict[str, Any] = {}

    def make(service: str) -> Any:
        if service not in clients:
            clients[service] = boto3.client(
                service,
                endpoint_url=real_aws.endpoint_url,
                region_name=REGION,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
        return clients[service]

    return make


def _core_api(cluster: dict[str, Any]) -> Any:
    ca = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)  # noqa: SIM115 - kept for the client
    ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]).decode())
    ca.close()
    config = kubernetes.client.Configuration()
    config.host = cluster["endpoint"]
    config.ssl_ca_cert = ca.name
    config.api_key = {"authorization": "Bearer k8s-aws-v1.test"}
    return kubernetes.client.ApiClient(config)


def test_given_an_active_eks_cluster_with_hyperpod_when_the_kubernetes_client_connects_then_it_sees_nodes_and_crds(
    real_client: Client, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    eks, sm = real_client("eks"), real_client("sagemaker")
    name = unique("eks-cluster")
    eks.create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": network["subnets"]},
        accessConfig={"authenticationMode": "API"},
    )
    cluster = wait_for(lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c)
    eks.create_addon(clusterName=name, addonName="cert-manager")
    hp = sm.create_cluster(
        ClusterName=unique("hp-cluster"),
        InstanceGroups=[
            {
                "InstanceGroupName": "gpu",
                "InstanceType": "ml.g6.4xlarge",
                "InstanceCount": 2,
                "ExecutionRole": role,
                "LifeCycleConfig": lifecycle,
            }
        ],
        Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
        VpcConfig={"Subnets": network["subnets"], "SecurityGroupIds": [network["sg"]]},
    )
    wait_for(lambda: sm.describe_cluster(ClusterName=hp["ClusterArn"])["ClusterStatus"] == "InService")
    wait_for(lambda: eks.describe_addon(clusterName=name, addonName="cert-manager")["addon"]["status"] == "ACTIVE")

    with _core_api(cluster) as api:
        nodes = (
            kubernetes.client.CoreV1Api(api)
            .list_node(label_selector="sagemaker.amazonaws.com/instance-group-name=gpu")
            .items
        )
        assert len(nodes) == 2
        assert {n.metadata.labels["topology.kubernetes.io/zone"] for n in nodes} == {"us-west-2a", "us-west-2b"}
        assert nodes[0].status.capacity["nvidia.com/gpu"] == "1"
        assert [c.status for c in nodes[0].status.conditions if c.type == "Ready"] == ["True"]
        crds = kubernetes.client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        assert "certificates.cert-manager.io" in {c.metadata.name for c in crds}
        deployments = kubernetes.client.AppsV1Api(api).list_namespaced_deployment("cert-manager").items
        assert {"cert-manager", "cert-manager-cainjector", "cert-manager-webhook"} <= {
            d.metadata.name for d in deployments
        }


def test_given_a_new_access_entry_when_the_kubernetes_client_calls_then_401_then_403_then_allowed(
    real_aws: AwsSandboxServer, real_client: Client, clock: SimClock, network: dict[str, Any], role: str
) -> None:
    eks = real_client("eks")
    name = unique("eks-cluster")
    eks.create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": network["subnets"]},
        accessConfig={"authenticationMode": "API"},
    )
    cluster = wait_for(lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c)
    # 15000 simulated seconds at the session's 3000x: 401 for 2.5 wall seconds, then 403 for 2.5
    # (a one-second window raced the client's set-up on a loaded CI machine)
    real_aws.extension.faults.delay_kubernetes_access(15000)

    def status() -> int:
        with clock.paused(), _core_api(cluster) as api:  # each answer at one simulated instant
            try:
                kubernetes.client.CoreV1Api(api).list_namespace()
            except kubernetes.client.exceptions.ApiException as exc:
                return int(exc.status)
        return 200

    with clock.paused():  # the first call lands at the window's start, however busy the machine is
        eks.create_access_entry(clusterName=name, principalArn=role)
        eks.associate_access_policy(
            clusterName=name,
            principalArn=role,
            policyArn="arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
            accessScope={"type": "cluster"},
        )
    seen = [status()]
    while seen[-1] != 200:  # the clock runs only between the answers: 0.05 wall s is 150 of the 7500 simulated s
        time.sleep(0.05)
        answer = status()
        if answer != seen[-1]:
            seen.append(answer)
    assert seen == [401, 403, 200]
    # the product's first probe, GET /version, needs no credentials and answers throughout
    with _core_api(cluster) as api:
        assert kubernetes.client.VersionApi(api).get_code().git_version
