"""The KubeRay operator of the ``kubeRay`` feature, built in Python with the official client's models.

Objects, in apply order (:func:`operator_objects`): namespace ``kuberay-system``, ServiceAccount
``kuberay-operator``, its ClusterRole and ClusterRoleBinding, the ``ray.io/v1`` CRDs RayCluster, RayJob and
RayService (minimal structural schemas written here: ``spec`` and ``status`` are objects that keep unknown fields,
with the few top-level fields the operator reads typed), and the operator Deployment at the pinned
:data:`KUBERAY_VERSION` (https://github.com/ray-project/kuberay). Every object carries the label
``instantstart/feature=kubeRay``, which is how the workflow reads them back. "Off" deletes them in reverse order;
deleting the CRDs deletes every RayCluster, RayJob and RayService with them (Kubernetes garbage collection).
"""

from __future__ import annotations

from typing import Any

KUBERAY_VERSION = "v1.3.2"
"""The pinned KubeRay operator release."""
IMAGE = f"quay.io/kuberay/operator:{KUBERAY_VERSION}"
NAMESPACE = "kuberay-system"
NAME = "kuberay-operator"
FEATURE = "kubeRay"
LABELS = {
    "app.kubernetes.io/managed-by": "instantstart",
    "app.kubernetes.io/name": NAME,
    "instantstart/feature": FEATURE,
}
CRDS = (("RayCluster", "rayclusters"), ("RayJob", "rayjobs"), ("RayService", "rayservices"))


