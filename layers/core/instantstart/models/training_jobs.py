"""Training job models: one request model per recipe (discriminated by ``recipe``); the job views are in
:mod:`.training_job_views` (re-exported).

Routes ``/clusters/{clusterTag}/training-jobs`` (``POST`` list ``GET``) and ``.../training-jobs/{name}`` (``GET``,
``DELETE``, ``/logs``). A request is turned into a custom resource by one builder per recipe
(:mod:`instantstart.training.builders`): ``pytorch`` and ``script`` -> HyperPodPyTorchJob
(``sagemaker.amazonaws.com/v1``, the HyperPod training operator), ``llamafactory`` and ``msswift`` ->
HyperPodPyTorchJob launching the framework's trainer module, ``verl`` -> KubeRay ``RayJob`` (``ray.io/v1``).

No user string ever reaches a shell line: commands are argv lists built from typed fields; the only shell-like
string, a RayJob's ``entrypoint``, is built from typed fields with every element quoted (``shlex.quote``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from instantstart.models.cluster import INSTANCE_TYPE_PATTERN, INSTANCE_TYPE_RULE
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule
from instantstart.models.training_job_views import (  # re-exported: the models' one import path
    JobCondition as JobCondition,
)
from instantstart.models.training_job_views import (
    JobPod as JobPod,
)
from instantstart.models.training_job_views import (
    TrainingJobAccepted as TrainingJobAccepted,
)
from instantstart.models.training_job_views import (
    TrainingJobList as TrainingJobList,
)
from instantstart.models.training_job_views import (
    TrainingJobLogs as TrainingJobLogs,
)
from instantstart.models.training_job_views import (
    TrainingJobStatus as TrainingJobStatus,
)
from instantstart.models.training_job_views import (
    TrainingJobSummary as TrainingJobSummary,
)
from instantstart.models.training_job_views import (
    TrainingJobView as TrainingJobView,
)

TRAINING_OPERATOR_FEATURE = "trainingOperator"
"""The feature key (``PATCH /clusters/{clusterTag}/features``) that installs the HyperPod training operator."""
TRAINING_OPERATOR_ADDON = "amazon-sagemaker-hyperpod-training-operator"
"""The EKS add-on of the HyperPod training operator (serves ``HyperPodPyTorchJob``)."""
KUBERAY_FEATURE = "kubeRay"
"""The feature key that installs the KubeRay operator (serves ``RayJob``, needed by the ``verl`` recipe)."""

JOB_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
JOB_NAME_MAX = 52
"""HyperPodPyTorchJob (``pytorch``, ``script``, ``llamafactory``, ``msswift``): the HyperPod training operator names
pods ``<job>-pod-<rank>`` and labels them with the job's name; 52 leaves room for the suffix within a 63-character
label (the HyperPod CLI's own limit is 63). ``verl`` (KubeRay's RayJob) has its own rule: :data:`RAY_JOB_NAME_RULE`."""
JOB_NAME_RULE = (
    f"a DNS-1123 label of 1-{JOB_NAME_MAX} lowercase letters, digits or hyphens, starting and ending with a letter "
    "or digit (e.g. llama-sft-1)"
)
RAY_JOB_NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
RAY_JOB_NAME_MAX = 47
"""KubeRay's ``MaxRayJobNameLength`` (``ValidateRayJobMetadata``): the RayCluster name limit (53) minus the 6
characters KubeRay appends to name the job's RayCluster; the name must also be a DNS-1035 label."""
RAY_JOB_NAME_RULE = (
    f"a DNS-1035 label of 1-{RAY_JOB_NAME_MAX} lowercase letters, digits or hyphens, starting with a letter and ending "
    "with a letter or digit (KubeRay refuses a longer RayJob name: its RayCluster gets a 6-character suffix; e.g. "
    "verl-grpo-1)"
)
NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
NAMESPACE_RULE = "a Kubernetes namespace: 1-63 lowercase letters, digits or hyphens (e.g. default)"

