"""Given a READY cluster in the sandbox, when a user sets its task governance (scheduler config, compute quotas)
through the HTTP API, then SageMaker and the cluster's Kubernetes API (Kueue objects) follow, refusals name the field
or the feature, and deleting the cluster removes what was created."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal

TAG = "govern"
EKS = f"eks-cluster-{TAG}"
ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
KUEUE = "kueue.x-k8s.io/v1beta1"
POLICY = {
    "schedulerConfig": {
        "priorityClasses": [{"name": "inference", "weight": 100}, {"name": "training", "weight": 50}],
        "fairShare": "Enabled",
    }
}
QUOTA = {
    "computeQuotaConfig": {
        "computeQuotaResources": [{"instanceType": "ml.g6.4xlarge", "count": 1}],
        "resourceSharingConfig": {"strategy": "LendAndBorrow", "borrowLimit": 50},
        "preemptTeamTasks": "LowerPriority",
    },
    "computeQuotaTarget": {"teamName": "research", "fairShareWeight": 10},
}


def eventually(read: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    value = read()
    while not ok(value) and time.monotonic() < deadline:
        time.sleep(0.3)
        value = read()
    return value


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``govern`` cluster, READY, without the task governance add-on."""
    api.create_cluster(TAG, "us-west-2c", [GROUP])
    found = eventually(lambda: dict(api.get_cluster(TAG)), terminal, timeout=240)
    assert found["status"] == "READY", found["stages"]
    return found


