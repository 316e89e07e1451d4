"""Rules of the ``fsx`` feature: which file systems FSx accepts, when fsx is in place (AWS and Kubernetes), what
"off" still has to remove, and the Kubernetes objects of ``fsx-claim``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from instantstart.errors import ValidationFailed
from instantstart.features import fsx
from instantstart.features.catalog import FEATURES, feature_role_name
from instantstart.features.observe import AddonObservation
from instantstart.features.plan import in_place
from instantstart.models.features import FsxRequest, LustreFileSystemRequest
from tests.unit.test_features_rules import TAG, active, observation

FS = fsx.FileSystemObservation(
    "fs-0123", "AVAILABLE", 1200, "PERSISTENT_2", 250, "fs-0123.fsx.aws", "abcdefgh", file_system_type_version="2.15"
)
BUCKET = "instantstart-demo-123456789012-us-west-2"
DRA = fsx.DataRepositoryAssociation(
    "dra-0123", "fs-0123", "AVAILABLE", "/models", f"s3://{BUCKET}/fsx/models/", owned=True
)


def lustre(**fields: Any) -> LustreFileSystemRequest:
    return LustreFileSystemRequest.model_validate({"storageCapacity": 1200, **fields})


def driver_on(**kubernetes: Any) -> Any:
    """A cluster where the driver, its role and association are in place."""
    obs = observation(
        eks_pod_identity_agent=active("eks-pod-identity-agent"),
        aws_fsx_csi_driver=active("aws-fsx-csi-driver", needers=frozenset({"fsx"})),
    )
    fo = obs.features["fsx"]
    role = FEATURES["fsx"].roles[0]
    fo.roles[feature_role_name(TAG, role)] = "arn:aws:iam::123456789012:role/x"
    fo.associations[(role.namespace, role.service_account)] = [object()]  # type: ignore[list-item]
    return obs


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"storageCapacity": 1300}, "fsx.fileSystem.storageCapacity"),
        ({"storageCapacity": 3600}, "fsx.fileSystem.storageCapacity"),
        ({"perUnitStorageThroughput": 200}, "fsx.fileSystem.perUnitStorageThroughput"),
        ({"deploymentType": "SCRATCH_2", "perUnitStorageThroughput": 125}, "fsx.fileSystem.perUnitStorageThroughput"),
    ],
)
def test_given_a_file_system_fsx_refuses_then_the_error_names_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        fsx.check_file_system(lustre(**fields), True)

    assert [d["field"] for d in info.value.details or []] == [field]


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"storageCapacity": 4800, "perUnitStorageThroughput": 1000},
        {"deploymentType": "SCRATCH_1", "storageCapacity": 3600},
        {"deploymentType": "PERSISTENT_1", "perUnitStorageThroughput": 50},
    ],
)
def test_given_a_file_system_fsx_accepts_then_there_is_no_error(fields: dict[str, Any]) -> None:
    assert fsx.file_system_errors(lustre(**fields)) == []


def test_given_a_file_system_with_fsx_off_then_it_is_refused() -> None:
    with pytest.raises(ValidationFailed) as info:
        fsx.check_file_system(lustre(), False)

    assert (info.value.details or [])[0]["field"] == "fsx.fileSystem"


def test_given_the_default_throughput_then_a_persistent_2_file_system_of_125_matches() -> None:
    assert fsx.matches(replace(FS, per_unit_storage_throughput=125), lustre())
    assert not fsx.matches(FS, lustre())
    assert fsx.matches(FS, lustre(perUnitStorageThroughput=250))
    assert not fsx.matches(FS, lustre(storageCapacity=2400, perUnitStorageThroughput=250))


def test_given_the_driver_only_then_on_without_a_file_system_is_in_place() -> None:
    assert in_place(FEATURES["fsx"], FsxRequest(enabled=True), driver_on())


def test_given_an_available_file_system_then_on_is_in_place_only_when_kubernetes_shows_the_claim() -> None:
    req = FsxRequest(enabled=True, file_system=lustre(perUnitStorageThroughput=250))
    obs = driver_on()
    fo = obs.features["fsx"]
    fo.file_systems, fo.security_group = [FS], "sg-1"

    assert not in_place(FEATURES["fsx"], req, obs)  # the API: Kubernetes not observed
    fo.kubernetes = {"PersistentVolume/fsx-pv"}
    assert not in_place(FEATURES["fsx"], req, obs)  # the claim is missing
    fo.kubernetes = {"PersistentVolume/fsx-pv", "PersistentVolumeClaim/default/fsx-claim"}
    assert not in_place(FEATURES["fsx"], req, obs)  # no models data repository association yet
    fo.data_repository_associations = [replace(DRA, lifecycle="CREATING")]
    assert not in_place(FEATURES["fsx"], req, obs)
    fo.data_repository_associations = [DRA]
    assert in_place(FEATURES["fsx"], req, obs)
    fo.file_systems = [replace(FS, lifecycle="CREATING")]
    assert not in_place(FEATURES["fsx"], req, obs)


def test_given_a_file_system_still_deleting_or_its_group_then_off_is_not_in_place() -> None:
    off = FsxRequest(enabled=False)
    obs = observation()
    fo = obs.features["fsx"]
    assert in_place(FEATURES["fsx"], off, obs)

    fo.file_systems = [replace(FS, lifecycle="DELETING")]
    assert not in_place(FEATURES["fsx"], off, obs)
    fo.file_systems, fo.security_group = [], "sg-1"
    assert not in_place(FEATURES["fsx"], off, obs)
    fo.security_group = None
    obs.addons["aws-fsx-csi-driver"] = AddonObservation("aws-fsx-csi-driver", "DELETING")
    assert in_place(FEATURES["fsx"], off, obs)


def test_given_an_available_file_system_then_the_claim_is_a_static_csi_volume_of_it() -> None:
    pv, pvc = fsx.claim_objects(FS)

    assert pv["kind"] == "PersistentVolume" and pvc["kind"] == "PersistentVolumeClaim"
    assert pv["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-0123",
        "volumeAttributes": {"dnsname": "fs-0123.fsx.aws", "mountname": "abcdefgh"},
    }
    assert pv["spec"]["capacity"] == {"storage": "1200Gi"} and pv["spec"]["storageClassName"] == ""
    assert pvc["metadata"] == {
        "name": "fsx-claim",
        "namespace": "default",
        "labels": {"app.kubernetes.io/managed-by": "instantstart", "instantstart/feature": "fsx"},
    }
    assert pvc["spec"]["volumeName"] == "fsx-pv" and pvc["spec"]["storageClassName"] == ""


def test_given_file_systems_in_every_lifecycle_then_delete_is_sent_only_for_deletable_ones() -> None:
    class Fsx:
        deleted: list[str] = []

        def delete_file_system(self, FileSystemId: str) -> None:
            self.deleted.append(FileSystemId)

    client = Fsx()
    found = [
        replace(FS, file_system_id=f"fs-{s}", lifecycle=s) for s in ("CREATING", "AVAILABLE", "DELETING", "FAILED")
    ]

    left = fsx.delete_file_systems(client, found)

    assert client.deleted == ["fs-AVAILABLE", "fs-FAILED"]
    assert left == [f.file_system_id for f in found]


def test_given_kuberay_objects_observed_then_on_and_off_are_in_place_only_when_kubernetes_matches() -> None:
    from instantstart.features import kuberay
    from instantstart.models.features import KubeRayRequest

    spec, obs = FEATURES["kubeRay"], observation()
    fo = obs.features["kubeRay"]
    every = {kuberay.object_ref(o) for o in kuberay.operator_objects()}

    assert not in_place(spec, KubeRayRequest(enabled=False), obs)  # the API: not observed
    fo.kubernetes = set()
    assert in_place(spec, KubeRayRequest(enabled=False), obs)
    assert not in_place(spec, KubeRayRequest(enabled=True), obs)
    fo.kubernetes = every - {"Deployment/kuberay-system/kuberay-operator"}
    assert not in_place(spec, KubeRayRequest(enabled=True), obs)
    fo.kubernetes = every
    assert in_place(spec, KubeRayRequest(enabled=True), obs)
    assert "CustomResourceDefinition/rayjobs.ray.io" in every and len(every) == 8


@pytest.mark.parametrize(
    ("deployment_type", "version", "supported"),
    [
        ("PERSISTENT_2", "2.12", True),
        ("PERSISTENT_1", "2.15", True),
        ("SCRATCH_2", "2.15", True),
        ("SCRATCH_1", "2.15", False),
        ("PERSISTENT_1", "2.10", False),
        ("PERSISTENT_2", None, False),
    ],
)
def test_given_a_deployment_type_and_lustre_version_then_data_repository_associations_are_offered_as_fsx_says(
    deployment_type: str, version: str | None, supported: bool
) -> None:
    found = replace(FS, deployment_type=deployment_type, file_system_type_version=version)

    reason = fsx.association_unsupported(found)

    assert (reason is None) is supported
    if not supported:
        assert (deployment_type if deployment_type == "SCRATCH_1" else str(version or "unknown")) in str(reason)


def test_given_a_file_system_without_data_repository_associations_then_it_is_in_place_without_one() -> None:
    req = FsxRequest(enabled=True, file_system=lustre(deploymentType="SCRATCH_1", storageCapacity=1200))
    obs = driver_on()
    fo = obs.features["fsx"]
    scratch = replace(FS, deployment_type="SCRATCH_1", per_unit_storage_throughput=None)
    fo.file_systems, fo.security_group = [scratch], "sg-1"
    fo.kubernetes = {"PersistentVolume/fsx-pv", "PersistentVolumeClaim/default/fsx-claim"}

    assert in_place(FEATURES["fsx"], req, obs)


@pytest.mark.parametrize(
    ("file_systems", "associations", "listed", "reason"),
    [
        ([], [], False, "no FSx for Lustre file system"),
        ([replace(FS, lifecycle="CREATING")], [], False, "CREATING"),
        ([replace(FS, deployment_type="SCRATCH_1")], [], False, "SCRATCH_1"),
        ([FS], [], False, "no data repository association"),
        ([FS], [replace(DRA, data_repository_path="s3://other/fsx/models/")], False, "no data repository association"),
        ([FS], [replace(DRA, file_system_path="/checkpoints")], False, "no data repository association"),
        ([FS], [replace(DRA, lifecycle="CREATING")], False, "CREATING"),
        ([FS], [replace(DRA, lifecycle="MISCONFIGURED", failure="FSx cannot access the bucket")], False, "access"),
        ([FS], [DRA], True, None),
        ([FS], [replace(DRA, file_system_path="/models/", lifecycle="UPDATING")], True, None),
    ],
)
def test_given_the_file_system_and_its_associations_then_the_model_list_says_whether_fsx_is_listed(
    file_systems: list[fsx.FileSystemObservation],
    associations: list[fsx.DataRepositoryAssociation],
    listed: bool,
    reason: str | None,
) -> None:
    got, why, _, _ = fsx.listing(file_systems, associations, BUCKET)

    assert got is listed
    assert (why is None) if reason is None else (reason in str(why))


def test_given_an_owned_association_left_then_off_is_not_in_place() -> None:
    obs = observation()
    obs.features["fsx"].data_repository_associations = [replace(DRA, lifecycle="DELETING")]

    assert not in_place(FEATURES["fsx"], FsxRequest(enabled=False), obs)


class _Fsx:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def delete_data_repository_association(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {"Lifecycle": "DELETING"}

    def create_data_repository_association(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {"Association": {"AssociationId": "dra-new"}}


def test_given_associations_in_every_lifecycle_then_only_owned_settled_ones_are_deleted_keeping_the_files() -> None:
    client = _Fsx()
    found = [
        DRA,
        replace(DRA, association_id="dra-creating", lifecycle="CREATING"),
        replace(DRA, association_id="dra-deleting", lifecycle="DELETING"),
        replace(DRA, association_id="dra-theirs", owned=False),
    ]

    left = fsx.delete_associations(client, found)

    assert left == ["dra-0123", "dra-creating", "dra-deleting"]
    assert client.calls == [{"AssociationId": "dra-0123", "DeleteDataInFileSystem": False}]


def test_given_a_file_system_then_its_models_association_exports_models_with_auto_export_and_ownership_tags() -> None:
    client = _Fsx()

    assert fsx.create_models_association(client, TAG, "fs-0123", BUCKET) == "dra-new"

    [call] = client.calls
    assert call["FileSystemPath"] == "/models" and call["DataRepositoryPath"] == f"s3://{BUCKET}/fsx/models/"
    assert call["S3"] == {"AutoExportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}}
    assert call["BatchImportMetaDataOnCreate"] is False
    assert {"Key": "instantstart:cluster-tag", "Value": TAG} in call["Tags"]
