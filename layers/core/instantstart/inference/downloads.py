"""Model downloads: ``POST /models`` (the ``DOWNLOAD_MODEL`` change, its apply and check steps) and the model list
read from the cluster's bucket (``models/``, ``fsx/models/``)."""

from __future__ import annotations

import logging
from contextlib import suppress
from datetime import UTC
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, guarded
from instantstart.clusters.nodes import record_result, writable_cluster
from instantstart.errors import StageFailed, UpstreamUnavailable
from instantstart.features import fsx
from instantstart.inference import builders
from instantstart.inference.cluster_access import (
    DownloadModelChange,
    _admin,
    _require_fsx_claim,
    cluster_bucket,
)
from instantstart.kube.client import dry_run
from instantstart.models.common import OperationType
from instantstart.models.inference import (
    INFERENCE_NAMESPACE,
    Destination,
    DownloadModelRequest,
    FsxListing,
    ModelDownloadAccepted,
    ModelList,
    StoredModel,
)
from instantstart.models.operation import OperationProgress
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime
from instantstart.store import keys

logger = logging.getLogger(__name__)


# -- model downloads -------------------------------------------------------------------------------------------------
DOWNLOAD_GUARD = "DOWNLOAD"
"""The guard kind of a model download (``store.keys.guard_sk``)."""


def download_guard(request: DownloadModelRequest) -> tuple[str, str]:
    """``(guard sort key, subject)`` of a download: one per destination and model id, whatever the revision (every
    revision of a model lands under the same prefix, ``models/<modelId>/`` or ``/fsx/models/<modelId>``: two at once
    would mix their files)."""
    subject = f"model {request.model_id} to {request.destination.value}"
    return keys.guard_sk(DOWNLOAD_GUARD, request.destination.value, request.model_id), subject


