"""Given a ready cluster, DELETE tears it down in reverse order, and the tag can be created again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal


def _operation_done(api: InstantStartClient, op_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda _c: api.get_operation(op_id)["status"] in ("SUCCEEDED", "FAILED")


def test_given_a_ready_cluster_when_deleted_then_it_is_gone_and_the_tag_can_be_reused(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    api.create_cluster("cycle", "us-west-2c", [GROUP])
    with pytest.raises(ApiError) as running:
        api.delete_cluster("cycle")
    assert running.value.status == 409 and "CREATING" in running.value.message

    ready = wait_for(api, "cycle", terminal)
    assert ready["status"] == "READY"
    assert ready["generation"] == 1

    op = api.delete_cluster("cycle")
    assert op["type"] == "DELETE_CLUSTER"
    import time

    deadline = time.monotonic() + 240
    while api.get_operation(op["operationId"])["status"] not in ("SUCCEEDED", "FAILED"):
        assert time.monotonic() < deadline, "delete did not finish"
        time.sleep(0.5)
    assert api.get_operation(op["operationId"])["status"] == "SUCCEEDED"

    with pytest.raises(ApiError) as gone:
        api.get_cluster("cycle")
    assert gone.value.status == 404 and gone.value.code == "ClusterNotFound"
    assert "cycle" not in [c["clusterTag"] for c in api.iter_clusters()]

    region, endpoint = sandbox.region, sandbox.aws_endpoint_url
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=region)
    assert ec2.describe_vpcs(Filters=[{"Name": "tag:instantstart:cluster-tag", "Values": ["cycle"]}])["Vpcs"] == []
    eks = boto3.client("eks", endpoint_url=endpoint, region_name=region)
    assert "eks-cluster-cycle" not in eks.list_clusters()["clusters"]
    sm = boto3.client("sagemaker", endpoint_url=endpoint, region_name=region)
    assert "hp-cluster-cycle" not in [c["ClusterName"] for c in sm.list_clusters()["ClusterSummaries"]]

    again = api.create_cluster("cycle", "us-west-2c", [GROUP])
    recreated = wait_for(api, "cycle", lambda c: terminal(c) and c["currentOperationId"] == again["operationId"])
    assert recreated["status"] == "READY"
    assert recreated["generation"] == 2
    assert all(s["attempts"] == 1 for s in recreated["stages"]), "a new generation starts with fresh stages"


def test_when_deleting_an_unknown_cluster_then_404(api: InstantStartClient) -> None:
    with pytest.raises(ApiError) as err:
        api.delete_cluster("nosuchcluster")
    assert err.value.status == 404
