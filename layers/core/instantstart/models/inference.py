"""Inference models: model downloads into the cluster's storage and self-managed vLLM/SGLang deployments.

Routes ``/clusters/{clusterTag}/models`` (``POST`` download, ``GET`` list what the bucket holds) and
``/clusters/{clusterTag}/inference/deployments`` (``POST``, ``GET``; ``.../{name}`` ``GET``/``PATCH``/``DELETE``;
``.../{name}/router``). A request becomes Kubernetes objects through :mod:`instantstart.inference.builders`; the
writes run as day-2 changes (``DOWNLOAD_MODEL``, ``CREATE_``/``UPDATE_``/``DELETE_INFERENCE_DEPLOYMENT``,
``CREATE_INFERENCE_ROUTER``).

A Hugging Face token is never a value of any request: only a Kubernetes Secret reference (``hfTokenSecret``: name
and key of a Secret in the workloads' namespace), which becomes ``env[].valueFrom.secretKeyRef``. The API never
reads the Secret and never echoes a value.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from instantstart.models.cluster import INSTANCE_TYPE_PATTERN, INSTANCE_TYPE_RULE
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule
from instantstart.models.operation import OperationView
from instantstart.models.training_jobs import IMAGE_PATTERN, IMAGE_RULE, refuse_unpinned

INFERENCE_NAMESPACE = "default"
"""Namespace of model downloads and inference deployments: the storage claims (s3-claim, fsx-claim) live there."""

HF_MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$"
HF_MODEL_ID_RULE = "a Hugging Face model id: [org/]name of letters, digits, '.', '_' or '-' (e.g. Qwen/Qwen2.5-0.5B)"
HF_REVISION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]*$"
HF_REVISION_RULE = "a branch, tag or commit of the model repository (e.g. main or a 40-hex commit)"
SECRET_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
SECRET_NAME_RULE = "a Kubernetes Secret name: lowercase letters, digits, '-' or '.' (e.g. hf-token)"
SECRET_KEY_PATTERN = r"^[-._A-Za-z0-9]+$"
SECRET_KEY_RULE = "a key of the Secret's data: letters, digits, '-', '_' or '.' (e.g. token)"
DEPLOYMENT_NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DEPLOYMENT_NAME_MAX = 45
"""The router's objects are ``<name>-router`` and pods get two generated suffixes: 45 keeps both within 63."""
DEPLOYMENT_NAME_RULE = (
    f"a DNS-1035 label of 1-{DEPLOYMENT_NAME_MAX} lowercase letters, digits or hyphens, starting with a letter and "
    "ending with a letter or digit (e.g. qwen-vllm)"
)
MODEL_PATH_PATTERN = r"^/(s3|fsx)/[A-Za-z0-9._=+-]+(/[A-Za-z0-9._=+-]+)*/?$"
MODEL_PATH_RULE = "a directory in the mounted storage: /s3/models/<modelId> (the cluster's bucket) or /fsx/..."
SERVED_MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/:-]*$"
SERVED_MODEL_NAME_RULE = "the model name clients send: letters, digits, '.', '_', '/', ':' or '-' (e.g. qwen2.5-0.5b)"
PROMETHEUS_URL_PATTERN = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$"
PROMETHEUS_URL_RULE = "an http(s) URL of a Prometheus query API (e.g. http://prometheus.monitoring:9090)"

INVOKE_MAX_BYTES = 1024 * 1024
"""Largest JSON body ``POST .../invoke`` sends, bytes."""
INVOKE_MAX_RESPONSE_BYTES = 256 * 1024
"""Largest answer ``POST .../invoke`` returns whole, bytes (a longer one is cut; an answer replayed for an
``Idempotency-Key`` is stored in DynamoDB, whose items hold at most 400 KB)."""
MAX_REPLICAS = 64
MAX_GPUS = 16
MAX_MODEL_LEN = 1048576


class Engine(StrEnum):
    """The self-managed serving engines."""

    VLLM = "vllm"
    SGLANG = "sglang"


class Destination(StrEnum):
    """Where a model download writes: the cluster's S3 bucket (claim ``s3-claim`` at /s3) or FSx (``fsx-claim``)."""

    S3 = "s3"
    FSX = "fsx"


