"""Given a READY cluster in the sandbox, when a model download runs for a long time (the sandbox holds it, as a
download of hundreds of GB would run for an hour), then day-2 changes of the cluster are accepted beside it and both
finish; a second download of the same model to the same destination is 409 naming the first and its cancel route, a
different model downloads at once; a download's end leaves the cluster's status and current operation to the change
that runs; a cancelled download frees its model; and a cluster delete ends the downloads still running (issue 28,
item 4: model downloads do not hold the operation lock)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import boto3
import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, eventually, finished, ready_cluster, refusal

TAG = "dlside"
EKS = f"eks-cluster-{TAG}"
HELD = "Qwen/Qwen2.5-0.5B-Instruct"
OTHER = "Qwen/Qwen2.5-1.5B-Instruct"
THIRD = "Qwen/Qwen2.5-3B-Instruct"


def download(model: str) -> dict[str, Any]:
    return {"source": "huggingface", "modelId": model, "destination": "s3"}


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> Iterator[dict[str, Any]]:
    """The ``dlside`` cluster, READY, with one ml.g6.4xlarge node; every held download released at the end."""
    yield ready_cluster(api, TAG, [GROUP])
    sandbox.aws.extension.faults.clear_hyperpod_capacity()
    with suppress(KeyError):  # the last test deletes the cluster
        sandbox.aws.extension.inference.reset(EKS)


@pytest.fixture
def held(cluster: Any, sandbox: Sandbox) -> Iterator[str]:
    """Downloads of :data:`HELD` keep running until released (released after the test)."""
    sandbox.aws.extension.inference.hold_download(EKS, HELD)
    yield HELD
    with suppress(KeyError):  # the cluster is gone
        sandbox.aws.extension.inference.release_download(EKS, HELD)


def running(api: InstantStartClient, op: dict[str, Any]) -> dict[str, Any]:
    """Operation ``op`` once its workflow runs it (RUNNING), or its last view."""
    return dict(eventually(lambda: api.get_operation(op["operationId"]), lambda o: o["status"] != "PENDING"))


def guards(sandbox: Sandbox, tag: str) -> list[dict[str, Any]]:
    """The operation guards left in the control plane's table for cluster ``tag`` (``GUARD#`` items)."""
    dynamodb = boto3.client("dynamodb", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    found: list[dict[str, Any]] = []
    for table in dynamodb.list_tables()["TableNames"]:
        keys = {k["AttributeName"] for k in dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]}
        if keys != {"PK", "SK"}:
            continue
        found += dynamodb.query(
            TableName=table,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :guard)",
            ExpressionAttributeValues={":pk": {"S": f"CLUSTER#{tag}"}, ":guard": {"S": "GUARD#"}},
            ConsistentRead=True,
        )["Items"]
    return found


def test_a_scale_runs_beside_a_download_the_same_model_is_409_another_downloads_and_both_finish(
    held: str, api: InstantStartClient, sandbox: Sandbox
) -> None:
    faults = sandbox.aws.extension.faults
    first = api.download_model(TAG, download(held))["operation"]
    assert running(api, first)["status"] == "RUNNING"
    faults.fail_hyperpod_capacity(GROUP["instanceType"])  # the scale cannot finish while the test looks
    try:
        scale = api.update_instance_group(TAG, GROUP["instanceGroupName"], {"instanceCount": 2})
        assert scale["type"] == "SCALE_INSTANCE_GROUP", scale
        assert api.get_cluster(TAG)["currentOperationId"] == scale["operationId"]

        again = refusal(lambda: api.download_model(TAG, download(held)))
        other = api.download_model(TAG, download(OTHER))["operation"]  # while the scale runs
        other_done = finished(api, other)
        during = api.get_cluster(TAG)
        scale_during = api.get_operation(scale["operationId"])
        sandbox.aws.extension.inference.release_download(EKS, held)
        first_done = finished(api, first)
        after_first = api.get_cluster(TAG)
        scale_after_first = api.get_operation(scale["operationId"])
    finally:
        faults.clear_hyperpod_capacity()
    scale_done = finished(api, scale, timeout=400)

    assert again.status == 409 and again.code == "OperationInProgress", again.body
    assert first["operationId"] in again.message and f"POST /operations/{first['operationId']}/cancel" in again.message
    assert held in again.message
    assert again.details[0]["operationId"] == first["operationId"]
    assert again.details[0]["operationType"] == "DOWNLOAD_MODEL"
    assert other_done["status"] == "SUCCEEDED", other_done
    assert other_done["result"]["downloadedFiles"] > 0
    for cluster, scale_view in ((during, scale_during), (after_first, scale_after_first)):
        assert cluster["status"] == "READY", cluster["status"]
        assert cluster["currentOperationId"] == scale["operationId"]  # a download's end leaves the scale's lock
        assert scale_view["status"] == "RUNNING", scale_view
    assert first_done["status"] == "SUCCEEDED", first_done
    assert scale_done["status"] == "SUCCEEDED", scale_done
    assert api.get_cluster(TAG)["status"] == "READY"
    listed = {m["modelId"] for m in api.list_models(TAG)["models"]}
    assert {held, OTHER} <= listed
    ops = {o["operationId"]: o for o in api.list_cluster_operations(TAG)["operations"]}
    assert {first["operationId"], other["operationId"], scale["operationId"]} <= set(ops)
    assert guards(sandbox, TAG) == []


