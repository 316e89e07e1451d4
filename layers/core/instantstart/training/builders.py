"""One builder per recipe: a typed request and the facts of the cluster -> the custom resource to apply (pure).

``pytorch``, ``script``, ``llamafactory``, ``msswift`` -> ``HyperPodPyTorchJob`` (``sagemaker.amazonaws.com/v1``,
served by the HyperPod training operator; spec as in
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-usage.html: ``nprocPerNode``,
``replicaSpecs[].template``, ``runPolicy`` with ``jobMaxRetryCount``, ``restartPolicy``, ``cleanPodPolicy``,
``logMonitoringConfiguration``). ``verl`` -> KubeRay ``RayJob`` (``ray.io/v1``).

Every pod: node affinity on ``node.kubernetes.io/instance-type``; ``nvidia.com/gpu`` = the processes per node
(default: the instance type's GPUs from EC2 ``DescribeInstanceTypes``, never inferred from tensor-parallel flags);
``vpc.amazonaws.com/efa`` = the type's EFA interfaces when the pod takes every GPU of the node (EFA devices are not
shared between pods); ``/dev/shm`` a memory ``emptyDir`` of half the node's memory (PyTorch data loaders and NCCL
use shared memory; the default 64 MiB fails multi-GPU jobs); the storage claims present in the job's namespace
mounted at ``/s3`` (``s3-claim``) and ``/fsx`` (``fsx-claim``); with a MLflow connection (``BuildContext.mlflow_env``,
``service_account``) the MLflow environment and the service account whose pod identity may log to it; the annotation
``karpenter.sh/do-not-disrupt: "true"`` (Karpenter never consolidates a node under a training pod). Pod
templates are built with the official client's models (required fields and types checked on construction) and
serialised with its ``ApiClient``.

Commands are argv lists; no user string is put in a shell line. The RayJob ``entrypoint`` (a string KubeRay hands
to a shell) is built from typed fields with each element passed through :func:`shlex.quote`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from instantstart.models.training_jobs import (
    LlamaFactoryJobRequest,
    MsSwiftJobRequest,
    PyTorchJobRequest,
    RecipeName,
    ScriptJobRequest,
    TrainingJobRequest,
    VerlJobRequest,
)

PYTORCH_JOB_API_VERSION = "sagemaker.amazonaws.com/v1"
PYTORCH_JOB_KIND = "HyperPodPyTorchJob"
RAY_JOB_API_VERSION = "ray.io/v1"
RAY_JOB_KIND = "RayJob"
CONTAINER = "pytorch"
REPLICA_SPEC = "pods"
ELASTIC_AGENT_PORT = 8080
"""The port HyperPod's elastic agent (``hyperpodrun``) listens on in each pod."""
S3_CLAIM = "s3-claim"
FSX_CLAIM = "fsx-claim"
CLAIM_MOUNTS = {S3_CLAIM: "/s3", FSX_CLAIM: "/fsx"}
LABEL_JOB = "instantstart/training-job"
LABEL_RECIPE = "instantstart/recipe"
LABEL_MANAGED = "app.kubernetes.io/managed-by"
MANAGED_BY = "instantstart"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
KARPENTER_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
"""Pod annotation (value ``"true"``) that keeps Karpenter from consolidating or expiring the pod's node: a training
pod is never moved voluntarily (a moved rank restarts the whole job)."""
CONFIG_MOUNT = "/etc/instantstart"
CONFIG_FILE = "train.yaml"


@dataclass(frozen=True)
class InstanceFacts:
    """What EC2 ``DescribeInstanceTypes`` says of the instance type (without the ``ml.`` prefix).

    Attributes:
        instance_type: the HyperPod type (``ml.g5.8xlarge``).
        gpus: ``GpuInfo.Gpus[].Count`` summed (0 without GPUs).
        efa: ``NetworkInfo.EfaInfo.MaximumEfaInterfaces`` (0 without EFA).
        memory_mib: ``MemoryInfo.SizeInMiB``.
        vcpus: ``VCpuInfo.DefaultVCpus``.
    """

    instance_type: str
    gpus: int
    efa: int
    memory_mib: int
    vcpus: int


@dataclass(frozen=True)
class BuildContext:
    """The cluster's side of a build.

    Attributes:
        facts: the instance type's facts.
        claims: storage claims present in the job's namespace (``s3-claim``, ``fsx-claim``).
        kueue: add the Kueue queue/priority labels (task governance on and a team given).
        mlflow_env: the MLflow environment of every container (``instantstart.mlflow.service.job_environment``: tracking
            URI, ARN, experiment, job name); empty without a connection. A key the request's ``env`` also sets keeps
            the request's value (the user's explicit choice).
        service_account: the service account every pod runs as (the MLflow connection's, bound to the pod identity
            that may log to it), or None for the namespace's ``default``.
    """

    facts: InstanceFacts
    claims: frozenset[str] = field(default_factory=frozenset)
    kueue: bool = False
    mlflow_env: Mapping[str, str] = field(default_factory=dict)
    service_account: str | None = None


