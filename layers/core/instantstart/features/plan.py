"""The diff of a features PATCH: which requested features differ from what AWS reports now.

Pure rules over a :class:`~instantstart.features.observe.ClusterObservation` (no AWS call), so the API (to
answer ``unchanged`` without starting anything), the workflow (to act only where needed, also on a redelivered
task) and the tests use the same answer.
"""

from __future__ import annotations

from typing import Any

from instantstart.features import amp, fsx, kuberay
from instantstart.features.catalog import (
    FEATURES,
    FeatureSpec,
    feature_role_name,
    own_addons,
    roles_of,
    wanted_addons,
)
from instantstart.features.observe import ClusterObservation, FeatureObservation
from instantstart.models.features import (
    AddonFeatureRequest,
    FsxRequest,
    KubeRayRequest,
    ObservabilityRequest,
    TieredCheckpointingRequest,
    UpdateFeaturesRequest,
)

FeatureRequest = AddonFeatureRequest | TieredCheckpointingRequest | FsxRequest | KubeRayRequest | ObservabilityRequest


def requested(request: UpdateFeaturesRequest) -> dict[str, FeatureRequest]:
    """The features present in the body, by API key (a feature left out is not touched)."""
    out: dict[str, FeatureRequest] = {}
    for name, info in UpdateFeaturesRequest.model_fields.items():
        value = getattr(request, name)
        if value is not None:
            out[str(info.alias)] = value
    return out


def _tiered_matches(obs: ClusterObservation, req: TieredCheckpointingRequest) -> bool:
    config = obs.tiered_storage or {}
    if not req.enabled:
        return config.get("Mode") != "Enable"
    if config.get("Mode") != "Enable":
        return False
    pct = req.instance_memory_allocation_percentage
    return pct is None or config.get("InstanceMemoryAllocationPercentage") == pct


def _identity_in_place(spec: FeatureSpec, obs: ClusterObservation) -> bool:
    fo = obs.features[spec.key]
    roles_ok = all(arn is not None for arn in fo.roles.values())
    assocs_ok = all(bool(found) for found in fo.associations.values())
    return roles_ok and assocs_ok and (not spec.tls_bucket or fo.tls_bucket is not None)


def live_file_system(fo: FeatureObservation) -> fsx.FileSystemObservation | None:
    """The feature's file system that is not being deleted, if any."""
    return next((f for f in fo.file_systems if f.lifecycle != "DELETING"), None)


def claim_names() -> set[str]:
    """``Kind/namespace/name`` of the fsx PersistentVolume and claim."""
    return {f"PersistentVolume/{fsx.VOLUME}", f"PersistentVolumeClaim/{fsx.NAMESPACE}/{fsx.CLAIM}"}


def _file_system_in_place(fo: FeatureObservation, req: FsxRequest) -> bool:
    """fsx with ``fileSystem``: an AVAILABLE file system as requested, its models data repository association
    AVAILABLE (when FSx offers DRAs for it), its security group, and (observed in Kubernetes) the PersistentVolume
    and claim. Not observed in Kubernetes (the API) -> not known in place."""
    if req.file_system is None:
        return True
    found = live_file_system(fo)
    if found is None or found.lifecycle != "AVAILABLE" or not fsx.matches(found, req.file_system):
        return False
    if not association_in_place(found, fo):
        return False
    return fo.security_group is not None and fo.kubernetes_complete and claim_names() <= (fo.kubernetes or set())


def association_in_place(found: fsx.FileSystemObservation, fo: FeatureObservation) -> bool:
    """The file system's ``/models`` data repository association is AVAILABLE, or FSx offers none for it (then the
    model list says why it cannot list the file system)."""
    if fsx.association_unsupported(found) is not None:
        return True
    dra = fsx.models_association(found, fo.data_repository_associations)
    return dra is not None and dra.lifecycle in fsx.LISTED_LIFECYCLES


def operator_in_place(fo: FeatureObservation, enabled: bool) -> bool:
    """kubeRay: every operator object exists (on) or none does (off), as the workflow read them from Kubernetes;
    not observed (the API) -> not known in place."""
    if not fo.kubernetes_complete or fo.kubernetes is None:
        return False
    wanted = {kuberay.object_ref(o) for o in kuberay.operator_objects()}
    return wanted <= fo.kubernetes if enabled else not fo.kubernetes


def _nothing_left(spec: FeatureSpec, obs: ClusterObservation) -> bool:
    """Off: nothing this feature created remains and no add-on still lists it as a needer."""
    fo = obs.features[spec.key]
    if any(arn is not None for arn in fo.roles.values()) or fo.tls_bucket is not None:
        return False
    if fo.file_systems or fo.security_group is not None or fo.kubernetes or fo.prometheus_workspaces:
        return False
    if any(a.owned for a in fo.data_repository_associations):
        return False
    if any(obs.addons[a].present and (a == spec.addon or obs.addons[a].managed) for a in own_addons(spec)):
        return False
    if any(spec.key in obs.addons[dep].needed_by for dep in spec.requires if obs.addons[dep].present):
        return False
    if not spec.addon:  # associations we made ourselves (those of an add-on go with it)
        return not any(fo.associations.values())
    return True


