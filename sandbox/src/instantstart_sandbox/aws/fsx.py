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
"""

from __future__ import annotations

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

    def handlers(self) -> dict[str, Handler]:
        """Operation name -> handler."""
        return {
            "CreateFileSystem": self.create_file_system,
            "DescribeFileSystems": self.describe_file_systems,
            "DeleteFileSystem": self.delete_file_system,
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

    # -- operations --------------------------------------------------------------------------------
    def create_file_system(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """CreateFileSystem: LUSTRE here (CREATING for ~10 min), other types to moto."""
        params = req.params
        if params.get("FileSystemType") != "LUSTRE":
            return forward()
        vpc_id = self._network(params)
        deployment = self._lustre(params)
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
            "FileSystemTypeVersion": request.get("FileSystemTypeVersion") or "2.15",
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
        ec2 = backends.ec2(self.account_id, self.region)
        for eni_id in fs.network_interface_ids:
            ec2.enis.pop(eni_id, None)