@dataclass(frozen=True)
class BuiltJob:
    """What a builder produced: the job's custom resource and the objects it needs first (a ConfigMap)."""

    job: dict[str, Any]
    extra: tuple[dict[str, Any], ...] = ()

    @property
    def kind(self) -> str:
        """The custom resource's kind."""
        return str(self.job["kind"])


def nproc_per_node(request: TrainingJobRequest, facts: InstanceFacts) -> int:
    """Processes (and GPUs) per pod: the request's ``nprocPerNode``, else the type's GPUs (at least 1)."""
    asked = getattr(request, "nproc_per_node", None)
    return int(asked) if asked else max(facts.gpus, 1)


def _labels(request: TrainingJobRequest, ctx: BuildContext) -> dict[str, str]:
    labels = {LABEL_JOB: request.name, LABEL_RECIPE: request.recipe, LABEL_MANAGED: MANAGED_BY}
    if ctx.kueue and request.team:
        labels[KUEUE_QUEUE] = f"hyperpod-ns-{request.team}-localqueue"
        if request.priority_class:
            labels[KUEUE_PRIORITY] = request.priority_class
    return labels


def _resources(gpus: int, facts: InstanceFacts) -> Any:
    from kubernetes import client as k8s

    amounts: dict[str, str] = {}
    if facts.gpus > 0:
        amounts["nvidia.com/gpu"] = str(gpus)
        if facts.efa > 0 and gpus == facts.gpus:
            amounts["vpc.amazonaws.com/efa"] = str(facts.efa)
    return k8s.V1ResourceRequirements(requests=dict(amounts) or None, limits=dict(amounts) or None)


def shm_size(facts: InstanceFacts) -> str:
    """``/dev/shm`` size limit: half the node's memory, in Mi."""
    return f"{max(facts.memory_mib // 2, 64)}Mi"


def _pod_template(
    request: TrainingJobRequest,
    ctx: BuildContext,
    *,
    labels: dict[str, str],
    command: list[str],
    gpus: int,
    container: str = CONTAINER,
    ports: list[int] | None = None,
    config_map: str | None = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A ``PodTemplateSpec`` (dict) built with the client's models."""
    from kubernetes import client as k8s

    mounts = [k8s.V1VolumeMount(name="shm", mount_path="/dev/shm")]
    volumes = [
        k8s.V1Volume(name="shm", empty_dir=k8s.V1EmptyDirVolumeSource(medium="Memory", size_limit=shm_size(ctx.facts)))
    ]
    for claim in sorted(ctx.claims):
        vol = claim.replace("-claim", "")
        mounts.append(k8s.V1VolumeMount(name=vol, mount_path=CLAIM_MOUNTS[claim]))
        volumes.append(
            k8s.V1Volume(name=vol, persistent_volume_claim=k8s.V1PersistentVolumeClaimVolumeSource(claim_name=claim))
        )
    if config_map:
        mounts.append(k8s.V1VolumeMount(name="config", mount_path=CONFIG_MOUNT, read_only=True))
        volumes.append(k8s.V1Volume(name="config", config_map=k8s.V1ConfigMapVolumeSource(name=config_map)))
    values = {**ctx.mlflow_env, **request.env}
    env = [k8s.V1EnvVar(name=k, value=v) for k, v in sorted(values.items())]
    affinity = k8s.V1Affinity(
        node_affinity=k8s.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=k8s.V1NodeSelector(
                node_selector_terms=[
                    k8s.V1NodeSelectorTerm(
                        match_expressions=[
                            k8s.V1NodeSelectorRequirement(
                                key=INSTANCE_TYPE_LABEL, operator="In", values=[ctx.facts.instance_type]
                            )
                        ]
                    )
                ]
            )
        )
    )
    spec = k8s.V1PodSpec(
        affinity=affinity,
        restart_policy=restart_policy,
        service_account_name=ctx.service_account,
        containers=[
            k8s.V1Container(
                name=container,
                image=request.image,
                image_pull_policy="IfNotPresent",
                command=command,
                env=env or None,
                ports=[k8s.V1ContainerPort(container_port=p) for p in ports] if ports else None,
                resources=_resources(gpus, ctx.facts),
                volume_mounts=mounts,
            )
        ],
        volumes=volumes,
    )
    template = k8s.V1PodTemplateSpec(
        metadata=k8s.V1ObjectMeta(labels=labels, annotations={KARPENTER_DO_NOT_DISRUPT: "true"}), spec=spec
    )
    api: Any = k8s.ApiClient()
    return dict(api.sanitize_for_serialization(template))


