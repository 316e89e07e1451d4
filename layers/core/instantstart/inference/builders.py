"""Pure builders: a typed request -> the Kubernetes objects of a model download or a self-managed deployment.

Model download (``DOWNLOAD_MODEL``): a ``batch/v1`` Job in ``default`` whose pod carries the label
``instantstart.io/model-download=<sanitised model id>`` and, in every container, the environment ``HF_MODEL_ID``,
``HF_REVISION`` and ``DESTINATION`` (``s3://<cluster bucket>/models/<modelId>/`` or ``/fsx/models/<modelId>``). The
downloader is ``huggingface-cli download`` (argv, no shell) of the pinned vLLM image (which ships
``huggingface_hub``). To FSx for Lustre (POSIX) it writes in place. To S3 it downloads into a node-local
``emptyDir`` first, then ``cp -r`` copies the finished files to the Mountpoint for S3 mount (/s3): Mountpoint
writes new objects sequentially and does not rename, while ``huggingface-cli`` renames its partial files, so the
harsher reading (no in-place download to /s3) is modelled. A token is only ``HF_TOKEN`` from a Secret's key.

Deployment (``CREATE_INFERENCE_DEPLOYMENT``): an ``apps/v1`` Deployment (one engine per pod, node affinity on
``node.kubernetes.io/instance-type``, ``nvidia.com/gpu`` = ``gpus`` and the tensor parallel size = ``gpus``, a
memory ``/dev/shm``, the claim of the model's storage mounted read-only, a readiness probe on the engine's
``/health``) and a ``v1`` Service: ClusterIP, or ``LoadBalancer`` with the NLB annotations (scheme ``internal``
unless ``internet-facing`` was asked). The engine's argv is built from typed fields.

The router's objects (``CREATE_INFERENCE_ROUTER``) and the API's invoke access are built in
:mod:`.router_builders`, the shared engine images, ports and labels live in :mod:`.names` (both re-exported).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from instantstart.inference.names import (  # re-exported
    ENGINE_IMAGES as ENGINE_IMAGES,
)
from instantstart.inference.names import (
    ENGINE_PORTS as ENGINE_PORTS,
)
from instantstart.inference.names import (
    HEALTH_PATH as HEALTH_PATH,
)
from instantstart.inference.names import (
    LABEL_DEPLOYMENT as LABEL_DEPLOYMENT,
)
from instantstart.inference.names import (
    LABEL_ENGINE as LABEL_ENGINE,
)
from instantstart.inference.names import (
    LABEL_MANAGED as LABEL_MANAGED,
)
from instantstart.inference.names import (
    LABEL_MODEL_DOWNLOAD as LABEL_MODEL_DOWNLOAD,
)
from instantstart.inference.names import (
    LABEL_ROLE as LABEL_ROLE,
)
from instantstart.inference.names import (
    MANAGED_BY as MANAGED_BY,
)
from instantstart.inference.router_builders import (  # re-exported
    INVOKE_ROLE as INVOKE_ROLE,
)
from instantstart.inference.router_builders import (
    KEDA_API_VERSION as KEDA_API_VERSION,
)
from instantstart.inference.router_builders import (
    KEDA_KIND as KEDA_KIND,
)
from instantstart.inference.router_builders import (
    ROUTER_IMAGE as ROUTER_IMAGE,
)
from instantstart.inference.router_builders import (
    ROUTER_PORT as ROUTER_PORT,
)
from instantstart.inference.router_builders import (
    build_router as build_router,
)
from instantstart.inference.router_builders import (
    invoke_access as invoke_access,
)
from instantstart.inference.router_builders import (
    router_name as router_name,
)
from instantstart.models.inference import (
    INFERENCE_NAMESPACE,
    CreateInferenceDeploymentRequest,
    Destination,
    DownloadModelRequest,
    Engine,
    SecretKeyRef,
)

DOWNLOADER_IMAGE = ENGINE_IMAGES[Engine.VLLM]
COPY_IMAGE = "public.ecr.aws/docker/library/busybox:1.36.1"
"""The image that copies the finished download into the S3 mount (``cp -r``)."""

S3_CLAIM = "s3-claim"
FSX_CLAIM = "fsx-claim"
MOUNTS = {S3_CLAIM: "/s3", FSX_CLAIM: "/fsx"}
MODELS_PREFIX = "models/"
"""Key prefix of downloaded models in the cluster's bucket."""

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ANNOTATION_SPEC = "instantstart.io/spec"
"""The typed request on the Deployment (JSON, no secret values: the token is only a Secret reference)."""
ANNOTATION_BOUND_MODEL = "instantstart.io/bound-model"
"""A pod serving a model assigned to it (set by whoever assigns: a router, a user)."""
ANNOTATION_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
"""Pods with a lower cost are deleted first when a ReplicaSet scales in."""
BOUND_COST = 1000
IDLE_COST = -1000
NLB_TYPE = "service.beta.kubernetes.io/aws-load-balancer-type"
NLB_SCHEME = "service.beta.kubernetes.io/aws-load-balancer-scheme"
NLB_INTERNAL = "service.beta.kubernetes.io/aws-load-balancer-internal"
SCRATCH = "/scratch"
JOB_BACKOFF_LIMIT = 2
JOB_TTL_SECONDS = 7 * 86400