IMAGE_PATTERN = r"^[a-z0-9][A-Za-z0-9._/:@-]*$"
IMAGE_RULE = (
    "a container image with a pinned tag or digest, e.g. 763104351884.dkr.ecr.us-west-2.amazonaws.com/"
    "pytorch-training:2.5.1-gpu-py311 or repo@sha256:<digest>; never untagged and never :latest"
)
STORAGE_PATH_PATTERN = r"^/(s3|fsx)(/[A-Za-z0-9._=+-]+)*/?$"
STORAGE_PATH_RULE = "a path under the mounted storage: /s3/... (the cluster's bucket) or /fsx/... (the fsx feature)"
FILE_PATH_PATTERN = r"^/[A-Za-z0-9._/=+-]+$"
FILE_PATH_RULE = "an absolute path in the mounted storage (/s3/..., /fsx/...) or in the image, e.g. /s3/code/train.py"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]*$"
MODEL_RULE = "a Hugging Face id (e.g. Qwen/Qwen2.5-0.5B-Instruct) or a path such as /s3/models/qwen"
DATASET_PATTERN = r"^[A-Za-z0-9/][A-Za-z0-9._/,-]*$"
DATASET_RULE = "dataset names or paths, comma-separated: letters, digits, . _ / - (e.g. alpaca,/s3/data/mine.json)"
PRIORITY_CLASS_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
PRIORITY_CLASS_RULE = (
    "a Kueue workload priority class name: 1-63 lowercase letters, digits or hyphens (e.g. training-priority)"
)
LOG_PATTERN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$"
LOG_PATTERN_NAME_RULE = "1-63 letters, digits, underscores or hyphens, starting with a letter or digit (e.g. JobStart)"
RAY_VERSION_PATTERN = r"^\d+\.\d+\.\d+$"
RAY_VERSION_RULE = "a Ray version major.minor.patch (e.g. 2.43.0)"
POD_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
POD_NAME_MAX = 253
POD_NAME_RULE = "a pod name: lowercase letters, digits, hyphens or dots (names in GET .../training-jobs/{name})"
CONTAINER_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
CONTAINER_NAME_MAX = 63
CONTAINER_NAME_RULE = "a container name: 1-63 lowercase letters, digits or hyphens (e.g. pytorch)"
OVERRIDE_KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.]*$"
TEAM_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
TEAM_RULE = "a task governance team name (its namespace is hyperpod-ns-<team>)"

LIST_DEFAULT_PAGE_SIZE = 50
"""``maxResults`` default of ``GET /clusters/{clusterTag}/training-jobs``."""
LIST_MAX_PAGE_SIZE = 100
LIST_TOKEN_MAX_LENGTH = 2048
LOG_MAX_TAIL_LINES = 100000
"""Most ``tailLines`` of ``GET .../training-jobs/{name}/logs``."""
LOG_MAX_SINCE_SECONDS = 2592000
"""Most ``sinceSeconds`` of ``GET .../training-jobs/{name}/logs`` (30 days)."""

MAX_NODES = 256
MAX_ARGS = 128
MAX_ARG_LENGTH = 4096
LIST_MAX_BYTES = 64 * 1024
"""Most UTF-8 bytes of ``command``, of ``args`` and of ``env`` (names and values), each in all (65,536): with every
list full a job still fits its operation record (``store.codec``: 307,200 bytes), where 128 arguments of 4096
characters alone would not."""


def _within_bytes(values: list[str] | dict[str, str]) -> list[str] | dict[str, str]:
    items = [*values.keys(), *values.values()] if isinstance(values, dict) else values
    size = sum(len(v.encode("utf-8")) for v in items)
    if size > LIST_MAX_BYTES:
        raise ValueError(f"at most {LIST_MAX_BYTES} bytes in all (UTF-8) so that the job fits its record; got {size}")
    return values


class RecipeName(StrEnum):
    """The recipes: which builder turns the request into which custom resource."""

    PYTORCH = "pytorch"
    SCRIPT = "script"
    LLAMAFACTORY = "llamafactory"
    MSSWIFT = "msswift"
    VERL = "verl"


class RestartPolicy(ApiModel):
    """``runPolicy.restartPolicy`` of a HyperPodPyTorchJob: how many process-level restarts before a full restart."""

    num_restart_before_full_job_restart: int = Field(
        strict=True,
        default=3,
        ge=0,
        le=100,
        description="Pod restarts within evalPeriodSeconds before the whole job restarts.",
    )
    eval_period_seconds: int = Field(
        strict=True, default=21600, ge=60, le=604800, description="Window (seconds) in which restarts are counted."
    )
    max_full_job_restarts: int = Field(
        strict=True, default=1, ge=0, le=100, description="Full job restarts allowed before the job is Failed."
    )


