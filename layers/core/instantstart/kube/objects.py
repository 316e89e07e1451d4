"""Kubernetes objects the control plane applies, built in Python (never templated from strings).

Inputs are validated names (cluster tag, bucket, Region), so every field value is data, not code.
"""

from __future__ import annotations

from typing import Any

HYPERPOD_NAMESPACE = "aws-hyperpod"
MANAGED_LABELS = {"app.kubernetes.io/managed-by": "instantstart"}
HYPERPOD_NODE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "sagemaker.amazonaws.com/compute-type",
                            "operator": "In",
                            "values": ["hyperpod"],
                        }
                    ]
                }
            ]
        }
    }
}
S3_CSI_DRIVER = "s3.csi.aws.com"


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**MANAGED_LABELS, **(labels or {})}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _daemonset(
    name: str,
    namespace: str,
    image: str,
    *,
    service_account: str | None = None,
    privileged: bool = False,
    args: list[str] | None = None,
    host_paths: dict[str, str] | None = None,
) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": name}
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
    }
    if args:
        container["args"] = args
    if privileged:
        container["securityContext"] = {"privileged": True}
    volumes = []
    if host_paths:
        container["volumeMounts"] = [{"name": vol, "mountPath": path} for vol, path in host_paths.items()]
        volumes = [{"name": vol, "hostPath": {"path": path}} for vol, path in host_paths.items()]
    pod_spec: dict[str, Any] = {
        "affinity": HYPERPOD_NODE_AFFINITY,
        "tolerations": [{"operator": "Exists"}],
        "priorityClassName": "system-node-critical",
        "containers": [container],
    }
    if volumes:
        pod_spec["volumes"] = volumes
    if service_account:
        pod_spec["serviceAccountName"] = service_account
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(name, namespace, labels),
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": {**MANAGED_LABELS, **labels}}, "spec": pod_spec},
        },
    }


def hyperpod_prerequisites(region: str) -> list[dict[str, Any]]:
    """What HyperPod on EKS needs in the cluster before nodes join, in apply order.

    The ``aws-hyperpod`` namespace, the health-monitoring agent (service account, RBAC, DaemonSet:
    it labels nodes with ``sagemaker.amazonaws.com/node-health-status`` and drives node recovery),
    and the NVIDIA and EFA device plugins (DaemonSets on HyperPod nodes) that expose
    ``nvidia.com/gpu`` and ``vpc.amazonaws.com/efa`` to the scheduler.
    """
    agent = "health-monitoring-agent"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(HYPERPOD_NAMESPACE)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(agent, HYPERPOD_NAMESPACE)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(f"{HYPERPOD_NAMESPACE}:{agent}"),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["nodes"],
                    "verbs": ["get", "list", "watch", "patch", "update"],
                },
                {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch", "update"]},
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(f"{HYPERPOD_NAMESPACE}:{agent}"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{HYPERPOD_NAMESPACE}:{agent}",
            },
            "subjects": [{"kind": "ServiceAccount", "name": agent, "namespace": HYPERPOD_NAMESPACE}],
        },
        _daemonset(
            agent,
            HYPERPOD_NAMESPACE,
            f"905418368575.dkr.ecr.{region}.amazonaws.com/hyperpod-health-monitoring-agent:1.0.790.0",
            service_account=agent,
            privileged=True,
            host_paths={"log": "/var/log"},
        ),
        _daemonset(
            "nvidia-device-plugin",
            "kube-system",
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
            privileged=True,
            host_paths={"device-plugin": "/var/lib/kubelet/device-plugins"},
        ),
        _daemonset(
            "aws-efa-k8s-device-plugin",
            "kube-system",
            f"602401143452.dkr.ecr.{region}.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6",
            privileged=True,
            host_paths={"device-plugin": "/var/lib/kubelet/device-plugins"},
        ),
    ]


S3_CLAIM = "s3-claim"
S3_VOLUME = "s3-pv"
STORAGE_NAMESPACE = "default"
STORAGE_CAPACITY = "1200Gi"  # ignored by the Mountpoint CSI driver; required by the PV schema


def s3_persistent_volume(bucket: str, region: str) -> dict[str, Any]:
    """Static PersistentVolume of the Mountpoint for Amazon S3 CSI driver for ``bucket``.

    ReadWriteMany, mount options ``allow-delete`` and the bucket's Region, bound to ``s3-claim``.
    """
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": _meta(S3_VOLUME),
        "spec": {
            "capacity": {"storage": STORAGE_CAPACITY},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": ["allow-delete", f"region {region}"],
            "claimRef": {"namespace": STORAGE_NAMESPACE, "name": S3_CLAIM},
            "csi": {
                "driver": S3_CSI_DRIVER,
                "volumeHandle": f"s3-csi-{bucket}",
                "volumeAttributes": {"bucketName": bucket},
            },
        },
    }


def s3_persistent_volume_claim() -> dict[str, Any]:
    """The ``s3-claim`` PersistentVolumeClaim (namespace ``default``) bound to :func:`s3_persistent_volume`."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(S3_CLAIM, STORAGE_NAMESPACE),
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": S3_VOLUME,
            "resources": {"requests": {"storage": STORAGE_CAPACITY}},
        },
    }


KARPENTER_NODE_POOL = ("karpenter.sh/v1", "NodePool")
"""apiVersion and kind of Karpenter's NodePool (cluster-scoped; HyperPod's managed Karpenter serves it)."""
HYPERPOD_NODE_CLASS = ("karpenter.sagemaker.amazonaws.com/v1", "HyperpodNodeClass")
"""apiVersion and kind of HyperPod's node class (cluster-scoped): the instance groups Karpenter scales."""
KARPENTER_OBJECT_NAME = "instantstart"
"""Name of the NodePool and of the HyperpodNodeClass this control plane applies (one of each per cluster)."""


def hyperpod_node_class(instance_groups: list[str], name: str = KARPENTER_OBJECT_NAME) -> dict[str, Any]:
    """The ``HyperpodNodeClass`` listing ``instance_groups`` (at most 10, checked by ``capacity.autoscaling``).

    https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-autoscaling-nodeclass.html
    """
    api_version, kind = HYPERPOD_NODE_CLASS
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _meta(name, labels=MANAGED_LABELS),
        "spec": {"instanceGroups": list(instance_groups)},
    }


def karpenter_node_pool(
    *,
    consolidate_after: str,
    limits: dict[str, str] | None = None,
    node_class: str = KARPENTER_OBJECT_NAME,
    name: str = KARPENTER_OBJECT_NAME,
) -> dict[str, Any]:
    """The ``NodePool`` over ``node_class``: consolidation on (empty or underutilised nodes removed after
    ``consolidate_after``), any instance type of the node class's groups, nodes never expire, ``limits``.

    https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-autoscaling-nodepool.html
    """
    api_version, kind = KARPENTER_NODE_POOL
    group, class_kind = HYPERPOD_NODE_CLASS[0].split("/")[0], HYPERPOD_NODE_CLASS[1]
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": dict(MANAGED_LABELS)},
            "spec": {
                "nodeClassRef": {"group": group, "kind": class_kind, "name": node_class},
                "expireAfter": "Never",
                "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "Exists"}],
            },
        },
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": consolidate_after},
    }
    if limits:
        spec["limits"] = dict(limits)
    return {"apiVersion": api_version, "kind": kind, "metadata": _meta(name, labels=MANAGED_LABELS), "spec": spec}