def _run_policy(request: TrainingJobRequest) -> dict[str, Any]:
    rp = request.run_policy
    policy: dict[str, Any] = {
        "jobMaxRetryCount": rp.job_max_retry_count,
        "cleanPodPolicy": rp.clean_pod_policy,
        "restartPolicy": {
            "numRestartBeforeFullJobRestart": rp.restart_policy.num_restart_before_full_job_restart,
            "evalPeriodSeconds": rp.restart_policy.eval_period_seconds,
            "maxFullJobRestarts": rp.restart_policy.max_full_job_restarts,
        },
    }
    if rp.ttl_seconds_after_finished is not None:
        policy["ttlSecondsAfterFinished"] = rp.ttl_seconds_after_finished
    if rp.log_monitoring:
        policy["logMonitoringConfiguration"] = [
            {
                k: v
                for k, v in {
                    "name": p.name,
                    "logPattern": p.log_pattern,
                    "expectedStartCutOffInSeconds": p.expected_start_cut_off_in_seconds,
                    "expectedRecurringFrequencyInSeconds": p.expected_recurring_frequency_in_seconds,
                }.items()
                if v is not None
            }
            for p in rp.log_monitoring
        ]
    return policy


def hyperpodrun(nodes: int, nproc: int) -> list[str]:
    """The launcher argv HyperPod's elastic agent needs in place of ``torchrun`` (its own port 8080)."""
    return [
        "hyperpodrun",
        f"--nnodes={nodes}",
        f"--nproc-per-node={nproc}",
        "--server-host=0.0.0.0",
        f"--server-port={ELASTIC_AGENT_PORT}",
        "--tee=3",
        "--log_dir=/tmp/hyperpod",
    ]


def _pytorch_job(
    request: TrainingJobRequest, ctx: BuildContext, command: list[str], *, config_map: str | None = None
) -> dict[str, Any]:
    nproc = nproc_per_node(request, ctx.facts)
    labels = _labels(request, ctx)
    template = _pod_template(
        request, ctx, labels=labels, command=command, gpus=nproc, ports=[ELASTIC_AGENT_PORT], config_map=config_map
    )
    return {
        "apiVersion": PYTORCH_JOB_API_VERSION,
        "kind": PYTORCH_JOB_KIND,
        "metadata": {"name": request.name, "namespace": request.job_namespace, "labels": labels},
        "spec": {
            "nprocPerNode": str(nproc),
            "replicaSpecs": [{"name": REPLICA_SPEC, "replicas": request.nodes, "template": template}],
            "runPolicy": _run_policy(request),
        },
    }


def build_pytorch(request: PyTorchJobRequest, ctx: BuildContext) -> BuiltJob:
    """``pytorch``: ``hyperpodrun`` of ``script`` with ``args`` (argv)."""
    nproc = nproc_per_node(request, ctx.facts)
    command = [*hyperpodrun(request.nodes, nproc), request.script, *request.args]
    return BuiltJob(_pytorch_job(request, ctx, command))


def build_script(request: ScriptJobRequest, ctx: BuildContext) -> BuiltJob:
    """``script``: the user's own argv (``command`` + ``args``), exec'd without a shell."""
    return BuiltJob(_pytorch_job(request, ctx, [*request.command, *request.args]))


def _config_map(request: LlamaFactoryJobRequest | MsSwiftJobRequest) -> dict[str, Any] | None:
    if request.config is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{request.name}-config",
            "namespace": request.job_namespace,
            "labels": {LABEL_JOB: request.name, LABEL_MANAGED: MANAGED_BY},
        },
        # JSON is YAML: the frameworks read it as their YAML config
        "data": {CONFIG_FILE: json.dumps(request.config, indent=2, sort_keys=True)},
    }


def _config_file(request: LlamaFactoryJobRequest | MsSwiftJobRequest) -> str | None:
    if request.config is not None:
        return f"{CONFIG_MOUNT}/{CONFIG_FILE}"
    return request.config_path