class LogPattern(ApiModel):
    """One ``runPolicy.logMonitoringConfiguration`` rule: a log line expected (start) or recurring (hang detection)."""

    name: str = Field(
        pattern=LOG_PATTERN_NAME_PATTERN,
        description="Rule name.",
        examples=["JobStart"],
        json_schema_extra=pattern_rule(LOG_PATTERN_NAME_RULE),
    )
    log_pattern: str = Field(
        min_length=1, max_length=512, description="Regular expression matched on each log line.", examples=[".*step.*"]
    )
    expected_start_cut_off_in_seconds: int | None = Field(
        strict=True,
        default=None,
        ge=1,
        le=86400,
        description="The first match is expected within this many seconds of start.",
    )
    expected_recurring_frequency_in_seconds: int | None = Field(
        strict=True,
        default=None,
        ge=1,
        le=86400,
        description="A match is expected at least this often (hang detection).",
    )


class RunPolicy(ApiModel):
    """Recovery budget of the job (HyperPodPyTorchJob ``runPolicy``); every field has a default.

    ``cleanPodPolicy`` takes the HyperPod training operator's values ``All``, ``OnlyComplete`` or ``None``. Sources:
    the operator's job spec in the SageMaker HyperPod documentation
    (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-usage.html; its example sets ``All``)
    and the SageMaker HyperPod CLI's model of the ``HyperPodPyTorchJob`` CRD (``runPolicy.cleanPodPolicy``, a
    string defaulting to ``All``; the model does not list the enum). Kubeflow's ``Running`` belongs to the Kubeflow
    training operator's ``PyTorchJob``, which no HyperPod source names for this CRD: the harsher reading is that the
    operator's schema refuses it at the server-side dry run, so the API refuses it first (422 listing the three)."""

    job_max_retry_count: int = Field(
        strict=True, default=3, ge=0, le=100, description="Job retries before it is Failed.", examples=[3]
    )
    restart_policy: RestartPolicy = Field(default_factory=RestartPolicy, description="Process-level restarts.")
    clean_pod_policy: Literal["All", "OnlyComplete", "None"] = Field(
        default="None",
        description="Which pods to delete when the job ends: All, OnlyComplete (the pods that completed) or None "
        "(keeps them to read their logs).",
    )
    ttl_seconds_after_finished: int | None = Field(
        strict=True,
        default=None,
        ge=0,
        le=2592000,
        description="Delete the finished job after this many seconds (null: keep).",
    )
    log_monitoring: list[LogPattern] = Field(
        default_factory=list, max_length=10, description="Log-pattern monitoring rules (empty: none)."
    )


def refuse_unpinned(image: str) -> str:
    """``image`` unchanged when it names a version tag or a digest (the one image rule of training jobs and of
    inference deployments and endpoints).

    Raises:
        ValueError: no tag, or the tag ``latest`` (pydantic turns it into the field's 422).
    """
    last = image.rsplit("/", 1)[-1]
    if "@sha256:" in image:
        return image
    if ":" not in last:
        raise ValueError(f"image {image!r} has no tag: pin a version tag or a digest (never latest)")
    if last.rsplit(":", 1)[1] == "latest":
        raise ValueError(f"image {image!r} uses the tag latest: pin a version tag or a digest")
    return image


Image = Annotated[
    str,
    Field(
        pattern=IMAGE_PATTERN,
        max_length=512,
        description="Container image with a pinned tag or digest (untagged and :latest are refused).",
        json_schema_extra=pattern_rule(IMAGE_RULE),
    ),
]
Arg = Annotated[str, Field(max_length=MAX_ARG_LENGTH)]


