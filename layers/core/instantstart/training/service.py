"""Training jobs: the API side (create, list, get, logs, delete) and the day-2 changes that apply and delete them.

Writes are operations: the API function's Kubernetes access entry is read-only (``AmazonEKSViewPolicy``), so
``POST`` checks the rules (:mod:`instantstart.training.rules`), then starts a ``CREATE_TRAINING_JOB`` change whose
steps (cluster admin) create the namespace when missing, build the job (:mod:`instantstart.training.builders`),
validate it with a server-side dry run (the served CRD's schema: nothing is stored if it is refused) and apply it;
the check is done once the job is read back from Kubernetes. ``DELETE`` is a ``DELETE_TRAINING_JOB`` change:
delete (foreground: the pods go first), done when the job is gone. With a MLflow connection the job's pods get its
environment and service account (:func:`mlflow_settings`). Reads go through the API role's view entry
within :data:`KUBERNETES_READ_BUDGET_SECONDS` (a failure is a 503 naming the reason, never a 500).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from typing import Any, TypeVar

from botocore.exceptions import ClientError
from pydantic import BaseModel, ConfigDict, Field

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, records, service
from instantstart.clusters.nodes import record_result, writable_cluster
from instantstart.clusters.page_tokens import Position, open_token, seal
from instantstart.clusters.task_governance import require_task_governance
from instantstart.errors import NotFound, StageFailed, UpstreamUnavailable
from instantstart.features.observe import KUBERNETES_READ_BUDGET_SECONDS, KUBERNETES_READ_SECONDS, kubernetes_failure
from instantstart.mlflow import connection as mlflow_connection
from instantstart.mlflow import job_environment as mlflow_job_environment
from instantstart.models.common import ApiModel, OperationType
from instantstart.models.mlflow import MlflowConnection
from instantstart.models.operation import OperationProgress
from instantstart.models.training_jobs import (
    LIST_DEFAULT_PAGE_SIZE,
    LIST_MAX_PAGE_SIZE,
    CreateTrainingJobRequest,
    JobCondition,
    JobPod,
    TrainingJobAccepted,
    TrainingJobList,
    TrainingJobLogs,
    TrainingJobRequest,
    TrainingJobStatus,
    TrainingJobSummary,
    TrainingJobView,
)
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime
from instantstart.training import builders, rules

LOG_MAX_BYTES = 256 * 1024
"""Most bytes of log text one answer carries (the tail is kept)."""
LOG_DEFAULT_TAIL_LINES = 1000
"""Lines of log read when neither tailLines nor sinceSeconds is given."""
OPERATOR_JOB_NAME_LABEL = "sagemaker.amazonaws.com/job-name"
"""The label the HyperPod training operator puts on a job's pods (the job's name)."""
OPERATOR_RANK_LABEL = "sagemaker.amazonaws.com/rank"
"""The label the HyperPod training operator puts on a job's pods (the pod's rank, 0 first)."""
OPERATION_ANNOTATION = "instantstart/operation-id"
"""Annotation naming the operation that created a job (a redelivered apply recognises its own job)."""
JOB_KINDS = (
    (builders.PYTORCH_JOB_API_VERSION, builders.PYTORCH_JOB_KIND),
    (builders.RAY_JOB_API_VERSION, builders.RAY_JOB_KIND),
)


class CreateTrainingJobChange(BaseModel):
    """``change`` of a CREATE_TRAINING_JOB operation: the request, EC2's facts of its instance type, Kueue or not."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    request: CreateTrainingJobRequest = Field(description="The POST body, as accepted (stored camelCase).")
    facts: builders.InstanceFacts = Field(description="EC2 DescribeInstanceTypes facts of the job's instance type.")
    kueue: bool = Field(default=False, description="The job is queued through task governance (a team was named).")


class DeleteTrainingJobChange(ApiModel):
    """``change`` of a DELETE_TRAINING_JOB operation: the job's object as the lookup found it (stored camelCase)."""

    name: str
    namespace: str
    api_version: str
    kind: str


T = TypeVar("T")


