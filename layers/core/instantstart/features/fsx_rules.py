"""FSx for Lustre of the ``fsx`` feature, the pure rules: what FSx accepts of a requested file system (a 422 before
any write), whether a file system found is the one requested, whether its models can be listed from S3 (the data
repository association exporting ``/models``), and the static PersistentVolume and claim pods mount.

The observations they read (:class:`FileSystemObservation`, :class:`DataRepositoryAssociation`) are built by the
AWS reads of :mod:`instantstart.features.fsx`, which re-exports everything here (the FSx facts modelled are in its
module text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from instantstart.errors import ValidationFailed
from instantstart.models.features import LustreFileSystemRequest

FSX = "fsx"

CSI_DRIVER = "fsx.csi.aws.com"
CLAIM = "fsx-claim"
VOLUME = "fsx-pv"
NAMESPACE = "default"
THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
DEFAULT_THROUGHPUT = {"PERSISTENT_1": 50, "PERSISTENT_2": 125}

ASSOCIATION_VERSIONS = ("2.12", "2.15")
"""Lustre versions with data repository associations."""
MODELS_PATH = "/models"
"""FileSystemPath of the models DRA (pods mount the file system at ``/fsx``: ``/fsx/models``)."""
EXPORT_PREFIX = "fsx/models/"
"""Key prefix in the cluster bucket the models DRA exports to."""

LISTED_LIFECYCLES = ("AVAILABLE", "UPDATING")
"""DRA lifecycles in which FSx exports (the list of fsx models is kept current)."""


@dataclass(frozen=True)
class FileSystemObservation:
    """An FSx for Lustre file system of this cluster's ``fsx`` feature (DescribeFileSystems)."""

    file_system_id: str
    lifecycle: str
    storage_capacity: int
    deployment_type: str | None
    per_unit_storage_throughput: int | None
    dns_name: str | None
    mount_name: str | None
    failure: str | None = None
    file_system_type_version: str | None = None
    """``FileSystemTypeVersion`` (Lustre 2.10, 2.12, 2.15)."""


@dataclass(frozen=True)
class DataRepositoryAssociation:
    """A data repository association of one of the feature's file systems (DescribeDataRepositoryAssociations)."""

    association_id: str
    file_system_id: str
    lifecycle: str
    file_system_path: str
    data_repository_path: str
    failure: str | None = None
    owned: bool = False
    """It carries this cluster's ownership tags (only those are deleted)."""


def export_path(bucket: str) -> str:
    """DataRepositoryPath of the models DRA: ``s3://<bucket>/fsx/models/``."""
    return f"s3://{bucket}/{EXPORT_PREFIX}"


def association_unsupported(fs: FileSystemObservation) -> str | None:
    """Why FSx offers no data repository association on ``fs`` (its files cannot be listed from S3), or None.

    CreateDataRepositoryAssociation: "supported on all FSx for Lustre 2.12 and 2.15 file systems, excluding
    scratch_1 deployment type"; an unknown version is taken as unsupported (harsher reading).
    """
    if fs.deployment_type == "SCRATCH_1":
        return (
            f"file system {fs.file_system_id} is SCRATCH_1: FSx offers no data repository association for it, so its "
            "files cannot be exported to S3 and listed (turn fsx off and on with another deploymentType)"
        )
    if fs.file_system_type_version not in ASSOCIATION_VERSIONS:
        return (
            f"file system {fs.file_system_id} runs Lustre {fs.file_system_type_version or 'of unknown version'}: "
            "data repository associations need Lustre 2.12 or later, so its files cannot be listed"
        )
    return None


def models_association(
    fs: FileSystemObservation, found: list[DataRepositoryAssociation]
) -> DataRepositoryAssociation | None:
    """The DRA of ``fs`` at FileSystemPath ``/models`` (any lifecycle but DELETING), if any."""
    return next(
        (
            a
            for a in found
            if a.file_system_id == fs.file_system_id
            and a.file_system_path.rstrip("/") == MODELS_PATH
            and a.lifecycle != "DELETING"
        ),
        None,
    )


