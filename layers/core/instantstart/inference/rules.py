"""The rules a model download or an inference deployment must pass before anything is written, one function each.

Each raises the API's error: 409 for something missing on the cluster (a feature, a CRD, bound pods), 422 naming
the field with the values it accepts.
"""

from __future__ import annotations

from typing import Any

from instantstart.errors import Conflict, ValidationFailed
from instantstart.inference.builders import KEDA_API_VERSION, KEDA_KIND, bound_model
from instantstart.models.inference import INFERENCE_NAMESPACE, Engine

FSX_FEATURE = "fsx"
"""The feature key (``PATCH /clusters/{clusterTag}/features``) that creates the FSx file system and ``fsx-claim``."""


def fsx_not_enabled(tag: str, field: str) -> Conflict:
    """409 ``FeatureNotEnabled`` naming the ``fsx`` feature: claim ``fsx-claim`` is not in namespace default."""
    return Conflict(
        f"{field} needs FSx for Lustre on cluster '{tag}', but claim fsx-claim is not in namespace default: turn on "
        f"the '{FSX_FEATURE}' feature with a file system (PATCH /clusters/{tag}/features {{\"{FSX_FEATURE}\": "
        '{"enabled": true, "fileSystem": {...}}}) and retry once its operation SUCCEEDED',
        code="FeatureNotEnabled",
        details=[
            {
                "field": FSX_FEATURE,
                "requestField": field,
                "enableWith": {
                    "method": "PATCH",
                    "path": f"/clusters/{tag}/features",
                    "body": {FSX_FEATURE: {"enabled": True, "fileSystem": {"storageCapacityGiB": 1200}}},
                },
            }
        ],
    )


def group_instance_types(described_cluster: dict[str, Any]) -> list[str]:
    """The instance types of the cluster's groups (SageMaker ``DescribeCluster`` ``InstanceGroups``), sorted."""
    return sorted(
        {str(g["InstanceType"]) for g in described_cluster.get("InstanceGroups", []) if g.get("InstanceType")}
    )


def check_instance_type(instance_type: str, described_cluster: dict[str, Any]) -> None:
    """Refuse an instance type no group of the cluster has.

    Raises:
        ValidationFailed: 422 naming ``instanceType`` with the groups' types as ``allowedValues``.
    """
    types = group_instance_types(described_cluster)
    if instance_type not in types:
        raise ValidationFailed(
            f"instanceType {instance_type} is not the type of any instance group of the cluster; allowed: "
            f"{', '.join(types) or 'none (the cluster has no instance group)'}",
            details=[
                {"field": "instanceType", "message": "no instance group of this type", "allowedValues": types},
            ],
        )


def check_gpus(gpus: int, instance_type: str, type_gpus: int) -> None:
    """Refuse more GPUs per replica than the instance type has (EC2 ``DescribeInstanceTypes``), or a type without.

    Raises:
        ValidationFailed: 422 naming ``gpus`` with ``requested`` and ``available``.
    """
    if gpus > type_gpus:
        raise ValidationFailed(
            f"gpus {gpus} is more than {instance_type} has ({type_gpus}); the tensor parallel size is gpus",
            details=[
                {
                    "field": "gpus",
                    "message": f"at most {type_gpus} on {instance_type}",
                    "requested": gpus,
                    "available": type_gpus,
                }
            ],
        )


def check_scale_in(name: str, replicas: int, pods: list[dict[str, Any]]) -> None:
    """Refuse a scale-in that would remove a pod serving a bound model.

    Pods whose annotation ``instantstart.io/bound-model`` is set serve a model assigned to them; the others are idle.
    Idle pods go first (their ``pod-deletion-cost`` is lower), so a scale to ``replicas`` keeps every bound pod as
    long as ``replicas`` is at least the number of bound pods; below that only bound pods would remain to remove.

    Raises:
        Conflict: 409 ``BoundPodsWouldBeRemoved`` naming ``replicas``, the bound pods and the smallest allowed value.
    """
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    bound = sorted(str(p["metadata"]["name"]) for p in live if bound_model(p))
    if replicas < len(bound):
        raise Conflict(
            f"scaling {name} to {replicas} would remove pods serving a bound model ({', '.join(bound)}); idle pods "
            f"go first, so the fewest replicas that keep every bound pod is {len(bound)}",
            code="BoundPodsWouldBeRemoved",
            details=[
                {
                    "field": "replicas",
                    "requested": replicas,
                    "minimum": len(bound),
                    "boundPods": bound,
                    "idlePods": len(live) - len(bound),
                }
            ],
        )


