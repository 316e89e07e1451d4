"""Given the sandbox, when a user creates a cluster through the HTTP API, then it ends verified and running."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal

STAGES = ["network", "access", "dependencies", "hyperpod", "storage", "verify"]
"""The creation workflow's stages, in order."""


@pytest.fixture(scope="module")
def ready_cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``demo`` cluster created once for this module, polled to a terminal state."""
    import time

    op = api.create_cluster("itest", "us-west-2c", [GROUP])
    deadline = time.monotonic() + 240
    cluster: dict[str, Any] = dict(api.get_cluster("itest"))
    while not terminal(cluster) and time.monotonic() < deadline:
        time.sleep(0.5)
        cluster = dict(api.get_cluster("itest"))
    return {"operation": dict(op), "cluster": cluster}


def test_when_created_then_every_stage_succeeds_and_the_cluster_is_ready(ready_cluster: dict[str, Any]) -> None:
    cluster = ready_cluster["cluster"]
    assert cluster["status"] == "READY", cluster["stages"]
    assert [s["name"] for s in cluster["stages"]] == STAGES
    assert all(s["status"] == "SUCCEEDED" and s["attempts"] == 1 for s in cluster["stages"])
    dependencies = next(s for s in cluster["stages"] if s["name"] == "dependencies")
    # Only what HyperPod needs before nodes join is waited for; Deployment add-ons are checked in verify.
    assert dependencies["observedStatus"].startswith("1/4 add-ons ACTIVE, 7 Kubernetes objects applied")
    verify = next(s for s in cluster["stages"] if s["name"] == "verify")
    assert verify["observedStatus"] == "1/1 nodes Ready and Schedulable, 4/4 add-ons ACTIVE, PVC Bound"


def test_when_ready_then_the_summary_shows_eks_hyperpod_nodes_and_storage(ready_cluster: dict[str, Any]) -> None:
    cluster = ready_cluster["cluster"]
    assert cluster["eks"]["clusterName"] == "eks-cluster-itest"
    assert cluster["eks"]["status"] == "ACTIVE"
    assert cluster["hyperPod"]["clusterName"] == "hp-cluster-itest"
    assert cluster["hyperPod"]["status"] == "InService"
    group = cluster["hyperPod"]["instanceGroups"][0]
    assert (group["instanceType"], group["currentCount"], group["capacityType"]) == ("ml.g6.4xlarge", 1, "OnDemand")
    assert len(cluster["nodes"]) == 1
    node = cluster["nodes"][0]
    assert node["ready"] is True and node["healthStatus"] == "Schedulable"
    assert cluster["storage"]["persistentVolumeClaim"] == "s3-claim"
    assert cluster["storage"]["phase"] == "Bound"


def test_when_created_then_the_operation_is_a_step_functions_execution_named_after_it(
    ready_cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    op = api.get_operation(ready_cluster["operation"]["operationId"])
    assert op["status"] == "SUCCEEDED" and op["type"] == "CREATE_CLUSTER"
    sfn = boto3.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    execution = sfn.describe_execution(executionArn=op["executionArn"])
    assert execution["name"] == op["operationId"]
    assert execution["status"] == "SUCCEEDED"
    history = sfn.get_execution_history(executionArn=op["executionArn"], maxResults=1000)["events"]
    entered = {e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e}
    assert {"Begin Network Stage", "Create HyperPod Cluster", "Complete Verify Stage"} <= entered


def test_when_created_then_the_compute_subnet_is_a_tagged_20_routed_through_the_nat(
    ready_cluster: dict[str, Any], sandbox: Sandbox
) -> None:
    ec2 = boto3.client("ec2", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    vpcs = ec2.describe_vpcs(Filters=[{"Name": "tag:instantstart:cluster-tag", "Values": ["itest"]}])["Vpcs"]
    assert len(vpcs) == 1 and vpcs[0]["CidrBlock"].endswith("/16")
    subnets = ec2.describe_subnets(
        Filters=[
            {"Name": "tag:Name", "Values": ["hp-compute-us-west-2c"]},
            {"Name": "vpc-id", "Values": [vpcs[0]["VpcId"]]},
        ]
    )["Subnets"]
    assert len(subnets) == 1
    subnet = subnets[0]
    assert subnet["CidrBlock"].endswith("/20") and subnet["AvailabilityZone"] == "us-west-2c"
    tags = {t["Key"]: t["Value"] for t in subnet["Tags"]}
    assert tags["instantstart:managed"] == "true" and tags["instantstart:cluster-tag"] == "itest"
    tables = ec2.describe_route_tables(Filters=[{"Name": "association.subnet-id", "Values": [subnet["SubnetId"]]}])
    routes = tables["RouteTables"][0]["Routes"]
    assert any(r.get("DestinationCidrBlock") == "0.0.0.0/0" and r.get("NatGatewayId") for r in routes)


def test_when_created_then_the_network_stage_made_the_compute_subnet_while_eks_created_and_hyperpod_uses_it(
    ready_cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    network = next(s for s in ready_cluster["cluster"]["stages"] if s["name"] == "network")
    subnet_id = network["resources"]["computeSubnetId"]
    assert network["resources"]["computeSubnetCidr"].endswith("/20")
    hyperpod = next(s for s in ready_cluster["cluster"]["stages"] if s["name"] == "hyperpod")
    assert "computeSubnetId" not in hyperpod["resources"]
    sm = boto3.client("sagemaker", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    group = sm.describe_cluster(ClusterName="hp-cluster-itest")["InstanceGroups"][0]
    assert group["OverrideVpcConfig"]["Subnets"] == [subnet_id]
    op = api.get_operation(ready_cluster["operation"]["operationId"])
    sfn = boto3.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    history = sfn.get_execution_history(executionArn=op["executionArn"], maxResults=1000)["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
    # Off the critical path: made before the EKS control plane was ACTIVE, not after the dependencies.
    assert entered.index("Ensure Compute Subnet") < entered.index("Begin Access Stage")
    assert entered.count("Ensure Compute Subnet") == 1


def test_when_created_then_the_hyperpod_cluster_has_node_recovery_and_continuous_provisioning(
    ready_cluster: dict[str, Any], sandbox: Sandbox
) -> None:
    sm = boto3.client("sagemaker", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    described = sm.describe_cluster(ClusterName="hp-cluster-itest")
    assert described["NodeRecovery"] == "Automatic"
    assert described["NodeProvisioningMode"] == "Continuous"
    assert described["Orchestrator"]["Eks"]["ClusterArn"].endswith("cluster/eks-cluster-itest")
    group = described["InstanceGroups"][0]
    assert group["OverrideVpcConfig"]["Subnets"]
    eks = boto3.client("eks", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    assert eks.describe_cluster(name="eks-cluster-itest")["cluster"]["accessConfig"]["authenticationMode"] == (
        "API_AND_CONFIG_MAP"
    )
    addons = set(eks.list_addons(clusterName="eks-cluster-itest")["addons"])
    assert {"eks-pod-identity-agent", "cert-manager", "aws-mountpoint-s3-csi-driver", "metrics-server"} <= addons


def test_when_ready_then_the_kubernetes_api_holds_the_bound_claim_and_schedulable_nodes(
    ready_cluster: dict[str, Any], sandbox: Sandbox
) -> None:
    kube = sandbox.kube.cluster("eks-cluster-itest")
    pvc = kube.get("v1", "PersistentVolumeClaim", "s3-claim", "default")
    assert pvc["status"]["phase"] == "Bound"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    nodes = kube.list("v1", "Node", label_selector="sagemaker.amazonaws.com/node-health-status=Schedulable")
    assert len(nodes) == 1
    assert kube.get("apps/v1", "DaemonSet", "health-monitoring-agent", "aws-hyperpod") is not None


def test_when_listing_then_the_new_cluster_is_there(ready_cluster: dict[str, Any], api: InstantStartClient) -> None:
    tags = [c["clusterTag"] for c in api.iter_clusters()]
    assert "itest" in tags


def test_when_listing_then_each_entry_has_its_stages_and_node_counts_without_a_get_per_cluster(
    ready_cluster: dict[str, Any], api: InstantStartClient
) -> None:
    entry = next(c for c in api.iter_clusters() if c["clusterTag"] == "itest")
    detail = ready_cluster["cluster"]
    assert entry["stages"] == [{"name": s["name"], "status": s["status"]} for s in detail["stages"]]
    assert [s["name"] for s in entry["stages"]] == STAGES
    assert entry["instanceGroups"] == [
        {
            "instanceGroupName": GROUP["instanceGroupName"],
            "instanceType": "ml.g6.4xlarge",
            "targetCount": 1,
            "currentCount": 1,
            "readyNodes": 1,
            "status": "InService",
        }
    ]
    assert entry["currentOperationId"] == ready_cluster["operation"]["operationId"]


def test_given_a_ready_cluster_when_creating_the_same_tag_then_409(
    ready_cluster: dict[str, Any], api: InstantStartClient
) -> None:
    from instantstart_client.api import ApiError

    with pytest.raises(ApiError) as err:
        api.create_cluster("itest", "us-west-2c", [GROUP])
    assert err.value.status == 409
    assert err.value.code == "ClusterAlreadyExists"


def test_given_a_ready_cluster_when_retrying_a_succeeded_stage_then_409_names_its_status(
    ready_cluster: dict[str, Any], api: InstantStartClient
) -> None:
    from instantstart_client.api import ApiError

    with pytest.raises(ApiError) as err:
        api.retry_stage("itest", "hyperpod")
    assert err.value.status == 409
    assert "SUCCEEDED" in err.value.message


def test_given_a_ready_cluster_when_hyperpod_reports_a_faulty_node_then_the_api_shows_its_recovery(
    ready_cluster: dict[str, Any], api: InstantStartClient, sandbox: Sandbox
) -> None:
    import time

    node = ready_cluster["cluster"]["nodes"][0]
    assert node["instanceId"] and node["nodeName"] == f"hyperpod-{node['instanceId']}"
    sandbox.aws.extension.hyperpod.report_node_health(
        "hp-cluster-itest",
        node["instanceId"],
        health_status="UnschedulablePendingReplacement",
        reason="GPU health check failed",
        repair_action="Replace",
    )
    deadline = time.monotonic() + 30
    while True:
        seen = next(n for n in api.get_cluster("itest")["nodes"] if n["instanceId"] == node["instanceId"])
        if seen["healthStatus"] == "UnschedulablePendingReplacement" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert seen["healthStatus"] == "UnschedulablePendingReplacement"
    assert seen["healthStatusReason"] == "GPU health check failed"
    assert seen["repairAction"] == "Replace"
