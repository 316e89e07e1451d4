"""Stage ``storage``: the cluster's S3 bucket mounted as PV + PVC ``s3-claim`` (Mountpoint for S3 CSI driver).

The stage runs beside the network → hyperpod chain from the start of a create: ``ensure_bucket``
needs nothing else, so the bucket is ready long before the cluster is. The wait ``check_storage_access``
then holds until the Kubernetes API is ready for us (the ``access`` stage SUCCEEDED, which wakes it;
its poll is only a slow safety net), and the wait ``check_storage`` applies the PV and PVC and is
done once the claim is Bound. Teardown step: ``delete_storage`` (the bucket is kept when it holds data).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.clusters.registry import REGISTRY, Teardown
from instantstart.clusters.stages.common import GONE, Step
from instantstart.errors import StageFailed
from instantstart.kube import objects
from instantstart.models.cluster import StorageView
from instantstart.models.common import StageName, StageStatus
from instantstart.models.records import StageRecord
from instantstart.models.resources import StorageResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import owned_by, ownership_tags, storage_bucket_name, tag_list
from instantstart.runtime import Runtime

STAGE = StageName.STORAGE


def ensure_bucket(rt: Runtime, p: StepPayload) -> StepResult:
    """The cluster's S3 bucket, tagged with its owner and with every public access blocked.

    Calls S3 ``HeadBucket``/``CreateBucket``/``PutBucketTagging``/``PutPublicAccessBlock``.
    """
    tag = p.cluster_tag
    s3 = rt.client("s3")
    bucket = storage_bucket_name(tag, rt.account_id, rt.region)
    try:
        s3.head_bucket(Bucket=bucket, ExpectedBucketOwner=rt.account_id)
    except ClientError as exc:
        if error_code(exc) not in ("404", "NoSuchBucket", "NotFound"):
            raise
        kwargs: dict[str, Any] = {"Bucket": bucket}
        if rt.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": rt.region}
        s3.create_bucket(**kwargs)
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": tag_list(ownership_tags(tag))})
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    records.update_stage_resources(
        rt, tag=tag, generation=p.generation, stage=STAGE, resources=StorageResources(bucket_name=bucket)
    )
    return StepResult(status=bucket)


def pvc_phase(dyn: Any) -> str | None:
    """The phase of PVC ``s3-claim`` (``Pending``, ``Bound``...) or None when it does not exist."""
    from instantstart.kube.client import get

    pvc = get(dyn, "v1", "PersistentVolumeClaim", objects.S3_CLAIM, objects.STORAGE_NAMESPACE)
    phase = (pvc or {}).get("status", {}).get("phase")
    return str(phase) if phase else None


def access_stage(rt: Runtime, p: StepPayload) -> StageRecord | None:
    """The record of the workflow's ``access`` stage (DynamoDB ``GetItem``), None before it exists."""
    return rt.store.get_stage(p.cluster_tag, p.generation, StageName.ACCESS)


def waiting_for_access(rt: Runtime, p: StepPayload, access: StageRecord | None) -> str | None:
    """Why storage cannot touch Kubernetes yet (``access``, the :func:`access_stage` record, has not SUCCEEDED),
    recorded as the stage's observed status; None once it has."""
    if access is not None and access.status is StageStatus.SUCCEEDED:
        return None
    status = f"bucket ready; waiting for Kubernetes access (stage access {access.status.value if access else '-'})"
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=STAGE,
        resources=StorageResources(),
        observed_status=status,
    )
    return status


