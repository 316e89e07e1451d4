"""Managed inference endpoints (the HyperPod inference operator): the API side, the day-2 changes, reads and invoke.

``POST /inference/endpoints`` checks, before any write: the inference operator's add-on ACTIVE (409 naming
``inferenceOperator``), the instance type in the cluster's groups and tiered storage for an L2 ``tieredstorage`` cache
(SageMaker ``DescribeCluster``), the TLS output in the operator's TLS bucket, then reads the CRD
(``apiextensions.k8s.io/v1`` ``CustomResourceDefinition``) through the API role's view entry: the highest-priority
served version is used and the built ``spec`` is compared with that version's schema (422 for a field it does not
know). A view entry that may not read CRDs (EKS ``AmazonEKSViewPolicy`` is Kubernetes' ``view`` role, which has no
CRDs) falls back to API discovery for the version, and the schema check runs in the change's apply step as cluster
admin (the operation then FAILS with ``UnknownField``). ``CREATE_INFERENCE_ENDPOINT`` dry-runs and applies the
resource and waits for ``DeploymentComplete`` with the SageMaker endpoint ``InService`` (``DeploymentFailed`` fails
it with the operator's reason and message verbatim). ``DELETE_INFERENCE_ENDPOINT`` deletes the resource and waits
until it is gone (the operator's finalizer removes the SageMaker endpoint, config and model first) and SageMaker
``DescribeEndpoint`` answers that the endpoint does not exist.

``POST .../invoke`` calls SageMaker Runtime ``InvokeEndpoint`` on the endpoint the operator registered, JSON only,
the request bounded by :data:`INVOKE_MAX_BYTES`, the answer cut at :data:`INVOKE_MAX_RESPONSE_BYTES`.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from pydantic import Field

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, records, service
from instantstart.clusters.kube_reads import read_kubernetes
from instantstart.clusters.nodes import record_result, writable_cluster
from instantstart.errors import BadGateway, Conflict, NotFound, PayloadTooLarge, StageFailed
from instantstart.features.catalog import tls_bucket_name
from instantstart.inference import endpoint_builders as eb
from instantstart.inference import rules
from instantstart.inference.invoke import read_answer, request_payload
from instantstart.inference.service import cluster_bucket, get_object
from instantstart.kube.client import dry_run
from instantstart.kube.reads import KUBERNETES_READ_SECONDS
from instantstart.models.common import ApiModel, OperationType
from instantstart.models.inference import INFERENCE_NAMESPACE, INVOKE_MAX_RESPONSE_BYTES
from instantstart.models.inference_endpoints import (
    CreateInferenceEndpointRequest,
    InferenceEndpointAccepted,
    InferenceEndpointList,
    InferenceEndpointSummary,
    InferenceEndpointView,
    InvokeEndpointRequest,
    InvokeEndpointView,
    L2CacheBackend,
    PodEvent,
    SageMakerEndpointView,
)
from instantstart.models.operation import OperationProgress
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime

CRD_API_VERSION = "apiextensions.k8s.io/v1"
FORBIDDEN = "forbidden"
MAX_EVENTS = 50


class CreateEndpointChange(ApiModel):
    """``change`` of a CREATE_INFERENCE_ENDPOINT operation: the request and what the API resolved."""

    request: CreateInferenceEndpointRequest
    api_version: str = Field(description="<group>/<served version> read from the cluster.")
    bucket: str
    region: str
    tls_uri: str
    schema_checked: bool = Field(description="The API compared the spec with the served schema already.")


class DeleteEndpointChange(ApiModel):
    """``change`` of a DELETE_INFERENCE_ENDPOINT operation: the resource and its SageMaker endpoint."""

    name: str
    kind: str
    api_version: str
    endpoint_name: str | None = None


# -- Kubernetes helpers ----------------------------------------------------------------------------------------------
def _is_forbidden(exc: BaseException) -> bool:
    return getattr(exc, "status", None) in (401, 403)


def _read_crd(dyn: Any, kind: str) -> dict[str, Any] | str | None:
    """The CRD of ``kind``; :data:`FORBIDDEN` when the caller may not read CRDs; None when it does not exist."""
    from kubernetes.dynamic.exceptions import NotFoundError

    resource = dyn.resources.get(api_version=CRD_API_VERSION, kind="CustomResourceDefinition")
    try:
        return dict(resource.get(name=eb.CRD_NAMES[kind], _request_timeout=KUBERNETES_READ_SECONDS).to_dict())
    except NotFoundError:
        return None
    except Exception as exc:
        if _is_forbidden(exc):
            return FORBIDDEN
        raise


def _discovered_version(dyn: Any, kind: str) -> str | None:
    """The highest-priority version API discovery serves ``kind`` in (every authenticated user may read it)."""
    found = dyn.resources.search(group=eb.GROUP, kind=kind)
    return eb.prefer(sorted({str(r.api_version) for r in found if getattr(r, "api_version", None)}))


def _version_of(dyn: Any, kind: str) -> str | None:
    crd = _read_crd(dyn, kind)
    if isinstance(crd, dict):
        return eb.served_version(crd)
    return _discovered_version(dyn, kind) if crd == FORBIDDEN else None


def _find(dyn: Any, name: str) -> tuple[str, str, dict[str, Any]] | None:
    """``(kind, apiVersion, object)`` of the InferenceEndpointConfig or JumpStartModel ``name``, else None."""
    for kind in eb.KINDS:
        version = _version_of(dyn, kind)
        if version is None:
            continue
        api_version = f"{eb.GROUP}/{version}"
        found = get_object(dyn, api_version, kind, name)
        if found is not None:
            return kind, api_version, found
    return None


def _not_found(tag: str, name: str) -> NotFound:
    return NotFound(
        f"inference endpoint {INFERENCE_NAMESPACE}/{name} does not exist on cluster '{tag}'",
        code="InferenceEndpointNotFound",
        details=[{"field": "name", "value": name}],
    )


def _sagemaker_name(obj: dict[str, Any]) -> str | None:
    spec = obj.get("spec") or {}
    return spec.get("endpointName") or (spec.get("sageMakerEndpoint") or {}).get("name") or None


# -- API side --------------------------------------------------------------------------------------------------------
def create_endpoint(rt: Runtime, tag: str, request: CreateInferenceEndpointRequest) -> InferenceEndpointAccepted:
    """Check the rules, read the served version and schema, then start the ``CREATE_INFERENCE_ENDPOINT`` change.

    Reads EKS ``DescribeAddon``, SageMaker ``DescribeCluster`` and, through the view entry, the CRD and any
    resource of that name.

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``FeatureNotEnabled`` (inferenceOperator, or
            tieredCheckpointing for an L2 tieredstorage cache), ``InferenceEndpointExists``.
        ValidationFailed: ``instanceType`` not in the cluster's groups, ``tls.certificateOutputS3Uri`` outside the
            operator's TLS bucket, fields the served version does not know.
        UpstreamUnavailable: an AWS or Kubernetes read failed.
    """
    from instantstart.inference.service import _describe_cluster

    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    rules.require_inference_operator(rt.client("eks"), tag, records.eks_name(rt, tag))
    described = _describe_cluster(rt, tag)
    rules.check_instance_type(request.instance_type, described)
    kv = request.kv_cache_spec
    if kv is not None and kv.l2_cache_backend is L2CacheBackend.TIERED_STORAGE:
        rules.check_tiered_storage(tag, described)
    tls_bucket = tls_bucket_name(tag, rt.account_id, rt.region)
    tls_uri = request.tls.certificate_output_s3_uri if request.tls else f"s3://{tls_bucket}/{request.name}/"
    rules.check_tls_uri(tls_uri, tls_bucket)
    kind = eb.JUMPSTART_KIND if request.jump_start is not None else eb.ENDPOINT_CONFIG_KIND

    def read(dyn: Any) -> tuple[dict[str, Any] | str | None, str | None, tuple[str, str, dict[str, Any]] | None]:
        crd = _read_crd(dyn, kind)
        version = eb.served_version(crd) if isinstance(crd, dict) else None
        if crd == FORBIDDEN:
            version = _discovered_version(dyn, kind)
        return crd, version, _find(dyn, request.name)

    crd, version, existing = read_kubernetes(rt, tag, read)
    if crd is None or version is None:
        raise rules.inference_operator_not_enabled(
            tag, f"the cluster does not serve {kind} ({eb.CRD_NAMES[kind]} is not installed or serves no version)"
        )
    if existing is not None:
        raise Conflict(
            f"{existing[0]} {INFERENCE_NAMESPACE}/{request.name} already exists on cluster '{tag}'; pick another "
            "name or delete it first",
            code="InferenceEndpointExists",
            details=[{"field": "name", "value": request.name}],
        )
    api_version = f"{eb.GROUP}/{version}"
    bucket = cluster_bucket(rt, tag)
    built = eb.build_endpoint(
        request, tag=tag, api_version=api_version, bucket=bucket, region=rt.region, tls_uri=tls_uri, operation_id="-"
    )
    if isinstance(crd, dict):
        _check_schema(built, crd, version)
    change = CreateEndpointChange(
        request=request,
        api_version=api_version,
        bucket=bucket,
        region=rt.region,
        tls_uri=tls_uri,
        schema_checked=isinstance(crd, dict),
    )
    op = changes.start_change(rt, cluster, OperationType.CREATE_INFERENCE_ENDPOINT, change)
    return InferenceEndpointAccepted(
        name=request.name,
        namespace=INFERENCE_NAMESPACE,
        kind=kind,
        api_version=api_version,
        endpoint_name=eb.endpoint_name(tag, request.name),
        operation=op,
    )


def _check_schema(built: dict[str, Any], crd: dict[str, Any], version: str) -> None:
    paths = eb.unknown_fields(built["spec"], eb.spec_schema(crd, version))
    rules.refuse_unknown_fields(paths, built["kind"], built["apiVersion"], [eb.request_field(p) for p in paths])


def delete_endpoint(rt: Runtime, tag: str, name: str) -> InferenceEndpointAccepted:
    """Start the ``DELETE_INFERENCE_ENDPOINT`` change (the operator removes the SageMaker side first).

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceEndpointNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    found = read_kubernetes(rt, tag, lambda dyn: _find(dyn, name))
    if found is None:
        raise _not_found(tag, name)
    kind, api_version, obj = found
    change = DeleteEndpointChange(name=name, kind=kind, api_version=api_version, endpoint_name=_sagemaker_name(obj))
    op = changes.start_change(rt, cluster, OperationType.DELETE_INFERENCE_ENDPOINT, change)
    return InferenceEndpointAccepted(
        name=name,
        namespace=INFERENCE_NAMESPACE,
        kind=kind,
        api_version=api_version,
        endpoint_name=change.endpoint_name or "",
        operation=op,
    )


