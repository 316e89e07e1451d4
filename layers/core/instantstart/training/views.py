"""The reads of training jobs: a job's status, the list, one job with its pods and conditions, its logs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from instantstart.clusters import records
from instantstart.clusters.page_tokens import Position, open_token, seal
from instantstart.errors import NotFound
from instantstart.kube.pod_problems import pod_problem, pod_problems, summary
from instantstart.kube.reads import KUBERNETES_READ_SECONDS
from instantstart.models.common import utcnow
from instantstart.models.training_jobs import (
    LIST_DEFAULT_PAGE_SIZE,
    LIST_MAX_PAGE_SIZE,
    JobCondition,
    JobPod,
    TrainingJobList,
    TrainingJobLogs,
    TrainingJobStatus,
    TrainingJobSummary,
    TrainingJobView,
)
from instantstart.runtime import Runtime
from instantstart.training import builders
from instantstart.training.admission import admission_problem, workload_of
from instantstart.training.reads import (
    JOB_KINDS,
    LOG_DEFAULT_TAIL_LINES,
    LOG_MAX_BYTES,
    OPERATOR_JOB_NAME_LABEL,
    OPERATOR_RANK_LABEL,
    _get_job,
    _list_kind,
    _not_found,
    read_kubernetes,
)

_TERMINAL = {
    "Succeeded": TrainingJobStatus.SUCCEEDED,
    "Completed": TrainingJobStatus.SUCCEEDED,
    "Failed": TrainingJobStatus.FAILED,
}
_ACTIVE = {
    "Restarting": TrainingJobStatus.RESTARTING,
    "Running": TrainingJobStatus.RUNNING,
    "PodsRunning": TrainingJobStatus.RUNNING,
    "Created": TrainingJobStatus.PENDING,
    "Pending": TrainingJobStatus.PENDING,
    "Suspended": TrainingJobStatus.PENDING,
}
_RAY = {
    "SUCCEEDED": TrainingJobStatus.SUCCEEDED,
    "FAILED": TrainingJobStatus.FAILED,
    "STOPPED": TrainingJobStatus.FAILED,
    "RUNNING": TrainingJobStatus.RUNNING,
    "PENDING": TrainingJobStatus.PENDING,
}


def job_status(job: dict[str, Any]) -> TrainingJobStatus:
    """The status of a job from its custom resource (pure).

    HyperPodPyTorchJob: a True ``Succeeded``/``Completed``/``Failed`` condition wins; else the newest True condition
    among ``Restarting``, ``Running``/``PodsRunning``, ``Created``/``Pending``; no status yet → Pending. RayJob:
    ``status.jobStatus`` (SUCCEEDED, FAILED, STOPPED → Failed, RUNNING, PENDING), and a ``jobDeploymentStatus`` of
    Failed → Failed.
    """
    status = job.get("status") or {}
    if job.get("kind") == builders.RAY_JOB_KIND:
        if str(status.get("jobDeploymentStatus") or "") in ("Failed", "ValidationFailed"):
            return TrainingJobStatus.FAILED
        return _RAY.get(str(status.get("jobStatus") or "PENDING"), TrainingJobStatus.UNKNOWN)
    true_conditions = [c for c in status.get("conditions") or [] if str(c.get("status")) == "True"]
    for cond in true_conditions:
        if cond.get("type") in _TERMINAL:
            return _TERMINAL[str(cond["type"])]
    active = [c for c in true_conditions if c.get("type") in _ACTIVE]
    if active:
        newest = max(active, key=lambda c: str(c.get("lastTransitionTime") or ""))
        return _ACTIVE[str(newest["type"])]
    return TrainingJobStatus.PENDING if not true_conditions else TrainingJobStatus.UNKNOWN


def _restarts(job: dict[str, Any], pods: list[dict[str, Any]] | None = None) -> int:
    """Restarts of a job: the HyperPod training operator's ``status.restartCount`` (every pod-level and full-job
    restart of the job's lifetime; ``restartStatus`` holds only the current ``evalPeriodSeconds`` window), else the
    pods' container restarts summed (a RayJob has no such count)."""
    status = job.get("status") or {}
    for key in ("restartCount", "restarts", "jobRestartCount"):
        if isinstance(status.get(key), int):
            return int(status[key])
    if pods:
        return sum(_pod_restarts(p) for p in pods)
    return 0


