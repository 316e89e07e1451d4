"""Model downloads and self-managed inference: the API side, the day-2 changes and the reads.

Writes are operations (the API function's Kubernetes access entry is view-only): ``POST /models`` checks the
destination (fsx: claim ``fsx-claim`` present, else 409 naming ``fsx``) and starts ``DOWNLOAD_MODEL``, whose steps
(cluster admin) check the token Secret exists, dry-run and apply the Job (:func:`builders.download_job`), then wait
for the Job's completion while recording the bytes and files under the model's prefix (S3 ``ListObjectsV2``).
``POST /inference/deployments`` checks the instance type against the cluster's groups (SageMaker
``DescribeCluster``) and its GPUs (EC2 ``DescribeInstanceTypes``), then ``CREATE_INFERENCE_DEPLOYMENT`` dry-runs and
applies the Deployment and Service. ``PATCH`` (scale) refuses a scale-in that would remove a pod serving a bound
model (:func:`rules.check_scale_in`); its ``UPDATE_INFERENCE_DEPLOYMENT`` sets every pod's
``controller.kubernetes.io/pod-deletion-cost`` from its assignment (idle lower than bound) before it changes
``spec.replicas``. ``DELETE`` removes the Deployment, Service and router objects. ``POST .../router`` applies the
SGLang router (and a KEDA ``ScaledObject`` when asked, 409 when KEDA's CRD is not served).

Reads (deployments, pods, claims, API discovery) go through the API role's view entry within the features' read
budget (:func:`instantstart.training.service.read_kubernetes`); the model list reads the bucket: ``models/`` and
``fsx/models/``, where the fsx feature's data repository association exports the file system's ``/models``.
"""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, records, service
from instantstart.clusters.nodes import record_result, writable_cluster
from instantstart.errors import Conflict, NotFound, StageFailed, UpstreamUnavailable
from instantstart.features import fsx
from instantstart.features.observe import KUBERNETES_READ_SECONDS
from instantstart.inference import builders, rules
from instantstart.models.common import ApiModel, OperationType, StageName
from instantstart.models.inference import (
    INFERENCE_NAMESPACE,
    CreateInferenceDeploymentRequest,
    CreateRouterRequest,
    DeploymentStatus,
    Destination,
    DownloadModelRequest,
    Engine,
    FsxListing,
    InferenceDeploymentAccepted,
    InferenceDeploymentList,
    InferenceDeploymentSummary,
    InferenceDeploymentView,
    InferencePod,
    InferenceService,
    ModelDownloadAccepted,
    ModelList,
    ScaleInferenceDeploymentRequest,
    StoredModel,
)
from instantstart.models.operation import OperationProgress
from instantstart.models.resources import StorageResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import storage_bucket_name
from instantstart.runtime import Runtime
from instantstart.training import rules as training_rules
from instantstart.training.service import dry_run, read_kubernetes

OPERATION_ANNOTATION = "instantstart/operation-id"


class DownloadModelChange(ApiModel):
    """``change`` of a DOWNLOAD_MODEL operation: the request as accepted and the cluster's bucket."""

    request: DownloadModelRequest
    bucket: str | None = None


class CreateDeploymentChange(ApiModel):
    """``change`` of a CREATE_INFERENCE_DEPLOYMENT operation: the request and the instance type's memory (MiB)."""

    request: CreateInferenceDeploymentRequest
    memory_mib: int


class ScaleDeploymentChange(ApiModel):
    """``change`` of an UPDATE_INFERENCE_DEPLOYMENT operation: the deployment and the replicas wanted."""

    name: str
    replicas: int


class DeleteDeploymentChange(ApiModel):
    """``change`` of a DELETE_INFERENCE_DEPLOYMENT operation: the deployment."""

    name: str


class RouterChange(ApiModel):
    """``change`` of a CREATE_INFERENCE_ROUTER operation: the deployment, its workers' port and the request."""

    name: str
    worker_port: int
    request: CreateRouterRequest


