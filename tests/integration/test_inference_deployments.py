"""Given a READY cluster in the sandbox, when a user downloads a model and serves it with vLLM through the HTTP API,
then the download is a Kubernetes Job following the storage convention that its operation waits for, the deployment
comes up with ready replicas, scales, refuses scale-in that would remove a pod serving a bound model, is deleted with
its Service, each refusal names the field and its allowed values, and no answer ever carries a token."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner, Result

from instantstart.inference.builders import ENGINE_IMAGES
from instantstart.models.inference import Engine
from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, eventually, finished, ready_cluster, refusal
from tests.keda import SCALED_OBJECT_CRD

TAG = "serve"
EKS = f"eks-cluster-{TAG}"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
TOKEN = "hf_NeverEchoedTokenValue123"
DEPLOYMENT = {
    "name": "qwen-vllm",
    "engine": "vllm",
    "modelPath": f"/s3/models/{MODEL}",
    "servedModelName": "qwen2.5-0.5b",
    "instanceType": "ml.g6.4xlarge",
    "gpus": 1,
    "maxModelLen": 4096,
    "replicas": 2,
    "hfTokenSecret": {"name": "hf-token", "key": "token"},
}


def kube(sandbox: Sandbox) -> Any:
    return sandbox.kube.cluster(EKS)


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``serve`` cluster, READY, with three ml.g6.4xlarge nodes (one GPU each)."""
    return ready_cluster(api, TAG, [{**GROUP, "instanceCount": 3}])


@pytest.fixture(scope="module")
def deployed(cluster: Any, api: InstantStartClient) -> dict[str, Any]:
    """``qwen-vllm`` applied by its operation."""
    accepted = api.create_inference_deployment(TAG, DEPLOYMENT)
    op = finished(api, accepted["operation"])
    assert op["status"] == "SUCCEEDED", op
    return dict(accepted)


def test_model_download_is_a_job_with_the_storage_convention_and_the_operation_waits_for_it(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    accepted = api.download_model(TAG, {"source": "huggingface", "modelId": MODEL, "destination": "s3"})

    bucket = f"s3://{accepted['location'].removeprefix('s3://').split('/')[0]}"
    assert accepted["modelPath"] == f"/s3/models/{MODEL}"
    assert accepted["location"] == f"{bucket}/models/{MODEL}/"
    job = eventually(
        lambda: kube(sandbox).peek("batch/v1", "Job", accepted["jobName"], "default"), lambda j: j is not None
    )
    template = job["spec"]["template"]
    assert template["metadata"]["labels"]["instantstart.io/model-download"] == "Qwen-Qwen2.5-0.5B-Instruct"
    env = {e["name"]: e.get("value") for e in template["spec"]["initContainers"][0]["env"]}
    assert env["HF_MODEL_ID"] == MODEL and env["HF_REVISION"] == "main"
    assert env["DESTINATION"] == accepted["location"]
    op = finished(api, accepted["operation"])
    assert op["type"] == "DOWNLOAD_MODEL" and op["status"] == "SUCCEEDED", op
    completed = kube(sandbox).peek("batch/v1", "Job", accepted["jobName"], "default")
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in completed["status"]["conditions"])
    assert op["result"]["downloadedFiles"] > 0 and op["result"]["downloadedBytes"] > 0
    listed = api.list_models(TAG)
    assert listed["bucket"] == bucket.removeprefix("s3://")
    (model,) = [m for m in listed["models"] if m["modelId"] == MODEL]
    assert model["files"] == op["result"]["downloadedFiles"]
    assert model["sizeBytes"] == op["result"]["downloadedBytes"]


def test_fsx_destination_without_the_fsx_feature_is_409_naming_it(cluster: Any, api: InstantStartClient) -> None:
    refused = refusal(
        lambda: api.download_model(TAG, {"source": "huggingface", "modelId": MODEL, "destination": "fsx"})
    )

    assert refused.status == 409 and refused.code == "FeatureNotEnabled"
    assert refused.details[0]["field"] == "fsx"