def download_model(rt: Runtime, tag: str, request: DownloadModelRequest) -> ModelDownloadAccepted:
    """Check the destination, then start the ``DOWNLOAD_MODEL`` change (a Job in namespace default).

    The download does not take the cluster's operation lock (it changes nothing of the cluster's shape and may run
    for an hour): it starts while a day-2 operation runs and day-2 operations start while it runs. It holds the
    guard of its model and destination instead (:func:`download_guard`): a second download of the same model to the
    same destination while one runs is refused. The cluster must be READY or DEGRADED.

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady``; ``OperationInProgress`` naming the running download of the same model and
            destination and its cancel route; ``FeatureNotEnabled`` (fsx without ``fsx-claim``).
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    guard = download_guard(request)
    held = rt.store.get_guard(tag, guard[0])  # early and read-only: the lock is the start's conditional write
    holder = rt.store.get_operation(held.operation_id) if held else None
    if holder is not None and not holder.status.terminal:
        raise guarded.guarded_in_progress(cluster, holder, guard[1])
    if request.destination is Destination.FSX:
        _require_fsx_claim(rt, tag, "destination")
    bucket = cluster_bucket(rt, tag)
    location, path = builders.model_location(request.destination, request.model_id, bucket)
    change = DownloadModelChange(request=request, bucket=bucket)
    op = changes.start_change(rt, cluster, OperationType.DOWNLOAD_MODEL, change, guard=guard)
    job = builders.download_job_name(request.model_id, request.revision, request.destination.value, op.operation_id)
    return ModelDownloadAccepted(
        model_id=request.model_id,
        destination=request.destination,
        location=location,
        model_path=path,
        job_name=job,
        operation=op,
    )


def _prefix_usage(s3: Any, bucket: str, prefix: str) -> tuple[int, int, str | None]:
    """``(bytes, objects, newest LastModified)`` under ``prefix`` (every page of S3 ``ListObjectsV2``)."""
    size = count = 0
    newest = None
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            size += int(obj.get("Size", 0))
            count += 1
            modified = obj.get("LastModified")
            if modified is not None:
                stamp = modified.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
                newest = max(newest or stamp, stamp)
    return size, count, newest


def _level(s3: Any, bucket: str, prefix: str) -> tuple[list[str], bool]:
    """Sub-prefixes of ``prefix`` and whether objects sit directly under it (``ListObjectsV2`` with ``Delimiter``)."""
    subs: list[str] = []
    has_objects = False
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
        subs += [str(p["Prefix"]) for p in page.get("CommonPrefixes", [])]
        has_objects = has_objects or bool(page.get("Contents"))
    return subs, has_objects


def model_prefixes(s3: Any, bucket: str, base: str = builders.MODELS_PREFIX) -> list[str]:
    """The prefixes of the models under ``base`` (``models/``, or ``fsx/models/`` for the FSx export):
    ``<base><name>/`` holding objects itself (an id without an organisation), else each ``<base><org>/<name>/``
    (S3 ``ListObjectsV2`` with ``Delimiter='/'``)."""
    found: list[str] = []
    first, _ = _level(s3, bucket, base)
    for prefix in first:
        subs, direct = _level(s3, bucket, prefix)
        if direct or not subs:
            found.append(prefix)
        else:
            found += subs
    return sorted(found)


def _stored(s3: Any, bucket: str, base: str, destination: Destination) -> list[StoredModel]:
    """The models under ``base`` with their size and object count (:func:`model_prefixes`, :func:`_prefix_usage`)."""
    models = []
    for prefix in model_prefixes(s3, bucket, base):
        size, count, newest = _prefix_usage(s3, bucket, prefix)
        model_id = prefix.removeprefix(base).rstrip("/")
        if destination is Destination.S3:
            location, path = f"s3://{bucket}/{prefix}", f"/s3/{prefix.rstrip('/')}"
        else:
            location, path = builders.model_location(Destination.FSX, model_id, bucket)
        models.append(
            StoredModel(
                model_id=model_id,
                destination=destination,
                location=location,
                model_path=path,
                size_bytes=size,
                files=count,
                last_modified=newest,
            )
        )
    return models


def fsx_listing(rt: Runtime, tag: str, bucket: str | None) -> tuple[FsxListing, bool]:
    """``(listing, read the export)``: whether the fsx file system's models are listed (its ``/models`` data
    repository association exports to ``s3://<bucket>/fsx/models/``, :func:`instantstart.features.fsx.listing`),
    and whether the export prefix is to be read (an association exists, whatever its lifecycle).

    Calls FSx ``DescribeFileSystems`` and ``DescribeDataRepositoryAssociations``.

    Raises:
        UpstreamUnavailable: FSx failed.
    """
    client = rt.client("fsx")
    try:
        found = fsx.observe_file_systems(client, tag)
        associations = fsx.observe_associations(client, tag, found)
    except ClientError as exc:
        raise UpstreamUnavailable(f"FSx DescribeFileSystems failed ({error_code(exc)}: {error_message(exc)})") from exc
    listed, reason, fs, dra = fsx.listing(found, associations, bucket)
    view = FsxListing(
        listed=listed,
        reason=reason,
        file_system_id=fs.file_system_id if fs else None,
        association_id=dra.association_id if dra else None,
        lifecycle=dra.lifecycle if dra else None,
        data_repository_path=dra.data_repository_path if dra else None,
    )
    return view, dra is not None


def list_models(rt: Runtime, tag: str) -> ModelList:
    """The models in the cluster's bucket under ``models/`` (destination s3) and those on the fsx feature's FSx for
    Lustre file system (destination fsx), with their size and object count.

    The file system is read from storage, not from records: its ``/models`` is exported by a data repository
    association to ``s3://<bucket>/fsx/models/`` (auto-export, asynchronous), which is listed like ``models/``.
    ``fsx.listed`` false says why it cannot be (no file system, a deployment type or Lustre version without data
    repository associations, the association missing or not AVAILABLE): the list is never silently short.

    Raises:
        NotFound: ``ClusterNotFound``.
        UpstreamUnavailable: S3 or FSx failed.
    """
    bucket = cluster_bucket(rt, tag)
    s3 = rt.client("s3")
    listing, exported = fsx_listing(rt, tag, bucket)
    try:
        models = _stored(s3, bucket, builders.MODELS_PREFIX, Destination.S3)
        if exported:
            models += _stored(s3, bucket, fsx.EXPORT_PREFIX, Destination.FSX)
    except ClientError as exc:
        if error_code(exc) == "NoSuchBucket":
            return ModelList(bucket=None, models=[], fsx=listing)
        raise UpstreamUnavailable(f"S3 ListObjectsV2 failed ({error_code(exc)}: {error_message(exc)})") from exc
    return ModelList(bucket=bucket, models=models, fsx=listing)


def _job_state(job: dict[str, Any]) -> tuple[str, str | None]:
    """``("Complete"|"Failed"|"Running", message)`` from a Job's conditions."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if str(cond.get("status")) == "True" and cond.get("type") in ("Complete", "Failed"):
            return str(cond["type"]), cond.get("message") or cond.get("reason")
    return "Running", None


