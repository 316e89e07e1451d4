"""The reads of self-managed inference: a deployment's status, the list, one deployment with its pods and Service."""

from __future__ import annotations

import json
from typing import Any

from instantstart.clusters import records
from instantstart.clusters.kube_reads import read_kubernetes
from instantstart.inference import builders
from instantstart.inference.cluster_access import (
    _keda_served,
    _list,
    _pods_of,
    deployment_not_found,
    get_object,
    made_here,
)
from instantstart.kube.pod_problems import pod_problem, pod_problems
from instantstart.kube.pod_problems import summary as summarize
from instantstart.models.inference import (
    INFERENCE_NAMESPACE,
    DeploymentStatus,
    InferenceDeploymentList,
    InferenceDeploymentSummary,
    InferenceDeploymentView,
    InferencePod,
    InferenceService,
)
from instantstart.runtime import Runtime


# -- reads -----------------------------------------------------------------------------------------------------------
def stored_spec(deployment: dict[str, Any]) -> dict[str, Any]:
    """The request a deployment was made from (its spec annotation, camelCase), ``{}`` when unreadable."""
    raw = ((deployment.get("metadata") or {}).get("annotations") or {}).get(builders.ANNOTATION_SPEC)
    try:
        return dict(json.loads(raw)) if raw else {}
    except ValueError:
        return {}


def deployment_status(deployment: dict[str, Any]) -> DeploymentStatus:
    """Ready (every wanted pod ready), ScaledToZero, Failed (``Progressing`` False with ``ProgressDeadlineExceeded``)
    or Progressing, from the Deployment's spec and status (pure)."""
    want = int((deployment.get("spec") or {}).get("replicas", 1))
    status = deployment.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
            return DeploymentStatus.FAILED
    if want == 0:
        return DeploymentStatus.SCALED_TO_ZERO
    ready = int(status.get("readyReplicas") or 0)
    return (
        DeploymentStatus.READY
        if ready >= want and int(status.get("replicas") or 0) == want
        else (DeploymentStatus.PROGRESSING)
    )


def _summary(deployment: dict[str, Any]) -> InferenceDeploymentSummary:
    meta = deployment.get("metadata") or {}
    spec = stored_spec(deployment)
    return InferenceDeploymentSummary(
        name=str(meta.get("name")),
        namespace=str(meta.get("namespace") or INFERENCE_NAMESPACE),
        engine=spec.get("engine") or (meta.get("labels") or {}).get(builders.LABEL_ENGINE),
        model_path=spec.get("modelPath"),
        served_model_name=spec.get("servedModelName"),
        instance_type=spec.get("instanceType"),
        gpus=spec.get("gpus"),
        status=deployment_status(deployment),
        desired_replicas=int((deployment.get("spec") or {}).get("replicas", 1)),
        ready_replicas=int((deployment.get("status") or {}).get("readyReplicas") or 0),
    )


def list_deployments(rt: Runtime, tag: str) -> InferenceDeploymentList:
    """The cluster's self-managed inference deployments (made here: label ``instantstart.io/role=worker``).

    Raises:
        NotFound: ``ClusterNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    records.live_cluster(rt, tag)
    found = read_kubernetes(
        rt,
        tag,
        lambda dyn: _list(dyn, "apps/v1", "Deployment", f"{builders.LABEL_ROLE}=worker,{builders.LABEL_DEPLOYMENT}"),
    )
    summaries = sorted((_summary(d) for d in found), key=lambda s: s.name)
    return InferenceDeploymentList(deployments=summaries)


def _pod_view(pod: dict[str, Any]) -> InferencePod:
    meta = pod.get("metadata") or {}
    ready = any(
        c.get("type") == "Ready" and str(c.get("status")) == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )
    cost = (meta.get("annotations") or {}).get(builders.ANNOTATION_DELETION_COST)
    problem = pod_problem(pod)
    return InferencePod(
        name=str(meta.get("name")),
        node_name=(pod.get("spec") or {}).get("nodeName"),
        phase=(pod.get("status") or {}).get("phase"),
        ready=ready,
        bound_model=builders.bound_model(pod),
        deletion_cost=int(cost) if cost and cost.lstrip("-").isdigit() else None,
        reason=problem.reason if problem else None,
        message=problem.message if problem else None,
    )


def _service_view(svc: dict[str, Any] | None) -> InferenceService | None:
    if svc is None:
        return None
    meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
    annotations = meta.get("annotations") or {}
    port = int(((spec.get("ports") or [{}])[0]).get("port") or 0)
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [{}]
    return InferenceService(
        type=str(spec.get("type") or "ClusterIP"),
        port=port,
        cluster_ip=spec.get("clusterIP"),
        exposure=annotations.get(builders.NLB_SCHEME),
        hostname=ingress[0].get("hostname"),
        url=f"http://{meta.get('name')}.{meta.get('namespace') or INFERENCE_NAMESPACE}.svc:{port}",
    )


def get_deployment(rt: Runtime, tag: str, name: str) -> InferenceDeploymentView:
    """One deployment: its spec, status, replicas ready/desired, pods (node, phase, ready, bound model, deletion
    cost, why it does not run), Service, router, autoscaling, and ``reason`` (the first pod problem while not Ready:
    :mod:`instantstart.kube.pod_problems`).

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    records.live_cluster(rt, tag)

    def read(dyn: Any) -> dict[str, Any]:
        deployment = get_object(dyn, "apps/v1", "Deployment", name)
        if not made_here(deployment):
            return {}
        scaled = get_object(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND, name) if _keda_served(dyn) else None
        return {
            "deployment": deployment,
            "pods": _pods_of(dyn, name),
            "service": get_object(dyn, "v1", "Service", name),
            "router": get_object(dyn, "v1", "Service", builders.router_name(name)),
            "scaled": scaled,
        }

    found = read_kubernetes(rt, tag, read)
    if not found:
        raise deployment_not_found(tag, name)
    deployment = found["deployment"]
    summary = _summary(deployment)
    spec = stored_spec(deployment)
    scaled = found["scaled"]
    autoscaling: dict[str, int | str] | None = None
    if scaled:
        s = scaled.get("spec") or {}
        autoscaling = {"minReplicas": int(s.get("minReplicaCount", 0)), "maxReplicas": int(s.get("maxReplicaCount", 0))}
    service_view = _service_view(found["service"])
    containers = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}]
    return InferenceDeploymentView(
        **summary.model_dump(),
        image=containers[0].get("image"),
        port=spec.get("port") or (service_view.port if service_view else None),
        max_model_len=spec.get("maxModelLen"),
        hf_token_secret_name=(spec.get("hfTokenSecret") or {}).get("name"),
        service=service_view,
        router=_service_view(found["router"]),
        autoscaling=autoscaling,
        pods=sorted((_pod_view(p) for p in found["pods"]), key=lambda v: v.name),
        conditions=[
            {k: str(c[k]) for k in ("type", "status", "reason", "message") if c.get(k) is not None}
            for c in (deployment.get("status") or {}).get("conditions") or []
        ],
        reason=None if summary.status is DeploymentStatus.READY else summarize(pod_problems(found["pods"])),
    )
