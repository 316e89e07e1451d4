"""The fsx feature's storage rounds: its file system, its models data repository association and its claim on,
or all of them removed (the rest of fsx converges like any add-on feature, :mod:`.converge`).
"""

from __future__ import annotations

from instantstart.clusters import records
from instantstart.features import fsx
from instantstart.features.catalog import FeatureSpec
from instantstart.features.plan import claim_names, live_file_system
from instantstart.features.writes import FeatureFailure, _Ctx, _kube
from instantstart.models.features import FsxRequest


def _converge_file_system(ctx: _Ctx, spec: FeatureSpec, req: FsxRequest, actions: list[str]) -> bool:
    """One round toward fsx's file system: security group and CreateFileSystem when absent, then (once AVAILABLE)
    its models data repository association (:func:`_converge_association`), then (once that is AVAILABLE) the
    PersistentVolume and claim ``fsx-claim``; True when all are in place."""
    assert req.file_system is not None
    obs, fo = ctx.obs, ctx.obs.features[spec.key]
    found = live_file_system(fo)
    if found is None:
        if fo.file_systems:  # the previous one is still DELETING
            return False
        if not obs.compute_subnets or not obs.vpc_id:
            raise FeatureFailure("NoComputeSubnet", "the HyperPod cluster reports no VpcConfig subnet to put FSx in")
        ec2 = ctx.rt.client("ec2")
        group = fo.security_group
        if group is None:
            group = fsx.create_security_group(ec2, ctx.tag, obs.vpc_id, list(obs.cluster_security_groups))
            actions.append(f"CreateSecurityGroup {group}")
        fs_id = fsx.create_file_system(
            ctx.rt.client("fsx"),
            ctx.tag,
            req.file_system,
            obs.compute_subnets[0],
            [group, *[g for g in obs.cluster_security_groups if g != group]],
        )
        actions.append(f"CreateFileSystem {fs_id}")
        return False
    if not fsx.matches(found, req.file_system):
        raise FeatureFailure(
            "FileSystemNotChanged",
            f"file system {found.file_system_id} is {found.storage_capacity} GiB {found.deployment_type} "
            f"({found.per_unit_storage_throughput} MB/s/TiB); it is not changed here: turn fsx off, then on again",
        )
    if found.lifecycle == "FAILED":
        raise FeatureFailure("FileSystemFailed", found.failure or f"file system {found.file_system_id} FAILED")
    if found.lifecycle != "AVAILABLE" or fo.kubernetes is None:
        return False
    if not _converge_association(ctx, found, fo.data_repository_associations, actions):
        return False
    if not claim_names() <= fo.kubernetes:
        kube = _kube()
        dyn = kube.connect(ctx.cluster_name, ctx.rt.region)
        for obj in fsx.claim_objects(found):
            kube.apply(dyn, obj)
            ns = obj["metadata"].get("namespace")
            actions.append(f"apply {obj['kind']}/{ns + '/' if ns else ''}{obj['metadata']['name']}")
    return True


def _converge_association(
    ctx: _Ctx, found: fsx.FileSystemObservation, associations: list[fsx.DataRepositoryAssociation], actions: list[str]
) -> bool:
    """One round toward the ``/models`` data repository association of an AVAILABLE file system (auto-export to
    ``s3://<cluster bucket>/fsx/models/``); True when it is AVAILABLE, or when FSx offers none for the file system
    (SCRATCH_1, Lustre before 2.12: the model list then says it cannot list it).

    Raises:
        FeatureFailure: ``DataRepositoryAssociationFailed`` (FAILED or MISCONFIGURED, FSx's FailureDetails verbatim).
    """
    if fsx.association_unsupported(found) is not None:
        return True
    dra = fsx.models_association(found, associations)
    if dra is None:
        if any(a.file_system_id == found.file_system_id and a.lifecycle == "DELETING" for a in associations):
            return False
        bucket = records.cluster_bucket(ctx.rt, ctx.tag)
        dra_id = fsx.create_models_association(ctx.rt.client("fsx"), ctx.tag, found.file_system_id, bucket)
        actions.append(f"CreateDataRepositoryAssociation {dra_id} {fsx.MODELS_PATH} -> {fsx.export_path(bucket)}")
        return False
    if dra.lifecycle in ("FAILED", "MISCONFIGURED"):
        raise FeatureFailure(
            "DataRepositoryAssociationFailed",
            f"data repository association {dra.association_id} is {dra.lifecycle}: "
            + (dra.failure or "FSx gave no FailureDetails"),
        )
    return dra.lifecycle in fsx.LISTED_LIFECYCLES


def _remove_file_system(ctx: _Ctx, spec: FeatureSpec, actions: list[str]) -> bool:
    """One round toward no fsx storage: the claim and volume, then our data repository associations
    (DeleteDataInFileSystem false) and, once they are gone, DeleteFileSystem (AVAILABLE or FAILED ones; a CREATING
    one is waited for), then (once the file system is gone) its security group. True when gone."""
    fo = ctx.obs.features[spec.key]
    if fo.kubernetes:
        kube = _kube()
        dyn = kube.connect(ctx.cluster_name, ctx.rt.region)
        for ref in sorted(fo.kubernetes, key=lambda r: not r.startswith("PersistentVolumeClaim/")):
            kind, _, rest = ref.partition("/")
            namespace, _, name = rest.rpartition("/")
            if kube.delete(dyn, "v1", kind, name, namespace or None):
                actions.append(f"delete {ref}")
    associations = fsx.delete_associations(ctx.rt.client("fsx"), fo.data_repository_associations)
    if associations:
        actions += [
            f"DeleteDataRepositoryAssociation {a.association_id}"
            for a in fo.data_repository_associations
            if a.owned and a.lifecycle not in ("DELETING", "CREATING")
        ]
        return False
    if fo.file_systems:
        deletable = [f for f in fo.file_systems if f.lifecycle in fsx.DELETABLE]
        fsx.delete_file_systems(ctx.rt.client("fsx"), deletable)
        actions += [f"DeleteFileSystem {f.file_system_id}" for f in deletable]
        return False
    if fo.security_group is not None:
        if not fsx.delete_security_group(ctx.rt.client("ec2"), fo.security_group):
            return False
        actions.append(f"DeleteSecurityGroup {fo.security_group}")
    return True
