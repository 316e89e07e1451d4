"""Managed inference endpoints: an ``InferenceEndpointConfig`` (or a ``JumpStartModel``) the HyperPod inference operator
reconciles into worker pods and a SageMaker endpoint.

Routes ``/clusters/{clusterTag}/inference/endpoints`` (``POST``, ``GET``; ``.../{name}`` ``GET``/``DELETE``;
``.../{name}/invoke``). The request is typed here; :mod:`instantstart.inference.endpoint_builders` maps it to the
custom resource of the API version the cluster serves, and refuses fields that version does not know.

A Hugging Face token is never a value of any request: only a Kubernetes Secret reference.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from instantstart.models.cluster import INSTANCE_TYPE_PATTERN, INSTANCE_TYPE_RULE
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule
from instantstart.models.inference import (
    HF_MODEL_ID_PATTERN,
    HF_MODEL_ID_RULE,
    INVOKE_MAX_BYTES,
    INVOKE_MAX_RESPONSE_BYTES,
    SecretKeyRef,
)
from instantstart.models.operation import OperationView
from instantstart.models.training_jobs import IMAGE_PATTERN, IMAGE_RULE, refuse_unpinned

ENDPOINT_NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
ENDPOINT_NAME_MAX = 25
"""The SageMaker endpoint is ``instantstart-<tag>-<name>``: 13 + 24 + 1 + 25 = 63, SageMaker's limit."""
ENDPOINT_NAME_RULE = (
    f"a DNS-1035 label of 1-{ENDPOINT_NAME_MAX} lowercase letters, digits or hyphens, starting with a letter and "
    "ending with a letter or digit (e.g. qwen-managed)"
)
BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
BUCKET_RULE = "an S3 bucket name: 3-63 lowercase letters, digits, '.' or '-'"
REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-[0-9]$"
REGION_RULE = "an AWS Region code (e.g. us-west-2)"
MODEL_LOCATION_PATTERN = r"^[A-Za-z0-9._=+/-]{1,1024}$"
MODEL_LOCATION_RULE = "a key prefix in the bucket or a path in the file system (e.g. models/Qwen/Qwen2.5-0.5B-Instruct)"
FILE_SYSTEM_ID_PATTERN = r"^fs-[0-9a-f]{8,17}$"
FILE_SYSTEM_ID_RULE = "an FSx file system id (fs- and 8 or 17 hex digits)"
COMMIT_PATTERN = r"^[0-9a-f]{40}$"
COMMIT_RULE = "a full 40-character lowercase hex commit SHA"
MOUNT_PATH_PATTERN = r"^/[A-Za-z0-9._/-]{1,255}$"
MOUNT_PATH_RULE = "an absolute path in the worker container (e.g. /opt/ml/model)"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
ENV_NAME_RULE = "an environment variable name: letters, digits or '_', not starting with a digit"
REDIS_URL_PATTERN = r"^rediss?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[0-9]{0,2})?$"
REDIS_URL_RULE = "a Redis URL redis://host:port or rediss://host:port (e.g. redis://cache.internal:6379)"
HEADER_PATTERN = r"^[A-Za-z0-9-]{1,64}$"
HEADER_RULE = "an HTTP header name: letters, digits or '-' (e.g. x-session-id)"
JUMPSTART_MODEL_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
JUMPSTART_MODEL_RULE = "a JumpStart model id: letters, digits and single '-' (e.g. deepseek-llm-r1-distill-qwen-1-5b)"
MAX_REPLICAS = 64
TOKEN_ENV_NAMES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_TOKEN")


class ModelSourceType(StrEnum):
    """Where the operator's workers read the model."""

    S3 = "s3"
    FSX = "fsx"
    HUGGINGFACE = "huggingface"