def _pod_restarts(pod: dict[str, Any]) -> int:
    """The kubelet's ``status.containerStatuses[].restartCount`` summed: restarts of this pod's containers in place
    (a pod the operator replaced on another node is a new pod and starts at 0)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def _created(job: dict[str, Any]) -> str | None:
    value = (job.get("metadata") or {}).get("creationTimestamp")
    return str(value) if value else None


def _age(created: str | None, now: datetime) -> int | None:
    if not created:
        return None
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(int((now - when).total_seconds()), 0)


def _summary(job: dict[str, Any], now: datetime) -> TrainingJobSummary:
    meta = job.get("metadata") or {}
    created = _created(job)
    return TrainingJobSummary(
        name=str(meta.get("name")),
        namespace=str(meta.get("namespace") or "default"),
        kind=str(job.get("kind")),
        recipe=(meta.get("labels") or {}).get(builders.LABEL_RECIPE),
        status=job_status(job),
        restarts=_restarts(job),
        created_at=created,
        age_seconds=_age(created, now),
    )


def list_training_jobs(
    rt: Runtime,
    tag: str,
    *,
    namespace: str | None = None,
    max_results: int = LIST_DEFAULT_PAGE_SIZE,
    next_token: str | None = None,
) -> TrainingJobList:
    """A page of the cluster's HyperPodPyTorchJobs and RayJobs (every namespace, or one), newest first.

    Raises:
        NotFound: ``ClusterNotFound``.
        InvalidRequest: a ``nextToken`` not from this listing.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = records.live_cluster(rt, tag)
    listing = {"tag": tag, "generation": cluster.generation, "namespace": namespace}
    start = (
        open_token("training-jobs", next_token, listing, max_page_size=LIST_MAX_PAGE_SIZE)
        if next_token
        else Position(sagemaker_token=None, page_size=max_results)
    )

    def read(dyn: Any) -> list[dict[str, Any]]:
        return [job for api_version, kind in JOB_KINDS for job in _list_kind(dyn, api_version, kind, namespace)]

    jobs: list[dict[str, Any]] = read_kubernetes(rt, tag, read)
    jobs.sort(key=lambda j: (_created(j) or "", (j.get("metadata") or {}).get("name", "")), reverse=True)
    offset = start.consumed
    page = jobs[offset : offset + max_results]
    now = utcnow()  # the clock the cluster's timestamps come from (an emulator's, when one is installed)
    token = None
    if offset + max_results < len(jobs):
        last = (page[-1].get("metadata") or {}).get("name") if page else None
        token = seal("training-jobs", listing, Position(None, max_results, offset + max_results, last))
    return TrainingJobList(training_jobs=[_summary(j, now) for j in page], next_token=token)


def _pods(dyn: Any, job: dict[str, Any]) -> list[dict[str, Any]]:
    meta = job.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if job.get("kind") == builders.RAY_JOB_KIND:
        cluster = (job.get("status") or {}).get("rayClusterName")
        if not cluster:
            return []
        return _list_kind(dyn, "v1", "Pod", namespace, f"ray.io/cluster={cluster}")
    ours = _list_kind(dyn, "v1", "Pod", namespace, f"{builders.LABEL_JOB}={name}")
    # Pods carry the template's labels (ours); a job created elsewhere is found by the operator's job-name label.
    return ours or _list_kind(dyn, "v1", "Pod", namespace, f"{OPERATOR_JOB_NAME_LABEL}={name}")