class SecretKeyRef(ApiModel):
    """A key of a Kubernetes Secret in the workloads' namespace (``default``): the Hugging Face token's only form."""

    name: str = Field(
        pattern=SECRET_NAME_PATTERN,
        max_length=253,
        description="Secret name.",
        examples=["hf-token"],
        json_schema_extra=pattern_rule(SECRET_NAME_RULE),
    )
    key: str = Field(
        pattern=SECRET_KEY_PATTERN,
        max_length=253,
        description="Key of the Secret's data holding the token.",
        examples=["token"],
        json_schema_extra=pattern_rule(SECRET_KEY_RULE),
    )


class DownloadModelRequest(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/models``: a Hugging Face model into the cluster's storage."""

    source: Literal["huggingface"] = Field(description="Where the model comes from.", examples=["huggingface"])
    model_id: str = Field(
        pattern=HF_MODEL_ID_PATTERN,
        max_length=200,
        description="Hugging Face model id.",
        examples=["Qwen/Qwen2.5-0.5B-Instruct"],
        json_schema_extra=pattern_rule(HF_MODEL_ID_RULE),
    )
    revision: str = Field(
        default="main",
        pattern=HF_REVISION_PATTERN,
        max_length=128,
        description="Branch, tag or commit (default main).",
        examples=["main"],
        json_schema_extra=pattern_rule(HF_REVISION_RULE),
    )
    destination: Destination = Field(
        default=Destination.S3,
        description="s3: s3://<cluster bucket>/models/<modelId>/ (mounted at /s3/models/<modelId>); fsx: "
        "/fsx/models/<modelId> (needs the fsx feature with a file system).",
        examples=["s3"],
    )
    hf_token_secret: SecretKeyRef | None = Field(
        default=None,
        description="Gated models: the Secret holding a Hugging Face token (never the token itself).",
    )


class ModelDownloadAccepted(ApiModel):
    """Body of the 202 of ``POST /clusters/{clusterTag}/models``."""

    model_id: str = Field(description="Hugging Face model id.", examples=["Qwen/Qwen2.5-0.5B-Instruct"])
    destination: Destination = Field(description="s3 or fsx.", examples=["s3"])
    location: str = Field(
        description="Where the files land (s3:// URI or /fsx path).",
        examples=["s3://instantstart-demo-123456789012-us-west-2/models/Qwen/Qwen2.5-0.5B-Instruct/"],
    )
    model_path: str = Field(
        description="The path pods see (modelPath of an inference deployment).",
        examples=["/s3/models/Qwen/Qwen2.5-0.5B-Instruct"],
    )
    job_name: str = Field(description="The Kubernetes Job (namespace default).", examples=["model-download-1a2b3c4d"])
    operation: OperationView = Field(description="The DOWNLOAD_MODEL operation (its result shows bytes and files).")


class StoredModel(ApiModel):
    """One model present in the cluster's bucket (s3) or on its FSx for Lustre file system (fsx, as exported to the
    bucket's ``fsx/models/`` prefix by the file system's data repository association)."""

    model_id: str = Field(
        description="Model id (the prefix under models/ or fsx/models/).", examples=["Qwen/Qwen2.5-0.5B-Instruct"]
    )
    destination: Destination = Field(description="Where it is stored.", examples=["s3"])
    location: str = Field(
        description="s3: its S3 prefix; fsx: its path on the file system as pods mount it (/fsx/models/<id>).",
        examples=["s3://instantstart-demo-123456789012-us-west-2/models/Qwen/Qwen2.5-0.5B-Instruct/"],
    )
    model_path: str = Field(description="The path pods see.", examples=["/s3/models/Qwen/Qwen2.5-0.5B-Instruct"])
    size_bytes: int = Field(description="Bytes of every object under the prefix (fsx: of the files exported so far).")
    files: int = Field(description="Objects under the prefix (fsx: files exported so far).")
    last_modified: str | None = Field(default=None, description="Newest object's LastModified (ISO-8601 UTC).")


class FsxListing(ApiModel):
    """Whether ``GET .../models`` can list the models on the cluster's FSx for Lustre file system, and why not."""

    listed: bool = Field(
        description="True: the file system's /models is exported to s3://<bucket>/fsx/models/ by an AVAILABLE data "
        "repository association and its models are listed (export is asynchronous: a file appears some time after "
        "it is written). False: models on the file system may be missing; reason says why."
    )
    reason: str | None = Field(default=None, description="Why they are not listed (null when listed).")
    file_system_id: str | None = Field(
        default=None, description="The fsx feature's file system.", examples=["fs-0123456789abcdef0"]
    )
    association_id: str | None = Field(
        default=None, description="Its models data repository association.", examples=["dra-0123456789abcdef0"]
    )
    lifecycle: str | None = Field(default=None, description="The association's Lifecycle.", examples=["AVAILABLE"])
    data_repository_path: str | None = Field(
        default=None,
        description="Where the association exports to.",
        examples=["s3://instantstart-demo-123456789012-us-west-2/fsx/models/"],
    )


class ModelList(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/models``."""

    bucket: str | None = Field(description="The cluster's bucket (null: the storage stage recorded none).")
    models: list[StoredModel] = Field(
        description="Models under s3://<bucket>/models/ (destination s3) and under s3://<bucket>/fsx/models/, the "
        "export of the FSx file system's /models (destination fsx), by destination and id."
    )
    fsx: FsxListing = Field(description="Whether the models on the FSx for Lustre file system are listed.")


class ServiceSpec(ApiModel):
    """How the deployment is reached: a ClusterIP Service (default) or a Network Load Balancer."""

    type: Literal["ClusterIP", "LoadBalancer"] = Field(
        default="ClusterIP",
        description="ClusterIP: inside the cluster only. LoadBalancer: an NLB (internal unless exposure says so).",
    )
    exposure: Literal["internal", "internet-facing"] = Field(
        default="internal",
        description="With LoadBalancer: internal (default, reachable from the VPC) or internet-facing (reachable from "
        "the internet: ask for it explicitly).",
    )

    @model_validator(mode="after")
    def _exposure_needs_lb(self) -> ServiceSpec:
        if self.exposure == "internet-facing" and self.type != "LoadBalancer":
            raise ValueError("exposure internet-facing needs type LoadBalancer")
        return self


class CreateInferenceDeploymentRequest(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/inference/deployments``: a vLLM or SGLang Deployment and its Service."""

    name: str = Field(
        pattern=DEPLOYMENT_NAME_PATTERN,
        max_length=DEPLOYMENT_NAME_MAX,
        description="Name of the Deployment and Service.",
        examples=["qwen-vllm"],
        json_schema_extra=pattern_rule(DEPLOYMENT_NAME_RULE),
    )
    engine: Engine = Field(description="vllm or sglang.", examples=["vllm"])
    model_path: str = Field(
        pattern=MODEL_PATH_PATTERN,
        max_length=1024,
        description="The model's directory in storage (see GET /clusters/{clusterTag}/models).",
        examples=["/s3/models/Qwen/Qwen2.5-0.5B-Instruct"],
        json_schema_extra=pattern_rule(MODEL_PATH_RULE),
    )
    served_model_name: str = Field(
        pattern=SERVED_MODEL_NAME_PATTERN,
        max_length=128,
        description="The model name clients put in requests.",
        examples=["qwen2.5-0.5b"],
        json_schema_extra=pattern_rule(SERVED_MODEL_NAME_RULE),
    )
    instance_type: str = Field(
        pattern=INSTANCE_TYPE_PATTERN,
        description="Instance type of the pods: one of the cluster's instance groups.",
        examples=["ml.g6.4xlarge"],
        json_schema_extra=pattern_rule(INSTANCE_TYPE_RULE),
    )
    gpus: int = Field(
        strict=True,
        default=1,
        ge=1,
        le=MAX_GPUS,
        description="GPUs per replica; the tensor parallel size is this number (never inferred the other way).",
    )
    max_model_len: int | None = Field(
        strict=True,
        default=None,
        ge=128,
        le=MAX_MODEL_LEN,
        description="Most tokens of a sequence (vLLM --max-model-len, SGLang --context-length); default: the model's.",
    )
    replicas: int = Field(strict=True, default=1, ge=0, le=MAX_REPLICAS, description="Pods (one engine each).")
    port: int | None = Field(
        strict=True,
        default=None,
        ge=1024,
        le=65535,
        description="Port of the engine and Service (default: vllm 8000, sglang 30000).",
    )
    image: str | None = Field(
        default=None,
        pattern=IMAGE_PATTERN,
        max_length=512,
        description="Engine image with a pinned tag or digest (default: the pinned image of the engine).",
        json_schema_extra=pattern_rule(IMAGE_RULE),
    )
    service: ServiceSpec = Field(default_factory=ServiceSpec, description="How it is reached (default ClusterIP).")
    hf_token_secret: SecretKeyRef | None = Field(
        default=None, description="A Secret with a Hugging Face token (HF_TOKEN from secretKeyRef; never a value)."
    )

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str | None) -> str | None:
        return refuse_unpinned(image) if image is not None else None


class ScaleInferenceDeploymentRequest(ApiModel):
    """Body of ``PATCH .../inference/deployments/{name}``: the replicas wanted."""

    replicas: int = Field(strict=True, ge=0, le=MAX_REPLICAS, description="Pods wanted.", examples=[2])


class KedaAutoscaling(ApiModel):
    """A KEDA ``ScaledObject`` on the workers: scale on the SGLang queue length read from Prometheus."""

    min_replicas: int = Field(strict=True, default=1, ge=0, le=MAX_REPLICAS, description="Fewest workers.")
    max_replicas: int = Field(strict=True, ge=1, le=MAX_REPLICAS, description="Most workers.", examples=[4])
    prometheus_server_address: str = Field(
        pattern=PROMETHEUS_URL_PATTERN,
        max_length=512,
        description="Prometheus query API that scrapes the workers' /metrics.",
        examples=["http://prometheus-server.monitoring:9090"],
        json_schema_extra=pattern_rule(PROMETHEUS_URL_RULE),
    )
    queue_threshold: int = Field(
        strict=True, default=8, ge=1, le=10000, description="Queued requests per worker that add a worker."
    )

    @model_validator(mode="after")
    def _bounds(self) -> KedaAutoscaling:
        if self.min_replicas > self.max_replicas:
            raise ValueError("minReplicas must be at most maxReplicas")
        return self


class CreateRouterRequest(ApiModel):
    """Body of ``POST .../inference/deployments/{name}/router``: the SGLang router in front of the workers."""

    policy: Literal["cache_aware", "round_robin", "power_of_two", "random"] = Field(
        default="cache_aware", description="Routing policy of the SGLang router."
    )
    replicas: int = Field(strict=True, default=1, ge=1, le=8, description="Router pods.")
    autoscaling: KedaAutoscaling | None = Field(
        default=None, description="A KEDA ScaledObject on the workers (needs KEDA on the cluster)."
    )


class InferenceDeploymentAccepted(ApiModel):
    """Body of the 202 of the deployment routes: the deployment and the operation that changes it."""

    name: str = Field(description="Deployment name.", examples=["qwen-vllm"])
    namespace: str = Field(description="Namespace.", examples=["default"])
    operation: OperationView = Field(description="The operation to poll (GET /operations/{operationId}).")


class DeploymentStatus(StrEnum):
    """A deployment's status, read from the Deployment's status."""

    PROGRESSING = "Progressing"
    READY = "Ready"
    SCALED_TO_ZERO = "ScaledToZero"
    FAILED = "Failed"


class InferencePod(ApiModel):
    """One pod of a deployment."""

    name: str = Field(description="Pod name.")
    node_name: str | None = Field(
        default=None, description="Node (null: not scheduled).", examples=["hyperpod-i-0123456789abcdef0"]
    )
    phase: str | None = Field(default=None, description="Pod phase.", examples=["Running"])
    ready: bool = Field(description="The engine's readiness probe passes.")
    bound_model: str | None = Field(
        default=None, description="The model assigned to this pod (annotation instantstart.io/bound-model), if any."
    )
    deletion_cost: int | None = Field(
        default=None, description="controller.kubernetes.io/pod-deletion-cost (lower goes first at scale-in)."
    )
    reason: str | None = Field(
        default=None,
        description="Why the pod does not run, as Kubernetes reports it: the kubelet's container waiting reason "
        "(ErrImagePull, ImagePullBackOff, CrashLoopBackOff, ...) or Unschedulable (PodScheduled=False); null when "
        "nothing holds it.",
        examples=["ImagePullBackOff"],
    )
    message: str | None = Field(default=None, description="The kubelet's or the scheduler's message, verbatim.")


class InferenceService(ApiModel):
    """The deployment's Service."""

    type: str = Field(description="ClusterIP or LoadBalancer.", examples=["ClusterIP"])
    port: int = Field(description="Port.", examples=[8000])
    cluster_ip: str | None = Field(default=None, description="Cluster IP.")
    exposure: str | None = Field(default=None, description="internal or internet-facing (LoadBalancer).")
    hostname: str | None = Field(default=None, description="The load balancer's DNS name, once it has one.")
    url: str = Field(description="In-cluster URL.", examples=["http://qwen-vllm.default.svc:8000"])


class InferenceDeploymentSummary(ApiModel):
    """One deployment of ``GET .../inference/deployments``."""

    name: str = Field(description="Name.", examples=["qwen-vllm"])
    namespace: str = Field(description="Namespace.", examples=["default"])
    engine: str | None = Field(default=None, description="vllm or sglang.", examples=["vllm"])
    model_path: str | None = Field(default=None, description="Model directory.")
    served_model_name: str | None = Field(default=None, description="Served model name.", examples=["qwen2.5-0.5b"])
    instance_type: str | None = Field(default=None, description="Instance type.", examples=["ml.g6.4xlarge"])
    gpus: int | None = Field(default=None, description="GPUs per replica (= tensor parallel size).")
    status: DeploymentStatus = Field(description="Progressing, Ready, ScaledToZero or Failed.", examples=["Ready"])
    desired_replicas: int = Field(description="spec.replicas.")
    ready_replicas: int = Field(description="status.readyReplicas.")


class InferenceDeploymentList(ApiModel):
    """Body of ``GET .../inference/deployments``."""

    deployments: list[InferenceDeploymentSummary] = Field(description="Deployments made here, by name.")


class InferenceDeploymentView(InferenceDeploymentSummary):
    """Body of ``GET .../inference/deployments/{name}``."""

    image: str | None = Field(default=None, description="Engine image.")
    port: int | None = Field(default=None, description="Engine port.")
    max_model_len: int | None = Field(default=None, description="Max model length, if set.")
    hf_token_secret_name: str | None = Field(
        default=None, description="Name of the Secret the token comes from (never its value).", examples=["hf-token"]
    )
    service: InferenceService | None = Field(default=None, description="The Service (null: not found).")
    router: InferenceService | None = Field(default=None, description="The SGLang router's Service, if any.")
    autoscaling: dict[str, int | str] | None = Field(
        default=None, description="The KEDA ScaledObject's bounds, if any (minReplicas, maxReplicas)."
    )
    pods: list[InferencePod] = Field(description="The deployment's pods.")
    conditions: list[dict[str, str]] = Field(description="The Deployment's conditions (type, status, reason, message).")
    reason: str | None = Field(
        default=None,
        description="While not every wanted pod is ready: the first pod problem (image pull failure with the "
        "kubelet's message, unschedulable with the scheduler's message), as soon as Kubernetes reports it; null "
        "otherwise.",
    )


class InvokeRoute(StrEnum):
    """The OpenAI-compatible routes of vLLM and SGLang that ``POST .../invoke`` calls."""

    COMPLETIONS = "v1/completions"
    CHAT_COMPLETIONS = "v1/chat/completions"


class InvokeDeploymentRequest(ApiModel):
    """Body of ``POST .../inference/deployments/{name}/invoke``: the JSON payload sent to the engine."""

    body: dict[str, Any] = Field(
        description=f"The JSON object sent to the engine (at most {INVOKE_MAX_BYTES} bytes serialised); ``model`` "
        "defaults to the deployment's served model name.",
        examples=[{"prompt": "Hello", "max_tokens": 16}],
    )
    route: InvokeRoute = Field(
        default=InvokeRoute.COMPLETIONS,
        description="The engine's OpenAI-compatible route: v1/completions (prompt) or v1/chat/completions (messages).",
        examples=["v1/completions"],
    )
    via: Literal["router", "service"] | None = Field(
        default=None,
        description="router: the SGLang router's Service; service: the workers' Service; null: the router when the "
        "deployment has one, else the service.",
        examples=["service"],
    )


class InvokeDeploymentView(ApiModel):
    """Body of the 200 of ``POST .../inference/deployments/{name}/invoke``."""

    service: str = Field(description="The Service the call went through.", examples=["qwen-vllm"])
    port: int = Field(description="Its port.", examples=[8000])
    route: InvokeRoute = Field(description="The engine route called.", examples=["v1/completions"])
    content_type: str | None = Field(
        default=None, description="Content-Type of the answer.", examples=["application/json"]
    )
    body: Any = Field(default=None, description="The answer parsed as JSON (null when truncated or not JSON).")
    text: str | None = Field(default=None, description="The answer as text when it is not JSON or was truncated.")
    truncated: bool = Field(description=f"The answer was longer than {INVOKE_MAX_RESPONSE_BYTES} bytes and was cut.")