class ModelSource(ApiModel):
    """The model's source (``modelSourceConfig``): an S3 prefix, an FSx path or a Hugging Face model."""

    type: ModelSourceType = Field(description="s3, fsx or huggingface.", examples=["s3"])
    bucket: str | None = Field(
        default=None,
        pattern=BUCKET_PATTERN,
        description="s3: the bucket (default: the cluster's bucket, where POST /models writes).",
        json_schema_extra=pattern_rule(BUCKET_RULE),
    )
    region: str | None = Field(
        default=None,
        pattern=REGION_PATTERN,
        description="s3: the bucket's Region (default: the cluster's).",
        examples=["us-west-2"],
        json_schema_extra=pattern_rule(REGION_RULE),
    )
    model_location: str | None = Field(
        default=None,
        pattern=MODEL_LOCATION_PATTERN,
        description="s3/fsx: the model's prefix or path (GET /clusters/{clusterTag}/models shows models/<id>).",
        examples=["models/Qwen/Qwen2.5-0.5B-Instruct"],
        json_schema_extra=pattern_rule(MODEL_LOCATION_RULE),
    )
    file_system_id: str | None = Field(
        default=None,
        pattern=FILE_SYSTEM_ID_PATTERN,
        description="fsx: the FSx for Lustre file system.",
        examples=["fs-0123456789abcdef0"],
        json_schema_extra=pattern_rule(FILE_SYSTEM_ID_RULE),
    )
    model_id: str | None = Field(
        default=None,
        pattern=HF_MODEL_ID_PATTERN,
        max_length=200,
        description="huggingface: the model id (org/name).",
        examples=["Qwen/Qwen2.5-0.5B-Instruct"],
        json_schema_extra=pattern_rule(HF_MODEL_ID_RULE),
    )
    commit_sha: str | None = Field(
        default=None,
        pattern=COMMIT_PATTERN,
        description="huggingface: the commit (default: main).",
        json_schema_extra=pattern_rule(COMMIT_RULE),
    )
    hf_token_secret: SecretKeyRef | None = Field(
        default=None, description="huggingface, gated models: the Secret holding the token (never the token)."
    )

    @model_validator(mode="after")
    def _fields_of_type(self) -> ModelSource:
        needs = {
            ModelSourceType.S3: ("model_location",),
            ModelSourceType.FSX: ("file_system_id", "model_location"),
            ModelSourceType.HUGGINGFACE: ("model_id",),
        }[self.type]
        allowed = {
            ModelSourceType.S3: {"bucket", "region", "model_location"},
            ModelSourceType.FSX: {"file_system_id", "model_location"},
            ModelSourceType.HUGGINGFACE: {"model_id", "commit_sha", "hf_token_secret"},
        }[self.type]
        missing = [n for n in needs if getattr(self, n) is None]
        if missing:
            raise ValueError(f"type {self.type.value} needs {', '.join(_camel(n) for n in missing)}")
        extra = sorted(n for n in self.model_fields_set - {"type"} if n not in allowed)
        if extra:
            raise ValueError(
                f"{', '.join(_camel(n) for n in extra)} do not apply to type {self.type.value} (it takes "
                f"{', '.join(sorted(_camel(n) for n in allowed))})"
            )
        return self


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(r.title() for r in rest)


class WorkerResources(ApiModel):
    """Requests (= limits) of each worker pod."""

    gpus: int = Field(strict=True, default=1, ge=0, le=16, description="nvidia.com/gpu per worker.")
    cpu: int = Field(strict=True, default=4, ge=1, le=192, description="vCPUs per worker.")
    memory_gib: int = Field(strict=True, default=16, ge=1, le=2048, description="Memory per worker, GiB.")


class EnvVar(ApiModel):
    """A plain environment variable of the worker (a token only through ``modelSource.hfTokenSecret``)."""

    name: str = Field(pattern=ENV_NAME_PATTERN, description="Name.", json_schema_extra=pattern_rule(ENV_NAME_RULE))
    value: str = Field(max_length=4096, description="Value.")

    @field_validator("name")
    @classmethod
    def _no_token(cls, name: str) -> str:
        if name.upper() in TOKEN_ENV_NAMES:
            raise ValueError(f"{name} is a token: pass it only as modelSource.hfTokenSecret (a Secret reference)")
        return name


class Worker(ApiModel):
    """The worker container (``spec.worker``)."""

    image: str = Field(
        pattern=IMAGE_PATTERN,
        max_length=512,
        description="Inference server image with a pinned tag or digest.",
        examples=["763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124"],
        json_schema_extra=pattern_rule(IMAGE_RULE),
    )
    port: int = Field(strict=True, default=8080, ge=1, le=65535, description="Port the server listens on.")
    volume_mount_path: str = Field(
        default="/opt/ml/model",
        pattern=MOUNT_PATH_PATTERN,
        description="Where the model appears in the container.",
        json_schema_extra=pattern_rule(MOUNT_PATH_RULE),
    )
    resources: WorkerResources = Field(default_factory=WorkerResources, description="Requests and limits.")
    environment: list[EnvVar] = Field(default_factory=list, max_length=64, description="Plain environment variables.")

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        return refuse_unpinned(image)


