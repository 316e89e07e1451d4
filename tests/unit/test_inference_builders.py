"""The objects a model download and a self-managed deployment become, and the rules refusing what cannot run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from instantstart.errors import Conflict, ValidationFailed
from instantstart.inference import builders, rules
from instantstart.models.inference import (
    CreateInferenceDeploymentRequest,
    CreateRouterRequest,
    DownloadModelRequest,
)

BUCKET = "instantstart-demo-123456789012-us-west-2"


def deployment(**overrides: Any) -> CreateInferenceDeploymentRequest:
    body = {
        "name": "qwen-vllm",
        "engine": "vllm",
        "modelPath": "/s3/models/Qwen/Qwen2.5-0.5B-Instruct",
        "servedModelName": "qwen",
        "instanceType": "ml.g5.12xlarge",
        "gpus": 4,
        **overrides,
    }
    return CreateInferenceDeploymentRequest.model_validate(body)


def container(built: builders.BuiltDeployment) -> dict[str, Any]:
    return dict(built.deployment["spec"]["template"]["spec"]["containers"][0])


def test_s3_download_job_carries_the_label_and_environment_the_storage_convention_names() -> None:
    request = DownloadModelRequest.model_validate({"source": "huggingface", "modelId": "Qwen/Qwen2.5-0.5B-Instruct"})

    job = builders.download_job(request, BUCKET, "op-1")

    template = job["spec"]["template"]
    assert template["metadata"]["labels"][builders.LABEL_MODEL_DOWNLOAD] == "Qwen-Qwen2.5-0.5B-Instruct"
    for c in template["spec"]["initContainers"] + template["spec"]["containers"]:
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["HF_MODEL_ID"] == "Qwen/Qwen2.5-0.5B-Instruct"
        assert env["HF_REVISION"] == "main"
        assert env["DESTINATION"] == f"s3://{BUCKET}/models/Qwen/Qwen2.5-0.5B-Instruct/"
    assert template["spec"]["containers"][0]["command"][-1] == "/s3/models/Qwen/Qwen2.5-0.5B-Instruct/"
    claims = [
        v["persistentVolumeClaim"]["claimName"] for v in template["spec"]["volumes"] if "persistentVolumeClaim" in v
    ]
    assert claims == ["s3-claim"] and job["metadata"]["namespace"] == "default"


def test_fsx_download_writes_in_place_and_a_token_is_only_a_secret_reference() -> None:
    request = DownloadModelRequest.model_validate(
        {
            "source": "huggingface",
            "modelId": "meta-llama/Llama-3.1-8B",
            "revision": "v1",
            "destination": "fsx",
            "hfTokenSecret": {"name": "hf-token", "key": "token"},
        }
    )

    job = builders.download_job(request, BUCKET, "op-1")

    spec = job["spec"]["template"]["spec"]
    assert "initContainers" not in spec
    (download,) = spec["containers"]
    assert download["args"][download["args"].index("--local-dir") + 1] == "/fsx/models/meta-llama/Llama-3.1-8B"
    env = {e["name"]: e for e in download["env"]}
    assert env["DESTINATION"]["value"] == "/fsx/models/meta-llama/Llama-3.1-8B"
    assert env["HF_TOKEN"] == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": False}},
    }
    assert "value" not in env["HF_TOKEN"]


def test_a_token_value_is_not_a_field_of_any_request() -> None:
    with pytest.raises(ValidationError):
        DownloadModelRequest.model_validate({"source": "huggingface", "modelId": "a/b", "hfToken": "hf_secret"})
    with pytest.raises(ValidationError):
        deployment(hfToken="hf_secret")


def test_each_download_operation_gets_its_own_job_name() -> None:
    first = builders.download_job_name("a/b", "main", "s3", "op-1")
    assert first != builders.download_job_name("a/b", "main", "s3", "op-2")
    assert first.startswith("model-download-") and len(first) <= 63


def test_vllm_argv_sets_tensor_parallel_to_the_gpus_requested_with_pinned_image_and_health_probe() -> None:
    built = builders.build_deployment(deployment(maxModelLen=8192), memory_mib=196608, operation_id="op-1")

    c = container(built)
    assert c["command"] == [
        "python3", "-m", "vllm.entrypoints.openai.api_server",
        "--model", "/s3/models/Qwen/Qwen2.5-0.5B-Instruct",
        "--served-model-name", "qwen",
        "--tensor-parallel-size", "4",
        "--max-model-len", "8192",
        "--host", "0.0.0.0", "--port", "8000",
    ]  # fmt: skip
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert c["image"] == "vllm/vllm-openai:v0.8.5" and not c["image"].endswith(":latest")
    terms = built.deployment["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    term = terms["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term["values"] == ["ml.g5.12xlarge"]
    assert built.service["spec"]["type"] == "ClusterIP" and built.service["metadata"]["annotations"] == {}


def test_sglang_uses_its_own_flags_port_and_probe() -> None:
    built = builders.build_deployment(
        deployment(engine="sglang", gpus=2, maxModelLen=4096, modelPath="/fsx/models/q"),
        memory_mib=1024,
        operation_id="op-1",
    )

    c = container(built)
    assert c["command"][:3] == ["python3", "-m", "sglang.launch_server"]
    assert c["command"][c["command"].index("--tp-size") + 1] == "2"
    assert c["command"][c["command"].index("--context-length") + 1] == "4096"
    assert c["readinessProbe"]["httpGet"]["port"] == 30000
    assert built.service["spec"]["ports"][0]["port"] == 30000
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert "/fsx" in mounts and "/s3" not in mounts


def test_load_balancer_is_internal_unless_internet_facing_is_asked() -> None:
    internal = builders.build_deployment(
        deployment(service={"type": "LoadBalancer"}), memory_mib=1024, operation_id="op"
    ).service
    public = builders.build_deployment(
        deployment(service={"type": "LoadBalancer", "exposure": "internet-facing"}), memory_mib=1024, operation_id="op"
    ).service

    assert internal["metadata"]["annotations"][builders.NLB_SCHEME] == "internal"
    assert internal["metadata"]["annotations"][builders.NLB_TYPE] == "nlb"
    assert public["metadata"]["annotations"][builders.NLB_SCHEME] == "internet-facing"
    with pytest.raises(ValidationError, match="internet-facing needs type LoadBalancer"):
        deployment(service={"exposure": "internet-facing"})


def test_an_unpinned_engine_image_is_refused() -> None:
    with pytest.raises(ValidationError, match="latest"):
        deployment(image="vllm/vllm-openai:latest")


def pod(name: str, bound: str | None = None) -> dict[str, Any]:
    annotations = {builders.ANNOTATION_BOUND_MODEL: bound} if bound else {}
    return {"metadata": {"name": name, "annotations": annotations}}


def test_idle_pods_cost_less_to_delete_than_bound_ones() -> None:
    costs = builders.deletion_costs([pod("a", "qwen"), pod("b"), pod("c")])

    assert costs == {"a": "1000", "b": "-1000", "c": "-1000"}


def test_scale_in_below_the_bound_pods_is_refused_naming_the_minimum() -> None:
    pods = [pod("a", "qwen"), pod("b", "llama"), pod("c")]
    rules.check_scale_in("d", 2, pods)  # c (idle) goes

    with pytest.raises(Conflict) as refused:
        rules.check_scale_in("d", 1, pods)

    assert refused.value.code == "BoundPodsWouldBeRemoved"
    assert refused.value.details[0]["minimum"] == 2 and refused.value.details[0]["boundPods"] == ["a", "b"]


def test_an_instance_type_outside_the_groups_is_refused_listing_them() -> None:
    described = {"InstanceGroups": [{"InstanceType": "ml.g6.4xlarge"}, {"InstanceType": "ml.g5.8xlarge"}]}

    with pytest.raises(ValidationFailed) as refused:
        rules.check_instance_type("ml.p5.48xlarge", described)

    assert refused.value.details[0]["field"] == "instanceType"
    assert refused.value.details[0]["allowedValues"] == ["ml.g5.8xlarge", "ml.g6.4xlarge"]


def test_more_gpus_than_the_type_has_is_refused() -> None:
    rules.check_gpus(1, "ml.g6.4xlarge", 1)
    with pytest.raises(ValidationFailed) as refused:
        rules.check_gpus(2, "ml.g6.4xlarge", 1)
    assert refused.value.details[0] == {
        "field": "gpus",
        "message": "at most 1 on ml.g6.4xlarge",
        "requested": 2,
        "available": 1,
    }


def test_router_discovers_the_workers_by_label_and_keda_scales_the_worker_deployment() -> None:
    request = CreateRouterRequest.model_validate(
        {"autoscaling": {"maxReplicas": 4, "prometheusServerAddress": "http://prometheus.monitoring:9090"}}
    )

    objects = builders.build_router("qwen-sgl", 30000, request, "op-1")

    kinds = [o["kind"] for o in objects]
    assert kinds == ["ServiceAccount", "Role", "RoleBinding", "Deployment", "Service", "ScaledObject"]
    argv = objects[3]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert argv[argv.index("--policy") + 1] == "cache_aware"
    assert f"{builders.LABEL_DEPLOYMENT}=qwen-sgl" in argv
    scaled = objects[-1]
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["spec"]["scaleTargetRef"]["name"] == "qwen-sgl"
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (1, 4)
    with pytest.raises(Conflict) as refused:
        rules.check_router_engine("qwen-vllm", "vllm")
    assert refused.value.details[0]["allowedValues"] == ["sglang"]
