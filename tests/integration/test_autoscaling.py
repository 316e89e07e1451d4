"""Given a READY cluster in the sandbox, when a user turns managed Karpenter on and off through the HTTP API, then
the rules refuse bad groups before anything changes, and HyperPod, IAM and Kubernetes show exactly what on/off
should leave."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.kube.errors import KubeError
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, finished, ready_cluster

TAG = "karp"
AUTO = {"instanceGroupName": "auto", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}
ROLE_NAME = f"instantstart-{TAG}-hp-autoscaling"
NODE_POOL = ("karpenter.sh/v1", "NodePool", "instantstart")
NODE_CLASS = ("karpenter.sagemaker.amazonaws.com/v1", "HyperpodNodeClass", "instantstart")


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``karp`` cluster: ``accel`` (1 instance) and ``auto`` (1 instance), READY."""
    return ready_cluster(api, TAG, [GROUP, AUTO])


def eventually(check: Callable[[], bool], timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return check()


def described(sandbox: Sandbox) -> dict[str, Any]:
    sm = boto3.client("sagemaker", region_name=sandbox.region)
    return dict(sm.describe_cluster(ClusterName=f"hp-cluster-{TAG}"))


def kube_object(sandbox: Sandbox, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
    kube = sandbox.kube.cluster(f"eks-cluster-{TAG}")
    try:
        return kube.get(api_version, kind, name)
    except KubeError as exc:  # 404: the kind is not served (Karpenter never installed), so no such object
        assert exc.code == 404, exc
        return None


def role_exists(sandbox: Sandbox) -> bool:
    iam = boto3.client("iam", region_name=sandbox.region)
    try:
        iam.get_role(RoleName=ROLE_NAME)
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "NoSuchEntity"
        return False
    return True


def group(api: InstantStartClient, name: str) -> dict[str, Any]:
    return next(g for g in api.list_instance_groups(TAG)["instanceGroups"] if g["instanceGroupName"] == name)


def test_when_turning_karpenter_on_with_a_group_of_nodes_then_409_names_the_rule_and_nothing_changes(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    with pytest.raises(ApiError) as refused:
        api.update_autoscaling(TAG, enabled=True, instance_groups=["auto"])
    with pytest.raises(ApiError) as unknown:
        api.update_autoscaling(TAG, enabled=True, instance_groups=["nope"])
    with pytest.raises(ApiError) as missing:
        api.update_autoscaling(TAG, enabled=True)

    assert refused.value.status == 409 and refused.value.code == "KarpenterGroupNotAtZero"
    assert refused.value.details[0]["instanceGroupName"] == "auto"
    assert "'auto' has 1 instances" in refused.value.message
    assert unknown.value.status == 404 and unknown.value.code == "InstanceGroupNotFound"
    assert missing.value.status == 422 and missing.value.details[0]["field"] == "instanceGroups"
    assert "AutoScaling" not in described(sandbox)
    assert not role_exists(sandbox)
    assert api.list_cluster_operations(TAG)["operations"][0]["type"] == "CREATE_CLUSTER"


def test_when_karpenter_is_on_then_pending_pods_scale_its_group_from_0_and_the_group_cannot_be_deleted(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    down = finished(api, api.update_instance_group(TAG, "auto", {"instanceCount": 0}))
    assert down["status"] == "SUCCEEDED", down

    op = api.update_autoscaling(
        TAG, enabled=True, instance_groups=["auto"], limits={"nvidia.com/gpu": 8}, consolidate_after="30s"
    )
    done = finished(api, op)

    assert op["type"] == "UPDATE_AUTOSCALING"
    assert done["status"] == "SUCCEEDED", done
    hyperpod = described(sandbox)
    assert (hyperpod["AutoScaling"]["Mode"], hyperpod["AutoScaling"]["AutoScalerType"]) == ("Enable", "Karpenter")
    assert hyperpod["ClusterRole"].endswith(f"/{ROLE_NAME}")
    node_class = kube_object(sandbox, *NODE_CLASS)
    node_pool = kube_object(sandbox, *NODE_POOL)
    assert node_class is not None and node_class["spec"]["instanceGroups"] == ["auto"]
    assert node_pool is not None
    assert node_pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "instantstart"
    assert node_pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert node_pool["spec"]["limits"] == {"nvidia.com/gpu": "8"}
    shown = api.get_autoscaling(TAG)
    assert (shown["mode"], shown["status"], shown["instanceGroups"], shown["nodePool"]) == (
        "Enable",
        "InService",
        ["auto"],
        "instantstart",
    )

    kube = sandbox.kube.cluster(f"eks-cluster-{TAG}")
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {
                "nodeSelector": {"sagemaker.amazonaws.com/instance-group-name": "auto"},
                "containers": [{"name": "main", "image": "busybox"}],
            },
        }
    )
    scaled = eventually(lambda: group(api, "auto")["currentCount"] == 1)
    assert scaled, group(api, "auto")
    assert group(api, "auto")["targetCount"] == 1

    with pytest.raises(ApiError) as in_use:
        api.delete_instance_group(TAG, "auto")
    assert in_use.value.status == 409 and in_use.value.code == "InstanceGroupInNodeClass"
    assert "auto" in in_use.value.message
    kube.delete("v1", "Pod", "train", "default")


def test_when_karpenter_is_turned_off_then_its_objects_and_role_are_gone_and_autoscaling_is_disabled(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    op = api.update_autoscaling(TAG, enabled=False)
    done = finished(api, op)

    assert done["status"] == "SUCCEEDED", done
    assert described(sandbox)["AutoScaling"]["Mode"] == "Disable"
    assert kube_object(sandbox, *NODE_POOL) is None
    assert kube_object(sandbox, *NODE_CLASS) is None
    assert not role_exists(sandbox)
    shown = api.get_autoscaling(TAG)
    assert (shown["mode"], shown["nodePool"], shown["instanceGroups"]) == ("Disable", None, [])
    assert api.get_cluster(TAG)["status"] == "READY"
