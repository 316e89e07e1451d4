"""Given a READY cluster in the sandbox, when a user changes its instance groups through the HTTP API, then
HyperPod, Kubernetes and the operation records agree."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.crash.sweep import STEPS_FUNCTION
from tests.integration.conftest import GROUP, eventually, finished, ready_cluster

TAG = "groups"


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``groups`` cluster (one ``accel`` group of 1), created once for this module and READY."""
    return ready_cluster(api, TAG, [GROUP])


def described(sandbox: Sandbox, name: str) -> dict[str, Any]:
    sm = boto3.client("sagemaker", region_name=sandbox.region)
    groups = sm.describe_cluster(ClusterName=f"hp-cluster-{TAG}")["InstanceGroups"]
    return next(g for g in groups if g["InstanceGroupName"] == name)


def kube_nodes(sandbox: Sandbox, group: str) -> list[dict[str, Any]]:
    kube = sandbox.kube.cluster(f"eks-cluster-{TAG}")
    nodes = kube.list("v1", "Node", label_selector=f"sagemaker.amazonaws.com/instance-group-name={group}")
    return list(nodes)


def test_when_listing_then_the_groups_are_what_hyperpod_reports(cluster: Any, api: InstantStartClient) -> None:
    listing = api.list_instance_groups(TAG)

    assert listing["hyperPodStatus"] == "InService"
    (group,) = listing["instanceGroups"]
    assert (group["instanceGroupName"], group["instanceType"], group["targetCount"], group["currentCount"]) == (
        "accel",
        "ml.g6.4xlarge",
        1,
        1,
    )
    assert group["capacityType"] == "OnDemand" and group["status"] == "InService"
    assert group["subnetIds"] and group["subnetIds"][0].startswith("subnet-")


def test_when_changing_the_instance_type_then_409_names_instance_type(cluster: Any, api: InstantStartClient) -> None:
    with pytest.raises(ApiError) as info:
        api.update_instance_group(TAG, "accel", {"instanceType": "ml.g5.8xlarge"})

    assert info.value.status == 409
    assert info.value.code == "ImmutableField"
    assert info.value.details[0]["field"] == "instanceType"


