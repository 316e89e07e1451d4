"""Stage ``access``: the control plane's EKS access entry, then a reachable Kubernetes API.

Create steps: ``grant_access`` -> poll ``check_kubernetes_access``. Teardown step: ``revoke_access``.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.clusters.stages.common import GONE, Step
from instantstart.models.common import StageName
from instantstart.models.resources import AccessResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import owned_by, ownership_tags
from instantstart.runtime import Runtime

STAGE = StageName.ACCESS
EKS_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def grant_access(rt: Runtime, p: StepPayload) -> StepResult:
    """Access entry + cluster-admin access policy for the control plane's role (EKS access entries API).

    Calls ``CreateAccessEntry`` and ``AssociateAccessPolicy``
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessEntry.html).
    """
    eks = rt.client("eks")
    name = records.eks_name(rt, p.cluster_tag)
    principal = rt.settings.CONTROL_PLANE_ROLE_ARN
    try:
        eks.create_access_entry(clusterName=name, principalArn=principal, tags=ownership_tags(p.cluster_tag))
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
    eks.associate_access_policy(
        clusterName=name, principalArn=principal, policyArn=EKS_ADMIN_POLICY, accessScope={"type": "cluster"}
    )
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=STAGE,
        resources=AccessResources(principal_arn=principal, access_policy_arn=EKS_ADMIN_POLICY),
    )
    return StepResult(status=principal)


def check_kubernetes_access(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the Kubernetes API answers with the EKS bearer token (GET /version, list namespaces).

    401/403 while the access entry propagates count as not done yet.
    """
    from kubernetes.client.exceptions import ApiException

    from instantstart.kube.client import connect, list_objects

    try:
        dyn = connect(records.eks_name(rt, p.cluster_tag), rt.region)
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
def revoke_access(rt: Runtime, p: StepPayload) -> StepResult:
    """Delete the control plane's access entry when it carries the cluster's ownership tags (EKS
    ``DescribeAccessEntry``, ``DeleteAccessEntry``; absent is fine).

    An entry without them (it existed before ``POST /clusters/import``) is left in place.
    """
    eks = rt.client("eks")
    name, principal = records.eks_name(rt, p.cluster_tag), rt.settings.CONTROL_PLANE_ROLE_ARN
    try:
        entry = eks.describe_access_entry(clusterName=name, principalArn=principal)["accessEntry"]
        if not owned_by(entry.get("tags", {}), p.cluster_tag):
            return StepResult(status="retained: access entry not created by InstantStart")
        eks.delete_access_entry(clusterName=name, principalArn=principal)
    except ClientError as exc:
        if error_code(exc) not in GONE:
            raise
    return StepResult(status="revoked")


CREATE_STEPS: dict[str, Step] = {"grant_access": grant_access, "check_kubernetes_access": check_kubernetes_access}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {"revoke_access": revoke_access}
"""The delete workflow's steps of this stage, by task action name."""
