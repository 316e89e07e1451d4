"""Managed features in the AWS sandbox: add-on catalogue, pod identity, tiered storage, task governance,
FSx for Lustre, foreign EKS clusters and the AWS call recorder (through boto3 and the official
Kubernetes client against the real sandbox Kubernetes API)."""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

try:
    from tests.sandbox.conftest_aws import REGION, clock, unique, wait_for
except ImportError:  # rootdir not on sys.path
    from conftest_aws import REGION, clock, unique, wait_for  # type: ignore[no-redef]  # noqa: F401

from instantstart_sandbox.aws import fsx as fsx_emulator
from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.clock import SimClock

kube_server = pytest.importorskip("instantstart_sandbox.kube.server")
kubernetes = pytest.importorskip("kubernetes")

Client = Callable[[str], Any]
TRAINING = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE = "amazon-sagemaker-hyperpod-inference"
GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"


@pytest.fixture(scope="module")
def server(clock: SimClock) -> Iterator[AwsSandboxServer]:
    """An AwsSandboxServer in front of the real sandbox KubeApiServer."""
    api = kube_server.KubeApiServer(clock=clock)
    api.start()
    aws = AwsSandboxServer(clock, api)
    aws.start()
    yield aws
    aws.stop()
    api.stop()


@pytest.fixture(scope="module")
def sb(server: AwsSandboxServer) -> Client:
    clients: dict[str, Any] = {}

    def make(service: str) -> Any:
        if service not in clients:
            clients[service] = boto3.client(
                service,
                endpoint_url=server.endpoint_url,
                region_name=REGION,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
        return clients[service]

    return make


def _kube(sb: Client, name: str) -> Any:
    cluster = sb("eks").describe_cluster(name=name)["cluster"]
    ca = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)  # noqa: SIM115 - kept for the client
    ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]).decode())
    ca.close()
    config = kubernetes.client.Configuration()
    config.host = cluster["endpoint"]
    config.ssl_ca_cert = ca.name
    config.api_key = {"authorization": "Bearer k8s-aws-v1.test"}
    return kubernetes.client.ApiClient(config)


def _crds(api: Any) -> set[str]:
    return {c.metadata.name for c in kubernetes.client.ApiextensionsV1Api(api).list_custom_resource_definition().items}


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def test_given_a_kubernetes_version_when_describing_addon_versions_then_only_compatible_versions_are_listed(
    sb: Client,
) -> None:
    def versions(k8s: str) -> list[tuple[str, bool]]:
        addons = sb("eks").describe_addon_versions(addonName=TRAINING, kubernetesVersion=k8s)["addons"]
        assert [a["addonName"] for a in addons] == [TRAINING]
        return [(v["addonVersion"], v["compatibilities"][0]["defaultVersion"]) for v in addons[0]["addonVersions"]]

    assert versions("1.33") == [("v1.2.0-eksbuild.1", True), ("v1.1.0-eksbuild.1", False)]
    assert ("v1.0.0-eksbuild.1", False) in versions("1.31")
    assert all(
        v["requiresIamPermissions"]
        for v in sb("eks").describe_addon_versions(addonName=TRAINING)["addons"][0]["addonVersions"]
    )


def test_given_a_foreign_cluster_when_an_incompatible_addon_version_is_created_then_it_is_refused(
    server: AwsSandboxServer, sb: Client
) -> None:
    name = unique("foreign")
    server.extension.foreign.create(name, kubernetes_version="1.33")
    with pytest.raises(ClientError) as refused:
        sb("eks").create_addon(clusterName=name, addonName=TRAINING, addonVersion="v1.0.0-eksbuild.1")
    assert _code(refused) == "InvalidParameterException"
    assert "1.33" in refused.value.response["Error"]["Message"]


