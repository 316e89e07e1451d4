"""Managed inference endpoints, read side: the CRD and served version lookups, the endpoint lookup by name, and the
``GET`` views (the list, and one endpoint with its conditions, SageMaker endpoint, worker pods and their events).

Everything reads Kubernetes through the API role's view entry (:func:`instantstart.training.service.read_kubernetes`)
within :data:`instantstart.features.observe.KUBERNETES_READ_SECONDS`; :mod:`instantstart.inference.endpoints`
re-exports the public names.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.clusters import records
from instantstart.errors import NotFound
from instantstart.features.observe import KUBERNETES_READ_SECONDS
from instantstart.inference import endpoint_builders as eb
from instantstart.inference.service import get_object
from instantstart.kube.pod_problems import pod_problems, summary
from instantstart.models.inference import INFERENCE_NAMESPACE
from instantstart.models.inference_endpoints import (
    InferenceEndpointList,
    InferenceEndpointSummary,
    InferenceEndpointView,
    PodEvent,
    SageMakerEndpointView,
)
from instantstart.runtime import Runtime
from instantstart.training.service import read_kubernetes

CRD_API_VERSION = "apiextensions.k8s.io/v1"
FORBIDDEN = "forbidden"
MAX_EVENTS = 50


# -- Kubernetes helpers ----------------------------------------------------------------------------------------------
def _is_forbidden(exc: BaseException) -> bool:
    return getattr(exc, "status", None) in (401, 403)


def _read_crd(dyn: Any, kind: str) -> dict[str, Any] | str | None:
    """The CRD of ``kind``; :data:`FORBIDDEN` when the caller may not read CRDs; None when it does not exist."""
    from kubernetes.dynamic.exceptions import NotFoundError

    resource = dyn.resources.get(api_version=CRD_API_VERSION, kind="CustomResourceDefinition")
    try:
        return dict(resource.get(name=eb.CRD_NAMES[kind], _request_timeout=KUBERNETES_READ_SECONDS).to_dict())
    except NotFoundError:
        return None
    except Exception as exc:
        if _is_forbidden(exc):
            return FORBIDDEN
        raise


def _discovered_version(dyn: Any, kind: str) -> str | None:
    """The highest-priority version API discovery serves ``kind`` in (every authenticated user may read it)."""
    found = dyn.resources.search(group=eb.GROUP, kind=kind)
    return eb.prefer(sorted({str(r.api_version) for r in found if getattr(r, "api_version", None)}))


def _version_of(dyn: Any, kind: str) -> str | None:
    crd = _read_crd(dyn, kind)
    if isinstance(crd, dict):
        return eb.served_version(crd)
    return _discovered_version(dyn, kind) if crd == FORBIDDEN else None


def _find(dyn: Any, name: str) -> tuple[str, str, dict[str, Any]] | None:
    """``(kind, apiVersion, object)`` of the InferenceEndpointConfig or JumpStartModel ``name``, else None."""
    for kind in eb.KINDS:
        version = _version_of(dyn, kind)
        if version is None:
            continue
        api_version = f"{eb.GROUP}/{version}"
        found = get_object(dyn, api_version, kind, name)
        if found is not None:
            return kind, api_version, found
    return None


def _not_found(tag: str, name: str) -> NotFound:
    return NotFound(
        f"inference endpoint {INFERENCE_NAMESPACE}/{name} does not exist on cluster '{tag}'",
        code="InferenceEndpointNotFound",
        details=[{"field": "name", "value": name}],
    )


def _sagemaker_name(obj: dict[str, Any]) -> str | None:
    spec = obj.get("spec") or {}
    return spec.get("endpointName") or (spec.get("sageMakerEndpoint") or {}).get("name") or None


def _condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), {})


# -- reads -----------------------------------------------------------------------------------------------------------
def _summary(kind: str, obj: dict[str, Any]) -> InferenceEndpointSummary:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    return InferenceEndpointSummary(
        name=str(meta.get("name")),
        namespace=str(meta.get("namespace") or INFERENCE_NAMESPACE),
        kind=kind,
        instance_type=spec.get("instanceType") or (spec.get("server") or {}).get("instanceType"),
        state=status.get("state"),
        replicas=spec.get("replicas"),
        ready_replicas=status.get("replicas"),
        endpoint_name=_sagemaker_name(obj),
    )


def list_endpoints(rt: Runtime, tag: str) -> InferenceEndpointList:
    """The InferenceEndpointConfigs and JumpStartModels of namespace default (any maker), by name.

    Raises:
        NotFound: ``ClusterNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    from instantstart.kube import client as kube

    records.live_cluster(rt, tag)

    def read(dyn: Any) -> list[tuple[str, dict[str, Any]]]:
        found: list[tuple[str, dict[str, Any]]] = []
        for kind in eb.KINDS:
            version = _version_of(dyn, kind)
            if version is None:
                continue
            objs = kube.list_objects(
                dyn, f"{eb.GROUP}/{version}", kind, INFERENCE_NAMESPACE, None, timeout=KUBERNETES_READ_SECONDS
            )
            found += [(kind, o) for o in objs]
        return found

    found = read_kubernetes(rt, tag, read)
    return InferenceEndpointList(endpoints=sorted((_summary(k, o) for k, o in found), key=lambda s: s.name))