def listing(
    file_systems: list[FileSystemObservation], found: list[DataRepositoryAssociation], bucket: str | None
) -> tuple[bool, str | None, FileSystemObservation | None, DataRepositoryAssociation | None]:
    """``(listed, reason, file system, association)``: whether the models on the fsx file system are listed (its
    models DRA exports to ``s3://<bucket>/fsx/models/`` and is AVAILABLE or UPDATING), else why not. Pure.

    The association is returned whenever one exists (its exported objects are listed even while it is not
    AVAILABLE, with ``listed`` false and the reason).
    """
    live = [f for f in file_systems if f.lifecycle != "DELETING"]
    if not live:
        return False, "the cluster has no FSx for Lustre file system (feature fsx with fileSystem is off)", None, None
    fs = live[0]
    if fs.lifecycle != "AVAILABLE":
        return False, f"file system {fs.file_system_id} is {fs.lifecycle}", fs, None
    unsupported = association_unsupported(fs)
    if unsupported:
        return False, unsupported, fs, None
    dra = models_association(fs, found)
    wanted = export_path(bucket) if bucket else None
    if dra is None or (wanted is not None and dra.data_repository_path.rstrip("/") != wanted.rstrip("/")):
        return (
            False,
            f"file system {fs.file_system_id} has no data repository association exporting {MODELS_PATH} to "
            f"{wanted or 'the cluster bucket'} (send PATCH .../features with fsx on and its fileSystem to create it)",
            fs,
            None,
        )
    if dra.lifecycle in LISTED_LIFECYCLES:
        return True, None, fs, dra
    detail = f": {dra.failure}" if dra.failure else ""
    return (
        False,
        f"data repository association {dra.association_id} is {dra.lifecycle}{detail}; FSx exports only while it "
        "is AVAILABLE, so models on the file system may be missing",
        fs,
        dra,
    )


def file_system_errors(fs: LustreFileSystemRequest) -> list[dict[str, Any]]:
    """What FSx would refuse in ``fs``, as 422 details (``field`` under ``fsx.fileSystem``, ``allowedValues``).

    StorageCapacity: 1200 or a multiple of 2400 GiB (SCRATCH_1 also 3600); PerUnitStorageThroughput: required
    values per PERSISTENT type, none for SCRATCH types
    (https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreConfiguration.html).
    """
    errors: list[dict[str, Any]] = []
    cap = fs.storage_capacity
    if not (cap == 1200 or cap % 2400 == 0 or (fs.deployment_type == "SCRATCH_1" and cap == 3600)):
        errors.append(
            {
                "field": "fsx.fileSystem.storageCapacity",
                "message": f"{cap} GiB is not a Lustre capacity for {fs.deployment_type}: 1200 or a multiple of 2400",
            }
        )
    allowed = THROUGHPUT.get(fs.deployment_type)
    tput = fs.per_unit_storage_throughput
    if allowed is None and tput is not None:
        errors.append(
            {
                "field": "fsx.fileSystem.perUnitStorageThroughput",
                "message": f"not allowed for {fs.deployment_type} (PERSISTENT_1 and PERSISTENT_2 only)",
            }
        )
    elif allowed is not None and tput is not None and tput not in allowed:
        errors.append(
            {
                "field": "fsx.fileSystem.perUnitStorageThroughput",
                "message": f"{tput} MB/s/TiB is not offered for {fs.deployment_type}",
                "allowedValues": [str(v) for v in allowed],
            }
        )
    return errors


def check_file_system(fs: LustreFileSystemRequest | None, enabled: bool) -> None:
    """Refuse an ``fsx.fileSystem`` FSx would refuse, or one given with ``enabled`` false.

    Raises:
        ValidationFailed: naming ``fsx.fileSystem...`` (and ``allowedValues`` where they are a list).
    """
    if fs is None:
        return
    if not enabled:
        raise ValidationFailed(
            "fsx.fileSystem is only allowed with fsx.enabled true (turning fsx off deletes the file system)",
            details=[{"field": "fsx.fileSystem", "message": "only with enabled true"}],
        )
    errors = file_system_errors(fs)
    if errors:
        raise ValidationFailed("; ".join(f"{e['field']}: {e['message']}" for e in errors), details=errors)


def matches(found: FileSystemObservation, fs: LustreFileSystemRequest) -> bool:
    """The file system found is the one requested (capacity, deployment type, throughput)."""
    tput = fs.per_unit_storage_throughput or DEFAULT_THROUGHPUT.get(fs.deployment_type)
    return (
        found.storage_capacity == fs.storage_capacity
        and found.deployment_type == fs.deployment_type
        and found.per_unit_storage_throughput == tput
    )


def claim_objects(fs: FileSystemObservation) -> list[dict[str, Any]]:
    """The static PersistentVolume ``fsx-pv`` (CSI ``fsx.csi.aws.com``) and its claim ``fsx-claim`` in
    ``default``, in apply order."""
    labels = {"app.kubernetes.io/managed-by": "instantstart", "instantstart/feature": FSX}
    size = f"{fs.storage_capacity}Gi"
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": VOLUME, "labels": labels},
            "spec": {
                "capacity": {"storage": size},
                "volumeMode": "Filesystem",
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "mountOptions": ["flock"],
                "csi": {
                    "driver": CSI_DRIVER,
                    "volumeHandle": fs.file_system_id,
                    "volumeAttributes": {"dnsname": str(fs.dns_name), "mountname": str(fs.mount_name)},
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": CLAIM, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": VOLUME,
                "resources": {"requests": {"storage": size}},
            },
        },
    ]