def test_given_an_old_operator_version_when_inline_pod_identity_is_asked_then_refused_and_the_fallback_works(
    server: AwsSandboxServer, sb: Client
) -> None:
    eks = sb("eks")
    found = server.extension.foreign.create(unique("foreign"), kubernetes_version="1.31")
    name = found.eks_cluster_name
    sa = "hp-training-operator-controller-manager"
    old = "v1.0.0-eksbuild.1"
    assert "podIdentityConfiguration" not in eks.describe_addon_configuration(addonName=TRAINING, addonVersion=old)
    assert eks.describe_addon_configuration(addonName=TRAINING, addonVersion="v1.2.0-eksbuild.1")[
        "podIdentityConfiguration"
    ] == [{"serviceAccount": sa, "recommendedManagedPolicies": []}]
    with pytest.raises(ClientError) as refused:
        eks.create_addon(
            clusterName=name,
            addonName=TRAINING,
            addonVersion=old,
            podIdentityAssociations=[{"serviceAccount": sa, "roleArn": found.role_arn}],
        )
    assert _code(refused) == "InvalidParameterException"
    with pytest.raises(ClientError):
        eks.describe_addon(clusterName=name, addonName=TRAINING)  # nothing half-created
    eks.create_addon(clusterName=name, addonName=TRAINING, addonVersion=old)
    assoc = eks.create_pod_identity_association(
        clusterName=name, namespace="aws-hyperpod", serviceAccount=sa, roleArn=found.role_arn
    )["association"]
    assert "ownerArn" not in assoc


def test_given_operators_when_installed_then_their_crds_serve_and_validate_and_go_with_the_addon(
    server: AwsSandboxServer, sb: Client
) -> None:
    eks = sb("eks")
    found = server.extension.foreign.create(
        unique("foreign"), kubernetes_version="1.33", with_addons=["cert-manager", "eks-pod-identity-agent"]
    )
    name = found.eks_cluster_name
    created = eks.create_addon(
        clusterName=name,
        addonName=TRAINING,
        podIdentityAssociations=[
            {"serviceAccount": "hp-training-operator-controller-manager", "roleArn": found.role_arn}
        ],
    )["addon"]
    eks.create_addon(clusterName=name, addonName=INFERENCE)
    server.extension.eks.finish_addon(name, TRAINING)
    server.extension.eks.finish_addon(name, INFERENCE)
    api = _kube(sb, name)
    crds = _crds(api)
    assert {
        "hyperpodpytorchjobs.sagemaker.amazonaws.com",
        "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com",
        "jumpstartmodels.inference.sagemaker.aws.amazon.com",
    } <= crds

    associations = eks.list_pod_identity_associations(clusterName=name)["associations"]
    owned = [a for a in associations if a.get("ownerArn") == created["addonArn"]]
    assert [a["serviceAccount"] for a in owned] == ["hp-training-operator-controller-manager"]
    with pytest.raises(ClientError):
        eks.delete_pod_identity_association(clusterName=name, associationId=owned[0]["associationId"])

    custom = kubernetes.client.CustomObjectsApi(api)
    kubernetes.client.CoreV1Api(api).create_namespace({"metadata": {"name": "serving"}})
    with pytest.raises(kubernetes.client.ApiException) as invalid:
        custom.create_namespaced_custom_object(
            "inference.sagemaker.aws.amazon.com",
            "v1",
            "serving",
            "inferenceendpointconfigs",
            {
                "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
                "kind": "InferenceEndpointConfig",
                "metadata": {"name": "bad"},
                "spec": {"modelName": "m"},
            },
        )
    assert invalid.value.status == 422
    jumpstart = custom.create_namespaced_custom_object(
        "inference.sagemaker.aws.amazon.com",
        "v1",
        "serving",
        "jumpstartmodels",
        {
            "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
            "kind": "JumpStartModel",
            "metadata": {"name": "js"},
            "spec": {
                "model": {"modelId": "llama-3-8b", "acceptEula": True},
                "server": {"instanceType": "ml.g5.8xlarge"},
            },
        },
    )
    assert jumpstart["spec"]["replicas"] == 1  # the CRD's default

    eks.delete_addon(clusterName=name, addonName=TRAINING)
    wait_for(lambda: "hyperpodpytorchjobs.sagemaker.amazonaws.com" not in _crds(api))
    assert eks.list_pod_identity_associations(clusterName=name)["associations"] == []
    assert "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com" in _crds(api)