# -- API side: create and delete -------------------------------------------------------------------------------------
def create_training_job(rt: Runtime, tag: str, request: TrainingJobRequest) -> TrainingJobAccepted:
    """Check the rules, then start the ``CREATE_TRAINING_JOB`` change; the 202 answer names the job and operation.

    Reads EKS ``DescribeAddon`` (training operator; task governance with a team), EC2 ``DescribeInstanceTypes``
    and SageMaker ``DescribeCluster`` (the groups of the instance type).

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``FeatureNotEnabled`` (trainingOperator, or
            taskGovernance for a team).
        ValidationFailed: an unknown instance type, more GPUs per pod or more nodes than the cluster holds.
        UpstreamUnavailable: an AWS read failed.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    eks_name = records.eks_name(rt, tag)
    if request.recipe != "verl":
        rules.require_training_operator(rt.client("eks"), tag, eks_name)
    if request.team:
        require_task_governance(rt, tag, eks_name)
    facts = rules.instance_facts(rt.client("ec2"), request.instance_type)
    rules.check_gpus_fit(getattr(request, "nproc_per_node", None), facts)
    try:
        described = rt.client("sagemaker").describe_cluster(ClusterName=records.hyperpod_name(rt, tag))
    except ClientError as exc:
        raise UpstreamUnavailable(
            f"SageMaker DescribeCluster failed ({error_code(exc)}: {error_message(exc)})"
        ) from exc
    rules.check_nodes_fit(request.nodes, request.instance_type, described)
    _, kind = builders.job_kind(request.recipe)
    change = CreateTrainingJobChange(request=request, facts=facts, kueue=bool(request.team))
    op = changes.start_change(rt, cluster, OperationType.CREATE_TRAINING_JOB, change)
    return TrainingJobAccepted(name=request.name, namespace=request.job_namespace, kind=kind, operation=op)


def delete_training_job(rt: Runtime, tag: str, name: str, namespace: str) -> TrainingJobAccepted:
    """Start the ``DELETE_TRAINING_JOB`` change of job ``name`` (its pods and ConfigMap go with it).

    The job is looked up through the view entry first: absent → 404.

    Raises:
        NotFound: ``ClusterNotFound``, ``TrainingJobNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    job = find_job(rt, tag, name, namespace)
    change = DeleteTrainingJobChange(
        name=name, namespace=namespace, api_version=str(job["apiVersion"]), kind=str(job["kind"])
    )
    op = changes.start_change(rt, cluster, OperationType.DELETE_TRAINING_JOB, change)
    return TrainingJobAccepted(name=name, namespace=namespace, kind=str(job["kind"]), operation=op)


# -- the changes -----------------------------------------------------------------------------------------------------
def _admin(rt: Runtime, tag: str) -> Any:
    from instantstart.kube import client as kube

    return kube.connect(records.eks_name(rt, tag), rt.region)


def _claims(dyn: Any, namespace: str) -> frozenset[str]:
    from instantstart.kube import client as kube

    found = {
        claim
        for claim in (builders.S3_CLAIM, builders.FSX_CLAIM)
        if kube.get(dyn, "v1", "PersistentVolumeClaim", claim, namespace) is not None
    }
    return frozenset(found)