class L2CacheBackend(StrEnum):
    """The L2 KV cache backend."""

    REDIS = "redis"
    TIERED_STORAGE = "tieredstorage"


class KvCacheSpec(ApiModel):
    """Managed tiered KV cache (``spec.kvCacheSpec``): L1 in CPU memory, L2 in Redis or HyperPod tiered storage."""

    enable_l1_cache: bool = Field(default=True, description="L1: CPU memory of the worker.")
    enable_l2_cache: bool = Field(default=False, description="L2: shared across workers.")
    l2_cache_backend: L2CacheBackend | None = Field(
        default=None, description="redis (needs l2CacheUrl) or tieredstorage (needs tieredCheckpointing on)."
    )
    l2_cache_url: str | None = Field(
        default=None,
        pattern=REDIS_URL_PATTERN,
        description="redis: the cluster's URL.",
        json_schema_extra=pattern_rule(REDIS_URL_RULE),
    )

    @model_validator(mode="after")
    def _backend(self) -> KvCacheSpec:
        if self.enable_l2_cache and self.l2_cache_backend is None:
            raise ValueError("enableL2Cache needs l2CacheBackend (redis or tieredstorage)")
        if self.l2_cache_backend is L2CacheBackend.REDIS and not self.l2_cache_url:
            raise ValueError("l2CacheBackend redis needs l2CacheUrl (e.g. redis://cache.internal:6379)")
        if self.l2_cache_url and self.l2_cache_backend is not L2CacheBackend.REDIS:
            raise ValueError("l2CacheUrl applies to l2CacheBackend redis only")
        return self


class RoutingStrategy(StrEnum):
    """Intelligent routing strategies of the operator's router."""

    PREFIX_AWARE = "prefixaware"
    KV_AWARE = "kvaware"
    SESSION = "session"
    ROUND_ROBIN = "roundrobin"


class IntelligentRoutingSpec(ApiModel):
    """Intelligent routing (``spec.intelligentRoutingSpec``)."""

    strategy: RoutingStrategy = Field(default=RoutingStrategy.PREFIX_AWARE, description="Routing strategy.")
    session_key: str | None = Field(
        default=None,
        pattern=HEADER_PATTERN,
        description="session: the request header carrying the session id (recorded on the resource, annotation "
        "instantstart.io/session-key).",
        examples=["x-session-id"],
        json_schema_extra=pattern_rule(HEADER_RULE),
    )

    @model_validator(mode="after")
    def _session(self) -> IntelligentRoutingSpec:
        if self.strategy is RoutingStrategy.SESSION and not self.session_key:
            raise ValueError("strategy session needs sessionKey (the header carrying the session id)")
        if self.session_key and self.strategy is not RoutingStrategy.SESSION:
            raise ValueError("sessionKey applies to strategy session only")
        return self


class CloudWatchTrigger(ApiModel):
    """Scale on a CloudWatch metric."""

    namespace: str = Field(min_length=1, max_length=255, description="Metric namespace.", examples=["AWS/SageMaker"])
    metric_name: str = Field(min_length=1, max_length=255, description="Metric.", examples=["Invocations"])
    target_value: float = Field(gt=0, description="Target value per worker.", examples=[10])
    statistic: Literal["Average", "Sum", "Maximum", "Minimum", "SampleCount"] = Field(
        default="Average", description="Statistic of the metric (metricStat)."
    )
    dimensions: dict[str, str] = Field(default_factory=dict, max_length=10, description="Metric dimensions.")


class EndpointAutoscaling(ApiModel):
    """Worker autoscaling (``spec.autoScalingSpec``, KEDA through the operator)."""

    min_replicas: int = Field(strict=True, default=1, ge=0, le=MAX_REPLICAS, description="Fewest workers.")
    max_replicas: int = Field(strict=True, ge=1, le=MAX_REPLICAS, description="Most workers.", examples=[4])
    cloud_watch: CloudWatchTrigger | None = Field(default=None, description="The trigger (none: the operator's).")

    @model_validator(mode="after")
    def _bounds(self) -> EndpointAutoscaling:
        if self.min_replicas > self.max_replicas:
            raise ValueError("minReplicas must be at most maxReplicas")
        return self


