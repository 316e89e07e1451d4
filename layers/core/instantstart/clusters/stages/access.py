"""Stage ``access``: the control plane's EKS access entry, then a reachable Kubernetes API.

Create steps: ``grant_access`` -> poll ``check_kubernetes_access``. Teardown step: ``revoke_access``.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.clusters.stages.common import GONE, Step
from instantstart.models.cluster import RevokedGrant
from instantstart.models.common import StageName
from instantstart.models.resources import AccessGrant, AccessResources
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
) -> AccessGrant | None:
    """Access entry for ``principal`` (with the cluster's ownership tags and ``groups`` as its ``kubernetesGroups``).

    Returns what must be added to an entry that exists without the cluster's ownership tags (it predates the
    import): ``policy`` when it is not associated yet, the ``groups`` it lacks; None for an entry of ours or
    when nothing is missing. The caller records that grant before :func:`_apply_entry` makes it. EKS
    ``CreateAccessEntry``, ``DescribeAccessEntry``, ``ListAssociatedAccessPolicies``.
    """
    try:
        eks.create_access_entry(
            clusterName=cluster, principalArn=principal, tags=ownership_tags(tag), kubernetesGroups=groups or []
        )
        return None
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
    entry = eks.describe_access_entry(clusterName=cluster, principalArn=principal)["accessEntry"]
    if owned_by(entry.get("tags", {}), tag):
        return None
    have = eks.list_associated_access_policies(clusterName=cluster, principalArn=principal)
    associated = {str(a.get("policyArn")) for a in have.get("associatedAccessPolicies", [])}
    missing = [g for g in groups or [] if g not in (entry.get("kubernetesGroups") or [])]
    if policy in associated and not missing:
        return None
    return AccessGrant(
        principal_arn=principal, policy_arn=None if policy in associated else policy, kubernetes_groups=missing or None
    )


def _apply_entry(eks: Any, cluster: str, principal: str, policy: str, groups: list[str] | None = None) -> None:
    """``groups`` on ``principal``'s entry and ``policy`` at cluster scope (EKS ``UpdateAccessEntry`` when a group
    is missing, ``AssociateAccessPolicy``: both idempotent)."""
    if groups:
        ensure_kubernetes_groups(eks, cluster, principal, groups)
    eks.associate_access_policy(
        clusterName=cluster, principalArn=principal, policyArn=policy, accessScope={"type": "cluster"}
    )


def _merge_grants(recorded: list[AccessGrant], new: list[AccessGrant]) -> list[AccessGrant]:
    """One grant per principal: the recorded ones (an earlier attempt may have made them already, so they are
    never dropped) with the new policy and groups added."""
    by_principal = {g.principal_arn: g for g in recorded}
    for grant in new:
        old = by_principal.get(grant.principal_arn)
        if old is None:
            by_principal[grant.principal_arn] = grant
            continue
        groups = [
            *(old.kubernetes_groups or []),
            *(g for g in grant.kubernetes_groups or [] if g not in (old.kubernetes_groups or [])),
        ]
        by_principal[grant.principal_arn] = AccessGrant(
            principal_arn=grant.principal_arn,
            policy_arn=old.policy_arn or grant.policy_arn,
            kubernetes_groups=groups or None,
        )
    return list(by_principal.values())


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
    before the group existed; no API role configured: nothing to do). See :func:`ensure_kubernetes_groups`.

    On an entry without the cluster's ownership tags (it predates an import) the added group is recorded under
    the access stage's ``grants`` first, so the delete takes it back (EKS ``DescribeAccessEntry``; DynamoDB)."""
    api_principal = rt.settings.API_ROLE_ARN
    if not api_principal or api_principal == rt.settings.CONTROL_PLANE_ROLE_ARN:
        return
    eks, generation = rt.client("eks"), records.cluster_record(rt, tag).generation
    name = records.eks_name(rt, tag, generation)
    entry = eks.describe_access_entry(clusterName=name, principalArn=api_principal)["accessEntry"]
    if API_KUBERNETES_GROUP in (entry.get("kubernetesGroups") or []):
        return
    if not owned_by(entry.get("tags", {}), tag):
        recorded = records.stage_resources(rt, tag, generation, STAGE, AccessResources).grants or []
        grant = AccessGrant(principal_arn=api_principal, kubernetes_groups=[API_KUBERNETES_GROUP])
        grants = _merge_grants(recorded, [grant])
        if grants != recorded:
            records.update_stage_resources(
                rt, tag=tag, generation=generation, stage=STAGE, resources=AccessResources(grants=grants)
            )
    ensure_kubernetes_groups(eks, name, api_principal, [API_KUBERNETES_GROUP])


