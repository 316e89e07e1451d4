"""Model downloads and self-managed inference: the API side, the day-2 changes and the reads.

Writes are operations (the API function's Kubernetes access entry is view-only): ``POST /models`` checks the
destination (fsx: claim ``fsx-claim`` present, else 409 naming ``fsx``) and starts ``DOWNLOAD_MODEL``, whose steps
(cluster admin) check the token Secret exists, dry-run and apply the Job (:func:`builders.download_job`), then wait
for the Job's completion while recording the bytes and files under the model's prefix (S3 ``ListObjectsV2``).
``POST /inference/deployments`` checks the instance type against the cluster's groups (SageMaker
``DescribeCluster``) and its GPUs (EC2 ``DescribeInstanceTypes``), then ``CREATE_INFERENCE_DEPLOYMENT`` dry-runs and
applies the Deployment and Service. ``PATCH`` (scale) refuses a scale-in that would remove a pod serving a bound
model (:func:`rules.check_scale_in`); its ``UPDATE_INFERENCE_DEPLOYMENT`` sets every pod's
``controller.kubernetes.io/pod-deletion-cost`` from its assignment (idle lower than bound) before it changes
``spec.replicas``. ``DELETE`` removes the Deployment, Service and router objects. ``POST .../router`` applies the
SGLang router (and a KEDA ``ScaledObject`` when asked, 409 when KEDA's CRD is not served).

Reads (deployments, pods, claims, API discovery) go through the API role's view entry within the features' read
budget (:func:`instantstart.clusters.kube_reads.read_kubernetes`); the model list reads the bucket: ``models/`` and
``fsx/models/``, where the fsx feature's data repository association exports the file system's ``/models``.
"""

from __future__ import annotations

from typing import Any

from instantstart.clusters import changes, service
from instantstart.clusters.kube_reads import read_kubernetes
from instantstart.clusters.nodes import record_result, writable_cluster
from instantstart.errors import Conflict, StageFailed
from instantstart.inference import builders, rules
from instantstart.inference.cluster_access import (  # re-exported
    OPERATION_ANNOTATION as OPERATION_ANNOTATION,
)
from instantstart.inference.cluster_access import (
    CreateDeploymentChange as CreateDeploymentChange,
)
from instantstart.inference.cluster_access import (
    DeleteDeploymentChange as DeleteDeploymentChange,
)
from instantstart.inference.cluster_access import (
    DownloadModelChange as DownloadModelChange,
)
from instantstart.inference.cluster_access import (
    RouterChange as RouterChange,
)
from instantstart.inference.cluster_access import (
    ScaleDeploymentChange as ScaleDeploymentChange,
)
from instantstart.inference.cluster_access import (
    _admin as _admin,
)
from instantstart.inference.cluster_access import (
    _describe_cluster as _describe_cluster,
)
from instantstart.inference.cluster_access import (
    _keda_served as _keda_served,
)
from instantstart.inference.cluster_access import (
    _list as _list,
)
from instantstart.inference.cluster_access import (
    _pods_of as _pods_of,
)
from instantstart.inference.cluster_access import (
    _require_fsx_claim as _require_fsx_claim,
)
from instantstart.inference.cluster_access import (
    cluster_bucket as cluster_bucket,
)
from instantstart.inference.cluster_access import (
    deployment_not_found as deployment_not_found,
)
from instantstart.inference.cluster_access import (
    get_object as get_object,
)
from instantstart.inference.cluster_access import (
    made_here as made_here,
)
from instantstart.inference.deployment_views import (
    _pod_view as _pod_view,
)
from instantstart.inference.deployment_views import (
    _service_view as _service_view,
)
from instantstart.inference.deployment_views import (
    _summary as _summary,
)
from instantstart.inference.deployment_views import (
    deployment_status as deployment_status,
)
from instantstart.inference.deployment_views import (
    get_deployment as get_deployment,
)
from instantstart.inference.deployment_views import (
    list_deployments as list_deployments,
)
from instantstart.inference.deployment_views import (  # re-exported
    stored_spec as stored_spec,
)
from instantstart.inference.downloads import (
    _job_state as _job_state,
)
from instantstart.inference.downloads import (
    _level as _level,
)
from instantstart.inference.downloads import (
    _prefix_usage as _prefix_usage,
)
from instantstart.inference.downloads import (
    _stored as _stored,
)
from instantstart.inference.downloads import (
    apply_download as apply_download,
)
from instantstart.inference.downloads import (
    check_download as check_download,
)
from instantstart.inference.downloads import (  # re-exported
    download_model as download_model,
)
from instantstart.inference.downloads import (
    fsx_listing as fsx_listing,
)
from instantstart.inference.downloads import (
    list_models as list_models,
)
from instantstart.inference.downloads import (
    model_prefixes as model_prefixes,
)
from instantstart.kube.client import dry_run
from instantstart.models.common import OperationType
from instantstart.models.inference import (
    INFERENCE_NAMESPACE,
    CreateInferenceDeploymentRequest,
    CreateRouterRequest,
    Engine,
    InferenceDeploymentAccepted,
    ScaleInferenceDeploymentRequest,
)
from instantstart.models.operation import OperationProgress
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime
from instantstart.training import rules as training_rules