def apply_download(rt: Runtime, p: StepPayload) -> StepResult:
    """Check the token Secret exists (when named), dry-run and apply the download Job (nothing for an operation that
    ended before the step ran: a cancel or a cluster delete stopped it).

    Raises:
        StageFailed: ``SecretNotFound`` (the Secret or its key is missing: the pod could never start); Kubernetes
            refusals verbatim.
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, DownloadModelChange)
    if op.status.terminal:  # cancelled (e.g. by a cluster delete) before this step ran: apply nothing
        return StepResult(status=f"operation {op.status.value}: no Job applied")
    request = change.request
    dyn = _admin(rt, p.cluster_tag)
    ref = request.hf_token_secret
    if ref is not None:
        secret = kube.get(dyn, "v1", "Secret", ref.name, INFERENCE_NAMESPACE)
        if secret is None or ref.key not in (secret.get("data") or {}):
            raise StageFailed(
                "SecretNotFound",
                f"hfTokenSecret: Secret {INFERENCE_NAMESPACE}/{ref.name} "
                + ("does not exist" if secret is None else f"has no key {ref.key}"),
            )
    job = builders.download_job(request, change.bucket, op.operation_id)
    name = job["metadata"]["name"]
    if kube.get(dyn, "batch/v1", "Job", name, INFERENCE_NAMESPACE) is not None:
        return StepResult(status=f"Job {INFERENCE_NAMESPACE}/{name} already applied")
    dry_run(dyn, job)
    stop_orphaned_jobs(dyn, job)
    kube.apply(dyn, job)
    location = job["spec"]["template"]["spec"]["containers"][0]["env"][2]["value"]
    observed = f"Job {INFERENCE_NAMESPACE}/{name} applied: {request.model_id}@{request.revision} -> {location}"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def _destination(job: dict[str, Any]) -> str | None:
    """The ``DESTINATION`` env of a download Job's containers (init containers first), or None."""
    spec = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for env in container.get("env") or []:
            if env.get("name") == "DESTINATION":
                return str(env.get("value"))
    return None


def stop_orphaned_jobs(dyn: Any, job: dict[str, Any]) -> list[str]:
    """Delete the unfinished download Jobs of the same model and destination as ``job`` (propagation
    ``Foreground``): the guard lets one download of a model to a destination run at a time, so such a Job belongs
    to a download that was cancelled (the cancel cannot delete it: the API's Kubernetes access is read-only) and
    would mix its files with this one's. Returns their names. Kubernetes list (label
    ``instantstart.io/model-download``) and delete, as cluster admin."""
    from kubernetes.dynamic.exceptions import NotFoundError

    from instantstart.kube import client as kube

    labels = job["metadata"]["labels"]
    selector = f"{builders.LABEL_MODEL_DOWNLOAD}={labels[builders.LABEL_MODEL_DOWNLOAD]}"
    wanted = _destination(job)
    stopped = []
    for other in kube.list_objects(dyn, "batch/v1", "Job", INFERENCE_NAMESPACE, selector):
        name = str(other["metadata"]["name"])
        if name == job["metadata"]["name"] or _destination(other) != wanted or _job_state(other)[0] != "Running":
            continue
        with suppress(NotFoundError):
            dyn.resources.get(api_version="batch/v1", kind="Job").delete(
                name=name, namespace=INFERENCE_NAMESPACE, body={"propagationPolicy": "Foreground"}
            )
        stopped.append(name)
    return stopped


