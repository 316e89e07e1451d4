"""Given a READY cluster in the sandbox, when a user deploys a downloaded model as a managed endpoint of the HyperPod
inference operator through the HTTP API, then the operation waits for DeploymentComplete, the endpoint answers
InvokeEndpoint, delete removes the SageMaker side and a re-create gets fresh model and config ARNs; refusals name the
field (or the feature) before anything is written, the served API version is read from the CRD, a stuck deployment
shows its worker pods' events, and a Hugging Face token never appears in any answer or log line."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner, Result

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_client.cli import app
from instantstart_sandbox.runner import Sandbox
from tests.integration import conftest
from tests.integration.conftest import GROUP, eventually, finished, ready_cluster

TAG = "managed"
EKS = f"eks-cluster-{TAG}"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
TOKEN = "hf_ManagedNeverEchoedToken987"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124"
IEC = "inference.sagemaker.aws.amazon.com/v1"
CRD = "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com"
ENDPOINT = {
    "name": "qwen-managed",
    "instanceType": "ml.g6.4xlarge",
    "replicas": 1,
    "modelSource": {"type": "s3", "modelLocation": f"models/{MODEL}"},
    "worker": {"image": IMAGE, "port": 8080, "resources": {"gpus": 1, "cpu": 4, "memoryGib": 16}},
}
SEEN: list[Any] = []
"""Every answer the tests received (the token must be in none)."""


def refusal(call: Callable[[], Any]) -> ApiError:
    """The shared refusal, its body kept in SEEN."""
    refused = conftest.refusal(call)
    SEEN.append(refused.body)
    return refused


def seen(answer: Any) -> Any:
    SEEN.append(answer)
    return answer


def kube(sandbox: Sandbox) -> Any:
    return sandbox.kube.cluster(EKS)


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``managed`` cluster, READY, with three ml.g6.4xlarge nodes (one GPU each)."""
    return ready_cluster(api, TAG, [{**GROUP, "instanceCount": 3}])


@pytest.fixture(scope="module")
def operator(cluster: Any, api: InstantStartClient) -> dict[str, Any]:
    """The cluster after PATCH /features turned the inference operator on, with the model downloaded to s3."""
    op = finished(api, api.update_features(TAG, {"inferenceOperator": {"enabled": True}}))
    assert op["status"] == "SUCCEEDED", op
    download = api.download_model(TAG, {"source": "huggingface", "modelId": MODEL, "destination": "s3"})
    op = finished(api, download["operation"])
    assert op["status"] == "SUCCEEDED" and op["result"]["downloadedFiles"] > 0, op
    return dict(cluster)


@pytest.fixture(scope="module")
def deployed(operator: Any, api: InstantStartClient) -> dict[str, Any]:
    """``qwen-managed`` deployed by its operation (DeploymentComplete, the SageMaker endpoint InService)."""
    accepted = seen(api.create_inference_endpoint(TAG, ENDPOINT))
    op = seen(finished(api, accepted["operation"]))
    assert op["type"] == "CREATE_INFERENCE_ENDPOINT" and op["status"] == "SUCCEEDED", op
    return dict(accepted)


def test_with_the_operator_off_a_managed_endpoint_is_409_naming_inference_operator(
    cluster: Any, api: InstantStartClient
) -> None:
    refused = refusal(lambda: api.create_inference_endpoint(TAG, ENDPOINT))

    assert refused.status == 409 and refused.code == "FeatureNotEnabled"
    assert refused.details[0]["field"] == "inferenceOperator"
    assert refused.details[0]["enableWith"]["body"] == {"inferenceOperator": {"enabled": True}}