def _rank(pod: dict[str, Any]) -> int | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for key in (
        OPERATOR_RANK_LABEL,
        "training.kubeflow.org/replica-index",
        "sagemaker.amazonaws.com/replica-index",
        "replica-index",
    ):
        if str(labels.get(key, "")).isdigit():
            return int(labels[key])
    node_type = labels.get("ray.io/node-type")
    if node_type == "head":
        return 0
    tail = str((pod.get("metadata") or {}).get("name", "")).rsplit("-", 1)[-1]
    if not tail.isdigit():
        return None
    # a Ray worker's index counts after the head (rank 0): worker-0 is rank 1
    return int(tail) + 1 if node_type == "worker" else int(tail)


def _pod_view(pod: dict[str, Any]) -> JobPod:
    problem = pod_problem(pod)
    return JobPod(
        name=str((pod.get("metadata") or {}).get("name")),
        node_name=(pod.get("spec") or {}).get("nodeName"),
        phase=(pod.get("status") or {}).get("phase"),
        restarts=_pod_restarts(pod),
        rank=_rank(pod),
        reason=problem.reason if problem else None,
        message=problem.message if problem else None,
    )


def waiting_reason(job: dict[str, Any], workload: dict[str, Any] | None, pods: list[dict[str, Any]]) -> str | None:
    """Why a job that has not ended does not run (pure): Kueue has not admitted it (its Workload's message), else
    the first pod problem (:mod:`instantstart.kube.pod_problems`: an image pull failure with the kubelet's message,
    unschedulable with the scheduler's, a container that cannot start), else None."""
    if job_status(job) in (TrainingJobStatus.SUCCEEDED, TrainingJobStatus.FAILED):
        return None
    return admission_problem(workload) or summary(pod_problems(pods))


def _condition(c: dict[str, Any]) -> JobCondition:
    return JobCondition(
        type=str(c.get("type")),
        status=str(c.get("status")),
        reason=c.get("reason"),
        message=c.get("message"),
        last_transition_time=str(c["lastTransitionTime"]) if c.get("lastTransitionTime") else None,
    )