def build_llamafactory(request: LlamaFactoryJobRequest, ctx: BuildContext) -> BuiltJob:
    """``llamafactory``: ``hyperpodrun ... -m llamafactory.launcher <config.yaml> key=value ...``.

    LLaMA-Factory reads a YAML file as its first argument and ``key=value`` overrides after it; model, dataset and
    output are such overrides (each one argv element). Without a config file, the overrides alone set them.
    """
    nproc = nproc_per_node(request, ctx.facts)
    config = _config_file(request)
    command = [*hyperpodrun(request.nodes, nproc), "-m", "llamafactory.launcher"]
    if config:
        command.append(config)
    command += [
        f"model_name_or_path={request.model}",
        f"dataset={request.dataset}",
        f"output_dir={request.output_path}",
    ]
    cm = _config_map(request)
    job = _pytorch_job(request, ctx, command, config_map=cm["metadata"]["name"] if cm else None)
    return BuiltJob(job, (cm,) if cm else ())


def build_msswift(request: MsSwiftJobRequest, ctx: BuildContext) -> BuiltJob:
    """``msswift``: ``hyperpodrun ... -m swift.cli.sft [--config <file>] --model M --dataset D --output_dir O``."""
    nproc = nproc_per_node(request, ctx.facts)
    config = _config_file(request)
    command = [*hyperpodrun(request.nodes, nproc), "-m", "swift.cli.sft"]
    if config:
        command += ["--config", config]
    command += ["--model", request.model, "--dataset", request.dataset, "--output_dir", request.output_path]
    cm = _config_map(request)
    job = _pytorch_job(request, ctx, command, config_map=cm["metadata"]["name"] if cm else None)
    return BuiltJob(job, (cm,) if cm else ())


def verl_argv(request: VerlJobRequest, gpus_per_node: int) -> list[str]:
    """The argv of VERL's trainer (Hydra overrides, one element each)."""
    argv = [
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        f"algorithm.adv_estimator={request.algorithm}",
        f"data.train_files={request.train_files}",
        f"data.val_files={request.val_files}",
        f"actor_rollout_ref.model.path={request.model}",
        f"trainer.nnodes={request.nodes}",
        f"trainer.n_gpus_per_node={gpus_per_node}",
        f"trainer.total_epochs={request.total_epochs}",
        f"trainer.default_local_dir={request.output_path}",
    ]
    for key, value in sorted(request.overrides.items()):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        argv.append(f"{key}={text}")
    return argv


def build_verl(request: VerlJobRequest, ctx: BuildContext) -> BuiltJob:
    """``verl``: a RayJob whose Ray cluster is a head pod and ``nodes - 1`` workers, one per node.

    ``entrypoint`` is :func:`verl_argv` joined with every element quoted (KubeRay runs it through a shell).
    """
    gpus = max(ctx.facts.gpus, 1)
    labels = _labels(request, ctx)
    head = _pod_template(request, ctx, labels=labels, command=[], gpus=gpus, container="ray-head")
    worker = _pod_template(request, ctx, labels=labels, command=[], gpus=gpus, container="ray-worker")
    for template in (head, worker):
        template["spec"]["containers"][0].pop("command", None)
    job = {
        "apiVersion": RAY_JOB_API_VERSION,
        "kind": RAY_JOB_KIND,
        "metadata": {"name": request.name, "namespace": request.job_namespace, "labels": labels},
        "spec": {
            "entrypoint": shlex.join(verl_argv(request, gpus)),
            "shutdownAfterJobFinishes": request.shutdown_after_job_finishes,
            "ttlSecondsAfterFinished": request.ttl_seconds_after_finished,
            "rayClusterSpec": {
                "rayVersion": request.ray_version,
                "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"}, "template": head},
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": request.nodes - 1,
                        "minReplicas": request.nodes - 1,
                        "maxReplicas": request.nodes - 1,
                        "rayStartParams": {},
                        "template": worker,
                    }
                ],
            },
        },
    }
    return BuiltJob(job)


BUILDERS: dict[RecipeName, Callable[[Any, BuildContext], BuiltJob]] = {
    RecipeName.PYTORCH: build_pytorch,
    RecipeName.SCRIPT: build_script,
    RecipeName.LLAMAFACTORY: build_llamafactory,
    RecipeName.MSSWIFT: build_msswift,
    RecipeName.VERL: build_verl,
}
"""The builder of each recipe."""


def build(request: TrainingJobRequest, ctx: BuildContext) -> BuiltJob:
    """The custom resource (and the objects it needs first) of ``request`` on a cluster described by ``ctx``."""
    return BUILDERS[RecipeName(request.recipe)](request, ctx)


def job_kind(recipe: str) -> tuple[str, str]:
    """``(apiVersion, kind)`` of the custom resource a recipe builds."""
    if recipe == RecipeName.VERL:
        return RAY_JOB_API_VERSION, RAY_JOB_KIND
    return PYTORCH_JOB_API_VERSION, PYTORCH_JOB_KIND
