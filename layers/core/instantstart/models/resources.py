"""What each stage records about the AWS and Kubernetes resources it produced (a stage record's ``resources``).

One model per stage; a step writes only the fields it knows (None fields are not written), and the
store merges them key by key, so parallel steps of one stage never lose each other's ids. The API
shows the same map under ``stages[].resources``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer, model_validator
from pydantic.alias_generators import to_camel

from instantstart.models.autoscaling import KarpenterResources


class StageResources(BaseModel):
    """Base of the per-stage resource models: camelCase keys, unknown keys ignored on read."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True)


class NetworkResources(StageResources):
    """The ``network`` stage: VPC, control-plane subnets, gateways, endpoint, security group, EKS cluster, and the
    HyperPod compute subnets (created while EKS creates; a group add records its own here too)."""

    vpc_id: str | None = None
    cidr_block: str | None = None
    zones: list[str] | None = None
    refused_zones: list[str] | None = None  # zones EKS CreateCluster refused for the control plane
    public_subnet_ids: list[str] | None = None
    private_subnet_ids: list[str] | None = None
    internet_gateway_id: str | None = None
    public_route_table_id: str | None = None
    private_route_table_id: str | None = None
    nat_gateway_id: str | None = None
    nat_gateway_state: str | None = None
    s3_endpoint_id: str | None = None
    security_group_id: str | None = None
    eks_cluster_name: str | None = None
    eks_cluster_arn: str | None = None
    compute_subnet_id: str | None = None
    compute_subnet_cidr: str | None = None
    compute_subnet_source: str | None = None
    dedicated_subnet_ids: dict[str, str] | None = None
    """Instance group name -> its dedicated subnet (``dedicatedSubnet: true``)."""


class AccessGrant(StageResources):
    """What the ``access`` stage added to an access entry it did not create (it existed before the import):
    an access policy association and/or Kubernetes groups; the teardown takes exactly these back."""

    principal_arn: str
    policy_arn: str | None = None
    kubernetes_groups: list[str] | None = None


class AccessResources(StageResources):
    """The ``access`` stage: the EKS access entry of the control plane's role and what the API answered."""

    principal_arn: str | None = None
    access_policy_arn: str | None = None
    api_principal_arn: str | None = None
    """The API function's role, given a read-only entry (``api_access_policy_arn``) for GET .../features."""
    api_access_policy_arn: str | None = None
    api_kubernetes_groups: list[str] | None = None
    """The API entry's ``kubernetesGroups`` (RBAC in the cluster binds them, e.g. to invoke a model server)."""
    kubernetes_version: str | None = None
    namespaces: int | None = None
    grants: list[AccessGrant] | None = None
    """Grants on foreign access entries (recorded before the call that makes them, so a retry keeps them)."""


class AddonResource(StageResources):
    """One EKS add-on as last observed."""

    status: str
    role_arn: str | None = None


ADDON_KEY_PREFIX = "addon:"


class DependenciesResources(StageResources):
    """The ``dependencies`` stage: add-ons (stored as ``addon:<name>`` keys) and applied Kubernetes objects."""

    addons: dict[str, AddonResource] = {}
    kubernetes_objects: list[str] | None = None
    imported_addons: list[str] | None = None
    """Add-ons present before ``POST /clusters/import``: never deleted by this control plane."""

    @model_validator(mode="before")
    @classmethod
    def _gather_addons(cls, data: Any) -> Any:
        if isinstance(data, dict) and "addons" not in data:
            addons = {k.removeprefix(ADDON_KEY_PREFIX): v for k, v in data.items() if k.startswith(ADDON_KEY_PREFIX)}
            data = {k: v for k, v in data.items() if not k.startswith(ADDON_KEY_PREFIX)} | {"addons": addons}
        return data

    @model_serializer(mode="wrap")
    def _flatten_addons(self, handler: Any) -> dict[str, Any]:
        # One key per add-on: parallel add-on steps each write their own key of the stage's map.
        out: dict[str, Any] = handler(self)
        addons = out.pop("addons", {}) or {}
        return out | {f"{ADDON_KEY_PREFIX}{name}": value for name, value in addons.items()}


class ComputeSubnet(StageResources):
    """The HyperPod compute subnet of a zone, as :func:`instantstart.network.vpc.ensure_compute_subnet` found it."""

    subnet_id: str
    route_table_id: str
    cidr_block: str
    source: str
    """``reused`` (the zone's tagged ``hp-compute-<az>`` subnet) or ``created``."""
    owner_tag: str | None = None
    """The cluster tag the subnet carries (``instantstart:cluster-tag``): which cluster's control plane created it."""


class HyperPodResources(StageResources):
    """The ``hyperpod`` stage: the HyperPod cluster (its subnets are the ``network`` stage's)."""

    hyper_pod_cluster_arn: str | None = None
    karpenter: KarpenterResources | None = None
    """Managed Karpenter as the last UPDATE_AUTOSCALING operation left it (written whole; disabled when off)."""


class StorageResources(StageResources):
    """The ``storage`` stage: the S3 bucket and the ``s3-claim`` volume."""

    bucket_name: str | None = None
    persistent_volume: str | None = None
    persistent_volume_claim: str | None = None
    namespace: str | None = None
    bucket_retained: bool | None = None


class VerifyResources(StageResources):
    """The ``verify`` stage: what the last check counted."""

    ready_nodes: int | None = None
    expected_nodes: int | None = None
    pvc_phase: str | None = None
    addons_active: int | None = None
    nodes_ready_at: str | None = None
    """When a check first saw every group at target (ISO-8601); empty while a group is below target. An add-on
    still not ACTIVE ``addonGraceSeconds`` after it (or after this attempt began, whichever is later) fails."""
    """Checks that found every group at target while an add-on was not ACTIVE yet (its grace period)."""