def _spec_summary(job: dict[str, Any]) -> dict[str, Any]:
    spec = job.get("spec") or {}
    if job.get("kind") == builders.RAY_JOB_KIND:
        workers = (spec.get("rayClusterSpec") or {}).get("workerGroupSpecs") or [{}]
        head = ((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}
        containers = (head.get("spec") or {}).get("containers") or [{}]
        return {
            "nodes": 1 + int(workers[0].get("replicas") or 0),
            "image": containers[0].get("image"),
            "entrypoint": spec.get("entrypoint"),
            "shutdownAfterJobFinishes": spec.get("shutdownAfterJobFinishes"),
            "ttlSecondsAfterFinished": spec.get("ttlSecondsAfterFinished"),
        }
    replicas = (spec.get("replicaSpecs") or [{}])[0]
    pod = (replicas.get("template") or {}).get("spec") or {}
    container = (pod.get("containers") or [{}])[0]
    terms = (
        ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms") or [{}]
    instance_type = next(
        (
            e["values"][0]
            for e in terms[0].get("matchExpressions") or []
            if e.get("key") == builders.INSTANCE_TYPE_LABEL
        ),
        None,
    )
    return {
        "instanceType": instance_type,
        "nodes": replicas.get("replicas"),
        "nprocPerNode": spec.get("nprocPerNode"),
        "image": container.get("image"),
        "command": container.get("command"),
        "resources": container.get("resources"),
        "runPolicy": spec.get("runPolicy"),
    }


def get_training_job(rt: Runtime, tag: str, name: str, namespace: str) -> TrainingJobView:
    """The job's spec summary, status, conditions, restart history and pods, and ``reason``: why it Failed, or why
    it does not run yet (:func:`waiting_reason`), as soon as Kubernetes reports it.

    Raises:
        NotFound: ``ClusterNotFound``, ``TrainingJobNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    records.live_cluster(rt, tag)

    def read(dyn: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]], dict[str, Any] | None]:
        job = _get_job(dyn, name, namespace)
        return job, (_pods(dyn, job) if job else []), (workload_of(dyn, job) if job else None)

    job, pods, workload = read_kubernetes(rt, tag, read)
    if job is None:
        raise _not_found(tag, name, namespace)
    summary = _summary(job, utcnow())
    conditions = [_condition(c) for c in (job.get("status") or {}).get("conditions") or []]
    history = sorted(
        (c for c in conditions if c.type in ("Restarting", "Failed") or "restart" in (c.reason or "").lower()),
        key=lambda c: c.last_transition_time or "",
    )
    status = job.get("status") or {}
    reason = None
    if summary.status is TrainingJobStatus.FAILED:
        failed = [c for c in conditions if c.type == "Failed" and c.status == "True"]
        reason = (failed[-1].message or failed[-1].reason) if failed else status.get("message") or status.get("reason")
    else:
        reason = waiting_reason(job, workload, pods)
    pod_views = sorted((_pod_view(p) for p in pods), key=lambda v: (v.rank if v.rank is not None else 1 << 30, v.name))
    return TrainingJobView(
        name=summary.name,
        namespace=summary.namespace,
        kind=summary.kind,
        recipe=summary.recipe,
        status=summary.status,
        restarts=_restarts(job, pods),
        created_at=summary.created_at,
        age_seconds=summary.age_seconds,
        spec=_spec_summary(job),
        conditions=conditions,
        restart_history=history,
        pods=pod_views,
        reason=reason,
    )


def training_job_logs(
    rt: Runtime,
    tag: str,
    name: str,
    namespace: str,
    *,
    pod: str | None = None,
    container: str | None = None,
    tail_lines: int | None = None,
    since_seconds: int | None = None,
    max_bytes: int = LOG_MAX_BYTES,
) -> TrainingJobLogs:
    """Log text of one pod of the job: ``pod``, else rank 0 (``limitBytes`` bounds it; the tail is kept).

    Raises:
        NotFound: ``ClusterNotFound``, ``TrainingJobNotFound``, ``PodNotFound`` (a pod not of this job, or none yet).
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    records.live_cluster(rt, tag)

    def read(dyn: Any) -> tuple[str, str]:
        from kubernetes import client as k8s

        job = _get_job(dyn, name, namespace)
        if job is None:
            raise _not_found(tag, name, namespace)
        views = sorted(
            (_pod_view(p) for p in _pods(dyn, job)), key=lambda v: (v.rank if v.rank is not None else 1 << 30, v.name)
        )
        names = [v.name for v in views]
        chosen = pod or (names[0] if names else None)
        if chosen is None or chosen not in names:
            raise NotFound(
                f"pod {chosen} is not a pod of training job {namespace}/{name}"
                if chosen
                else f"training job {namespace}/{name} has no pods yet",
                code="PodNotFound",
                details=[{"field": "pod", "allowed": names}],
            )
        # limitBytes keeps the head of the selection: the lines are selected by tailLines (default
        # LOG_DEFAULT_TAIL_LINES) and the tail of what came is kept here; limitBytes only caps memory.
        kwargs: dict[str, Any] = {"limit_bytes": 8 * max_bytes, "_request_timeout": KUBERNETES_READ_SECONDS}
        if container:
            kwargs["container"] = container
        if tail_lines is not None or since_seconds is None:
            kwargs["tail_lines"] = tail_lines if tail_lines is not None else LOG_DEFAULT_TAIL_LINES
        if since_seconds is not None:
            kwargs["since_seconds"] = since_seconds
        text = k8s.CoreV1Api(dyn.client).read_namespaced_pod_log(chosen, namespace, **kwargs)
        return chosen, str(text or "")

    chosen, text = read_kubernetes(rt, tag, read)
    truncated = len(text.encode()) > max_bytes
    if truncated:
        text = text.encode()[-max_bytes:].decode(errors="ignore")
    return TrainingJobLogs(pod=chosen, container=container, text=text, truncated=truncated)