def test_the_endpoint_reaches_deployment_complete_with_its_sagemaker_endpoint_in_service(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    view = seen(api.get_inference_endpoint(TAG, "qwen-managed"))

    assert deployed["kind"] == "InferenceEndpointConfig"
    assert deployed["apiVersion"] == "inference.sagemaker.aws.amazon.com/v1"
    assert deployed["endpointName"] == f"instantstart-{TAG}-qwen-managed"
    assert view["state"] == "DeploymentComplete" and view["readyReplicas"] == 1
    complete = next(c for c in view["conditions"] if c["type"] == "DeploymentComplete")
    assert complete["status"] == "True"
    assert view["sagemaker"]["state"] == "InService" and view["sagemaker"]["status"] == "InService"
    assert view["sagemaker"]["endpointArn"].endswith(f":endpoint/instantstart-{TAG}-qwen-managed")
    assert ":model/" in view["sagemaker"]["modelArn"] and ":endpoint-config/" in view["sagemaker"]["configArn"]
    assert len(view["pods"]) == 1
    obj = kube(sandbox).peek(IEC, "InferenceEndpointConfig", "qwen-managed")
    source = obj["spec"]["modelSourceConfig"]
    assert source["s3Storage"]["bucketName"].startswith(f"instantstart-{TAG}-")
    assert source["modelLocation"] == f"models/{MODEL}"
    assert obj["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"].endswith("-tls/qwen-managed/")
    listed = seen(api.list_inference_endpoints(TAG))["endpoints"]
    assert [(e["name"], e["state"]) for e in listed] == [("qwen-managed", "DeploymentComplete")]


def test_invoke_answers_the_deterministic_completion_and_a_body_over_1_mib_is_413(
    deployed: Any, api: InstantStartClient
) -> None:
    answer = seen(api.invoke_inference_endpoint(TAG, "qwen-managed", {"prompt": "Hello there", "max_tokens": 64}))

    assert answer["endpointName"] == f"instantstart-{TAG}-qwen-managed" and answer["truncated"] is False
    text = answer["body"]["choices"][0]["text"]
    assert text.startswith(f"sandbox completion from instantstart-{TAG}-qwen-managed for prompt sha256 ")
    assert answer["body"]["model"] == "qwen-managed"
    again = api.invoke_inference_endpoint(TAG, "qwen-managed", {"prompt": "Hello there", "max_tokens": 64})
    assert again["body"]["choices"][0]["text"] == text
    big = refusal(lambda: api.invoke_inference_endpoint(TAG, "qwen-managed", {"prompt": "x" * (1024 * 1024 + 1)}))
    assert big.status == 413 and big.details[0]["field"] == "body"


def test_refusals_name_the_field_before_anything_is_written(operator: Any, api: InstantStartClient) -> None:
    redis = refusal(
        lambda: api.create_inference_endpoint(
            TAG,
            {**ENDPOINT, "name": "cached", "kvCacheSpec": {"enableL2Cache": True, "l2CacheBackend": "redis"}},
        )
    )
    assert redis.status == 422 and redis.details[0]["field"].startswith("kvCacheSpec")
    assert "l2CacheUrl" in redis.message or "l2CacheUrl" in json.dumps(redis.details)

    session = refusal(
        lambda: api.create_inference_endpoint(
            TAG, {**ENDPOINT, "name": "sticky", "intelligentRoutingSpec": {"strategy": "session"}}
        )
    )
    assert session.status == 422 and session.details[0]["field"].startswith("intelligentRoutingSpec")
    assert "sessionKey" in json.dumps(session.body)

    wrong_type = refusal(
        lambda: api.create_inference_endpoint(TAG, {**ENDPOINT, "name": "big", "instanceType": "ml.p5.48xlarge"})
    )
    assert wrong_type.status == 422 and wrong_type.details[0]["field"] == "instanceType"
    assert wrong_type.details[0]["allowedValues"] == ["ml.g6.4xlarge"]

    tiered = refusal(
        lambda: api.create_inference_endpoint(
            TAG,
            {**ENDPOINT, "name": "tiered", "kvCacheSpec": {"enableL2Cache": True, "l2CacheBackend": "tieredstorage"}},
        )
    )
    assert tiered.status == 409 and tiered.details[0]["field"] == "tieredCheckpointing"

    tls = refusal(
        lambda: api.create_inference_endpoint(
            TAG, {**ENDPOINT, "name": "tls", "tls": {"certificateOutputS3Uri": "s3://someone-elses-bucket/certs/"}}
        )
    )
    assert tls.status == 422 and tls.details[0]["field"] == "tls.certificateOutputS3Uri"
    assert tls.details[0]["allowedValues"][0].endswith("-tls/")
    names = [e["name"] for e in api.list_inference_endpoints(TAG)["endpoints"]]
    assert not {"cached", "sticky", "big", "tiered", "tls"} & set(names)


def test_a_field_the_served_version_does_not_know_is_422_naming_it(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    body = {**ENDPOINT, "name": "routed", "intelligentRoutingSpec": {"strategy": "prefixaware"}}
    crd = kube(sandbox).peek("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD)
    v1 = next(i for i, v in enumerate(crd["spec"]["versions"]) if v["name"] == "v1")
    kube(sandbox).patch(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        CRD,
        None,
        [{"op": "replace", "path": f"/spec/versions/{v1}/served", "value": False}],
        patch_type="json",
    )
    try:
        refused = refusal(lambda: api.create_inference_endpoint(TAG, body))
    finally:
        kube(sandbox).patch(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            CRD,
            None,
            [{"op": "replace", "path": f"/spec/versions/{v1}/served", "value": True}],
            patch_type="json",
        )

    assert refused.status == 422
    assert refused.details[0]["field"] == "intelligentRoutingSpec"
    assert refused.details[0]["servedVersion"] == "inference.sagemaker.aws.amazon.com/v1alpha1"
    assert refused.details[0]["specPaths"] == ["spec.intelligentRoutingSpec"]
    assert "routed" not in [e["name"] for e in api.list_inference_endpoints(TAG)["endpoints"]]


def test_delete_removes_the_sagemaker_side_and_a_recreate_gets_fresh_model_and_config_arns(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    before = api.get_inference_endpoint(TAG, "qwen-managed")["sagemaker"]

    op = seen(finished(api, api.delete_inference_endpoint(TAG, "qwen-managed")["operation"]))

    assert op["type"] == "DELETE_INFERENCE_ENDPOINT" and op["status"] == "SUCCEEDED", op
    assert kube(sandbox).peek(IEC, "InferenceEndpointConfig", "qwen-managed") is None
    gone = refusal(lambda: api.get_inference_endpoint(TAG, "qwen-managed"))
    assert gone.status == 404 and gone.code == "InferenceEndpointNotFound"
    invoke = refusal(lambda: api.invoke_inference_endpoint(TAG, "qwen-managed", {"prompt": "hi"}))
    assert invoke.status == 404

    again = finished(api, api.create_inference_endpoint(TAG, ENDPOINT)["operation"])
    assert again["status"] == "SUCCEEDED", again
    after = seen(api.get_inference_endpoint(TAG, "qwen-managed"))["sagemaker"]
    assert after["modelArn"] != before["modelArn"] and after["configArn"] != before["configArn"]
    assert after["state"] == "InService"


def test_a_stuck_deployment_shows_the_pod_event_and_fails_with_the_operator_message_and_no_token_leaks(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    kube(sandbox).create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "hf-token", "namespace": "default"},
            "stringData": {"token": TOKEN},
        }
    )
    sandbox.aws.extension.inference.stall(EKS, "default", "hf-stuck", "manifest unknown")
    body = {
        "name": "hf-stuck",
        "instanceType": "ml.g6.4xlarge",
        "modelSource": {"type": "huggingface", "modelId": MODEL, "hfTokenSecret": {"name": "hf-token", "key": "token"}},
        "worker": {"image": IMAGE, "resources": {"gpus": 1}},
        "maxDeployTimeSeconds": 1200,
    }
    accepted = seen(api.create_inference_endpoint(TAG, body))

    def current() -> dict[str, Any]:
        try:
            return dict(api.get_inference_endpoint(TAG, "hf-stuck"))
        except ApiError as exc:  # not applied by the operation yet
            assert exc.status == 404
            return {"events": []}

    view = seen(
        eventually(
            current,
            lambda v: (
                v.get("state") == "DeploymentInProgress"
                and any(e["reason"] == "Failed" and "manifest unknown" in (e["message"] or "") for e in v["events"])
                and v.get("podReason") is not None  # the kubelet writes the pod's status after its events
            ),
        )
    )
    assert view["state"] == "DeploymentInProgress", view
    assert any("ErrImagePull" in (e["message"] or "") or e["reason"] == "BackOff" for e in view["events"])
    assert view["podReason"] is not None and (
        "ErrImagePull" in view["podReason"] or "ImagePullBackOff" in view["podReason"]
    )
    op = seen(finished(api, accepted["operation"]))
    assert op["status"] == "FAILED" and op["error"]["code"] == "DeploymentFailed", op
    obj = kube(sandbox).peek(IEC, "InferenceEndpointConfig", "hf-stuck")
    failed = next(c for c in obj["status"]["conditions"] if c["type"] == "DeploymentFailed")
    assert op["error"]["message"] == f"{failed['reason']}: {failed['message']}"
    # the operator names the pods' last Warning: which of kubelet's image-pull warnings is last depends on timing
    assert any(w in op["error"]["message"] for w in ("Failed to pull image", "ErrImagePull", "ImagePullBackOff")), op
    assert obj["spec"]["modelSourceConfig"]["huggingFaceModel"]["tokenSecretRef"] == {
        "name": "hf-token",
        "key": "token",
    }
    deleted = seen(finished(api, api.delete_inference_endpoint(TAG, "hf-stuck")["operation"]))
    assert deleted["status"] == "SUCCEEDED", deleted
    SEEN.extend(api.list_cluster_operations(TAG)["operations"])

    assert TOKEN not in json.dumps(SEEN)
    assert TOKEN not in caplog.text
    assert TOKEN not in Path(sandbox.engine_log_path).read_text(errors="replace")


def test_a_jumpstart_model_is_a_jumpstart_model_resource_that_deploys_answers_and_deletes_its_sagemaker_side(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    body = {
        "name": "ds-jumpstart",
        "instanceType": "ml.g6.4xlarge",
        "replicas": 1,
        "jumpStart": {"modelId": "deepseek-llm-r1-distill-qwen-1-5b", "modelVersion": "2.0.0"},
    }

    accepted = seen(api.create_inference_endpoint(TAG, body))
    op = seen(finished(api, accepted["operation"]))
    view = seen(api.get_inference_endpoint(TAG, "ds-jumpstart"))
    answer = seen(api.invoke_inference_endpoint(TAG, "ds-jumpstart", {"inputs": "Hello", "parameters": {}}))
    resource = kube(sandbox).peek(accepted["apiVersion"], "JumpStartModel", "ds-jumpstart")
    deleted = seen(finished(api, api.delete_inference_endpoint(TAG, "ds-jumpstart")["operation"]))

    assert accepted["kind"] == "JumpStartModel" and op["status"] == "SUCCEEDED", op
    assert resource["spec"]["model"]["modelId"] == "deepseek-llm-r1-distill-qwen-1-5b"
    assert resource["spec"]["model"]["modelVersion"] == "2.0.0"
    assert view["kind"] == "JumpStartModel" and view["state"] == "DeploymentComplete"
    assert view["sagemaker"]["status"] == "InService"
    endpoint = f"instantstart-{TAG}-ds-jumpstart"
    assert view["sagemaker"]["name"] == accepted["endpointName"] == answer["endpointName"] == endpoint
    assert answer["body"]["choices"][0]["text"].startswith(f"sandbox completion from {endpoint} ")
    assert deleted["status"] == "SUCCEEDED", deleted
    assert kube(sandbox).peek(accepted["apiVersion"], "JumpStartModel", "ds-jumpstart") is None
    sagemaker = boto3.client("sagemaker", region_name=sandbox.region)
    assert endpoint not in [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]]


def cli(*args: str) -> Result:
    """The ``instantstart`` CLI in process against the sandbox API (its URL and credentials are in the environment)."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_the_cli_creates_lists_shows_invokes_and_deletes_a_managed_endpoint(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    flags = ["--instance-type", "ml.g6.4xlarge", "--s3-model", f"models/{MODEL}", "--image", IMAGE, "--gpus", "1"]

    refused = cli("endpoints", "create", TAG, "--name", "cli-ep", *flags[:1], "ml.p5.48xlarge", *flags[2:])
    created = cli("endpoints", "create", TAG, "--name", "cli-ep", *flags, "--wait", "--poll-interval", "0.5")
    listed = cli("endpoints", "list", TAG)
    shown = cli("endpoints", "get", TAG, "cli-ep", "--json")
    invoked = cli("endpoints", "invoke", TAG, "cli-ep", '{"prompt": "from the cli", "max_tokens": 4}')
    deleted = cli("endpoints", "delete", TAG, "cli-ep", "--yes", "--wait", "--poll-interval", "0.5")

    assert refused.exit_code == 2 and "instanceType" in refused.output and "ml.g6.4xlarge" in refused.output
    assert created.exit_code == 0, created.output
    assert listed.exit_code == 0 and "cli-ep" in listed.output and "DeploymentComplete" in listed.output
    assert shown.exit_code == 0 and json.loads(shown.stdout)["sagemaker"]["status"] == "InService"
    assert invoked.exit_code == 0, invoked.output
    assert json.loads(invoked.stdout)["choices"][0]["text"] == f"sandbox completion from instantstart-{TAG}-cli-ep"
    assert deleted.exit_code == 0, deleted.output
    assert kube(sandbox).peek(IEC, "InferenceEndpointConfig", "cli-ep") is None
    gone = boto3.client("sagemaker", region_name=sandbox.region).list_endpoints()["Endpoints"]
    assert f"instantstart-{TAG}-cli-ep" not in [e["EndpointName"] for e in gone]