# -- shared ----------------------------------------------------------------------------------------------------------
def cluster_bucket(rt: Runtime, tag: str) -> str:
    """The cluster's bucket: the storage stage's ``bucketName``, else its name by rule."""
    cluster = records.live_cluster(rt, tag)
    recorded = records.stage_resources(rt, tag, cluster.generation, StageName.STORAGE, StorageResources).bucket_name
    return recorded or storage_bucket_name(tag, rt.account_id, rt.region)


def _admin(rt: Runtime, tag: str) -> Any:
    from instantstart.kube import client as kube

    return kube.connect(records.eks_name(rt, tag), rt.region)


def _list(dyn: Any, api_version: str, kind: str, selector: str | None = None) -> list[dict[str, Any]]:
    from instantstart.kube import client as kube

    return kube.list_objects(dyn, api_version, kind, INFERENCE_NAMESPACE, selector, timeout=KUBERNETES_READ_SECONDS)


def get_object(dyn: Any, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
    """Object ``name`` of ``kind`` in the inference namespace (Kubernetes GET, read timeout), None when absent."""
    from kubernetes.dynamic.exceptions import NotFoundError

    resource = dyn.resources.get(api_version=api_version, kind=kind)
    try:
        return dict(
            resource.get(name=name, namespace=INFERENCE_NAMESPACE, _request_timeout=KUBERNETES_READ_SECONDS).to_dict()
        )
    except NotFoundError:
        return None


def _require_fsx_claim(rt: Runtime, tag: str, field: str) -> None:
    found = read_kubernetes(rt, tag, lambda dyn: get_object(dyn, "v1", "PersistentVolumeClaim", builders.FSX_CLAIM))
    if found is None:
        raise rules.fsx_not_enabled(tag, field)


def _describe_cluster(rt: Runtime, tag: str) -> dict[str, Any]:
    try:
        return dict(rt.client("sagemaker").describe_cluster(ClusterName=records.hyperpod_name(rt, tag)))
    except ClientError as exc:
        raise UpstreamUnavailable(
            f"SageMaker DescribeCluster failed ({error_code(exc)}: {error_message(exc)})"
        ) from exc


# -- model downloads -------------------------------------------------------------------------------------------------
def download_model(rt: Runtime, tag: str, request: DownloadModelRequest) -> ModelDownloadAccepted:
    """Check the destination, then start the ``DOWNLOAD_MODEL`` change (a Job in namespace default).

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``FeatureNotEnabled`` (fsx without ``fsx-claim``).
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    if request.destination is Destination.FSX:
        _require_fsx_claim(rt, tag, "destination")
    bucket = cluster_bucket(rt, tag)
    location, path = builders.model_location(request.destination, request.model_id, bucket)
    change = DownloadModelChange(request=request, bucket=bucket)
    op = changes.start_change(rt, cluster, OperationType.DOWNLOAD_MODEL, change)
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
    """Check the token Secret exists (when named), dry-run and apply the download Job.

    Raises:
        StageFailed: ``SecretNotFound`` (the Secret or its key is missing: the pod could never start); Kubernetes
            refusals verbatim.
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, DownloadModelChange)
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
    kube.apply(dyn, job)
    location = job["spec"]["template"]["spec"]["containers"][0]["env"][2]["value"]
    observed = f"Job {INFERENCE_NAMESPACE}/{name} applied: {request.model_id}@{request.revision} -> {location}"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


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