def test_given_a_foreign_cluster_then_nothing_carries_ownership_tags_and_config_map_mode_is_kept(
    server: AwsSandboxServer, sb: Client
) -> None:
    found = server.extension.foreign.create(
        unique("foreign"), authentication_mode="CONFIG_MAP", with_addons=["vpc-cni"]
    )
    cluster = sb("eks").describe_cluster(name=found.eks_cluster_name)["cluster"]
    assert cluster["status"] == "ACTIVE" and cluster["endpoint"]
    assert cluster["accessConfig"]["authenticationMode"] == "CONFIG_MAP"
    assert (
        sb("eks").describe_addon(clusterName=found.eks_cluster_name, addonName="vpc-cni")["addon"]["status"] == "ACTIVE"
    )
    tags = [
        cluster["tags"],
        {t["Key"]: t["Value"] for t in sb("ec2").describe_vpcs(VpcIds=[found.vpc_id])["Vpcs"][0]["Tags"]},
        {t["Key"]: t["Value"] for t in sb("ec2").describe_subnets(SubnetIds=found.subnet_ids)["Subnets"][0]["Tags"]},
    ]
    assert all(tag and not any(k.startswith("instantstart") for k in tag) for tag in tags)
    with pytest.raises(ClientError) as refused:
        server.extension.foreign.create(unique("foreign"), authentication_mode="CONFIG_MAP", with_hyperpod=True)
    assert _code(refused) == "ValidationException"


@pytest.fixture(scope="module")
def hyperpod(server: AwsSandboxServer, sb: Client) -> Any:
    """A foreign EKS cluster with a HyperPod cluster, InService."""
    found = server.extension.foreign.create(unique("foreign"), with_hyperpod=True)
    sm = sb("sagemaker")
    wait_for(lambda: sm.describe_cluster(ClusterName=found.hyperpod_cluster_name)["ClusterStatus"] == "InService")
    return found


