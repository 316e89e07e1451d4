"""What ``GET /clusters/{clusterTag}/features`` shows of one feature: its state built from the observation."""

from __future__ import annotations

from typing import Any

from instantstart.features.catalog import FeatureSpec, addons_of
from instantstart.features.observe import ClusterObservation
from instantstart.models.features import (
    FeatureState,
    InstalledAddon,
    InstalledAssociation,
    InstalledDataRepositoryAssociation,
    InstalledFileSystem,
)


def feature_state(spec: FeatureSpec, obs: ClusterObservation, desired: dict[str, Any] | None) -> FeatureState:
    """Feature ``spec`` as observed in ``obs`` (its add-ons, roles, associations, Kubernetes objects, buckets, file
    systems, settings), with ``desired``, what PATCH last applied to it (None: never)."""
    fo = obs.features[spec.key]
    addons = [
        InstalledAddon(
            addon_name=a.name,
            addon_version=a.version,
            status=a.status,
            managed=a.managed,
            needed_by=sorted(a.needed_by),
        )
        for a in (obs.addons[n] for n in addons_of(spec))
    ]
    primary = obs.addons[spec.addon] if spec.addon else None
    associations = [
        InstalledAssociation(namespace=a.namespace, service_account=a.service_account, association_id=a.association_id)
        for found in fo.associations.values()
        for a in found
    ]
    enabled = obs.enabled(spec)
    settings = None
    if spec.tiered_storage:
        settings = dict(obs.tiered_storage or {})
    if spec.prometheus_workspace and fo.prometheus_workspaces:
        settings = {
            "prometheusWorkspaces": [
                {
                    "workspaceId": w.workspace_id,
                    "arn": w.arn,
                    "status": w.status,
                    "prometheusEndpoint": w.prometheus_endpoint,
                }
                for w in fo.prometheus_workspaces
            ]
        }
    return FeatureState(
        enabled=enabled,
        desired=desired,
        version=primary.version if primary else None,
        status=primary.status if primary else (obs.tiered_storage or {}).get("Mode") if spec.tiered_storage else None,
        settings=settings,
        managed=bool(primary.managed) if primary else any(fo.roles.values()),
        addons=addons,
        roles=[arn for arn in fo.roles.values() if arn],
        pod_identity_associations=associations,
        kubernetes_objects=(list(spec.kubernetes_objects) if enabled and not spec.operator_objects else [])
        + sorted(fo.kubernetes or ()),
        kubernetes_unknown=dict(fo.kubernetes_unknown),
        buckets=[fo.tls_bucket] if fo.tls_bucket else [],
        file_systems=[
            InstalledFileSystem(
                file_system_id=f.file_system_id,
                lifecycle=f.lifecycle,
                storage_capacity=f.storage_capacity,
                deployment_type=f.deployment_type,
                per_unit_storage_throughput=f.per_unit_storage_throughput,
                dns_name=f.dns_name,
                mount_name=f.mount_name,
                file_system_type_version=f.file_system_type_version,
                data_repository_associations=[
                    InstalledDataRepositoryAssociation(
                        association_id=a.association_id,
                        lifecycle=a.lifecycle,
                        file_system_path=a.file_system_path,
                        data_repository_path=a.data_repository_path,
                        failure=a.failure,
                    )
                    for a in fo.data_repository_associations
                    if a.file_system_id == f.file_system_id
                ],
            )
            for f in fo.file_systems
        ],
        security_groups=[fo.security_group] if fo.security_group else [],
    )