class TlsSpec(ApiModel):
    """Where the operator writes the endpoint's generated TLS certificate (``spec.tlsConfig``)."""

    certificate_output_s3_uri: str = Field(
        pattern=r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9._/-]*)?$",
        description="An s3:// URI in the inferenceOperator feature's TLS bucket (default: s3://<that bucket>/<name>/).",
        json_schema_extra=pattern_rule("s3://<the inferenceOperator feature's TLS bucket>/<prefix>"),
    )


class JumpStartSpec(ApiModel):
    """A SageMaker JumpStart model (a ``JumpStartModel`` resource instead of an InferenceEndpointConfig)."""

    model_id: str = Field(
        pattern=JUMPSTART_MODEL_PATTERN,
        description="JumpStart model id.",
        examples=["deepseek-llm-r1-distill-qwen-1-5b"],
        json_schema_extra=pattern_rule(JUMPSTART_MODEL_RULE),
    )
    model_version: str | None = Field(
        default=None,
        pattern=r"^\d{1,4}\.\d{1,4}\.\d{1,4}$",
        description="The model's version x.y.z (default: the newest).",
        examples=["1.0.0"],
        json_schema_extra=pattern_rule("a version x.y.z of 1-4 digits each (e.g. 1.0.0)"),
    )
    accept_eula: bool = Field(default=False, description="Accept the model's EULA (some models need it).")