# -- deployments: API side -------------------------------------------------------------------------------------------
def create_deployment(rt: Runtime, tag: str, request: CreateInferenceDeploymentRequest) -> InferenceDeploymentAccepted:
    """Check the rules, then start the ``CREATE_INFERENCE_DEPLOYMENT`` change.

    Reads SageMaker ``DescribeCluster`` (the groups' instance types), EC2 ``DescribeInstanceTypes`` (GPUs, memory)
    and, through the view entry, the Deployment of that name and (for /fsx paths) ``fsx-claim``.

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``InferenceDeploymentExists``, ``FeatureNotEnabled``.
        ValidationFailed: ``instanceType`` not in the cluster's groups (allowed values listed), ``gpus`` above the
            type's.
        UpstreamUnavailable: an AWS or Kubernetes read failed.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    rules.check_instance_type(request.instance_type, _describe_cluster(rt, tag))
    facts = training_rules.instance_facts(rt.client("ec2"), request.instance_type)
    rules.check_gpus(request.gpus, request.instance_type, facts.gpus)
    if builders.model_claim(request.model_path) == builders.FSX_CLAIM:
        _require_fsx_claim(rt, tag, "modelPath")
    existing = read_kubernetes(rt, tag, lambda dyn: get_object(dyn, "apps/v1", "Deployment", request.name))
    if existing is not None:
        raise Conflict(
            f"Deployment {INFERENCE_NAMESPACE}/{request.name} already exists on cluster '{tag}'; pick another name or "
            "delete it first",
            code="InferenceDeploymentExists",
            details=[{"field": "name", "value": request.name}],
        )
    change = CreateDeploymentChange(request=request, memory_mib=facts.memory_mib)
    op = changes.start_change(rt, cluster, OperationType.CREATE_INFERENCE_DEPLOYMENT, change)
    return InferenceDeploymentAccepted(name=request.name, namespace=INFERENCE_NAMESPACE, operation=op)


def deployment_not_found(tag: str, name: str) -> NotFound:
    """The 404 ``InferenceDeploymentNotFound`` naming ``name``."""
    return NotFound(
        f"inference deployment {INFERENCE_NAMESPACE}/{name} does not exist on cluster '{tag}'",
        code="InferenceDeploymentNotFound",
        details=[{"field": "name", "value": name}],
    )


def made_here(deployment: dict[str, Any] | None) -> bool:
    """Whether ``deployment`` is the worker Deployment of an inference deployment made through this API (labels)."""
    labels = ((deployment or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(builders.LABEL_ROLE) == "worker" and builders.LABEL_DEPLOYMENT in labels


def _pods_of(dyn: Any, name: str) -> list[dict[str, Any]]:
    return _list(dyn, "v1", "Pod", f"{builders.LABEL_DEPLOYMENT}={name},{builders.LABEL_ROLE}=worker")


def _find(rt: Runtime, tag: str, name: str, *, pods: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    def read(dyn: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        found = get_object(dyn, "apps/v1", "Deployment", name)
        return found, (_pods_of(dyn, name) if found is not None and pods else [])

    deployment, found_pods = read_kubernetes(rt, tag, read)
    if not made_here(deployment):
        raise deployment_not_found(tag, name)
    return dict(deployment), list(found_pods)


def scale_deployment(
    rt: Runtime, tag: str, name: str, request: ScaleInferenceDeploymentRequest
) -> InferenceDeploymentAccepted:
    """Check the scale-in rule, then start the ``UPDATE_INFERENCE_DEPLOYMENT`` change (deletion costs, replicas).

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``BoundPodsWouldBeRemoved``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    _, pods = _find(rt, tag, name, pods=True)
    rules.check_scale_in(name, request.replicas, pods)
    change = ScaleDeploymentChange(name=name, replicas=request.replicas)
    op = changes.start_change(rt, cluster, OperationType.UPDATE_INFERENCE_DEPLOYMENT, change)
    return InferenceDeploymentAccepted(name=name, namespace=INFERENCE_NAMESPACE, operation=op)


def delete_deployment(rt: Runtime, tag: str, name: str) -> InferenceDeploymentAccepted:
    """Start the ``DELETE_INFERENCE_DEPLOYMENT`` change (Deployment, Service, router, ScaledObject).

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    _find(rt, tag, name)
    op = changes.start_change(rt, cluster, OperationType.DELETE_INFERENCE_DEPLOYMENT, DeleteDeploymentChange(name=name))
    return InferenceDeploymentAccepted(name=name, namespace=INFERENCE_NAMESPACE, operation=op)


def _keda_served(dyn: Any) -> bool:
    """Whether KEDA's ``ScaledObject`` is served now (fresh API discovery: :func:`instantstart.kube.client.served`)."""
    from instantstart.kube import client as kube

    return kube.served(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND, timeout=KUBERNETES_READ_SECONDS)


