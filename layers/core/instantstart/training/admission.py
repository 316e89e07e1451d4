"""What Kubernetes must hold for a training job to start, checked at submission, and why a submitted job waits.

At submission (``POST /clusters/{clusterTag}/training-jobs``), one read through the API's view entry
(:func:`read_submission`) and the rules of :func:`check_submission`, each a 422 naming the field:

- ``team``: Kueue admits a job labelled ``kueue.x-k8s.io/queue-name: hyperpod-ns-<team>-localqueue`` only when that
  LocalQueue exists in the job's namespace and its ClusterQueue exists (task governance creates both with the team's
  compute quota); a job queued to a missing queue would be accepted by Kubernetes and wait for ever;
- a storage path (``script``, ``configPath``, ``outputPath``, ``trainFiles``, ... and argv elements) under ``/s3`` or
  ``/fsx`` needs that storage's claim (``s3-claim``, ``fsx-claim``) in the job's namespace: the claims exist in
  ``default`` only (the cluster's bucket, the fsx feature), and a job elsewhere runs with nothing mounted there.
  The API does not copy a claim into another namespace (a PersistentVolume binds one claim): run the job in
  ``default``, or create the claim in that namespace first.

After submission, :func:`admission_problem` reads the job's Kueue ``Workload`` (owned by the job): not admitted is
the reason ``GET .../training-jobs/{name}`` shows (Kueue's message verbatim, e.g. ``LocalQueue x doesn't exist``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from instantstart.errors import ValidationFailed
from instantstart.kube.reads import KUBERNETES_READ_SECONDS
from instantstart.models.training_jobs import (
    LlamaFactoryJobRequest,
    MsSwiftJobRequest,
    PyTorchJobRequest,
    ScriptJobRequest,
    TrainingJobRequest,
    VerlJobRequest,
)
from instantstart.training import builders

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta1"


def queue_name(team: str) -> str:
    """The LocalQueue task governance creates for ``team``: ``hyperpod-ns-<team>-localqueue``."""
    return f"hyperpod-ns-{team}-localqueue"


def _mount_of(path: str) -> str | None:
    for claim, mount in builders.CLAIM_MOUNTS.items():
        if path == mount or path.startswith(f"{mount}/"):
            return claim
    return None


def storage_paths(request: TrainingJobRequest) -> list[tuple[str, str, str]]:
    """``(field, path, claim)`` of every path of the request under a mounted storage (``/s3``, ``/fsx``).

    Fields: ``script`` and ``args[i]`` (pytorch), ``command[i]`` and ``args[i]`` (script), ``configPath``,
    ``model``, ``dataset`` (each comma-separated part), ``outputPath`` (fine-tuning), ``model``, ``trainFiles``,
    ``valFiles``, ``outputPath`` (verl).
    """
    found: list[tuple[str, str]] = []
    if isinstance(request, PyTorchJobRequest):
        found += [("script", request.script), *((f"args[{i}]", a) for i, a in enumerate(request.args))]
    elif isinstance(request, ScriptJobRequest):
        found += [(f"command[{i}]", a) for i, a in enumerate(request.command)]
        found += [(f"args[{i}]", a) for i, a in enumerate(request.args)]
    elif isinstance(request, LlamaFactoryJobRequest | MsSwiftJobRequest):
        found += [("configPath", request.config_path or ""), ("model", request.model)]
        found += [("dataset", part) for part in request.dataset.split(",")]
        found += [("outputPath", request.output_path)]
    elif isinstance(request, VerlJobRequest):
        found += [("model", request.model), ("trainFiles", request.train_files), ("valFiles", request.val_files)]
        found += [("outputPath", request.output_path)]
    return [(field, path, claim) for field, path in found if (claim := _mount_of(path)) is not None]


@dataclass(frozen=True)
class SubmissionFacts:
    """What the job's namespace holds, read at submission.

    Attributes:
        claims: the storage claims present in the namespace (``s3-claim``, ``fsx-claim``).
        local_queue: the team's LocalQueue in the namespace (None: absent, or no team asked).
        cluster_queue_exists: the LocalQueue's ``spec.clusterQueue`` exists.
    """

    claims: frozenset[str]
    local_queue: dict[str, Any] | None = None
    cluster_queue_exists: bool = False


def _get(dyn: Any, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    try:
        resource = dyn.resources.get(api_version=api_version, kind=kind)
        found = resource.get(name=name, namespace=namespace, _request_timeout=KUBERNETES_READ_SECONDS)
    except (NotFoundError, ResourceNotFoundError):  # absent, or the kind is not served
        return None
    return dict(found.to_dict())


def read_submission(dyn: Any, request: TrainingJobRequest) -> SubmissionFacts:
    """Kubernetes ``GET`` of the storage claims in the job's namespace and, with a team, of its LocalQueue and that
    queue's ClusterQueue (``kueue.x-k8s.io/v1beta1``); a kind that is not served reads as absent."""
    namespace = request.job_namespace
    claims = frozenset(
        c
        for c in builders.CLAIM_MOUNTS
        if storage_paths(request) and _get(dyn, "v1", "PersistentVolumeClaim", c, namespace) is not None
    )
    if not request.team:
        return SubmissionFacts(claims=claims)
    local = _get(dyn, KUEUE_API_VERSION, "LocalQueue", queue_name(request.team), namespace)
    cq = str(((local or {}).get("spec") or {}).get("clusterQueue") or "")
    exists = bool(cq) and _get(dyn, KUEUE_API_VERSION, "ClusterQueue", cq) is not None
    return SubmissionFacts(claims=claims, local_queue=local, cluster_queue_exists=exists)