# -- the changes -----------------------------------------------------------------------------------------------------
def _admin(rt: Runtime, tag: str) -> Any:
    from instantstart.kube import client as kube

    return kube.connect(records.eks_name(rt, tag), rt.region)


def apply_create(rt: Runtime, p: StepPayload) -> StepResult:
    """Check the served schema when the API could not, dry-run, then apply the resource (never overwriting one this
    operation did not make).

    Raises:
        StageFailed: ``UnknownField`` (the served version does not know a field), ``InferenceEndpointExists``;
            Kubernetes refusals verbatim.
    """
    from instantstart.errors import ValidationFailed
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, CreateEndpointChange)
    request = change.request
    dyn = _admin(rt, p.cluster_tag)
    built = eb.build_endpoint(
        request,
        tag=p.cluster_tag,
        api_version=change.api_version,
        bucket=change.bucket,
        region=change.region,
        tls_uri=change.tls_uri,
        operation_id=op.operation_id,
    )
    if not change.schema_checked:
        crd = _read_crd(dyn, built["kind"])
        if isinstance(crd, dict):
            try:
                _check_schema(built, crd, change.api_version.split("/")[-1])
            except ValidationFailed as exc:
                raise StageFailed("UnknownField", exc.message) from exc
    existing = kube.get(dyn, change.api_version, built["kind"], request.name, INFERENCE_NAMESPACE)
    if existing is not None:
        owner = ((existing.get("metadata") or {}).get("annotations") or {}).get(eb.ANNOTATION_OPERATION)
        if owner != op.operation_id:
            raise StageFailed(
                "InferenceEndpointExists", f"{built['kind']} {INFERENCE_NAMESPACE}/{request.name} already exists"
            )
        return StepResult(status=f"{built['kind']} {INFERENCE_NAMESPACE}/{request.name} already applied")
    dry_run(dyn, built)
    kube.apply(dyn, built)
    observed = f"{built['kind']} {INFERENCE_NAMESPACE}/{request.name} applied as {change.api_version}"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def _condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), {})