def create_router(rt: Runtime, tag: str, name: str, request: CreateRouterRequest) -> InferenceDeploymentAccepted:
    """Check the workers run SGLang and, with autoscaling, that KEDA's ``ScaledObject`` is served; then start the
    ``CREATE_INFERENCE_ROUTER`` change.

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``RouterNeedsSGLang``, ``KedaNotInstalled``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    deployment, _ = _find(rt, tag, name)
    spec = stored_spec(deployment)
    rules.check_router_engine(name, spec.get("engine"))
    if request.autoscaling is not None and not read_kubernetes(rt, tag, _keda_served):
        raise rules.keda_missing(tag)
    port = int(spec.get("port") or builders.ENGINE_PORTS[Engine.SGLANG])
    change = RouterChange(name=name, worker_port=port, request=request)
    op = changes.start_change(rt, cluster, OperationType.CREATE_INFERENCE_ROUTER, change)
    return InferenceDeploymentAccepted(name=name, namespace=INFERENCE_NAMESPACE, operation=op)


# -- deployments: the changes ----------------------------------------------------------------------------------------
def grant_invoke(rt: Runtime, tag: str, dyn: Any) -> None:
    """Let the API function call the deployments' Services (``POST .../invoke``): its access entry lists
    :data:`instantstart.naming.API_KUBERNETES_GROUP` (EKS ``DescribeAccessEntry``/``UpdateAccessEntry`` when
    missing) and the Role/RoleBinding of :func:`builders.invoke_access` are applied (server-side apply, idempotent).
    """
    from instantstart.clusters.stages import access
    from instantstart.kube import client as kube

    access.ensure_api_kubernetes_group(rt, tag)
    for obj in builders.invoke_access():
        kube.apply(dyn, obj)


def apply_create(rt: Runtime, p: StepPayload) -> StepResult:
    """Dry-run, then apply the Deployment and Service; a Deployment of that name not made by this operation is never
    overwritten.

    Raises:
        StageFailed: ``InferenceDeploymentExists``; Kubernetes refusals verbatim.
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, CreateDeploymentChange)
    request = change.request
    dyn = _admin(rt, p.cluster_tag)
    grant_invoke(rt, p.cluster_tag, dyn)
    built = builders.build_deployment(request, memory_mib=change.memory_mib, operation_id=op.operation_id)
    existing = kube.get(dyn, "apps/v1", "Deployment", request.name, INFERENCE_NAMESPACE)
    if existing is not None:
        owner = ((existing.get("metadata") or {}).get("annotations") or {}).get(OPERATION_ANNOTATION)
        if owner != op.operation_id:
            raise StageFailed(
                "InferenceDeploymentExists", f"Deployment {INFERENCE_NAMESPACE}/{request.name} already exists"
            )
        return StepResult(status=f"Deployment {INFERENCE_NAMESPACE}/{request.name} already applied")
    for obj in built.objects:
        dry_run(dyn, obj)
    for obj in built.objects:
        kube.apply(dyn, obj)
    observed = (
        f"Deployment and Service {INFERENCE_NAMESPACE}/{request.name} applied ({request.engine.value}, "
        f"{request.replicas} x {request.gpus} GPU on {request.instance_type}, service {request.service.type})"
    )
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def check_create(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the Deployment and Service are read back (follow readiness with GET)."""
    from instantstart.kube import client as kube

    _, change = changes.operation_change(rt, p, CreateDeploymentChange)
    name = change.request.name
    dyn = _admin(rt, p.cluster_tag)
    found = [kube.get(dyn, v, k, name, INFERENCE_NAMESPACE) for v, k in (("apps/v1", "Deployment"), ("v1", "Service"))]
    done = all(o is not None for o in found)
    return PollResult(done=done, status="applied" if done else "not visible yet")


def _patch(dyn: Any, api_version: str, kind: str, name: str, body: dict[str, Any]) -> None:
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    resource.patch(name=name, namespace=INFERENCE_NAMESPACE, body=body, content_type="application/merge-patch+json")


def apply_scale(rt: Runtime, p: StepPayload) -> StepResult:
    """Set each pod's ``pod-deletion-cost`` from its assignment (bound 1000, idle -1000), check the scale-in rule
    again on what is there now, then set ``spec.replicas``.

    Raises:
        StageFailed: ``InferenceDeploymentNotFound``; ``BoundPodsWouldBeRemoved`` when pods were bound since the API
            checked.
    """
    from kubernetes.dynamic.exceptions import NotFoundError

    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, ScaleDeploymentChange)
    name, replicas = change.name, change.replicas
    dyn = _admin(rt, p.cluster_tag)
    if kube.get(dyn, "apps/v1", "Deployment", name, INFERENCE_NAMESPACE) is None:
        raise StageFailed("InferenceDeploymentNotFound", f"Deployment {INFERENCE_NAMESPACE}/{name} is gone")
    pods = kube.list_objects(
        dyn, "v1", "Pod", INFERENCE_NAMESPACE, f"{builders.LABEL_DEPLOYMENT}={name},{builders.LABEL_ROLE}=worker"
    )
    try:
        rules.check_scale_in(name, replicas, pods)
    except Conflict as exc:
        raise StageFailed(exc.code, exc.message) from exc
    costs = builders.deletion_costs(pods)
    for pod, cost in costs.items():
        try:
            _patch(dyn, "v1", "Pod", pod, {"metadata": {"annotations": {builders.ANNOTATION_DELETION_COST: cost}}})
        except NotFoundError:
            continue
    _patch(dyn, "apps/v1", "Deployment", name, {"spec": {"replicas": replicas}})
    bound = sum(1 for c in costs.values() if c == str(builders.BOUND_COST))
    observed = f"Deployment {name} replicas -> {replicas} ({bound} bound, {len(costs) - bound} idle pods)"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed)


def check_scale(rt: Runtime, p: StepPayload) -> PollResult:
    """Done when the Deployment's controller saw the change and holds ``replicas`` pods (``status.replicas``)."""
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, ScaleDeploymentChange)
    name, replicas = change.name, change.replicas
    found = kube.get(_admin(rt, p.cluster_tag), "apps/v1", "Deployment", name, INFERENCE_NAMESPACE)
    if found is None:
        raise StageFailed("InferenceDeploymentNotFound", f"Deployment {INFERENCE_NAMESPACE}/{name} is gone")
    status = found.get("status") or {}
    seen = int(status.get("observedGeneration") or 0) >= int(found["metadata"].get("generation") or 0)
    have = int(status.get("replicas") or 0)
    observed = f"Deployment {name}: {have} pods, {int(status.get('readyReplicas') or 0)} ready, {replicas} wanted"
    record_result(rt, op, OperationProgress(observed=observed))
    return PollResult(done=seen and have == replicas, status=observed)


