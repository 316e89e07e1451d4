"""Pure builders of the managed inference path: the ``InferenceEndpointConfig`` / ``JumpStartModel`` a request becomes,
the served API version chosen from the CRD, and the fields of a built resource its served schema does not know.

Group ``inference.sagemaker.aws.amazon.com`` (the HyperPod inference operator). The API version is never a
constant: :func:`served_version` picks the highest-priority served version of the CRD read from the cluster
(Kubernetes' version priority: GA before beta before alpha, then the higher number), and :func:`unknown_fields`
compares the built ``spec`` with that version's ``openAPIV3Schema`` so a field the version does not know is
refused, never silently pruned by the API server.
"""

from __future__ import annotations

import re
from typing import Any

from instantstart.models.inference import INFERENCE_NAMESPACE
from instantstart.models.inference_endpoints import (
    CreateInferenceEndpointRequest,
    L2CacheBackend,
    ModelSourceType,
)

GROUP = "inference.sagemaker.aws.amazon.com"
ENDPOINT_CONFIG_KIND = "InferenceEndpointConfig"
JUMPSTART_KIND = "JumpStartModel"
CRD_NAMES = {
    ENDPOINT_CONFIG_KIND: f"inferenceendpointconfigs.{GROUP}",
    JUMPSTART_KIND: f"jumpstartmodels.{GROUP}",
}
KINDS = (ENDPOINT_CONFIG_KIND, JUMPSTART_KIND)
LABEL_MANAGED = "instantstart.io/managed-endpoint"
"""Label on the resources made here (value: the resource name)."""
WORKER_SELECTOR_LABEL = f"{GROUP}/endpoint-name"
"""The label the operator puts on the worker pods (value: the resource name)."""
ANNOTATION_OPERATION = "instantstart/operation-id"
ANNOTATION_SESSION_KEY = "instantstart.io/session-key"
ENDPOINT_PREFIX = "instantstart-"
"""SageMaker endpoints made here are ``instantstart-<tag>-<name>`` (the API role's InvokeEndpoint is scoped to it)."""

REQUEST_FIELDS = {
    "modelSourceConfig": "modelSource",
    "worker": "worker",
    "kvCacheSpec": "kvCacheSpec",
    "intelligentRoutingSpec": "intelligentRoutingSpec",
    "autoScalingSpec": "autoscaling",
    "tlsConfig": "tls",
    "maxDeployTimeInSeconds": "maxDeployTimeSeconds",
    "instanceType": "instanceType",
    "replicas": "replicas",
    "model": "jumpStart",
    "server": "instanceType",
    "sageMakerEndpoint": "name",
    "endpointName": "name",
    "modelName": "name",
}
"""The request field each top-level ``spec`` field comes from (for the 422 of an unknown field)."""

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def endpoint_name(tag: str, name: str) -> str:
    """The SageMaker endpoint name of resource ``name`` of cluster ``tag``: ``instantstart-<tag>-<name>`` (<= 63)."""
    return f"{ENDPOINT_PREFIX}{tag}-{name}"[:63].rstrip("-")


def _priority(version: str) -> tuple[int, int, int, str]:
    found = _VERSION.match(version)
    if not found:
        return (3, 0, 0, version)
    major, stage, minor = int(found[1]), found[2], int(found[3] or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -major, -minor, version)