def test_a_download_starts_beside_a_running_day2_change_and_a_repeat_with_its_idempotency_key_answers_it(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    faults = sandbox.aws.extension.faults
    faults.fail_hyperpod_capacity(GROUP["instanceType"])
    key = str(uuid.uuid4())
    try:
        scale = api.update_instance_group(TAG, GROUP["instanceGroupName"], {"instanceCount": 3})
        accepted = api.download_model(TAG, download(THIRD), idempotency_key=key)
        repeated = api.download_model(TAG, download(THIRD), idempotency_key=key)
        done = finished(api, accepted["operation"])
        scale_during = api.get_operation(scale["operationId"])
        cluster_during = api.get_cluster(TAG)
    finally:
        faults.clear_hyperpod_capacity()
    scale_done = finished(api, scale, timeout=400)

    assert repeated["operation"]["operationId"] == accepted["operation"]["operationId"]
    assert done["status"] == "SUCCEEDED", done
    assert scale_during["status"] == "RUNNING" and cluster_during["currentOperationId"] == scale["operationId"]
    assert scale_done["status"] == "SUCCEEDED", scale_done


def test_a_cancelled_download_ends_cancelled_frees_its_model_and_leaves_the_cluster_as_it_was(
    held: str, api: InstantStartClient, sandbox: Sandbox
) -> None:
    before = api.get_cluster(TAG)
    accepted = api.download_model(TAG, download(held))
    op = accepted["operation"]
    assert running(api, op)["status"] == "RUNNING"

    cancelled = api.cancel_operation(op["operationId"])

    assert cancelled["status"] == "CANCELLED" and cancelled["type"] == "DOWNLOAD_MODEL", cancelled
    assert finished(api, op)["status"] == "CANCELLED"
    after = api.get_cluster(TAG)
    assert after["status"] == before["status"] == "READY"
    assert after["currentOperationId"] == before["currentOperationId"]
    assert guards(sandbox, TAG) == []
    kube = sandbox.kube.cluster(EKS)
    assert kube.peek("batch/v1", "Job", accepted["jobName"], "default") is not None  # the cancel cannot delete it
    again = api.download_model(TAG, download(held))  # the model is free again
    assert running(api, again["operation"])["status"] == "RUNNING"
    gone = eventually(lambda: kube.peek("batch/v1", "Job", accepted["jobName"], "default"), lambda j: j is None)
    assert gone is None, "the new download stops the cancelled one's Job before it writes the same files"
    sandbox.aws.extension.inference.release_download(EKS, held)
    assert finished(api, again["operation"])["status"] == "SUCCEEDED"


def test_a_cluster_delete_ends_the_running_download_and_leaves_no_guard(
    held: str, api: InstantStartClient, sandbox: Sandbox
) -> None:
    op = api.download_model(TAG, download(held))["operation"]
    assert running(api, op)["status"] == "RUNNING"

    deleted = finished(api, api.delete_cluster(TAG), timeout=400)

    assert deleted["status"] == "SUCCEEDED", deleted
    ended = api.get_operation(op["operationId"])
    assert ended["status"] == "CANCELLED", ended
    assert ended["error"]["code"] == "ClusterDeleted" and TAG in ended["error"]["message"], ended["error"]
    assert guards(sandbox, TAG) == []