class _JobBase(ApiModel):
    """Fields every recipe shares."""

    name: str = Field(
        pattern=JOB_NAME_PATTERN,
        max_length=JOB_NAME_MAX,
        description="Job name (the custom resource's name).",
        examples=["llama-sft-1"],
        json_schema_extra=pattern_rule(JOB_NAME_RULE),
    )
    namespace: str | None = Field(
        default=None,
        pattern=NAMESPACE_PATTERN,
        max_length=63,
        description="Namespace of the job (created when missing). Default: hyperpod-ns-<team> with a team, else "
        "default. The storage claims (s3-claim, fsx-claim) live in default: other namespaces run without them.",
        json_schema_extra=pattern_rule(NAMESPACE_RULE),
    )
    instance_type: str = Field(
        pattern=INSTANCE_TYPE_PATTERN,
        description="HyperPod instance type the pods run on (node affinity on node.kubernetes.io/instance-type).",
        examples=["ml.g5.8xlarge"],
        json_schema_extra=pattern_rule(INSTANCE_TYPE_RULE),
    )
    nodes: int = Field(strict=True, default=1, ge=1, le=MAX_NODES, description="Nodes (one pod per node).")
    image: Image
    env: dict[Annotated[str, Field(pattern=ENV_NAME_PATTERN, max_length=128)], Arg] = Field(
        default_factory=dict,
        max_length=64,
        description=f"Environment variables of the training container (names and values: at most {LIST_MAX_BYTES} "
        "bytes in all).",
    )
    run_policy: RunPolicy = Field(default_factory=RunPolicy, description="Recovery budget (defaults apply).")
    team: str | None = Field(
        default=None,
        pattern=TEAM_PATTERN,
        max_length=38,
        description="Task governance team: the job is queued in Kueue's hyperpod-ns-<team>-localqueue (needs the "
        "taskGovernance feature).",
        json_schema_extra=pattern_rule(TEAM_RULE),
    )
    priority_class: str | None = Field(
        default=None,
        pattern=PRIORITY_CLASS_PATTERN,
        max_length=63,
        description="Kueue workload priority class (a priority class of the scheduler config); needs team.",
        json_schema_extra=pattern_rule(PRIORITY_CLASS_RULE),
    )

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        return refuse_unpinned(image)

    @field_validator("env")
    @classmethod
    def _env_within_bytes(cls, env: dict[str, str]) -> dict[str, str]:
        return _within_bytes(env)  # type: ignore[return-value]

    @model_validator(mode="after")
    def _priority_needs_team(self) -> _JobBase:
        if self.priority_class and not self.team:
            raise ValueError("priorityClass needs team (Kueue priorities apply to a team's queue)")
        return self

    @property
    def job_namespace(self) -> str:
        """The namespace the job runs in."""
        if self.namespace:
            return self.namespace
        return f"hyperpod-ns-{self.team}" if self.team else "default"


class _TorchJob(_JobBase):
    nproc_per_node: int | None = Field(
        strict=True,
        default=None,
        ge=1,
        le=64,
        description="Processes (and GPUs) per pod. Default: the GPUs of the instance type (DescribeInstanceTypes); "
        "never inferred from tensor-parallel flags.",
    )


class PyTorchJobRequest(_TorchJob):
    """``pytorch``: torchrun-style launch (HyperPod's ``hyperpodrun``) of a script with arguments."""

    recipe: Literal["pytorch"] = Field(description="Recipe.")
    script: str = Field(
        pattern=FILE_PATH_PATTERN,
        max_length=1024,
        description="The training script.",
        examples=["/s3/code/train.py"],
        json_schema_extra=pattern_rule(FILE_PATH_RULE),
    )
    args: list[Arg] = Field(
        default_factory=list,
        max_length=MAX_ARGS,
        description=f"Arguments of the script (argv; at most {LIST_MAX_BYTES} bytes in all).",
    )

    @field_validator("args")
    @classmethod
    def _args_within_bytes(cls, args: list[str]) -> list[str]:
        return _within_bytes(args)  # type: ignore[return-value]


class ScriptJobRequest(_TorchJob):
    """``script``: a generic HyperPodPyTorchJob running the user's own command (argv, no shell)."""

    recipe: Literal["script"] = Field(description="Recipe.")
    command: list[Arg] = Field(
        min_length=1,
        max_length=MAX_ARGS,
        description=f"argv of the container, no shell (at most {LIST_MAX_BYTES} bytes in all).",
    )
    args: list[Arg] = Field(
        default_factory=list,
        max_length=MAX_ARGS,
        description=f"Further arguments (argv; at most {LIST_MAX_BYTES} bytes in all).",
    )

    @field_validator("command", "args")
    @classmethod
    def _argv_within_bytes(cls, argv: list[str]) -> list[str]:
        return _within_bytes(argv)  # type: ignore[return-value]