def _router_objects(name: str) -> list[tuple[str, str, str]]:
    rname = builders.router_name(name)
    return [
        ("apps/v1", "Deployment", rname),
        ("v1", "Service", rname),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", rname),
        ("rbac.authorization.k8s.io/v1", "Role", rname),
        ("v1", "ServiceAccount", rname),
    ]


def apply_delete(rt: Runtime, p: StepPayload) -> StepResult:
    """Delete the KEDA ScaledObject (when served), the router's objects, the Service and the Deployment (foreground:
    the pods go first)."""
    from kubernetes.dynamic.exceptions import NotFoundError

    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, DeleteDeploymentChange)
    name = change.name
    dyn = _admin(rt, p.cluster_tag)
    gone: list[str] = []
    if _keda_served(dyn) and kube.delete(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND, name, INFERENCE_NAMESPACE):
        gone.append(f"{builders.KEDA_KIND} {name}")
    for api_version, kind, obj in [*_router_objects(name), ("v1", "Service", name)]:
        if kube.delete(dyn, api_version, kind, obj, INFERENCE_NAMESPACE):
            gone.append(f"{kind} {obj}")
    resource = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    try:
        resource.delete(name=name, namespace=INFERENCE_NAMESPACE, body={"propagationPolicy": "Foreground"})
        gone.append(f"Deployment {name}")
    except NotFoundError:
        pass
    observed = f"deleting {', '.join(gone)}" if gone else "already gone"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def check_delete(rt: Runtime, p: StepPayload) -> PollResult:
    """Done when the Deployment, Service and router Deployment are gone."""
    from instantstart.kube import client as kube

    _, change = changes.operation_change(rt, p, DeleteDeploymentChange)
    name = change.name
    dyn = _admin(rt, p.cluster_tag)
    left = [
        f"{kind} {obj}"
        for api_version, kind, obj in (
            ("apps/v1", "Deployment", name),
            ("v1", "Service", name),
            ("apps/v1", "Deployment", builders.router_name(name)),
        )
        if kube.get(dyn, api_version, kind, obj, INFERENCE_NAMESPACE) is not None
    ]
    return PollResult(done=not left, status="gone" if not left else f"waiting for {', '.join(left)}")


