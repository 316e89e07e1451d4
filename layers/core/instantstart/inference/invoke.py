"""Calling a model: the one size rule for what is sent and the one reading of what comes back, used by both paths.

A managed endpoint is called through SageMaker Runtime ``InvokeEndpoint``
(:func:`instantstart.inference.endpoints.invoke_endpoint`). A self-managed deployment (:func:`invoke_deployment`)
has no SageMaker endpoint: its Service is ClusterIP by default, so the call goes through the Kubernetes API
server's service proxy (``services/proxy``), as the API function's role. EKS access policies cannot grant that verb
(AmazonEKSViewPolicy is Kubernetes' ``view``), so the access stage lists the API role's entry in the Kubernetes group
:data:`instantstart.naming.API_KUBERNETES_GROUP`, and the deployment's create step binds that group to
``services/proxy`` (create, get) in the inference namespace (:func:`instantstart.inference.builders.invoke_access`).
"""

from __future__ import annotations

import json
from typing import Any

from instantstart.clusters import records
from instantstart.errors import BadGateway, Conflict, NotFound, PayloadTooLarge, UpstreamUnavailable
from instantstart.inference import builders
from instantstart.models.inference import (
    INFERENCE_NAMESPACE,
    INVOKE_MAX_BYTES,
    INVOKE_MAX_RESPONSE_BYTES,
    InvokeDeploymentRequest,
    InvokeDeploymentView,
)
from instantstart.runtime import Runtime

INVOKE_TIMEOUT_SECONDS = 20.0
"""How long the engine may take to answer (the API's Lambda and API Gateway stop at 30 s, reads come first)."""


def request_payload(body: dict[str, Any]) -> bytes:
    """``body`` serialised as compact JSON.

    Raises:
        PayloadTooLarge: 413 naming ``body`` when it is above :data:`INVOKE_MAX_BYTES` serialised.
    """
    payload = json.dumps(body, separators=(",", ":")).encode()
    if len(payload) > INVOKE_MAX_BYTES:
        raise PayloadTooLarge(
            f"body is {len(payload)} bytes serialised; at most {INVOKE_MAX_BYTES} bytes are sent to a model",
            details=[{"field": "body", "message": "too large", "size": len(payload), "maximum": INVOKE_MAX_BYTES}],
        )
    return payload


def read_answer(raw: bytes) -> tuple[Any, str | None, bool]:
    """``(JSON body or None, text or None, truncated)`` of an answer read up to :data:`INVOKE_MAX_RESPONSE_BYTES`
    + 1 bytes: whole JSON is parsed; anything else (or a cut answer) is text."""
    truncated = len(raw) > INVOKE_MAX_RESPONSE_BYTES
    raw = raw[:INVOKE_MAX_RESPONSE_BYTES]
    if not truncated:
        try:
            return json.loads(raw), None, False
        except ValueError:
            pass
    return None, raw.decode("utf-8", errors="replace"), truncated


def _ready(deployment: dict[str, Any] | None) -> int:
    return int(((deployment or {}).get("status") or {}).get("readyReplicas") or 0)