def check_storage_access(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the ``access`` stage SUCCEEDED (this control plane may use the cluster's Kubernetes API).

    Reads the ``access`` stage's record (DynamoDB ``GetItem``) and, while waiting, records why
    (``UpdateItem``). While ``access`` is PENDING or RUNNING the wait is held (its rounds do not spend its budget);
    once ``access`` FAILED or was CANCELLED in this operation, storage stops at once with ``StageInterrupted`` (the
    root cause is ``access``'s error), rather than wait out its own budget. An ``access`` FAILED or CANCELLED by an
    earlier operation is one this operation (a retry) has yet to begin (``begin_stage`` runs it again), so the wait
    is held as for PENDING. The ``access`` stage wakes this wait when it completes
    (``instantstart.clusters.steps.WAITING_ON``), so its long poll interval is only a safety net.
    """
    access = access_stage(rt, p)
    ended = access is not None and access.status in (StageStatus.FAILED, StageStatus.CANCELLED)
    if access is not None and ended and access.operation_id == p.operation_id:
        # storage cannot go on without Kubernetes access: stopped by that stage, not a cause of its own
        raise StageFailed(records.STAGE_INTERRUPTED, f"stopped because stage access {access.status.value.lower()}")
    status = waiting_for_access(rt, p, access)
    running = access is not None and (ended or access.status in (StageStatus.PENDING, StageStatus.RUNNING))
    return PollResult(done=status is None, status=status or "Kubernetes access granted", held=running)


def check_storage(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once ``s3-claim`` is Bound; records the storage view.

    Runs after ``check_storage_access``; should the ``access`` stage not have SUCCEEDED it only waits.
    Then it server-side applies the PersistentVolume and the PersistentVolumeClaim (idempotent) and reads
    the claim's phase.
    """
    from instantstart.kube.client import apply, connect

    status = waiting_for_access(rt, p, access_stage(rt, p))
    if status is not None:
        return PollResult(done=False, status=status)
    bucket = storage_bucket_name(p.cluster_tag, rt.account_id, rt.region)
    dyn = connect(records.eks_name(rt, p.cluster_tag, p.generation), rt.region)
    phase = pvc_phase(dyn)
    if phase is None:
        apply(dyn, objects.s3_persistent_volume(bucket, rt.region))
        apply(dyn, objects.s3_persistent_volume_claim())
        phase = pvc_phase(dyn)
    view = StorageView(
        bucket_name=storage_bucket_name(p.cluster_tag, rt.account_id, rt.region),
        persistent_volume_claim=objects.S3_CLAIM,
        namespace=objects.STORAGE_NAMESPACE,
        phase=phase,
    )
    rt.store.record_observations(p.cluster_tag, now=records.now(), storage=view)
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=STAGE,
        resources=StorageResources(
            persistent_volume=objects.S3_VOLUME,
            persistent_volume_claim=objects.S3_CLAIM,
            namespace=objects.STORAGE_NAMESPACE,
        ),
        observed_status=f"PVC {phase}",
    )
    return PollResult(done=phase == "Bound", status=phase)


# -- teardown ----------------------------------------------------------------------------------
def delete_storage(rt: Runtime, p: StepPayload) -> StepResult:
    """Delete the ``s3-claim`` PVC and its PV, ask SageMaker to delete the MLflow server or app created for the
    cluster (:func:`instantstart.mlflow.service.start_release`), then delete the bucket if it is empty and ours.

    A bucket that still holds objects is kept (``bucketRetained``): deleting a cluster never
    deletes users' data.
    """
    from instantstart.kube.client import connect, delete

    tag = p.cluster_tag
    try:
        dyn = connect(records.eks_name(rt, tag, p.generation), rt.region)
        delete(dyn, "v1", "PersistentVolumeClaim", objects.S3_CLAIM, objects.STORAGE_NAMESPACE)
        delete(dyn, "v1", "PersistentVolume", objects.S3_VOLUME)
    except ClientError as exc:
        if error_code(exc) not in GONE:
            raise
    except ValueError:
        pass  # EKS cluster without an endpoint: nothing to delete in Kubernetes
    # a running MLflow server created for the cluster writes to the bucket: ask for its deletion first (the add-ons
    # teardown waits until it is gone); its artifacts are users' data, so a bucket holding them is retained
    REGISTRY.teardown(Teardown.BUCKET, rt, tag)
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
        if error_code(exc) not in (*GONE, "NoSuchTagSet"):
            raise
    records.update_stage_resources(
        rt, tag=tag, generation=p.generation, stage=STAGE, resources=StorageResources(bucket_retained=retained)
    )
    return StepResult(status="bucket retained" if retained else "deleted")


CREATE_STEPS: dict[str, Step] = {
    "ensure_bucket": ensure_bucket,
    "check_storage_access": check_storage_access,
    "check_storage": check_storage,
}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {"delete_storage": delete_storage}
"""The delete workflow's steps of this stage, by task action name."""