# -- deployments: API side -------------------------------------------------------------------------------------------
def create_deployment(rt: Runtime, tag: str, request: CreateInferenceDeploymentRequest) -> InferenceDeploymentAccepted:
    """Check the rules, then start the ``CREATE_INFERENCE_DEPLOYMENT`` change.

    Reads SageMaker ``DescribeCluster`` (the groups' instance types), EC2 ``DescribeInstanceTypes`` (GPUs, memory)
    and, through the view entry, the Deployment of that name and (for /fsx paths) ``fsx-claim``.

    Raises:
        NotFound: ``ClusterNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``InferenceDeploymentExists``, ``FeatureNotEnabled``.
        ValidationFailed: ``instanceType`` not in the cluster's groups (allowed values listed), ``gpus`` above the
            type's.
        UpstreamUnavailable: an AWS or Kubernetes read failed.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    rules.check_instance_type(request.instance_type, _describe_cluster(rt, tag))
    facts = training_rules.instance_facts(rt.client("ec2"), request.instance_type)
    rules.check_gpus(request.gpus, request.instance_type, facts.gpus)
    if builders.model_claim(request.model_path) == builders.FSX_CLAIM:
        _require_fsx_claim(rt, tag, "modelPath")
    existing = read_kubernetes(rt, tag, lambda dyn: get_object(dyn, "apps/v1", "Deployment", request.name))
    if existing is not None:
        raise Conflict(
            f"Deployment {INFERENCE_NAMESPACE}/{request.name} already exists on cluster '{tag}'; pick another name or "
            "delete it first",
            code="InferenceDeploymentExists",
            details=[{"field": "name", "value": request.name}],
        )
    change = CreateDeploymentChange(request=request, memory_mib=facts.memory_mib)
    op = changes.start_change(rt, cluster, OperationType.CREATE_INFERENCE_DEPLOYMENT, change)
    return InferenceDeploymentAccepted(name=request.name, namespace=INFERENCE_NAMESPACE, operation=op)


def _find(rt: Runtime, tag: str, name: str, *, pods: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    def read(dyn: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        found = get_object(dyn, "apps/v1", "Deployment", name)
        return found, (_pods_of(dyn, name) if found is not None and pods else [])

    deployment, found_pods = read_kubernetes(rt, tag, read)
    if not made_here(deployment):
        raise deployment_not_found(tag, name)
    return dict(deployment), list(found_pods)


def scale_deployment(
    rt: Runtime, tag: str, name: str, request: ScaleInferenceDeploymentRequest
) -> InferenceDeploymentAccepted:
    """Check the scale-in rule, then start the ``UPDATE_INFERENCE_DEPLOYMENT`` change (deletion costs, replicas).

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``BoundPodsWouldBeRemoved``, ``ScaledByAutoscaler``
            (a KEDA ScaledObject owns the replicas: never fight the autoscaler).
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    _, pods = _find(rt, tag, name, pods=True)
    scaled = read_kubernetes(
        rt,
        tag,
        lambda dyn: get_object(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND, name) if _keda_served(dyn) else None,
    )
    if scaled:
        raise rules.keda_managed(tag, name, scaled)
    rules.check_scale_in(name, request.replicas, pods)
    change = ScaleDeploymentChange(name=name, replicas=request.replicas)
    op = changes.start_change(rt, cluster, OperationType.UPDATE_INFERENCE_DEPLOYMENT, change)
    return InferenceDeploymentAccepted(name=name, namespace=INFERENCE_NAMESPACE, operation=op)