def check_create(rt: Runtime, p: StepPayload) -> PollResult:
    """Done at ``DeploymentComplete`` with the SageMaker endpoint ``InService`` (or no endpoint asked for).

    Raises:
        StageFailed: ``DeploymentFailed`` with the operator's reason and message verbatim; ``InferenceEndpointGone``
            when the resource disappeared.
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, CreateEndpointChange)
    kind = eb.JUMPSTART_KIND if change.request.jump_start is not None else eb.ENDPOINT_CONFIG_KIND
    obj = kube.get(_admin(rt, p.cluster_tag), change.api_version, kind, change.request.name, INFERENCE_NAMESPACE)
    if obj is None:
        raise StageFailed("InferenceEndpointGone", f"{kind} {INFERENCE_NAMESPACE}/{change.request.name} is gone")
    status = obj.get("status") or {}
    state = str(status.get("state") or "DeploymentPending")
    if state == "DeploymentFailed":
        cond = _condition(obj, "DeploymentFailed")
        deployment = status.get("deploymentStatus") or {}
        reason = cond.get("reason") or deployment.get("reason") or "DeploymentFailed"
        message = cond.get("message") or deployment.get("message") or ""
        raise StageFailed("DeploymentFailed", f"{reason}: {message}")
    sagemaker = (status.get("endpoints") or {}).get("sagemaker") or {}
    wants_endpoint = bool(_sagemaker_name(obj))
    done = state == "DeploymentComplete" and (not wants_endpoint or sagemaker.get("state") == "InService")
    observed = f"{kind} {change.request.name} {state}" + (
        f", SageMaker endpoint {sagemaker.get('state')}" if sagemaker.get("state") else ""
    )
    record_result(rt, op, OperationProgress(observed=observed))
    return PollResult(done=done, status=observed[:256])


def apply_delete(rt: Runtime, p: StepPayload) -> StepResult:
    """Delete the resource; the operator's finalizer removes the SageMaker endpoint, config and model first."""
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, DeleteEndpointChange)
    gone = kube.delete(_admin(rt, p.cluster_tag), change.api_version, change.kind, change.name, INFERENCE_NAMESPACE)
    observed = f"{change.kind} {change.name} " + ("deleting" if gone else "already gone")
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed)


