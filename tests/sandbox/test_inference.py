"""The sandbox's inference workloads, through boto3 and the official kubernetes client.

Each test runs on one sandbox (AWS server in front of the sandbox Kubernetes API, on a fast simulated clock) and
its own Kubernetes cluster: the HyperPod inference operator's add-on objects (CRDs and controller Deployment),
GPU nodes, then what a user of ``kubectl`` and the AWS SDK sees: custom resource states, pods, events, logs,
SageMaker endpoints, InvokeEndpoint answers, S3 objects.
"""

from __future__ import annotations

import json
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from kubernetes import client, watch

from instantstart_sandbox.aws.addons import CATALOG, addon_objects
from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.clock import SimClock
from instantstart_sandbox.kube.server import KubeApiServer
from instantstart_sandbox.kube.store import KubeCluster

SCALE = 300.0
REGION = "us-west-2"
ACCOUNT = "123456789012"
GROUP, VERSION = "inference.sagemaker.aws.amazon.com", "v1"
IEC, JSM = "inferenceendpointconfigs", "jumpstartmodels"
G5 = "ml.g5.8xlarge"
VLLM = "vllm/vllm-openai:v0.6.3"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[tuple[AwsSandboxServer, KubeApiServer]]:
    clock = SimClock(scale=SCALE)
    kube = KubeApiServer(clock=clock)
    kube.start()
    aws = AwsSandboxServer(clock, kube)
    aws.start()
    yield aws, kube
    aws.stop()
    kube.stop()
    clock.stop()


@pytest.fixture
def name(sandbox: tuple[AwsSandboxServer, KubeApiServer], request: pytest.FixtureRequest) -> str:
    cluster = f"inf-{uuid.uuid4().hex[:8]}"
    sandbox[1].add_cluster(cluster)
    return cluster


@pytest.fixture
def kube(sandbox: tuple[AwsSandboxServer, KubeApiServer], name: str) -> KubeCluster:
    return sandbox[1].cluster(name)


@pytest.fixture
def api(sandbox: tuple[AwsSandboxServer, KubeApiServer], name: str, tmp_path: Path) -> client.ApiClient:
    ca = tmp_path / "ca.pem"
    ca.write_text(sandbox[1].ca_pem)
    cfg = client.Configuration()
    cfg.host = sandbox[1].endpoint(name)
    cfg.ssl_ca_cert = str(ca)
    cfg.api_key = {"authorization": "Bearer sandbox-test-token"}
    return client.ApiClient(cfg)


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
def aws(sandbox: tuple[AwsSandboxServer, KubeApiServer]) -> Callable[[str], Any]:
    def make(service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=sandbox[0].endpoint_url,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    return make


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def install_operator(kube: KubeCluster, with_controller: bool = True) -> None:
    spec = CATALOG["amazon-sagemaker-hyperpod-inference"]
    for obj in addon_objects(spec, spec.versions[0], REGION):
        if obj["kind"] == "Deployment" and not with_controller:
            continue
        kube.apply(obj, field_manager="eks")


def node(kube: KubeCluster, name: str, instance_type: str = G5, gpus: int = 1) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "node.kubernetes.io/instance-type": instance_type,
                    "sagemaker.amazonaws.com/node-health-status": "Schedulable",
                },
            },
            "spec": {},
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.1.20"}],
                "allocatable": {"cpu": "31", "memory": "120Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
            },
        }
    )


def endpoint_config(name: str, endpoint: str = "", gpus: int = 1, image: str = VLLM) -> dict[str, Any]:
    resources = {"nvidia.com/gpu": gpus, "cpu": "4", "memory": "16Gi"}
    spec: dict[str, Any] = {
        "modelName": "tiny-llama",
        "instanceType": G5,
        "replicas": 1,
        "modelSourceConfig": {
            "modelSourceType": "s3",
            "s3Storage": {"bucketName": "models-bucket", "region": REGION},
            "modelLocation": "tiny-llama",
        },
        "worker": {
            "image": image,
            "modelInvocationPort": {"containerPort": 8000},
            "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
            "resources": {"requests": resources, "limits": resources},
            "environmentVariables": [{"name": "SANDBOX_MODEL_LOAD_SECONDS", "value": "120"}],
        },
    }
    if endpoint:
        spec["endpointName"] = endpoint
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def get(custom: client.CustomObjectsApi, name: str, plural: str = IEC) -> dict[str, Any]:
    return dict(custom.get_namespaced_custom_object(GROUP, VERSION, "default", plural, name))


