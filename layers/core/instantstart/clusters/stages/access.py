"""Stage ``access``: the control plane's EKS access entry, then a reachable Kubernetes API.

Create steps: ``grant_access`` -> poll ``check_kubernetes_access``. Teardown step: ``revoke_access``.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.clusters.stages.common import GONE, Step
from instantstart.models.common import StageName
from instantstart.models.resources import AccessResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import API_KUBERNETES_GROUP, owned_by, ownership_tags
from instantstart.runtime import Runtime

STAGE = StageName.ACCESS
EKS_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
EKS_VIEW_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
"""The API function's access policy: the Kubernetes ``view`` role's verbs (get/list/watch) on namespaced objects
(Namespaces, ServiceAccounts, Deployments, PersistentVolumeClaims, ...). It does not read cluster-scoped objects
such as CustomResourceDefinitions, ClusterRoles or PersistentVolumes, nor Secrets: the API shows those kinds as
``unknown`` (AmazonEKSAdminViewPolicy would read them, Secrets included; the narrower policy is kept)."""


def _ensure_entry(
    eks: Any, cluster: str, principal: str, policy: str, tag: str, groups: list[str] | None = None
) -> None:
    """Access entry for ``principal`` (with the cluster's ownership tags and ``groups`` as its ``kubernetesGroups``;
    one that exists is kept, see :func:`ensure_kubernetes_groups`) and ``policy`` at cluster scope (EKS
    ``CreateAccessEntry``, ``AssociateAccessPolicy``: both idempotent here)."""
    try:
        eks.create_access_entry(
            clusterName=cluster, principalArn=principal, tags=ownership_tags(tag), kubernetesGroups=groups or []
        )
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
        if groups:
            ensure_kubernetes_groups(eks, cluster, principal, groups)
    eks.associate_access_policy(
        clusterName=cluster, principalArn=principal, policyArn=policy, accessScope={"type": "cluster"}
    )


def ensure_kubernetes_groups(eks: Any, cluster: str, principal: str, groups: list[str]) -> list[str]:
    """Add ``groups`` to the ``kubernetesGroups`` of ``principal``'s access entry when one is missing (EKS
    ``DescribeAccessEntry``, then ``UpdateAccessEntry`` with the union; the entry's other groups are kept).
    Returns the entry's groups.

    Raises:
        botocore.exceptions.ClientError: ``ResourceNotFoundException`` (no entry), ``AccessDeniedException``.
    """
    entry = eks.describe_access_entry(clusterName=cluster, principalArn=principal)["accessEntry"]
    have = list(entry.get("kubernetesGroups") or [])
    missing = [g for g in groups if g not in have]
    if missing:
        have = [*have, *missing]
        eks.update_access_entry(clusterName=cluster, principalArn=principal, kubernetesGroups=have)
    return have


def ensure_api_kubernetes_group(rt: Runtime, tag: str) -> None:
    """The API function's access entry lists :data:`API_KUBERNETES_GROUP` (for clusters whose access stage ran
    before the group existed; no API role configured: nothing to do). See :func:`ensure_kubernetes_groups`."""
    api_principal = rt.settings.API_ROLE_ARN
    if api_principal and api_principal != rt.settings.CONTROL_PLANE_ROLE_ARN:
        ensure_kubernetes_groups(rt.client("eks"), records.eks_name(rt, tag), api_principal, [API_KUBERNETES_GROUP])


def grant_access(rt: Runtime, p: StepPayload) -> StepResult:
    """Access entry + cluster-admin access policy for the control plane's role, and a read-only entry
    (:data:`EKS_VIEW_POLICY`, Kubernetes group :data:`API_KUBERNETES_GROUP`) for the API function's role when
    ``API_ROLE_ARN`` is set (EKS access entries API).

    Calls ``CreateAccessEntry`` and ``AssociateAccessPolicy``
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessEntry.html).
    """
    eks = rt.client("eks")
    name = records.eks_name(rt, p.cluster_tag, p.generation)
    principal = rt.settings.CONTROL_PLANE_ROLE_ARN
    _ensure_entry(eks, name, principal, EKS_ADMIN_POLICY, p.cluster_tag)
    api_principal = rt.settings.API_ROLE_ARN
    if api_principal and api_principal != principal:
        _ensure_entry(eks, name, api_principal, EKS_VIEW_POLICY, p.cluster_tag, [API_KUBERNETES_GROUP])
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=STAGE,
        resources=AccessResources(
            principal_arn=principal,
            access_policy_arn=EKS_ADMIN_POLICY,
            api_principal_arn=api_principal or None,
            api_access_policy_arn=EKS_VIEW_POLICY if api_principal else None,
            api_kubernetes_groups=[API_KUBERNETES_GROUP] if api_principal else None,
        ),
    )
    return StepResult(status=principal)


def check_kubernetes_access(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the Kubernetes API answers with the EKS bearer token (GET /version, list namespaces).

    401/403 while the access entry propagates count as not done yet.
    """
    from kubernetes.client.exceptions import ApiException

    from instantstart.kube.client import connect, list_objects

    try:
        dyn = connect(records.eks_name(rt, p.cluster_tag, p.generation), rt.region)
        version = dyn.version.get("kubernetes", {}).get("gitVersion")
        namespaces = [n["metadata"]["name"] for n in list_objects(dyn, "v1", "Namespace")]
    except ApiException as exc:
        if exc.status in (401, 403):
            return PollResult(done=False, status=f"HTTP {exc.status}")
        raise
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=STAGE,
        resources=AccessResources(kubernetes_version=version, namespaces=len(namespaces)),
        observed_status=f"Kubernetes {version} reachable",
    )
    return PollResult(done=True, status=version)


# -- teardown ----------------------------------------------------------------------------------
def _revoke(eks: Any, cluster: str, principal: str, tag: str) -> bool:
    """Delete ``principal``'s access entry when it carries the cluster's ownership tags; False when one without
    them is left in place (absent is fine)."""
    try:
        entry = eks.describe_access_entry(clusterName=cluster, principalArn=principal)["accessEntry"]
        if not owned_by(entry.get("tags", {}), tag):
            return False
        eks.delete_access_entry(clusterName=cluster, principalArn=principal)
    except ClientError as exc:
        if error_code(exc) not in GONE:
            raise
    return True


def revoke_access(rt: Runtime, p: StepPayload) -> StepResult:
    """Delete the control plane's and the API's access entries when they carry the cluster's ownership tags (EKS
    ``DescribeAccessEntry``, ``DeleteAccessEntry``; absent is fine).

    An entry without them (it existed before ``POST /clusters/import``) is left in place.
    """
    eks = rt.client("eks")
    name, principal = records.eks_name(rt, p.cluster_tag, p.generation), rt.settings.CONTROL_PLANE_ROLE_ARN
    api_principal = rt.settings.API_ROLE_ARN
    if api_principal and api_principal != principal:
        _revoke(eks, name, api_principal, p.cluster_tag)
    if not _revoke(eks, name, principal, p.cluster_tag):
        return StepResult(status="retained: access entry not created by InstantStart")
    return StepResult(status="revoked")


CREATE_STEPS: dict[str, Step] = {"grant_access": grant_access, "check_kubernetes_access": check_kubernetes_access}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {"revoke_access": revoke_access}
"""The delete workflow's steps of this stage, by task action name."""