def delete_deployment(rt: Runtime, tag: str, name: str) -> InferenceDeploymentAccepted:
    """Start the ``DELETE_INFERENCE_DEPLOYMENT`` change (Deployment, Service, router, ScaledObject).

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    _find(rt, tag, name)
    op = changes.start_change(rt, cluster, OperationType.DELETE_INFERENCE_DEPLOYMENT, DeleteDeploymentChange(name=name))
    return InferenceDeploymentAccepted(name=name, namespace=INFERENCE_NAMESPACE, operation=op)


def create_router(rt: Runtime, tag: str, name: str, request: CreateRouterRequest) -> InferenceDeploymentAccepted:
    """Check the workers run SGLang and, with autoscaling, that KEDA's ``ScaledObject`` is served; then start the
    ``CREATE_INFERENCE_ROUTER`` change.

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``.
        Conflict: ``ClusterNotReady``, ``OperationInProgress``, ``RouterNeedsSGLang``, ``KedaNotInstalled``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    cluster = writable_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    deployment, _ = _find(rt, tag, name)
    spec = stored_spec(deployment)
    rules.check_router_engine(name, spec.get("engine"))
    if request.autoscaling is not None and not read_kubernetes(rt, tag, _keda_served):
        raise rules.keda_missing(tag)
    port = int(spec.get("port") or builders.ENGINE_PORTS[Engine.SGLANG])
    change = RouterChange(name=name, worker_port=port, request=request)
    op = changes.start_change(rt, cluster, OperationType.CREATE_INFERENCE_ROUTER, change)
    return InferenceDeploymentAccepted(name=name, namespace=INFERENCE_NAMESPACE, operation=op)


# -- deployments: the changes ----------------------------------------------------------------------------------------
def grant_invoke(rt: Runtime, tag: str, dyn: Any) -> None:
    """Let the API function call the deployments' Services (``POST .../invoke``): its access entry lists
    :data:`instantstart.naming.API_KUBERNETES_GROUP` (EKS ``DescribeAccessEntry``/``UpdateAccessEntry`` when
    missing) and the Role/RoleBinding of :func:`builders.invoke_access` are applied (server-side apply, idempotent).
    """
    from instantstart.clusters.stages import access
    from instantstart.kube import client as kube

    access.ensure_api_kubernetes_group(rt, tag)
    for obj in builders.invoke_access():
        kube.apply(dyn, obj)


def apply_create(rt: Runtime, p: StepPayload) -> StepResult:
    """Dry-run, then apply the Deployment and Service; a Deployment of that name not made by this operation is never
    overwritten.

    Raises:
        StageFailed: ``InferenceDeploymentExists``; Kubernetes refusals verbatim.
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, CreateDeploymentChange)
    request = change.request
    dyn = _admin(rt, p.cluster_tag)
    grant_invoke(rt, p.cluster_tag, dyn)
    built = builders.build_deployment(request, memory_mib=change.memory_mib, operation_id=op.operation_id)
    existing = kube.get(dyn, "apps/v1", "Deployment", request.name, INFERENCE_NAMESPACE)
    if existing is not None:
        owner = ((existing.get("metadata") or {}).get("annotations") or {}).get(OPERATION_ANNOTATION)
        if owner != op.operation_id:
            raise StageFailed(
                "InferenceDeploymentExists", f"Deployment {INFERENCE_NAMESPACE}/{request.name} already exists"
            )
        return StepResult(status=f"Deployment {INFERENCE_NAMESPACE}/{request.name} already applied")
    for obj in built.objects:
        dry_run(dyn, obj)
    for obj in built.objects:
        kube.apply(dyn, obj)
    observed = (
        f"Deployment and Service {INFERENCE_NAMESPACE}/{request.name} applied ({request.engine.value}, "
        f"{request.replicas} x {request.gpus} GPU on {request.instance_type}, service {request.service.type})"
    )
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def check_create(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the Deployment and Service are read back (follow readiness with GET)."""
    from instantstart.kube import client as kube

    _, change = changes.operation_change(rt, p, CreateDeploymentChange)
    name = change.request.name
    dyn = _admin(rt, p.cluster_tag)
    found = [kube.get(dyn, v, k, name, INFERENCE_NAMESPACE) for v, k in (("apps/v1", "Deployment"), ("v1", "Service"))]
    done = all(o is not None for o in found)
    return PollResult(done=done, status="applied" if done else "not visible yet")