def state(custom: client.CustomObjectsApi, name: str, plural: str = IEC) -> str | None:
    return (get(custom, name, plural).get("status") or {}).get("state")


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == ctype)


def watched_states(custom: client.CustomObjectsApi, name: str, until: str, plural: str = IEC) -> list[str]:
    """The distinct successive ``status.state`` values of ``name`` seen through a watch, up to ``until``."""
    seen: list[str] = []
    stream = watch.Watch().stream(
        custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        "default",
        plural,
        field_selector=f"metadata.name={name}",
        timeout_seconds=20,
    )
    for event in stream:
        value = (event["object"].get("status") or {}).get("state")
        if value and (not seen or seen[-1] != value):
            seen.append(value)
        if value == until:
            break
    return seen


def pod_events(core: client.CoreV1Api, selector: str) -> list[Any]:
    uids = {p.metadata.uid for p in core.list_namespaced_pod("default", label_selector=selector).items}
    return [e for e in core.list_namespaced_event("default").items if e.involved_object.uid in uids]


def test_endpoint_config_moves_through_states_and_registers_a_sagemaker_endpoint(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi, aws: Callable[[str], Any]
) -> None:
    install_operator(kube, with_controller=False)
    node(kube, "g5-a")
    node(kube, "other", instance_type="ml.m5.xlarge", gpus=0)
    endpoint = f"ep-{uuid.uuid4().hex[:8]}"
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", IEC, endpoint_config("tiny", endpoint))
    time.sleep(0.3)  # 90 simulated seconds without the operator: stored, nothing happens
    assert "status" not in get(custom, "tiny")
    assert client.AppsV1Api(core.api_client).list_namespaced_deployment("default").items == []

    with ThreadPoolExecutor(1) as pool:  # the watch opens before the operator can write its first state
        watching = pool.submit(watched_states, custom, "tiny", "DeploymentComplete")
        time.sleep(0.2)
        install_operator(kube)
        states = watching.result()
    assert states == ["DeploymentPending", "DeploymentInProgress", "DeploymentComplete"]

    obj = get(custom, "tiny")
    assert obj["metadata"]["finalizers"] == ["inference.sagemaker.aws.amazon.com/sagemaker-resources"]
    assert condition(obj, "DeploymentComplete")["status"] == "True"
    assert condition(obj, "DeploymentInProgress")["status"] == "False"
    assert condition(obj, "SageMakerEndpointRegistrationComplete")["status"] == "True"
    assert obj["status"]["deploymentStatus"]["deploymentObjectOverallState"] == "DeploymentComplete"
    assert obj["status"]["replicas"] == 1
    pods = core.list_namespaced_pod("default", label_selector=obj["status"]["selector"]).items
    assert [p.spec.node_name for p in pods] == ["g5-a"]
    assert pods[0].spec.containers[0].image == VLLM
    assert all(c.status == "True" for c in pods[0].status.conditions if c.type == "Ready")
    service = core.read_namespaced_service("tiny", "default")
    assert [p.port for p in service.spec.ports] == [8000]

    described = aws("sagemaker").describe_endpoint(EndpointName=endpoint)
    assert described["EndpointStatus"] == "InService"
    sagemaker_status = obj["status"]["endpoints"]["sagemaker"]
    assert sagemaker_status["state"] == "InService"
    assert sagemaker_status["endpointArn"] == described["EndpointArn"]
    config = aws("sagemaker").describe_endpoint_config(EndpointConfigName=described["EndpointConfigName"])
    assert sagemaker_status["configArn"] == config["EndpointConfigArn"]
    assert config["ProductionVariants"][0]["InstanceType"] == G5
    model = aws("sagemaker").describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])
    assert sagemaker_status["modelArn"] == model["ModelArn"]
    registration = get(custom, "tiny", "sagemakerendpointregistrations")
    assert registration["status"]["state"] == "CreationCompleted"
    assert registration["status"]["endpoint"]["arn"] == described["EndpointArn"]