def test_vllm_deployment_reaches_its_ready_replicas_on_the_requested_type(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    view = eventually(
        lambda: api.get_inference_deployment(TAG, "qwen-vllm"), lambda d: d["status"] == "Ready", timeout=120
    )

    assert (view["readyReplicas"], view["desiredReplicas"]) == (2, 2)
    assert view["engine"] == "vllm" and view["gpus"] == 1 and view["instanceType"] == "ml.g6.4xlarge"
    assert view["service"]["type"] == "ClusterIP" and view["service"]["url"] == "http://qwen-vllm.default.svc:8000"
    assert len(view["pods"]) == 2 and all(p["ready"] and p["nodeName"] for p in view["pods"])
    assert view["hfTokenSecretName"] == "hf-token"
    dep = kube(sandbox).peek("apps/v1", "Deployment", "qwen-vllm", "default")
    engine = dep["spec"]["template"]["spec"]["containers"][0]
    assert engine["command"][engine["command"].index("--tensor-parallel-size") + 1] == "1"
    token_env = next(e for e in engine["env"] if e["name"] == "HF_TOKEN")
    assert "value" not in token_env and token_env["valueFrom"]["secretKeyRef"] == {
        "name": "hf-token",
        "key": "token",
        "optional": False,
    }
    listed = api.list_inference_deployments(TAG)["deployments"]
    assert [(d["name"], d["status"]) for d in listed] == [("qwen-vllm", "Ready")]


def test_invoke_reaches_a_ready_pod_through_the_service_proxy_the_api_role_is_bound_to(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    eventually(lambda: api.get_inference_deployment(TAG, "qwen-vllm"), lambda d: d["readyReplicas"] == 2, timeout=120)
    pods = {p["name"] for p in api.get_inference_deployment(TAG, "qwen-vllm")["pods"]}

    answer = api.invoke_inference_deployment(TAG, "qwen-vllm", {"prompt": "Hello there", "max_tokens": 32})
    chat = api.invoke_inference_deployment(
        TAG, "qwen-vllm", {"messages": [{"role": "user", "content": "Hi"}]}, route="v1/chat/completions"
    )

    assert (answer["service"], answer["port"], answer["route"]) == ("qwen-vllm", 8000, "v1/completions")
    body = answer["body"]
    assert body["object"] == "text_completion" and body["model"] == "qwen2.5-0.5b" and not answer["truncated"]
    assert any(f"from {pod} " in body["choices"][0]["text"] for pod in pods), (body, pods)
    assert chat["body"]["object"] == "chat.completion"
    assert chat["body"]["choices"][0]["message"]["role"] == "assistant"
    # what AWS and Kubernetes hold for it: the API role's entry lists the group the Role binding names
    api_role = sandbox.deployment.environment["API_ROLE_ARN"] if sandbox.deployment else ""
    entry = boto3.client("eks", region_name=sandbox.region).describe_access_entry(
        clusterName=EKS, principalArn=api_role
    )["accessEntry"]
    assert entry["kubernetesGroups"] == ["instantstart-api"]
    binding = kube(sandbox).peek("rbac.authorization.k8s.io/v1", "RoleBinding", "instantstart-api-invoke", "default")
    role = kube(sandbox).peek("rbac.authorization.k8s.io/v1", "Role", "instantstart-api-invoke", "default")
    assert binding["subjects"][0]["name"] == "instantstart-api"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["create", "get"]}]


def test_invoke_refusals_name_what_is_wrong(deployed: Any, api: InstantStartClient, sandbox: Sandbox) -> None:
    eventually(lambda: api.get_inference_deployment(TAG, "qwen-vllm"), lambda d: d["readyReplicas"] == 2, timeout=120)

    wrong_model = refusal(lambda: api.invoke_inference_deployment(TAG, "qwen-vllm", {"prompt": "x", "model": "gpt"}))
    no_router = refusal(lambda: api.invoke_inference_deployment(TAG, "qwen-vllm", {"prompt": "x"}, via="router"))
    too_big = refusal(lambda: api.invoke_inference_deployment(TAG, "qwen-vllm", {"prompt": "x" * (1024 * 1024)}))
    bad_route = refusal(
        lambda: api.request(
            "POST", f"/clusters/{TAG}/inference/deployments/qwen-vllm/invoke", body={"body": {}, "route": "v1/embed"}
        )
    )
    binding = kube(sandbox).peek("rbac.authorization.k8s.io/v1", "RoleBinding", "instantstart-api-invoke", "default")
    kube(sandbox).delete("rbac.authorization.k8s.io/v1", "RoleBinding", "instantstart-api-invoke", "default")
    try:
        forbidden = refusal(lambda: api.invoke_inference_deployment(TAG, "qwen-vllm", {"prompt": "x"}))
    finally:
        meta = {k: binding["metadata"][k] for k in ("name", "namespace", "labels")}
        kube(sandbox).create(
            {**{k: binding[k] for k in ("apiVersion", "kind", "roleRef", "subjects")}, "metadata": meta}
        )

    assert wrong_model.status == 502 and wrong_model.code == "ModelError"
    assert wrong_model.message == "The model `gpt` does not exist."
    assert wrong_model.details[0]["engineStatus"] == 404
    assert no_router.status == 404 and no_router.code == "InferenceRouterNotFound"
    assert no_router.details[0]["field"] == "via"
    assert too_big.status == 413 and too_big.details[0]["field"] == "body"
    assert bad_route.status == 422 and bad_route.details[0]["field"] == "route"
    assert "v1/chat/completions" in json.dumps(bad_route.details[0])
    assert forbidden.status == 503 and 'cannot create resource "services/proxy"' in forbidden.message
    assert api.invoke_inference_deployment(TAG, "qwen-vllm", {"prompt": "x"})["body"]["model"] == "qwen2.5-0.5b"


