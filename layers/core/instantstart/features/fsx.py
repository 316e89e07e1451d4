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

Data repository association (DRA): the control plane (a Lambda) cannot mount Lustre, so what is on the file system
is made visible in S3. Once the file system is AVAILABLE, and before the claim exists (so every file a pod writes is
written after the link exists), the feature links FileSystemPath :data:`MODELS_PATH` (``/fsx/models`` in pods) to
``s3://<cluster bucket>/fsx/models/`` with an auto-export policy NEW, CHANGED, DELETED
(https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateDataRepositoryAssociation.html); ``GET .../models``
lists that prefix. FSx facts modelled here, harsher reading where the documentation leaves room:

- DRAs exist on FSx for Lustre 2.12 and 2.15 file systems except SCRATCH_1 (CreateDataRepositoryAssociation
  reference); older references and third-party docs say PERSISTENT_2 only. A file system without a reported
  ``FileSystemTypeVersion`` of 2.12 or later is taken as not supporting them (:func:`association_unsupported`).
  CreateFileSystem defaults to 2.10 except for PERSISTENT_2, so new file systems are created with
  :data:`FILE_SYSTEM_TYPE_VERSION` (2.15, "recommended for all new file systems").
- Two DRAs of one file system may not have overlapping FileSystemPaths, and one bucket/prefix is linked once; at
  most 8 per file system. Ours is found by path and prefix, never created twice (ClientRequestToken per file system).
- Lifecycle CREATING -> AVAILABLE (UPDATING, MISCONFIGURED, DELETING, FAILED; FailureDetails.Message for the last
  two kinds). MISCONFIGURED stops import and export until fixed (FSx lacks S3 permissions, the bucket's event
  notifications changed): the feature fails with FSx's message rather than wait without end.
- Export is asynchronous ("once your application finishes modifying the file"); the documentation gives no bound,
  so the list trails the file system. Files written before the DRA existed are not exported automatically: hence
  the claim comes after the DRA.
- No auto-import: the list reads S3, which auto-import would not change; auto-import needs FSx's event notification
  on the whole bucket (a DRA turns MISCONFIGURED when other notifications overlap) and would carry deletions made in
  S3 into the file system.
- DeleteDataRepositoryAssociation with ``DeleteDataInFileSystem`` false (the files stay on Lustre; the exported
  objects stay in S3). "Off" and cluster deletion delete it, and wait until it is gone, before the file system.
- FSx reaches the bucket through its service-linked role ``AWSServiceRoleForFSxS3Access_<fs id>``
  (``s3.data-source.lustre.fsx.amazonaws.com``), which the caller must be allowed to create and give a policy
  (``iam:CreateServiceLinkedRole``, ``iam:AttachRolePolicy``, ``iam:PutRolePolicy``: FSx for Lustre user guide,
  "Setting up"); template.yaml grants that to the steps role.

The AWS reads/writes of one round each; the pure rules (:func:`file_system_errors`, :func:`matches`,
:func:`claim_objects`, :func:`association_unsupported`, :func:`listing`) are in :mod:`.fsx_rules`, re-exported
here. The Kubernetes objects are a static PersistentVolume
(CSI ``fsx.csi.aws.com``, ``volumeHandle`` the file system id, ``volumeAttributes`` ``dnsname``/``mountname``)
bound to claim ``fsx-claim``
(https://github.com/kubernetes-sigs/aws-fsx-csi-driver/tree/master/examples/kubernetes/static_provisioning).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.features.fsx_rules import (  # re-exported
    ASSOCIATION_VERSIONS as ASSOCIATION_VERSIONS,
)
from instantstart.features.fsx_rules import (
    CLAIM as CLAIM,
)
from instantstart.features.fsx_rules import (
    CSI_DRIVER as CSI_DRIVER,
)
from instantstart.features.fsx_rules import (
    DEFAULT_THROUGHPUT as DEFAULT_THROUGHPUT,
)
from instantstart.features.fsx_rules import (
    EXPORT_PREFIX as EXPORT_PREFIX,
)
from instantstart.features.fsx_rules import (
    FSX as FSX,
)
from instantstart.features.fsx_rules import (
    LISTED_LIFECYCLES as LISTED_LIFECYCLES,
)
from instantstart.features.fsx_rules import (
    MODELS_PATH as MODELS_PATH,
)
from instantstart.features.fsx_rules import (
    NAMESPACE as NAMESPACE,
)
from instantstart.features.fsx_rules import (
    THROUGHPUT as THROUGHPUT,
)
from instantstart.features.fsx_rules import (
    VOLUME as VOLUME,
)
from instantstart.features.fsx_rules import (
    DataRepositoryAssociation as DataRepositoryAssociation,
)
from instantstart.features.fsx_rules import (
    FileSystemObservation as FileSystemObservation,
)
from instantstart.features.fsx_rules import (
    association_unsupported as association_unsupported,
)
from instantstart.features.fsx_rules import (
    check_file_system as check_file_system,
)
from instantstart.features.fsx_rules import (
    claim_objects as claim_objects,
)
from instantstart.features.fsx_rules import (
    export_path as export_path,
)
from instantstart.features.fsx_rules import (
    file_system_errors as file_system_errors,
)
from instantstart.features.fsx_rules import (
    listing as listing,
)
from instantstart.features.fsx_rules import (
    matches as matches,
)
from instantstart.features.fsx_rules import (
    models_association as models_association,
)
from instantstart.models.features import LustreFileSystemRequest
from instantstart.naming import MANAGED_KEY, ROLE_KEY, TAG_KEY, owned_by, ownership_tags, tag_list