def _patch(dyn: Any, api_version: str, kind: str, name: str, body: dict[str, Any]) -> None:
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    resource.patch(name=name, namespace=INFERENCE_NAMESPACE, body=body, content_type="application/merge-patch+json")


def apply_scale(rt: Runtime, p: StepPayload) -> StepResult:
    """Set each pod's ``pod-deletion-cost`` from its assignment (bound 1000, idle -1000), check the scale-in rule
    again on what is there now, then set ``spec.replicas``.

    Raises:
        StageFailed: ``InferenceDeploymentNotFound``; ``BoundPodsWouldBeRemoved`` when pods were bound since the API
            checked.
    """
    from kubernetes.dynamic.exceptions import NotFoundError

    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, ScaleDeploymentChange)
    name, replicas = change.name, change.replicas
    dyn = _admin(rt, p.cluster_tag)
    if kube.get(dyn, "apps/v1", "Deployment", name, INFERENCE_NAMESPACE) is None:
        raise StageFailed("InferenceDeploymentNotFound", f"Deployment {INFERENCE_NAMESPACE}/{name} is gone")
    pods = kube.list_objects(
        dyn, "v1", "Pod", INFERENCE_NAMESPACE, f"{builders.LABEL_DEPLOYMENT}={name},{builders.LABEL_ROLE}=worker"
    )
    try:
        rules.check_scale_in(name, replicas, pods)
    except Conflict as exc:
        raise StageFailed(exc.code, exc.message) from exc
    costs = builders.deletion_costs(pods)
    for pod, cost in costs.items():
        try:
            _patch(dyn, "v1", "Pod", pod, {"metadata": {"annotations": {builders.ANNOTATION_DELETION_COST: cost}}})
        except NotFoundError:
            continue
    _patch(dyn, "apps/v1", "Deployment", name, {"spec": {"replicas": replicas}})
    bound = sum(1 for c in costs.values() if c == str(builders.BOUND_COST))
    observed = f"Deployment {name} replicas -> {replicas} ({bound} bound, {len(costs) - bound} idle pods)"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed)


def check_scale(rt: Runtime, p: StepPayload) -> PollResult:
    """Done when the Deployment's controller saw the change and holds ``replicas`` pods (``status.replicas``)."""
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, ScaleDeploymentChange)
    name, replicas = change.name, change.replicas
    found = kube.get(_admin(rt, p.cluster_tag), "apps/v1", "Deployment", name, INFERENCE_NAMESPACE)
    if found is None:
        raise StageFailed("InferenceDeploymentNotFound", f"Deployment {INFERENCE_NAMESPACE}/{name} is gone")
    status = found.get("status") or {}
    seen = int(status.get("observedGeneration") or 0) >= int(found["metadata"].get("generation") or 0)
    have = int(status.get("replicas") or 0)
    observed = f"Deployment {name}: {have} pods, {int(status.get('readyReplicas') or 0)} ready, {replicas} wanted"
    record_result(rt, op, OperationProgress(observed=observed))
    return PollResult(done=seen and have == replicas, status=observed)


