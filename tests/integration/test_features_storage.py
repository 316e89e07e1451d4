"""Given a READY cluster in the sandbox, when a user turns ``fsx`` on with a new FSx for Lustre file system and off
again through the HTTP API, then FSx, EC2, EKS, IAM and Kubernetes hold exactly what the feature created and then
nothing of it; a model downloaded to fsx is listed by ``GET /models`` (read from the bucket prefix the file system's
data repository association exports to); and a cluster deleted with its file system still there ends DELETED with
no file system left."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.aws.calls import RESOURCE_SERVICES
from instantstart_sandbox.kube.inference import model_files
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, eventually, terminal
from tests.integration.test_features import finished

TAG = "lustre"
EKS_NAME = f"eks-cluster-{TAG}"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
BODY = {
    "fsx": {
        "enabled": True,
        "fileSystem": {"storageCapacity": 1200, "deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": 250},
    }
}


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``lustre`` cluster (one node), created once for this module and READY."""
    api.create_cluster(TAG, "us-west-2c", [GROUP])
    deadline = time.monotonic() + 240
    found: dict[str, Any] = dict(api.get_cluster(TAG))
    while not terminal(found) and time.monotonic() < deadline:
        time.sleep(0.5)
        found = dict(api.get_cluster(TAG))
    assert found["status"] == "READY", found["stages"]
    return found


def file_systems(sandbox: Sandbox) -> list[dict[str, Any]]:
    fsx = boto3.client("fsx", region_name=sandbox.region)
    return [
        fs
        for fs in fsx.describe_file_systems()["FileSystems"]
        if {"Key": "instantstart:cluster-tag", "Value": TAG} in fs.get("Tags", [])
    ]


def fsx_groups(sandbox: Sandbox) -> list[dict[str, Any]]:
    ec2 = boto3.client("ec2", region_name=sandbox.region)
    return list(
        ec2.describe_security_groups(
            Filters=[
                {"Name": "tag:instantstart:cluster-tag", "Values": [TAG]},
                {"Name": "tag:instantstart:role", "Values": ["fsx-sg"]},
            ]
        )["SecurityGroups"]
    )


def associations(sandbox: Sandbox, fs_id: str) -> list[dict[str, Any]]:
    fsx = boto3.client("fsx", region_name=sandbox.region)
    found = fsx.describe_data_repository_associations(Filters=[{"Name": "file-system-id", "Values": [fs_id]}])
    return list(found["Associations"])


