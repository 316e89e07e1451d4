"""FSx for Lustre file systems on the simulated clock (moto's FSx fills in the other types).

moto 5.2.5 creates FSx file systems without ``Lifecycle``, ``CreationTime``, ``OwnerId``, ``VpcId``
or network interfaces, accepts any capacity and throughput, and deletes at once. For
``FileSystemType=LUSTRE`` the sandbox answers CreateFileSystem/DescribeFileSystems/DeleteFileSystem
itself:

- validation as FSx does: one existing subnet (``InvalidNetworkSettings`` naming ``InvalidSubnetId``),
  existing security groups in its VPC (``InvalidSecurityGroupId``), ``StorageCapacity`` 1200 or a
  multiple of 2400 GiB (``BadRequest``; SCRATCH_1 also 3600), ``PerUnitStorageThroughput`` required for
  PERSISTENT_1 (50/100/200) and PERSISTENT_2 (125/250/500/1000) and refused for SCRATCH
  (``InvalidPerUnitStorageThroughput`` / ``BadRequest``);
- ``Lifecycle`` CREATING for :data:`CREATE_SECONDS` then AVAILABLE; DELETING for
  :data:`DELETE_SECONDS` then gone (``FileSystemNotFound``); a requester-managed network interface in
  the subnet while the file system exists (so DeleteSubnet/DeleteSecurityGroup answer
  DependencyViolation until it is gone, as in an account);
- ``DNSName`` ``fs-....fsx.<region>.amazonaws.com``, ``LustreConfiguration.MountName`` (8 random
  lowercase characters; ``fsx`` for SCRATCH_1), ``DeploymentType`` (default SCRATCH_1),
  ``FileSystemTypeVersion`` (default 2.15), tags through moto's FSx tagging (TagResource works);
- DeleteFileSystem of a CREATING file system is refused (``BadRequest``): the harsher reading, the
  FSx documentation does not say what happens.
- ``FileSystemTypeVersion`` as CreateFileSystem documents it: 2.10, 2.12 or 2.15 (else ``BadRequest``), default
  2.10 except PERSISTENT_2 (2.12), which refuses 2.10.

Data repository associations (moto has none): ``CreateDataRepositoryAssociation``,
``DescribeDataRepositoryAssociations`` (``AssociationIds`` or filter ``file-system-id``, pages) and
``DeleteDataRepositoryAssociation``:

- refused (``UnsupportedOperation``) on SCRATCH_1 and Lustre 2.10 file systems ("supported on all FSx for Lustre 2.12
  and 2.15 file systems, excluding scratch_1"), and (``BadRequest``) while the file system is not AVAILABLE, for a
  FileSystemPath without a leading ``/``, a DataRepositoryPath not ``s3://bucket[/prefix/]`` or naming a bucket that
  does not exist, event types other than NEW/CHANGED/DELETED, a FileSystemPath overlapping another DRA's (``/ns1``
  and ``/ns1/ns2``; ``/`` excludes every other) or an S3 prefix overlapping another's; more than 8 per file system
  is ``ServiceLimitExceeded``; a ClientRequestToken reused with other parameters is ``IncompatibleParameterError``
  (same parameters: the same DRA back). The error codes are FSx's documented ones; the messages are the sandbox's.
- ``Lifecycle`` CREATING for :data:`DRA_CREATE_SECONDS` then AVAILABLE; DELETING for :data:`DRA_DELETE_SECONDS`
  then gone (``DataRepositoryAssociationNotFound``); deleting a CREATING one is refused (``BadRequest``, harsher
  reading); ``DeleteDataInFileSystem`` true removes its files from the file system. Deleting the file system
  removes its DRAs.
- Auto-export: files written onto a file system (:meth:`FsxLustre.write_files`, which the sandbox's download pods
  call for paths on an fsx claim) under an AVAILABLE DRA's FileSystemPath whose AutoExportPolicy has NEW (new file)
  or CHANGED (existing file) appear in its bucket at ``<DataRepositoryPath><path below FileSystemPath>``
  :data:`EXPORT_SECONDS` later (FSx exports asynchronously); files written while no DRA was AVAILABLE are never
  exported (no export task is emulated). A bucket gone at export time turns the DRA MISCONFIGURED with
  ``FailureDetails``. ``extension.fsx.files(file_system_id)`` shows what is on a file system.
"""

