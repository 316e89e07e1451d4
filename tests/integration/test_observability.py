"""Given a READY cluster in the sandbox, when a user turns the observability feature on with both parts through the
HTTP API, then both add-ons are ACTIVE with their pod identity associations and the cluster's Prometheus workspace
exists and is named in the HyperPod add-on's configuration; a PATCH equal to AWS writes nothing; off leaves nothing."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.aws.calls import RESOURCE_SERVICES
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, ready_cluster
from tests.integration.conftest import finished as finished_within

TAG = "obsv"
EKS_NAME = f"eks-cluster-{TAG}"
HYPERPOD = "amazon-sagemaker-hyperpod-observability"
CLOUDWATCH = "amazon-cloudwatch-observability"
ROLES = (f"instantstart-{TAG}-observability", f"instantstart-{TAG}-cloudwatch-agent")
WRITES = (*RESOURCE_SERVICES, "amp", "aps")


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``obsv`` cluster (one node), created once for this module and READY."""
    return ready_cluster(api, TAG, [GROUP])


def finished(api: InstantStartClient, op: Any, timeout: float = 300) -> dict[str, Any]:
    return finished_within(api, op, timeout)


def addon(sandbox: Sandbox, name: str) -> dict[str, Any] | None:
    eks = boto3.client("eks", region_name=sandbox.region)
    try:
        return dict(eks.describe_addon(clusterName=EKS_NAME, addonName=name)["addon"])
    except eks.exceptions.ResourceNotFoundException:
        return None


def workspaces(sandbox: Sandbox) -> list[dict[str, Any]]:
    amp = boto3.client("amp", region_name=sandbox.region)
    found = amp.list_workspaces(alias=f"instantstart-{TAG}-observability")["workspaces"]
    return [amp.describe_workspace(workspaceId=w["workspaceId"])["workspace"] for w in found]


def associations(sandbox: Sandbox, namespace: str, service_account: str) -> list[dict[str, Any]]:
    eks = boto3.client("eks", region_name=sandbox.region)
    return list(
        eks.list_pod_identity_associations(clusterName=EKS_NAME, namespace=namespace, serviceAccount=service_account)[
            "associations"
        ]
    )


def role_exists(sandbox: Sandbox, name: str) -> bool:
    iam = boto3.client("iam", region_name=sandbox.region)
    try:
        iam.get_role(RoleName=name)
    except iam.exceptions.NoSuchEntityException:
        return False
    return True


def test_when_observability_goes_on_with_both_parts_then_off_then_both_addons_and_the_workspace_come_and_go(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    body = {"observability": {"enabled": True, "hyperPodObservability": True, "cloudWatch": True}}
    done = finished(api, api.update_features(TAG, body))

    assert done["status"] == "SUCCEEDED", done
    hyperpod, cloudwatch = addon(sandbox, HYPERPOD), addon(sandbox, CLOUDWATCH)
    assert hyperpod is not None and hyperpod["status"] == "ACTIVE"
    assert cloudwatch is not None and cloudwatch["status"] == "ACTIVE"
    assert associations(sandbox, "hyperpod-observability", "hyperpod-observability-operator-otel-collector")
    assert associations(sandbox, "amazon-cloudwatch", "cloudwatch-agent")
    [ws] = workspaces(sandbox)
    assert ws["status"]["statusCode"] == "ACTIVE" and ws["tags"]["instantstart:cluster-tag"] == TAG
    configured = json.loads(hyperpod["configurationValues"])["ampWorkspace"]
    assert configured == {"prometheusEndpoint": ws["prometheusEndpoint"], "arn": ws["arn"]}
    iam = boto3.client("iam", region_name=sandbox.region)
    policy = iam.get_role_policy(RoleName=ROLES[0], PolicyName="observability-access")["PolicyDocument"]
    remote_write = next(s for s in policy["Statement"] if s["Action"] == ["aps:RemoteWrite"])
    assert remote_write["Resource"] == ws["arn"]
    state = api.get_features(TAG)["features"]["observability"]
    assert state["enabled"] is True
    assert {a["addonName"] for a in state["addons"] if a["status"] == "ACTIVE"} >= {HYPERPOD, CLOUDWATCH}
    assert state["settings"]["prometheusWorkspaces"][0]["prometheusEndpoint"] == ws["prometheusEndpoint"]

    calls = sandbox.aws.extension.calls
    calls.reset()
    again = api.update_features(TAG, body)
    assert again["features"] == {"observability": {"result": "unchanged", "error": None, "actions": []}}
    assert calls.writes(*WRITES) == []

    done = finished(api, api.update_features(TAG, {"observability": {"enabled": False}}))

    assert done["status"] == "SUCCEEDED", done
    assert addon(sandbox, HYPERPOD) is None and addon(sandbox, CLOUDWATCH) is None
    assert workspaces(sandbox) == []
    assert not any(role_exists(sandbox, r) for r in ROLES)
    assert associations(sandbox, "amazon-cloudwatch", "cloudwatch-agent") == []
    assert associations(sandbox, "hyperpod-observability", "hyperpod-observability-operator-otel-collector") == []


def test_when_observability_has_an_unknown_part_then_422_names_it(cluster: Any, api: InstantStartClient) -> None:
    with pytest.raises(ApiError) as err:
        api.update_features(TAG, {"observability": {"enabled": True, "grafana": True}})
    assert err.value.status == 422
    assert "observability.grafana" in json.dumps(err.value.body)