def test_when_fsx_goes_on_with_a_file_system_then_the_driver_the_file_system_and_fsx_claim_exist(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    op = api.update_features(TAG, BODY)
    done = finished(api, op)

    assert done["status"] == "SUCCEEDED", done
    assert done["features"]["fsx"]["result"] == "changed"
    [fs] = file_systems(sandbox)
    assert fs["Lifecycle"] == "AVAILABLE" and fs["StorageCapacity"] == 1200
    assert fs["LustreConfiguration"]["PerUnitStorageThroughput"] == 250
    hp = boto3.client("sagemaker", region_name=sandbox.region).describe_cluster(ClusterName=f"hp-cluster-{TAG}")
    assert fs["SubnetIds"] == hp["VpcConfig"]["Subnets"]
    [group] = fsx_groups(sandbox)
    ec2 = boto3.client("ec2", region_name=sandbox.region)
    [eni] = ec2.describe_network_interfaces(NetworkInterfaceIds=fs["NetworkInterfaceIds"])["NetworkInterfaces"]
    assert {g["GroupId"] for g in eni["Groups"]} == {group["GroupId"], *hp["VpcConfig"]["SecurityGroupIds"]}
    ports = {(p["FromPort"], p["ToPort"]) for p in group["IpPermissions"] if p["IpProtocol"] == "tcp"}
    assert ports == {(988, 988), (1018, 1023)}
    sources = {pair["GroupId"] for p in group["IpPermissions"] for pair in p["UserIdGroupPairs"]}
    assert sources == {group["GroupId"], *hp["VpcConfig"]["SecurityGroupIds"]}

    kube = sandbox.kube.cluster(EKS_NAME)
    pv = kube.get("v1", "PersistentVolume", "fsx-pv")
    assert pv is not None
    assert pv["spec"]["csi"]["driver"] == "fsx.csi.aws.com"
    assert pv["spec"]["csi"]["volumeHandle"] == fs["FileSystemId"]
    assert pv["spec"]["csi"]["volumeAttributes"] == {
        "dnsname": fs["DNSName"],
        "mountname": fs["LustreConfiguration"]["MountName"],
    }
    claim = kube.get("v1", "PersistentVolumeClaim", "fsx-claim", "default")
    assert claim is not None and claim["spec"]["volumeName"] == "fsx-pv"

    eks = boto3.client("eks", region_name=sandbox.region)
    assert eks.describe_addon(clusterName=EKS_NAME, addonName="aws-fsx-csi-driver")["addon"]["status"] == "ACTIVE"
    assocs = eks.list_pod_identity_associations(clusterName=EKS_NAME, namespace="kube-system")["associations"]
    assert "fsx-csi-controller-sa" in [a["serviceAccount"] for a in assocs]

    assert fs["FileSystemTypeVersion"] == "2.15"
    [dra] = associations(sandbox, fs["FileSystemId"])
    bucket = api.list_models(TAG)["bucket"]
    assert (dra["Lifecycle"], dra["FileSystemPath"]) == ("AVAILABLE", "/models")
    assert dra["DataRepositoryPath"] == f"s3://{bucket}/fsx/models/"
    assert dra["S3"] == {"AutoExportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}}
    assert {"Key": "instantstart:cluster-tag", "Value": TAG} in dra["Tags"]

    state = api.get_features(TAG)["features"]["fsx"]
    assert state["enabled"] is True
    assert [f["fileSystemId"] for f in state["fileSystems"]] == [fs["FileSystemId"]]
    assert [a["associationId"] for a in state["fileSystems"][0]["dataRepositoryAssociations"]] == [dra["AssociationId"]]
    assert state["securityGroups"] == [group["GroupId"]]


def test_when_a_model_is_downloaded_to_fsx_then_get_models_lists_it_from_the_file_systems_export(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    before = api.list_models(TAG)
    assert before["fsx"]["listed"] is True and before["fsx"]["reason"] is None
    assert [m for m in before["models"] if m["destination"] == "fsx"] == []

    accepted = api.download_model(TAG, {"source": "huggingface", "modelId": MODEL, "destination": "fsx"})
    done = finished(api, accepted["operation"])
    assert done["status"] == "SUCCEEDED", done

    def fsx_models() -> list[dict[str, Any]]:
        return [m for m in api.list_models(TAG)["models"] if m["destination"] == "fsx"]

    [model] = eventually(fsx_models, lambda found: len(found) == 1 and found[0]["files"] == 3)
    files = model_files(MODEL)
    assert model["modelId"] == MODEL
    assert model["modelPath"] == model["location"] == f"/fsx/models/{MODEL}"
    assert model["sizeBytes"] == sum(len(body) for _, body in files)
    assert not any(m["modelId"].startswith("fsx/") for m in api.list_models(TAG)["models"])


def test_when_the_same_fsx_body_is_sent_again_then_it_is_unchanged_and_nothing_is_written(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    calls = sandbox.aws.extension.calls
    calls.reset()

    done = finished(api, api.update_features(TAG, BODY))

    assert done["status"] == "SUCCEEDED", done
    assert done["features"]["fsx"] == {"result": "unchanged", "error": None, "actions": []}
    assert calls.writes(*RESOURCE_SERVICES) == []
    assert len(file_systems(sandbox)) == 1


def test_when_fsx_goes_off_then_claim_file_system_security_group_add_on_and_role_are_gone(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    [fs] = file_systems(sandbox)
    [dra] = associations(sandbox, fs["FileSystemId"])

    done = finished(api, api.update_features(TAG, {"fsx": {"enabled": False}}))

    assert done["status"] == "SUCCEEDED", done
    assert done["features"]["fsx"]["result"] == "changed"
    assert f"DeleteDataRepositoryAssociation {dra['AssociationId']}" in done["features"]["fsx"]["actions"]
    fsx = boto3.client("fsx", region_name=sandbox.region)
    with pytest.raises(ClientError) as gone:
        fsx.describe_data_repository_associations(AssociationIds=[dra["AssociationId"]])
    assert gone.value.response["Error"]["Code"] == "DataRepositoryAssociationNotFound"
    models = api.list_models(TAG)
    assert models["fsx"]["listed"] is False and "no FSx for Lustre file system" in models["fsx"]["reason"]
    assert [m for m in models["models"] if m["destination"] == "fsx"] == []
    assert file_systems(sandbox) == []
    assert fsx_groups(sandbox) == []
    kube = sandbox.kube.cluster(EKS_NAME)
    assert kube.get("v1", "PersistentVolume", "fsx-pv") is None
    assert kube.get("v1", "PersistentVolumeClaim", "fsx-claim", "default") is None
    iam = boto3.client("iam", region_name=sandbox.region)
    with pytest.raises(iam.exceptions.NoSuchEntityException):
        iam.get_role(RoleName=f"instantstart-{TAG}-fsx-csi-driver")
    eks = boto3.client("eks", region_name=sandbox.region)
    deadline = time.monotonic() + 60
    while "aws-fsx-csi-driver" in eks.list_addons(clusterName=EKS_NAME)["addons"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "aws-fsx-csi-driver" not in eks.list_addons(clusterName=EKS_NAME)["addons"]
    agent = eks.describe_addon(clusterName=EKS_NAME, addonName="eks-pod-identity-agent")["addon"]
    assert agent["status"] == "ACTIVE"  # the create workflow's: still needed
    assert api.get_features(TAG)["features"]["fsx"]["enabled"] is False


@pytest.mark.parametrize(
    ("file_system", "field"),
    [
        ({"storageCapacity": 1300}, "fsx.fileSystem.storageCapacity"),
        ({"storageCapacity": 1200, "perUnitStorageThroughput": 300}, "fsx.fileSystem.perUnitStorageThroughput"),
        ({"storageCapacity": 1200, "deploymentType": "SCRATCH_2", "perUnitStorageThroughput": 125}, None),
        ({"storageCapacity": 1200, "deploymentType": "PERSISTENT_3"}, "fsx.fileSystem.deploymentType"),
    ],
)
def test_when_the_file_system_is_one_fsx_refuses_then_422_names_the_field_and_nothing_is_written(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox, file_system: dict[str, Any], field: str | None
) -> None:
    calls = sandbox.aws.extension.calls
    calls.reset()
    with pytest.raises(ApiError) as info:
        api.update_features(TAG, {"fsx": {"enabled": True, "fileSystem": file_system}})

    assert info.value.status == 422
    assert info.value.details[0]["field"] == (field or "fsx.fileSystem.perUnitStorageThroughput")
    assert calls.writes(*RESOURCE_SERVICES) == []


def test_when_the_cluster_is_deleted_with_its_file_system_then_it_ends_deleted_and_no_file_system_is_left(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    on = finished(api, api.update_features(TAG, BODY))
    assert on["status"] == "SUCCEEDED", on
    assert [fs["Lifecycle"] for fs in file_systems(sandbox)] == ["AVAILABLE"]

    deleted = finished(api, api.delete_cluster(TAG), timeout=300)

    assert deleted["status"] == "SUCCEEDED", deleted
    with pytest.raises(ApiError) as gone:
        api.get_cluster(TAG)
    assert gone.value.status == 404
    assert file_systems(sandbox) == []
    assert fsx_groups(sandbox) == []
    ec2 = boto3.client("ec2", region_name=sandbox.region)
    assert ec2.describe_vpcs(Filters=[{"Name": "tag:instantstart:cluster-tag", "Values": [TAG]}])["Vpcs"] == []