class _FineTuneJob(_TorchJob):
    config_path: str | None = Field(
        default=None,
        pattern=STORAGE_PATH_PATTERN,
        max_length=1024,
        description="YAML config file in the mounted storage (exclusive with config).",
        examples=["/s3/configs/qwen_lora_sft.yaml"],
        json_schema_extra=pattern_rule(STORAGE_PATH_RULE),
    )
    config: dict[str, Any] | None = Field(
        default=None, description="Inline config (exclusive with configPath); stored in a ConfigMap and mounted."
    )
    model: str = Field(
        pattern=MODEL_PATTERN,
        max_length=256,
        description="Model to fine-tune.",
        examples=["Qwen/Qwen2.5-0.5B-Instruct"],
        json_schema_extra=pattern_rule(MODEL_RULE),
    )
    dataset: str = Field(
        pattern=DATASET_PATTERN,
        max_length=512,
        description="Dataset name(s), comma-separated.",
        examples=["alpaca"],
        json_schema_extra=pattern_rule(DATASET_RULE),
    )
    output_path: str = Field(
        pattern=STORAGE_PATH_PATTERN,
        max_length=1024,
        description="Where checkpoints are written.",
        examples=["/s3/outputs/qwen-sft"],
        json_schema_extra=pattern_rule(STORAGE_PATH_RULE),
    )

    @model_validator(mode="after")
    def _one_config(self) -> _FineTuneJob:
        if self.config_path is not None and self.config is not None:
            raise ValueError("give configPath or config, not both")
        return self


class LlamaFactoryJobRequest(_FineTuneJob):
    """``llamafactory``: LLaMA-Factory's trainer (``llamafactory.launcher``) with a YAML config plus typed overrides."""

    recipe: Literal["llamafactory"] = Field(description="Recipe.")


class MsSwiftJobRequest(_FineTuneJob):
    """``msswift``: ms-swift's ``sft`` (``swift.cli.sft``) with a config file plus typed overrides."""

    recipe: Literal["msswift"] = Field(description="Recipe.")


class VerlJobRequest(_JobBase):
    """``verl``: a KubeRay RayJob (head + workers, one pod per node) running ``verl.trainer.main_ppo``."""

    recipe: Literal["verl"] = Field(description="Recipe.")
    name: str = Field(
        pattern=RAY_JOB_NAME_PATTERN,
        max_length=RAY_JOB_NAME_MAX,
        description="Job name (the RayJob's name; KubeRay's rule).",
        examples=["verl-grpo-1"],
        json_schema_extra=pattern_rule(RAY_JOB_NAME_RULE),
    )
    algorithm: Literal["grpo", "gae"] = Field(default="grpo", description="algorithm.adv_estimator.")
    model: str = Field(
        pattern=MODEL_PATTERN, max_length=256, description="Actor model.", json_schema_extra=pattern_rule(MODEL_RULE)
    )
    train_files: str = Field(
        pattern=STORAGE_PATH_PATTERN,
        max_length=1024,
        description="Training parquet file.",
        examples=["/s3/data/gsm8k/train.parquet"],
        json_schema_extra=pattern_rule(STORAGE_PATH_RULE),
    )
    val_files: str = Field(
        pattern=STORAGE_PATH_PATTERN,
        max_length=1024,
        description="Validation parquet file.",
        examples=["/s3/data/gsm8k/test.parquet"],
        json_schema_extra=pattern_rule(STORAGE_PATH_RULE),
    )
    output_path: str = Field(
        pattern=STORAGE_PATH_PATTERN,
        max_length=1024,
        description="trainer.default_local_dir.",
        examples=["/s3/outputs/verl-grpo"],
        json_schema_extra=pattern_rule(STORAGE_PATH_RULE),
    )
    total_epochs: int = Field(strict=True, default=1, ge=1, le=1000, description="trainer.total_epochs.")
    overrides: dict[Annotated[str, Field(pattern=OVERRIDE_KEY_PATTERN, max_length=128)], str | int | float | bool] = (
        Field(default_factory=dict, max_length=64, description="Further Hydra overrides key=value (quoted).")
    )
    ray_version: str = Field(
        default="2.43.0",
        pattern=RAY_VERSION_PATTERN,
        description="rayVersion of the cluster.",
        examples=["2.43.0"],
        json_schema_extra=pattern_rule(RAY_VERSION_RULE),
    )
    shutdown_after_job_finishes: bool = Field(default=True, description="Delete the Ray cluster when the job ends.")
    ttl_seconds_after_finished: int = Field(
        strict=True, default=3600, ge=0, le=2592000, description="Keep the finished RayJob this long."
    )


CreateTrainingJobRequest = Annotated[
    PyTorchJobRequest | ScriptJobRequest | LlamaFactoryJobRequest | MsSwiftJobRequest | VerlJobRequest,
    Field(discriminator="recipe"),
]
"""Body of ``POST /clusters/{clusterTag}/training-jobs``: one shape per ``recipe``."""

TrainingJobRequest = PyTorchJobRequest | ScriptJobRequest | LlamaFactoryJobRequest | MsSwiftJobRequest | VerlJobRequest
