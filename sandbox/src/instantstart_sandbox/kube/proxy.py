"""The API server's service proxy (``/api/v1/namespaces/{ns}/services/{name}[:port]/proxy/{path}``) and the model
servers behind it.

Authorisation is Kubernetes RBAC, modelled the harsher way: EKS access policies are fixed (AmazonEKSViewPolicy is
Kubernetes' ``view`` role, which has no ``services/proxy``), so a caller may proxy only when a RoleBinding in the
namespace (or a ClusterRoleBinding) grants ``services/proxy`` with the request's verb (``create`` for POST, ``get``
for GET) to a group that an access entry of the cluster lists in its ``kubernetesGroups``. The sandbox cannot tell
the callers apart (every function signs with the same credentials), so without such a binding every proxied
request is 403, the cluster admin's included.

The request reaches one ready pod of the Service's selector (chosen by the body's hash: stable for a prompt) on
the port's ``targetPort``; none ready is the API server's 503 ``no endpoints available for service``. The pod
answers by what its container runs:

- a vLLM or SGLang engine (``instantstart_sandbox.kube.inference.engine_of``): ``GET /health`` (200),
  ``GET /v1/models`` (the served model), ``POST /v1/completions`` and ``POST /v1/chat/completions``
  (:func:`instantstart_sandbox.completions.completion` from the pod's name; a ``model`` other than the served name
  is the engine's 404 ``The model `x` does not exist.``, a body that is not JSON its 400);
- the SGLang router (``sglang_router.launch_router --service-discovery --selector ...``): forwards to one ready
  worker of its selector on ``--service-discovery-port`` (none: 503 ``No available workers``);
- anything else: 404.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from instantstart_sandbox.completions import completion
from instantstart_sandbox.kube.errors import KubeError
from instantstart_sandbox.kube.inference import argv_flag, container_argv, engine_of

if TYPE_CHECKING:
    from instantstart_sandbox.kube.store import KubeCluster

Obj = dict[str, Any]
Answer = tuple[int, str, bytes]
"""``(HTTP status, Content-Type, body)``."""

HEALTH_PATHS = frozenset({"health", "health_generate"})
ROUTER_MODULE = "sglang_router.launch_router"


def _json(status: int, obj: Any) -> Answer:
    return status, "application/json", json.dumps(obj).encode()


def _matches(values: list[str] | None, wanted: str) -> bool:
    return bool(values) and ("*" in (values or []) or wanted in (values or []))


def rbac_allows(cluster: KubeCluster, namespace: str, groups: set[str], verb: str, resource: str) -> bool:
    """Whether a Role/ClusterRole bound (RoleBinding in ``namespace``, or ClusterRoleBinding) to one of ``groups``
    grants ``verb`` on ``resource`` (e.g. ``services/proxy``) of the core API group."""
    bindings = [
        *cluster.peek_list("rbac.authorization.k8s.io/v1", "RoleBinding", namespace),
        *cluster.peek_list("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ]
    for binding in bindings:
        if not any(s.get("kind") == "Group" and s.get("name") in groups for s in binding.get("subjects") or []):
            continue
        ref = binding.get("roleRef") or {}
        role = (
            cluster.peek("rbac.authorization.k8s.io/v1", "Role", str(ref.get("name")), namespace)
            if ref.get("kind") == "Role"
            else cluster.peek("rbac.authorization.k8s.io/v1", "ClusterRole", str(ref.get("name")))
        )
        for rule in (role or {}).get("rules") or []:
            if (
                _matches(rule.get("apiGroups"), "")
                and _matches(rule.get("resources"), resource)
                and _matches(rule.get("verbs"), verb)
            ):
                return True
    return False


def _ready(pod: Obj) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _pick(pods: list[Obj], body: bytes) -> Obj:
    index = int(hashlib.sha256(body).hexdigest()[:8], 16) % len(pods)
    return pods[index]


def _container_on(pod: Obj, port: Any) -> Obj | None:
    for container in (pod.get("spec") or {}).get("containers") or []:
        for p in container.get("ports") or []:
            if port in (p.get("containerPort"), str(p.get("containerPort")), p.get("name")):
                return dict(container)
    return None


def service_proxy(
    cluster: KubeCluster,
    groups: set[str] | None,
    namespace: str,
    service_ref: str,
    method: str,
    path: str,
    body: bytes,
) -> Answer:
    """Answer ``method path`` proxied to Service ``service_ref`` (``name``, ``name:port`` or ``scheme:name:port``)
    of ``namespace`` (see the module docstring). ``groups``: the Kubernetes groups of the cluster's access entries
    (None: no EKS in this sandbox, no RBAC check).

    Raises:
        KubeError: 403 without a binding, 404 for an unknown Service or port, 503 without a ready endpoint or when
            no container listens on the target port.
    """
    parts = service_ref.split(":")
    if len(parts) == 3:
        parts = parts[1:]
    name, port_ref = parts[0], (parts[1] if len(parts) > 1 else "")
    verb = "get" if method == "GET" else "create"
    if groups is not None and not rbac_allows(cluster, namespace, groups, verb, "services/proxy"):
        raise KubeError(
            403,
            f'services "{name}" is forbidden: User "the caller" cannot {verb} resource "services/proxy" in API '
            f'group "" in the namespace "{namespace}"',
            "Forbidden",
        )
    service = cluster.peek("v1", "Service", name, namespace)
    if service is None:
        raise KubeError(404, f'services "{name}" not found', "NotFound")
    spec = service.get("spec") or {}
    ports = spec.get("ports") or []
    port = next(
        (p for p in ports if not port_ref or port_ref in (p.get("name"), str(p.get("port")))),
        None,
    )
    if port is None:
        raise KubeError(404, f'no port "{port_ref}" on service "{name}"', "NotFound")
    target = port.get("targetPort") or port.get("port")
    selector = ",".join(f"{k}={v}" for k, v in (spec.get("selector") or {}).items())
    pods = [p for p in cluster.peek_list("v1", "Pod", namespace, selector or None) if selector and _ready(p)]
    if not pods:
        raise KubeError(503, f'no endpoints available for service "{name}"', "ServiceUnavailable")
    return _pod_answer(cluster, _pick(pods, body), target, method, path.strip("/"), body)


def _pod_answer(cluster: KubeCluster, pod: Obj, port: Any, method: str, path: str, body: bytes) -> Answer:
    container = _container_on(pod, port)
    if container is None:
        ip = (pod.get("status") or {}).get("podIP", "")
        raise KubeError(
            503,
            f"error trying to reach service: dial tcp {ip}:{port}: connect: connection refused",
            "ServiceUnavailable",
        )
    args = container_argv(container)
    if ROUTER_MODULE in args:
        return _route(cluster, pod, args, method, path, body)
    engine = engine_of(str(container.get("image", "")))
    if engine is None:
        return 404, "text/plain; charset=utf-8", b"404 page not found\n"
    served = argv_flag(args, "--served-model-name") or argv_flag(args, "--model", "--model-path") or ""
    if method == "GET" and path in HEALTH_PATHS:
        return 200, "application/json", b""
    if method == "GET" and path == "v1/models":
        return _json(200, {"object": "list", "data": [{"id": served, "object": "model", "owned_by": engine}]})
    if method == "POST" and path in ("v1/completions", "v1/chat/completions"):
        try:
            payload = json.loads(body)
        except ValueError:
            return _json(
                400, {"object": "error", "message": "Invalid JSON body", "type": "BadRequestError", "code": 400}
            )
        model = payload.get("model") if isinstance(payload, dict) else None
        if model != served:
            return _json(
                404,
                {
                    "object": "error",
                    "message": f"The model `{model}` does not exist.",
                    "type": "NotFoundError",
                    "param": None,
                    "code": 404,
                },
            )
        answer = completion(pod["metadata"]["name"], served, body, chat=path == "v1/chat/completions")
        return _json(200, answer)
    return _json(404, {"detail": "Not Found"})


def _route(cluster: KubeCluster, router: Obj, args: list[str], method: str, path: str, body: bytes) -> Answer:
    labels: list[str] = []
    if "--selector" in args:
        for a in args[args.index("--selector") + 1 :]:
            if a.startswith("--"):
                break
            labels.append(a)
    namespace = argv_flag(args, "--service-discovery-namespace") or router["metadata"]["namespace"]
    port = argv_flag(args, "--service-discovery-port") or "8000"
    workers = [p for p in cluster.peek_list("v1", "Pod", namespace, ",".join(labels) or None) if labels and _ready(p)]
    if not workers:
        return _json(503, {"error": "No available workers"})
    return _pod_answer(cluster, _pick(workers, body), int(port) if port.isdigit() else port, method, path, body)
