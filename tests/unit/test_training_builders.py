"""Training job builders and rules: schema-valid objects, argv without shell lines, pinned images, GPUs from
EC2 DescribeInstanceTypes, and each refusal with its numbers."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import jsonschema
import kubernetes_validate
import pytest
from moto import mock_aws
from pydantic import TypeAdapter, ValidationError

from instantstart.errors import Conflict, ValidationFailed
from instantstart.features.kuberay import operator_objects
from instantstart.models.mlflow import MlflowConnection, MlflowKind
from instantstart.models.training_jobs import CreateTrainingJobRequest
from instantstart.training import builders, rules
from instantstart.training import service as training_service
from instantstart_sandbox.aws.addons import _PYTORCHJOB_SPEC
from instantstart_sandbox.kube.schema import to_json_schema

REQUEST: TypeAdapter[Any] = TypeAdapter(CreateTrainingJobRequest)
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311"
HOSTILE = "x; rm -rf / $(curl evil) `id`"


@pytest.fixture(scope="module")
def instance_facts() -> Iterator[Callable[[str], builders.InstanceFacts]]:
    """``instance_facts("ml.p4d.24xlarge")``: the type's facts from moto's EC2 ``DescribeInstanceTypes`` (static data),
    one moto EC2 for the whole module (starting one, with its AMIs, cost about half a second per test)."""
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        patch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
        ec2 = boto3.client("ec2", "us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
        yield lambda instance_type: rules.instance_facts(ec2, instance_type)


@pytest.fixture(scope="module")
def p4d(instance_facts: Callable[[str], builders.InstanceFacts]) -> builders.InstanceFacts:
    return instance_facts("ml.p4d.24xlarge")


def ctx(facts: builders.InstanceFacts, **kw: Any) -> builders.BuildContext:
    return builders.BuildContext(facts=facts, claims=frozenset({"s3-claim"}), **kw)


def req(recipe: str, **kw: Any) -> Any:
    body: dict[str, Any] = {"recipe": recipe, "name": "job-1", "instanceType": "ml.p4d.24xlarge", "image": IMAGE}
    extra: dict[str, dict[str, Any]] = {
        "pytorch": {"script": "/s3/code/train.py", "args": ["--epochs", HOSTILE]},
        "script": {"command": ["python3", "/s3/code/train.py", HOSTILE]},
        "llamafactory": {"model": "Qwen/Qwen2.5-0.5B", "dataset": "alpaca", "outputPath": "/s3/out"},
        "msswift": {"model": "Qwen/Qwen2.5-0.5B", "dataset": "alpaca", "outputPath": "/s3/out"},
        "verl": {
            "model": "Qwen/Qwen2.5-0.5B",
            "trainFiles": "/s3/d/train.parquet",
            "valFiles": "/s3/d/val.parquet",
            "outputPath": "/s3/out",
            "overrides": {"data.note": HOSTILE},
        },
    }
    return REQUEST.validate_python({**body, **extra[recipe], **kw})


def _validate_pod_template(template: dict[str, Any]) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", **template.get("metadata", {})},
        "spec": template["spec"],
    }
    kubernetes_validate.validate(pod, "1.32", strict=True)


def _crd_schema(kind: str) -> dict[str, Any]:
    for crd in operator_objects():
        if crd["kind"] == "CustomResourceDefinition" and crd["spec"]["names"]["kind"] == kind:
            return to_json_schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    raise AssertionError(kind)


@pytest.mark.parametrize("recipe", ["pytorch", "script", "llamafactory", "msswift"])
def test_pytorchjob_recipes_are_schema_valid_with_gpus_efa_and_shm_from_ec2(
    recipe: str, p4d: builders.InstanceFacts
) -> None:
    built = builders.build(req(recipe, nodes=2), ctx(p4d))
    job = built.job
    assert (job["apiVersion"], job["kind"]) == ("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob")
    jsonschema.validate(job["spec"], to_json_schema(_PYTORCHJOB_SPEC))
    spec = job["spec"]["replicaSpecs"][0]
    assert spec["replicas"] == 2 and job["spec"]["nprocPerNode"] == "8"
    template = spec["template"]
    _validate_pod_template(template)
    container = template["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"}
    shm = next(v for v in template["spec"]["volumes"] if v["name"] == "shm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": f"{1179648 // 2}Mi"}
    s3 = next(v for v in template["spec"]["volumes"] if v["name"] == "s3")
    assert s3["persistentVolumeClaim"]["claimName"] == "s3-claim"
    assert {"name": "s3", "mountPath": "/s3"} in container["volumeMounts"]
    terms = template["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["ml.p4d.24xlarge"]
    run = job["spec"]["runPolicy"]
    assert run["jobMaxRetryCount"] == 3 and run["restartPolicy"]["numRestartBeforeFullJobRestart"] == 3


def test_user_strings_stay_single_argv_elements_never_a_shell_line(p4d: builders.InstanceFacts) -> None:
    for recipe in ("pytorch", "script"):
        command = builders.build(req(recipe), ctx(p4d)).job["spec"]["replicaSpecs"][0]["template"]["spec"][
            "containers"
        ][0]["command"]
        assert HOSTILE in command  # one element, passed to exec as is
        assert command[0] not in ("sh", "bash", "/bin/sh", "/bin/bash")
        assert "-c" not in command
    ray = builders.build(req("verl"), ctx(p4d)).job
    import shlex

    argv = shlex.split(ray["spec"]["entrypoint"])
    assert f"data.note={HOSTILE}" in argv  # quoted: the shell sees one word


def test_llamafactory_inline_config_is_a_configmap_mounted_and_named_in_argv(p4d: builders.InstanceFacts) -> None:
    built = builders.build(req("llamafactory", config={"stage": "sft", "lora_rank": 8}), ctx(p4d))
    assert built.extra[0]["kind"] == "ConfigMap"
    kubernetes_validate.validate(built.extra[0], "1.32", strict=True)
    command = built.job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("llamafactory.launcher") + 1] == "/etc/instantstart/train.yaml"
    assert "model_name_or_path=Qwen/Qwen2.5-0.5B" in command and "output_dir=/s3/out" in command


def test_verl_is_a_schema_valid_rayjob_sized_from_nodes(p4d: builders.InstanceFacts) -> None:
    job = builders.build(req("verl", nodes=3), ctx(p4d)).job
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    jsonschema.validate(job, _crd_schema("RayJob"))
    cluster = job["spec"]["rayClusterSpec"]
    assert cluster["workerGroupSpecs"][0]["replicas"] == 2
    assert job["spec"]["shutdownAfterJobFinishes"] is True and job["spec"]["ttlSecondsAfterFinished"] == 3600
    _validate_pod_template(cluster["headGroupSpec"]["template"])
    assert "trainer.n_gpus_per_node=8" in job["spec"]["entrypoint"]


def test_kueue_labels_only_with_task_governance(p4d: builders.InstanceFacts) -> None:
    r = req("pytorch", team="research", priorityClass="high")
    on = builders.build(r, ctx(p4d, kueue=True)).job
    assert on["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-research-localqueue"
    assert on["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "high"
    assert on["metadata"]["namespace"] == "hyperpod-ns-research"
    off = builders.build(r, ctx(p4d)).job
    assert "kueue.x-k8s.io/queue-name" not in off["metadata"]["labels"]


def test_gpus_per_pod_never_from_tensor_parallel_flags(p4d: builders.InstanceFacts) -> None:
    job = builders.build(req("pytorch", args=["--tensor-parallel-size", "2", "--tp", "2"]), ctx(p4d)).job
    assert job["spec"]["nprocPerNode"] == "8"
    two = builders.build(req("pytorch", nprocPerNode=2), ctx(p4d)).job
    limits = two["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "2"}  # EFA devices only with the whole node


def test_run_policy_overrides_and_log_monitoring(p4d: builders.InstanceFacts) -> None:
    r = req(
        "pytorch",
        runPolicy={
            "jobMaxRetryCount": 0,
            "cleanPodPolicy": "OnlyComplete",
            "restartPolicy": {"maxFullJobRestarts": 0},
            "logMonitoring": [{"name": "JobStart", "logPattern": ".*step.*", "expectedStartCutOffInSeconds": 120}],
        },
    )
    run = builders.build(r, ctx(p4d)).job["spec"]["runPolicy"]
    assert run["jobMaxRetryCount"] == 0 and run["cleanPodPolicy"] == "OnlyComplete"
    assert run["restartPolicy"]["maxFullJobRestarts"] == 0
    assert run["logMonitoringConfiguration"] == [
        {"name": "JobStart", "logPattern": ".*step.*", "expectedStartCutOffInSeconds": 120}
    ]


@pytest.mark.parametrize("image", ["pytorch/pytorch", "pytorch/pytorch:latest", "localhost:5000/train"])
def test_unpinned_images_are_refused(image: str) -> None:
    with pytest.raises(ValidationError, match="image"):
        req("pytorch", image=image)


@pytest.mark.parametrize("name", ["Job_1", "-job", "job.", "a" * 53])
def test_job_name_must_be_dns_1123(name: str) -> None:
    with pytest.raises(ValidationError, match="name"):
        req("pytorch", name=name)


def test_more_gpus_per_pod_than_the_type_has_is_422_with_numbers(p4d: builders.InstanceFacts) -> None:
    with pytest.raises(ValidationFailed) as exc:
        rules.check_gpus_fit(16, p4d)
    assert exc.value.details[0]["field"] == "nprocPerNode"
    assert (exc.value.details[0]["requested"], exc.value.details[0]["available"]) == (16, 8)


def test_more_nodes_than_the_groups_hold_is_422_with_numbers() -> None:
    described = {
        "InstanceGroups": [
            {"InstanceType": "ml.p4d.24xlarge", "TargetCount": 2, "CurrentCount": 2},
            {"InstanceType": "ml.p4d.24xlarge", "TargetCount": 1, "CurrentCount": 0},
            {"InstanceType": "ml.g5.8xlarge", "TargetCount": 8, "CurrentCount": 8},
        ]
    }
    rules.check_nodes_fit(3, "ml.p4d.24xlarge", described)
    with pytest.raises(ValidationFailed) as exc:
        rules.check_nodes_fit(4, "ml.p4d.24xlarge", described)
    assert (exc.value.details[0]["field"], exc.value.details[0]["requested"], exc.value.details[0]["available"]) == (
        "nodes",
        4,
        3,
    )
    with pytest.raises(ValidationFailed) as none:
        rules.check_nodes_fit(1, "ml.p5.48xlarge", described)
    assert none.value.details[0]["field"] == "instanceType"


def test_unknown_instance_type_is_422_naming_instance_type(
    instance_facts: Callable[[str], builders.InstanceFacts],
) -> None:
    with pytest.raises(ValidationFailed) as exc:
        instance_facts("ml.zz9.huge")
    assert exc.value.details[0]["field"] == "instanceType"


@pytest.mark.parametrize("status", [None, "CREATING", "DEGRADED"])
def test_training_operator_off_is_409_naming_the_feature_and_the_patch_body(status: str | None) -> None:
    from botocore.stub import Stubber

    eks = boto3.client("eks", "us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(eks) as stub:
        if status is None:
            stub.add_client_error("describe_addon", "ResourceNotFoundException", "No addon")
        else:
            stub.add_response(
                "describe_addon",
                {"addon": {"addonName": "amazon-sagemaker-hyperpod-training-operator", "status": status}},
            )
        with pytest.raises(Conflict) as exc:
            rules.require_training_operator(eks, "demo", "eks-cluster-demo")
    assert exc.value.code == "FeatureNotEnabled"
    assert exc.value.details[0]["field"] == "trainingOperator"
    assert exc.value.details[0]["status"] == (status or "NOT_INSTALLED")
    assert exc.value.details[0]["enableWith"]["body"] == {"trainingOperator": {"enabled": True}}
    assert "PATCH /clusters/demo/features" in exc.value.message


def test_a_cpu_type_gets_no_gpu_resource(instance_facts: Callable[[str], builders.InstanceFacts]) -> None:
    facts = instance_facts("ml.m5.xlarge")
    assert facts.gpus == 0
    job = builders.build(req("pytorch", instanceType="ml.m5.xlarge"), ctx(facts)).job
    container = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert "resources" not in container or not container["resources"]
    assert copy.deepcopy(job["spec"]["nprocPerNode"]) == "1"


def _connection(namespace: str = "default") -> MlflowConnection:
    return MlflowConnection(
        kind=MlflowKind.TRACKING_SERVER,
        arn="arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/instantstart-demo",
        name="instantstart-demo",
        created=True,
        namespace=namespace,
        service_account_name="instantstart-mlflow",
        pod_role_arn="arn:aws:iam::123456789012:role/instantstart/instantstart-demo-mlflow",
    )


def _pod_specs(job: dict[str, Any]) -> list[dict[str, Any]]:
    if job["kind"] == "RayJob":
        cluster = job["spec"]["rayClusterSpec"]
        return [cluster["headGroupSpec"]["template"]["spec"], cluster["workerGroupSpecs"][0]["template"]["spec"]]
    return [job["spec"]["replicaSpecs"][0]["template"]["spec"]]


@pytest.mark.parametrize("recipe", ["pytorch", "script", "llamafactory", "msswift", "verl"])
def test_given_mlflow_connected_then_the_pods_log_to_it_as_the_connections_service_account(
    recipe: str, p4d: builders.InstanceFacts
) -> None:
    request = req(recipe, nodes=2, env={"MLFLOW_EXPERIMENT_NAME": "mine", "HF_HOME": "/s3/hf"})
    env, account = training_service.mlflow_settings(_connection(), "demo", request)
    job = builders.build(request, ctx(p4d, mlflow_env=env, service_account=account)).job
    for spec in _pod_specs(job):
        _validate_pod_template({"spec": spec})
        assert spec["serviceAccountName"] == "instantstart-mlflow"
        got = {e["name"]: e["value"] for e in spec["containers"][0]["env"]}
        assert got == {
            "MLFLOW_TRACKING_URI": _connection().arn,
            "MLFLOW_TRACKING_SERVER_ARN": _connection().arn,
            "MLFLOW_EXPERIMENT_NAME": "mine",  # the request's own env wins
            "INSTANTSTART_JOB_NAME": "job-1",
            "HF_HOME": "/s3/hf",
        }


@pytest.mark.parametrize("conn", [None, _connection("hyperpod-ns-research")], ids=["not-connected", "other-ns"])
def test_given_no_connection_for_the_jobs_namespace_then_the_pods_get_no_mlflow_env_nor_service_account(
    conn: MlflowConnection | None, p4d: builders.InstanceFacts
) -> None:
    request = req("pytorch")
    env, account = training_service.mlflow_settings(conn, "demo", request)
    assert (env, account) == ({}, None)
    spec = _pod_specs(builders.build(request, ctx(p4d, mlflow_env=env, service_account=account)).job)[0]
    assert "serviceAccountName" not in spec
    assert not any(e["name"].startswith("MLFLOW_") for e in spec["containers"][0].get("env") or [])
