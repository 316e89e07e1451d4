"""The nodes of a HyperPod instance group advertise what EC2 describes for their instance type: a pod that asks for
the EFA interfaces ``DescribeInstanceTypes`` lists (what the control plane's training jobs ask for) finds them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from instantstart_sandbox.aws.instances import GPU_SHAPES, NEURON_SHAPES, node_shape

try:
    from tests.sandbox.conftest_aws import aws, client, clock, kube
except ImportError:  # rootdir not on sys.path
    from conftest_aws import aws, client, clock, kube  # type: ignore[no-redef]  # noqa: F401

ACCELERATED = sorted({*GPU_SHAPES, *NEURON_SHAPES})


@pytest.mark.parametrize("ec2_type", ACCELERATED)
def test_each_accelerated_node_advertises_the_efa_interfaces_ec2_describes(
    client: Callable[[str], Any], ec2_type: str
) -> None:
    [described] = client("ec2").describe_instance_types(InstanceTypes=[ec2_type])["InstanceTypes"]
    network = described["NetworkInfo"]
    efa = network["EfaInfo"]["MaximumEfaInterfaces"] if network.get("EfaSupported") else 0

    allocatable = node_shape(f"ml.{ec2_type}").allocatable()

    assert int(allocatable.get("vpc.amazonaws.com/efa", "0")) == efa


def test_the_readmes_training_nodes_have_efa_and_smaller_g5_nodes_have_none() -> None:
    # docs: jobs create --recipe pytorch --instance-type ml.g5.8xlarge --nodes 2 (EC2: g5.8xlarge and larger have EFA)
    assert node_shape("ml.g5.8xlarge").allocatable()["vpc.amazonaws.com/efa"] == "1"
    assert "vpc.amazonaws.com/efa" not in node_shape("ml.g5.4xlarge").allocatable()