def check_download(rt: Runtime, p: StepPayload) -> PollResult:
    """One round: the bytes and objects under the model's prefix (s3), then done when the Job is Complete.

    Raises:
        StageFailed: ``ModelDownloadFailed`` with the Job's condition message; ``ModelDownloadJobMissing`` when the
            Job disappeared before it completed.
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, DownloadModelChange)
    request = change.request
    name = builders.download_job_name(request.model_id, request.revision, request.destination.value, op.operation_id)
    job = kube.get(_admin(rt, p.cluster_tag), "batch/v1", "Job", name, INFERENCE_NAMESPACE)
    if job is None:
        raise StageFailed("ModelDownloadJobMissing", f"Job {INFERENCE_NAMESPACE}/{name} is gone before it completed")
    state, message = _job_state(job)
    progress: dict[str, Any] = {}
    if request.destination is Destination.S3 and change.bucket:
        prefix = f"{builders.MODELS_PREFIX}{request.model_id}/"
        try:
            size, count, _ = _prefix_usage(rt.client("s3"), change.bucket, prefix)
            progress = {"downloaded_bytes": size, "downloaded_files": count}
        except ClientError as exc:
            progress = {"observed": f"S3 ListObjectsV2 failed ({error_code(exc)}): progress unknown"}
    observed = f"Job {name} {state}" + (
        f": {progress['downloaded_files']} files, {progress['downloaded_bytes']} bytes"
        if "downloaded_files" in progress
        else ""
    )
    record_result(
        rt, op, OperationProgress.model_validate({**progress, "observed": progress.get("observed", observed)})
    )
    if state == "Failed":
        raise StageFailed("ModelDownloadFailed", f"Job {INFERENCE_NAMESPACE}/{name} failed: {message}")
    return PollResult(done=state == "Complete", status=observed[:256])


def stop_downloads(rt: Runtime, tag: str) -> list[str]:
    """A cluster delete's hook (``Teardown.BUCKET``: downloads write to the bucket): every download of cluster ``tag``
    still running is stopped and recorded CANCELLED with ``ClusterDeleted``, its guard released
    (:func:`instantstart.clusters.guarded.end_guarded_operations`: Step Functions ``StopExecution``), then its Job is
    deleted (propagation ``Foreground``, as cluster admin; an EKS cluster that cannot be reached any more has no
    Job to delete). Nothing to wait for: returns ``[]``.

    Raises:
        ClientError: Step Functions refused a stop (the delete's step retries or fails with it).
    """
    ended = guarded.end_guarded_operations(rt, tag)
    downloads = [op for op in ended if op.type is OperationType.DOWNLOAD_MODEL and op.change]
    if not downloads:
        return []
    try:
        dyn = _admin(rt, tag)
        resource = dyn.resources.get(api_version="batch/v1", kind="Job")
    except (ClientError, ValueError, OSError) as exc:
        logger.info("cluster %s: no Kubernetes API to delete the stopped downloads' Jobs (%s)", tag, exc)
        return []
    from kubernetes.dynamic.exceptions import NotFoundError

    for op in downloads:
        request = DownloadModelChange.model_validate(op.change).request
        name = builders.download_job_name(
            request.model_id, request.revision, request.destination.value, op.operation_id
        )
        with suppress(NotFoundError):
            resource.delete(name=name, namespace=INFERENCE_NAMESPACE, body={"propagationPolicy": "Foreground"})
    return []