def _endpoint_gone(rt: Runtime, name: str) -> bool:
    """SageMaker ``DescribeEndpoint`` answers that ``name`` does not exist (``ValidationException``)."""
    try:
        rt.client("sagemaker").describe_endpoint(EndpointName=name)
    except ClientError as exc:
        if error_code(exc) in ("ValidationException", "ResourceNotFound"):
            return True
        raise
    return False


def check_delete(rt: Runtime, p: StepPayload) -> PollResult:
    """Done when the resource is gone and SageMaker no longer knows its endpoint."""
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, DeleteEndpointChange)
    obj = kube.get(_admin(rt, p.cluster_tag), change.api_version, change.kind, change.name, INFERENCE_NAMESPACE)
    endpoint_gone = change.endpoint_name is None or _endpoint_gone(rt, change.endpoint_name)
    left = ([f"{change.kind} {change.name}"] if obj is not None else []) + (
        [f"SageMaker endpoint {change.endpoint_name}"] if not endpoint_gone else []
    )
    observed = "gone" if not left else f"waiting for {', '.join(left)}"
    record_result(rt, op, OperationProgress(observed=observed))
    return PollResult(done=not left, status=observed)


CHANGES = {
    OperationType.CREATE_INFERENCE_ENDPOINT: changes.ClusterChange(apply=apply_create, check=check_create),
    OperationType.DELETE_INFERENCE_ENDPOINT: changes.ClusterChange(apply=apply_delete, check=check_delete),
}
"""The update workflow's handlers of managed inference endpoints, by operation type."""