def _api_server_status(raw: bytes) -> str | None:
    """The message of the API server's own ``Status`` answer (not the pod's), else None."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status" and parsed.get("apiVersion") == "v1":
        return str(parsed.get("message") or parsed.get("reason") or "")
    return None


def _engine_message(raw: bytes) -> str:
    body, text, _ = read_answer(raw)
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if value:
                return str(value)
    return (text if text is not None else json.dumps(body))[:1024]


def invoke_deployment(rt: Runtime, tag: str, name: str, request: InvokeDeploymentRequest) -> InvokeDeploymentView:
    """Send ``request.body`` to ``request.route`` of deployment ``name`` (through its SGLang router when it has one,
    unless ``via`` says otherwise) and return the engine's answer, cut at :data:`INVOKE_MAX_RESPONSE_BYTES`.

    ``body.model`` defaults to the deployment's served model name. The call is
    ``POST /api/v1/namespaces/default/services/<service>:<port>/proxy/<route>`` (Kubernetes service proxy) with
    the API role's EKS token, :data:`INVOKE_TIMEOUT_SECONDS` at most.

    Raises:
        NotFound: ``ClusterNotFound``, ``InferenceDeploymentNotFound``, ``InferenceRouterNotFound`` (``via: router``
            without one).
        PayloadTooLarge: 413 naming ``body``.
        Conflict: ``InferenceDeploymentNotReady`` (no ready replica of the target, or the API server found no ready
            endpoint), naming ``name`` with ``readyReplicas``.
        BadGateway: ``ModelError``, the engine answered an error (its status and message verbatim).
        UpstreamUnavailable: Kubernetes could not be read or refused the proxy (403: the RBAC binding is missing),
            or the engine did not answer in time.
    """
    from instantstart.clusters.kube_reads import read_kubernetes
    from instantstart.inference.service import deployment_not_found, get_object, made_here, stored_spec
    from instantstart.kube import client as kube

    body = dict(request.body)
    records.live_cluster(rt, tag)
    rname = builders.router_name(name)

    def read(dyn: Any) -> dict[str, Any] | None:
        deployment = get_object(dyn, "apps/v1", "Deployment", name)
        if not made_here(deployment):
            return None
        router = get_object(dyn, "v1", "Service", rname)
        return {
            "deployment": deployment,
            "service": get_object(dyn, "v1", "Service", name),
            "router": router,
            "routerDeployment": get_object(dyn, "apps/v1", "Deployment", rname) if router else None,
        }

    found = read_kubernetes(rt, tag, read)
    if found is None:
        raise deployment_not_found(tag, name)
    spec = stored_spec(found["deployment"])
    if spec.get("servedModelName"):
        body.setdefault("model", spec["servedModelName"])
    request_payload(body)  # the size rule
    via = request.via or ("router" if found["router"] is not None else "service")
    if via == "router" and found["router"] is None:
        raise NotFound(
            f"deployment '{name}' of cluster '{tag}' has no router (POST .../inference/deployments/{name}/router)",
            code="InferenceRouterNotFound",
            details=[{"field": "via", "message": "no router", "allowedValues": ["service"]}],
        )
    service, target = (
        (found["router"], found["routerDeployment"])
        if via == "router"
        else (
            found["service"],
            found["deployment"],
        )
    )
    if service is None:
        raise deployment_not_found(tag, name)
    service_name = str(service["metadata"]["name"])
    port = int(((service.get("spec") or {}).get("ports") or [{}])[0].get("port") or 0)

    def not_ready(message: str) -> Conflict:
        return Conflict(
            message,
            code="InferenceDeploymentNotReady",
            details=[{"field": "name", "name": service_name, "readyReplicas": _ready(target)}],
        )

    if _ready(target) == 0:
        raise not_ready(f"{service_name} has no ready replica; follow GET .../inference/deployments/{name}")
    try:
        dyn = kube.connect(records.eks_name(rt, tag), rt.region, timeout=INVOKE_TIMEOUT_SECONDS)
        status, content_type, raw = kube.service_proxy_post(
            dyn,
            INFERENCE_NAMESPACE,
            service_name,
            port,
            request.route.value,
            body,
            max_bytes=INVOKE_MAX_RESPONSE_BYTES,
            timeout=INVOKE_TIMEOUT_SECONDS,
        )
    except Exception as exc:
        raise UpstreamUnavailable(f"calling {service_name}:{port} of cluster '{tag}' failed: {exc}") from exc
    apiserver = _api_server_status(raw) if status >= 400 else None
    if apiserver is not None:
        if status == 503:
            raise not_ready(apiserver)
        raise UpstreamUnavailable(
            f"the Kubernetes API of cluster '{tag}' refused the service proxy (HTTP {status}): {apiserver}"
        )
    if status >= 400:
        raise BadGateway(
            _engine_message(raw),
            code="ModelError",
            details=[{"field": "body", "service": service_name, "engineStatus": status}],
        )
    parsed, text, truncated = read_answer(raw)
    return InvokeDeploymentView(
        service=service_name,
        port=port,
        route=request.route,
        content_type=content_type,
        body=parsed,
        text=text,
        truncated=truncated,
    )
