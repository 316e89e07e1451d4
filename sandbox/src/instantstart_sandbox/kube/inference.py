"""Simulated inference workloads: the HyperPod inference operator, model downloads, vLLM/SGLang engine pods.

HyperPod inference operator (EKS add-on ``amazon-sagemaker-hyperpod-inference``, CRDs of group
``inference.sagemaker.aws.amazon.com``). It acts only while its Deployment
``hyperpod-inference-operator-controller-manager`` exists (the add-on installs it when ACTIVE, with the CRDs);
without it a custom resource is stored and nothing happens. For an ``InferenceEndpointConfig`` (and a
``JumpStartModel``) it:

- adds the finalizer :data:`FINALIZER`, then sets ``status.state`` ``DeploymentPending`` ->
  ``DeploymentInProgress`` -> ``DeploymentComplete`` (or ``DeploymentFailed`` once ``spec.maxDeployTimeInSeconds``,
  default 3600, passed while in progress), with one condition per state (``DeploymentInProgress``,
  ``DeploymentComplete``, ``DeploymentFailed``: the current one True, the others False) and, when a SageMaker
  endpoint is asked for, ``SageMakerEndpointRegistrationComplete``; ``status.deploymentStatus`` mirrors the worker
  Deployment, ``status.replicas`` / ``status.selector`` serve the scale subresource;
- creates the worker Deployment (named like the resource, pods labelled :data:`WORKER_LABEL` and ``app``, one
  container ``worker`` with the spec's image, port, resources, environment and model volume, a TCP readiness
  probe on the invocation port, node selector ``node.kubernetes.io/instance-type`` = ``spec.instanceType`` or
  node affinity over ``spec.instanceTypes``) and a ClusterIP Service ``<name>`` on the invocation port;
- once every replica is available and the spec names a SageMaker endpoint (``spec.endpointName`` of an
  InferenceEndpointConfig, ``spec.sageMakerEndpoint.name`` of a JumpStartModel; empty: no endpoint), creates a
  ``SageMakerEndpointRegistration`` ``<name>`` (owned by the resource) and, through :class:`SageMakerSide`, a
  SageMaker Model ``<modelName>-<8 hex>``, EndpointConfig ``<endpoint>-<8 hex>`` (hex from the resource's uid, so
  a re-created resource gets new names and ARNs) and Endpoint ``<endpoint>`` (``Creating``, ``InService`` after
  :data:`ENDPOINT_SECONDS`); the registration's ``status.state`` goes ``CreationInProgress`` ->
  ``CreationCompleted`` and the resource's ``status.endpoints.sagemaker`` carries ``state``, ``endpointArn``,
  ``configArn`` and ``modelArn``; then the resource is ``DeploymentComplete``;
- on delete (the finalizer keeps the object, with a ``deletionTimestamp``): ``DeletionInProgress``, the endpoint
  turns ``Deleting`` and is gone after :data:`DELETE_SECONDS`, then the endpoint config and the model are deleted,
  the registration too, and the finalizer is removed (the Deployment and Service go with their owner).

Faults: :meth:`InferenceControllers.stall` makes the worker image of one resource fail to pull (pods Pending
with ``ErrImagePull`` / ``ImagePullBackOff``, Warning events ``Failed`` naming the reason), so it stays
``DeploymentInProgress``; :meth:`~InferenceControllers.fail_image_pull` does that for every pod of an image;
too few GPUs show as the scheduler's ``FailedScheduling`` event ("0/2 nodes are available: 2 Insufficient
nvidia.com/gpu."). :meth:`~InferenceControllers.fail_download` makes a model download fail.

Model download (the product's downloader Job): a pod labelled :data:`MODEL_DOWNLOAD_LABEL` (any value; put it on
the Job's pod template) whose first container has env ``HF_MODEL_ID`` (``org/name``), ``HF_REVISION`` (default
``main``) and ``DESTINATION`` (``s3://bucket/prefix`` or a path under ``/fsx``) runs for
``SANDBOX_DOWNLOAD_SECONDS`` (default :data:`DEFAULT_DOWNLOAD_SECONDS`) simulated seconds, logging progress lines
(:func:`download_log_lines`), then writes :func:`model_files` (``config.json``, ``tokenizer.json``,
``model.safetensors``) under the destination prefix (S3 through :class:`SageMakerSide`; ``/fsx`` paths into
:attr:`InferenceControllers.filesystem` and, when the pod mounts that path from a claim bound to an FSx for Lustre
PersistentVolume (CSI ``fsx.csi.aws.com``), onto that file system through :class:`LustreSide`, whose data repository
associations export them to S3) and exits 0. A missing bucket, missing env or a :meth:`fail_download`
model makes it exit 1 with an error line; a :meth:`~InferenceControllers.hold_download` model keeps running until
:meth:`~InferenceControllers.release_download`.

Engine pods: a container whose image repository's last path part contains ``vllm`` or ``sglang``
(``vllm/vllm-openai``, ``lmsysorg/sglang``, ``.../vllm``) loads its model for ``SANDBOX_MODEL_LOAD_SECONDS``
(container env, default :data:`DEFAULT_LOAD_SECONDS`) simulated seconds. With a readiness probe (``httpGet`` on
one of the engine's health routes :data:`ENGINE_HEALTH_PATHS` and a port of the container, or ``tcpSocket`` on
such a port) the pod turns Ready only then; a probe on another path or port never passes (Warning ``Unhealthy``
event). Without a readiness probe Kubernetes reports the pod Ready as soon as it runs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from instantstart_sandbox.kube.controllers import EXIT_CODE_ANNOTATION
from instantstart_sandbox.kube.errors import KubeError
from instantstart_sandbox.kube.patches import clone
from instantstart_sandbox.kube.store import rfc3339

if TYPE_CHECKING:
    from instantstart_sandbox.kube.controllers import SimulatedControllers
    from instantstart_sandbox.kube.resources import ResourceType
    from instantstart_sandbox.kube.store import KubeCluster

log = logging.getLogger(__name__)
Obj = dict[str, Any]

GROUP = "inference.sagemaker.aws.amazon.com"
API_VERSION = f"{GROUP}/v1"
IEC_KIND = "InferenceEndpointConfig"
JUMPSTART_KIND = "JumpStartModel"
REGISTRATION_KIND = "SageMakerEndpointRegistration"
KINDS = {IEC_KIND: "inferenceendpointconfigs", JUMPSTART_KIND: "jumpstartmodels"}
OPERATOR_DEPLOYMENT = "hyperpod-inference-operator-controller-manager"
FINALIZER = f"{GROUP}/sagemaker-resources"
"""The sandbox's finalizer name on InferenceEndpointConfig/JumpStartModel (SageMaker-side clean-up)."""
WORKER_LABEL = f"{GROUP}/endpoint-name"
"""Label on the worker Deployment's pods: the custom resource's name."""
WORKER_CONTAINER = "worker"
JUMPSTART_IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.31.0-lmi13.0.0-cu124"
ENDPOINT_SECONDS = 60.0
DELETE_SECONDS = 20.0
DEFAULT_MAX_DEPLOY_SECONDS = 3600
STATES_IN_CONDITIONS = ("DeploymentInProgress", "DeploymentComplete", "DeploymentFailed")
REGISTRATION_CONDITION = "SageMakerEndpointRegistrationComplete"