def test_endpoint_without_gpu_room_stays_in_progress_with_the_scheduler_event(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    install_operator(kube)
    node(kube, "g5-a")
    node(kube, "g5-b")
    big = endpoint_config("big", "", gpus=4)
    big["spec"]["maxDeployTimeInSeconds"] = 900
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", IEC, big)
    wait_for(lambda: pod_events(core, "app=big"))
    time.sleep(0.3)
    assert state(custom, "big") == "DeploymentInProgress"
    assert condition(get(custom, "big"), "DeploymentInProgress")["status"] == "True"
    warnings = [(e.type, e.reason, e.message) for e in pod_events(core, "app=big")]
    assert ("Warning", "FailedScheduling", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.") in warnings

    # past spec.maxDeployTimeInSeconds the operator gives up and says why
    wait_for(lambda: state(custom, "big") == "DeploymentFailed")
    failed = condition(get(custom, "big"), "DeploymentFailed")
    assert failed["status"] == "True"
    assert failed["reason"] == "DeploymentTimedOut"
    assert failed["message"] == (
        "deployment did not complete within 900 seconds: FailedScheduling: 0/2 nodes are available: "
        "2 Insufficient nvidia.com/gpu."
    )


def test_stalled_endpoint_shows_the_image_pull_event_then_completes_when_released(
    sandbox: tuple[AwsSandboxServer, KubeApiServer],
    name: str,
    kube: KubeCluster,
    core: client.CoreV1Api,
    custom: client.CustomObjectsApi,
) -> None:
    install_operator(kube)
    node(kube, "g5-a")
    faults = sandbox[0].extension.inference
    faults.stall(name, "default", "stuck", "manifest unknown: tag v9.9 not found")
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", IEC, endpoint_config("stuck"))

    def pull_failed() -> bool:
        return any(e.reason == "Failed" and "manifest unknown" in e.message for e in pod_events(core, "app=stuck"))

    wait_for(pull_failed)
    time.sleep(0.3)
    assert state(custom, "stuck") == "DeploymentInProgress"
    pod = core.list_namespaced_pod("default", label_selector="app=stuck").items[0]
    assert pod.status.phase == "Pending"
    assert pod.status.container_statuses[0].state.waiting.reason in ("ErrImagePull", "ImagePullBackOff")
    failed = next(e for e in pod_events(core, "app=stuck") if e.reason == "Failed" and "manifest" in e.message)
    assert failed.type == "Warning"
    assert failed.message == f'Failed to pull image "{VLLM}": manifest unknown: tag v9.9 not found'

    faults.unstall(name, "default", "stuck")
    wait_for(lambda: state(custom, "stuck") == "DeploymentComplete")


def test_delete_removes_the_sagemaker_side_and_a_recreate_gets_new_resources(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi, aws: Callable[[str], Any]
) -> None:
    install_operator(kube)
    node(kube, "g5-a")
    endpoint = f"ep-{uuid.uuid4().hex[:8]}"
    sm = aws("sagemaker")
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", IEC, endpoint_config("gone", endpoint))
    wait_for(lambda: state(custom, "gone") == "DeploymentComplete")
    first = get(custom, "gone")["status"]["endpoints"]["sagemaker"]
    config_name = sm.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
    model_name = sm.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"][0]["ModelName"]

    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", IEC, "gone")
    deleting = wait_for(lambda: (o := get(custom, "gone"))["status"]["state"] == "DeletionInProgress" and o)
    assert deleting["metadata"]["deletionTimestamp"]
    assert sm.describe_endpoint(EndpointName=endpoint)["EndpointStatus"] == "Deleting"

    def gone() -> bool:
        try:
            get(custom, "gone")
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone)
    for call, kwargs in (
        (sm.describe_endpoint, {"EndpointName": endpoint}),
        (sm.describe_endpoint_config, {"EndpointConfigName": config_name}),
        (sm.describe_model, {"ModelName": model_name}),
    ):
        with pytest.raises(ClientError) as err:
            call(**kwargs)
        assert err.value.response["Error"]["Code"] == "ValidationException"
    wait_for(lambda: not core.list_namespaced_pod("default", label_selector="app=gone").items)
    assert not core.list_namespaced_service("default").items or all(
        s.metadata.name != "gone" for s in core.list_namespaced_service("default").items
    )

    custom.create_namespaced_custom_object(GROUP, VERSION, "default", IEC, endpoint_config("gone", endpoint))
    wait_for(lambda: state(custom, "gone") == "DeploymentComplete")
    second = get(custom, "gone")["status"]["endpoints"]["sagemaker"]
    assert second["modelArn"] != first["modelArn"]
    assert second["configArn"] != first["configArn"]
    assert second["endpointArn"] == first["endpointArn"]  # AWS derives an endpoint's ARN from its name
    assert sm.describe_endpoint(EndpointName=endpoint)["EndpointStatus"] == "InService"


def test_invoke_endpoint_answers_deterministically_and_refuses_unknown_endpoints(
    sandbox: tuple[AwsSandboxServer, KubeApiServer],
    name: str,
    kube: KubeCluster,
    custom: client.CustomObjectsApi,
    aws: Callable[[str], Any],
) -> None:
    install_operator(kube)
    node(kube, "g5-a")
    endpoint = f"ep-{uuid.uuid4().hex[:8]}"
    runtime = aws("sagemaker-runtime")
    # an endpoint the operator created that is still Creating (made directly: the operator's own Creating
    # window is 60 simulated seconds, too short to hit reliably on a loaded machine)
    side = sandbox[0].extension.sagemaker_inference
    side.create_model(name, f"{endpoint}-m", VLLM, {})
    side.create_endpoint_config(f"{endpoint}-c", f"{endpoint}-m", G5, 1)
    side.create_endpoint(name, f"{endpoint}-creating", f"{endpoint}-c", "tiny-llama")
    with pytest.raises(ClientError) as creating:
        runtime.invoke_endpoint(
            EndpointName=f"{endpoint}-creating", Body=b'{"prompt": "hi"}', ContentType="application/json"
        )
    assert creating.value.response["Error"]["Code"] == "ValidationError"
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", IEC, endpoint_config("chat", endpoint))
    wait_for(lambda: state(custom, "chat") == "DeploymentComplete")

    def invoke(body: dict[str, Any]) -> dict[str, Any]:
        answer = runtime.invoke_endpoint(EndpointName=endpoint, Body=json.dumps(body), ContentType="application/json")
        assert answer["ContentType"] == "application/json"
        assert answer["InvokedProductionVariant"] == "AllTraffic"
        return dict(json.loads(answer["Body"].read()))

    first = invoke({"prompt": "What is HyperPod?", "max_tokens": 32})
    assert first == invoke({"prompt": "What is HyperPod?", "max_tokens": 32})
    assert first["object"] == "text_completion"
    assert first["model"] == "tiny-llama"
    assert "of 17 characters" in first["choices"][0]["text"]
    other = invoke({"prompt": "Something else entirely", "max_tokens": 32})
    assert other["choices"][0]["text"] != first["choices"][0]["text"]
    chat = invoke({"messages": [{"role": "user", "content": "What is HyperPod?"}], "max_tokens": 32})
    assert chat["choices"][0]["text"] == first["choices"][0]["text"]
    assert invoke({"prompt": "a b c", "max_tokens": 3})["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 3,
        "total_tokens": 6,
    }

    with pytest.raises(ClientError) as not_json:
        runtime.invoke_endpoint(EndpointName=endpoint, Body=b"plain text", ContentType="text/plain")
    assert not_json.value.response["Error"]["Code"] == "ModelError"
    assert not_json.value.response["ResponseMetadata"]["HTTPStatusCode"] == 424

    with pytest.raises(ClientError) as unknown:
        runtime.invoke_endpoint(EndpointName="no-such-endpoint", Body=b"{}", ContentType="application/json")
    error = unknown.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "ValidationError"
    assert error["Error"]["Message"] == f"Endpoint no-such-endpoint of account {ACCOUNT} not found."


def test_jumpstart_model_gets_an_endpoint_that_answers(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi, aws: Callable[[str], Any]
) -> None:
    install_operator(kube)
    node(kube, "g5-a")
    endpoint = f"js-{uuid.uuid4().hex[:8]}"
    custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        JSM,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "JumpStartModel",
            "metadata": {"name": "mistral", "namespace": "default"},
            "spec": {
                "model": {"modelId": "huggingface-llm-mistral-7b-instruct", "acceptEula": True},
                "server": {"instanceType": G5},
                "sageMakerEndpoint": {"name": endpoint},
            },
        },
    )
    assert watched_states(custom, "mistral", "DeploymentComplete", JSM)[-1] == "DeploymentComplete"
    pods = core.list_namespaced_pod("default", label_selector="app=mistral").items
    assert [p.spec.node_selector["node.kubernetes.io/instance-type"] for p in pods] == [G5]
    answer = aws("sagemaker-runtime").invoke_endpoint(EndpointName=endpoint, Body=b'{"inputs": "hello"}')
    assert json.loads(answer["Body"].read())["model"] == "huggingface-llm-mistral-7b-instruct"