def _crd_schema(kind: str) -> Any:
    from kubernetes import client as k8s

    open_object = k8s.V1JSONSchemaProps(type="object", x_kubernetes_preserve_unknown_fields=True)
    typed: dict[str, Any] = {}
    if kind == "RayCluster":
        typed = {
            "rayVersion": k8s.V1JSONSchemaProps(type="string"),
            "headGroupSpec": open_object,
            "workerGroupSpecs": k8s.V1JSONSchemaProps(
                type="array", items={"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            ),
            "enableInTreeAutoscaling": k8s.V1JSONSchemaProps(type="boolean"),
        }
    elif kind == "RayJob":
        typed = {
            "entrypoint": k8s.V1JSONSchemaProps(type="string"),
            "rayClusterSpec": open_object,
            "shutdownAfterJobFinishes": k8s.V1JSONSchemaProps(type="boolean"),
        }
    else:
        typed = {"serveConfigV2": k8s.V1JSONSchemaProps(type="string"), "rayClusterConfig": open_object}
    spec = k8s.V1JSONSchemaProps(type="object", x_kubernetes_preserve_unknown_fields=True, properties=typed)
    return k8s.V1JSONSchemaProps(
        type="object",
        properties={
            "apiVersion": k8s.V1JSONSchemaProps(type="string"),
            "kind": k8s.V1JSONSchemaProps(type="string"),
            "metadata": k8s.V1JSONSchemaProps(type="object"),
            "spec": spec,
            "status": open_object,
        },
    )


def operator_objects() -> list[dict[str, Any]]:
    """The KubeRay operator's objects as dicts ready for server-side apply, in apply order."""
    from kubernetes import client as k8s

    def meta(name: str, namespace: str | None = None) -> Any:
        return k8s.V1ObjectMeta(name=name, namespace=namespace, labels=dict(LABELS))

    rules = [
        k8s.V1PolicyRule(api_groups=["ray.io"], resources=["*"], verbs=["*"]),
        k8s.V1PolicyRule(
            api_groups=[""],
            resources=["pods", "services", "endpoints", "events", "configmaps", "serviceaccounts"],
            verbs=["create", "delete", "get", "list", "patch", "update", "watch"],
        ),
        k8s.V1PolicyRule(api_groups=[""], resources=["pods/status", "pods/proxy", "services/proxy"], verbs=["*"]),
        k8s.V1PolicyRule(api_groups=["batch"], resources=["jobs"], verbs=["*"]),
        k8s.V1PolicyRule(
            api_groups=["rbac.authorization.k8s.io"],
            resources=["roles", "rolebindings"],
            verbs=["create", "delete", "get", "list", "update", "watch"],
        ),
        k8s.V1PolicyRule(api_groups=["networking.k8s.io"], resources=["ingresses"], verbs=["*"]),
        k8s.V1PolicyRule(api_groups=["coordination.k8s.io"], resources=["leases"], verbs=["*"]),
    ]
    crds = [
        k8s.V1CustomResourceDefinition(
            api_version="apiextensions.k8s.io/v1",
            kind="CustomResourceDefinition",
            metadata=meta(f"{plural}.ray.io"),
            spec=k8s.V1CustomResourceDefinitionSpec(
                group="ray.io",
                scope="Namespaced",
                names=k8s.V1CustomResourceDefinitionNames(
                    kind=kind, plural=plural, singular=kind.lower(), list_kind=f"{kind}List"
                ),
                versions=[
                    k8s.V1CustomResourceDefinitionVersion(
                        name="v1",
                        served=True,
                        storage=True,
                        schema=k8s.V1CustomResourceValidation(open_apiv3_schema=_crd_schema(kind)),
                        subresources=k8s.V1CustomResourceSubresources(status={}),
                    )
                ],
            ),
        )
        for kind, plural in CRDS
    ]
    selector = {"app.kubernetes.io/name": NAME}
    deployment = k8s.V1Deployment(
        api_version="apps/v1",
        kind="Deployment",
        metadata=meta(NAME, NAMESPACE),
        spec=k8s.V1DeploymentSpec(
            replicas=1,
            selector=k8s.V1LabelSelector(match_labels=selector),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels={**LABELS, **selector}),
                spec=k8s.V1PodSpec(
                    service_account_name=NAME,
                    containers=[
                        k8s.V1Container(
                            name=NAME,
                            image=IMAGE,
                            command=["/manager"],
                            args=["--feature-gates=RayClusterStatusConditions=true"],
                            ports=[k8s.V1ContainerPort(name="http", container_port=8080)],
                            resources=k8s.V1ResourceRequirements(
                                requests={"cpu": "100m", "memory": "512Mi"}, limits={"memory": "512Mi"}
                            ),
                            security_context=k8s.V1SecurityContext(
                                allow_privilege_escalation=False, run_as_non_root=True
                            ),
                        )
                    ],
                ),
            ),
        ),
    )
    objects: list[Any] = [
        k8s.V1Namespace(api_version="v1", kind="Namespace", metadata=meta(NAMESPACE)),
        k8s.V1ServiceAccount(api_version="v1", kind="ServiceAccount", metadata=meta(NAME, NAMESPACE)),
        k8s.V1ClusterRole(
            api_version="rbac.authorization.k8s.io/v1", kind="ClusterRole", metadata=meta(NAME), rules=rules
        ),
        k8s.V1ClusterRoleBinding(
            api_version="rbac.authorization.k8s.io/v1",
            kind="ClusterRoleBinding",
            metadata=meta(NAME),
            role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=NAME),
            subjects=[k8s.RbacV1Subject(kind="ServiceAccount", name=NAME, namespace=NAMESPACE)],
        ),
        *crds,
        deployment,
    ]
    api: Any = k8s.ApiClient()
    return [dict(api.sanitize_for_serialization(o)) for o in objects]


def object_ref(obj: dict[str, Any]) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped) of an object."""
    ns = obj["metadata"].get("namespace")
    return f"{obj['kind']}/{ns + '/' if ns else ''}{obj['metadata']['name']}"


KINDS: tuple[tuple[str, str], ...] = (
    ("v1", "Namespace"),
    ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("apps/v1", "Deployment"),
)
"""``(apiVersion, kind)`` of every object kind the operator is made of (read back by label)."""