def test_given_a_hyperpod_cluster_when_tiered_storage_is_updated_then_it_round_trips_and_out_of_range_is_refused(
    sb: Client, hyperpod: Any
) -> None:
    sm = sb("sagemaker")
    with pytest.raises(ClientError) as refused:
        sm.update_cluster(
            ClusterName=hyperpod.hyperpod_cluster_name,
            TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 101},
        )
    assert _code(refused) == "ValidationException"
    assert "less than or equal to 100" in refused.value.response["Error"]["Message"]
    sm.update_cluster(
        ClusterName=hyperpod.hyperpod_cluster_name,
        TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 40},
    )
    described = sm.describe_cluster(ClusterName=hyperpod.hyperpod_cluster_name)
    assert described["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 40}


def test_given_task_governance_when_quotas_and_priorities_are_set_then_statuses_settle_and_kueue_objects_follow(
    server: AwsSandboxServer, sb: Client, hyperpod: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also the order of the emulator's timers: the Kueue objects are written while the resource still reads
    Creating/Updating (whoever reads Created finds them) and removed while it is still listed as Deleting."""
    sm, eks = sb("sagemaker"), sb("eks")
    governance = server.extension.task_governance
    seen: list[tuple[str, str, str, bool]] = []
    materialise, remove = governance._materialise, governance._remove_objects

    def materialising(resource: Any) -> None:
        seen.append(("write", resource.kind, resource.status, resource.id in governance._resources))
        materialise(resource)

    def removing(resource: Any) -> None:
        seen.append(("remove", resource.kind, resource.status, resource.id in governance._resources))
        remove(resource)

    monkeypatch.setattr(governance, "_materialise", materialising)
    monkeypatch.setattr(governance, "_remove_objects", removing)
    arn = hyperpod.hyperpod_cluster_arn
    quota = {
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": [{"InstanceType": "ml.g5.8xlarge", "Count": 2}],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
        },
        "ComputeQuotaTarget": {"TeamName": "research", "FairShareWeight": 10},
    }
    with pytest.raises(ClientError) as not_installed:
        sm.create_compute_quota(Name="research", ClusterArn=arn, **quota)
    assert _code(not_installed) == "ValidationException"

    eks.create_addon(clusterName=hyperpod.eks_cluster_name, addonName=GOVERNANCE)
    server.extension.eks.finish_addon(hyperpod.eks_cluster_name, GOVERNANCE)
    wait_for(
        lambda: (
            eks.describe_addon(clusterName=hyperpod.eks_cluster_name, addonName=GOVERNANCE)["addon"]["status"]
            == "ACTIVE"
        ),
        timeout=20,
    )
    quota_id = sm.create_compute_quota(Name="research", ClusterArn=arn, **quota)["ComputeQuotaId"]
    # 30 simulated seconds are 10 wall ms at this clock: a loaded machine may read it already settled
    assert sm.describe_compute_quota(ComputeQuotaId=quota_id)["Status"] in ("Creating", "Created")
    with pytest.raises(ClientError) as duplicate:
        sm.create_compute_quota(Name="research-2", ClusterArn=arn, **quota)
    assert _code(duplicate) == "ConflictException"
    wait_for(lambda: sm.describe_compute_quota(ComputeQuotaId=quota_id)["Status"] == "Created")

    custom = kubernetes.client.CustomObjectsApi(_kube(sb, hyperpod.eks_cluster_name))
    queue = custom.get_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta1", "clusterqueues", "hyperpod-ns-research-clusterqueue"
    )
    resources = {r["name"]: r["nominalQuota"] for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert resources["nvidia.com/gpu"] == 2 and resources["cpu"] == 64
    assert (
        custom.get_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta1", "hyperpod-ns-research", "localqueues", "hyperpod-ns-research-localqueue"
        )["spec"]["clusterQueue"]
        == "hyperpod-ns-research-clusterqueue"
    )

    config_id = sm.create_cluster_scheduler_config(
        Name="policy",
        ClusterArn=arn,
        SchedulerConfig={"PriorityClasses": [{"Name": "inference", "Weight": 100}], "FairShare": "Enabled"},
    )["ClusterSchedulerConfigId"]
    wait_for(lambda: sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)["Status"] == "Created")
    assert (
        custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "workloadpriorityclasses", "inference")["value"]
        == 100
    )
    with pytest.raises(ClientError) as stale:
        sm.update_cluster_scheduler_config(ClusterSchedulerConfigId=config_id, TargetVersion=7, SchedulerConfig={})
    assert _code(stale) == "ConflictException"
    updated = sm.update_cluster_scheduler_config(
        ClusterSchedulerConfigId=config_id,
        TargetVersion=1,
        SchedulerConfig={"PriorityClasses": [{"Name": "training", "Weight": 50}]},
    )
    assert updated["ClusterSchedulerConfigVersion"] == 2
    wait_for(lambda: sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)["Status"] == "Updated")
    names = {
        o["metadata"]["name"]
        for o in custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "workloadpriorityclasses")["items"]
    }
    assert names == {"training"}
    assert (
        sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id, ClusterSchedulerConfigVersion=1)[
            "SchedulerConfig"
        ]["PriorityClasses"][0]["Name"]
        == "inference"
    )

    sm.delete_compute_quota(ComputeQuotaId=quota_id)
    wait_for(lambda: not sm.list_compute_quotas(ClusterArn=arn)["ComputeQuotaSummaries"])
    with pytest.raises(kubernetes.client.ApiException):
        custom.get_cluster_custom_object(
            "kueue.x-k8s.io", "v1beta1", "clusterqueues", "hyperpod-ns-research-clusterqueue"
        )
    assert seen == [
        ("write", "quota", "Creating", True),
        ("write", "scheduler", "Creating", True),
        ("write", "scheduler", "Updating", True),
        ("remove", "quota", "Deleting", True),
    ], seen


def test_given_an_fsx_for_lustre_file_system_then_it_validates_becomes_available_blocks_its_subnet_and_deletes(
    server: AwsSandboxServer, sb: Client
) -> None:
    fsx, ec2 = sb("fsx"), sb("ec2")
    found = server.extension.foreign.create(unique("foreign"))
    base = {
        "FileSystemType": "LUSTRE",
        "StorageCapacity": 1200,
        "SubnetIds": found.subnet_ids[:1],
        "SecurityGroupIds": [found.security_group_id],
    }
    with pytest.raises(ClientError) as throughput:
        fsx.create_file_system(
            **base, LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 200}
        )
    assert _code(throughput) == "InvalidPerUnitStorageThroughput"
    with pytest.raises(ClientError) as capacity:
        fsx.create_file_system(
            **{**base, "StorageCapacity": 1000},
            LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125},
        )
    assert _code(capacity) == "BadRequest"

    created = fsx.create_file_system(
        **base,
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125},
        Tags=[{"Key": "purpose", "Value": "checkpoints"}],
    )["FileSystem"]
    fs_id = created["FileSystemId"]
    assert created["Lifecycle"] == "CREATING"
    assert created["DNSName"] == f"{fs_id}.fsx.{REGION}.amazonaws.com"
    assert len(created["LustreConfiguration"]["MountName"]) == 8
    assert created["Tags"] == [{"Key": "purpose", "Value": "checkpoints"}]
    wait_for(lambda: fsx.describe_file_systems(FileSystemIds=[fs_id])["FileSystems"][0]["Lifecycle"] == "AVAILABLE")
    with pytest.raises(ClientError) as in_use:
        ec2.delete_subnet(SubnetId=found.subnet_ids[0])
    assert _code(in_use) == "DependencyViolation"

    assert fsx.delete_file_system(FileSystemId=fs_id)["Lifecycle"] == "DELETING"

    def gone() -> bool:
        try:
            fsx.describe_file_systems(FileSystemIds=[fs_id])
        except ClientError as exc:
            return exc.response["Error"]["Code"] == "FileSystemNotFound"
        return False

    wait_for(gone)
    ec2.delete_subnet(SubnetId=found.subnet_ids[0])


def test_given_the_call_recorder_when_reads_and_writes_are_made_then_only_writes_count_as_writes(
    server: AwsSandboxServer, sb: Client
) -> None:
    found = server.extension.foreign.create(unique("foreign"))
    calls = server.extension.calls
    calls.reset()
    sb("eks").describe_cluster(name=found.eks_cluster_name)
    sb("eks").list_addons(clusterName=found.eks_cluster_name)
    sb("ec2").describe_vpcs(VpcIds=[found.vpc_id])
    assert calls.writes() == []
    assert calls.counts("eks") == {("eks", "DescribeCluster"): 1, ("eks", "ListAddons"): 1}
    sb("eks").create_addon(clusterName=found.eks_cluster_name, addonName="metrics-server")
    sb("iam").create_role(RoleName=unique("r"), AssumeRolePolicyDocument="{}")
    assert [(c.service, c.operation) for c in calls.writes()] == [("eks", "CreateAddon"), ("iam", "CreateRole")]
    assert [c.operation for c in calls.writes("eks")] == ["CreateAddon"]
    calls.reset()
    assert calls.calls() == []


def test_given_task_governance_resources_then_their_tags_list_and_the_hyperpod_cluster_cannot_be_deleted_until_gone(
    server: AwsSandboxServer, sb: Client, hyperpod: Any
) -> None:
    sm, eks = sb("sagemaker"), sb("eks")
    arn = hyperpod.hyperpod_cluster_arn
    if GOVERNANCE not in eks.list_addons(clusterName=hyperpod.eks_cluster_name)["addons"]:
        eks.create_addon(clusterName=hyperpod.eks_cluster_name, addonName=GOVERNANCE)
    server.extension.eks.finish_addon(hyperpod.eks_cluster_name, GOVERNANCE)
    tags = [{"Key": "instantstart:managed", "Value": "true"}]
    created = sm.create_compute_quota(
        Name="tagged",
        ClusterArn=arn,
        ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": "ml.g5.8xlarge", "Count": 1}]},
        ComputeQuotaTarget={"TeamName": "tagged"},
        Tags=tags,
    )
    assert sm.list_tags(ResourceArn=created["ComputeQuotaArn"])["Tags"] == tags

    with pytest.raises(ClientError) as refused:
        sm.delete_cluster(ClusterName=hyperpod.hyperpod_cluster_name)
    assert _code(refused) == "ValidationException"
    assert "tagged" in refused.value.response["Error"]["Message"]
    assert sm.describe_cluster(ClusterName=hyperpod.hyperpod_cluster_name)["ClusterStatus"] == "InService"

    for summary in sm.list_compute_quotas(ClusterArn=arn)["ComputeQuotaSummaries"]:
        sm.delete_compute_quota(ComputeQuotaId=summary["ComputeQuotaId"])
    for summary in sm.list_cluster_scheduler_configs(ClusterArn=arn)["ClusterSchedulerConfigSummaries"]:
        sm.delete_cluster_scheduler_config(ClusterSchedulerConfigId=summary["ClusterSchedulerConfigId"])
    # (while they are Deleting the refusal stands; 30 simulated s are 10 wall ms here, too short to assert)
    wait_for(
        lambda: (
            not sm.list_compute_quotas(ClusterArn=arn)["ComputeQuotaSummaries"]
            and not sm.list_cluster_scheduler_configs(ClusterArn=arn)["ClusterSchedulerConfigSummaries"]
        )
    )
    sm.delete_cluster(ClusterName=hyperpod.hyperpod_cluster_name)
    assert sm.describe_cluster(ClusterName=hyperpod.hyperpod_cluster_name)["ClusterStatus"] == "Deleting"


def _fsx_error(call: Callable[[], Any]) -> tuple[str, str]:
    with pytest.raises(ClientError) as refused:
        call()
    return refused.value.response["Error"]["Code"], refused.value.response["Error"]["Message"]


def test_given_lustre_file_systems_when_data_repository_associations_are_made_then_fsx_rules_hold_and_writes_export(
    server: AwsSandboxServer, sb: Client, clock: SimClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CREATING for an hour of simulated time (6 s of wall time here): long enough that the refusals below see it
    # CREATING on a loaded machine
    monkeypatch.setattr(fsx_emulator, "DRA_CREATE_SECONDS", 3600.0)
    fsx, s3 = sb("fsx"), sb("s3")
    found = server.extension.foreign.create(unique("dra"))
    base = {
        "FileSystemType": "LUSTRE",
        "StorageCapacity": 1200,
        "SubnetIds": found.subnet_ids[:1],
        "SecurityGroupIds": [found.security_group_id],
    }
    scratch = fsx.create_file_system(**base, LustreConfiguration={"DeploymentType": "SCRATCH_1"})["FileSystem"]
    persistent = fsx.create_file_system(
        **base, LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125}
    )["FileSystem"]
    assert (scratch["FileSystemTypeVersion"], persistent["FileSystemTypeVersion"]) == ("2.10", "2.12")
    bucket = unique("dra-bucket")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    fs_id = persistent["FileSystemId"]
    dra = {
        "FileSystemId": fs_id,
        "FileSystemPath": "/models",
        "DataRepositoryPath": f"s3://{bucket}/fsx/models/",
        "S3": {"AutoExportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}},
        "ClientRequestToken": "models-1",
    }

    for fs in (scratch, persistent):
        wait_for(
            lambda f=fs: (
                fsx.describe_file_systems(FileSystemIds=[f["FileSystemId"]])["FileSystems"][0]["Lifecycle"]
                == "AVAILABLE"
            )
        )
    code, message = _fsx_error(
        lambda: fsx.create_data_repository_association(**{**dra, "FileSystemId": scratch["FileSystemId"]})
    )
    assert code == "UnsupportedOperation" and "SCRATCH_1" in message

    created = fsx.create_data_repository_association(**dra)["Association"]
    assert created["Lifecycle"] == "CREATING" and created["AssociationId"].startswith("dra-")
    again = fsx.create_data_repository_association(**dra)["Association"]
    assert again["AssociationId"] == created["AssociationId"]
    assert _fsx_error(lambda: fsx.create_data_repository_association(**{**dra, "FileSystemPath": "/other"}))[0] == (
        "IncompatibleParameterError"
    )
    code, message = _fsx_error(
        lambda: fsx.create_data_repository_association(
            **{
                **dra,
                "FileSystemPath": "/models/big",
                "DataRepositoryPath": f"s3://{bucket}/big/",
                "ClientRequestToken": "b",
            }
        )
    )
    assert code == "BadRequest" and "overlap" in message
    assert _fsx_error(lambda: fsx.delete_data_repository_association(AssociationId=created["AssociationId"]))[0] == (
        "BadRequest"
    )
    listed = fsx.describe_data_repository_associations(Filters=[{"Name": "file-system-id", "Values": [fs_id]}])
    assert [a["AssociationId"] for a in listed["Associations"]] == [created["AssociationId"]]
    wait_for(
        lambda: (
            fsx.describe_data_repository_associations(AssociationIds=[created["AssociationId"]])["Associations"][0][
                "Lifecycle"
            ]
            == "AVAILABLE"
        )
    )

    written_at = clock.now()
    server.extension.fsx.write_files(
        fs_id, [("/models/org/tiny/config.json", b"{}"), ("/scratch/notes.txt", b"not exported")]
    )

    def exported() -> list[str]:
        return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]

    assert wait_for(exported) == ["fsx/models/org/tiny/config.json"]
    assert clock.now() - written_at >= 90.0  # FSx exports asynchronously
    assert s3.get_object(Bucket=bucket, Key="fsx/models/org/tiny/config.json")["Body"].read() == b"{}"

    deleting = fsx.delete_data_repository_association(
        AssociationId=created["AssociationId"], DeleteDataInFileSystem=False
    )
    assert deleting["Lifecycle"] == "DELETING"

    def dra_gone() -> bool:
        try:
            fsx.describe_data_repository_associations(AssociationIds=[created["AssociationId"]])
        except ClientError as exc:
            return exc.response["Error"]["Code"] == "DataRepositoryAssociationNotFound"
        return False

    wait_for(dra_gone)
    assert server.extension.fsx.files(fs_id) == {"/models/org/tiny/config.json": 2, "/scratch/notes.txt": 12}
    for fs in (scratch, persistent):
        fsx.delete_file_system(FileSystemId=fs["FileSystemId"])
