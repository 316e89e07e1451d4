"""Names and ownership tags of everything the control plane creates for a cluster tag.

The cluster tag is validated against ``CLUSTER_TAG_PATTERN`` before any of these are built, so the
names are always valid AWS and Kubernetes names.
"""

from __future__ import annotations

from typing import Any

TAG_KEY = "instantstart:cluster-tag"
MANAGED_KEY = "instantstart:managed"
ROLE_KEY = "instantstart:role"
INSTANCE_GROUP_KEY = "instantstart:instance-group"
"""Tag of a dedicated compute subnet: the instance group it was created for."""
API_KUBERNETES_GROUP = "instantstart-api"
"""The Kubernetes group of the API function's access entry (its ``kubernetesGroups``): RBAC bindings in the cluster
grant it what EKS's view policy lacks (``services/proxy`` in the inference namespace, to invoke a model server)."""


def eks_cluster_name(tag: str) -> str:
    """EKS cluster name: ``eks-cluster-<tag>``."""
    return f"eks-cluster-{tag}"


def hyperpod_cluster_name(tag: str) -> str:
    """HyperPod cluster name: ``hp-cluster-<tag>``."""
    return f"hp-cluster-{tag}"


def tag_from_hyperpod_cluster_name(name: str) -> str | None:
    """The cluster tag of a HyperPod cluster name we created, or None for anyone else's cluster."""
    prefix = "hp-cluster-"
    return name[len(prefix) :] if name.startswith(prefix) else None


def tag_from_eks_cluster_name(name: str) -> str | None:
    """The cluster tag of an EKS cluster name we created, or None for anyone else's cluster."""
    prefix = "eks-cluster-"
    return name[len(prefix) :] if name.startswith(prefix) else None


def compute_subnet_name(az: str) -> str:
    """Name tag of the per-AZ HyperPod compute subnet: ``hp-compute-<az>``."""
    return f"hp-compute-{az}"


def dedicated_subnet_name(instance_group_name: str) -> str:
    """Name tag of an instance group's dedicated compute subnet (``dedicatedSubnet``): ``hp-group-<name>``."""
    return f"hp-group-{instance_group_name}"


def storage_bucket_name(tag: str, account_id: str, region: str) -> str:
    """S3 bucket of the cluster's ``s3-claim`` volume (globally unique per account and Region)."""
    return f"instantstart-{tag}-{account_id}-{region}"[:63].rstrip("-")


def storage_role_name(tag: str) -> str:
    """IAM role of the Mountpoint for S3 CSI driver of the cluster."""
    return f"instantstart-{tag}-s3-csi"


def ownership_tags(tag: str, **extra: str) -> dict[str, str]:
    """The ownership tags every AWS resource of the cluster carries (plus ``extra``)."""
    return {TAG_KEY: tag, MANAGED_KEY: "true", **extra}


def tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    """Tags as the ``[{"Key", "Value"}]`` list EC2, IAM, S3 and SageMaker take."""
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def owned_by(tags: Any, tag: str) -> bool:
    """True when an AWS tag list or map carries this cluster tag and the managed marker.

    The control plane refuses to modify or delete a resource without its ownership tags.
    """
    if isinstance(tags, list):
        tags = {t.get("Key"): t.get("Value") for t in tags}
    return bool(tags) and tags.get(TAG_KEY) == tag and tags.get(MANAGED_KEY) == "true"


def scheduler_config_name(tag: str) -> str:
    """SageMaker Name of the cluster's scheduler config (cluster policy): ``<tag>-scheduler-config``."""
    return f"{tag}-scheduler-config"


def compute_quota_name(tag: str, team: str) -> str:
    """SageMaker Name of a team's compute quota on the cluster: ``<tag>-<team>`` (deterministic: retries find it)."""
    return f"{tag}-{team}"