MODEL_DOWNLOAD_LABEL = "instantstart.io/model-download"
DOWNLOAD_SECONDS_ENV = "SANDBOX_DOWNLOAD_SECONDS"
DEFAULT_DOWNLOAD_SECONDS = 30.0
LOAD_SECONDS_ENV = "SANDBOX_MODEL_LOAD_SECONDS"
DEFAULT_LOAD_SECONDS = 60.0
ENGINE_HEALTH_PATHS = {
    "vllm": ("/health", "/ping", "/v1/models"),
    "sglang": ("/health", "/health_generate", "/v1/models", "/get_model_info"),
}
REPOSITORY_NOT_FOUND = "RepositoryNotFound"
GATED_REPO = "GatedRepo"
_SAFETENSORS_SHAPE = (256, 128)


class SageMakerSide(Protocol):
    """What the operator calls on the AWS side (the sandbox's AWS extension implements it over moto).

    Names are SageMaker resource names; the methods raise ``LookupError`` for a missing resource or bucket.
    """

    def create_model(self, cluster: str, name: str, image: str, environment: dict[str, str]) -> str:
        """CreateModel; the model ARN."""
        ...

    def create_endpoint_config(self, name: str, model_name: str, instance_type: str, count: int) -> str:
        """CreateEndpointConfig (one production variant ``AllTraffic``); the config ARN."""
        ...

    def create_endpoint(self, cluster: str, name: str, config_name: str, served_model: str) -> str:
        """CreateEndpoint (status ``Creating``) whose invocations answer as ``served_model``; the endpoint ARN."""
        ...

    def endpoint_status(self, name: str) -> str | None:
        """The endpoint's ``EndpointStatus``, or None when it does not exist."""
        ...

    def set_endpoint_status(self, name: str, status: str) -> None:
        """Set the endpoint's ``EndpointStatus`` (``InService``, ``Deleting``)."""
        ...

    def delete_endpoint(self, name: str) -> None:
        """DeleteEndpoint (missing: no-op)."""
        ...

    def delete_endpoint_config(self, name: str) -> None:
        """DeleteEndpointConfig (missing: no-op)."""
        ...

    def delete_model(self, name: str) -> None:
        """DeleteModel (missing: no-op)."""
        ...

    def put_objects(self, bucket: str, objects: list[tuple[str, bytes]]) -> None:
        """PutObject each ``(key, body)``; ``LookupError`` when the bucket does not exist."""
        ...


class LustreSide(Protocol):
    """FSx for Lustre as pods write to it (the sandbox's FSx emulator implements it)."""

    def write_files(self, file_system_id: str, files: list[tuple[str, bytes]]) -> None:
        """Write ``(path on the file system, body)`` pairs (paths start with ``/``); ``LookupError`` when the file
        system does not exist or is not AVAILABLE."""
        ...


FSX_CSI_DRIVER = "fsx.csi.aws.com"