# -- reads -----------------------------------------------------------------------------------------------------------
def _summary(kind: str, obj: dict[str, Any]) -> InferenceEndpointSummary:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    return InferenceEndpointSummary(
        name=str(meta.get("name")),
        namespace=str(meta.get("namespace") or INFERENCE_NAMESPACE),
        kind=kind,
        instance_type=spec.get("instanceType") or (spec.get("server") or {}).get("instanceType"),
        state=status.get("state"),
        replicas=spec.get("replicas"),
        ready_replicas=status.get("replicas"),
        endpoint_name=_sagemaker_name(obj),
    )


def list_endpoints(rt: Runtime, tag: str) -> InferenceEndpointList:
    """The InferenceEndpointConfigs and JumpStartModels of namespace default (any maker), by name.

    Raises:
        NotFound: ``ClusterNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    from instantstart.kube import client as kube

    records.live_cluster(rt, tag)

    def read(dyn: Any) -> list[tuple[str, dict[str, Any]]]:
        found: list[tuple[str, dict[str, Any]]] = []
        for kind in eb.KINDS:
            version = _version_of(dyn, kind)
            if version is None:
                continue
            objs = kube.list_objects(
                dyn, f"{eb.GROUP}/{version}", kind, INFERENCE_NAMESPACE, None, timeout=KUBERNETES_READ_SECONDS
            )
            found += [(kind, o) for o in objs]
        return found

    found = read_kubernetes(rt, tag, read)
    return InferenceEndpointList(endpoints=sorted((_summary(k, o) for k, o in found), key=lambda s: s.name))


def _events(pods: list[str], events: list[dict[str, Any]]) -> list[PodEvent]:
    names = set(pods)
    picked = [e for e in events if (e.get("involvedObject") or {}).get("name") in names]
    picked.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return [
        PodEvent(
            pod=str((e.get("involvedObject") or {}).get("name")),
            type=e.get("type"),
            reason=e.get("reason"),
            message=e.get("message"),
            count=e.get("count"),
            last_timestamp=str(e.get("lastTimestamp") or e.get("eventTime") or "") or None,
        )
        for e in picked[-MAX_EVENTS:]
    ]


def get_endpoint(rt: Runtime, tag: str, name: str) -> InferenceEndpointView:
    """One endpoint: state, the operator's conditions and message, the SageMaker endpoint (operator status plus
    ``DescribeEndpoint``), the worker pods and their Kubernetes events (why a deployment is stuck).

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceEndpointNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    from instantstart.kube import client as kube

    records.live_cluster(rt, tag)

    def read(dyn: Any) -> dict[str, Any] | None:
        found = _find(dyn, name)
        if found is None:
            return None
        kind, api_version, obj = found
        selector = (obj.get("status") or {}).get("selector") or f"{eb.WORKER_SELECTOR_LABEL}={name}"
        pods = kube.list_objects(dyn, "v1", "Pod", INFERENCE_NAMESPACE, selector, timeout=KUBERNETES_READ_SECONDS)
        events = kube.list_objects(dyn, "v1", "Event", INFERENCE_NAMESPACE, None, timeout=KUBERNETES_READ_SECONDS)
        return {"kind": kind, "apiVersion": api_version, "obj": obj, "pods": pods, "events": events}

    found = read_kubernetes(rt, tag, read)
    if found is None:
        raise _not_found(tag, name)
    obj, kind = found["obj"], found["kind"]
    status = obj.get("status") or {}
    pods = sorted(str(p["metadata"]["name"]) for p in found["pods"])
    sagemaker_name = _sagemaker_name(obj)
    sagemaker = None
    if sagemaker_name:
        seen = (status.get("endpoints") or {}).get("sagemaker") or {}
        sagemaker = SageMakerEndpointView(
            name=sagemaker_name,
            state=seen.get("state"),
            endpoint_arn=seen.get("endpointArn") or None,
            config_arn=seen.get("configArn") or None,
            model_arn=seen.get("modelArn") or None,
            status=_describe_status(rt, sagemaker_name),
        )
    state = status.get("state")
    cond = _condition(obj, str(state)) if state else {}
    spec = obj.get("spec") or {}
    return InferenceEndpointView(
        **_summary(kind, obj).model_dump(),
        api_version=found["apiVersion"],
        model_name=spec.get("modelName") or (spec.get("model") or {}).get("modelId"),
        message=cond.get("message") or (status.get("deploymentStatus") or {}).get("message"),
        conditions=[
            {k: c[k] for k in ("type", "status", "reason", "message", "lastTransitionTime") if c.get(k) is not None}
            for c in status.get("conditions") or []
        ],
        sagemaker=sagemaker,
        session_key=((obj.get("metadata") or {}).get("annotations") or {}).get(eb.ANNOTATION_SESSION_KEY),
        pods=pods,
        events=_events(pods, found["events"]),
    )