def _ensure_namespace(dyn: Any, namespace: str) -> bool:
    from instantstart.kube import client as kube

    if kube.get(dyn, "v1", "Namespace", namespace) is not None:
        return False
    kube.apply(dyn, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return True


def dry_run(dyn: Any, obj: dict[str, Any]) -> None:
    """Server-side apply with ``dryRun=All``: the API server validates ``obj`` against its schema (the CRD's
    openAPIV3Schema for a custom resource) and stores nothing."""
    from instantstart.kube.client import FIELD_MANAGER

    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    dyn.server_side_apply(
        resource,
        body=obj,
        namespace=obj["metadata"].get("namespace"),
        field_manager=FIELD_MANAGER,
        force_conflicts=True,
        dry_run="All",
    )


def mlflow_settings(
    conn: MlflowConnection | None, tag: str, request: TrainingJobRequest
) -> tuple[dict[str, str], str | None]:
    """The MLflow environment and the service account of a job's pods: ``({}, None)`` without a connection.

    A job in the connection's namespace gets :func:`instantstart.mlflow.job_environment` (tracking URI = the ARN,
    ``MLFLOW_EXPERIMENT_NAME`` = the cluster tag, ``INSTANTSTART_JOB_NAME``) and runs as the connection's service
    account (``instantstart-mlflow``), whose EKS Pod Identity association gives the AWS credentials to log. A job in
    another namespace gets neither: a pod can only run as a service account of its own namespace and the association
    names one namespace, so the pods would have no credentials for MLflow; the job's namespace is the user's choice
    (a team's jobs must run in ``hyperpod-ns-<team>`` for Kueue) and is never moved. Connect MLflow for that
    namespace (``PUT /clusters/{clusterTag}/mlflow`` with ``namespace``) to log from it.
    """
    if conn is None or conn.namespace != request.job_namespace:
        return {}, None
    return mlflow_job_environment(conn, tag, request.name), conn.service_account_name


def apply_create(rt: Runtime, p: StepPayload) -> StepResult:
    """Create the namespace when missing, build the job with the claims present in it, dry-run, then apply.

    A job of that name created by another operation (or by someone else) is never overwritten.

    Raises:
        StageFailed: ``TrainingJobExists``; Kubernetes refusals (the schema's message) leave named
            ``Kubernetes<Reason>`` and fail the operation verbatim.
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, CreateTrainingJobChange)
    request, facts = change.request, change.facts
    dyn = _admin(rt, p.cluster_tag)
    namespace = request.job_namespace
    created_ns = _ensure_namespace(dyn, namespace)
    mlflow_env, service_account = mlflow_settings(mlflow_connection(rt, p.cluster_tag), p.cluster_tag, request)
    ctx = builders.BuildContext(
        facts=facts,
        claims=_claims(dyn, namespace),
        kueue=change.kueue,
        mlflow_env=mlflow_env,
        service_account=service_account,
    )
    built = builders.build(request, ctx)
    for obj in (*built.extra, built.job):
        obj["metadata"].setdefault("annotations", {})[OPERATION_ANNOTATION] = op.operation_id
    existing = kube.get(dyn, built.job["apiVersion"], built.kind, request.name, namespace)
    if existing is not None:
        owner = ((existing.get("metadata") or {}).get("annotations") or {}).get(OPERATION_ANNOTATION)
        if owner != op.operation_id:
            raise StageFailed(
                "TrainingJobExists", f"{built.kind} {namespace}/{request.name} already exists; delete it or pick a name"
            )
        return StepResult(status=f"{built.kind} {namespace}/{request.name} already applied")
    for obj in (*built.extra, built.job):
        dry_run(dyn, obj)
    for obj in (*built.extra, built.job):
        kube.apply(dyn, obj)
    note = f"namespace {namespace} created; " if created_ns else ""
    note += f"MLflow as serviceAccount {service_account}; " if service_account else ""
    observed = (
        f"{note}{built.kind} {namespace}/{request.name} applied (claims: {', '.join(sorted(ctx.claims)) or 'none'})"
    )
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def check_create(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the job is read back from Kubernetes (the operator runs it from there: follow it with GET)."""
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, CreateTrainingJobChange)
    request = change.request
    api_version, kind = builders.job_kind(request.recipe)
    found = kube.get(_admin(rt, p.cluster_tag), api_version, kind, request.name, request.job_namespace)
    if found is None:
        return PollResult(done=False, status=f"{kind} {request.name} not visible yet")
    status = job_status(found).value
    record_result(rt, op, OperationProgress(observed=f"{kind} {request.job_namespace}/{request.name} {status}"))
    return PollResult(done=True, status=status)


def apply_delete(rt: Runtime, p: StepPayload) -> StepResult:
    """Delete the job (propagation ``Foreground``: its pods are deleted first) and its ConfigMap."""
    from kubernetes.dynamic.exceptions import NotFoundError

    op, change = changes.operation_change(rt, p, DeleteTrainingJobChange)
    dyn = _admin(rt, p.cluster_tag)
    resource = dyn.resources.get(api_version=change.api_version, kind=change.kind)
    where = f"{change.kind} {change.namespace}/{change.name}"
    try:
        resource.delete(name=change.name, namespace=change.namespace, body={"propagationPolicy": "Foreground"})
        observed = f"{where} deleting"
    except NotFoundError:
        observed = f"{where} already gone"
    from instantstart.kube import client as kube

    kube.delete(dyn, "v1", "ConfigMap", f"{change.name}-config", change.namespace)
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed)