# -- model files and logs -------------------------------------------------------------------------------
def model_files(model_id: str, revision: str = "main") -> list[tuple[str, bytes]]:
    """The deterministic files a model download writes: ``config.json``, ``tokenizer.json`` and a valid
    ``model.safetensors`` (one float16 tensor ``weight`` of shape 256x128, 64 KiB of data); same id and
    revision, same bytes."""
    seed = f"{model_id}@{revision}".encode()
    config = {
        "_name_or_path": model_id,
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": _SAFETENSORS_SHAPE[1],
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "torch_dtype": "float16",
        "vocab_size": _SAFETENSORS_SHAPE[0],
        "revision": revision,
    }
    tokenizer = {
        "version": "1.0",
        "model": {"type": "BPE", "vocab": {chr(i): i - 32 for i in range(32, 127)}, "merges": []},
    }
    size = _SAFETENSORS_SHAPE[0] * _SAFETENSORS_SHAPE[1] * 2
    data = b"".join(hashlib.sha256(seed + i.to_bytes(4, "big")).digest() for i in range(size // 32))
    header = json.dumps(
        {
            "__metadata__": {"format": "pt"},
            "weight": {"dtype": "F16", "shape": list(_SAFETENSORS_SHAPE), "data_offsets": [0, size]},
        },
        separators=(",", ":"),
    ).encode()
    header += b" " * (-len(header) % 8)
    return [
        ("config.json", json.dumps(config, indent=2, sort_keys=True).encode() + b"\n"),
        ("tokenizer.json", json.dumps(tokenizer, sort_keys=True).encode()),
        ("model.safetensors", struct.pack("<Q", len(header)) + header + data),
    ]


def download_log_lines(model_id: str, revision: str, destination: str) -> list[str]:
    """The progress lines a successful download logs: a start line, one line per file with the running file and
    byte counts (``[i/n files, done/total bytes]``), and a completion line."""
    files = model_files(model_id, revision)
    total = sum(len(body) for _, body in files)
    lines = [
        f"Downloading {model_id}@{revision} from https://huggingface.co to {destination}: "
        f"{len(files)} files, {total} bytes"
    ]
    done = 0
    for index, (name, body) in enumerate(files, start=1):
        done += len(body)
        lines.append(f"Downloaded {name} ({len(body)} bytes) [{index}/{len(files)} files, {done}/{total} bytes]")
    lines.append(f"Download complete: {len(files)} files, {total} bytes written to {destination}")
    return lines


def _download_error(model_id: str, revision: str, reason: str) -> str:
    if reason == GATED_REPO:
        return (
            f"huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
            f"https://huggingface.co/api/models/{model_id}/revision/{revision}. Access to model {model_id} is "
            "restricted. You must have access to it and be authenticated to access it. Please log in."
        )
    return (
        f"huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: "
        f"https://huggingface.co/api/models/{model_id}/revision/{revision}. Please make sure you specified the "
        "correct `repo_id` and `repo_type`. If you are trying to access a private or gated repo, make sure you are "
        "authenticated."
    )


def _env(container: Obj, name: str) -> str | None:
    return next((e.get("value") for e in container.get("env") or [] if e.get("name") == name), None)


def _seconds(value: str | None, default: float) -> float:
    try:
        return float(value) if value is not None and float(value) >= 0 else default
    except ValueError:
        return default


def engine_of(image: str) -> str | None:
    """``vllm`` or ``sglang`` when ``image``'s repository (last path part, without registry and tag) names
    the engine, else None."""
    repository = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0].lower()
    for engine in ("sglang", "vllm"):
        if engine in repository:
            return engine
    return None


def _ports(container: Obj) -> set[Any]:
    out: set[Any] = set()
    for p in container.get("ports") or []:
        out.add(p.get("containerPort"))
        out.add(str(p.get("containerPort")))
        if p.get("name"):
            out.add(p["name"])
    return out


def probe_verdict(container: Obj) -> tuple[bool, str] | None:
    """The readiness probe of an engine container once its model is loaded: ``(passes, failure text)``;
    None without a readiness probe (or for a container that is no engine)."""
    engine = engine_of(str(container.get("image", "")))
    probe = container.get("readinessProbe")
    if engine is None or not probe:
        return None
    ports = _ports(container)
    if probe.get("httpGet"):
        get = probe["httpGet"]
        port, path = get.get("port"), str(get.get("path") or "/")
        if port not in ports:
            return False, f'Readiness probe failed: Get "http://{{pod IP}}:{port}{path}": connect: connection refused'
        if path.split("?", 1)[0] not in ENGINE_HEALTH_PATHS[engine]:
            return False, "Readiness probe failed: HTTP probe failed with statuscode: 404"
        return True, ""
    if probe.get("tcpSocket"):
        port = probe["tcpSocket"].get("port")
        if port not in ports:
            return False, f"Readiness probe failed: dial tcp {{pod IP}}:{port}: connect: connection refused"
        return True, ""
    return True, ""


def container_argv(container: Obj) -> list[str]:
    """A container's ``command`` then ``args``, as strings."""
    return [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]


def argv_flag(args: list[str], *names: str) -> str | None:
    """The value after the first of ``names`` in ``args`` (``--port 8000`` -> ``"8000"``), None when absent."""
    return next((args[i + 1] for i, a in enumerate(args[:-1]) if a in names), None)


def engine_log_lines(engine: str, container: Obj) -> list[str]:
    """The start-up lines an engine container logs while it loads its model (the last one when it serves)."""
    args = container_argv(container)
    model = argv_flag(args, "--model", "--model-path") or ""
    port = argv_flag(args, "--port") or ""
    if not port:
        port = str(next((p.get("containerPort") for p in container.get("ports") or []), 8000))
    if engine == "sglang":
        return [
            f"[sandbox] sglang server_args: model_path={model} port={port}",
            "Load weight begin.",
            "Load weight end.",
            f"The server is fired up and ready to roll! (listening on http://0.0.0.0:{port})",
        ]
    return [
        f"INFO vLLM API server: model={model} port={port}",
        "INFO Loading model weights ...",
        "INFO Model loading took 0.06 GiB",
        f"INFO Uvicorn running on http://0.0.0.0:{port} (Press CTRL+C to quit)",
        "INFO Application startup complete.",
    ]


# -- the operator -----------------------------------------------------------------------------------------
@dataclass
class _Wanted:
    """What an InferenceEndpointConfig or JumpStartModel asks for, in one shape."""

    kind: str
    name: str
    namespace: str
    model_name: str
    endpoint_name: str
    image: str
    port: int
    replicas: int
    instance_types: list[str]
    resources: Obj
    env: list[Obj]
    volume: Obj | None
    mount: Obj | None
    max_seconds: float
    environment: dict[str, str] = field(default_factory=dict)


def _wanted(obj: Obj) -> _Wanted:
    spec, meta = obj.get("spec") or {}, obj["metadata"]
    replicas = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
    max_seconds = float(spec.get("maxDeployTimeInSeconds") or DEFAULT_MAX_DEPLOY_SECONDS)
    if obj["kind"] == JUMPSTART_KIND:
        model, server = spec.get("model") or {}, spec.get("server") or {}
        env = [
            {"name": str(e.get("name")), "value": str(e.get("value", ""))}
            for e in spec.get("environmentVariables") or []
        ]
        return _Wanted(
            JUMPSTART_KIND,
            meta["name"],
            meta["namespace"],
            str(model.get("modelId", meta["name"])),
            str((spec.get("sageMakerEndpoint") or {}).get("name") or ""),
            JUMPSTART_IMAGE,
            8080,
            replicas,
            [str(server.get("instanceType", ""))] if server.get("instanceType") else [],
            {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
            env,
            {"name": "model-weights", "emptyDir": {}},
            {"name": "model-weights", "mountPath": "/opt/ml/model"},
            max_seconds,
            {
                "SAGEMAKER_JUMPSTART_MODEL_ID": str(model.get("modelId", "")),
                "MODEL_VERSION": str(model.get("modelVersion", "*")),
            },
        )
    worker = spec.get("worker") or {}
    source = spec.get("modelSourceConfig") or {}
    mount = worker.get("modelVolumeMount") or {}
    volume_name = str(mount.get("name") or "model-weights")
    volume: Obj = {"name": volume_name, "emptyDir": {}}
    if source.get("modelSourceType") == "s3":
        s3 = source.get("s3Storage") or {}
        volume = {
            "name": volume_name,
            "csi": {
                "driver": "s3.csi.aws.com",
                "volumeAttributes": {"bucketName": str(s3.get("bucketName", "")), "region": str(s3.get("region", ""))},
            },
        }
    elif source.get("modelSourceType") == "fsx":
        fsx = source.get("fsxStorage") or {}
        volume = {
            "name": volume_name,
            "csi": {
                "driver": "fsx.csi.aws.com",
                "volumeAttributes": {"fileSystemId": str(fsx.get("fileSystemId", ""))},
            },
        }
    types = (
        [str(spec["instanceType"])] if spec.get("instanceType") else [str(t) for t in spec.get("instanceTypes") or []]
    )
    resources = clone(worker.get("resources") or {})
    for part in ("requests", "limits"):
        if isinstance(resources.get(part), dict):
            resources[part] = {k: str(v) for k, v in resources[part].items()}
    env = [clone(e) for e in worker.get("environmentVariables") or []]
    return _Wanted(
        IEC_KIND,
        meta["name"],
        meta["namespace"],
        str(spec.get("modelName", meta["name"])),
        str(spec.get("endpointName") or ""),
        str(worker.get("image", "")),
        int((worker.get("modelInvocationPort") or {}).get("containerPort") or 8080),
        replicas,
        types,
        resources,
        env,
        volume,
        {"name": volume_name, "mountPath": str(mount.get("mountPath") or "/opt/ml/model")},
        max_seconds,
    )


def sagemaker_names(model_name: str, endpoint_name: str, uid: str) -> tuple[str, str]:
    """(model name, endpoint config name) the operator creates for a resource with ``uid``."""
    suffix = hashlib.sha256(uid.encode()).hexdigest()[:8]
    return f"{model_name[:54]}-{suffix}", f"{endpoint_name[:54]}-{suffix}"


def _condition(ctype: str, status: bool, reason: str, message: str, now: str, generation: int) -> Obj:
    return {
        "type": ctype,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
        "observedGeneration": generation,
    }


class InferenceControllers:
    """The inference operator, model downloads and engine pods of one cluster (see the module docstring).

    Args:
        cluster: the store.
        controllers: the cluster's controllers (scheduler, kubelet), whose clock, lock and hooks these use.
        sagemaker: returns the AWS side (None in a Kubernetes-only sandbox: SageMaker endpoints then fail and
            S3 downloads exit 1).
        lustre: returns FSx for Lustre (None: ``/fsx`` downloads only reach :attr:`filesystem`).
    """

    def __init__(
        self,
        cluster: KubeCluster,
        controllers: SimulatedControllers,
        sagemaker: Callable[[], SageMakerSide | None] = lambda: None,
        lustre: Callable[[], LustreSide | None] = lambda: None,
    ) -> None:
        self.cluster = cluster
        self.controllers = controllers
        self.sagemaker = sagemaker
        self.lustre = lustre
        self.filesystem: dict[str, int] = {}
        """Files downloads wrote to ``/fsx`` paths: path -> size in bytes."""
        self._stalled: dict[tuple[str, str], str] = {}
        self._unpullable: dict[str, str] = {}
        self._failing_models: dict[str, str] = {}
        self._held_models: set[str] = set()
        self._parked: dict[str, list[Callable[[], None]]] = {}
        self._started: set[str] = set()
        self._in_progress_since: dict[tuple[str, str, str, str], float] = {}
        self._failed_generation: dict[tuple[str, str, str, str], int] = {}
        self._busy: set[tuple[str, str, str]] = set()
        self._dirty: set[tuple[str, str, str]] = set()
        controllers.image_pull_checks.append(self._pull_error)
        controllers.readiness_gates.append(lambda pod: any(probe_verdict(c) for c in self._containers(pod)))
        controllers.run_owners.append(lambda pod: MODEL_DOWNLOAD_LABEL in (pod["metadata"].get("labels") or {}))
        cluster.add_listener(self._on_event)

    # -- faults ---------------------------------------------------------------------------------------
    def stall(self, namespace: str, name: str, reason: str = "") -> None:
        """Make the worker image of InferenceEndpointConfig/JumpStartModel ``namespace/name`` fail to pull:
        its pods stay Pending (``ErrImagePull``, then ``ImagePullBackOff``) with Warning events ``Failed``
        whose message ends with ``reason`` (default: the registry's not-found text), so it stays
        ``DeploymentInProgress``. :meth:`unstall` lets the next pull succeed."""
        with self.controllers._lock:
            self._stalled[(namespace, name)] = reason
        self._retry_pulls()

    def unstall(self, namespace: str, name: str) -> None:
        """Undo :meth:`stall`: the pods' next pull attempt (at once) succeeds."""
        with self.controllers._lock:
            self._stalled.pop((namespace, name), None)
        self._retry_pulls()

    def fail_image_pull(self, image: str, reason: str = "") -> None:
        """Every pod of this cluster with a container of ``image`` fails to pull it (ErrImagePull); an empty
        ``reason`` uses the registry's not-found text. :meth:`allow_image_pull` undoes it."""
        with self.controllers._lock:
            self._unpullable[image] = reason
        self._retry_pulls()

    def allow_image_pull(self, image: str) -> None:
        """Undo :meth:`fail_image_pull`."""
        with self.controllers._lock:
            self._unpullable.pop(image, None)
        self._retry_pulls()

    def fail_download(self, model_id: str, reason: str = REPOSITORY_NOT_FOUND) -> None:
        """Downloads of ``model_id`` started from now on fail (exit 1) with Hugging Face's error line for
        ``reason``: :data:`REPOSITORY_NOT_FOUND` (404) or :data:`GATED_REPO` (401)."""
        if reason not in (REPOSITORY_NOT_FOUND, GATED_REPO):
            raise ValueError(f"reason must be {REPOSITORY_NOT_FOUND} or {GATED_REPO}, not {reason!r}")
        with self.controllers._lock:
            self._failing_models[model_id] = reason

    def hold_download(self, model_id: str) -> None:
        """Downloads of ``model_id`` do not finish until :meth:`release_download`: their pods keep Running (the
        progress lines keep their times) and write no files, as a download of hundreds of GB would for an hour."""
        with self.controllers._lock:
            self._held_models.add(model_id)

    def release_download(self, model_id: str) -> None:
        """Undo :meth:`hold_download`: the held downloads of ``model_id`` whose time is up finish now (files
        written, exit 0), the others at their time."""
        with self.controllers._lock:
            self._held_models.discard(model_id)
            for finish in self._parked.pop(model_id, []):
                finish()

    def reset(self) -> None:
        """Clear every fault of this cluster (stalls, unpullable images, failing downloads, held downloads: they
        finish)."""
        with self.controllers._lock:
            self._stalled.clear()
            self._unpullable.clear()
            self._failing_models.clear()
            for model_id in list(self._held_models):
                self.release_download(model_id)
        self._retry_pulls()

    def _pull_error(self, pod: Obj, container: Obj) -> str | None:
        image = str(container.get("image", ""))
        labels = pod["metadata"].get("labels") or {}
        reason: str | None = None
        if image in self._unpullable:
            reason = self._unpullable[image]
        elif (pod["metadata"].get("namespace", ""), labels.get(WORKER_LABEL, "")) in self._stalled and container.get(
            "name"
        ) == WORKER_CONTAINER:
            reason = self._stalled[(pod["metadata"].get("namespace", ""), labels[WORKER_LABEL])]
        if reason is None:
            return None
        return reason or (
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": failed to resolve '
            f'reference "{image}": not found'
        )

    def _retry_pulls(self) -> None:
        for pod in self.cluster.peek_list("v1", "Pod"):
            meta, spec = pod["metadata"], pod.get("spec") or {}
            if spec.get("nodeName") and (pod.get("status") or {}).get("phase") in (None, "Pending"):
                self.controllers.schedule("start", meta["namespace"], meta["name"], 0.0, self.controllers.start_pod)

    # -- events ---------------------------------------------------------------------------------------
    @staticmethod
    def _containers(pod: Obj) -> list[Obj]:
        return list((pod.get("spec") or {}).get("containers") or [])

    def _soon(self, kind: str, ns: str, name: str) -> None:
        self.controllers.schedule(
            f"inference-{kind}", ns, name, self.controllers.delays["reconcile"], lambda n, p: self.reconcile(kind, n, p)
        )

    def _on_event(self, etype: str, rt: ResourceType, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is None:
            return
        group, plural = rt.storage_key
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        if group == GROUP and plural in KINDS.values() and etype != "DELETED":
            self._soon(obj["kind"], ns, name)
        elif (group, plural) in (("apps", "deployments"), (GROUP, "sagemakerendpointregistrations")):
            if plural == "deployments" and name == OPERATOR_DEPLOYMENT and etype != "DELETED":
                for kind in KINDS:
                    for item in self._items(kind):
                        self._soon(kind, item["metadata"]["namespace"], item["metadata"]["name"])
                return
            ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
            if ref is not None and ref.get("kind") in KINDS:
                self._soon(str(ref["kind"]), ns, str(ref["name"]))
        elif (group, plural) == ("", "pods") and new is not None:
            self._on_pod(new)

    def _items(self, kind: str) -> list[Obj]:
        try:
            return self.cluster.peek_list(API_VERSION, kind)
        except KubeError:
            return []

    def _has(self, kind: str) -> bool:
        try:
            self.cluster.resource_type(API_VERSION, kind)
        except KubeError:
            return False
        return True

    def _operator(self) -> bool:
        return any(
            d["metadata"]["name"] == OPERATOR_DEPLOYMENT for d in self.cluster.peek_list("apps/v1", "Deployment")
        )

    def _once(self, kind: str, ns: str, name: str, fn: Callable[[str, str, str], None]) -> None:
        key = (kind, ns, name)
        if key in self._busy:
            self._dirty.add(key)
            return
        self._busy.add(key)
        try:
            while True:
                self._dirty.discard(key)
                fn(kind, ns, name)
                if key not in self._dirty:
                    break
        finally:
            self._busy.discard(key)

    def reconcile(self, kind: str, ns: str, name: str) -> None:
        """Converge one InferenceEndpointConfig or JumpStartModel (``kind``): see the module docstring."""
        self._once(kind, ns, name, self._reconcile)

    # -- the custom resources ---------------------------------------------------------------------------
    def _set_state(self, status: Obj, state: str, reason: str, message: str, generation: int) -> None:
        now = self.cluster.timestamp()
        old = {c["type"]: c for c in status.get("conditions") or []}
        conds = []
        for ctype in STATES_IN_CONDITIONS:
            on = ctype == state
            if state == "DeploymentPending" and ctype == "DeploymentInProgress":
                on = False
            new = _condition(ctype, on, reason if on else ctype + "False", message if on else "", now, generation)
            if not on:
                new["reason"] = "NotInState"
                new["message"] = f"state is {state}"
            prev = old.get(ctype)
            if prev is not None and prev.get("status") == new["status"]:
                new["lastTransitionTime"] = prev.get("lastTransitionTime", now)
            conds.append(new)
        conds += [c for t, c in old.items() if t not in STATES_IN_CONDITIONS]
        status["conditions"] = conds
        status["state"] = state

    def _set_registration_condition(self, status: Obj, done: bool, reason: str, message: str, generation: int) -> None:
        now = self.cluster.timestamp()
        conds = [c for c in status.get("conditions") or [] if c["type"] != REGISTRATION_CONDITION]
        prev = next((c for c in status.get("conditions") or [] if c["type"] == REGISTRATION_CONDITION), None)
        new = _condition(REGISTRATION_CONDITION, done, reason, message, now, generation)
        if prev is not None and prev.get("status") == new["status"]:
            new["lastTransitionTime"] = prev.get("lastTransitionTime", now)
        status["conditions"] = [*conds, new]

    @staticmethod
    def _ref(owner: Obj) -> Obj:
        return {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def _deployment(self, obj: Obj, want: _Wanted) -> Obj:
        labels = {"app": want.name, WORKER_LABEL: want.name}
        container: Obj = {
            "name": WORKER_CONTAINER,
            "image": want.image,
            "ports": [{"name": "http", "containerPort": want.port, "protocol": "TCP"}],
            "resources": want.resources,
            "readinessProbe": {"tcpSocket": {"port": want.port}, "periodSeconds": 10, "failureThreshold": 30},
        }
        env = [*want.env, *({"name": k, "value": v} for k, v in want.environment.items())]
        if env:
            container["env"] = env
        if want.mount:
            container["volumeMounts"] = [want.mount]
        pod_spec: Obj = {"containers": [container]}
        if want.volume:
            pod_spec["volumes"] = [want.volume]
        if len(want.instance_types) == 1:
            pod_spec["nodeSelector"] = {"node.kubernetes.io/instance-type": want.instance_types[0]}
        elif want.instance_types:
            pod_spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "node.kubernetes.io/instance-type",
                                        "operator": "In",
                                        "values": want.instance_types,
                                    }
                                ]
                            }
                        ]
                    }
                }
            }
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": want.name,
                "namespace": want.namespace,
                "labels": dict(labels),
                "ownerReferences": [self._ref(obj)],
            },
            "spec": {
                "replicas": want.replicas,
                "selector": {"matchLabels": dict(labels)},
                "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
            },
        }

    def _ensure_workload(self, obj: Obj, want: _Wanted) -> Obj:
        desired = self._deployment(obj, want)
        dep = self.cluster.peek("apps/v1", "Deployment", want.name, want.namespace)
        if dep is None:
            dep = self.cluster.create(desired, OPERATOR_DEPLOYMENT)
            self.controllers.event(obj, "DeploymentCreated", f"Created Deployment {want.name}", OPERATOR_DEPLOYMENT)
        elif dep["spec"].get("replicas") != want.replicas or dep["spec"].get("template") != desired["spec"]["template"]:
            patch = [
                {"op": "replace", "path": "/spec/replicas", "value": want.replicas},
                {"op": "replace", "path": "/spec/template", "value": desired["spec"]["template"]},
            ]
            dep = self.cluster.patch(
                "apps/v1", "Deployment", want.name, want.namespace, patch, "json", OPERATOR_DEPLOYMENT
            )
        if self.cluster.peek("v1", "Service", want.name, want.namespace) is None:
            self.cluster.create(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {
                        "name": want.name,
                        "namespace": want.namespace,
                        "labels": {"app": want.name},
                        "ownerReferences": [self._ref(obj)],
                    },
                    "spec": {
                        "type": "ClusterIP",
                        "selector": {WORKER_LABEL: want.name},
                        "ports": [{"name": "http", "port": want.port, "targetPort": want.port, "protocol": "TCP"}],
                    },
                },
                OPERATOR_DEPLOYMENT,
            )
        return dep

    def _reconcile(self, kind: str, ns: str, name: str) -> None:
        if not self._has(kind) or not self._operator():
            return
        obj = self.cluster.peek(API_VERSION, kind, name, ns)
        if obj is None:
            return
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            self._delete(obj)
            return
        if FINALIZER not in (meta.get("finalizers") or []):
            self.cluster.patch(
                API_VERSION,
                kind,
                name,
                ns,
                {"metadata": {"finalizers": [*(meta.get("finalizers") or []), FINALIZER]}},
                "merge",
                OPERATOR_DEPLOYMENT,
            )
            return
        generation = int(meta.get("generation", 1))
        want = _wanted(obj)
        status = clone(obj.get("status") or {})
        now_epoch = self.cluster.now()
        if not status.get("state"):
            self._set_state(status, "DeploymentPending", "DeploymentPending", f"{kind} {name} accepted", generation)
            self.controllers.set_status(obj, status, OPERATOR_DEPLOYMENT)
            return
        dep = self._ensure_workload(obj, want)
        dstat = dep.get("status") or {}
        available = int(dstat.get("availableReplicas", 0))
        ready = (
            available >= want.replicas
            and int(dstat.get("updatedReplicas", 0)) >= want.replicas
            and int(dstat.get("replicas", 0)) == want.replicas
            and int(dstat.get("observedGeneration", 0)) >= int(dep["metadata"].get("generation", 1))
        )
        overall = "DeploymentComplete" if ready else "DeploymentInProgress"
        mirrored = {
            k: v
            for k, v in dstat.items()
            if k
            in (
                "availableReplicas",
                "readyReplicas",
                "replicas",
                "updatedReplicas",
                "unavailableReplicas",
                "observedGeneration",
                "conditions",
            )
        }
        old_dep = status.get("deploymentStatus") or {}
        status["deploymentStatus"] = {
            "name": want.name,
            "deploymentObjectOverallState": overall,
            "status": mirrored,
            "reason": "AllReplicasAvailable" if ready else "ReplicasUnavailable",
            "message": f"{available}/{want.replicas} replicas available",
            "lastUpdated": old_dep.get("lastUpdated", rfc3339(now_epoch))
            if old_dep.get("status") == mirrored
            else rfc3339(now_epoch),
        }
        status["replicas"] = int(dstat.get("readyReplicas", 0))
        status["selector"] = f"{WORKER_LABEL}={want.name}"
        status["observedGeneration"] = generation
        state = status["state"]
        key = (kind, ns, name, meta["uid"])
        if state == "DeploymentFailed" and self._failed_generation.get(key) == generation:
            self.controllers.set_status(obj, status, OPERATOR_DEPLOYMENT)
            return
        if not ready:
            started = self._in_progress_since.setdefault(key, now_epoch)
            if now_epoch - started >= want.max_seconds:
                why = self._pod_problem(want) or f"{available}/{want.replicas} replicas available"
                message = f"deployment did not complete within {int(want.max_seconds)} seconds: {why}"
                self._set_state(status, "DeploymentFailed", "DeploymentTimedOut", message, generation)
                self._failed_generation[key] = generation
                self.controllers.event(obj, "DeploymentFailed", message, OPERATOR_DEPLOYMENT, warning=True)
            else:
                message = f"waiting for worker Deployment {want.name}: {available}/{want.replicas} replicas available"
                self._set_state(status, "DeploymentInProgress", "DeploymentInProgress", message, generation)
                self.controllers.schedule(
                    f"inference-timeout-{kind}",
                    ns,
                    name,
                    max(0.0, want.max_seconds - (now_epoch - started)),
                    lambda n, p: self.reconcile(kind, n, p),
                )
            self.controllers.set_status(obj, status, OPERATOR_DEPLOYMENT)
            return
        self._in_progress_since.pop(key, None)
        self._failed_generation.pop(key, None)
        if not want.endpoint_name:
            if state != "DeploymentComplete":
                self.controllers.event(
                    obj, "DeploymentComplete", f"{want.replicas} replicas available", OPERATOR_DEPLOYMENT
                )
            self._set_state(
                status, "DeploymentComplete", "DeploymentComplete", f"{want.replicas} replicas available", generation
            )
            self.controllers.set_status(obj, status, OPERATOR_DEPLOYMENT)
            return
        registration = self._registration(obj, want)
        rstate = (registration.get("status") or {}).get("state")
        endpoint = (registration.get("status") or {}).get("endpoint") or {}
        sm_state = {"CreationCompleted": "InService", "CreationFailed": "Failed"}.get(str(rstate), "Creating")
        status["endpoints"] = {
            "sagemaker": {
                "state": sm_state,
                "endpointArn": endpoint.get("arn", ""),
                "configArn": endpoint.get("configArn", ""),
                "modelArn": endpoint.get("modelArn", ""),
            }
        }
        if rstate == "CreationCompleted":
            message = f"{want.replicas} replicas available; SageMaker endpoint {want.endpoint_name} is InService"
            self._set_registration_condition(status, True, "EndpointInService", message, generation)
            if state != "DeploymentComplete":
                self.controllers.event(obj, "DeploymentComplete", message, OPERATOR_DEPLOYMENT)
            self._set_state(status, "DeploymentComplete", "DeploymentComplete", message, generation)
        elif rstate == "CreationFailed":
            reason = next(
                (c.get("message", "") for c in (registration.get("status") or {}).get("conditions") or []), ""
            )
            message = f"SageMaker endpoint {want.endpoint_name} creation failed: {reason}"
            self._set_registration_condition(status, False, "EndpointCreationFailed", message, generation)
            self._set_state(status, "DeploymentFailed", "EndpointCreationFailed", message, generation)
        else:
            message = f"{want.replicas} replicas available; creating SageMaker endpoint {want.endpoint_name}"
            self._set_registration_condition(status, False, "EndpointCreating", message, generation)
            self._set_state(status, "DeploymentInProgress", "EndpointCreating", message, generation)
        self.controllers.set_status(obj, status, OPERATOR_DEPLOYMENT)

    def _pod_problem(self, want: _Wanted) -> str | None:
        """The latest Warning event of the worker pods ("reason: message"), or None."""
        pods = {
            p["metadata"]["uid"]
            for p in self.cluster.peek_list("v1", "Pod", want.namespace, label_selector=f"{WORKER_LABEL}={want.name}")
        }
        warnings = [
            e
            for e in self.cluster.peek_list("v1", "Event", want.namespace)
            if e.get("type") == "Warning" and (e.get("involvedObject") or {}).get("uid") in pods
        ]
        if not warnings:
            return None
        last = max(warnings, key=lambda e: str(e.get("lastTimestamp") or ""))
        return f"{last.get('reason')}: {last.get('message')}"

    def _registration(self, obj: Obj, want: _Wanted) -> Obj:
        reg = self.cluster.peek(API_VERSION, REGISTRATION_KIND, want.name, want.namespace)
        if reg is not None:
            if not (reg.get("status") or {}).get("state"):
                self._create_endpoint(obj, reg, want)
                reg = self.cluster.peek(API_VERSION, REGISTRATION_KIND, want.name, want.namespace) or reg
            return reg
        model, config = sagemaker_names(want.model_name, want.endpoint_name, obj["metadata"]["uid"])
        reg = self.cluster.create(
            {
                "apiVersion": API_VERSION,
                "kind": REGISTRATION_KIND,
                "metadata": {
                    "name": want.name,
                    "namespace": want.namespace,
                    "labels": {WORKER_LABEL: want.name},
                    "ownerReferences": [self._ref(obj)],
                },
                "spec": {
                    "name": want.endpoint_name,
                    "modelName": model,
                    "endpointConfigName": config,
                    "imageUri": want.image,
                    "instanceType": want.instance_types[0] if want.instance_types else "",
                    "invocationEndpoint": str((obj.get("spec") or {}).get("invocationEndpoint") or "invocations"),
                    "eksClusterDetails": {"name": self.cluster.name},
                },
            },
            OPERATOR_DEPLOYMENT,
        )
        self._create_endpoint(obj, reg, want)
        return self.cluster.peek(API_VERSION, REGISTRATION_KIND, want.name, want.namespace) or reg

    def _create_endpoint(self, obj: Obj, reg: Obj, want: _Wanted) -> None:
        spec = reg["spec"]
        side = self.sagemaker()
        now = self.cluster.timestamp()
        if side is None:
            status: Obj = {
                "state": "CreationFailed",
                "conditions": [
                    _condition("CreationFailed", True, "NoSageMakerApi", "this sandbox has no SageMaker API", now, 1)
                ],
            }
        else:
            try:
                model_arn = side.create_model(self.cluster.name, spec["modelName"], want.image, want.environment)
                config_arn = side.create_endpoint_config(
                    spec["endpointConfigName"], spec["modelName"], spec["instanceType"] or "ml.g5.xlarge", want.replicas
                )
                arn = side.create_endpoint(self.cluster.name, spec["name"], spec["endpointConfigName"], want.model_name)
            except (LookupError, ValueError) as exc:
                status = {
                    "state": "CreationFailed",
                    "conditions": [_condition("CreationFailed", True, "SageMakerError", str(exc), now, 1)],
                }
            else:
                status = {
                    "state": "CreationInProgress",
                    "endpoint": {"arn": arn, "configArn": config_arn, "modelArn": model_arn, "lastModifiedTime": now},
                    "conditions": [
                        _condition(
                            "CreationInProgress",
                            True,
                            "EndpointCreating",
                            f"endpoint {spec['name']} is Creating",
                            now,
                            1,
                        )
                    ],
                }
                self.controllers.event(
                    obj, "EndpointCreating", f"Creating SageMaker endpoint {spec['name']}", OPERATOR_DEPLOYMENT
                )
                ns, name, uid = reg["metadata"]["namespace"], reg["metadata"]["name"], reg["metadata"]["uid"]
                self.controllers.schedule(
                    "inference-endpoint", ns, name, ENDPOINT_SECONDS, lambda n, p: self._endpoint_in_service(n, p, uid)
                )
        self.controllers.set_status(reg, status, OPERATOR_DEPLOYMENT)

    def _endpoint_in_service(self, ns: str, name: str, uid: str) -> None:
        reg = self.cluster.peek(API_VERSION, REGISTRATION_KIND, name, ns)
        side = self.sagemaker()
        if reg is None or reg["metadata"]["uid"] != uid or side is None or reg["metadata"].get("deletionTimestamp"):
            return
        if (reg.get("status") or {}).get("state") != "CreationInProgress":
            return
        endpoint = reg["spec"]["name"]
        if side.endpoint_status(endpoint) != "Creating":
            return
        side.set_endpoint_status(endpoint, "InService")
        status = clone(reg["status"])
        now = self.cluster.timestamp()
        status["state"] = "CreationCompleted"
        status["endpoint"]["lastModifiedTime"] = now
        status["conditions"] = [
            _condition("CreationCompleted", True, "EndpointInService", f"endpoint {endpoint} is InService", now, 1)
        ]
        self.controllers.set_status(reg, status, OPERATOR_DEPLOYMENT)

    def _delete(self, obj: Obj) -> None:
        meta = obj["metadata"]
        ns, name, kind = meta["namespace"], meta["name"], obj["kind"]
        if FINALIZER not in (meta.get("finalizers") or []):
            return
        status = clone(obj.get("status") or {})
        generation = int(meta.get("generation", 1))
        reg = self.cluster.peek(API_VERSION, REGISTRATION_KIND, name, ns) if self._has(REGISTRATION_KIND) else None
        side = self.sagemaker()
        if reg is not None and side is not None and (reg.get("status") or {}).get("endpoint"):
            endpoint = reg["spec"]["name"]
            current = side.endpoint_status(endpoint)
            if current is not None:
                if current != "Deleting":
                    side.set_endpoint_status(endpoint, "Deleting")
                    status["state"] = "DeletionInProgress"
                    status.setdefault("endpoints", {}).setdefault("sagemaker", {})["state"] = "Deleting"
                    self.controllers.set_status(obj, status, OPERATOR_DEPLOYMENT)
                    self.controllers.event(
                        obj, "EndpointDeleting", f"Deleting SageMaker endpoint {endpoint}", OPERATOR_DEPLOYMENT
                    )
                    self.controllers.schedule(
                        f"inference-delete-{kind}",
                        ns,
                        name,
                        DELETE_SECONDS,
                        lambda n, p: self._endpoint_gone(kind, n, p, endpoint),
                    )
                return
        if reg is not None and side is not None:
            # also what a failed creation left behind (a model without a config, ...)
            side.delete_endpoint_config(reg["spec"]["endpointConfigName"])
            side.delete_model(reg["spec"]["modelName"])
        if reg is not None:
            self.cluster.delete(API_VERSION, REGISTRATION_KIND, name, ns, missing_ok=True)
        status["state"] = "DeletionComplete"
        if status.get("endpoints"):
            status["endpoints"]["sagemaker"]["state"] = "Deleted"
        self._set_state(status, "DeletionComplete", "DeletionComplete", f"{kind} {name} deleted", generation)
        status["state"] = "DeletionComplete"
        self.controllers.set_status(obj, status, OPERATOR_DEPLOYMENT)
        self.cluster.patch(
            API_VERSION,
            kind,
            name,
            ns,
            {"metadata": {"finalizers": [f for f in meta.get("finalizers") or [] if f != FINALIZER]}},
            "merge",
            OPERATOR_DEPLOYMENT,
        )

    def _endpoint_gone(self, kind: str, ns: str, name: str, endpoint: str) -> None:
        side = self.sagemaker()
        if side is not None:
            side.delete_endpoint(endpoint)
        self.reconcile(kind, ns, name)

    # -- pods: downloads and engines ------------------------------------------------------------------
    def _on_pod(self, pod: Obj) -> None:
        meta, status = pod["metadata"], pod.get("status") or {}
        uid = meta["uid"]
        if status.get("phase") != "Running" or meta.get("deletionTimestamp") or uid in self._started:
            return
        labels = meta.get("labels") or {}
        if MODEL_DOWNLOAD_LABEL in labels:
            self._started.add(uid)
            self._start_download(pod)
            return
        engines = [(c, engine_of(str(c.get("image", "")))) for c in self._containers(pod)]
        engines = [(c, e) for c, e in engines if e is not None]
        if engines:
            self._started.add(uid)
            self._start_engine(pod, engines)

    def _start_engine(self, pod: Obj, engines: list[tuple[Obj, str | None]]) -> None:
        ns, name, uid = pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"]
        begin = self.cluster.now()
        seconds = max(_seconds(_env(c, LOAD_SECONDS_ENV), DEFAULT_LOAD_SECONDS) for c, _ in engines)
        for container, engine in engines:
            lines = engine_log_lines(str(engine), container)
            entries = [(begin + seconds * k / (len(lines) - 1), line) for k, line in enumerate(lines)]
            self.cluster.set_pod_log_entries(ns, name, container["name"], entries)
        self.controllers.schedule(f"engine-{uid}", ns, name, seconds, lambda n, p: self._engine_loaded(n, p, uid))

    def _engine_loaded(self, ns: str, name: str, uid: str) -> None:
        pod = self.cluster.peek("v1", "Pod", name, ns)
        if pod is None or pod["metadata"]["uid"] != uid or (pod.get("status") or {}).get("phase") != "Running":
            return
        verdicts = [v for c in self._containers(pod) if (v := probe_verdict(c)) is not None]
        failed = [text for ok, text in verdicts if not ok]
        if failed:
            ip = (pod.get("status") or {}).get("podIP", "")
            for text in failed:
                self.controllers.event(pod, "Unhealthy", text.replace("{pod IP}", ip), "kubelet", warning=True)
            return
        if verdicts:
            self.controllers.set_pod_ready(ns, name, True)

    def _start_download(self, pod: Obj) -> None:
        ns, name, uid = pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"]
        container = (self._containers(pod) or [{}])[0]
        model_id = _env(container, "HF_MODEL_ID") or ""
        revision = _env(container, "HF_REVISION") or "main"
        destination = _env(container, "DESTINATION") or ""
        seconds = _seconds(_env(container, DOWNLOAD_SECONDS_ENV), DEFAULT_DOWNLOAD_SECONDS)
        begin = self.cluster.now()
        cname = str(container.get("name", ""))
        error: str | None = None
        if not model_id or not destination:
            error = "error: HF_MODEL_ID and DESTINATION must be set"
        elif not (destination.startswith("s3://") or destination == "/fsx" or destination.startswith("/fsx/")):
            error = f"error: DESTINATION must be s3://bucket/prefix or a path under /fsx, not {destination}"
        elif model_id in self._failing_models:
            error = _download_error(model_id, revision, self._failing_models[model_id])
        if error is not None:
            end = min(seconds, 2.0)
            lines = [f"Downloading {model_id}@{revision} from https://huggingface.co to {destination}", error]
            self.cluster.set_pod_log_entries(ns, name, cname, [(begin, lines[0]), (begin + end, lines[1])])
            self.controllers.schedule(f"download-{uid}", ns, name, end, lambda n, p: self._end_pod(n, p, uid, 1))
            return
        lines = download_log_lines(model_id, revision, destination)
        # the completion line is written when the files are (at the end)
        entries = [(begin + seconds * k / (len(lines) - 1), line) for k, line in enumerate(lines[:-1])]
        self.cluster.set_pod_log_entries(ns, name, cname, entries)
        self.controllers.schedule(
            f"download-{uid}",
            ns,
            name,
            seconds,
            lambda n, p: self._finish_download(n, p, uid, cname, model_id, revision, destination, lines[-1]),
        )

    def _finish_download(
        self, ns: str, name: str, uid: str, cname: str, model_id: str, revision: str, destination: str, last: str
    ) -> None:
        pod = self.cluster.peek("v1", "Pod", name, ns)
        if pod is None or pod["metadata"]["uid"] != uid or (pod.get("status") or {}).get("phase") != "Running":
            return
        if model_id in self._held_models:  # hold_download: finishes on release_download
            self._parked.setdefault(model_id, []).append(
                lambda: self._finish_download(ns, name, uid, cname, model_id, revision, destination, last)
            )
            return
        files = model_files(model_id, revision)
        if destination.startswith("s3://"):
            bucket, _, prefix = destination[5:].partition("/")
            prefix = prefix.strip("/")
            keys = [(f"{prefix}/{n}" if prefix else n, body) for n, body in files]
            side = self.sagemaker()
            try:
                if side is None:
                    raise LookupError("no S3 in this sandbox")
                side.put_objects(bucket, keys)
            except LookupError:
                self.cluster.append_pod_log(
                    ns,
                    name,
                    cname,
                    "botocore.errorfactory.NoSuchBucket: An error occurred (NoSuchBucket) when calling the "
                    "PutObject operation: The specified bucket does not exist",
                )
                self._end_pod(ns, name, uid, 1)
                return
        else:
            base = destination.rstrip("/")
            for n, body in files:
                self.filesystem[f"{base}/{n}"] = len(body)
            self._write_lustre(pod, base, files)
        self.cluster.append_pod_log(ns, name, cname, last)
        self._end_pod(ns, name, uid, 0)

    def lustre_volume(self, pod: Obj, path: str) -> tuple[str, str] | None:
        """``(file system id, path on the file system)`` for ``path`` in ``pod``: the container mount holding it,
        its volume's claim, the claim's PersistentVolume with CSI driver ``fsx.csi.aws.com`` (``volumeHandle``);
        None when ``path`` is not on such a volume."""
        spec = pod.get("spec") or {}
        volumes = {v.get("name"): v for v in spec.get("volumes") or []}
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            for mount in container.get("volumeMounts") or []:
                root = str(mount.get("mountPath", "")).rstrip("/")
                if not root or not (path == root or path.startswith(root + "/")):
                    continue
                claim = ((volumes.get(mount.get("name")) or {}).get("persistentVolumeClaim") or {}).get("claimName")
                pvc = self.cluster.peek("v1", "PersistentVolumeClaim", str(claim), pod["metadata"]["namespace"])
                volume_name = ((pvc or {}).get("spec") or {}).get("volumeName")
                pv = self.cluster.peek("v1", "PersistentVolume", str(volume_name)) if volume_name else None
                csi = ((pv or {}).get("spec") or {}).get("csi") or {}
                if csi.get("driver") == FSX_CSI_DRIVER and csi.get("volumeHandle"):
                    return str(csi["volumeHandle"]), path[len(root) :] or "/"
        return None

    def _write_lustre(self, pod: Obj, base: str, files: list[tuple[str, bytes]]) -> None:
        """The download's files onto the FSx file system behind ``base`` (when there is one and FSx is emulated)."""
        side = self.lustre()
        found = self.lustre_volume(pod, base)
        if side is None or found is None:
            return
        file_system_id, path = found
        try:
            side.write_files(file_system_id, [(f"{path.rstrip('/')}/{n}", body) for n, body in files])
        except LookupError:
            log.warning("FSx file system %s is not available: %s not written to it", file_system_id, base)

    def _end_pod(self, ns: str, name: str, uid: str, exit_code: int) -> None:
        pod = self.cluster.peek("v1", "Pod", name, ns)
        if pod is None or pod["metadata"]["uid"] != uid or (pod.get("status") or {}).get("phase") != "Running":
            return
        self.cluster.patch(
            "v1",
            "Pod",
            name,
            ns,
            {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: str(exit_code)}}},
            field_manager="kubelet",
        )
        self.controllers.finish_pod(ns, name)