def apply_router(rt: Runtime, p: StepPayload) -> StepResult:
    """Dry-run, then apply the router's objects (and the ScaledObject).

    Raises:
        StageFailed: Kubernetes refusals verbatim (a ScaledObject without KEDA's CRD: the kind is not served).
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, RouterChange)
    request = change.request
    dyn = _admin(rt, p.cluster_tag)
    objects = builders.build_router(change.name, change.worker_port, request, op.operation_id)
    for obj in objects:
        dry_run(dyn, obj)
    for obj in objects:
        kube.apply(dyn, obj)
    observed = f"router {builders.router_name(change.name)} applied ({', '.join(o['kind'] for o in objects)})"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def check_router(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the router's Deployment is read back."""
    from instantstart.kube import client as kube

    _, change = changes.operation_change(rt, p, RouterChange)
    rname = builders.router_name(change.name)
    found = kube.get(_admin(rt, p.cluster_tag), "apps/v1", "Deployment", rname, INFERENCE_NAMESPACE)
    return PollResult(done=found is not None, status="applied" if found else "not visible yet")


CHANGES = {
    OperationType.DOWNLOAD_MODEL: changes.ClusterChange(apply=apply_download, check=check_download),
    OperationType.CREATE_INFERENCE_DEPLOYMENT: changes.ClusterChange(apply=apply_create, check=check_create),
    OperationType.UPDATE_INFERENCE_DEPLOYMENT: changes.ClusterChange(apply=apply_scale, check=check_scale),
    OperationType.DELETE_INFERENCE_DEPLOYMENT: changes.ClusterChange(apply=apply_delete, check=check_delete),
    OperationType.CREATE_INFERENCE_ROUTER: changes.ClusterChange(apply=apply_router, check=check_router),
}
"""The update workflow's handlers of model downloads and inference deployments, by operation type."""


# -- reads -----------------------------------------------------------------------------------------------------------
def stored_spec(deployment: dict[str, Any]) -> dict[str, Any]:
    """The request a deployment was made from (its spec annotation, camelCase), ``{}`` when unreadable."""
    raw = ((deployment.get("metadata") or {}).get("annotations") or {}).get(builders.ANNOTATION_SPEC)
    try:
        return dict(json.loads(raw)) if raw else {}
    except ValueError:
        return {}


def deployment_status(deployment: dict[str, Any]) -> DeploymentStatus:
    """Ready (every wanted pod ready), ScaledToZero, Failed (``Progressing`` False with ``ProgressDeadlineExceeded``)
    or Progressing, from the Deployment's spec and status (pure)."""
    want = int((deployment.get("spec") or {}).get("replicas", 1))
    status = deployment.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
            return DeploymentStatus.FAILED
    if want == 0:
        return DeploymentStatus.SCALED_TO_ZERO
    ready = int(status.get("readyReplicas") or 0)
    return (
        DeploymentStatus.READY
        if ready >= want and int(status.get("replicas") or 0) == want
        else (DeploymentStatus.PROGRESSING)
    )


def _summary(deployment: dict[str, Any]) -> InferenceDeploymentSummary:
    meta = deployment.get("metadata") or {}
    spec = stored_spec(deployment)
    return InferenceDeploymentSummary(
        name=str(meta.get("name")),
        namespace=str(meta.get("namespace") or INFERENCE_NAMESPACE),
        engine=spec.get("engine") or (meta.get("labels") or {}).get(builders.LABEL_ENGINE),
        model_path=spec.get("modelPath"),
        served_model_name=spec.get("servedModelName"),
        instance_type=spec.get("instanceType"),
        gpus=spec.get("gpus"),
        status=deployment_status(deployment),
        desired_replicas=int((deployment.get("spec") or {}).get("replicas", 1)),
        ready_replicas=int((deployment.get("status") or {}).get("readyReplicas") or 0),
    )