def download_job(name: str, model_id: str, destination: str, seconds: int = 60) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"instantstart.io/model-download": "tiny-llama"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "download",
                            "image": "public.ecr.aws/instantstart/model-downloader:1",
                            "env": [
                                {"name": "HF_MODEL_ID", "value": model_id},
                                {"name": "HF_REVISION", "value": "main"},
                                {"name": "DESTINATION", "value": destination},
                                {"name": "SANDBOX_DOWNLOAD_SECONDS", "value": str(seconds)},
                            ],
                        }
                    ],
                },
            },
        },
    }


def job_condition(batch: client.BatchV1Api, name: str) -> str | None:
    conds = batch.read_namespaced_job(name, "default").status.conditions or []
    return next((c.type for c in conds if c.type in ("Complete", "Failed") and c.status == "True"), None)


def test_model_download_job_writes_the_model_into_the_bucket_and_logs_progress(
    kube: KubeCluster, core: client.CoreV1Api, aws: Callable[[str], Any]
) -> None:
    node(kube, "cpu-a", instance_type="ml.m5.xlarge", gpus=0)
    bucket = f"models-{uuid.uuid4().hex[:8]}"
    s3 = aws("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    batch = client.BatchV1Api(core.api_client)
    batch.create_namespaced_job(
        "default", download_job("dl", "TinyLlama/TinyLlama-1.1B", f"s3://{bucket}/models/tinyllama/", 600)
    )
    assert wait_for(lambda: job_condition(batch, "dl")) == "Complete"

    listed = s3.list_objects_v2(Bucket=bucket, Prefix="models/tinyllama/")["Contents"]
    sizes = {o["Key"]: o["Size"] for o in listed}
    assert sorted(sizes) == [
        "models/tinyllama/config.json",
        "models/tinyllama/model.safetensors",
        "models/tinyllama/tokenizer.json",
    ]
    config = json.loads(s3.get_object(Bucket=bucket, Key="models/tinyllama/config.json")["Body"].read())
    assert config["_name_or_path"] == "TinyLlama/TinyLlama-1.1B"
    weights = s3.get_object(Bucket=bucket, Key="models/tinyllama/model.safetensors")["Body"].read()
    header_len = struct.unpack("<Q", weights[:8])[0]
    header = json.loads(weights[8 : 8 + header_len])
    assert header["weight"]["shape"] == [256, 128]
    assert len(weights) == 8 + header_len + header["weight"]["data_offsets"][1]

    pod = core.list_namespaced_pod("default", label_selector="job-name=dl").items[0]
    lines = core.read_namespaced_pod_log(pod.metadata.name, "default").splitlines()
    total = sum(sizes.values())
    assert lines[0].startswith("Downloading TinyLlama/TinyLlama-1.1B@main from https://huggingface.co")
    assert lines[-2].endswith(f"[3/3 files, {total}/{total} bytes]")
    assert lines[-1] == f"Download complete: 3 files, {total} bytes written to s3://{bucket}/models/tinyllama/"

    # same model, same bytes
    batch.create_namespaced_job(
        "default", download_job("dl-again", "TinyLlama/TinyLlama-1.1B", f"s3://{bucket}/again", 30)
    )
    assert wait_for(lambda: job_condition(batch, "dl-again")) == "Complete"
    assert s3.get_object(Bucket=bucket, Key="again/model.safetensors")["Body"].read() == weights


def test_model_download_of_a_missing_repository_fails_with_the_hub_error(
    sandbox: tuple[AwsSandboxServer, KubeApiServer], name: str, kube: KubeCluster, core: client.CoreV1Api
) -> None:
    node(kube, "cpu-a", instance_type="ml.m5.xlarge", gpus=0)
    sandbox[0].extension.inference.fail_download(name, "nobody/nothing")
    batch = client.BatchV1Api(core.api_client)
    batch.create_namespaced_job("default", download_job("missing", "nobody/nothing", "s3://any-bucket/x"))
    batch.create_namespaced_job("default", download_job("nobucket", "org/model", f"s3://no-{uuid.uuid4().hex}/x"))
    assert wait_for(lambda: job_condition(batch, "missing")) == "Failed"
    assert wait_for(lambda: job_condition(batch, "nobucket")) == "Failed"
    pod = core.list_namespaced_pod("default", label_selector="job-name=missing").items[0]
    assert pod.status.container_statuses[0].state.terminated.exit_code == 1
    last = core.read_namespaced_pod_log(pod.metadata.name, "default").splitlines()[-1]
    assert last.startswith("huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error.")
    assert "nobody/nothing" in last
    pod = core.list_namespaced_pod("default", label_selector="job-name=nobucket").items[0]
    assert "NoSuchBucket" in core.read_namespaced_pod_log(pod.metadata.name, "default").splitlines()[-1]


def engine_deployment(name: str, image: str, probe: dict[str, Any] | None, port: int = 8000) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "engine",
        "image": image,
        "args": ["--model", "/fsx/models/tiny", "--port", str(port)],
        "ports": [{"name": "http", "containerPort": port}],
        "env": [{"name": "SANDBOX_MODEL_LOAD_SECONDS", "value": "300"}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    if probe:
        container["readinessProbe"] = probe
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def readiness_history(core: client.CoreV1Api, app: str, until_ready: bool, seconds: int = 6) -> list[tuple[str, bool]]:
    """(phase, Ready) transitions of the pod of ``app`` seen through a watch."""
    seen: list[tuple[str, bool]] = []
    stream = watch.Watch().stream(
        core.list_namespaced_pod, "default", label_selector=f"app={app}", timeout_seconds=seconds
    )
    for event in stream:
        pod = event["object"]
        ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        entry = (str(pod.status.phase), ready)
        if not seen or seen[-1] != entry:
            seen.append(entry)
        if until_ready and ready:
            break
    return seen


def test_engine_pods_turn_ready_after_loading_only_on_their_health_route(
    kube: KubeCluster, core: client.CoreV1Api
) -> None:
    node(kube, "g5-a")
    node(kube, "g5-b")
    apps = client.AppsV1Api(core.api_client)
    apps.create_namespaced_deployment(
        "default",
        engine_deployment("vllm", VLLM, {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 5}),
    )
    apps.create_namespaced_deployment(
        "default",
        engine_deployment("sglang", "lmsysorg/sglang:v0.4.6", {"httpGet": {"path": "/healthz", "port": "http"}}, 30000),
    )
    history = readiness_history(core, "vllm", until_ready=True)
    assert ("Running", False) in history
    assert history[-1] == ("Running", True)
    assert history.index(("Running", False)) < history.index(("Running", True))
    pod = core.list_namespaced_pod("default", label_selector="app=vllm").items[0]
    log = core.read_namespaced_pod_log(pod.metadata.name, "default")
    assert log.splitlines()[-1] == "INFO Application startup complete."
    assert wait_for(lambda: apps.read_namespaced_deployment("vllm", "default").status.ready_replicas) == 1

    def unhealthy() -> list[Any]:
        return [e for e in pod_events(core, "app=sglang") if e.reason == "Unhealthy"]

    events = wait_for(unhealthy)
    assert events[0].type == "Warning"
    assert events[0].message == "Readiness probe failed: HTTP probe failed with statuscode: 404"
    sglang = core.list_namespaced_pod("default", label_selector="app=sglang").items[0]
    assert sglang.status.phase == "Running"
    assert all(c.status == "False" for c in sglang.status.conditions if c.type == "Ready")