def sanitise_model_id(model_id: str) -> str:
    """The label value of a model id: each character outside ``[A-Za-z0-9._-]`` becomes ``-`` (``/`` too), at most
    63 characters, starting and ending with a letter or digit (``Qwen/Qwen2.5-0.5B`` -> ``Qwen-Qwen2.5-0.5B``)."""
    value = re.sub(r"[^A-Za-z0-9._-]", "-", model_id)[:63]
    return value.strip("-._") or "model"


def download_job_name(model_id: str, revision: str, destination: str, operation_id: str) -> str:
    """``model-download-<10 hex>``: one Job per operation (model, revision, destination and operation id hashed), a
    DNS-1123 name; a later download of the same model gets its own Job."""
    digest = hashlib.sha256(f"{model_id}@{revision}->{destination}#{operation_id}".encode()).hexdigest()[:10]
    return f"model-download-{digest}"


def model_location(destination: Destination, model_id: str, bucket: str | None) -> tuple[str, str]:
    """``(DESTINATION, path pods see)``: ``s3://<bucket>/models/<id>/`` and ``/s3/models/<id>``, or
    ``/fsx/models/<id>`` twice."""
    if destination is Destination.S3:
        return f"s3://{bucket}/{MODELS_PREFIX}{model_id}/", f"/s3/{MODELS_PREFIX}{model_id}"
    path = f"/fsx/{MODELS_PREFIX}{model_id}"
    return path, path


def _secret_env(ref: SecretKeyRef | None) -> list[dict[str, Any]]:
    if ref is None:
        return []
    return [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key, "optional": False}}}]


def _claim_volume(claim: str, *, read_only: bool = False) -> dict[str, Any]:
    return {
        "name": claim.replace("-claim", ""),
        "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only},
    }