FEATURE_KEY = "instantstart:feature"
SECURITY_GROUP_ROLE = "fsx-sg"
LUSTRE_PORTS = ((988, 988), (1018, 1023))
"""TCP port ranges of Lustre (LNET) traffic."""
DELETABLE = ("AVAILABLE", "FAILED", "MISCONFIGURED", "MISCONFIGURED_UNAVAILABLE")
"""Lifecycles DeleteFileSystem is sent for (CREATING is waited for; DELETING is under way)."""
FILE_SYSTEM_TYPE_VERSION = "2.15"
"""Lustre version of new file systems (every deployment type; DRAs need 2.12 or later)."""
AUTO_EXPORT_EVENTS = ("NEW", "CHANGED", "DELETED")


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
                    file_system_type_version=fs.get("FileSystemTypeVersion"),
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
    ``client_groups``; returns its id. Calls EC2 CreateSecurityGroup, AuthorizeSecurityGroupIngress; on
    ``InvalidGroup.Duplicate`` the group of that name in the VPC is taken when it carries the ownership tags
    (DescribeSecurityGroups), and rules already there (``InvalidPermission.Duplicate``) are fine."""
    name = f"instantstart-{tag}-fsx"
    tags = ownership_tags(tag, Name=name, **{ROLE_KEY: SECURITY_GROUP_ROLE, FEATURE_KEY: FSX})
    try:
        group_id = str(
            ec2.create_security_group(
                GroupName=name,
                Description="InstantStart FSx for Lustre: Lustre traffic (TCP 988, 1018-1023) from the cluster",
                VpcId=vpc_id,
                TagSpecifications=[{"ResourceType": "security-group", "Tags": tag_list(tags)}],
            )["GroupId"]
        )
    except ClientError as exc:
        # an earlier attempt (or botocore's retry of a call whose answer was lost) made it: take it when it is ours
        if error_code(exc) != "InvalidGroup.Duplicate":
            raise
        filters = [{"Name": "group-name", "Values": [name]}, {"Name": "vpc-id", "Values": [vpc_id]}]
        found = ec2.describe_security_groups(Filters=filters)["SecurityGroups"]
        if not found or not owned_by(found[0].get("Tags", []), tag):
            raise
        group_id = str(found[0]["GroupId"])
    pairs = [{"GroupId": group_id}] + [{"GroupId": g} for g in client_groups if g != group_id]
    try:
        ec2.authorize_security_group_ingress(
            GroupId=group_id,
            IpPermissions=[
                {"IpProtocol": "tcp", "FromPort": low, "ToPort": high, "UserIdGroupPairs": pairs}
                for low, high in LUSTRE_PORTS
            ],
        )
    except ClientError as exc:
        if error_code(exc) != "InvalidPermission.Duplicate":
            raise
    return group_id


def create_file_system(
    fsx: Any, tag: str, fs: LustreFileSystemRequest, subnet_id: str, security_groups: list[str]
) -> str:
    """FSx ``CreateFileSystem`` (LUSTRE, Lustre :data:`FILE_SYSTEM_TYPE_VERSION`) in ``subnet_id`` with
    ``security_groups`` and the ownership tags; returns the file system id. https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html"""
    lustre: dict[str, Any] = {"DeploymentType": fs.deployment_type}
    tput = fs.per_unit_storage_throughput or DEFAULT_THROUGHPUT.get(fs.deployment_type)
    if tput is not None:
        lustre["PerUnitStorageThroughput"] = tput
    out = fsx.create_file_system(
        FileSystemType="LUSTRE",
        FileSystemTypeVersion=FILE_SYSTEM_TYPE_VERSION,
        StorageCapacity=fs.storage_capacity,
        StorageType="SSD",
        SubnetIds=[subnet_id],
        SecurityGroupIds=security_groups,
        LustreConfiguration=lustre,
        Tags=tag_list({**_tags(tag), "Name": f"instantstart-{tag}-fsx"}),
    )
    return str(out["FileSystem"]["FileSystemId"])


def observe_associations(
    fsx: Any, tag: str, file_systems: list[FileSystemObservation]
) -> list[DataRepositoryAssociation]:
    """The data repository associations of ``file_systems`` (those that are not DELETING and support DRAs).

    Calls FSx ``DescribeDataRepositoryAssociations`` with filter ``file-system-id``, every page; a file system gone
    meanwhile (``FileSystemNotFound``) has none.
    """
    ids = [f.file_system_id for f in file_systems if f.lifecycle != "DELETING" and association_unsupported(f) is None]
    if not ids:
        return []
    out: list[DataRepositoryAssociation] = []
    kwargs: dict[str, Any] = {"Filters": [{"Name": "file-system-id", "Values": ids}]}
    while True:
        try:
            page = fsx.describe_data_repository_associations(**kwargs)
        except ClientError as exc:
            if error_code(exc) in ("FileSystemNotFound", "DataRepositoryAssociationNotFound"):
                return out
            raise
        for a in page.get("Associations", []):
            out.append(
                DataRepositoryAssociation(
                    association_id=str(a["AssociationId"]),
                    file_system_id=str(a.get("FileSystemId")),
                    lifecycle=str(a.get("Lifecycle")),
                    file_system_path=str(a.get("FileSystemPath") or ""),
                    data_repository_path=str(a.get("DataRepositoryPath") or ""),
                    failure=(a.get("FailureDetails") or {}).get("Message"),
                    owned=owned_by(a.get("Tags") or [], tag),
                )
            )
        if not page.get("NextToken"):
            return out
        kwargs["NextToken"] = page["NextToken"]


def create_models_association(fsx: Any, tag: str, file_system_id: str, bucket: str) -> str:
    """FSx ``CreateDataRepositoryAssociation``: ``/models`` of ``file_system_id`` to ``s3://<bucket>/fsx/models/``,
    auto-export NEW/CHANGED/DELETED, no auto-import, no metadata import, the ownership tags and a ClientRequestToken
    per file system (a redelivered step gets the same DRA back). Returns the association id.

    Raises:
        botocore.exceptions.ClientError: FSx's refusal verbatim (``BadRequest`` for an overlapping path or a
            deployment type without DRAs, ``ServiceLimitExceeded`` beyond 8 DRAs).
    """
    out = fsx.create_data_repository_association(
        FileSystemId=file_system_id,
        FileSystemPath=MODELS_PATH,
        DataRepositoryPath=export_path(bucket),
        BatchImportMetaDataOnCreate=False,
        S3={"AutoExportPolicy": {"Events": list(AUTO_EXPORT_EVENTS)}},
        ClientRequestToken=f"instantstart-{file_system_id}-models",
        Tags=tag_list({**_tags(tag), "Name": f"instantstart-{tag}-fsx-models"}),
    )
    return str(out["Association"]["AssociationId"])


def delete_associations(fsx: Any, found: list[DataRepositoryAssociation]) -> list[str]:
    """One round of deleting the owned DRAs in ``found``: DeleteDataRepositoryAssociation (DeleteDataInFileSystem
    false: the files stay on Lustre) of each one not already DELETING; returns the ids of the owned ones still
    there. DRAs without our ownership tags are left alone (and block nothing here)."""
    left = []
    for dra in found:
        if not dra.owned:
            continue
        left.append(dra.association_id)
        if dra.lifecycle in ("DELETING", "CREATING"):
            continue  # under way / FSx may refuse to delete it while CREATING (harsher reading): next round
        try:
            fsx.delete_data_repository_association(AssociationId=dra.association_id, DeleteDataInFileSystem=False)
        except ClientError as exc:
            if error_code(exc) != "DataRepositoryAssociationNotFound":
                raise
    return left


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
    """Cluster deletion: one round deleting this cluster's ``fsx`` data repository associations, then (once they
    are gone) its file systems, then (once they are gone) their security group. Returns what is still there (DRA
    ids, file system ids, then the group id); empty when done.

    Called by the dependencies stage's teardown poll, which runs before the network teardown: a file system's
    network interface would otherwise keep the subnet and security groups from being deleted.
    """
    client = rt.client("fsx")
    found = observe_file_systems(client, tag)
    associations = delete_associations(client, observe_associations(client, tag, found))
    if associations:
        return associations
    left = delete_file_systems(client, found)
    if left:
        return left
    ec2 = rt.client("ec2")
    group = observe_security_group(ec2, tag)
    if group and not delete_security_group(ec2, group):
        return [group]
    return []