def check_delete(rt: Runtime, p: StepPayload) -> PollResult:
    """Done when the job is gone."""
    from instantstart.kube import client as kube

    _, change = changes.operation_change(rt, p, DeleteTrainingJobChange)
    found = kube.get(_admin(rt, p.cluster_tag), change.api_version, change.kind, change.name, change.namespace)
    return PollResult(done=found is None, status="gone" if found is None else "deleting")


CHANGES = {
    OperationType.CREATE_TRAINING_JOB: changes.ClusterChange(apply=apply_create, check=check_create),
    OperationType.DELETE_TRAINING_JOB: changes.ClusterChange(apply=apply_delete, check=check_delete),
}
"""The update workflow's handlers of training jobs, by operation type."""


# -- reads through the API's view entry -------------------------------------------------------------------------------
def read_kubernetes(rt: Runtime, tag: str, read: Any) -> Any:
    """Run ``read(dyn)`` against the cluster's Kubernetes API as the API role, within the read budget.

    Raises:
        UpstreamUnavailable: no connection, a refusal (401/403: the access entry) or no answer in time.
    """
    from instantstart.kube import client as kube

    name = records.eks_name(rt, tag)

    def run() -> Any:
        dyn = kube.connect(name, rt.region, timeout=KUBERNETES_READ_SECONDS)
        return read(dyn)

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kube-read")
    try:
        return pool.submit(run).result(timeout=KUBERNETES_READ_BUDGET_SECONDS)
    except FutureTimeout as exc:
        raise UpstreamUnavailable(
            f"no answer from the Kubernetes API of cluster '{tag}' within {KUBERNETES_READ_BUDGET_SECONDS:g} s"
        ) from exc
    except (NotFound, UpstreamUnavailable):
        raise
    except Exception as exc:
        raise UpstreamUnavailable(f"reading Kubernetes of cluster '{tag}' failed: {kubernetes_failure(exc)}") from exc
    finally:
        pool.shutdown(wait=False)


def _list_kind(
    dyn: Any, api_version: str, kind: str, namespace: str | None = None, selector: str | None = None
) -> list[dict[str, Any]]:
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    from instantstart.kube import client as kube

    try:
        return kube.list_objects(dyn, api_version, kind, namespace, selector, timeout=KUBERNETES_READ_SECONDS)
    except ResourceNotFoundError:  # the kind is not served (operator not installed): no such jobs
        return []


def _get_job(dyn: Any, name: str, namespace: str) -> dict[str, Any] | None:
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    for api_version, kind in JOB_KINDS:
        try:
            resource = dyn.resources.get(api_version=api_version, kind=kind)
            return dict(
                resource.get(name=name, namespace=namespace, _request_timeout=KUBERNETES_READ_SECONDS).to_dict()
            )
        except (NotFoundError, ResourceNotFoundError):
            continue
    return None


def _not_found(tag: str, name: str, namespace: str) -> NotFound:
    return NotFound(
        f"training job {namespace}/{name} does not exist on cluster '{tag}'",
        code="TrainingJobNotFound",
        details=[{"field": "name", "namespace": namespace}],
    )


def find_job(rt: Runtime, tag: str, name: str, namespace: str) -> dict[str, Any]:
    """The custom resource of job ``namespace/name`` (a HyperPodPyTorchJob or a RayJob), read through the API role's
    view entry within the read budget.

    Raises:
        NotFound: ``TrainingJobNotFound`` naming the job and its namespace.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    job = read_kubernetes(rt, tag, lambda dyn: _get_job(dyn, name, namespace))
    if job is None:
        raise _not_found(tag, name, namespace)
    return dict(job)


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
    now = datetime.now(UTC)
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
    return JobPod(
        name=str((pod.get("metadata") or {}).get("name")),
        node_name=(pod.get("spec") or {}).get("nodeName"),
        phase=(pod.get("status") or {}).get("phase"),
        restarts=_pod_restarts(pod),
        rank=_rank(pod),
    )


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
    """The job's spec summary, status, conditions, restart history and pods.

    Raises:
        NotFound: ``ClusterNotFound``, ``TrainingJobNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    records.live_cluster(rt, tag)

    def read(dyn: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        job = _get_job(dyn, name, namespace)
        return job, (_pods(dyn, job) if job else [])

    job, pods = read_kubernetes(rt, tag, read)
    if job is None:
        raise _not_found(tag, name, namespace)
    summary = _summary(job, datetime.now(UTC))
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