def check_router_engine(name: str, engine: str | None) -> None:
    """The SGLang router fronts SGLang workers only.

    Raises:
        Conflict: 409 ``RouterNeedsSGLang`` naming ``engine`` with the allowed value.
    """
    if engine != Engine.SGLANG.value:
        raise Conflict(
            f"deployment {name} runs engine {engine}; the SGLang cache-aware router fronts engine sglang only",
            code="RouterNeedsSGLang",
            details=[{"field": "engine", "value": engine, "allowedValues": [Engine.SGLANG.value]}],
        )


def keda_missing(tag: str) -> Conflict:
    """409 ``KedaNotInstalled``: the cluster does not serve ``keda.sh/v1alpha1`` ``ScaledObject`` (KEDA's CRD)."""
    return Conflict(
        f"autoscaling needs KEDA on cluster '{tag}': the API server does not serve {KEDA_API_VERSION} {KEDA_KIND} "
        "(CRD scaledobjects.keda.sh). Install KEDA on the cluster, or create the router without autoscaling",
        code="KedaNotInstalled",
        details=[{"field": "autoscaling", "missing": f"{KEDA_API_VERSION} {KEDA_KIND} (scaledobjects.keda.sh)"}],
    )


def keda_managed(tag: str, name: str, scaled: dict[str, Any]) -> Conflict:
    """409 ``ScaledByAutoscaler``: KEDA's ScaledObject ``name`` owns the Deployment's replicas (its HPA would undo a
    hand-set count within a polling interval), so the API does not set them; the answer names the ScaledObject and its
    bounds."""
    spec = scaled.get("spec") or {}
    low, high = spec.get("minReplicaCount", 0), spec.get("maxReplicaCount")
    return Conflict(
        f"inference deployment {name} is scaled by the KEDA ScaledObject {INFERENCE_NAMESPACE}/{name} (between {low} "
        f"and {high} replicas): a replica count set by hand would be undone by its autoscaler. Change the bounds with "
        f"POST /clusters/{tag}/inference/deployments/{name}/router (autoscaling minReplicas/maxReplicas), or create "
        "the router without autoscaling to scale by hand",
        code="ScaledByAutoscaler",
        details=[
            {
                "field": "replicas",
                "autoscaler": f"{KEDA_KIND} {INFERENCE_NAMESPACE}/{name}",
                "minReplicas": low,
                "maxReplicas": high,
            }
        ],
    )


# -- managed endpoints (the HyperPod inference operator) --------------------------------------------------------------
INFERENCE_OPERATOR_FEATURE = "inferenceOperator"
INFERENCE_OPERATOR_ADDON = "amazon-sagemaker-hyperpod-inference"
TIERED_CHECKPOINTING_FEATURE = "tieredCheckpointing"


def inference_operator_not_enabled(tag: str, seen: str) -> Conflict:
    """409 ``FeatureNotEnabled`` naming the ``inferenceOperator`` feature and the PATCH body that turns it on."""
    return Conflict(
        f"the HyperPod inference operator is not enabled on cluster '{tag}': {seen}. Turn on the "
        f"'{INFERENCE_OPERATOR_FEATURE}' feature with PATCH /clusters/{tag}/features "
        f'{{"{INFERENCE_OPERATOR_FEATURE}": {{"enabled": true}}}} and retry once its operation SUCCEEDED',
        code="FeatureNotEnabled",
        details=[
            {
                "field": INFERENCE_OPERATOR_FEATURE,
                "addonName": INFERENCE_OPERATOR_ADDON,
                "observed": seen,
                "enableWith": {
                    "method": "PATCH",
                    "path": f"/clusters/{tag}/features",
                    "body": {INFERENCE_OPERATOR_FEATURE: {"enabled": True}},
                },
            }
        ],
    )


