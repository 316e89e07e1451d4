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

from typing import Any, TypeVar

from botocore.exceptions import ClientError
from pydantic import BaseModel, ConfigDict, Field

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, records, service, views
from instantstart.clusters.autoscaling import recorded_karpenter
from instantstart.clusters.nodes import record_result, writable_cluster
from instantstart.clusters.task_governance import require_task_governance
from instantstart.errors import StageFailed, UpstreamUnavailable
from instantstart.kube.client import dry_run as dry_run  # re-exported (moved down: inference validates with it too)
from instantstart.mlflow.service import connection as mlflow_connection
from instantstart.mlflow.service import job_environment as mlflow_job_environment
from instantstart.models.common import ApiModel, OperationType
from instantstart.models.mlflow import MlflowConnection
from instantstart.models.operation import OperationProgress
from instantstart.models.training_jobs import (
    CreateTrainingJobRequest,
    TrainingJobAccepted,
    TrainingJobRequest,
)
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime
from instantstart.training import admission, builders, rules
from instantstart.training.reads import (
    JOB_KINDS as JOB_KINDS,
)
from instantstart.training.reads import (
    LOG_DEFAULT_TAIL_LINES as LOG_DEFAULT_TAIL_LINES,
)
from instantstart.training.reads import (  # re-exported
    LOG_MAX_BYTES as LOG_MAX_BYTES,
)
from instantstart.training.reads import (
    OPERATION_ANNOTATION as OPERATION_ANNOTATION,
)
from instantstart.training.reads import (
    OPERATOR_JOB_NAME_LABEL as OPERATOR_JOB_NAME_LABEL,
)
from instantstart.training.reads import (
    OPERATOR_RANK_LABEL as OPERATOR_RANK_LABEL,
)
from instantstart.training.reads import (
    _get_job as _get_job,
)
from instantstart.training.reads import (
    _list_kind as _list_kind,
)
from instantstart.training.reads import (
    _not_found as _not_found,
)
from instantstart.training.reads import (
    find_job as find_job,
)
from instantstart.training.reads import (
    read_kubernetes as read_kubernetes,
)
from instantstart.training.views import (
    _ACTIVE as _ACTIVE,
)
from instantstart.training.views import (
    _RAY as _RAY,
)
from instantstart.training.views import (  # re-exported
    _TERMINAL as _TERMINAL,
)
from instantstart.training.views import (
    _age as _age,
)
from instantstart.training.views import (
    _condition as _condition,
)
from instantstart.training.views import (
    _created as _created,
)
from instantstart.training.views import (
    _pod_restarts as _pod_restarts,
)
from instantstart.training.views import (
    _pod_view as _pod_view,
)
from instantstart.training.views import (
    _pods as _pods,
)
from instantstart.training.views import (
    _rank as _rank,
)
from instantstart.training.views import (
    _restarts as _restarts,
)
from instantstart.training.views import (
    _spec_summary as _spec_summary,
)
from instantstart.training.views import (
    _summary as _summary,
)
from instantstart.training.views import (
    get_training_job as get_training_job,
)
from instantstart.training.views import (
    job_status as job_status,
)
from instantstart.training.views import (
    list_training_jobs as list_training_jobs,
)
from instantstart.training.views import (
    training_job_logs as training_job_logs,
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

    Reads EKS ``DescribeAddon`` (training operator; task governance with a team), EC2 ``DescribeInstanceTypes``,
    SageMaker ``DescribeCluster`` (the groups of the instance type), the managed-Karpenter record, and through the
    view entry the job namespace's storage claims and the team's LocalQueue and ClusterQueue.

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``FeatureNotEnabled`` (trainingOperator, or
            taskGovernance for a team).
        ValidationFailed: an unknown instance type, more GPUs per pod or more nodes than the cluster holds (a type
            whose group managed Karpenter scales passes at 0 nodes: it scales from zero), a team without its Kueue
            queue, a storage path whose storage is not in the job's namespace
            (:func:`instantstart.training.admission.check_submission`).
        UpstreamUnavailable: an AWS read failed, or Kubernetes could not be read in time.
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
    karpenter = recorded_karpenter(rt, cluster)
    managed = karpenter.instance_groups if karpenter.enabled else []
    rules.check_nodes_fit(request.nodes, request.instance_type, described, karpenter_groups=managed)
    facts_k8s = read_kubernetes(rt, tag, lambda dyn: admission.read_submission(dyn, request))
    admission.check_submission(tag, request, facts_k8s)
    _, kind = builders.job_kind(request.recipe)
    change = CreateTrainingJobChange(request=request, facts=facts, kueue=bool(request.team))
    op = changes.start_change(rt, cluster, OperationType.CREATE_TRAINING_JOB, change)
    return TrainingJobAccepted(name=request.name, namespace=request.job_namespace, kind=kind, operation=op)


def accepted_training_job(rt: Runtime, request: TrainingJobRequest, operation_id: str) -> TrainingJobAccepted | None:
    """The 202 answer :func:`create_training_job` gave for ``request`` if it started operation ``operation_id`` (None:
    no such operation was written). What a retry with the same ``Idempotency-Key`` answers after the first request's
    invocation died (timed out) having started the operation. Reads the operation record (DynamoDB ``GetItem``)."""
    record = rt.store.get_operation(operation_id)
    if record is None:
        return None
    _, kind = builders.job_kind(request.recipe)
    return TrainingJobAccepted(
        name=request.name, namespace=request.job_namespace, kind=kind, operation=views.operation_view(record)
    )


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


def mlflow_settings(
    conn: MlflowConnection | None, tag: str, request: TrainingJobRequest
) -> tuple[dict[str, str], str | None]:
    """The MLflow environment and the service account of a job's pods: ``({}, None)`` without a connection.

    A job in the connection's namespace gets :func:`instantstart.mlflow.service.job_environment` (tracking URI = ARN,
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