from __future__ import annotations

import functools
import random
import string
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from instantstart_sandbox.aws import backends
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse
from instantstart_sandbox.clock import SimClock

CREATE_SECONDS = 600.0
"""FSx for Lustre creation takes 5-10 minutes in an account."""
DELETE_SECONDS = 180.0
THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
DEPLOYMENT_TYPES = ("SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
LUSTRE_VERSIONS = ("2.10", "2.12", "2.15")
DRA_VERSIONS = ("2.12", "2.15")
DRA_CREATE_SECONDS = 300.0
"""A data repository association is CREATING for a few minutes."""
DRA_DELETE_SECONDS = 120.0
EXPORT_SECONDS = 90.0
"""Auto-export is asynchronous: a written file reaches S3 this long after it is written."""
MAX_ASSOCIATIONS = 8
EVENT_TYPES = ("NEW", "CHANGED", "DELETED")

Handler = Callable[[AwsRequest, Callable[[], RawResponse]], Any]


@dataclass
class LustreFileSystem:
    """An FSx for Lustre file system of the sandbox."""

    id: str
    arn: str
    request: dict[str, Any]
    vpc_id: str
    created_at: float
    mount_name: str
    deployment_type: str
    lifecycle: str = "CREATING"
    network_interface_ids: list[str] = field(default_factory=list)
    generation: int = 0
    version: str = "2.10"
    files: dict[str, bytes] = field(default_factory=dict)
    """Path on the file system (leading ``/``) -> contents."""


@dataclass
class Association:
    """A data repository association of the sandbox."""

    id: str
    file_system_id: str
    arn: str
    file_system_path: str
    data_repository_path: str
    request: dict[str, Any]
    token: str | None
    created_at: float
    tags: list[dict[str, str]]
    lifecycle: str = "CREATING"
    failure: str | None = None
    generation: int = 0

    def covers(self, path: str) -> bool:
        """``path`` (on the file system) is under this DRA's FileSystemPath."""
        root = self.file_system_path.rstrip("/")
        return not root or path == root or path.startswith(root + "/")

    def export_events(self) -> list[str]:
        return list(((self.request.get("S3") or {}).get("AutoExportPolicy") or {}).get("Events") or [])


def _overlap(a: str, b: str) -> bool:
    """Two paths (or S3 prefixes) overlap when one is the other or lies under it."""
    a, b = a.rstrip("/") + "/", b.rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


def _moto_fsx(account_id: str, region: str) -> Any:
    from moto.fsx.models import fsx_backends

    return fsx_backends[account_id][region]


class FsxLustre:
    """The FSx for Lustre operations of the sandbox (see module docstring). Thread-safe."""

    def __init__(self, clock: SimClock, region: str, account_id: str) -> None:
        self.clock = clock
        self.region = region
        self.account_id = account_id
        self._lock = threading.RLock()
        self._file_systems: dict[str, LustreFileSystem] = {}
        self._associations: dict[str, Association] = {}

    def handlers(self) -> dict[str, Handler]:
        """Operation name -> handler."""
        return {
            "CreateFileSystem": self.create_file_system,
            "DescribeFileSystems": self.describe_file_systems,
            "DeleteFileSystem": self.delete_file_system,
            "CreateDataRepositoryAssociation": self.create_data_repository_association,
            "DescribeDataRepositoryAssociations": self.describe_data_repository_associations,
            "DeleteDataRepositoryAssociation": self.delete_data_repository_association,
        }

    # -- validation --------------------------------------------------------------------------------
    def _network(self, params: dict[str, Any]) -> str:
        subnets = list(params.get("SubnetIds") or [])
        if len(subnets) != 1:
            raise AwsError(
                "InvalidNetworkSettings",
                "FSx for Lustre file systems support exactly one subnet ID.",
                InvalidSubnetId=",".join(subnets),
            )
        subnet = backends.subnet(self.account_id, self.region, subnets[0])
        if subnet is None:
            raise AwsError(
                "InvalidNetworkSettings", f"The subnet ID '{subnets[0]}' does not exist", InvalidSubnetId=subnets[0]
            )
        ec2 = backends.ec2(self.account_id, self.region)
        for group_id in params.get("SecurityGroupIds") or []:
            group = ec2.get_security_group_from_id(group_id)
            if group is None or group.vpc_id != subnet.vpc_id:
                raise AwsError(
                    "InvalidNetworkSettings",
                    f"The security group '{group_id}' does not exist in the VPC of subnet {subnets[0]}",
                    InvalidSecurityGroupId=group_id,
                )
        return str(subnet.vpc_id)

    @staticmethod
    def _lustre(params: dict[str, Any]) -> str:
        config = params.get("LustreConfiguration") or {}
        deployment = str(config.get("DeploymentType") or "SCRATCH_1")
        if deployment not in DEPLOYMENT_TYPES:
            raise AwsError("BadRequest", f"Invalid DeploymentType {deployment}; valid: {', '.join(DEPLOYMENT_TYPES)}")
        capacity = int(params.get("StorageCapacity") or 0)
        allowed = capacity == 1200 or (capacity > 0 and capacity % 2400 == 0)
        if deployment == "SCRATCH_1":
            allowed = allowed or capacity == 3600
        if not allowed:
            raise AwsError(
                "BadRequest",
                f"Invalid storage capacity {capacity} GiB for {deployment}: use 1200 GiB or increments of 2400 GiB.",
            )
        throughput = config.get("PerUnitStorageThroughput")
        if deployment in THROUGHPUT:
            if throughput not in THROUGHPUT[deployment]:
                raise AwsError(
                    "InvalidPerUnitStorageThroughput",
                    f"PerUnitStorageThroughput must be one of {', '.join(map(str, THROUGHPUT[deployment]))} "
                    f"MB/s/TiB for {deployment}; got {throughput}.",
                )
        elif throughput is not None:
            raise AwsError("BadRequest", f"PerUnitStorageThroughput is not supported for {deployment}.")
        return deployment

    @staticmethod
    def _version(params: dict[str, Any], deployment: str) -> str:
        version = str(params.get("FileSystemTypeVersion") or ("2.12" if deployment == "PERSISTENT_2" else "2.10"))
        if version not in LUSTRE_VERSIONS:
            valid = ", ".join(LUSTRE_VERSIONS)
            raise AwsError("BadRequest", f"Invalid FileSystemTypeVersion {version}; valid: {valid}")
        if version == "2.10" and deployment == "PERSISTENT_2":
            raise AwsError("BadRequest", "Lustre version 2.10 is not supported for the PERSISTENT_2 deployment type.")
        return version

    # -- operations --------------------------------------------------------------------------------
    def create_file_system(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreateFileSystem: LUSTRE here (CREATING for ~10 min), other types to moto."""
        params = req.params
        if params.get("FileSystemType") != "LUSTRE":
            return forward()
        vpc_id = self._network(params)
        deployment = self._lustre(params)
        version = self._version(params, deployment)
        fs_id = "fs-" + uuid.uuid4().hex[:17]
        mount = "fsx" if deployment == "SCRATCH_1" else "".join(random.choices(string.ascii_lowercase, k=8))
        fs = LustreFileSystem(
            id=fs_id,
            arn=f"arn:aws:fsx:{self.region}:{self.account_id}:file-system/{fs_id}",
            request=dict(params),
            vpc_id=vpc_id,
            created_at=self.clock.now(),
            mount_name=mount,
            deployment_type=deployment,
            version=version,
        )
        tags = list(params.get("Tags") or [])
        if tags:
            _moto_fsx(self.account_id, self.region).tagger.tag_resource(fs.arn, tags)
        fs.network_interface_ids = self._create_interface(fs)
        with self._lock:
            self._file_systems[fs_id] = fs
            generation = fs.generation
        self.clock.call_later(CREATE_SECONDS, lambda: self._available(fs_id, generation))
        return {"FileSystem": self._view(fs)}

    def _create_interface(self, fs: LustreFileSystem) -> list[str]:
        try:
            subnet = backends.subnet(self.account_id, self.region, fs.request["SubnetIds"][0])
            eni = backends.ec2(self.account_id, self.region).create_network_interface(
                subnet,
                None,
                group_ids=list(fs.request.get("SecurityGroupIds") or []),
                description=f"ENI for Amazon FSx for Lustre {fs.id}",
            )
            eni.requester_managed = True
            eni.status = "in-use"
            return [str(eni.id)]
        except Exception:  # noqa: BLE001 - the interface is realism, not the answer
            return []

    def _available(self, fs_id: str, generation: int) -> None:
        with self._lock:
            fs = self._file_systems.get(fs_id)
            if fs is not None and fs.generation == generation and fs.lifecycle == "CREATING":
                fs.lifecycle = "AVAILABLE"

    def _view(self, fs: LustreFileSystem) -> dict[str, Any]:
        request = fs.request
        config = dict(request.get("LustreConfiguration") or {})
        lustre: dict[str, Any] = {
            "DeploymentType": fs.deployment_type,
            "MountName": fs.mount_name,
            "WeeklyMaintenanceStartTime": config.get("WeeklyMaintenanceStartTime", "1:05:00"),
            "DataCompressionType": config.get("DataCompressionType", "NONE"),
            "CopyTagsToBackups": bool(config.get("CopyTagsToBackups", False)),
        }
        if config.get("PerUnitStorageThroughput") is not None:
            lustre["PerUnitStorageThroughput"] = config["PerUnitStorageThroughput"]
        if fs.deployment_type.startswith("PERSISTENT"):
            lustre["AutomaticBackupRetentionDays"] = config.get("AutomaticBackupRetentionDays", 0)
        tags = _moto_fsx(self.account_id, self.region).tagger.list_tags_for_resource(fs.arn).get("Tags", [])
        return {
            "OwnerId": self.account_id,
            "CreationTime": fs.created_at,
            "FileSystemId": fs.id,
            "FileSystemType": "LUSTRE",
            "Lifecycle": fs.lifecycle,
            "StorageCapacity": int(request.get("StorageCapacity") or 0),
            "StorageType": request.get("StorageType") or "SSD",
            "VpcId": fs.vpc_id,
            "SubnetIds": list(request.get("SubnetIds") or []),
            "NetworkInterfaceIds": list(fs.network_interface_ids),
            "DNSName": f"{fs.id}.fsx.{self.region}.amazonaws.com",
            "ResourceARN": fs.arn,
            "Tags": tags,
            "LustreConfiguration": lustre,
            "FileSystemTypeVersion": fs.version,
            "NetworkType": request.get("NetworkType") or "IPV4",
        }

    def describe_file_systems(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeFileSystems: the sandbox's Lustre file systems and moto's others (``FileSystemNotFound``
        for an unknown id, as FSx answers)."""
        ids = list(req.params.get("FileSystemIds") or [])
        moto = _moto_fsx(self.account_id, self.region)
        with self._lock:
            mine = dict(self._file_systems)
        found: list[dict[str, Any]] = []
        if ids:
            for fs_id in ids:
                if fs_id in mine:
                    found.append(self._view(mine[fs_id]))
                elif fs_id in moto.file_systems:
                    found.append(moto.file_systems[fs_id].to_dict())
                else:
                    raise AwsError("FileSystemNotFound", f"File system '{fs_id}' does not exist.")
        else:
            found = [self._view(fs) for fs in mine.values()] + [f.to_dict() for f in moto.file_systems.values()]
        start = int(req.params.get("NextToken") or 0)
        size = int(req.params.get("MaxResults") or 2147483647)
        out: dict[str, Any] = {"FileSystems": found[start : start + size]}
        if start + size < len(found):
            out["NextToken"] = str(start + size)
        return out

    def delete_file_system(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DeleteFileSystem: DELETING for ~3 min, then gone with its network interface."""
        fs_id = str(req.params.get("FileSystemId") or "")
        with self._lock:
            fs = self._file_systems.get(fs_id)
            if fs is None:
                return forward()
            if fs.lifecycle == "CREATING":
                raise AwsError(
                    "BadRequest", f"Cannot delete file system {fs_id} while it is CREATING; wait until AVAILABLE."
                )
            if fs.lifecycle != "DELETING":
                fs.lifecycle = "DELETING"
                fs.generation += 1
                generation = fs.generation
                self.clock.call_later(DELETE_SECONDS, lambda: self._gone(fs_id, generation))
        return {"FileSystemId": fs_id, "Lifecycle": "DELETING"}

    def _gone(self, fs_id: str, generation: int) -> None:
        with self._lock:
            fs = self._file_systems.get(fs_id)
            if fs is None or fs.generation != generation:
                return
            del self._file_systems[fs_id]
            for dra_id in [a.id for a in self._associations.values() if a.file_system_id == fs_id]:
                del self._associations[dra_id]
        ec2 = backends.ec2(self.account_id, self.region)
        for eni_id in fs.network_interface_ids:
            ec2.enis.pop(eni_id, None)

    # -- data repository associations ---------------------------------------------------------------
    def _dra_view(self, a: Association) -> dict[str, Any]:
        out: dict[str, Any] = {
            "AssociationId": a.id,
            "ResourceARN": a.arn,
            "FileSystemId": a.file_system_id,
            "Lifecycle": a.lifecycle,
            "FileSystemPath": a.file_system_path,
            "DataRepositoryPath": a.data_repository_path,
            "BatchImportMetaDataOnCreate": bool(a.request.get("BatchImportMetaDataOnCreate", False)),
            "ImportedFileChunkSize": int(a.request.get("ImportedFileChunkSize") or 1024),
            "Tags": list(a.tags),
            "CreationTime": a.created_at,
        }
        s3 = a.request.get("S3")
        if s3:
            out["S3"] = s3
        if a.failure:
            out["FailureDetails"] = {"Message": a.failure}
        return out

    def _check_dra(self, params: dict[str, Any], fs: LustreFileSystem) -> tuple[str, str]:
        """FSx's refusals of a CreateDataRepositoryAssociation; returns ``(FileSystemPath, DataRepositoryPath)``."""
        if fs.deployment_type == "SCRATCH_1" or fs.version not in DRA_VERSIONS:
            raise AwsError(
                "UnsupportedOperation",
                f"Data repository associations are supported on FSx for Lustre 2.12 and 2.15 file systems, excluding "
                f"the SCRATCH_1 deployment type; file system {fs.id} is {fs.deployment_type} on Lustre {fs.version}.",
            )
        if fs.lifecycle != "AVAILABLE":
            raise AwsError("BadRequest", f"File system {fs.id} is {fs.lifecycle}; it must be AVAILABLE.")
        path = str(params.get("FileSystemPath") or "")
        repo = str(params.get("DataRepositoryPath") or "")
        if not path.startswith("/"):
            raise AwsError("BadRequest", f"FileSystemPath {path!r} must start with a forward slash (/).")
        if not repo.startswith("s3://") or not repo[5:].split("/")[0]:
            raise AwsError("BadRequest", f"DataRepositoryPath {repo!r} must be an S3 path s3://bucket/prefix/.")
        if not backends.s3_bucket_exists(self.account_id, repo[5:].split("/")[0]):
            raise AwsError("BadRequest", f"The S3 bucket of {repo} does not exist or Amazon FSx cannot access it.")
        policy = params.get("S3") or {}
        for kind in ("AutoExportPolicy", "AutoImportPolicy"):
            events = list((policy.get(kind) or {}).get("Events") or [])
            bad = [e for e in events if e not in EVENT_TYPES]
            if bad or len(events) > len(EVENT_TYPES):
                raise AwsError("BadRequest", f"{kind}.Events must be among {', '.join(EVENT_TYPES)}; got {events}.")
        mine = [a for a in self._associations.values() if a.file_system_id == fs.id and a.lifecycle != "DELETING"]
        for other in mine:
            if _overlap(other.file_system_path, path):
                raise AwsError(
                    "BadRequest",
                    f"FileSystemPath {path} overlaps the file system path {other.file_system_path} of data repository "
                    f"association {other.id}; data repository associations cannot have overlapping file system paths.",
                )
            if _overlap(other.data_repository_path, repo):
                raise AwsError(
                    "BadRequest",
                    f"DataRepositoryPath {repo} overlaps {other.data_repository_path} of data repository association "
                    f"{other.id} on the same file system.",
                )
        if len(mine) >= MAX_ASSOCIATIONS:
            raise AwsError(
                "ServiceLimitExceeded",
                f"File system {fs.id} already has {MAX_ASSOCIATIONS} data repository associations.",
                Limit="DataRepositoryAssociationsPerFileSystem",
            )
        return path, repo

    def create_data_repository_association(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreateDataRepositoryAssociation: validated as FSx does (module docstring), CREATING for a few minutes."""
        params = req.params
        fs_id = str(params.get("FileSystemId") or "")
        token = params.get("ClientRequestToken")
        compared = {k: v for k, v in params.items() if k != "ClientRequestToken"}
        with self._lock:
            fs = self._file_systems.get(fs_id)
            if fs is None:
                raise AwsError("FileSystemNotFound", f"File system '{fs_id}' does not exist.")
            if token:
                same = next((a for a in self._associations.values() if a.token == token), None)
                if same is not None:
                    if same.request != compared:
                        raise AwsError(
                            "IncompatibleParameterError",
                            f"ClientRequestToken {token} was used with different parameters.",
                            Parameter="ClientRequestToken",
                        )
                    return {"Association": self._dra_view(same)}
            path, repo = self._check_dra(params, fs)
            dra_id = "dra-" + uuid.uuid4().hex[:17]
            dra = Association(
                id=dra_id,
                file_system_id=fs_id,
                arn=f"arn:aws:fsx:{self.region}:{self.account_id}:association/{fs_id}/{dra_id}",
                file_system_path=path,
                data_repository_path=repo,
                request=compared,
                token=str(token) if token else None,
                created_at=self.clock.now(),
                tags=list(params.get("Tags") or []),
            )
            self._associations[dra_id] = dra
            generation = dra.generation
        self.clock.call_later(DRA_CREATE_SECONDS, lambda: self._dra_available(dra_id, generation))
        return {"Association": self._dra_view(dra)}

    def _dra_available(self, dra_id: str, generation: int) -> None:
        with self._lock:
            dra = self._associations.get(dra_id)
            if dra is not None and dra.generation == generation and dra.lifecycle == "CREATING":
                dra.lifecycle = "AVAILABLE"

    def describe_data_repository_associations(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DescribeDataRepositoryAssociations: by ``AssociationIds`` (``DataRepositoryAssociationNotFound`` for an
        unknown one) or filter ``file-system-id``; ``MaxResults``/``NextToken`` pages."""
        ids = list(req.params.get("AssociationIds") or [])
        filters = {f.get("Name"): list(f.get("Values") or []) for f in req.params.get("Filters") or []}
        with self._lock:
            found = list(self._associations.values())
            if ids:
                missing = [i for i in ids if i not in self._associations]
                if missing:
                    raise AwsError(
                        "DataRepositoryAssociationNotFound", f"Data repository association {missing[0]} not found."
                    )
                found = [self._associations[i] for i in ids]
            if "file-system-id" in filters:
                found = [a for a in found if a.file_system_id in filters["file-system-id"]]
            views = [self._dra_view(a) for a in found]
        start = int(req.params.get("NextToken") or 0)
        size = int(req.params.get("MaxResults") or 25)
        out: dict[str, Any] = {"Associations": views[start : start + size]}
        if start + size < len(views):
            out["NextToken"] = str(start + size)
        return out

    def delete_data_repository_association(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """DeleteDataRepositoryAssociation: DELETING for a few minutes, then gone (its files stay on the file system
        unless ``DeleteDataInFileSystem``)."""
        dra_id = str(req.params.get("AssociationId") or "")
        delete_data = bool(req.params.get("DeleteDataInFileSystem", False))
        with self._lock:
            dra = self._associations.get(dra_id)
            if dra is None:
                raise AwsError("DataRepositoryAssociationNotFound", f"Data repository association {dra_id} not found.")
            if dra.lifecycle == "CREATING":
                raise AwsError(
                    "BadRequest", f"Cannot delete data repository association {dra_id} while it is CREATING."
                )
            if dra.lifecycle != "DELETING":
                dra.lifecycle = "DELETING"
                dra.generation += 1
                generation = dra.generation
                self.clock.call_later(DRA_DELETE_SECONDS, lambda: self._dra_gone(dra_id, generation, delete_data))
        return {"AssociationId": dra_id, "Lifecycle": "DELETING", "DeleteDataInFileSystem": delete_data}

    def _dra_gone(self, dra_id: str, generation: int, delete_data: bool) -> None:
        with self._lock:
            dra = self._associations.get(dra_id)
            if dra is None or dra.generation != generation:
                return
            del self._associations[dra_id]
            fs = self._file_systems.get(dra.file_system_id)
            if delete_data and fs is not None:
                for path in [p for p in fs.files if dra.covers(p)]:
                    del fs.files[path]

    # -- the file system's contents and auto-export -------------------------------------------------------
    def files(self, file_system_id: str) -> dict[str, int]:
        """What is on a file system: path -> size in bytes (``KeyError`` for an unknown file system)."""
        with self._lock:
            return {p: len(b) for p, b in self._file_systems[file_system_id].files.items()}

    def write_files(self, file_system_id: str, files: list[tuple[str, bytes]]) -> None:
        """Write ``(path, body)`` onto an AVAILABLE file system (``LookupError`` otherwise); each file under an
        AVAILABLE data repository association exporting NEW (new file) or CHANGED (existing file) is put in its
        bucket :data:`EXPORT_SECONDS` later."""
        with self._lock:
            fs = self._file_systems.get(file_system_id)
            if fs is None or fs.lifecycle != "AVAILABLE":
                raise LookupError(file_system_id)
            exports: list[tuple[str, int, str]] = []
            for path, body in files:
                event = "CHANGED" if path in fs.files else "NEW"
                fs.files[path] = body
                for dra in self._associations.values():
                    if (
                        dra.file_system_id == file_system_id
                        and dra.lifecycle == "AVAILABLE"
                        and dra.covers(path)
                        and event in dra.export_events()
                    ):
                        exports.append((dra.id, dra.generation, path))
        for dra_id, generation, path in exports:
            self.clock.call_later(EXPORT_SECONDS, functools.partial(self._export, dra_id, generation, path))

    def _export(self, dra_id: str, generation: int, path: str) -> None:
        with self._lock:
            dra = self._associations.get(dra_id)
            fs = self._file_systems.get(dra.file_system_id) if dra else None
            if dra is None or fs is None or dra.generation != generation or dra.lifecycle != "AVAILABLE":
                return
            body = fs.files.get(path)
            if body is None:
                return
            root = dra.file_system_path.rstrip("/")
            bucket, _, prefix = dra.data_repository_path[5:].partition("/")
            key = (prefix.rstrip("/") + "/" if prefix.strip("/") else "") + path[len(root) :].lstrip("/")
        if not backends.put_object(self.account_id, bucket, key, body):
            with self._lock:
                if dra.generation == generation and dra.lifecycle == "AVAILABLE":
                    dra.lifecycle = "MISCONFIGURED"
                    dra.failure = f"Amazon FSx cannot access the S3 bucket {bucket}: it does not exist."
