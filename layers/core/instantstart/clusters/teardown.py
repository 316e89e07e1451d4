"""Steps of the delete-cluster workflow: teardown in reverse stage order, ownership checked.

Every step is idempotent (a redelivered task finds the resource already gone) and refuses to
touch a resource without the cluster's ownership tags. Poll loops wait until AWS reports the
resource gone before the next stage removes what it depends on.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import workflow
from instantstart.clusters.addons import ADDONS
from instantstart.errors import StageFailed
from instantstart.kube import objects
from instantstart.models.common import ClusterStatus, OperationStatus, StageName, iso, utcnow
from instantstart.naming import (
    eks_cluster_name,
    hyperpod_cluster_name,
    owned_by,
    storage_bucket_name,
    storage_role_name,
)
from instantstart.network import vpc
from instantstart.runtime import Runtime
from instantstart.store import keys

_GONE = ("ResourceNotFoundException", "ResourceNotFound", "NoSuchEntity", "NoSuchBucket", "404")


def mark_teardown(rt: Runtime, tag: str, generation: int, stage: StageName, status: str) -> dict[str, Any]:
    """Record teardown progress of a stage (``teardownStatus``: RUNNING, SUCCEEDED) on its record."""
    now = iso(utcnow())
    field = "teardownStartedAt" if status == "RUNNING" else "teardownEndedAt"
    rt.store.update(
        keys.cluster_pk(tag),
        keys.stage_sk(generation, stage),
        {"teardownStatus": status, field: now, "updatedAt": now},
    )
    if status == "RUNNING":
        cluster = rt.store.get_cluster(tag) or {}
        if cluster.get("currentOperationId"):
            workflow.mark_operation_running(rt, cluster["currentOperationId"])
    return {"stage": stage.value}


def delete_storage(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """Delete the ``s3-claim`` PVC and its PV, then the bucket if it is empty and ours.

    A bucket that still holds objects is kept (``bucketRetained``): deleting a cluster never
    deletes users' data.
    """
    from instantstart.kube.client import connect, delete

    try:
        dyn = connect(eks_cluster_name(tag), rt.region)
        delete(dyn, "v1", "PersistentVolumeClaim", objects.S3_CLAIM, objects.STORAGE_NAMESPACE)
        delete(dyn, "v1", "PersistentVolume", objects.S3_VOLUME)
    except ClientError as exc:
        if error_code(exc) not in _GONE:
            raise
    except ValueError:
        pass  # EKS cluster without an endpoint: nothing to delete in Kubernetes
    s3 = rt.client("s3")
    bucket = storage_bucket_name(tag, rt.account_id, rt.region)
    retained = False
    try:
        tags = s3.get_bucket_tagging(Bucket=bucket, ExpectedBucketOwner=rt.account_id).get("TagSet", [])
        if owned_by(tags, tag):
            if s3.list_objects_v2(Bucket=bucket, MaxKeys=1).get("KeyCount", 0):
                retained = True
            else:
                s3.delete_bucket(Bucket=bucket, ExpectedBucketOwner=rt.account_id)
        else:
            retained = True
    except ClientError as exc:
        if error_code(exc) not in (*_GONE, "NoSuchTagSet"):
            raise
    workflow.update_stage_resources(
        rt, tag=tag, generation=generation, stage=StageName.STORAGE, resources={"bucketRetained": retained}
    )
    return {"bucketRetained": retained}


def delete_hyperpod_cluster(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once the HyperPod cluster is gone; starts SageMaker ``DeleteCluster`` if needed."""
    sm = rt.client("sagemaker")
    name = hyperpod_cluster_name(tag)
    try:
        found = sm.describe_cluster(ClusterName=name)
    except ClientError as exc:
        if error_code(exc) in (*_GONE, "ValidationException"):
            return {"done": True}
        raise
    if found["ClusterStatus"] != "Deleting":
        tags = sm.list_tags(ResourceArn=found["ClusterArn"]).get("Tags", [])
        if not owned_by(tags, tag):
            raise StageFailed("ClusterNotOwned", f"HyperPod cluster {name} is not managed by InstantStart")
        sm.delete_cluster(ClusterName=name)
    return {"done": False, "status": "Deleting"}


def delete_addons(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once every add-on of the dependencies stage is gone; then deletes the storage role."""
    eks = rt.client("eks")
    name = eks_cluster_name(tag)
    remaining = []
    for addon in ADDONS:
        try:
            found = eks.describe_addon(clusterName=name, addonName=addon.name)["addon"]
        except ClientError as exc:
            if error_code(exc) in _GONE:
                continue
            raise
        remaining.append(addon.name)
        if found["status"] != "DELETING":
            eks.delete_addon(clusterName=name, addonName=addon.name)
    if remaining:
        return {"done": False, "remaining": remaining}
    try:
        for assoc in eks.list_pod_identity_associations(clusterName=name)["associations"]:
            eks.delete_pod_identity_association(clusterName=name, associationId=assoc["associationId"])
    except ClientError as exc:
        if error_code(exc) not in _GONE:
            raise
    _delete_storage_role(rt, tag)
    return {"done": True}


def _delete_storage_role(rt: Runtime, tag: str) -> None:
    iam = rt.client("iam")
    role = storage_role_name(tag)
    try:
        tags = iam.list_role_tags(RoleName=role)["Tags"]
    except ClientError as exc:
        if error_code(exc) in _GONE:
            return
        raise
    if not owned_by(tags, tag):
        raise StageFailed("RoleNotOwned", f"IAM role {role} is not managed by InstantStart")
    for policy in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        iam.delete_role_policy(RoleName=role, PolicyName=policy)
    iam.delete_role(RoleName=role)


def revoke_access(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """Delete the control plane's access entry (EKS ``DeleteAccessEntry``; absent is fine)."""
    try:
        rt.client("eks").delete_access_entry(
            clusterName=eks_cluster_name(tag), principalArn=rt.settings.CONTROL_PLANE_ROLE_ARN
        )
    except ClientError as exc:
        if error_code(exc) not in _GONE:
            raise
    return {"done": True}


def delete_eks_cluster(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once the EKS cluster is gone; starts EKS ``DeleteCluster`` if needed (ownership checked)."""
    eks = rt.client("eks")
    name = eks_cluster_name(tag)
    try:
        found = eks.describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if error_code(exc) in _GONE:
            return {"done": True}
        raise
    if found["status"] != "DELETING":
        if not owned_by(found.get("tags", {}), tag):
            raise StageFailed("ClusterNotOwned", f"EKS cluster {name} is not managed by InstantStart")
        eks.delete_cluster(name=name)
    return {"done": False, "status": "DELETING"}


def delete_network(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once every owned network resource is gone (:func:`instantstart.network.vpc.delete_network`)."""
    return vpc.delete_network(rt.client("ec2"), tag)


def complete_delete(rt: Runtime, operation_id: str, tag: str) -> dict[str, Any]:
    """The delete operation SUCCEEDED and the cluster DELETED (its tag can be created again)."""
    result = workflow.finish_operation(
        rt,
        operation_id=operation_id,
        tag=tag,
        status=OperationStatus.SUCCEEDED,
        cluster_status=ClusterStatus.DELETED,
    )
    rt.store.update(keys.cluster_pk(tag), keys.META, {"nodes": []}, removes=["eks", "hyperPod", "storage"])
    return result
