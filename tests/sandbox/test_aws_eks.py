"""EKS in the AWS sandbox: cluster lifecycle, add-ons, access entries, pod identity."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

try:
    from tests.sandbox.conftest_aws import (
        FAKE_CA,
        FakeKube,
        add_node,
        aws,
        client,
        clock,
        create_eks,
        eks_cluster,
        kube,
        lambda_zip,
        network,
        role,
        unique,
        wait_for,
    )
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        FAKE_CA,
        FakeKube,
        add_node,
        aws,
        client,
        clock,
        create_eks,
        eks_cluster,
        kube,
        lambda_zip,
        network,
        role,
        unique,
        wait_for,
    )

Client = Callable[[str], Any]


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def _fresh_cluster(client: Client, network: dict[str, Any], role: str, mode: str = "API") -> str:
    return create_eks(client, network, role, mode)


def test_given_a_new_eks_cluster_when_described_then_it_is_creating_until_active_with_sandbox_endpoint_and_ca(
    client: Client, kube: FakeKube, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    name = unique("eks-cluster")
    created = eks.create_cluster(
        name=name,
        version="1.31",
        roleArn=role,
        resourcesVpcConfig={"subnetIds": network["subnets"], "securityGroupIds": [network["sg"]]},
        accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
        tags={"instantstart:cluster-tag": "t1"},
    )["cluster"]
    assert created["status"] == "CREATING"
    assert "endpoint" not in created
    described = eks.describe_cluster(name=name)["cluster"]
    assert described["status"] == "CREATING"
    assert described["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"
    assert described["tags"] == {"instantstart:cluster-tag": "t1"}
    assert described["version"] == "1.31"
    vpc = described["resourcesVpcConfig"]
    assert vpc["vpcId"] == network["vpc"]
    assert vpc["subnetIds"] == network["subnets"]
    assert vpc["clusterSecurityGroupId"].startswith("sg-")
    assert name in eks.list_clusters()["clusters"]

    active = wait_for(lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c)
    assert active["endpoint"] == kube.add_cluster(name)
    assert base64.b64decode(active["certificateAuthority"]["data"]).decode() == FAKE_CA


def test_given_subnets_in_one_zone_when_eks_cluster_is_created_then_invalid_parameter(
    client: Client, network: dict[str, Any], role: str
) -> None:
    with pytest.raises(ClientError) as exc:
        client("eks").create_cluster(
            name=unique("eks-cluster"), roleArn=role, resourcesVpcConfig={"subnetIds": network["subnets"][:1]}
        )
    assert _code(exc) == "InvalidParameterException"


def test_given_an_active_cluster_with_addons_when_deleted_then_deleting_then_gone_with_its_addons(
    client: Client, kube: FakeKube, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    name = _fresh_cluster(client, network, role)
    add_node(kube, name)
    eks.create_addon(clusterName=name, addonName="metrics-server")
    wait_for(lambda: eks.describe_addon(clusterName=name, addonName="metrics-server")["addon"]["status"] == "ACTIVE")

    assert eks.delete_cluster(name=name)["cluster"]["status"] == "DELETING"
    assert eks.describe_cluster(name=name)["cluster"]["status"] == "DELETING"  # for ~300 s

    def gone() -> bool:
        try:
            eks.describe_cluster(name=name)
        except ClientError as exc:
            return exc.response["Error"]["Code"] == "ResourceNotFoundException"
        return False

    wait_for(gone)
    assert name not in eks.list_clusters()["clusters"]
    assert name not in kube.clusters


def test_given_an_unknown_cluster_when_described_then_resource_not_found(client: Client) -> None:
    with pytest.raises(ClientError) as exc:
        client("eks").describe_cluster(name="no-such-cluster")
    assert _code(exc) == "ResourceNotFoundException"
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_given_an_active_cluster_when_cert_manager_is_added_then_creating_then_active_with_its_objects_installed(
    client: Client, kube: FakeKube, eks_cluster: str
) -> None:
    eks = client("eks")
    add_node(kube, eks_cluster)
    addon = eks.create_addon(
        clusterName=eks_cluster,
        addonName="cert-manager",
        resolveConflicts="OVERWRITE",
        configurationValues=json.dumps({"replicaCount": 1}),
        tags={"instantstart:managed": "true"},
    )["addon"]
    assert addon["status"] == "CREATING"
    assert addon["addonVersion"] == "v1.17.2-eksbuild.1"  # the default version
    assert addon["addonArn"].startswith(f"arn:aws:eks:us-west-2:123456789012:addon/{eks_cluster}/cert-manager/")
    assert "cert-manager" in eks.list_addons(clusterName=eks_cluster)["addons"]
    objects = kube.cluster(eks_cluster)
    # objects read first, status second: a status still CREATING after the read means the read saw CREATING
    # (a loaded machine may already be past the simulated creation time, then the objects may exist)
    installed_early = objects.get("apps/v1", "Deployment", "cert-manager", "cert-manager") is not None
    still_creating = eks.describe_addon(clusterName=eks_cluster, addonName="cert-manager")["addon"]["status"]
    assert not (installed_early and still_creating == "CREATING"), "no objects while the add-on is CREATING"

    active = wait_for(
        lambda: (
            (a := eks.describe_addon(clusterName=eks_cluster, addonName="cert-manager")["addon"])["status"] == "ACTIVE"
            and a
        )
    )
    assert active["configurationValues"] == json.dumps({"replicaCount": 1})
    assert active["tags"] == {"instantstart:managed": "true"}
    for deployment in ("cert-manager", "cert-manager-cainjector", "cert-manager-webhook"):
        assert objects.get("apps/v1", "Deployment", deployment, "cert-manager") is not None
    crds = {c["metadata"]["name"] for c in objects.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")}
    assert {"certificates.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io"} <= crds
    crd = objects.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "clusterissuers.cert-manager.io")
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] == "object"

    with pytest.raises(ClientError) as exc:
        eks.create_addon(clusterName=eks_cluster, addonName="cert-manager")
    assert _code(exc) == "ResourceInUseException"


def test_given_an_active_addon_when_deleted_then_deleting_then_gone_and_its_objects_removed(
    client: Client, kube: FakeKube, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    name = _fresh_cluster(client, network, role)
    add_node(kube, name)
    eks.create_addon(clusterName=name, addonName="aws-mountpoint-s3-csi-driver")
    wait_for(
        lambda: (
            eks.describe_addon(clusterName=name, addonName="aws-mountpoint-s3-csi-driver")["addon"]["status"]
            == "ACTIVE"
        )
    )
    objects = kube.cluster(name)
    assert objects.get("apps/v1", "DaemonSet", "s3-csi-node", "kube-system") is not None
    assert objects.get("apps/v1", "Deployment", "s3-csi-controller", "kube-system") is not None  # v2
    assert objects.get("storage.k8s.io/v1", "CSIDriver", "s3.csi.aws.com") is not None

    deleted = eks.delete_addon(clusterName=name, addonName="aws-mountpoint-s3-csi-driver")["addon"]
    assert deleted["status"] == "DELETING"

    def gone() -> bool:
        try:
            eks.describe_addon(clusterName=name, addonName="aws-mountpoint-s3-csi-driver")
        except ClientError as exc:
            return exc.response["Error"]["Code"] == "ResourceNotFoundException"
        return False

    wait_for(gone)
    assert objects.get("apps/v1", "DaemonSet", "s3-csi-node", "kube-system") is None
    assert objects.get("storage.k8s.io/v1", "CSIDriver", "s3.csi.aws.com") is None


def test_given_no_cert_manager_when_training_operator_is_added_then_it_is_degraded_until_its_dependencies_are_active(
    client: Client, kube: FakeKube, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    name = _fresh_cluster(client, network, role)
    add_node(kube, name)
    operator = "amazon-sagemaker-hyperpod-training-operator"
    eks.create_addon(clusterName=name, addonName=operator)

    def state() -> dict[str, Any]:
        return dict(eks.describe_addon(clusterName=name, addonName=operator)["addon"])

    degraded = wait_for(lambda: (a := state())["status"] == "DEGRADED" and a)
    assert degraded["health"]["issues"][0]["code"] == "AdmissionRequestDenied"
    assert "cert-manager" in degraded["health"]["issues"][0]["message"]
    assert "eks-pod-identity-agent" in degraded["health"]["issues"][0]["message"]

    for dependency in ("cert-manager", "eks-pod-identity-agent"):
        eks.create_addon(clusterName=name, addonName=dependency)
    wait_for(lambda: state()["status"] == "ACTIVE", timeout=20)

    eks.delete_addon(clusterName=name, addonName="cert-manager")
    again = wait_for(lambda: (a := state())["status"] == "DEGRADED" and a, timeout=20)
    assert "cert-manager" in again["health"]["issues"][0]["message"]


def test_given_its_dependencies_when_training_operator_is_added_with_pod_identity_then_crd_and_association_exist(
    client: Client, kube: FakeKube, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    name = _fresh_cluster(client, network, role)
    add_node(kube, name)
    for dependency in ("cert-manager", "eks-pod-identity-agent"):
        eks.create_addon(clusterName=name, addonName=dependency)
    wait_for(
        lambda: all(
            eks.describe_addon(clusterName=name, addonName=d)["addon"]["status"] == "ACTIVE"
            for d in ("cert-manager", "eks-pod-identity-agent")
        )
    )
    assert kube.cluster(name).get("apps/v1", "DaemonSet", "eks-pod-identity-agent", "kube-system") is not None
    addon = eks.create_addon(
        clusterName=name,
        addonName="amazon-sagemaker-hyperpod-training-operator",
        podIdentityAssociations=[{"serviceAccount": "hp-training-operator-controller-manager", "roleArn": role}],
    )["addon"]
    [association_arn] = addon["podIdentityAssociations"]
    associations = eks.list_pod_identity_associations(clusterName=name, namespace="aws-hyperpod")["associations"]
    assert [a["associationArn"] for a in associations] == [association_arn]
    assert associations[0]["ownerArn"] == addon["addonArn"]
    wait_for(
        lambda: (
            eks.describe_addon(clusterName=name, addonName="amazon-sagemaker-hyperpod-training-operator")["addon"][
                "status"
            ]
            == "ACTIVE"
        )
    )
    objects = kube.cluster(name)
    assert objects.get(
        "apiextensions.k8s.io/v1", "CustomResourceDefinition", "hyperpodpytorchjobs.sagemaker.amazonaws.com"
    )
    assert objects.get("apps/v1", "Deployment", "hp-training-operator-controller-manager", "aws-hyperpod")

    with pytest.raises(ClientError) as exc:  # an add-on's association is changed through the add-on
        eks.delete_pod_identity_association(clusterName=name, associationId=associations[0]["associationId"])
    assert _code(exc) == "InvalidRequestException"


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"addonName": "no-such-addon"}, "InvalidParameterException"),
        ({"addonName": "vpc-cni", "addonVersion": "v0.0.1-eksbuild.1"}, "InvalidParameterException"),
        ({"addonName": "vpc-cni", "configurationValues": "{not json"}, "InvalidParameterException"),
        (
            {
                "addonName": "coredns",
                "podIdentityAssociations": [
                    {"serviceAccount": "coredns", "roleArn": "arn:aws:iam::123456789012:role/x"}
                ],
            },
            "InvalidParameterException",
        ),
    ],
    ids=["unknown-addon", "unknown-version", "bad-configuration", "no-pod-identity-support"],
)
def test_given_an_invalid_addon_request_when_created_then_invalid_parameter(
    client: Client, eks_cluster: str, kwargs: dict[str, Any], code: str
) -> None:
    with pytest.raises(ClientError) as exc:
        client("eks").create_addon(clusterName=eks_cluster, **kwargs)
    assert _code(exc) == code


def test_given_an_active_addon_when_updated_then_updating_then_active_and_the_update_succeeds(
    client: Client, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    name = _fresh_cluster(client, network, role)
    eks.create_addon(clusterName=name, addonName="vpc-cni", addonVersion="v1.18.6-eksbuild.1")
    wait_for(lambda: eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["status"] == "ACTIVE")
    update = eks.update_addon(clusterName=name, addonName="vpc-cni", addonVersion="v1.19.2-eksbuild.1")["update"]
    assert (update["type"], update["status"]) == ("AddonUpdate", "InProgress")
    wait_for(lambda: eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["status"] == "ACTIVE")
    assert eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["addonVersion"] == "v1.19.2-eksbuild.1"
    described = eks.describe_update(name=name, updateId=update["id"], addonName="vpc-cni")["update"]
    assert described["status"] == "Successful"


def test_given_a_kubernetes_version_when_addon_versions_are_described_then_the_catalog_answers_defaults(
    client: Client,
) -> None:
    eks = client("eks")
    addons = eks.describe_addon_versions(kubernetesVersion="1.31")["addons"]
    names = {a["addonName"] for a in addons}
    assert {
        "vpc-cni",
        "kube-proxy",
        "coredns",
        "eks-pod-identity-agent",
        "cert-manager",
        "metrics-server",
        "aws-mountpoint-s3-csi-driver",
        "aws-fsx-csi-driver",
        "amazon-cloudwatch-observability",
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-sagemaker-hyperpod-inference",
        "amazon-sagemaker-hyperpod-observability",
        "amazon-sagemaker-hyperpod-taskgovernance",
    } <= names
    [proxy] = eks.describe_addon_versions(kubernetesVersion="1.31", addonName="kube-proxy")["addons"]
    default = [v for v in proxy["addonVersions"] if v["compatibilities"][0]["defaultVersion"]]
    assert [v["addonVersion"] for v in default] == ["v1.31.3-eksbuild.2"]


def test_given_an_api_cluster_when_access_entry_and_policy_are_managed_then_they_are_listed_and_removed(
    client: Client, eks_cluster: str, role: str
) -> None:
    eks = client("eks")
    entry = eks.create_access_entry(clusterName=eks_cluster, principalArn=role, tags={"k": "v"})["accessEntry"]
    assert entry["type"] == "STANDARD"
    assert entry["username"].startswith("arn:aws:sts::123456789012:assumed-role/")
    assert role in eks.list_access_entries(clusterName=eks_cluster)["accessEntries"]
    with pytest.raises(ClientError) as exc:
        eks.create_access_entry(clusterName=eks_cluster, principalArn=role)
    assert _code(exc) == "ResourceInUseException"

    policy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    associated = eks.associate_access_policy(
        clusterName=eks_cluster, principalArn=role, policyArn=policy, accessScope={"type": "cluster"}
    )["associatedAccessPolicy"]
    assert associated["policyArn"] == policy
    listed = eks.list_associated_access_policies(clusterName=eks_cluster, principalArn=role)
    assert [p["policyArn"] for p in listed["associatedAccessPolicies"]] == [policy]
    assert eks.list_access_entries(clusterName=eks_cluster, associatedPolicyArn=policy)["accessEntries"] == [role]

    eks.disassociate_access_policy(clusterName=eks_cluster, principalArn=role, policyArn=policy)
    assert (
        eks.list_associated_access_policies(clusterName=eks_cluster, principalArn=role)["associatedAccessPolicies"]
        == []
    )
    eks.delete_access_entry(clusterName=eks_cluster, principalArn=role)
    with pytest.raises(ClientError) as exc:
        eks.describe_access_entry(clusterName=eks_cluster, principalArn=role)
    assert _code(exc) == "ResourceNotFoundException"


@pytest.mark.parametrize("bootstrap", [True, False])
def test_given_creator_admin_bootstrap_when_a_function_creates_a_cluster_then_its_role_gets_an_untagged_entry(
    aws: Any, client: Client, network: dict[str, Any], role: str, bootstrap: bool
) -> None:
    from instantstart_sandbox import iam_audit
    from instantstart_sandbox.aws.calls import IamTarget

    function = unique("creator")
    client("lambda").create_function(
        FunctionName=function, Runtime="python3.12", Role=role, Handler="x.handler", Code={"ZipFile": lambda_zip()}
    )
    eks = client("eks")
    name = unique("eks-cluster")
    iam_audit.install()
    with iam_audit.acting_as(function):
        eks.create_cluster(
            name=name,
            version="1.31",
            roleArn=role,
            resourcesVpcConfig={"subnetIds": network["subnets"], "securityGroupIds": [network["sg"]]},
            accessConfig={"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": bootstrap},
            tags={"instantstart:managed": "true"},
        )

    # the IAM audit sees what IAM would judge: the new cluster's ARN and the tags the request sets
    arn = f"arn:aws:eks:us-west-2:123456789012:cluster/{name}"
    target = IamTarget(arn, (), (("instantstart:managed", "true"),))
    assert aws.extension.calls.by_target[(function, "eks", "CreateCluster", target)] == 1
    # like EKS: the creator's entry exists at once, with the admin policy, and none of the cluster's tags
    if not bootstrap:
        assert eks.list_access_entries(clusterName=name)["accessEntries"] == []
        return
    assert eks.list_access_entries(clusterName=name)["accessEntries"] == [role]
    assert eks.describe_access_entry(clusterName=name, principalArn=role)["accessEntry"]["tags"] == {}
    listed = eks.list_associated_access_policies(clusterName=name, principalArn=role)["associatedAccessPolicies"]
    assert [p["policyArn"] for p in listed] == ["arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"]


def test_given_bad_principals_or_modes_when_access_entry_is_created_then_the_real_errors(
    client: Client, eks_cluster: str, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    with pytest.raises(ClientError) as exc:
        eks.create_access_entry(clusterName=eks_cluster, principalArn="arn:aws:iam::123456789012:role/missing")
    assert _code(exc) == "InvalidParameterException"
    with pytest.raises(ClientError) as exc:
        eks.associate_access_policy(
            clusterName=eks_cluster,
            principalArn=role,
            policyArn="arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
            accessScope={"type": "cluster"},
        )
    assert _code(exc) == "ResourceNotFoundException"
    config_map = _fresh_cluster(client, network, role, mode="CONFIG_MAP")
    with pytest.raises(ClientError) as exc:
        eks.create_access_entry(clusterName=config_map, principalArn=role)
    assert _code(exc) == "InvalidRequestException"


def test_given_an_active_cluster_when_pod_identity_association_is_managed_then_it_is_described_listed_deleted(
    client: Client, eks_cluster: str, role: str
) -> None:
    eks = client("eks")
    sa = unique("sa")
    association = eks.create_pod_identity_association(
        clusterName=eks_cluster, namespace="kube-system", serviceAccount=sa, roleArn=role
    )["association"]
    association_id = association["associationId"]
    assert association_id.startswith("a-")
    described = eks.describe_pod_identity_association(clusterName=eks_cluster, associationId=association_id)
    assert described["association"]["roleArn"] == role
    listed = eks.list_pod_identity_associations(clusterName=eks_cluster, serviceAccount=sa)["associations"]
    assert [a["associationId"] for a in listed] == [association_id]
    with pytest.raises(ClientError) as exc:
        eks.create_pod_identity_association(
            clusterName=eks_cluster, namespace="kube-system", serviceAccount=sa, roleArn=role
        )
    assert _code(exc) == "ResourceInUseException"
    eks.delete_pod_identity_association(clusterName=eks_cluster, associationId=association_id)
    assert eks.list_pod_identity_associations(clusterName=eks_cluster, serviceAccount=sa)["associations"] == []


def test_given_a_creating_cluster_when_an_addon_is_added_then_invalid_request(
    client: Client, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    name = unique("eks-cluster")
    eks.create_cluster(name=name, roleArn=role, resourcesVpcConfig={"subnetIds": network["subnets"]})
    with pytest.raises(ClientError) as exc:
        eks.create_addon(clusterName=name, addonName="vpc-cni")
    assert _code(exc) == "InvalidRequestException"