def served_versions(crd: dict[str, Any]) -> list[str]:
    """The CRD's served versions (``spec.versions[].served``), highest Kubernetes priority first."""
    versions = [str(v["name"]) for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")]
    return sorted(versions, key=_priority)


def served_version(crd: dict[str, Any]) -> str | None:
    """The version to use: the highest-priority served one (None: the CRD serves none)."""
    versions = served_versions(crd)
    return versions[0] if versions else None


def prefer(versions: list[str]) -> str | None:
    """The highest-priority version of ``versions`` (API discovery's list), None when empty."""
    return sorted(versions, key=_priority)[0] if versions else None


def spec_schema(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    """``openAPIV3Schema.properties.spec`` of ``version`` of the CRD (None when it has none)."""
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == version:
            root = ((v.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}
            spec = root.get("spec")
            return dict(spec) if isinstance(spec, dict) else None
    return None


def unknown_fields(value: Any, schema: dict[str, Any] | None, path: str = "") -> list[str]:
    """Dotted paths of ``value`` that ``schema`` does not declare.

    An object schema with ``properties`` knows those keys only (even with ``x-kubernetes-preserve-unknown-fields``:
    the operator reads the declared fields, so an undeclared one would be kept and ignored); one with an
    ``additionalProperties`` schema is a map whose values are checked against it; one with neither accepts any keys.
    Arrays check each item against ``items``.
    """
    if schema is None:
        return []
    found: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(props, dict) and props:
                if key not in props:
                    found.append(where)
                else:
                    found += unknown_fields(sub, props[key], where)
            elif isinstance(extra, dict):
                found += unknown_fields(sub, extra, where)
    elif isinstance(value, list):
        items = schema.get("items")
        for i, sub in enumerate(value):
            found += unknown_fields(sub, items if isinstance(items, dict) else None, f"{path}[{i}]")
    return found


def request_field(spec_path: str) -> str:
    """The request field a ``spec`` path comes from (its first segment mapped by :data:`REQUEST_FIELDS`)."""
    head = spec_path.split(".")[0].split("[")[0]
    return REQUEST_FIELDS.get(head, head)


def _quantity_gib(gib: int) -> str:
    return f"{gib}Gi"


def _common_spec(request: CreateInferenceEndpointRequest, tls_uri: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": request.replicas, "tlsConfig": {"tlsCertificateOutputS3Uri": tls_uri}}
    if request.max_deploy_time_seconds is not None:
        spec["maxDeployTimeInSeconds"] = request.max_deploy_time_seconds
    kv = request.kv_cache_spec
    if kv is not None:
        cache: dict[str, Any] = {"enableL1Cache": kv.enable_l1_cache, "enableL2Cache": kv.enable_l2_cache}
        if kv.l2_cache_backend is not None:
            l2: dict[str, Any] = {"l2CacheBackend": kv.l2_cache_backend.value}
            if kv.l2_cache_backend is L2CacheBackend.REDIS and kv.l2_cache_url:
                l2["l2CacheLocalUrl"] = kv.l2_cache_url
            cache["l2CacheSpec"] = l2
        spec["kvCacheSpec"] = cache
    routing = request.intelligent_routing_spec
    if routing is not None:
        spec["intelligentRoutingSpec"] = {"enabled": True, "routingStrategy": routing.strategy.value}
    scaling = request.autoscaling
    if scaling is not None:
        auto: dict[str, Any] = {"minReplicaCount": scaling.min_replicas, "maxReplicaCount": scaling.max_replicas}
        if scaling.cloud_watch is not None:
            cw = scaling.cloud_watch
            auto["cloudWatchTrigger"] = {
                "name": f"{request.name}-cloudwatch",
                "namespace": cw.namespace,
                "metricName": cw.metric_name,
                "targetValue": cw.target_value,
                "metricStat": cw.statistic,
                "dimensions": [{"name": k, "value": v} for k, v in sorted(cw.dimensions.items())],
            }
        spec["autoScalingSpec"] = auto
    return spec


def build_endpoint(
    request: CreateInferenceEndpointRequest,
    *,
    tag: str,
    api_version: str,
    bucket: str,
    region: str,
    tls_uri: str,
    operation_id: str,
) -> dict[str, Any]:
    """The custom resource of ``request``: an ``InferenceEndpointConfig`` (model source + worker) or a
    ``JumpStartModel`` (``jumpStart``), in namespace ``default``, labelled :data:`LABEL_MANAGED`.

    ``api_version`` is the served ``<group>/<version>``; ``bucket``/``region`` fill an s3 source without them;
    ``tls_uri`` is the certificate output in the operator's TLS bucket. The token of a gated model is only a
    ``tokenSecretRef``.
    """
    annotations = {ANNOTATION_OPERATION: operation_id}
    routing = request.intelligent_routing_spec
    if routing is not None and routing.session_key:
        annotations[ANNOTATION_SESSION_KEY] = routing.session_key
    metadata = {
        "name": request.name,
        "namespace": INFERENCE_NAMESPACE,
        "labels": {LABEL_MANAGED: request.name},
        "annotations": annotations,
    }
    spec = _common_spec(request, tls_uri)
    sagemaker_name = endpoint_name(tag, request.name)
    if request.jump_start is not None:
        js = request.jump_start
        model: dict[str, Any] = {"modelId": js.model_id, "acceptEula": js.accept_eula}
        if js.model_version:
            model["modelVersion"] = js.model_version
        spec.update(
            {
                "model": model,
                "server": {"instanceType": request.instance_type},
                "sageMakerEndpoint": {"name": sagemaker_name},
            }
        )
        return {"apiVersion": api_version, "kind": JUMPSTART_KIND, "metadata": metadata, "spec": spec}
    source, worker = request.model_source, request.worker
    assert source is not None and worker is not None  # the request model's rule
    config: dict[str, Any] = {"modelSourceType": source.type.value}
    if source.type is ModelSourceType.S3:
        config["s3Storage"] = {"bucketName": source.bucket or bucket, "region": source.region or region}
        config["modelLocation"] = source.model_location
    elif source.type is ModelSourceType.FSX:
        config["fsxStorage"] = {"fileSystemId": source.file_system_id}
        config["modelLocation"] = source.model_location
    else:
        hf: dict[str, Any] = {"modelId": source.model_id}
        if source.commit_sha:
            hf["commitSHA"] = source.commit_sha
        if source.hf_token_secret is not None:
            hf["tokenSecretRef"] = {"name": source.hf_token_secret.name, "key": source.hf_token_secret.key}
        config["huggingFaceModel"] = hf
    res = worker.resources
    amounts: dict[str, Any] = {"cpu": str(res.cpu), "memory": _quantity_gib(res.memory_gib)}
    if res.gpus:
        amounts["nvidia.com/gpu"] = res.gpus
    worker_spec: dict[str, Any] = {
        "image": worker.image,
        "modelInvocationPort": {"containerPort": worker.port, "name": "http"},
        "modelVolumeMount": {"name": "model-weights", "mountPath": worker.volume_mount_path},
        "resources": {"requests": dict(amounts), "limits": dict(amounts)},
    }
    if worker.environment:
        worker_spec["environmentVariables"] = [{"name": e.name, "value": e.value} for e in worker.environment]
    spec.update(
        {
            "modelName": request.name,
            "endpointName": sagemaker_name,
            "instanceType": request.instance_type,
            "invocationEndpoint": "invocations",
            "modelSourceConfig": config,
            "worker": worker_spec,
        }
    )
    return {"apiVersion": api_version, "kind": ENDPOINT_CONFIG_KIND, "metadata": metadata, "spec": spec}