def list_deployments(rt: Runtime, tag: str) -> InferenceDeploymentList:
    """The cluster's self-managed inference deployments (made here: label ``instantstart.io/role=worker``).

    Raises:
        NotFound: ``ClusterNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    records.live_cluster(rt, tag)
    found = read_kubernetes(
        rt,
        tag,
        lambda dyn: _list(dyn, "apps/v1", "Deployment", f"{builders.LABEL_ROLE}=worker,{builders.LABEL_DEPLOYMENT}"),
    )
    summaries = sorted((_summary(d) for d in found), key=lambda s: s.name)
    return InferenceDeploymentList(deployments=summaries)


def _pod_view(pod: dict[str, Any]) -> InferencePod:
    meta = pod.get("metadata") or {}
    ready = any(
        c.get("type") == "Ready" and str(c.get("status")) == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )
    cost = (meta.get("annotations") or {}).get(builders.ANNOTATION_DELETION_COST)
    return InferencePod(
        name=str(meta.get("name")),
        node_name=(pod.get("spec") or {}).get("nodeName"),
        phase=(pod.get("status") or {}).get("phase"),
        ready=ready,
        bound_model=builders.bound_model(pod),
        deletion_cost=int(cost) if cost and cost.lstrip("-").isdigit() else None,
    )


def _service_view(svc: dict[str, Any] | None) -> InferenceService | None:
    if svc is None:
        return None
    meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
    annotations = meta.get("annotations") or {}
    port = int(((spec.get("ports") or [{}])[0]).get("port") or 0)
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [{}]
    return InferenceService(
        type=str(spec.get("type") or "ClusterIP"),
        port=port,
        cluster_ip=spec.get("clusterIP"),
        exposure=annotations.get(builders.NLB_SCHEME),
        hostname=ingress[0].get("hostname"),
        url=f"http://{meta.get('name')}.{meta.get('namespace') or INFERENCE_NAMESPACE}.svc:{port}",
    )


def get_deployment(rt: Runtime, tag: str, name: str) -> InferenceDeploymentView:
    """One deployment: its spec, status, replicas ready/desired, pods (node, phase, ready, bound model, deletion
    cost), Service, router and autoscaling.

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    records.live_cluster(rt, tag)

    def read(dyn: Any) -> dict[str, Any]:
        deployment = get_object(dyn, "apps/v1", "Deployment", name)
        if not made_here(deployment):
            return {}
        scaled = get_object(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND, name) if _keda_served(dyn) else None
        return {
            "deployment": deployment,
            "pods": _pods_of(dyn, name),
            "service": get_object(dyn, "v1", "Service", name),
            "router": get_object(dyn, "v1", "Service", builders.router_name(name)),
            "scaled": scaled,
        }

    found = read_kubernetes(rt, tag, read)
    if not found:
        raise deployment_not_found(tag, name)
    deployment = found["deployment"]
    summary = _summary(deployment)
    spec = stored_spec(deployment)
    scaled = found["scaled"]
    autoscaling: dict[str, int | str] | None = None
    if scaled:
        s = scaled.get("spec") or {}
        autoscaling = {"minReplicas": int(s.get("minReplicaCount", 0)), "maxReplicas": int(s.get("maxReplicaCount", 0))}
    service_view = _service_view(found["service"])
    containers = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}]
    return InferenceDeploymentView(
        **summary.model_dump(),
        image=containers[0].get("image"),
        port=spec.get("port") or (service_view.port if service_view else None),
        max_model_len=spec.get("maxModelLen"),
        hf_token_secret_name=(spec.get("hfTokenSecret") or {}).get("name"),
        service=service_view,
        router=_service_view(found["router"]),
        autoscaling=autoscaling,
        pods=sorted((_pod_view(p) for p in found["pods"]), key=lambda v: v.name),
        conditions=[
            {k: str(c[k]) for k in ("type", "status", "reason", "message") if c.get(k) is not None}
            for c in (deployment.get("status") or {}).get("conditions") or []
        ],
    )