def test_scale_out_then_in_through_patch_removes_an_idle_pod_not_the_bound_one(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    op = finished(api, api.scale_inference_deployment(TAG, "qwen-vllm", 3)["operation"])
    assert op["type"] == "UPDATE_INFERENCE_DEPLOYMENT" and op["status"] == "SUCCEEDED", op
    up = eventually(lambda: api.get_inference_deployment(TAG, "qwen-vllm"), lambda d: d["readyReplicas"] == 3)
    assert up["desiredReplicas"] == 3 and up["status"] == "Ready"
    # The oldest pod serves a bound model: the one the sandbox's ReplicaSet would remove first without the cost.
    bound = min(
        kube(sandbox).peek_list("v1", "Pod", "default", "instantstart.io/inference-deployment=qwen-vllm"),
        key=lambda p: p["metadata"]["creationTimestamp"],
    )["metadata"]["name"]
    kube(sandbox).patch(
        "v1", "Pod", bound, "default", {"metadata": {"annotations": {"instantstart.io/bound-model": "qwen"}}}
    )

    op = finished(api, api.scale_inference_deployment(TAG, "qwen-vllm", 2)["operation"])
    assert op["status"] == "SUCCEEDED", op
    down = eventually(lambda: api.get_inference_deployment(TAG, "qwen-vllm"), lambda d: len(d["pods"]) == 2)
    assert (down["readyReplicas"], down["desiredReplicas"]) == (2, 2)
    costs = {p["name"]: p["deletionCost"] for p in down["pods"]}
    assert bound in costs and costs[bound] == 1000, costs
    assert [c for n, c in costs.items() if n != bound] == [-1000]


def test_scale_in_below_the_pods_serving_a_bound_model_is_409(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    pods = eventually(lambda: api.get_inference_deployment(TAG, "qwen-vllm")["pods"], lambda p: len(p) == 2)
    for p in pods:
        kube(sandbox).patch(
            "v1", "Pod", p["name"], "default", {"metadata": {"annotations": {"instantstart.io/bound-model": "qwen"}}}
        )

    refused = refusal(lambda: api.scale_inference_deployment(TAG, "qwen-vllm", 1))

    assert refused.status == 409 and refused.code == "BoundPodsWouldBeRemoved"
    assert refused.details[0]["field"] == "replicas" and refused.details[0]["minimum"] == 2
    assert sorted(refused.details[0]["boundPods"]) == sorted(p["name"] for p in pods)
    view = api.get_inference_deployment(TAG, "qwen-vllm")
    assert view["desiredReplicas"] == 2 and {p["boundModel"] for p in view["pods"]} == {"qwen"}


def test_an_instance_type_not_in_the_cluster_is_422_listing_the_groups_types(
    cluster: Any, api: InstantStartClient
) -> None:
    refused = refusal(
        lambda: api.create_inference_deployment(TAG, {**DEPLOYMENT, "name": "big", "instanceType": "ml.p5.48xlarge"})
    )

    assert refused.status == 422
    assert refused.details[0]["field"] == "instanceType"
    assert refused.details[0]["allowedValues"] == ["ml.g6.4xlarge"]


def test_a_bad_engine_is_422_naming_engine_and_its_values(cluster: Any, api: InstantStartClient) -> None:
    refused = refusal(lambda: api.create_inference_deployment(TAG, {**DEPLOYMENT, "name": "bad", "engine": "tgi"}))

    assert refused.status == 422
    assert refused.details[0]["field"] == "engine"
    assert "vllm" in str(refused) and "sglang" in str(refused)


def test_more_gpus_than_the_type_has_is_422_naming_gpus(cluster: Any, api: InstantStartClient) -> None:
    refused = refusal(lambda: api.create_inference_deployment(TAG, {**DEPLOYMENT, "name": "wide", "gpus": 4}))

    assert refused.status == 422 and refused.details[0]["field"] == "gpus"
    assert (refused.details[0]["requested"], refused.details[0]["available"]) == (4, 1)


def test_a_token_value_is_refused_and_never_echoed(cluster: Any, api: InstantStartClient) -> None:
    refused = refusal(lambda: api.create_inference_deployment(TAG, {**DEPLOYMENT, "name": "leak", "hfToken": TOKEN}))
    assert refused.status == 422 and refused.details[0]["field"] == "hfToken"
    download = refusal(lambda: api.download_model(TAG, {"source": "huggingface", "modelId": MODEL, "token": TOKEN}))
    assert download.status == 422

    for answer in (refused.body, download.body):
        assert TOKEN not in json.dumps(answer)


def test_the_sglang_router_is_refused_for_vllm_workers(deployed: Any, api: InstantStartClient) -> None:
    refused = refusal(lambda: api.create_inference_router(TAG, "qwen-vllm", {}))

    assert refused.status == 409 and refused.code == "RouterNeedsSGLang"
    assert refused.details[0]["allowedValues"] == ["sglang"]


def test_delete_removes_the_deployment_and_its_service(
    deployed: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    op = finished(api, api.delete_inference_deployment(TAG, "qwen-vllm")["operation"])

    assert op["type"] == "DELETE_INFERENCE_DEPLOYMENT" and op["status"] == "SUCCEEDED", op
    assert kube(sandbox).peek("apps/v1", "Deployment", "qwen-vllm", "default") is None
    assert kube(sandbox).peek("v1", "Service", "qwen-vllm", "default") is None
    assert api.list_inference_deployments(TAG)["deployments"] == []
    gone = refusal(lambda: api.get_inference_deployment(TAG, "qwen-vllm"))
    assert gone.status == 404 and gone.code == "InferenceDeploymentNotFound"
    for o in api.list_cluster_operations(TAG)["operations"]:
        assert TOKEN not in json.dumps(o)


SGLANG = {**DEPLOYMENT, "name": "qwen-sglang", "engine": "sglang", "replicas": 2}
AUTOSCALING = {
    "minReplicas": 1,
    "maxReplicas": 3,
    "prometheusServerAddress": "http://prometheus.monitoring:9090",
    "queueThreshold": 4,
}


def test_an_sglang_deployment_is_409_until_ready_then_answers_and_its_router_forwards_to_a_worker(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    image = ENGINE_IMAGES[Engine.SGLANG]  # held unpullable from the start: the pods cannot be ready before the call
    sandbox.aws.extension.inference.fail_image_pull(EKS, image)
    try:
        op = finished(api, api.create_inference_deployment(TAG, SGLANG)["operation"])
        assert op["status"] == "SUCCEEDED", op
        deployed_image = kube(sandbox).peek("apps/v1", "Deployment", "qwen-sglang", "default")["spec"]["template"][
            "spec"
        ]["containers"][0]["image"]
        not_ready = refusal(lambda: api.invoke_inference_deployment(TAG, "qwen-sglang", {"prompt": "hi"}))
        pulling = eventually(
            lambda: api.get_inference_deployment(TAG, "qwen-sglang"), lambda d: d["reason"] is not None, timeout=60
        )
    finally:
        sandbox.aws.extension.inference.allow_image_pull(EKS, image)
    assert deployed_image == image
    ready = eventually(
        lambda: api.get_inference_deployment(TAG, "qwen-sglang"), lambda d: d["readyReplicas"] == 2, timeout=180
    )
    workers = {p["name"] for p in ready["pods"]}
    direct = api.invoke_inference_deployment(TAG, "qwen-sglang", {"prompt": "hi"})

    keda_missing = refusal(lambda: api.create_inference_router(TAG, "qwen-sglang", {"autoscaling": AUTOSCALING}))
    kube(sandbox).create(SCALED_OBJECT_CRD)
    op = finished(api, api.create_inference_router(TAG, "qwen-sglang", {"autoscaling": AUTOSCALING})["operation"])
    view = eventually(
        lambda: api.get_inference_deployment(TAG, "qwen-sglang"), lambda d: d["router"] is not None, timeout=60
    )
    eventually(
        lambda: kube(sandbox).peek("apps/v1", "Deployment", "qwen-sglang-router", "default"),
        lambda d: (d.get("status") or {}).get("readyReplicas") == 1,
        timeout=180,
    )
    prompts = [f"prompt {i}" for i in range(6)]
    routed = [api.invoke_inference_deployment(TAG, "qwen-sglang", {"prompt": p}) for p in prompts]
    by_hand = refusal(lambda: api.scale_inference_deployment(TAG, "qwen-sglang", 3))

    assert not_ready.status == 409 and not_ready.code == "InferenceDeploymentNotReady"
    assert not_ready.details[0]["readyReplicas"] == 0
    assert pulling["status"] == "Progressing" and {p["reason"] for p in pulling["pods"]} <= {
        "ErrImagePull",
        "ImagePullBackOff",
        None,
    }
    assert "ErrImagePull" in pulling["reason"] or "ImagePullBackOff" in pulling["reason"], pulling["reason"]
    assert ready["reason"] is None
    assert direct["service"] == "qwen-sglang" and direct["body"]["model"] == "qwen2.5-0.5b"
    assert keda_missing.status == 409 and keda_missing.code == "KedaNotInstalled"
    assert op["type"] == "CREATE_INFERENCE_ROUTER" and op["status"] == "SUCCEEDED", op
    assert view["router"]["url"] == "http://qwen-sglang-router.default.svc:30000"
    assert view["autoscaling"] == {"minReplicas": 1, "maxReplicas": 3}
    scaled = kube(sandbox).peek("keda.sh/v1alpha1", "ScaledObject", "qwen-sglang", "default")
    assert scaled["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen-sglang"}
    assert scaled["spec"]["triggers"][0]["metadata"]["threshold"] == "4"
    assert {r["service"] for r in routed} == {"qwen-sglang-router"}
    assert by_hand.status == 409 and by_hand.code == "ScaledByAutoscaler"  # never fights KEDA
    assert "ScaledObject" in by_hand.message and by_hand.details[0]["maxReplicas"] == 3
    answered_by = {w for r in routed for w in workers if f"from {w} " in r["body"]["choices"][0]["text"]}
    assert answered_by and answered_by <= workers, (routed, workers)
    assert len(answered_by) == 2, "the router spreads distinct prompts over both workers"


def cli(*args: str) -> Result:
    """The ``instantstart`` CLI in process against the sandbox API (its URL and credentials are in the environment)."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_the_cli_lists_shows_invokes_and_deletes_a_deployment_with_its_router(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    eventually(lambda: api.get_inference_deployment(TAG, "qwen-sglang"), lambda d: d["readyReplicas"] == 2)

    models = cli("models", "list", TAG)
    listed = cli("deployments", "list", TAG)
    shown = cli("deployments", "get", TAG, "qwen-sglang")
    invoked = cli("deployments", "invoke", TAG, "qwen-sglang", '{"prompt": "from the cli"}', "--via", "service")
    chat = cli(
        "deployments", "invoke", TAG, "qwen-sglang", '{"messages": [{"role": "user", "content": "hi"}]}', "--chat"
    )
    not_json = cli("deployments", "invoke", TAG, "qwen-sglang", "prompt please")
    fsx = cli("models", "download", TAG, MODEL, "--destination", "fsx")
    deleted = cli("deployments", "delete", TAG, "qwen-sglang", "--yes", "--wait", "--poll-interval", "0.5")

    assert models.exit_code == 0 and f"/s3/models/{MODEL}" in models.output, models.output
    assert listed.exit_code == 0 and "qwen-sglang" in listed.output and "Ready" in listed.output, listed.output
    assert shown.exit_code == 0 and "http://qwen-sglang-router.default.svc:30000" in shown.output, shown.output
    assert invoked.exit_code == 0, invoked.output
    answer = json.loads(invoked.stdout)
    assert answer["object"] == "text_completion" and answer["model"] == "qwen2.5-0.5b"
    assert chat.exit_code == 0 and json.loads(chat.stdout)["object"] == "chat.completion", chat.output
    assert not_json.exit_code == 2 and "BODY is not JSON" in not_json.output
    assert fsx.exit_code == 2 and "fsx" in fsx.output, fsx.output
    assert deleted.exit_code == 0, deleted.output
    for api_version, kind, name in (
        ("apps/v1", "Deployment", "qwen-sglang"),
        ("apps/v1", "Deployment", "qwen-sglang-router"),
        ("v1", "Service", "qwen-sglang-router"),
        ("keda.sh/v1alpha1", "ScaledObject", "qwen-sglang"),
    ):
        assert kube(sandbox).peek(api_version, kind, name, "default") is None, (kind, name)