def _router_objects(name: str) -> list[tuple[str, str, str]]:
    rname = builders.router_name(name)
    return [
        ("apps/v1", "Deployment", rname),
        ("v1", "Service", rname),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", rname),
        ("rbac.authorization.k8s.io/v1", "Role", rname),
        ("v1", "ServiceAccount", rname),
    ]


def apply_delete(rt: Runtime, p: StepPayload) -> StepResult:
    """Delete the KEDA ScaledObject (when served), the router's objects, the Service and the Deployment (foreground:
    the pods go first)."""
    from kubernetes.dynamic.exceptions import NotFoundError

    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, DeleteDeploymentChange)
    name = change.name
    dyn = _admin(rt, p.cluster_tag)
    gone: list[str] = []
    if _keda_served(dyn) and kube.delete(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND, name, INFERENCE_NAMESPACE):
        gone.append(f"{builders.KEDA_KIND} {name}")
    for api_version, kind, obj in [*_router_objects(name), ("v1", "Service", name)]:
        if kube.delete(dyn, api_version, kind, obj, INFERENCE_NAMESPACE):
            gone.append(f"{kind} {obj}")
    resource = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    try:
        resource.delete(name=name, namespace=INFERENCE_NAMESPACE, body={"propagationPolicy": "Foreground"})
        gone.append(f"Deployment {name}")
    except NotFoundError:
        pass
    observed = f"deleting {', '.join(gone)}" if gone else "already gone"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def check_delete(rt: Runtime, p: StepPayload) -> PollResult:
    """Done when the Deployment, Service and router Deployment are gone."""
    from instantstart.kube import client as kube

    _, change = changes.operation_change(rt, p, DeleteDeploymentChange)
    name = change.name
    dyn = _admin(rt, p.cluster_tag)
    left = [
        f"{kind} {obj}"
        for api_version, kind, obj in (
            ("apps/v1", "Deployment", name),
            ("v1", "Service", name),
            ("apps/v1", "Deployment", builders.router_name(name)),
        )
        if kube.get(dyn, api_version, kind, obj, INFERENCE_NAMESPACE) is not None
    ]
    return PollResult(done=not left, status="gone" if not left else f"waiting for {', '.join(left)}")


def apply_router(rt: Runtime, p: StepPayload) -> StepResult:
    """Dry-run, then apply the router's objects (and the ScaledObject).

    Raises:
        StageFailed: Kubernetes refusals verbatim (a ScaledObject without KEDA's CRD: the kind is not served).
    """
    from instantstart.kube import client as kube

    op, change = changes.operation_change(rt, p, RouterChange)
    request = change.request
    dyn = _admin(rt, p.cluster_tag)
    objects = builders.build_router(change.name, change.worker_port, request, op.operation_id)
    for obj in objects:
        dry_run(dyn, obj)
    for obj in objects:
        kube.apply(dyn, obj)
    observed = f"router {builders.router_name(change.name)} applied ({', '.join(o['kind'] for o in objects)})"
    record_result(rt, op, OperationProgress(observed=observed))
    return StepResult(status=observed[:256])


def check_router(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the router's Deployment is read back."""
    from instantstart.kube import client as kube

    _, change = changes.operation_change(rt, p, RouterChange)
    rname = builders.router_name(change.name)
    found = kube.get(_admin(rt, p.cluster_tag), "apps/v1", "Deployment", rname, INFERENCE_NAMESPACE)
    return PollResult(done=found is not None, status="applied" if found else "not visible yet")


CHANGES = {
    OperationType.DOWNLOAD_MODEL: changes.ClusterChange(apply=apply_download, check=check_download),
    OperationType.CREATE_INFERENCE_DEPLOYMENT: changes.ClusterChange(apply=apply_create, check=check_create),
    OperationType.UPDATE_INFERENCE_DEPLOYMENT: changes.ClusterChange(apply=apply_scale, check=check_scale),
    OperationType.DELETE_INFERENCE_DEPLOYMENT: changes.ClusterChange(apply=apply_delete, check=check_delete),
    OperationType.CREATE_INFERENCE_ROUTER: changes.ClusterChange(apply=apply_router, check=check_router),
}
"""The update workflow's handlers of model downloads and inference deployments, by operation type."""
