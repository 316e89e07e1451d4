"""The EKS add-on catalog of the sandbox: one data entry per add-on.

Each entry says what DescribeAddonVersions answers for the add-on (type, owner, publisher,
versions) and what the add-on installs into the cluster's Kubernetes API once ACTIVE (namespace,
DaemonSets/Deployments, CRDs, CSIDrivers, service accounts). :func:`addon_objects` turns an entry
into Kubernetes objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ECR = "602401143452.dkr.ecr.{region}.amazonaws.com"
KUBERNETES_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33")


@dataclass(frozen=True)
class Workload:
    """A DaemonSet or Deployment an add-on runs."""

    kind: str  # DaemonSet | Deployment
    name: str
    image: str  # repository path below the registry, without tag
    replicas: int = 2
    service_account: str | None = None


@dataclass(frozen=True)
class Crd:
    """A CustomResourceDefinition an add-on installs."""

    group: str
    kind: str
    plural: str
    versions: tuple[str, ...] = ("v1",)
    scope: str = "Namespaced"
    spec_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class AddonSpec:
    """One add-on of the catalog."""

    name: str
    type: str
    versions: tuple[str, ...]  # newest first; "{k8s}" is replaced by the cluster's minor version
    namespace: str
    owner: str = "aws"
    publisher: str = "eks"
    owns_namespace: bool = False
    create_seconds: int = 90
    requires: tuple[str, ...] = ()
    pod_identity_service_accounts: tuple[str, ...] = ()
    requires_iam_permissions: bool = False
    workloads: tuple[Workload, ...] = ()
    crds: tuple[Crd, ...] = ()
    csi_drivers: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)


def _obj(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, **(spec or {})}


_PYTORCHJOB_SPEC: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "properties": {
        "nprocPerNode": {"type": "string"},
        "replicaSpecs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "template"],
                "properties": {
                    "name": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 0},
                    "spares": {"type": "integer", "minimum": 0},
                    "template": _obj(),
                },
            },
        },
        "runPolicy": {
            "type": "object",
            "properties": {
                "jobMaxRetryCount": {"type": "integer", "minimum": 0},
                "cleanPodPolicy": {"type": "string", "enum": ["All", "OnlyComplete", "None"]},
                "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0},
                "restartPolicy": _obj(),
                "logMonitoringConfiguration": {"type": "array", "items": _obj()},
            },
        },
    },
}

CATALOG: dict[str, AddonSpec] = {
    spec.name: spec
    for spec in (
        AddonSpec(
            name="vpc-cni",
            type="networking",
            versions=("v1.19.2-eksbuild.1", "v1.18.6-eksbuild.1"),
            namespace="kube-system",
            create_seconds=75,
            pod_identity_service_accounts=("aws-node",),
            workloads=(Workload("DaemonSet", "aws-node", "amazon-k8s-cni", service_account="aws-node"),),
        ),
        AddonSpec(
            name="kube-proxy",
            type="networking",
            versions=("v{k8s}.3-eksbuild.2", "v{k8s}.0-eksbuild.2"),
            namespace="kube-system",
            create_seconds=60,
            workloads=(Workload("DaemonSet", "kube-proxy", "eks/kube-proxy"),),
        ),
        AddonSpec(
            name="coredns",
            type="networking",
            versions=("v1.11.4-eksbuild.2", "v1.11.3-eksbuild.1"),
            namespace="kube-system",
            create_seconds=80,
            workloads=(Workload("Deployment", "coredns", "eks/coredns", service_account="coredns"),),
            labels={"k8s-app": "kube-dns"},
        ),
        AddonSpec(
            name="eks-pod-identity-agent",
            type="security",
            versions=("v1.3.4-eksbuild.1", "v1.3.2-eksbuild.2"),
            namespace="kube-system",
            create_seconds=65,
            workloads=(Workload("DaemonSet", "eks-pod-identity-agent", "eks/eks-pod-identity-agent"),),
        ),
        AddonSpec(
            name="cert-manager",
            type="security",
            versions=("v1.17.2-eksbuild.1", "v1.16.3-eksbuild.1"),
            namespace="cert-manager",
            owner="community",
            owns_namespace=True,
            create_seconds=120,
            workloads=(
                Workload("Deployment", "cert-manager", "cert-manager/cert-manager-controller", 1, "cert-manager"),
                Workload(
                    "Deployment",
                    "cert-manager-cainjector",
                    "cert-manager/cert-manager-cainjector",
                    1,
                    "cert-manager-cainjector",
                ),
                Workload(
                    "Deployment",
                    "cert-manager-webhook",
                    "cert-manager/cert-manager-webhook",
                    1,
                    "cert-manager-webhook",
                ),
            ),
            crds=(
                Crd("cert-manager.io", "Certificate", "certificates"),
                Crd("cert-manager.io", "CertificateRequest", "certificaterequests"),
                Crd("cert-manager.io", "Issuer", "issuers"),
                Crd("cert-manager.io", "ClusterIssuer", "clusterissuers", scope="Cluster"),
            ),
        ),
        AddonSpec(
            name="metrics-server",
            type="observability",
            versions=("v0.7.2-eksbuild.3", "v0.7.2-eksbuild.1"),
            namespace="kube-system",
            owner="community",
            create_seconds=70,
            workloads=(Workload("Deployment", "metrics-server", "eks/metrics-server", 2, "metrics-server"),),
        ),
        # v2 (the default since 2025) adds a controller Deployment that creates the Mountpoint pods
        AddonSpec(
            name="aws-mountpoint-s3-csi-driver",
            type="storage",
            versions=("v2.1.0-eksbuild.1", "v2.0.0-eksbuild.1"),
            namespace="kube-system",
            create_seconds=100,
            requires_iam_permissions=True,
            pod_identity_service_accounts=("s3-csi-driver-sa",),
            workloads=(
                Workload(
                    "Deployment",
                    "s3-csi-controller",
                    "mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver",
                    1,
                    "s3-csi-driver-controller-sa",
                ),
                Workload(
                    "DaemonSet",
                    "s3-csi-node",
                    "mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver",
                    1,
                    "s3-csi-driver-sa",
                ),
            ),
            crds=(
                Crd(
                    "s3.csi.aws.com",
                    "MountpointS3PodAttachment",
                    "mountpoints3podattachments",
                    ("v2",),
                    "Cluster",
                ),
            ),
            csi_drivers=("s3.csi.aws.com",),
        ),
        AddonSpec(
            name="aws-fsx-csi-driver",
            type="storage",
            versions=("v1.5.0-eksbuild.1", "v1.4.0-eksbuild.1"),
            namespace="kube-system",
            create_seconds=110,
            requires_iam_permissions=True,
            pod_identity_service_accounts=("fsx-csi-controller-sa",),
            workloads=(
                Workload("Deployment", "fsx-csi-controller", "aws-fsx-csi-driver", 2, "fsx-csi-controller-sa"),
                Workload("DaemonSet", "fsx-csi-node", "aws-fsx-csi-driver", 1, "fsx-csi-node-sa"),
            ),
            csi_drivers=("fsx.csi.aws.com",),
        ),
        AddonSpec(
            name="amazon-cloudwatch-observability",
            type="observability",
            versions=("v4.1.0-eksbuild.1", "v3.6.0-eksbuild.2"),
            namespace="amazon-cloudwatch",
            owns_namespace=True,
            create_seconds=150,
            requires_iam_permissions=True,
            pod_identity_service_accounts=("cloudwatch-agent",),
            workloads=(
                Workload(
                    "Deployment",
                    "amazon-cloudwatch-observability-controller-manager",
                    "cloudwatch-agent/cloudwatch-agent-operator",
                    1,
                ),
                Workload(
                    "DaemonSet",
                    "cloudwatch-agent",
                    "cloudwatch-agent/cloudwatch-agent",
                    1,
                    "cloudwatch-agent",
                ),
                Workload("DaemonSet", "fluent-bit", "aws-for-fluent-bit", 1, "cloudwatch-agent"),
            ),
            crds=(
                Crd(
                    "cloudwatch.aws.amazon.com",
                    "AmazonCloudWatchAgent",
                    "amazoncloudwatchagents",
                    ("v1alpha1",),
                ),
            ),
        ),
        AddonSpec(
            name="amazon-sagemaker-hyperpod-training-operator",
            type="machine-learning",
            versions=("v1.1.0-eksbuild.1", "v1.0.0-eksbuild.1"),
            namespace="aws-hyperpod",
            owns_namespace=True,
            create_seconds=150,
            requires=("cert-manager", "eks-pod-identity-agent"),
            requires_iam_permissions=True,
            pod_identity_service_accounts=("hp-training-operator-controller-manager",),
            workloads=(
                Workload(
                    "Deployment",
                    "hp-training-operator-controller-manager",
                    "hyperpod-training-operator",
                    1,
                    "hp-training-operator-controller-manager",
                ),
            ),
            crds=(
                Crd(
                    "sagemaker.amazonaws.com",
                    "HyperPodPyTorchJob",
                    "hyperpodpytorchjobs",
                    ("v1",),
                    "Namespaced",
                    _PYTORCHJOB_SPEC,
                ),
            ),
        ),
        AddonSpec(
            name="amazon-sagemaker-hyperpod-inference",
            type="machine-learning",
            versions=("v1.0.0-eksbuild.1",),
            namespace="hyperpod-inference-system",
            owns_namespace=True,
            create_seconds=180,
            requires=("cert-manager",),
            requires_iam_permissions=True,
            pod_identity_service_accounts=("hyperpod-inference-operator-controller-manager",),
            workloads=(
                Workload(
                    "Deployment",
                    "hyperpod-inference-operator-controller-manager",
                    "hyperpod-inference-operator",
                    1,
                    "hyperpod-inference-operator-controller-manager",
                ),
            ),
            crds=(
                Crd(
                    "inference.sagemaker.aws.amazon.com",
                    "InferenceEndpointConfig",
                    "inferenceendpointconfigs",
                    ("v1", "v1alpha1"),
                ),
                Crd(
                    "inference.sagemaker.aws.amazon.com",
                    "JumpStartModel",
                    "jumpstartmodels",
                    ("v1", "v1alpha1"),
                ),
            ),
        ),
        AddonSpec(
            name="amazon-sagemaker-hyperpod-observability",
            type="observability",
            versions=("v1.0.1-eksbuild.1", "v1.0.0-eksbuild.1"),
            namespace="hyperpod-observability",
            owns_namespace=True,
            create_seconds=140,
            requires_iam_permissions=True,
            pod_identity_service_accounts=("hyperpod-observability-operator-otel-collector",),
            workloads=(
                Workload("Deployment", "hyperpod-observability-operator", "hyperpod-observability-operator", 1),
                Workload(
                    "DaemonSet",
                    "hyperpod-node-collector",
                    "hyperpod-observability-collector",
                    1,
                    "hyperpod-observability-operator-otel-collector",
                ),
            ),
        ),
        AddonSpec(
            name="amazon-sagemaker-hyperpod-taskgovernance",
            type="machine-learning",
            versions=("v1.2.0-eksbuild.1", "v1.1.0-eksbuild.1"),
            namespace="kueue-system",
            owns_namespace=True,
            create_seconds=130,
            workloads=(
                Workload("Deployment", "kueue-controller-manager", "kueue/kueue", 1, "kueue-controller-manager"),
            ),
            crds=(
                Crd("kueue.x-k8s.io", "ClusterQueue", "clusterqueues", ("v1beta1",), "Cluster"),
                Crd("kueue.x-k8s.io", "LocalQueue", "localqueues", ("v1beta1",)),
                Crd("kueue.x-k8s.io", "ResourceFlavor", "resourceflavors", ("v1beta1",), "Cluster"),
                Crd("kueue.x-k8s.io", "Workload", "workloads", ("v1beta1",)),
                Crd(
                    "kueue.x-k8s.io",
                    "WorkloadPriorityClass",
                    "workloadpriorityclasses",
                    ("v1beta1",),
                    "Cluster",
                ),
            ),
        ),
    )
}


def versions_for(spec: AddonSpec, kubernetes_version: str) -> list[str]:
    """The add-on versions compatible with ``kubernetes_version``, newest (default) first."""
    return [v.replace("{k8s}", kubernetes_version) for v in spec.versions]


def addon_version_info(spec: AddonSpec, kubernetes_versions: tuple[str, ...]) -> list[dict[str, Any]]:
    """``addonVersions`` of DescribeAddonVersions for ``spec`` across ``kubernetes_versions``."""
    by_version: dict[str, list[dict[str, Any]]] = {}
    for k8s in kubernetes_versions:
        for index, version in enumerate(versions_for(spec, k8s)):
            by_version.setdefault(version, []).append(
                {"clusterVersion": k8s, "platformVersions": ["*"], "defaultVersion": index == 0}
            )
    return [
        {
            "addonVersion": version,
            "architecture": ["amd64", "arm64"],
            "computeTypes": ["ec2", "hyperpod"],
            "compatibilities": compat,
            "requiresConfiguration": False,
            "requiresIamPermissions": spec.requires_iam_permissions,
        }
        for version, compat in by_version.items()
    ]


def _crd_object(crd: Crd) -> dict[str, Any]:
    spec_schema = crd.spec_schema or _obj()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{crd.plural}.{crd.group}"},
        "spec": {
            "group": crd.group,
            "names": {
                "kind": crd.kind,
                "listKind": f"{crd.kind}List",
                "plural": crd.plural,
                "singular": crd.kind.lower(),
            },
            "scope": crd.scope,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": index == 0,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                                "status": _obj(),
                            },
                        }
                    },
                }
                for index, version in enumerate(crd.versions)
            ],
        },
    }


def addon_objects(spec: AddonSpec, version: str, region: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """The Kubernetes objects add-on ``spec`` at ``version`` installs, in apply order.

    The namespace comes first (applying an existing one is harmless), then CRDs, CSIDrivers,
    ServiceAccounts and workloads.
    """
    ns = namespace or spec.namespace
    managed = {
        "app.kubernetes.io/managed-by": "EKS",
        "eks.amazonaws.com/addon": spec.name,
    }
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    objects += [_crd_object(crd) for crd in spec.crds]
    for driver in spec.csi_drivers:
        objects.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIDriver",
                "metadata": {"name": driver, "labels": dict(managed)},
                "spec": {"attachRequired": False, "podInfoOnMount": True, "fsGroupPolicy": "File"},
            }
        )
    service_accounts = sorted({w.service_account for w in spec.workloads if w.service_account})
    for sa in service_accounts:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": sa, "namespace": ns, "labels": managed},
            }
        )
    for workload in spec.workloads:
        labels = {"app.kubernetes.io/name": workload.name, **spec.labels}
        pod_spec: dict[str, Any] = {
            "containers": [
                {
                    "name": workload.name,
                    "image": f"{ECR.format(region=region)}/{workload.image}:{version}",
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                }
            ],
        }
        if workload.service_account:
            pod_spec["serviceAccountName"] = workload.service_account
        body: dict[str, Any] = {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        }
        if workload.kind == "Deployment":
            body["replicas"] = workload.replicas
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": workload.kind,
                "metadata": {"name": workload.name, "namespace": ns, "labels": {**labels, **managed}},
                "spec": body,
            }
        )
    return objects
