"""The rules a training job request must pass before anything is written, one function each.

Used by the API (``POST /clusters/{clusterTag}/training-jobs``), the MCP tool (through the API) and the change's
apply step. Each raises the API's error: 409 for a feature that is off, 422 naming the field with the numbers.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.errors import Conflict, UpstreamUnavailable, ValidationFailed
from instantstart.models.training_jobs import TRAINING_OPERATOR_ADDON, TRAINING_OPERATOR_FEATURE
from instantstart.training.builders import InstanceFacts


def training_operator_not_enabled(tag: str, status: str | None) -> Conflict:
    """409 ``FeatureNotEnabled`` naming the ``trainingOperator`` feature and the PATCH body that turns it on."""
    seen = f"is {status}" if status else "is not installed"
    return Conflict(
        f"the HyperPod training operator is not enabled on cluster '{tag}': the EKS add-on {TRAINING_OPERATOR_ADDON} "
        f"{seen}. Turn on the '{TRAINING_OPERATOR_FEATURE}' feature with PATCH /clusters/{tag}/features "
        f'{{"{TRAINING_OPERATOR_FEATURE}": {{"enabled": true}}}} and retry once it is ACTIVE',
        code="FeatureNotEnabled",
        details=[
            {
                "field": TRAINING_OPERATOR_FEATURE,
                "status": status or "NOT_INSTALLED",
                "addonName": TRAINING_OPERATOR_ADDON,
                "enableWith": {
                    "method": "PATCH",
                    "path": f"/clusters/{tag}/features",
                    "body": {TRAINING_OPERATOR_FEATURE: {"enabled": True}},
                },
            }
        ],
    )


def require_training_operator(eks: Any, tag: str, eks_cluster: str) -> None:
    """Refuse unless the training operator add-on is ACTIVE (EKS ``DescribeAddon``,
    https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAddon.html).

    An imported cluster whose operator was installed as the same EKS add-on passes the same way.

    Raises:
        Conflict: ``FeatureNotEnabled`` (:func:`training_operator_not_enabled`) with the add-on's status.
        UpstreamUnavailable: EKS failed otherwise.
    """
    try:
        addon = eks.describe_addon(clusterName=eks_cluster, addonName=TRAINING_OPERATOR_ADDON)["addon"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            raise training_operator_not_enabled(tag, None) from exc
        raise UpstreamUnavailable(f"EKS DescribeAddon failed ({error_code(exc)}: {error_message(exc)})") from exc
    status = str(addon.get("status") or "")
    if status != "ACTIVE":
        raise training_operator_not_enabled(tag, status)


def instance_facts(ec2: Any, instance_type: str) -> InstanceFacts:
    """GPUs, EFA interfaces, memory and vCPUs of ``instance_type`` from EC2 ``DescribeInstanceTypes`` for the type
    without the ``ml.`` prefix (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html).

    Raises:
        ValidationFailed: EC2 does not know the type (422 naming ``instanceType``).
        UpstreamUnavailable: EC2 failed otherwise.
    """
    ec2_type = instance_type.removeprefix("ml.")
    try:
        found = ec2.describe_instance_types(InstanceTypes=[ec2_type]).get("InstanceTypes", [])
    except ClientError as exc:
        if error_code(exc) in ("InvalidInstanceType", "InvalidParameterValue"):
            found = []
        else:
            raise UpstreamUnavailable(
                f"EC2 DescribeInstanceTypes failed ({error_code(exc)}: {error_message(exc)})"
            ) from exc
    if not found:
        raise ValidationFailed(
            f"instanceType {instance_type} is not an instance type EC2 knows ({ec2_type})",
            code="ValidationError",
            details=[{"field": "instanceType", "message": f"EC2 does not describe {ec2_type}"}],
        )
    info = found[0]
    gpus = sum(int(g.get("Count", 0)) for g in (info.get("GpuInfo") or {}).get("Gpus", []))
    efa = int(((info.get("NetworkInfo") or {}).get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0))
    return InstanceFacts(
        instance_type=instance_type,
        gpus=gpus,
        efa=efa,
        memory_mib=int((info.get("MemoryInfo") or {}).get("SizeInMiB", 0)),
        vcpus=int((info.get("VCpuInfo") or {}).get("DefaultVCpus", 0)),
    )


def check_gpus_fit(nproc_per_node: int | None, facts: InstanceFacts) -> None:
    """Refuse more GPUs per pod than the instance type has (``nprocPerNode`` > the type's GPUs).

    Raises:
        ValidationFailed: 422 naming ``nprocPerNode`` with both numbers.
    """
    if nproc_per_node is not None and facts.gpus > 0 and nproc_per_node > facts.gpus:
        raise ValidationFailed(
            f"nprocPerNode {nproc_per_node} asks for more GPUs per pod than {facts.instance_type} has ({facts.gpus})",
            details=[
                {
                    "field": "nprocPerNode",
                    "message": f"at most {facts.gpus} on {facts.instance_type}",
                    "requested": nproc_per_node,
                    "available": facts.gpus,
                }
            ],
        )


def nodes_of_type(described_cluster: dict[str, Any], instance_type: str) -> int:
    """Nodes the HyperPod cluster's groups of ``instance_type`` hold: their ``TargetCount`` (else ``CurrentCount``)
    summed, from SageMaker ``DescribeCluster`` (``InstanceGroups``)."""
    total = 0
    for group in described_cluster.get("InstanceGroups", []):
        if group.get("InstanceType") == instance_type:
            total += int(group.get("TargetCount", group.get("CurrentCount", 0)) or 0)
    return total


def check_nodes_fit(
    nodes: int, instance_type: str, described_cluster: dict[str, Any], *, karpenter_groups: Collection[str] = ()
) -> None:
    """Refuse more nodes than the cluster's groups of that type hold, unless managed Karpenter scales one of them.

    A group in ``karpenter_groups`` (the HyperpodNodeClass's groups while managed Karpenter is on) may stand at 0
    nodes: Karpenter adds nodes for the job's pending pods (scale from zero), up to the NodePool's limits, so its
    type is accepted with any ``nodes``.

    Raises:
        ValidationFailed: 422 naming ``nodes`` (or ``instanceType`` when no group has the type) with the numbers.
    """
    scaled = [
        str(g.get("InstanceGroupName"))
        for g in described_cluster.get("InstanceGroups", [])
        if g.get("InstanceType") == instance_type and g.get("InstanceGroupName") in set(karpenter_groups)
    ]
    if scaled:
        return
    held = nodes_of_type(described_cluster, instance_type)
    if held == 0:
        types = sorted({str(g.get("InstanceType")) for g in described_cluster.get("InstanceGroups", [])})
        raise ValidationFailed(
            f"instanceType {instance_type}: no instance group of the cluster has this type with nodes, and managed "
            f"Karpenter scales none of this type (types with groups: {', '.join(types) or 'none'})",
            details=[
                {
                    "field": "instanceType",
                    "message": "no instance group of this type holds nodes or is scaled by managed Karpenter",
                    "available": 0,
                }
            ],
        )
    if nodes > held:
        raise ValidationFailed(
            f"nodes {nodes} is more than the cluster's {instance_type} groups hold ({held})",
            details=[
                {
                    "field": "nodes",
                    "message": f"at most {held} of {instance_type}",
                    "requested": nodes,
                    "available": held,
                }
            ],
        )