def require_inference_operator(eks: Any, tag: str, eks_cluster: str) -> None:
    """Refuse unless the inference operator's EKS add-on is ACTIVE (EKS ``DescribeAddon``).

    Raises:
        Conflict: ``FeatureNotEnabled`` naming ``inferenceOperator``.
        UpstreamUnavailable: EKS failed otherwise.
    """
    from botocore.exceptions import ClientError

    from instantstart.aws.clients import error_code, error_message
    from instantstart.errors import UpstreamUnavailable

    try:
        addon = eks.describe_addon(clusterName=eks_cluster, addonName=INFERENCE_OPERATOR_ADDON)["addon"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            seen = f"the EKS add-on {INFERENCE_OPERATOR_ADDON} is not installed"
            raise inference_operator_not_enabled(tag, seen) from exc
        raise UpstreamUnavailable(f"EKS DescribeAddon failed ({error_code(exc)}: {error_message(exc)})") from exc
    status = str(addon.get("status") or "")
    if status != "ACTIVE":
        raise inference_operator_not_enabled(tag, f"the EKS add-on {INFERENCE_OPERATOR_ADDON} is {status}")


def check_tiered_storage(tag: str, described_cluster: dict[str, Any]) -> None:
    """L2 KV cache on ``tieredstorage`` needs HyperPod tiered storage on (``TieredStorageConfig.Mode`` Enable).

    Raises:
        Conflict: ``FeatureNotEnabled`` naming ``tieredCheckpointing`` (the feature that turns it on).
    """
    mode = (described_cluster.get("TieredStorageConfig") or {}).get("Mode")
    if mode != "Enable":
        raise Conflict(
            f"kvCacheSpec.l2CacheBackend tieredstorage needs HyperPod tiered storage on cluster '{tag}' "
            f"(TieredStorageConfig Mode is {mode or 'not set'}): turn on the '{TIERED_CHECKPOINTING_FEATURE}' "
            f'feature with PATCH /clusters/{tag}/features {{"{TIERED_CHECKPOINTING_FEATURE}": {{"enabled": true}}}}, '
            "or use l2CacheBackend redis with l2CacheUrl",
            code="FeatureNotEnabled",
            details=[
                {
                    "field": TIERED_CHECKPOINTING_FEATURE,
                    "requestField": "kvCacheSpec.l2CacheBackend",
                    "observed": mode or "NOT_SET",
                    "enableWith": {
                        "method": "PATCH",
                        "path": f"/clusters/{tag}/features",
                        "body": {TIERED_CHECKPOINTING_FEATURE: {"enabled": True}},
                    },
                }
            ],
        )


def check_tls_uri(uri: str, tls_bucket: str) -> None:
    """The certificate output must be in the inference operator's TLS bucket (the operator's role may write there
    only).

    Raises:
        ValidationFailed: 422 naming ``tls.certificateOutputS3Uri`` with the allowed prefix.
    """
    bucket = uri.removeprefix("s3://").split("/")[0]
    if bucket != tls_bucket:
        raise ValidationFailed(
            f"tls.certificateOutputS3Uri {uri} is not in the inference operator's TLS bucket {tls_bucket}: the "
            "operator's role may write only there",
            details=[
                {
                    "field": "tls.certificateOutputS3Uri",
                    "message": "must be in the inferenceOperator feature's TLS bucket",
                    "allowedValues": [f"s3://{tls_bucket}/"],
                }
            ],
        )


def refuse_unknown_fields(paths: list[str], kind: str, api_version: str, request_fields: list[str]) -> None:
    """Refuse fields the served version's schema does not know (never let the API server prune them silently).

    Raises:
        ValidationFailed: 422, one detail per request field with the ``spec`` paths and the served version.
    """
    if not paths:
        return
    by_field: dict[str, list[str]] = {}
    for path, field in zip(paths, request_fields, strict=True):
        by_field.setdefault(field, []).append(f"spec.{path}")
    raise ValidationFailed(
        f"the cluster serves {kind} as {api_version}, whose schema does not know "
        f"{', '.join(f'spec.{p}' for p in paths)}; leave out {', '.join(sorted(by_field))} or upgrade the "
        "inference operator",
        details=[
            {
                "field": field,
                "message": f"not known to {api_version} {kind}",
                "specPaths": specs,
                "servedVersion": api_version,
            }
            for field, specs in sorted(by_field.items())
        ],
    )
