"""Pure builders of the SGLang router (``CREATE_INFERENCE_ROUTER``) and of the API's access to the Services.

Router: the SGLang router (``sglang_router.launch_router``, cache-aware by default) discovering the workers by label
through the Kubernetes API (a ServiceAccount with a Role to list pods), its Service, and optionally a KEDA
``ScaledObject`` (``keda.sh/v1alpha1``) on the workers' Deployment. Invoke access: the Role and RoleBinding that let
the API function's Kubernetes group call the Services through the API server's proxy.

:mod:`instantstart.inference.builders` re-exports these.
"""

from __future__ import annotations

from typing import Any

from instantstart.inference.names import (
    ENGINE_IMAGES,
    HEALTH_PATH,
    LABEL_DEPLOYMENT,
    LABEL_MANAGED,
    LABEL_ROLE,
    MANAGED_BY,
)
from instantstart.models.inference import INFERENCE_NAMESPACE, CreateRouterRequest, Engine
from instantstart.naming import API_KUBERNETES_GROUP

ROUTER_IMAGE = ENGINE_IMAGES[Engine.SGLANG]
"""The SGLang image ships ``sglang_router``."""
ROUTER_PORT = 30000

KEDA_API_VERSION = "keda.sh/v1alpha1"
KEDA_KIND = "ScaledObject"


# -- the SGLang router -----------------------------------------------------------------------------------------------
def router_name(name: str) -> str:
    """``<deployment>-router``: the router's Deployment, Service, ServiceAccount, Role and RoleBinding."""
    return f"{name}-router"


def build_router(
    name: str, worker_port: int, request: CreateRouterRequest, operation_id: str
) -> tuple[dict[str, Any], ...]:
    """ServiceAccount, Role (pods get/list/watch), RoleBinding, router Deployment and Service, and the KEDA
    ScaledObject on the workers when ``request.autoscaling`` is given, in apply order.

    The router finds the workers by label (``--service-discovery --selector instantstart.io/inference-deployment=
    <name>``) on ``worker_port``.
    """
    rname = router_name(name)
    labels = {LABEL_DEPLOYMENT: name, LABEL_ROLE: "router", LABEL_MANAGED: MANAGED_BY}

    def meta(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "namespace": INFERENCE_NAMESPACE,
            "labels": dict(labels),
            "annotations": {"instantstart/operation-id": operation_id},
        }

    argv = [
        "python3",
        "-m",
        "sglang_router.launch_router",
        "--policy",
        request.policy,
        "--service-discovery",
        "--selector",
        f"{LABEL_DEPLOYMENT}={name}",
        f"{LABEL_ROLE}=worker",
        "--service-discovery-port",
        str(worker_port),
        "--service-discovery-namespace",
        INFERENCE_NAMESPACE,
        "--host",
        "0.0.0.0",
        "--port",
        str(ROUTER_PORT),
    ]
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(rname)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta(rname),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta(rname),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": rname},
            "subjects": [{"kind": "ServiceAccount", "name": rname, "namespace": INFERENCE_NAMESPACE}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(rname),
            "spec": {
                "replicas": request.replicas,
                "selector": {"matchLabels": {LABEL_DEPLOYMENT: name, LABEL_ROLE: "router"}},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "serviceAccountName": rname,
                        "containers": [
                            {
                                "name": "router",
                                "image": ROUTER_IMAGE,
                                "command": argv,
                                "ports": [{"name": "http", "containerPort": ROUTER_PORT, "protocol": "TCP"}],
                                "readinessProbe": {"httpGet": {"path": HEALTH_PATH, "port": ROUTER_PORT}},
                                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta(rname),
            "spec": {
                "type": "ClusterIP",
                "selector": {LABEL_DEPLOYMENT: name, LABEL_ROLE: "router"},
                "ports": [{"name": "http", "port": ROUTER_PORT, "targetPort": ROUTER_PORT, "protocol": "TCP"}],
            },
        },
    ]
    if request.autoscaling is not None:
        scaling = request.autoscaling
        query = f'sum(sglang:num_queue_reqs{{namespace="{INFERENCE_NAMESPACE}",pod=~"{name}-.*"}})'
        objects.append(
            {
                "apiVersion": KEDA_API_VERSION,
                "kind": KEDA_KIND,
                "metadata": meta(name),
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                    "minReplicaCount": scaling.min_replicas,
                    "maxReplicaCount": scaling.max_replicas,
                    "triggers": [
                        {
                            "type": "prometheus",
                            "metadata": {
                                "serverAddress": scaling.prometheus_server_address,
                                "query": query,
                                "threshold": str(scaling.queue_threshold),
                            },
                        }
                    ],
                },
            }
        )
    return tuple(objects)


# -- calling the Services from the API -------------------------------------------------------------------------------
INVOKE_ROLE = "instantstart-api-invoke"


def invoke_access() -> tuple[dict[str, Any], dict[str, Any]]:
    """Role ``instantstart-api-invoke`` (``services/proxy``: create, get, in the inference namespace) and its
    RoleBinding to the API function's Kubernetes group (:data:`instantstart.naming.API_KUBERNETES_GROUP`)."""
    meta = {"name": INVOKE_ROLE, "namespace": INFERENCE_NAMESPACE, "labels": {LABEL_MANAGED: MANAGED_BY}}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": dict(meta),
        "rules": [{"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["create", "get"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": dict(meta),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": INVOKE_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": API_KUBERNETES_GROUP}],
    }
    return role, binding