def download_job(request: DownloadModelRequest, bucket: str | None, operation_id: str) -> dict[str, Any]:
    """The ``batch/v1`` Job downloading ``request.model_id`` into the cluster's storage (see the module text).

    Args:
        bucket: the cluster's bucket (s3 destination).
        operation_id: recorded as annotation ``instantstart/operation-id``.
    """
    destination, path = model_location(request.destination, request.model_id, bucket)
    name = download_job_name(request.model_id, request.revision, request.destination.value, operation_id)
    labels = {LABEL_MODEL_DOWNLOAD: sanitise_model_id(request.model_id), LABEL_MANAGED: MANAGED_BY}
    env = [
        {"name": "HF_MODEL_ID", "value": request.model_id},
        {"name": "HF_REVISION", "value": request.revision},
        {"name": "DESTINATION", "value": destination},
        {"name": "HF_HUB_DISABLE_PROGRESS_BARS", "value": "1"},
        *_secret_env(request.hf_token_secret),
    ]
    resources = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "8Gi"}}
    fetch_into = f"{SCRATCH}/model" if request.destination is Destination.S3 else path
    fetch: dict[str, Any] = {
        "name": "download",
        "image": DOWNLOADER_IMAGE,
        "command": ["huggingface-cli", "download", request.model_id],
        "args": ["--revision", request.revision, "--local-dir", fetch_into, "--cache-dir", f"{SCRATCH}/cache"],
        "env": env,
        "resources": resources,
        "volumeMounts": [{"name": "scratch", "mountPath": SCRATCH}],
    }
    volumes: list[dict[str, Any]] = [{"name": "scratch", "emptyDir": {}}]
    if request.destination is Destination.S3:
        copy = {
            "name": "copy",
            "image": COPY_IMAGE,
            # cp -r <dir>/. <dest>: the files, not the directory; Mountpoint writes each one as a new object.
            "command": ["cp", "-r", f"{SCRATCH}/model/.", f"{path}/"],
            "env": [e for e in env if "valueFrom" not in e],
            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
            "volumeMounts": [{"name": "scratch", "mountPath": SCRATCH}, {"name": "s3", "mountPath": "/s3"}],
        }
        init, main = [fetch], [copy]
        volumes.append(_claim_volume(S3_CLAIM))
    else:
        fetch["volumeMounts"].append({"name": "fsx", "mountPath": "/fsx"})
        init, main = [], [fetch]
        volumes.append(_claim_volume(FSX_CLAIM))
    pod_spec: dict[str, Any] = {"restartPolicy": "Never", "containers": main, "volumes": volumes}
    if init:
        pod_spec["initContainers"] = init
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": INFERENCE_NAMESPACE,
            "labels": dict(labels),
            "annotations": {"instantstart/operation-id": operation_id, "instantstart.io/model-id": request.model_id},
        },
        "spec": {
            "backoffLimit": JOB_BACKOFF_LIMIT,
            "ttlSecondsAfterFinished": JOB_TTL_SECONDS,
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
        },
    }


# -- self-managed deployments ---------------------------------------------------------------------------------------
def engine_port(request: CreateInferenceDeploymentRequest) -> int:
    """The request's port, else the engine's default (vllm 8000, sglang 30000)."""
    return request.port or ENGINE_PORTS[request.engine]


def engine_image(request: CreateInferenceDeploymentRequest) -> str:
    """The request's pinned image, else the engine's pinned image."""
    return request.image or ENGINE_IMAGES[request.engine]


def engine_argv(request: CreateInferenceDeploymentRequest) -> list[str]:
    """The engine's argv from typed fields (no shell): the tensor parallel size is ``gpus``.

    vLLM: ``python3 -m vllm.entrypoints.openai.api_server --model <path> --served-model-name <name>
    --tensor-parallel-size <gpus> [--max-model-len <n>] --host 0.0.0.0 --port <port>``. SGLang:
    ``python3 -m sglang.launch_server --model-path <path> --served-model-name <name> --tp-size <gpus>
    [--context-length <n>] --host 0.0.0.0 --port <port>``.
    """
    port = str(engine_port(request))
    if request.engine is Engine.VLLM:
        argv = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", request.model_path]
        argv += ["--served-model-name", request.served_model_name, "--tensor-parallel-size", str(request.gpus)]
        if request.max_model_len:
            argv += ["--max-model-len", str(request.max_model_len)]
    else:
        argv = ["python3", "-m", "sglang.launch_server", "--model-path", request.model_path]
        argv += ["--served-model-name", request.served_model_name, "--tp-size", str(request.gpus)]
        if request.max_model_len:
            argv += ["--context-length", str(request.max_model_len)]
    return [*argv, "--host", "0.0.0.0", "--port", port]


def model_claim(model_path: str) -> str:
    """The claim holding ``model_path``: ``s3-claim`` for /s3/..., ``fsx-claim`` for /fsx/...."""
    return S3_CLAIM if model_path.startswith("/s3/") else FSX_CLAIM


def deployment_labels(name: str, engine: Engine) -> dict[str, str]:
    """Labels of the Deployment and its pods (the selector is ``instantstart.io/inference-deployment``)."""
    return {LABEL_DEPLOYMENT: name, LABEL_ENGINE: engine.value, LABEL_ROLE: "worker", LABEL_MANAGED: MANAGED_BY}


