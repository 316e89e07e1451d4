"""POST /clusters/import through the HTTP API: an EKS cluster built elsewhere comes under management, only the
missing stages run, and DELETE removes only what the control plane created."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal


def _clients(sandbox: Sandbox) -> tuple[Any, Any, Any, Any]:
    kw = {"endpoint_url": sandbox.aws_endpoint_url, "region_name": sandbox.region}
    return (
        boto3.client("eks", **kw),
        boto3.client("ec2", **kw),
        boto3.client("sagemaker", **kw),
        boto3.client("s3", **kw),
    )


def _finish(api: InstantStartClient, op_id: str, seconds: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while (op := api.get_operation(op_id))["status"] not in ("SUCCEEDED", "FAILED", "CANCELLED"):
        assert time.monotonic() < deadline, f"operation {op_id} did not finish: {op}"
        time.sleep(0.5)
    return op


def test_given_a_foreign_eks_cluster_when_imported_and_deleted_then_only_what_we_created_is_gone(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    foreign = sandbox.aws.extension.foreign.create("platform-eks", with_addons=["eks-pod-identity-agent", "coredns"])
    eks, ec2, sm, s3 = _clients(sandbox)

    op = api.import_cluster("platform-eks", "adopted", instance_groups=[GROUP], availability_zone="us-west-2a")
    assert op["type"] == "IMPORT_CLUSTER"
    ready = wait_for(api, "adopted", terminal)
    assert ready["status"] == "READY", ready["stages"]
    stages = {s["name"]: s for s in ready["stages"]}
    assert stages["network"]["imported"] is True and stages["network"]["attempts"] == 0
    assert stages["network"]["resources"]["vpcId"] == foreign.vpc_id
    assert stages["hyperpod"]["imported"] is False and stages["hyperpod"]["attempts"] == 1
    assert stages["dependencies"]["resources"]["importedAddons"] == ["eks-pod-identity-agent"]
    assert ready["imported"] is True and ready["importedResources"]["eksClusterName"] == "platform-eks"
    assert ready["eks"]["clusterName"] == "platform-eks"
    assert ready["hyperPod"]["clusterName"] == "hp-cluster-adopted"
    hp = sm.describe_cluster(ClusterName="hp-cluster-adopted")
    assert hp["Orchestrator"]["Eks"]["ClusterArn"] == foreign.eks_cluster_arn
    assert hp["VpcConfig"]["Subnets"][0] not in foreign.subnet_ids  # our compute subnet, in the foreign VPC
    assert ec2.describe_subnets(SubnetIds=hp["VpcConfig"]["Subnets"])["Subnets"][0]["VpcId"] == foreign.vpc_id
    principal = stages["access"]["resources"]["principalArn"]
    assert eks.describe_access_entry(clusterName="platform-eks", principalArn=principal)["accessEntry"]

    delete = api.delete_cluster("adopted")
    retained = {(r["resourceType"], r["name"]) for r in delete["retained"]}
    assert {("EksCluster", "platform-eks"), ("Vpc", foreign.vpc_id), ("EksAddon", "coredns")} <= retained
    assert _finish(api, delete["operationId"])["status"] == "SUCCEEDED"
    with pytest.raises(ApiError) as gone:
        api.get_cluster("adopted")
    assert gone.value.status == 404

    # What was there before the import is still there ...
    assert eks.describe_cluster(name="platform-eks")["cluster"]["status"] == "ACTIVE"
    assert ec2.describe_vpcs(VpcIds=[foreign.vpc_id])["Vpcs"]
    assert len(ec2.describe_subnets(SubnetIds=foreign.subnet_ids)["Subnets"]) == 2
    assert ec2.describe_security_groups(GroupIds=[foreign.security_group_id])["SecurityGroups"]
    assert set(eks.list_addons(clusterName="platform-eks")["addons"]) == {"eks-pod-identity-agent", "coredns"}
    # ... and what the control plane created is gone: HyperPod cluster, add-ons, access entry, bucket, subnets.
    assert "hp-cluster-adopted" not in [c["ClusterName"] for c in sm.list_clusters()["ClusterSummaries"]]
    with pytest.raises(eks.exceptions.ResourceNotFoundException):
        eks.describe_access_entry(clusterName="platform-eks", principalArn=principal)
    assert not [b for b in s3.list_buckets()["Buckets"] if b["Name"].startswith("instantstart-adopted-")]
    owned = ec2.describe_subnets(Filters=[{"Name": "tag:instantstart:cluster-tag", "Values": ["adopted"]}])
    assert owned["Subnets"] == []
    nats = ec2.describe_nat_gateways(Filters=[{"Name": "vpc-id", "Values": [foreign.vpc_id]}])["NatGateways"]
    assert all(n["State"] in ("deleting", "deleted") for n in nats)


def test_given_a_config_map_only_cluster_when_imported_then_422_names_eks_cluster_name(
    api: InstantStartClient, sandbox: Sandbox
) -> None:
    sandbox.aws.extension.foreign.create("legacy-eks", authentication_mode="CONFIG_MAP")
    with pytest.raises(ApiError) as refused:
        api.import_cluster("legacy-eks", "legacy", instance_groups=[GROUP])
    assert refused.value.status == 422 and refused.value.code == "UnsupportedAuthenticationMode"
    assert refused.value.details[0]["field"] == "eksClusterName"
    assert refused.value.details[0]["allowedValues"] == ["API", "API_AND_CONFIG_MAP"]
    with pytest.raises(ApiError) as absent:
        api.get_cluster("legacy")
    assert absent.value.status == 404  # nothing was written


def test_given_an_unsupported_version_or_unknown_names_when_imported_then_4xx_names_the_field(
    api: InstantStartClient, sandbox: Sandbox
) -> None:
    sandbox.aws.extension.foreign.create("new-eks", kubernetes_version="1.34")
    with pytest.raises(ApiError) as version:
        api.import_cluster("new-eks", "newer", instance_groups=[GROUP])
    assert version.value.status == 422 and version.value.code == "UnsupportedKubernetesVersion"
    assert version.value.details[0]["field"] == "eksClusterName" and "1.33" in version.value.details[0]["allowedValues"]

    with pytest.raises(ApiError) as unknown:
        api.import_cluster("no-such-eks", "nothing", instance_groups=[GROUP])
    assert unknown.value.status == 404 and unknown.value.details[0]["field"] == "eksClusterName"

    other = sandbox.aws.extension.foreign.create("other-eks", with_hyperpod=True)
    sandbox.aws.extension.foreign.create("plain-eks")
    with pytest.raises(ApiError) as mismatch:
        api.import_cluster("plain-eks", "plain", hyper_pod_cluster_name=str(other.hyperpod_cluster_name))
    assert mismatch.value.status == 422 and mismatch.value.details[0]["field"] == "hyperPodClusterName"
    with pytest.raises(ApiError) as missing_hp:
        api.import_cluster("plain-eks", "plain", hyper_pod_cluster_name="no-such-hp")
    assert missing_hp.value.status == 404 and missing_hp.value.details[0]["field"] == "hyperPodClusterName"
    with pytest.raises(ApiError) as no_groups:
        api.import_cluster("plain-eks", "plain")
    assert no_groups.value.status == 422 and no_groups.value.details[0]["field"] == "instanceGroups"


def test_given_a_cluster_with_hyperpod_when_imported_then_its_stage_is_imported_and_groups_visible(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    foreign = sandbox.aws.extension.foreign.create("team-eks", with_hyperpod=True)
    op = api.import_cluster("team-eks", "team", hyper_pod_cluster_name=str(foreign.hyperpod_cluster_name))
    with pytest.raises(ApiError) as live:
        api.import_cluster("team-eks", "team", hyper_pod_cluster_name=str(foreign.hyperpod_cluster_name))
    assert live.value.status == 409 and live.value.details[0]["field"] == "clusterTag"
    ready = wait_for(api, "team", lambda c: terminal(c) and c["currentOperationId"] == op["operationId"])
    assert ready["status"] == "READY", ready["stages"]
    stages = {s["name"]: s for s in ready["stages"]}
    assert stages["hyperpod"]["imported"] is True and stages["hyperpod"]["attempts"] == 0
    assert stages["verify"]["status"] == "SUCCEEDED" and stages["verify"]["attempts"] == 1
    groups = api.list_instance_groups("team")
    assert groups["hyperPodClusterName"] == foreign.hyperpod_cluster_name
    assert [g["instanceGroupName"] for g in groups["instanceGroups"]] == ["workers"]
    _eks, _ec2, sm, _s3 = _clients(sandbox)
    arn = sm.describe_cluster(ClusterName=str(foreign.hyperpod_cluster_name))["ClusterArn"]

    def tags() -> dict[str, str]:
        return {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}

    # the import marks it as this cluster tag's (the key IAM lets the steps change it by), never as created here
    assert tags() == {"owner": "platform-team", "instantstart:cluster-tag": "team"}
    count = groups["instanceGroups"][0]["targetCount"]
    scale = api.update_instance_group("team", "workers", {"instanceCount": count + 1})
    assert _finish(api, scale["operationId"])["status"] == "SUCCEEDED"
    assert api.list_instance_groups("team")["instanceGroups"][0]["targetCount"] == count + 1

    delete = api.delete_cluster("team")
    assert ("HyperPodCluster", foreign.hyperpod_cluster_name) in {
        (r["resourceType"], r["name"]) for r in delete["retained"]
    }
    assert _finish(api, delete["operationId"])["status"] == "SUCCEEDED"
    assert sm.describe_cluster(ClusterName=str(foreign.hyperpod_cluster_name))["ClusterStatus"] != "Deleting"
    assert tags() == {"owner": "platform-team"}


def test_given_a_foreign_access_entry_for_the_control_plane_when_imported_and_deleted_then_its_grant_is_taken_back(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    foreign = sandbox.aws.extension.foreign.create("shared-eks", with_hyperpod=True)
    eks, _ec2, _sm, _s3 = _clients(sandbox)
    lam = boto3.client("lambda", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    steps = lam.get_function_configuration(FunctionName=sandbox.function_name("ClusterStepsFunction"))
    principal = steps["Environment"]["Variables"]["CONTROL_PLANE_ROLE_ARN"]
    # the platform team gave the control plane's role an entry of its own (view only) before the import
    eks.create_access_entry(
        clusterName="shared-eks", principalArn=principal, kubernetesGroups=["platform-viewers"], tags={"team": "p"}
    )
    view = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
    eks.associate_access_policy(
        clusterName="shared-eks", principalArn=principal, policyArn=view, accessScope={"type": "cluster"}
    )

    def policies() -> set[str]:
        listed = eks.list_associated_access_policies(clusterName="shared-eks", principalArn=principal)
        return {p["policyArn"] for p in listed["associatedAccessPolicies"]}

    # the step dies right after it made the grant: its retry finds the policy associated and must still own it
    crash = sandbox.lambda_faults.crash(
        sandbox.function_name("ClusterStepsFunction"),
        after_calls=0,
        after_operation="AssociateAccessPolicy",
        when={"action": "grant_access", "clusterTag": "shared"},
    )
    api.import_cluster("shared-eks", "shared", hyper_pod_cluster_name=str(foreign.hyperpod_cluster_name))
    ready = wait_for(api, "shared", terminal)
    assert ready["status"] == "READY", ready["stages"]
    assert crash.remaining == 0, "grant_access was killed once"
    admin = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert policies() == {view, admin}  # the access stage ran and granted cluster-admin on the foreign entry

    delete = api.delete_cluster("shared")
    assert ("EksAccessEntry", principal) in {(r["resourceType"], r["name"]) for r in delete["retained"]}
    grants = {(g["resourceType"], g["name"], g["grant"]) for g in delete["revokedGrants"]}
    assert ("EksAccessEntry", principal, admin) in grants
    assert ("HyperPodCluster", foreign.hyperpod_cluster_name, "tag instantstart:cluster-tag") in grants
    assert _finish(api, delete["operationId"])["status"] == "SUCCEEDED"
    # the grant is gone; the entry, its own policy, groups and tags stay as the platform team made them
    entry = eks.describe_access_entry(clusterName="shared-eks", principalArn=principal)["accessEntry"]
    assert policies() == {view}
    assert entry["kubernetesGroups"] == ["platform-viewers"] and entry["tags"] == {"team": "p"}