def _events(pods: list[str], events: list[dict[str, Any]]) -> list[PodEvent]:
    names = set(pods)
    picked = [e for e in events if (e.get("involvedObject") or {}).get("name") in names]
    picked.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return [
        PodEvent(
            pod=str((e.get("involvedObject") or {}).get("name")),
            type=e.get("type"),
            reason=e.get("reason"),
            message=e.get("message"),
            count=e.get("count"),
            last_timestamp=str(e.get("lastTimestamp") or e.get("eventTime") or "") or None,
        )
        for e in picked[-MAX_EVENTS:]
    ]


def get_endpoint(rt: Runtime, tag: str, name: str) -> InferenceEndpointView:
    """One endpoint: state, the operator's conditions and message, the SageMaker endpoint (operator status plus
    ``DescribeEndpoint``), the worker pods and their Kubernetes events (why a deployment is stuck).

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceEndpointNotFound``.
        UpstreamUnavailable: Kubernetes could not be read in time.
    """
    from instantstart.kube import client as kube

    records.live_cluster(rt, tag)

    def read(dyn: Any) -> dict[str, Any] | None:
        found = _find(dyn, name)
        if found is None:
            return None
        kind, api_version, obj = found
        selector = (obj.get("status") or {}).get("selector") or f"{eb.WORKER_SELECTOR_LABEL}={name}"
        pods = kube.list_objects(dyn, "v1", "Pod", INFERENCE_NAMESPACE, selector, timeout=KUBERNETES_READ_SECONDS)
        events = kube.list_objects(dyn, "v1", "Event", INFERENCE_NAMESPACE, None, timeout=KUBERNETES_READ_SECONDS)
        return {"kind": kind, "apiVersion": api_version, "obj": obj, "pods": pods, "events": events}

    found = read_kubernetes(rt, tag, read)
    if found is None:
        raise _not_found(tag, name)
    obj, kind = found["obj"], found["kind"]
    status = obj.get("status") or {}
    pods = sorted(str(p["metadata"]["name"]) for p in found["pods"])
    sagemaker_name = _sagemaker_name(obj)
    sagemaker = None
    if sagemaker_name:
        seen = (status.get("endpoints") or {}).get("sagemaker") or {}
        sagemaker = SageMakerEndpointView(
            name=sagemaker_name,
            state=seen.get("state"),
            endpoint_arn=seen.get("endpointArn") or None,
            config_arn=seen.get("configArn") or None,
            model_arn=seen.get("modelArn") or None,
            status=_describe_status(rt, sagemaker_name),
        )
    state = status.get("state")
    cond = _condition(obj, str(state)) if state else {}
    spec = obj.get("spec") or {}
    return InferenceEndpointView(
        **_summary(kind, obj).model_dump(),
        api_version=found["apiVersion"],
        model_name=spec.get("modelName") or (spec.get("model") or {}).get("modelId"),
        message=cond.get("message") or (status.get("deploymentStatus") or {}).get("message"),
        conditions=[
            {k: c[k] for k in ("type", "status", "reason", "message", "lastTransitionTime") if c.get(k) is not None}
            for c in status.get("conditions") or []
        ],
        sagemaker=sagemaker,
        session_key=((obj.get("metadata") or {}).get("annotations") or {}).get(eb.ANNOTATION_SESSION_KEY),
        pods=pods,
        events=_events(pods, found["events"]),
        pod_reason=summary(pod_problems(sorted(found["pods"], key=lambda p: str(p["metadata"]["name"])))),
    )


def _describe_status(rt: Runtime, name: str) -> str | None:
    try:
        return str(rt.client("sagemaker").describe_endpoint(EndpointName=name)["EndpointStatus"])
    except ClientError:
        return None