def spec_annotation(request: CreateInferenceDeploymentRequest) -> str:
    """The request as stored on the Deployment (JSON; the token is only a Secret reference)."""
    return json.dumps(request.to_api(), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class BuiltDeployment:
    """The objects of one deployment, in apply order."""

    deployment: dict[str, Any]
    service: dict[str, Any]

    @property
    def objects(self) -> tuple[dict[str, Any], ...]:
        """Deployment, then Service."""
        return (self.deployment, self.service)


def build_deployment(
    request: CreateInferenceDeploymentRequest, *, memory_mib: int, operation_id: str
) -> BuiltDeployment:
    """The Deployment and Service of ``request`` (see the module text).

    Args:
        memory_mib: the instance type's memory (``/dev/shm`` gets half).
        operation_id: recorded as annotation ``instantstart/operation-id``.
    """
    name, port = request.name, engine_port(request)
    labels = deployment_labels(name, request.engine)
    claim = model_claim(request.model_path)
    gpu = {"nvidia.com/gpu": str(request.gpus)}
    container = {
        "name": "engine",
        "image": engine_image(request),
        "command": engine_argv(request),
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "env": _secret_env(request.hf_token_secret),
        "resources": {"requests": dict(gpu), "limits": dict(gpu)},
        "readinessProbe": {
            "httpGet": {"path": HEALTH_PATH, "port": port},
            "periodSeconds": 10,
            "failureThreshold": 3,
            "timeoutSeconds": 5,
        },
        "startupProbe": {
            "httpGet": {"path": HEALTH_PATH, "port": port},
            "periodSeconds": 10,
            "failureThreshold": 180,
        },
        "volumeMounts": [
            {"name": "shm", "mountPath": "/dev/shm"},
            {"name": claim.replace("-claim", ""), "mountPath": MOUNTS[claim], "readOnly": True},
        ],
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [request.instance_type]}
                        ]
                    }
                ]
            }
        }
    }
    meta = {
        "name": name,
        "namespace": INFERENCE_NAMESPACE,
        "labels": dict(labels),
        "annotations": {ANNOTATION_SPEC: spec_annotation(request), "instantstart/operation-id": operation_id},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": request.replicas,
            "selector": {"matchLabels": {LABEL_DEPLOYMENT: name}},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "affinity": affinity,
                    "containers": [container],
                    "volumes": [
                        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{max(memory_mib // 2, 64)}Mi"}},
                        _claim_volume(claim, read_only=True),
                    ],
                },
            },
        },
    }
    return BuiltDeployment(deployment=deployment, service=build_service(request, labels))


def service_annotations(service_type: str, exposure: str) -> dict[str, str]:
    """NLB annotations of a LoadBalancer Service (none for ClusterIP): type ``nlb`` and scheme ``internal`` (plus the
    in-tree controller's ``aws-load-balancer-internal``) unless ``internet-facing`` was asked."""
    if service_type != "LoadBalancer":
        return {}
    if exposure == "internet-facing":
        return {NLB_TYPE: "nlb", NLB_SCHEME: "internet-facing"}
    return {NLB_TYPE: "nlb", NLB_SCHEME: "internal", NLB_INTERNAL: "true"}


def build_service(request: CreateInferenceDeploymentRequest, labels: dict[str, str]) -> dict[str, Any]:
    """The Service in front of the workers (port = the engine's port)."""
    port = engine_port(request)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": request.name,
            "namespace": INFERENCE_NAMESPACE,
            "labels": dict(labels),
            "annotations": service_annotations(request.service.type, request.service.exposure),
        },
        "spec": {
            "type": request.service.type,
            "selector": {LABEL_DEPLOYMENT: request.name, LABEL_ROLE: "worker"},
            "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


# -- scale-in: bound pods vs idle pods ------------------------------------------------------------------------------
def bound_model(pod: dict[str, Any]) -> str | None:
    """The model assigned to ``pod`` (annotation ``instantstart.io/bound-model``), or None: idle."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_BOUND_MODEL)
    return str(value) if value else None


def deletion_costs(pods: list[dict[str, Any]]) -> dict[str, str]:
    """Pod name -> ``controller.kubernetes.io/pod-deletion-cost``: a bound pod ``1000``, an idle one ``-1000`` (the
    ReplicaSet controller deletes lower costs first, so idle pods go before any bound one)."""
    return {
        str(p["metadata"]["name"]): str(BOUND_COST if bound_model(p) else IDLE_COST)
        for p in pods
        if not (p.get("metadata") or {}).get("deletionTimestamp")
    }