def _describe_status(rt: Runtime, name: str) -> str | None:
    try:
        return str(rt.client("sagemaker").describe_endpoint(EndpointName=name)["EndpointStatus"])
    except ClientError:
        return None


# -- invoke ----------------------------------------------------------------------------------------------------------
def invoke_endpoint(rt: Runtime, tag: str, name: str, request: InvokeEndpointRequest) -> InvokeEndpointView:
    """Send ``request.body`` (JSON) to the SageMaker endpoint of resource ``name`` (SageMaker Runtime
    ``InvokeEndpoint``) and return the answer, cut at :data:`INVOKE_MAX_RESPONSE_BYTES`.

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceEndpointNotFound`` (or the resource names no SageMaker endpoint).
        PayloadTooLarge: 413 naming ``body`` above :data:`INVOKE_MAX_BYTES`.
        Conflict: SageMaker refused the call (4xx, e.g. the endpoint is not InService): its code and message verbatim.
        BadGateway: the model failed (``ModelError``) or SageMaker answered 5xx: its code and message verbatim.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    payload = request_payload(request.body)
    records.live_cluster(rt, tag)
    found = read_kubernetes(rt, tag, lambda dyn: _find(dyn, name))
    endpoint = _sagemaker_name(found[2]) if found is not None else None
    if endpoint is None:
        raise _not_found(tag, name)
    try:
        answer = rt.client("sagemaker-runtime").invoke_endpoint(
            EndpointName=endpoint, Body=payload, ContentType="application/json", Accept="application/json"
        )
    except ClientError as exc:
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 500)
        code, message = error_code(exc), error_message(exc)
        detail = [{"field": "name", "endpointName": endpoint, "sageMakerStatus": status}]
        if status == 413:
            raise PayloadTooLarge(message, code=code, details=[{"field": "body", "message": message}]) from exc
        if 400 <= status < 500 and code != "ModelError":
            raise Conflict(message, code=code, details=detail) from exc
        raise BadGateway(message, code=code, details=detail) from exc
    body, text, truncated = read_answer(answer["Body"].read(INVOKE_MAX_RESPONSE_BYTES + 1))
    return InvokeEndpointView(
        endpoint_name=endpoint,
        content_type=answer.get("ContentType"),
        invoked_production_variant=answer.get("InvokedProductionVariant"),
        body=body,
        text=text,
        truncated=truncated,
    )