def _roles_in_place(spec: FeatureSpec, addon: str, obs: ClusterObservation, present: bool) -> bool:
    """The roles of ``addon`` all exist with their associations (``present``), or none of the roles exists."""
    fo = obs.features[spec.key]
    for role in roles_of(spec, addon):
        arn = fo.roles.get(feature_role_name(obs.tag, role))
        if present and (arn is None or not fo.associations.get((role.namespace, role.service_account))):
            return False
        if not present and arn is not None:
            return False
    return True


def workspace_in_place(spec: FeatureSpec, obs: ClusterObservation, wanted: bool) -> bool:
    """Prometheus workspace: wanted, one ACTIVE workspace that the feature's add-on configuration names; not
    wanted, none at all (DELETING ones included)."""
    fo = obs.features[spec.key]
    if not wanted:
        return not fo.prometheus_workspaces
    ws = amp.live(fo.prometheus_workspaces)
    assert spec.addon is not None
    return ws is not None and ws.status == "ACTIVE" and amp.references(obs.addons[spec.addon].configuration, ws)


def parts_in_place(spec: FeatureSpec, req: FeatureRequest, obs: ClusterObservation) -> bool:
    """A feature with options (observability, on): every add-on the request turns on exists (the feature's own
    at the pinned version) with its roles and associations, and every one it turns off that this feature installed
    is gone with its roles; the Prometheus workspace exists and is referenced exactly when the feature's add-on is
    on. An add-on installed outside this control plane is taken as it is (no role, no workspace of ours)."""
    wanted = wanted_addons(spec, req)
    version = getattr(req, "version", None)
    for name in own_addons(spec):
        addon = obs.addons[name]
        if name in wanted:
            if not addon.present:
                return False
            if not addon.managed:
                continue
            if name == spec.addon and version is not None and addon.version != version:
                return False
            if not _roles_in_place(spec, name, obs, True):
                return False
        else:
            if addon.present and addon.managed:
                return False
            if not _roles_in_place(spec, name, obs, False):
                return False
    if spec.prometheus_workspace and spec.addon:
        primary = obs.addons[spec.addon]
        if not (spec.addon in wanted and primary.present and not primary.managed):
            return workspace_in_place(spec, obs, spec.addon in wanted)
    return True


def in_place(spec: FeatureSpec, req: FeatureRequest, obs: ClusterObservation) -> bool:
    """True when AWS already matches ``req`` for this feature: the PATCH makes no write for it.

    On: its add-on exists (at the pinned version, if any) with every add-on it requires, its roles, pod identity
    associations and bucket exist, and its cluster setting is as asked. Off: none of what it creates exists and
    no shared add-on still records it as a needer.
    """
    if spec.operator_objects:
        return operator_in_place(obs.features[spec.key], req.enabled)
    if spec.tiered_storage and isinstance(req, TieredCheckpointingRequest):
        setting = _tiered_matches(obs, req)
        if not req.enabled:
            return setting and _nothing_left(spec, obs)
        return setting and _identity_in_place(spec, obs) and all(obs.addons[d].present for d in spec.requires)
    if not req.enabled:
        return _nothing_left(spec, obs)
    if spec.companions or spec.addon_option:
        return all(obs.addons[d].present for d in spec.requires) and parts_in_place(spec, req, obs)
    assert spec.addon is not None
    addon = obs.addons[spec.addon]
    version = getattr(req, "version", None)
    if not addon.present or (version is not None and addon.version != version):
        return False
    if isinstance(req, FsxRequest) and not _file_system_in_place(obs.features[spec.key], req):
        return False
    return all(obs.addons[d].present for d in spec.requires) and _identity_in_place(spec, obs)


def plan(request: UpdateFeaturesRequest, obs: ClusterObservation) -> tuple[list[str], list[str]]:
    """``(to_change, unchanged)``: the requested feature keys that differ from AWS now, and those that do not."""
    change: list[str] = []
    same: list[str] = []
    for key, req in requested(request).items():
        (same if in_place(FEATURES[key], req, obs) else change).append(key)
    return change, same


def compatible_versions(eks: Any, addon_name: str, kubernetes_version: str) -> list[str]:
    """Versions of ``addon_name`` EKS offers for ``kubernetes_version``, the default (newest compatible) first.

    Calls EKS ``DescribeAddonVersions`` (addonName, kubernetesVersion), every page.
    https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAddonVersions.html
    """
    infos: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"addonName": addon_name, "kubernetesVersion": kubernetes_version}
    while True:
        out = eks.describe_addon_versions(**kwargs)
        for addon in out.get("addons", []):
            if addon.get("addonName") == addon_name:
                infos += addon.get("addonVersions", [])
        if not out.get("nextToken"):
            break
        kwargs["nextToken"] = out["nextToken"]

    def default(info: dict[str, Any]) -> bool:
        return any(
            c.get("defaultVersion") and c.get("clusterVersion") == kubernetes_version
            for c in info.get("compatibilities", [])
        )

    ordered = sorted(infos, key=lambda i: not default(i))  # stable: EKS lists newest first
    return [str(i["addonVersion"]) for i in ordered]