def check_submission(tag: str, request: TrainingJobRequest, facts: SubmissionFacts) -> None:
    """Refuse a job Kubernetes would accept but never run as asked.

    Raises:
        ValidationFailed: 422 naming ``team`` (no such LocalQueue in the job's namespace, or its ClusterQueue is
            missing) or the storage path's field (its storage is not available in the job's namespace).
    """
    namespace = request.job_namespace
    if request.team:
        queue = queue_name(request.team)
        if facts.local_queue is None:
            elsewhere = (
                f" (the team's jobs run in hyperpod-ns-{request.team})"
                if namespace != f"hyperpod-ns-{request.team}"
                else ""
            )
            raise ValidationFailed(
                f"team {request.team}: no Kueue queue {queue} in namespace {namespace}{elsewhere}; Kueue would never "
                f"admit the job. Create the team's compute quota (POST /clusters/{tag}/compute-quotas) "
                "or name a team that has one",
                details=[{"field": "team", "message": f"LocalQueue {queue} does not exist in {namespace}"}],
            )
        if not facts.cluster_queue_exists:
            cq = (facts.local_queue.get("spec") or {}).get("clusterQueue")
            raise ValidationFailed(
                f"team {request.team}: LocalQueue {queue} points at ClusterQueue {cq}, which does not exist; Kueue "
                "would never admit the job",
                details=[{"field": "team", "message": f"ClusterQueue {cq} does not exist"}],
            )
    missing = [(f, p, c) for f, p, c in storage_paths(request) if c not in facts.claims]
    if missing:
        field, path, claim = missing[0]
        mount = builders.CLAIM_MOUNTS[claim]
        raise ValidationFailed(
            f"{field} {path}: the storage at {mount} is not available in namespace {namespace} (no "
            f"PersistentVolumeClaim {claim} there; the cluster's claims are in default). Run the job in namespace "
            f"default, or create {claim} in {namespace} first",
            details=[
                {
                    "field": f,
                    "message": f"{builders.CLAIM_MOUNTS[c]} is not mounted in namespace {namespace}",
                    "claim": c,
                }
                for f, _, c in missing
            ],
        )


def workload_of(dyn: Any, job: dict[str, Any]) -> dict[str, Any] | None:
    """The Kueue ``Workload`` owned by ``job`` (Kubernetes ``LIST`` in its namespace), or None (not queued, Kueue
    not installed, or not readable by the view entry)."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    meta = job.get("metadata") or {}
    labels = meta.get("labels") or {}
    if builders.KUEUE_QUEUE not in labels:
        return None
    try:
        resource = dyn.resources.get(api_version=KUEUE_API_VERSION, kind="Workload")
        listed = resource.get(namespace=meta.get("namespace"), _request_timeout=KUBERNETES_READ_SECONDS).to_dict()
    except (ResourceNotFoundError, ApiException):
        return None
    uid = meta.get("uid")
    for item in listed.get("items") or []:
        if any(r.get("uid") == uid for r in (item.get("metadata") or {}).get("ownerReferences") or []):
            return dict(item)
    return None


def admission_problem(workload: dict[str, Any] | None) -> str | None:
    """Why Kueue has not admitted the job (its ``QuotaReserved`` condition's reason and message), or None."""
    if workload is None:
        return None
    conditions = {c.get("type"): c for c in (workload.get("status") or {}).get("conditions") or []}
    if str((conditions.get("Admitted") or {}).get("status")) == "True":
        return None
    reserved = conditions.get("QuotaReserved") or {}
    if str(reserved.get("status")) == "True":
        return None
    queue = (workload.get("spec") or {}).get("queueName")
    text = reserved.get("message") or "waiting for quota"
    return f"Kueue has not admitted the job (queue {queue}): {reserved.get('reason') or 'Pending'}: {text}"
