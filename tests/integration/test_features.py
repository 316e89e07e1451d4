"""Given a READY cluster in the sandbox, when a user turns managed features on and off through the HTTP API, then
EKS, IAM, HyperPod and the operation records agree, shared add-ons stay while something needs them, and a request
equal to what AWS reports writes nothing."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.aws.calls import RESOURCE_SERVICES
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, ready_cluster
from tests.integration.conftest import finished as finished_within

TAG = "feats"
EKS_NAME = f"eks-cluster-{TAG}"


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``feats`` cluster (one node), created once for this module and READY."""
    return ready_cluster(api, TAG, [GROUP])


def finished(api: InstantStartClient, op: Any, timeout: float = 300) -> dict[str, Any]:
    return finished_within(api, op, timeout)


def addon(sandbox: Sandbox, name: str) -> dict[str, Any] | None:
    eks = boto3.client("eks", region_name=sandbox.region)
    try:
        return dict(eks.describe_addon(clusterName=EKS_NAME, addonName=name)["addon"])
    except eks.exceptions.ResourceNotFoundException:
        return None


def wait_gone(sandbox: Sandbox, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while addon(sandbox, name) is not None and time.monotonic() < deadline:
        time.sleep(0.5)


def test_when_enabling_the_inference_operator_then_cert_manager_of_the_create_workflow_records_both_needers(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    before = api.get_features(TAG)["features"]["inferenceOperator"]
    cert = next(a for a in before["addons"] if a["addonName"] == "cert-manager")
    assert before["enabled"] is False and cert["status"] == "ACTIVE" and cert["neededBy"] == ["create"]

    op = api.update_features(TAG, {"inferenceOperator": {"enabled": True}})
    assert op["type"] == "UPDATE_FEATURES"
    done = finished(api, op)

    assert done["status"] == "SUCCEEDED", done
    assert done["features"]["inferenceOperator"]["result"] == "changed"
    inference = addon(sandbox, "amazon-sagemaker-hyperpod-inference")
    assert inference is not None and inference["status"] == "ACTIVE"
    assert addon(sandbox, "cert-manager")["tags"]["instantstart:needed-by"] == "create inferenceOperator"  # type: ignore[index]
    state = api.get_features(TAG)["features"]["inferenceOperator"]
    assert state["enabled"] is True and state["desired"] == {"enabled": True}
    assert [a["serviceAccount"] for a in state["podIdentityAssociations"]] == [
        "hyperpod-inference-operator-controller-manager"
    ]
    assert state["roles"] and state["buckets"]


def test_when_an_unrelated_feature_is_turned_on_and_off_then_cert_manager_stays_active(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    on = finished(api, api.update_features(TAG, {"trainingOperator": {"enabled": True}}))
    assert on["status"] == "SUCCEEDED", on
    assert addon(sandbox, "amazon-sagemaker-hyperpod-training-operator")["status"] == "ACTIVE"  # type: ignore[index]

    off = finished(api, api.update_features(TAG, {"trainingOperator": {"enabled": False}}))

    assert off["status"] == "SUCCEEDED", off
    assert off["features"]["trainingOperator"]["result"] == "changed"
    wait_gone(sandbox, "amazon-sagemaker-hyperpod-training-operator")
    assert addon(sandbox, "amazon-sagemaker-hyperpod-training-operator") is None
    cert = addon(sandbox, "cert-manager")
    assert cert is not None and cert["status"] == "ACTIVE"
    assert cert["tags"]["instantstart:needed-by"] == "create inferenceOperator"
    assert addon(sandbox, "amazon-sagemaker-hyperpod-inference")["status"] == "ACTIVE"  # type: ignore[index]
    iam = boto3.client("iam", region_name=sandbox.region)
    with pytest.raises(iam.exceptions.NoSuchEntityException):
        iam.get_role(RoleName=f"instantstart-{TAG}-training-operator")


def test_when_the_patch_is_empty_or_equal_to_aws_then_every_feature_is_unchanged_and_nothing_is_written(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    calls = sandbox.aws.extension.calls
    calls.reset()

    empty = api.update_features(TAG, {})
    same = api.update_features(TAG, {"inferenceOperator": {"enabled": True}, "trainingOperator": {"enabled": False}})

    assert empty == {"clusterTag": TAG, "features": {}}
    assert same["features"] == {
        "inferenceOperator": {"result": "unchanged", "error": None, "actions": []},
        "trainingOperator": {"result": "unchanged", "error": None, "actions": []},
    }
    assert "operationId" not in same
    assert calls.writes(*RESOURCE_SERVICES) == []


def test_when_tiered_checkpointing_goes_on_then_off_then_no_role_or_association_is_left(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    sm = boto3.client("sagemaker", region_name=sandbox.region)
    eks = boto3.client("eks", region_name=sandbox.region)
    iam = boto3.client("iam", region_name=sandbox.region)
    body = {"tieredCheckpointing": {"enabled": True, "instanceMemoryAllocationPercentage": 20}}

    on = finished(api, api.update_features(TAG, body))

    assert on["status"] == "SUCCEEDED", on
    config = sm.describe_cluster(ClusterName=f"hp-cluster-{TAG}")["TieredStorageConfig"]
    assert config == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
    assoc = eks.list_pod_identity_associations(clusterName=EKS_NAME, namespace="default")["associations"]
    assert [a["serviceAccount"] for a in assoc] == ["tiered-checkpointing"]
    assert iam.get_role(RoleName=f"instantstart-{TAG}-tiered-checkpointing")["Role"]["Arn"]
    kube = sandbox.kube.cluster(EKS_NAME)
    assert kube.get("v1", "ServiceAccount", "tiered-checkpointing", "default") is not None

    off = finished(api, api.update_features(TAG, {"tieredCheckpointing": {"enabled": False}}))

    assert off["status"] == "SUCCEEDED", off
    assert sm.describe_cluster(ClusterName=f"hp-cluster-{TAG}")["TieredStorageConfig"]["Mode"] == "Disable"
    assert eks.list_pod_identity_associations(clusterName=EKS_NAME, namespace="default")["associations"] == []
    with pytest.raises(iam.exceptions.NoSuchEntityException):
        iam.get_role(RoleName=f"instantstart-{TAG}-tiered-checkpointing")
    assert kube.get("v1", "ServiceAccount", "tiered-checkpointing", "default") is None
    agent = addon(sandbox, "eks-pod-identity-agent")
    assert agent is not None and agent["status"] == "ACTIVE"  # the create workflow's, still needed


def test_when_kuberay_goes_on_then_off_then_the_operator_objects_exist_then_none_is_left(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    kube = sandbox.kube.cluster(EKS_NAME)

    on = finished(api, api.update_features(TAG, {"kubeRay": {"enabled": True}}))

    assert on["status"] == "SUCCEEDED", on
    assert on["features"]["kubeRay"]["result"] == "changed"
    deployment = kube.get("apps/v1", "Deployment", "kuberay-operator", "kuberay-system")
    assert deployment is not None
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "quay.io/kuberay/operator:v1.3.2"
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "kuberay-operator"
    for plural in ("rayclusters", "rayjobs", "rayservices"):
        assert kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", f"{plural}.ray.io") is not None
    binding = kube.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "kuberay-operator")
    assert binding is not None and binding["subjects"][0]["namespace"] == "kuberay-system"
    shown = api.get_features(TAG)["features"]["kubeRay"]  # read from Kubernetes by the API
    assert shown["enabled"] is True and shown["kubernetesUnknown"] == {}
    assert "Deployment/kuberay-system/kuberay-operator" in shown["kubernetesObjects"]
    assert "CustomResourceDefinition/rayjobs.ray.io" in shown["kubernetesObjects"]

    calls = sandbox.aws.extension.calls
    calls.reset()
    again = finished(api, api.update_features(TAG, {"kubeRay": {"enabled": True}}))
    assert again["features"]["kubeRay"] == {"result": "unchanged", "error": None, "actions": []}
    assert calls.writes(*RESOURCE_SERVICES) == []

    off = finished(api, api.update_features(TAG, {"kubeRay": {"enabled": False}}))

    assert off["status"] == "SUCCEEDED", off
    assert off["features"]["kubeRay"]["result"] == "changed"
    assert kube.get("apps/v1", "Deployment", "kuberay-operator", "kuberay-system") is None
    assert kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "rayclusters.ray.io") is None
    assert kube.get("rbac.authorization.k8s.io/v1", "ClusterRole", "kuberay-operator") is None
    assert kube.get("v1", "Namespace", "kuberay-system") is None
    shown = api.get_features(TAG)["features"]["kubeRay"]
    assert shown["enabled"] is False and shown["kubernetesObjects"] == [] and shown["kubernetesUnknown"] == {}


def test_when_the_cluster_is_created_then_the_api_role_has_a_read_only_access_entry_owned_by_the_cluster(
    cluster: Any, sandbox: Sandbox
) -> None:
    api_role = sandbox.deployment.environment["API_ROLE_ARN"] if sandbox.deployment else ""
    eks = boto3.client("eks", region_name=sandbox.region)

    entry = eks.describe_access_entry(clusterName=EKS_NAME, principalArn=api_role)["accessEntry"]
    policies = eks.list_associated_access_policies(clusterName=EKS_NAME, principalArn=api_role)

    assert ":role/" in api_role and api_role != sandbox.deployment.environment["CONTROL_PLANE_ROLE_ARN"]
    assert entry["tags"]["instantstart:cluster-tag"] == TAG
    assert [
        (p["policyArn"].rsplit("/", 1)[1], p["accessScope"]["type"]) for p in policies["associatedAccessPolicies"]
    ] == [("AmazonEKSViewPolicy", "cluster")]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kubeFlow": {"enabled": True}}, "kubeFlow"),
        (
            {"tieredCheckpointing": {"enabled": True, "instanceMemoryAllocationPercentage": 101}},
            "tieredCheckpointing.instanceMemoryAllocationPercentage",
        ),
        ({"trainingOperator": {"enabled": True, "version": "v9.9.9-eksbuild.1"}}, "trainingOperator.version"),
    ],
)
def test_when_the_body_names_an_unknown_feature_or_a_bad_value_then_422_names_the_field(
    cluster: Any, api: InstantStartClient, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(ApiError) as info:
        api.update_features(TAG, body)

    assert info.value.status == 422
    assert info.value.details[0]["field"] == field
    if field == "kubeFlow":
        assert "trainingOperator" in info.value.message and "tieredCheckpointing" in info.value.message
    if field == "trainingOperator.version":
        assert info.value.details[0]["allowedValues"]


def test_when_a_pinned_version_rejects_inline_pod_identity_then_the_association_is_created_apart_and_removed_with_off(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    """v1.0.0 of the inference operator predates inline podIdentityAssociations on CreateAddon (the sandbox refuses
    them as EKS does): the feature falls back to CreatePodIdentityAssociation, and off deletes that association."""
    eks = boto3.client("eks", region_name=sandbox.region)
    namespace = "hyperpod-inference-system"
    off = finished(api, api.update_features(TAG, {"inferenceOperator": {"enabled": False}}))
    assert off["status"] == "SUCCEEDED", off
    wait_gone(sandbox, "amazon-sagemaker-hyperpod-inference")

    pinned = {"inferenceOperator": {"enabled": True, "version": "v1.0.0-eksbuild.1"}}
    on = finished(api, api.update_features(TAG, pinned))

    assert on["status"] == "SUCCEEDED", on
    inference = addon(sandbox, "amazon-sagemaker-hyperpod-inference")
    assert inference is not None and inference["addonVersion"] == "v1.0.0-eksbuild.1"
    assert not inference.get("podIdentityAssociations")
    found = eks.list_pod_identity_associations(clusterName=EKS_NAME, namespace=namespace)["associations"]
    assert [(a["serviceAccount"], a.get("ownerArn")) for a in found] == [
        ("hyperpod-inference-operator-controller-manager", None)
    ]

    off = finished(api, api.update_features(TAG, {"inferenceOperator": {"enabled": False}}))

    assert off["status"] == "SUCCEEDED", off
    assert eks.list_pod_identity_associations(clusterName=EKS_NAME, namespace=namespace)["associations"] == []


def test_given_create_answers_lost_when_a_feature_goes_on_then_it_takes_its_own_addon_and_role_and_succeeds(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    """AWS makes the add-on and the role but the answers never arrive; botocore's retry meets "already exists"
    (EKS ``ResourceInUseException``, IAM ``EntityAlreadyExists``) and the operation takes what carries its tags."""
    faults = sandbox.aws.extension.faults
    calls = sandbox.aws.extension.calls
    calls.reset()
    faults.timeout("eks", "CreateAddon", kind="read-timeout")
    faults.timeout("iam", "CreateRole", kind="read-timeout")
    try:
        on = finished(api, api.update_features(TAG, {"trainingOperator": {"enabled": True}}))
    finally:
        faults.clear()

    assert on["status"] == "SUCCEEDED", on
    assert on["features"]["trainingOperator"]["result"] == "changed"
    made = [c.operation for c in calls.writes("eks", "iam") if c.operation in ("CreateAddon", "CreateRole")]
    assert made.count("CreateAddon") == 2 and made.count("CreateRole") == 2  # each answer lost once, then retried
    operator = addon(sandbox, "amazon-sagemaker-hyperpod-training-operator")
    assert operator is not None and operator["tags"]["instantstart:cluster-tag"] == TAG
    off = finished(api, api.update_features(TAG, {"trainingOperator": {"enabled": False}}))
    assert off["status"] == "SUCCEEDED", off
