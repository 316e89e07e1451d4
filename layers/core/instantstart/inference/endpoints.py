"""Managed inference endpoints (the HyperPod inference operator): the API side, the day-2 changes and invoke; the
reads (and the CRD and endpoint lookups they share with these) are in :mod:`.endpoint_reads`, re-exported.

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
``DescribeEndpoint`` answers that the endpoint does not exist. Once InService, the SageMaker endpoint, config and
model get the cluster's ownership tags (``AddTags``), by which a cluster delete finds and removes what the operator
leaves (:mod:`.teardown`).

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
from instantstart.errors import BadGateway, Conflict, PayloadTooLarge, StageFailed
from instantstart.features.catalog import tls_bucket_name
from instantstart.inference import endpoint_builders as eb
from instantstart.inference import rules
from instantstart.inference.endpoint_reads import (  # re-exported
    CRD_API_VERSION as CRD_API_VERSION,
)
from instantstart.inference.endpoint_reads import (
    FORBIDDEN as FORBIDDEN,
)
from instantstart.inference.endpoint_reads import (
    MAX_EVENTS as MAX_EVENTS,
)
from instantstart.inference.endpoint_reads import (
    _condition,
    _discovered_version,
    _find,
    _not_found,
    _read_crd,
    _sagemaker_name,
)
from instantstart.inference.endpoint_reads import (
    get_endpoint as get_endpoint,
)
from instantstart.inference.endpoint_reads import (
    list_endpoints as list_endpoints,
)
from instantstart.inference.invoke import read_answer, request_payload
from instantstart.inference.service import cluster_bucket
from instantstart.kube.client import dry_run
from instantstart.models.common import ApiModel, OperationType
from instantstart.models.inference import INFERENCE_NAMESPACE, INVOKE_MAX_RESPONSE_BYTES
from instantstart.models.inference_endpoints import (
    CreateInferenceEndpointRequest,
    InferenceEndpointAccepted,
    InvokeEndpointRequest,
    InvokeEndpointView,
    L2CacheBackend,
)
from instantstart.models.operation import OperationProgress
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime


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
    if done and wants_endpoint:
        # the operator's endpoint, config and model get the cluster's ownership tags: a cluster delete finds them
        from instantstart.inference import teardown

        teardown.tag_endpoint_resources(rt, p.cluster_tag, sagemaker)
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
