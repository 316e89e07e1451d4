"""Node shapes of ``ml.*`` instance types: what a HyperPod node reports as capacity/allocatable."""

from __future__ import annotations

import re
from dataclasses import dataclass

# (vCPUs, memory GiB, NVIDIA GPUs) of the GPU shapes HyperPod offers.
_G5_G6 = {
    "xlarge": (4, 16, 1),
    "2xlarge": (8, 32, 1),
    "4xlarge": (16, 64, 1),
    "8xlarge": (32, 128, 1),
    "12xlarge": (48, 192, 4),
    "16xlarge": (64, 256, 1),
    "24xlarge": (96, 384, 4),
    "48xlarge": (192, 768, 8),
}
_G6E = {
    "xlarge": (4, 32, 1),
    "2xlarge": (8, 64, 1),
    "4xlarge": (16, 128, 1),
    "8xlarge": (32, 256, 1),
    "12xlarge": (48, 384, 4),
    "16xlarge": (64, 512, 1),
    "24xlarge": (96, 768, 4),
    "48xlarge": (192, 1536, 8),
}
GPU_SHAPES: dict[str, tuple[int, int, int]] = {
    **{f"g5.{size}": shape for size, shape in _G5_G6.items()},
    **{f"g6.{size}": shape for size, shape in _G5_G6.items()},
    **{f"g6e.{size}": shape for size, shape in _G6E.items()},
    "p4d.24xlarge": (96, 1152, 8),
    "p4de.24xlarge": (96, 1152, 8),
    "p5.4xlarge": (16, 256, 1),
    "p5.48xlarge": (192, 2048, 8),
    "p5e.48xlarge": (192, 2048, 8),
    "p5en.48xlarge": (192, 2048, 8),
    "p6-b200.48xlarge": (192, 2048, 8),
}
# (vCPUs, memory GiB, Neuron devices)
NEURON_SHAPES: dict[str, tuple[int, int, int]] = {
    "trn1.32xlarge": (128, 512, 16),
    "trn1n.32xlarge": (128, 512, 16),
    "trn2.48xlarge": (192, 2048, 16),
}


def efa_interfaces(ec2_type: str) -> int:
    """The EFA interfaces a node of ``ec2_type`` (no ``ml.`` prefix) advertises as ``vpc.amazonaws.com/efa``: EC2's
    ``DescribeInstanceTypes`` ``NetworkInfo.EfaInfo.MaximumEfaInterfaces`` (moto's copy of EC2's data), 0 without
    EFA. One source with what the control plane reads (``training/rules.py``), so a pod that asks for the EFA EC2
    lists (g5.8xlarge and larger included) finds it on the node."""
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    network = INSTANCE_TYPES.get(ec2_type, {}).get("NetworkInfo", {})
    return int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces") or 0) if network.get("EfaSupported") else 0


_MEMORY_PER_VCPU = {"c": 2, "m": 4, "r": 8, "t": 4, "i": 8}


@dataclass(frozen=True)
class NodeShape:
    """Resources of one node of an instance type."""

    vcpus: int
    memory_gib: int
    gpus: int = 0
    neuron_devices: int = 0
    efa: int = 0

    def capacity(self) -> dict[str, str]:
        """Kubernetes ``status.capacity``."""
        out = {
            "cpu": str(self.vcpus),
            "memory": f"{int(self.memory_gib * 1024 * 1024 * 0.97)}Ki",
            "pods": "110" if self.vcpus < 48 else "250",
            "ephemeral-storage": "524275692Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }
        if self.gpus:
            out["nvidia.com/gpu"] = str(self.gpus)
        if self.neuron_devices:
            out["aws.amazon.com/neuron"] = str(self.neuron_devices)
            out["aws.amazon.com/neurondevice"] = str(self.neuron_devices)
        if self.efa:
            out["vpc.amazonaws.com/efa"] = str(self.efa)
        return out

    def allocatable(self) -> dict[str, str]:
        """Kubernetes ``status.allocatable`` (capacity minus the kubelet/system reservations EKS makes)."""
        out = self.capacity()
        reserved_millicores = 60 + 10 + (5 * min(2, max(0, self.vcpus - 2))) + int(2.5 * max(0, self.vcpus - 4))
        out["cpu"] = f"{self.vcpus * 1000 - reserved_millicores}m"
        capacity_ki = int(self.memory_gib * 1024 * 1024 * 0.97)
        reserved_ki = (255 + 11 * int(out["pods"]) + 100) * 1024
        out["memory"] = f"{max(0, capacity_ki - reserved_ki)}Ki"
        out["ephemeral-storage"] = "483175840402"
        return out


def node_shape(instance_type: str) -> NodeShape:
    """The node shape of ``instance_type`` (``ml.`` prefix optional); a sensible default for others."""
    ec2_type = instance_type.removeprefix("ml.")
    if ec2_type in GPU_SHAPES:
        vcpus, memory, gpus = GPU_SHAPES[ec2_type]
        return NodeShape(vcpus, memory, gpus=gpus, efa=efa_interfaces(ec2_type))
    if ec2_type in NEURON_SHAPES:
        vcpus, memory, devices = NEURON_SHAPES[ec2_type]
        return NodeShape(vcpus, memory, neuron_devices=devices, efa=efa_interfaces(ec2_type))
    family, _, size = ec2_type.partition(".")
    match = re.fullmatch(r"(\d*)xlarge", size)
    sizes = {"medium": 1, "large": 2, "metal": 96}
    vcpus = 4 * int(match.group(1) or 1) if match else sizes.get(size, 4)
    return NodeShape(vcpus, vcpus * _MEMORY_PER_VCPU.get(family[:1], 4))