def grant_access(rt: Runtime, p: StepPayload) -> StepResult:
    """Access entry + cluster-admin access policy for the control plane's role, and a read-only entry
    (:data:`EKS_VIEW_POLICY`, Kubernetes group :data:`API_KUBERNETES_GROUP`) for the API function's role when
    ``API_ROLE_ARN`` is set (EKS access entries API).

    On an entry that existed before (``POST /clusters/import``), what is added (the policy, missing groups) is
    recorded first under the stage's ``grants``, so :func:`revoke_access` takes back exactly that even when this
    step is retried after the grant was made. Calls ``CreateAccessEntry``, ``DescribeAccessEntry``,
    ``ListAssociatedAccessPolicies``, ``UpdateAccessEntry`` and ``AssociateAccessPolicy``
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessEntry.html).
    """
    eks = rt.client("eks")
    name = records.eks_name(rt, p.cluster_tag, p.generation)
    principal = rt.settings.CONTROL_PLANE_ROLE_ARN
    api_principal = rt.settings.API_ROLE_ARN
    entries: list[tuple[str, str, list[str] | None]] = [(principal, EKS_ADMIN_POLICY, None)]
    if api_principal and api_principal != principal:
        entries.append((api_principal, EKS_VIEW_POLICY, [API_KUBERNETES_GROUP]))
    planned = [
        g for who, policy, groups in entries if (g := _ensure_entry(eks, name, who, policy, p.cluster_tag, groups))
    ]
    recorded = records.stage_resources(rt, p.cluster_tag, p.generation, STAGE, AccessResources).grants or []
    grants = _merge_grants(recorded, planned)
    if grants != recorded:
        records.update_stage_resources(
            rt, tag=p.cluster_tag, generation=p.generation, stage=STAGE, resources=AccessResources(grants=grants)
        )
    for who, policy, groups in entries:
        _apply_entry(eks, name, who, policy, groups)
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


def _take_back(eks: Any, cluster: str, grant: AccessGrant) -> None:
    """Remove what :func:`grant_access` added to a foreign entry: its policy association and the Kubernetes groups
    it added (the entry's other groups and policies stay). EKS ``DisassociateAccessPolicy``,
    ``DescribeAccessEntry``, ``UpdateAccessEntry``; already gone is fine."""
    try:
        if grant.policy_arn:
            try:
                eks.disassociate_access_policy(
                    clusterName=cluster, principalArn=grant.principal_arn, policyArn=grant.policy_arn
                )
            except ClientError as exc:
                if error_code(exc) not in GONE:
                    raise
        if grant.kubernetes_groups:
            entry = eks.describe_access_entry(clusterName=cluster, principalArn=grant.principal_arn)["accessEntry"]
            have = list(entry.get("kubernetesGroups") or [])
            keep = [g for g in have if g not in grant.kubernetes_groups]
            if keep != have:
                eks.update_access_entry(clusterName=cluster, principalArn=grant.principal_arn, kubernetesGroups=keep)
    except ClientError as exc:
        if error_code(exc) not in GONE:
            raise


def revoked_grants(grants: list[AccessGrant]) -> list[RevokedGrant]:
    """The API's view of the access stage's ``grants``: one :class:`RevokedGrant` per policy and per group set."""
    out: list[RevokedGrant] = []
    for g in grants:
        if g.policy_arn:
            out.append(RevokedGrant(resource_type="EksAccessEntry", name=g.principal_arn, grant=g.policy_arn))
        if g.kubernetes_groups:
            groups = ", ".join(g.kubernetes_groups)
            out.append(
                RevokedGrant(resource_type="EksAccessEntry", name=g.principal_arn, grant=f"kubernetesGroups: {groups}")
            )
    return out


def revoke_access(rt: Runtime, p: StepPayload) -> StepResult:
    """Delete the control plane's and the API's access entries when they carry the cluster's ownership tags (EKS
    ``DescribeAccessEntry``, ``DeleteAccessEntry``; absent is fine).

    An entry without them (it existed before ``POST /clusters/import``) is left in place, and what
    :func:`grant_access` added to it (the stage's ``grants``: an access policy, Kubernetes groups) is taken back
    (:func:`_take_back`). The control plane's own entry goes last: it is the access every other call used.
    """
    eks = rt.client("eks")
    name, principal = records.eks_name(rt, p.cluster_tag, p.generation), rt.settings.CONTROL_PLANE_ROLE_ARN
    grants = records.stage_resources(rt, p.cluster_tag, p.generation, STAGE, AccessResources).grants or []
    by_principal = {g.principal_arn: g for g in grants}
    api_principal = rt.settings.API_ROLE_ARN
    principals = [*([api_principal] if api_principal and api_principal != principal else []), principal]
    principals += [g for g in by_principal if g not in principals]
    retained = False
    for who in principals:
        if _revoke(eks, name, who, p.cluster_tag):
            continue
        if who in by_principal:
            _take_back(eks, name, by_principal[who])
        retained = retained or who == principal
    taken = [f"{r.grant} on {r.name}" for r in revoked_grants(grants)]
    status = "retained: access entry not created by InstantStart" if retained else "revoked"
    return StepResult(status=f"{status}; taken back: {'; '.join(taken)}" if taken else status)


CREATE_STEPS: dict[str, Step] = {"grant_access": grant_access, "check_kubernetes_access": check_kubernetes_access}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {"revoke_access": revoke_access}
"""The delete workflow's steps of this stage, by task action name."""
