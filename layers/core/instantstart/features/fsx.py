"""FSx for Lustre of the ``fsx`` feature: the file system, its security group and the claim pods mount.

What FSx needs (FSx for Lustre user guide, "File system access control with Amazon VPC",
https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html): the file system's security
group allows Lustre traffic, TCP 988 and 1018-1023, from itself and from the clients' security group. The file
system is created in the cluster's compute subnet (HyperPod ``VpcConfig.Subnets``) with two groups: its own
``instantstart-<tag>-fsx`` group (those rules) and the cluster security group (all traffic within itself), so the
HyperPod nodes reach it and it reaches them back without changing the cluster group. Everything carries the
cluster's ownership tags plus ``instantstart:feature=fsx``; "off" and cluster deletion remove only that.

Lifecycle (FSx ``DescribeFileSystems``): CREATING (5-10 minutes) -> AVAILABLE; ``DeleteFileSystem`` -> DELETING ->
gone. Until it is gone its network interface keeps the subnet and the security groups in use
(DependencyViolation), so the file system goes first, then its security group, then the network. FSx does not
document DeleteFileSystem of a CREATING file system; the harsher reading (refused) is modelled: deletion waits
for AVAILABLE or FAILED.

Pure rules (:func:`file_system_errors`, :func:`matches`, :func:`claim_objects`) and the AWS reads/writes of one
round each; the Kubernetes objects are a static PersistentVolume (CSI ``fsx.csi.aws.com``, ``volumeHandle`` the
file system id, ``volumeAttributes`` ``dnsname``/``mountname``) bound to claim ``fsx-claim``
(https://github.com/kubernetes-sigs/aws-fsx-csi-driver/tree/master/examples/kubernetes/static_provisioning).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.errors import ValidationFailed
from instantstart.models.features import LustreFileSystemRequest
from instantstart.naming import MANAGED_KEY, ROLE_KEY, TAG_KEY, owned_by, ownership_tags, tag_list

FEATURE_KEY = "instantstart:feature"
FSX = "fsx"
SECURITY_GROUP_ROLE = "fsx-sg"
LUSTRE_PORTS = ((988, 988), (1018, 1023))
"""TCP port ranges of Lustre (LNET) traffic."""
CSI_DRIVER = "fsx.csi.aws.com"
CLAIM = "fsx-claim"
VOLUME = "fsx-pv"
NAMESPACE = "default"
THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
DEFAULT_THROUGHPUT = {"PERSISTENT_1": 50, "PERSISTENT_2": 125}
DELETABLE = ("AVAILABLE", "FAILED", "MISCONFIGURED", "MISCONFIGURED_UNAVAILABLE")
"""Lifecycles DeleteFileSystem is sent for (CREATING is waited for; DELETING is under way)."""


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


def _tags(tag: str) -> dict[str, str]:
    return ownership_tags(tag, **{FEATURE_KEY: FSX})


def observe_file_systems(fsx: Any, tag: str) -> list[FileSystemObservation]:
    """This cluster's Lustre file systems of the ``fsx`` feature (ownership tags + ``instantstart:feature=fsx``).

    Calls FSx ``DescribeFileSystems``, every page.
    """
    out: list[FileSystemObservation] = []
    kwargs: dict[str, Any] = {}
    while True:
        page = fsx.describe_file_systems(**kwargs)
        for fs in page.get("FileSystems", []):
            tags = {t["Key"]: t["Value"] for t in fs.get("Tags", [])}
            if fs.get("FileSystemType") != "LUSTRE" or not owned_by(tags, tag) or tags.get(FEATURE_KEY) != FSX:
                continue
            lustre = fs.get("LustreConfiguration") or {}
            out.append(
                FileSystemObservation(
                    file_system_id=str(fs["FileSystemId"]),
                    lifecycle=str(fs.get("Lifecycle")),
                    storage_capacity=int(fs.get("StorageCapacity") or 0),
                    deployment_type=lustre.get("DeploymentType"),
                    per_unit_storage_throughput=lustre.get("PerUnitStorageThroughput"),
                    dns_name=fs.get("DNSName"),
                    mount_name=lustre.get("MountName"),
                    failure=(fs.get("FailureDetails") or {}).get("Message"),
                )
            )
        if not page.get("NextToken"):
            return out
        kwargs["NextToken"] = page["NextToken"]


def _group_filters(tag: str) -> list[dict[str, Any]]:
    return [
        {"Name": f"tag:{TAG_KEY}", "Values": [tag]},
        {"Name": f"tag:{MANAGED_KEY}", "Values": ["true"]},
        {"Name": f"tag:{ROLE_KEY}", "Values": [SECURITY_GROUP_ROLE]},
    ]


def observe_security_group(ec2: Any, tag: str) -> str | None:
    """Id of this cluster's FSx security group (ownership tags, role ``fsx-sg``), or None (EC2
    DescribeSecurityGroups)."""
    groups = ec2.describe_security_groups(Filters=_group_filters(tag))["SecurityGroups"]
    owned = [g for g in groups if owned_by(g.get("Tags", []), tag)]
    return str(owned[0]["GroupId"]) if owned else None


def create_security_group(ec2: Any, tag: str, vpc_id: str, client_groups: list[str]) -> str:
    """Create ``instantstart-<tag>-fsx`` allowing Lustre traffic (TCP 988, 1018-1023) from itself and from
    ``client_groups``; returns its id. Calls EC2 CreateSecurityGroup, AuthorizeSecurityGroupIngress."""
    name = f"instantstart-{tag}-fsx"
    tags = ownership_tags(tag, Name=name, **{ROLE_KEY: SECURITY_GROUP_ROLE, FEATURE_KEY: FSX})
    group_id = str(
        ec2.create_security_group(
            GroupName=name,
            Description="InstantStart FSx for Lustre: Lustre traffic (TCP 988, 1018-1023) from the cluster",
            VpcId=vpc_id,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": tag_list(tags)}],
        )["GroupId"]
    )
    pairs = [{"GroupId": group_id}] + [{"GroupId": g} for g in client_groups if g != group_id]
    ec2.authorize_security_group_ingress(
        GroupId=group_id,
        IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": low, "ToPort": high, "UserIdGroupPairs": pairs}
            for low, high in LUSTRE_PORTS
        ],
    )
    return group_id


def create_file_system(
    fsx: Any, tag: str, fs: LustreFileSystemRequest, subnet_id: str, security_groups: list[str]
) -> str:
    """FSx ``CreateFileSystem`` (LUSTRE) in ``subnet_id`` with ``security_groups`` and the ownership tags; returns
    the file system id. https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html"""
    lustre: dict[str, Any] = {"DeploymentType": fs.deployment_type}
    tput = fs.per_unit_storage_throughput or DEFAULT_THROUGHPUT.get(fs.deployment_type)
    if tput is not None:
        lustre["PerUnitStorageThroughput"] = tput
    out = fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=fs.storage_capacity,
        StorageType="SSD",
        SubnetIds=[subnet_id],
        SecurityGroupIds=security_groups,
        LustreConfiguration=lustre,
        Tags=tag_list({**_tags(tag), "Name": f"instantstart-{tag}-fsx"}),
    )
    return str(out["FileSystem"]["FileSystemId"])


def delete_file_systems(fsx: Any, found: list[FileSystemObservation]) -> list[str]:
    """One round of deleting ``found``: DeleteFileSystem of each AVAILABLE or FAILED one; returns the ids still
    there (CREATING ones wait: FSx may refuse to delete them). Calls FSx DeleteFileSystem."""
    left = []
    for fs in found:
        left.append(fs.file_system_id)
        if fs.lifecycle in DELETABLE:
            try:
                fsx.delete_file_system(FileSystemId=fs.file_system_id)
            except ClientError as exc:
                if error_code(exc) not in ("FileSystemNotFound",):
                    raise
    return left


def delete_security_group(ec2: Any, group_id: str) -> bool:
    """Delete the FSx security group; False while a network interface still uses it (DependencyViolation)."""
    try:
        ec2.delete_security_group(GroupId=group_id)
    except ClientError as exc:
        if error_code(exc) == "DependencyViolation":
            return False
        if error_code(exc) not in ("InvalidGroup.NotFound",):
            raise
    return True


def teardown(rt: Any, tag: str) -> list[str]:
    """Cluster deletion: one round deleting this cluster's ``fsx`` file systems, then (once they are gone) their
    security group. Returns what is still there (file system ids, then the group id); empty when done.

    Called by the dependencies stage's teardown poll, which runs before the network teardown: a file system's
    network interface would otherwise keep the subnet and security groups from being deleted.
    """
    left = delete_file_systems(rt.client("fsx"), observe_file_systems(rt.client("fsx"), tag))
    if left:
        return left
    ec2 = rt.client("ec2")
    group = observe_security_group(ec2, tag)
    if group and not delete_security_group(ec2, group):
        return [group]
    return []


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
