"""Given a READY cluster in the sandbox, when several day-2 changes arrive at once, then exactly one operation runs and
the others are refused naming it; when the inference operator is turned off under a managed endpoint, then it is
refused naming the endpoint unless the body asks to remove it; and when the cluster is deleted, then no SageMaker
endpoint, endpoint config or model of its endpoints is left (issue 27, classes 1 and 2)."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, OPERATION_ENDED, finished, ready_cluster, refusal

TAG = "lockdown"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124"
TAG_KEY = "instantstart:cluster-tag"


def endpoint(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "instanceType": "ml.g6.4xlarge",
        "replicas": 1,
        "modelSource": {"type": "s3", "modelLocation": f"models/{MODEL}"},
        "worker": {"image": IMAGE, "port": 8080, "resources": {"gpus": 1, "cpu": 4, "memoryGib": 16}},
    }


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``lockdown`` cluster, READY, with two ml.g6.4xlarge nodes (one GPU each)."""
    return ready_cluster(api, TAG, [{**GROUP, "instanceCount": 2}])


def owned_sagemaker(sandbox: Sandbox) -> dict[str, list[str]]:
    """The SageMaker endpoints, endpoint configs and models carrying the cluster's ownership tag."""
    sm = boto3.client("sagemaker", region_name=sandbox.region)

    def ours(arn: str) -> bool:
        return any(t["Key"] == TAG_KEY and t["Value"] == TAG for t in sm.list_tags(ResourceArn=arn)["Tags"])

    return {
        "endpoints": [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"] if ours(e["EndpointArn"])],
        "configs": [
            c["EndpointConfigName"]
            for c in sm.list_endpoint_configs()["EndpointConfigs"]
            if ours(c["EndpointConfigArn"])
        ],
        "models": [m["ModelName"] for m in sm.list_models()["Models"] if ours(m["ModelArn"])],
    }


def test_concurrent_feature_patches_start_exactly_one_operation_and_the_others_get_409_naming_it(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    starts = 4
    barrier = threading.Barrier(starts)
    answers: list[Any] = []

    def patch() -> None:
        client = InstantStartClient(sandbox.api_url, region=sandbox.region)
        barrier.wait()
        try:
            answers.append(client.update_features(TAG, {"inferenceOperator": {"enabled": True}}))
        except ApiError as exc:
            answers.append(exc)

    threads = [threading.Thread(target=patch) for _ in range(starts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    accepted = [a for a in answers if not isinstance(a, ApiError)]
    refused = [a for a in answers if isinstance(a, ApiError)]
    assert len(accepted) == 1 and "operationId" in accepted[0], answers
    winner = accepted[0]["operationId"]
    assert len(refused) == starts - 1
    for exc in refused:
        assert exc.status == 409 and exc.code == "OperationInProgress", exc.body
        assert winner in exc.message and f"POST /operations/{winner}/cancel" in exc.message
        assert exc.details[0]["operationId"] == winner
    done = finished(api, accepted[0])
    assert done["status"] == "SUCCEEDED", done
    statuses = [op["status"] for op in api.list_cluster_operations(TAG)["operations"]]
    assert all(s in OPERATION_ENDED for s in statuses), statuses
    assert api.get_cluster(TAG)["currentOperationId"] == winner


def operator_on(api: InstantStartClient) -> None:
    """Turn the inference operator on (SUCCEEDED), unless it already is (every feature unchanged, no operation)."""
    on = api.update_features(TAG, {"inferenceOperator": {"enabled": True}})
    if "operationId" in on:
        assert finished(api, on)["status"] == "SUCCEEDED"
    else:
        assert on["features"]["inferenceOperator"]["result"] == "unchanged", on


@pytest.fixture(scope="module")
def first_endpoint(cluster: Any, api: InstantStartClient) -> dict[str, Any]:
    """The model downloaded to s3 and managed endpoint ``ep-one`` InService (the operator is on)."""
    operator_on(api)
    download = finished(
        api, api.download_model(TAG, {"source": "huggingface", "modelId": MODEL, "destination": "s3"})["operation"]
    )
    assert download["status"] == "SUCCEEDED", download
    op = finished(api, api.create_inference_endpoint(TAG, endpoint("ep-one"))["operation"])
    assert op["status"] == "SUCCEEDED", op
    return dict(api.get_inference_endpoint(TAG, "ep-one"))


def test_the_operator_off_under_an_endpoint_is_409_naming_it_and_remove_dependents_deletes_it_first(
    first_endpoint: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    tagged = owned_sagemaker(sandbox)
    assert tagged["endpoints"] == [f"instantstart-{TAG}-ep-one"]
    assert len(tagged["configs"]) == 1 and len(tagged["models"]) == 1

    refused = refusal(lambda: api.update_features(TAG, {"inferenceOperator": {"enabled": False}}))

    assert refused.status == 409 and refused.code == "FeatureHasDependents", refused.body
    assert "InferenceEndpointConfig default/ep-one" in refused.message and "removeDependents" in refused.message
    assert refused.details[0]["field"] == "inferenceOperator.removeDependents"
    assert refused.details[0]["dependents"] == ["InferenceEndpointConfig default/ep-one"]
    assert api.get_inference_endpoint(TAG, "ep-one")["sagemaker"]["state"] == "InService"

    off = finished(api, api.update_features(TAG, {"inferenceOperator": {"enabled": False, "removeDependents": True}}))

    assert off["status"] == "SUCCEEDED", off
    assert off["features"]["inferenceOperator"]["result"] == "changed"
    assert owned_sagemaker(sandbox) == {"endpoints": [], "configs": [], "models": []}
    assert api.list_inference_endpoints(TAG)["endpoints"] == []
    assert api.get_features(TAG)["features"]["inferenceOperator"]["desired"] == {"enabled": False}


def test_deleting_the_cluster_leaves_no_sagemaker_endpoint_config_or_model_of_its_endpoints(
    first_endpoint: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    operator_on(api)
    op = finished(api, api.create_inference_endpoint(TAG, endpoint("ep-two"))["operation"])
    assert op["status"] == "SUCCEEDED", op
    assert f"instantstart-{TAG}-ep-two" in owned_sagemaker(sandbox)["endpoints"]

    deleted = finished(api, api.delete_cluster(TAG))

    assert deleted["status"] == "SUCCEEDED", deleted
    assert owned_sagemaker(sandbox) == {"endpoints": [], "configs": [], "models": []}
    sm = boto3.client("sagemaker", region_name=sandbox.region)
    assert [e["EndpointName"] for e in sm.list_endpoints(NameContains=f"instantstart-{TAG}-")["Endpoints"]] == []