def test_when_scaling_from_1_to_3_then_the_operation_succeeds_with_3_nodes_and_other_fields_kept(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    before = described(sandbox, "accel")

    op = api.update_instance_group(TAG, "accel", {"instanceCount": 3})
    with pytest.raises(ApiError) as busy:
        api.update_instance_group(TAG, "accel", {"instanceCount": 2})
    done = finished(api, op)

    assert op["type"] == "SCALE_INSTANCE_GROUP" and op["instanceGroupName"] == "accel"
    assert busy.value.status == 409 and op["operationId"] in busy.value.message
    assert f"/operations/{op['operationId']}/cancel" in busy.value.message
    assert done["status"] == "SUCCEEDED", done
    after = described(sandbox, "accel")
    assert (after["TargetCount"], after["CurrentCount"]) == (3, 3)
    for key in ("InstanceType", "ExecutionRole", "LifeCycleConfig", "OverrideVpcConfig", "CapacityRequirements"):
        assert after.get(key) == before.get(key), key
    assert len(kube_nodes(sandbox, "accel")) == 3
    assert api.get_cluster(TAG)["status"] == "READY"


def test_when_scaling_to_0_and_back_to_1_then_both_succeed(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    down = finished(api, api.update_instance_group(TAG, "accel", {"instanceCount": 0}))
    nodes_at_zero = len(kube_nodes(sandbox, "accel"))
    up = finished(api, api.update_instance_group(TAG, "accel", {"instanceCount": 1}))

    assert down["status"] == "SUCCEEDED", down
    assert nodes_at_zero == 0
    assert up["status"] == "SUCCEEDED", up
    assert (described(sandbox, "accel")["CurrentCount"], len(kube_nodes(sandbox, "accel"))) == (1, 1)


def test_when_adding_then_deleting_a_second_group_then_both_succeed_and_the_last_group_stays(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    workers = {"instanceGroupName": "workers", "instanceType": "ml.g6.4xlarge", "instanceCount": 1}
    added = finished(api, api.add_instance_group(TAG, workers))
    names_after_add = [g["instanceGroupName"] for g in api.list_instance_groups(TAG)["instanceGroups"]]
    accel_spec = described(sandbox, "accel")
    removed = finished(api, api.delete_instance_group(TAG, "workers"))
    names_after_delete = [g["instanceGroupName"] for g in api.list_instance_groups(TAG)["instanceGroups"]]
    with pytest.raises(ApiError) as last:
        api.delete_instance_group(TAG, "accel")

    assert added["status"] == "SUCCEEDED", added
    assert names_after_add == ["accel", "workers"]
    assert removed["status"] == "SUCCEEDED", removed
    assert names_after_delete == ["accel"]
    assert described(sandbox, "accel") == accel_spec
    assert last.value.status == 409 and last.value.code == "LastInstanceGroup"


def test_given_the_scale_step_dies_after_its_hyperpod_call_then_the_operation_fails_clean_and_a_new_scale_succeeds(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    """The update workflow does not retry a crashed step (only create and delete do: ``CRASH_RETRY``): the change
    ends FAILED with the runtime's error, the cluster stays READY and usable, and the next change goes through."""
    crash = sandbox.lambda_faults.crash(
        sandbox.function_name(STEPS_FUNCTION),
        after_calls=0,
        after_operation="BatchAddClusterNodes",  # a scale-up under continuous provisioning
        when={"action": "apply_change", "clusterTag": TAG},
    )
    crashed = finished(api, api.update_instance_group(TAG, "accel", {"instanceCount": 2}))
    during = api.get_cluster(TAG)

    again = finished(api, api.update_instance_group(TAG, "accel", {"instanceCount": 1}))

    assert crash.remaining == 0, "the step was killed once"
    assert crashed["status"] == "FAILED" and crashed["error"]["code"] == "Runtime.ExitError", crashed
    assert during["status"] == "READY" and during["currentOperationId"] in (None, crashed["operationId"])
    assert again["status"] == "SUCCEEDED", again
    assert described(sandbox, "accel")["TargetCount"] == 1
    # the node HyperPod took away leaves Kubernetes shortly after (a drained node is deleted after its instance)
    assert len(eventually(lambda: kube_nodes(sandbox, "accel"), lambda nodes: len(nodes) == 1, timeout=30)) == 1


def test_given_a_quota_too_small_when_scaling_or_adding_then_422_names_the_field_and_nothing_changes(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    """The create's capacity preflight runs for what a scale or an added group adds, before any write."""
    extension = sandbox.aws.extension
    before = described(sandbox, "accel")
    operations = len(api.list_cluster_operations(TAG)["operations"])
    extension.service_quotas.set_quota("ml.g6.4xlarge", 1)
    try:
        with pytest.raises(ApiError) as scale:
            api.update_instance_group(TAG, "accel", {"instanceCount": before["TargetCount"] + 4})
        with pytest.raises(ApiError) as add:
            api.add_instance_group(
                TAG, {"instanceGroupName": "more", "instanceType": "ml.g6.4xlarge", "instanceCount": 2}
            )
    finally:
        extension.service_quotas.reset()
    extension.faults.remove_instance_type_offering("ml.g5.8xlarge", "us-west-2c")
    try:
        with pytest.raises(ApiError) as offering:
            api.add_instance_group(
                TAG, {"instanceGroupName": "more", "instanceType": "ml.g5.8xlarge", "instanceCount": 1}
            )
    finally:
        extension.faults.restore_instance_type_offering()

    assert scale.value.status == 422
    [detail] = scale.value.details
    assert detail["field"] == "instanceCount" and detail["asked"] == 4 and detail["quota"] == 1
    assert "ml.g6.4xlarge for cluster usage" in detail["message"]
    assert add.value.status == 422 and add.value.details[0]["field"] == "instanceCount"
    assert add.value.details[0]["asked"] == 2
    assert offering.value.status == 422 and offering.value.details[0]["field"] == "instanceType"
    assert "us-west-2c" not in offering.value.details[0]["allowedValues"]
    assert described(sandbox, "accel")["TargetCount"] == before["TargetCount"]
    assert [g["instanceGroupName"] for g in api.list_instance_groups(TAG)["instanceGroups"]] == ["accel"]
    assert len(api.list_cluster_operations(TAG)["operations"]) == operations  # refused before any operation


def test_given_a_scale_up_hyperpod_cannot_launch_when_it_fails_then_the_target_is_put_back(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    faults = sandbox.aws.extension.faults
    target = described(sandbox, "accel")["TargetCount"]
    limit = "ResourceLimitExceeded: The account-level service limit 'ml.g6.4xlarge for cluster usage' is exceeded"
    faults.fail_hyperpod_capacity("ml.g6.4xlarge", message=limit)
    try:
        done = finished(api, api.update_instance_group(TAG, "accel", {"instanceCount": target + 2}), timeout=300)
    finally:
        faults.clear_hyperpod_capacity()

    assert done["status"] == "FAILED" and done["error"]["code"] == "ResourceLimitExceeded", done
    assert f"target was put back from {target + 2} to {target}" in done["error"]["message"], done["error"]
    assert described(sandbox, "accel")["TargetCount"] == target
    assert api.list_instance_groups(TAG)["instanceGroups"][0]["targetCount"] == target