@pytest.fixture(scope="module")
def governed(cluster: Any, api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The cluster after the task governance add-on was created (boto3) and finished (sandbox hook): ACTIVE."""
    eks = boto3.client("eks", region_name=sandbox.region)
    eks.create_addon(clusterName=EKS, addonName=ADDON)
    sandbox.aws.extension.eks.finish_addon(EKS, ADDON)
    status = eventually(
        lambda: eks.describe_addon(clusterName=EKS, addonName=ADDON)["addon"]["status"], lambda s: s == "ACTIVE"
    )
    assert status == "ACTIVE"
    return cluster


def given(value: Any) -> Any:
    """``value`` without the members the API answers as null (AWS left them out)."""
    if isinstance(value, dict):
        return {k: given(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [given(v) for v in value]
    return value


def kube_objects(sandbox: Sandbox, kind: str, namespace: str | None = None) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in sandbox.kube.cluster(EKS).list(KUEUE, kind, namespace=namespace)}


def test_given_no_addon_when_putting_a_scheduler_config_then_409_names_the_task_governance_feature(
    cluster: Any, api: InstantStartClient
) -> None:
    with pytest.raises(ApiError) as refused:
        api.put_scheduler_config(TAG, POLICY)

    assert refused.value.status == 409
    assert refused.value.code == "FeatureNotEnabled"
    assert refused.value.details[0]["field"] == "taskGovernance"
    assert "PATCH /clusters/govern/features" in str(refused.value)
    with pytest.raises(ApiError) as absent:
        api.get_scheduler_config(TAG)
    assert absent.value.status == 404 and absent.value.code == "SchedulerConfigNotFound"


def test_given_an_out_of_range_weight_then_422_names_the_field_and_nothing_is_created(
    governed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    body = {"schedulerConfig": {"priorityClasses": [{"name": "inference", "weight": 101}]}}
    with pytest.raises(ApiError) as refused:
        api.put_scheduler_config(TAG, body)

    assert refused.value.status == 422
    detail = refused.value.details[0]
    assert detail["field"] == "schedulerConfig.priorityClasses[0].weight"
    assert (detail["minimum"], detail["maximum"]) == (0, 100)
    sm = boto3.client("sagemaker", region_name=sandbox.region)
    assert sm.list_cluster_scheduler_configs()["ClusterSchedulerConfigSummaries"] == []


def test_given_a_bad_team_name_then_422_names_team_name(governed: Any, api: InstantStartClient) -> None:
    body = {**QUOTA, "computeQuotaTarget": {"teamName": "Research_Team"}}
    with pytest.raises(ApiError) as refused:
        api.create_compute_quota(TAG, body)

    assert refused.value.status == 422
    assert refused.value.details[0]["field"] == "computeQuotaTarget.teamName"


def test_given_the_addon_active_when_putting_a_scheduler_config_then_it_is_created_with_a_priority_class_each(
    governed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    accepted = api.put_scheduler_config(TAG, POLICY)

    # The answer is a DescribeClusterSchedulerConfig read after the create: on a busy machine the
    # sandbox's clock may already have finished it, so either state of a create is a right answer.
    assert accepted["status"] in ("Creating", "Created") and accepted["managed"] is True
    assert accepted["name"] == f"{TAG}-scheduler-config"
    settled = eventually(lambda: api.get_scheduler_config(TAG), lambda v: v["status"] == "Created")
    assert settled["status"] == "Created"
    assert settled["clusterSchedulerConfigVersion"] == 1
    assert settled["schedulerConfig"]["fairShare"] == "Enabled"
    classes = kube_objects(sandbox, "WorkloadPriorityClass")
    assert {name: o["value"] for name, o in classes.items()} == {"inference": 100, "training": 50}


def test_given_a_scheduler_config_when_replaced_then_updated_and_a_stale_version_is_409(
    governed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    current = eventually(lambda: api.get_scheduler_config(TAG), lambda v: v["status"] in ("Created", "Updated"))
    version = current["clusterSchedulerConfigVersion"]
    body = {"schedulerConfig": {"priorityClasses": [{"name": "batch", "weight": 10}]}, "targetVersion": version}

    accepted = api.put_scheduler_config(TAG, body)
    assert accepted["status"] in ("Updating", "Updated")  # a Describe after the update: either is right
    assert accepted["clusterSchedulerConfigVersion"] == version + 1
    settled = eventually(lambda: api.get_scheduler_config(TAG), lambda v: v["status"] == "Updated")
    assert settled["status"] == "Updated"
    assert set(kube_objects(sandbox, "WorkloadPriorityClass")) == {"batch"}

    with pytest.raises(ApiError) as stale:
        api.put_scheduler_config(TAG, body)  # still targets the version it read before
    assert stale.value.status == 409
    assert stale.value.code == "ConflictException"
    assert f"TargetVersion {version}" in str(stale.value)


def test_given_a_team_quota_when_created_changed_and_deleted_then_sagemaker_and_kueue_follow(
    governed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    accepted = api.create_compute_quota(TAG, QUOTA)
    name = f"{TAG}-research"
    assert accepted["name"] == name and accepted["status"] in ("Creating", "Created")  # a Describe after the create

    def quota() -> dict[str, Any]:
        return next(q for q in api.list_compute_quotas(TAG)["computeQuotas"] if q["name"] == name)

    created = eventually(quota, lambda q: q["status"] == "Created")
    assert created["status"] == "Created" and created["managed"] is True
    assert given(created["computeQuotaTarget"]) == {"teamName": "research", "fairShareWeight": 10}
    assert given(created["computeQuotaConfig"]["resourceSharingConfig"]) == {
        "strategy": "LendAndBorrow",
        "borrowLimit": 50,
    }
    queues = kube_objects(sandbox, "ClusterQueue")
    assert "hyperpod-ns-research-clusterqueue" in queues
    cpu_before = queues["hyperpod-ns-research-clusterqueue"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert "hyperpod-ns-research-localqueue" in kube_objects(sandbox, "LocalQueue", "hyperpod-ns-research")

    retried = api.create_compute_quota(TAG, QUOTA)  # a retry finds the same quota: no second one
    assert retried["computeQuotaId"] == created["computeQuotaId"]

    version = created["computeQuotaVersion"]
    change = {
        "computeQuotaConfig": {"computeQuotaResources": [{"instanceType": "ml.g6.4xlarge", "count": 2}]},
        "targetVersion": version,
    }
    changed = api.update_compute_quota(TAG, name, change)
    assert changed["status"] in ("Updating", "Updated") and changed["computeQuotaVersion"] == version + 1
    updated = eventually(quota, lambda q: q["status"] == "Updated")
    assert given(updated["computeQuotaConfig"]["computeQuotaResources"]) == [
        {"instanceType": "ml.g6.4xlarge", "count": 2}
    ]
    queue = kube_objects(sandbox, "ClusterQueue")["hyperpod-ns-research-clusterqueue"]
    cpu_after = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert cpu_after["nominalQuota"] == 2 * cpu_before["nominalQuota"]

    with pytest.raises(ApiError) as stale:
        api.update_compute_quota(TAG, name, change)
    assert stale.value.status == 409 and stale.value.code == "ConflictException"
    with pytest.raises(ApiError) as team:
        api.update_compute_quota(TAG, name, {"computeQuotaTarget": {"teamName": "other"}})
    assert team.value.status == 409 and team.value.details[0]["field"] == "computeQuotaTarget.teamName"

    deleting = api.delete_compute_quota(TAG, name)
    assert deleting["status"] == "Deleting"
    remaining = eventually(lambda: api.list_compute_quotas(TAG)["computeQuotas"], lambda qs: not qs)
    assert remaining == []
    assert "hyperpod-ns-research-clusterqueue" not in kube_objects(sandbox, "ClusterQueue")
    with pytest.raises(ApiError) as gone:
        api.delete_compute_quota(TAG, name)
    assert gone.value.status == 404


def test_given_governance_resources_when_the_cluster_is_deleted_then_they_go_first_and_the_delete_succeeds(
    governed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    api.create_compute_quota(TAG, {**QUOTA, "computeQuotaTarget": {"teamName": "vision"}})
    eventually(lambda: api.list_compute_quotas(TAG)["computeQuotas"], lambda qs: qs and qs[0]["status"] == "Created")
    sm = boto3.client("sagemaker", region_name=sandbox.region)
    cluster_arn = sm.describe_cluster(ClusterName=f"hp-cluster-{TAG}")["ClusterArn"]
    assert sm.list_compute_quotas(ClusterArn=cluster_arn)["ComputeQuotaSummaries"]
    assert sm.list_cluster_scheduler_configs(ClusterArn=cluster_arn)["ClusterSchedulerConfigSummaries"]

    op = api.delete_cluster(TAG)
    ended = eventually(
        lambda: dict(api.get_operation(op["operationId"])),
        lambda o: o["status"] in ("SUCCEEDED", "FAILED", "CANCELLED"),
        timeout=240,
    )

    assert ended["status"] == "SUCCEEDED", ended
    assert sm.list_compute_quotas(ClusterArn=cluster_arn)["ComputeQuotaSummaries"] == []
    assert sm.list_cluster_scheduler_configs(ClusterArn=cluster_arn)["ClusterSchedulerConfigSummaries"] == []
    assert [c for c in sm.list_clusters()["ClusterSummaries"] if c["ClusterName"] == f"hp-cluster-{TAG}"] == []