class CreateInferenceEndpointRequest(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/inference/endpoints``: a managed endpoint of the inference operator."""

    name: str = Field(
        pattern=ENDPOINT_NAME_PATTERN,
        max_length=ENDPOINT_NAME_MAX,
        description="Name of the resource (namespace default); the SageMaker endpoint is instantstart-<tag>-<name>.",
        examples=["qwen-managed"],
        json_schema_extra=pattern_rule(ENDPOINT_NAME_RULE),
    )
    instance_type: str = Field(
        pattern=INSTANCE_TYPE_PATTERN,
        description="Instance type of the workers: one of the cluster's instance groups.",
        examples=["ml.g6.4xlarge"],
        json_schema_extra=pattern_rule(INSTANCE_TYPE_RULE),
    )
    replicas: int = Field(strict=True, default=1, ge=0, le=MAX_REPLICAS, description="Workers.")
    model_source: ModelSource | None = Field(default=None, description="The model (with worker; not with jumpStart).")
    worker: Worker | None = Field(default=None, description="The worker container (with modelSource).")
    jump_start: JumpStartSpec | None = Field(default=None, description="A JumpStart model instead of modelSource.")
    kv_cache_spec: KvCacheSpec | None = Field(default=None, description="Managed tiered KV cache.")
    intelligent_routing_spec: IntelligentRoutingSpec | None = Field(default=None, description="Intelligent routing.")
    tls: TlsSpec | None = Field(default=None, description="TLS certificate output (default: the operator's bucket).")
    autoscaling: EndpointAutoscaling | None = Field(default=None, description="Worker autoscaling.")
    max_deploy_time_seconds: int | None = Field(
        strict=True, default=None, ge=60, le=86400, description="Deployment deadline (operator default 3600)."
    )

    @model_validator(mode="after")
    def _one_model(self) -> CreateInferenceEndpointRequest:
        if self.jump_start is not None:
            if self.model_source is not None or self.worker is not None:
                raise ValueError("jumpStart excludes modelSource and worker")
        elif self.model_source is None or self.worker is None:
            raise ValueError("modelSource and worker are required (or jumpStart)")
        return self


class InferenceEndpointAccepted(ApiModel):
    """Body of the 202 of ``POST``/``DELETE .../inference/endpoints``."""

    name: str = Field(description="Resource name.", examples=["qwen-managed"])
    namespace: str = Field(description="Namespace.", examples=["default"])
    kind: str = Field(description="InferenceEndpointConfig or JumpStartModel.", examples=["InferenceEndpointConfig"])
    api_version: str = Field(
        description="The served API version used (read from the CRD).",
        examples=["inference.sagemaker.aws.amazon.com/v1"],
    )
    endpoint_name: str = Field(description="SageMaker endpoint name.", examples=["instantstart-demo-qwen-managed"])
    operation: OperationView = Field(description="The operation to poll (GET /operations/{operationId}).")


class SageMakerEndpointView(ApiModel):
    """The SageMaker side the operator registered."""

    name: str = Field(description="Endpoint name.", examples=["instantstart-demo-qwen-managed"])
    state: str | None = Field(default=None, description="Creating, InService, Deleting, Failed (operator status).")
    endpoint_arn: str | None = Field(
        default=None,
        description="Endpoint ARN.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:endpoint/instantstart-demo-qwen-managed"],
    )
    config_arn: str | None = Field(
        default=None,
        description="Endpoint config ARN.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:endpoint-config/instantstart-demo-qwen-managed-1a2b3c4d"],
    )
    model_arn: str | None = Field(
        default=None,
        description="Model ARN.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:model/qwen-managed-1a2b3c4d"],
    )
    status: str | None = Field(
        default=None, description="EndpointStatus from SageMaker DescribeEndpoint (null: none).", examples=["InService"]
    )


class PodEvent(ApiModel):
    """A Kubernetes event of a worker pod."""

    pod: str = Field(description="Pod name.")
    type: str | None = Field(default=None, description="Normal or Warning.", examples=["Warning"])
    reason: str | None = Field(default=None, description="Reason.", examples=["Failed"])
    message: str | None = Field(default=None, description="Message, verbatim.")
    count: int | None = Field(default=None, description="How often it happened.")
    last_timestamp: str | None = Field(default=None, description="Last seen (ISO-8601).")


class InferenceEndpointSummary(ApiModel):
    """One endpoint of ``GET .../inference/endpoints``."""

    name: str = Field(description="Name.", examples=["qwen-managed"])
    namespace: str = Field(description="Namespace.", examples=["default"])
    kind: str = Field(description="InferenceEndpointConfig or JumpStartModel.")
    instance_type: str | None = Field(default=None, description="Instance type.", examples=["ml.g6.4xlarge"])
    state: str | None = Field(default=None, description="Operator state.", examples=["DeploymentComplete"])
    replicas: int | None = Field(default=None, description="spec.replicas.")
    ready_replicas: int | None = Field(default=None, description="status.replicas (ready pods).")
    endpoint_name: str | None = Field(
        default=None, description="SageMaker endpoint name.", examples=["instantstart-demo-qwen-managed"]
    )


class InferenceEndpointList(ApiModel):
    """Body of ``GET .../inference/endpoints``."""

    endpoints: list[InferenceEndpointSummary] = Field(description="Endpoints of the cluster, by name.")


class InferenceEndpointView(InferenceEndpointSummary):
    """Body of ``GET .../inference/endpoints/{name}``."""

    api_version: str = Field(
        description="The served API version read.", examples=["inference.sagemaker.aws.amazon.com/v1"]
    )
    model_name: str | None = Field(
        default=None, description="spec.modelName (or the JumpStart model id).", examples=["qwen-managed"]
    )
    message: str | None = Field(default=None, description="The operator's message for the state, verbatim.")
    conditions: list[dict[str, Any]] = Field(description="The operator's conditions (type, status, reason, message).")
    sagemaker: SageMakerEndpointView | None = Field(default=None, description="The SageMaker endpoint.")
    session_key: str | None = Field(default=None, description="Session routing's header, if any.")
    pods: list[str] = Field(description="The worker pods.")
    events: list[PodEvent] = Field(description="Events of the worker pods, newest last (why it is stuck).")
    pod_reason: str | None = Field(
        default=None,
        description="The first worker pod's problem as Kubernetes reports it, while one has one: the kubelet's "
        "ErrImagePull/ImagePullBackOff/CrashLoopBackOff with its message, or Unschedulable with the scheduler's "
        "message; null otherwise.",
    )


class InvokeEndpointRequest(ApiModel):
    """Body of ``POST .../inference/endpoints/{name}/invoke``: the JSON payload sent to the model."""

    body: dict[str, Any] = Field(
        description=f"The JSON object sent as the InvokeEndpoint body (at most {INVOKE_MAX_BYTES} bytes serialised).",
        examples=[{"prompt": "Hello", "max_tokens": 16}],
    )


class InvokeEndpointView(ApiModel):
    """Body of the 200 of ``POST .../invoke``."""

    endpoint_name: str = Field(description="SageMaker endpoint invoked.", examples=["instantstart-demo-qwen-managed"])
    content_type: str | None = Field(
        default=None, description="ContentType of the answer.", examples=["application/json"]
    )
    invoked_production_variant: str | None = Field(default=None, description="The variant that answered.")
    body: Any = Field(default=None, description="The answer parsed as JSON (null when truncated or not JSON).")
    text: str | None = Field(default=None, description="The answer as text when it is not JSON or was truncated.")
    truncated: bool = Field(description=f"The answer was longer than {INVOKE_MAX_RESPONSE_BYTES} bytes and was cut.")
