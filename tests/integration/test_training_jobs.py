"""Given a READY cluster in the sandbox, when a user runs training jobs through the HTTP API, then the job is applied
by an operation, the sandbox's training operator runs its pods to Running then Succeeded, GET shows them by rank,
the logs of rank 0 and of a named pod are readable, and each refusal names the field or the feature."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, eventually, refusal, terminal

TAG = "trainer"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311"
JOB = {
    "recipe": "pytorch",
    "name": "llama-sft-1",
    "instanceType": "ml.g6.4xlarge",
    "nodes": 2,
    "image": IMAGE,
    "script": "/s3/code/train.py",
    "args": ["--epochs", "1"],
    # the sandbox operator's run-time knob (simulated seconds): long enough to see Running between polls
    "env": {"SANDBOX_TRAINING_SECONDS": "1200"},
}


def finished(api: InstantStartClient, op: Any, timeout: float = 300) -> dict[str, Any]:
    ended = ("SUCCEEDED", "FAILED", "CANCELLED")
    return dict(eventually(lambda: api.get_operation(op["operationId"]), lambda o: o["status"] in ended, timeout))


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``trainer`` cluster, READY, with two ml.g6.4xlarge nodes (one GPU each) and no training operator."""
    api.create_cluster(TAG, "us-west-2c", [{**GROUP, "instanceCount": 2}])
    found = eventually(lambda: dict(api.get_cluster(TAG)), terminal, timeout=240)
    assert found["status"] == "READY", found["stages"]
    return dict(found)


@pytest.fixture(scope="module")
def operator(cluster: Any, api: InstantStartClient) -> dict[str, Any]:
    """The cluster after PATCH /features turned the training operator on."""
    op = finished(api, api.update_features(TAG, {"trainingOperator": {"enabled": True}}))
    assert op["status"] == "SUCCEEDED", op
    return cluster


def test_given_the_training_operator_off_then_409_names_the_feature_and_how_to_turn_it_on(
    cluster: Any, api: InstantStartClient
) -> None:
    refused = refusal(lambda: api.create_training_job(TAG, JOB))

    assert refused.status == 409 and refused.code == "FeatureNotEnabled"
    assert refused.details[0]["field"] == "trainingOperator"
    assert refused.details[0]["enableWith"]["body"] == {"trainingOperator": {"enabled": True}}
    assert api.list_training_jobs(TAG)["trainingJobs"] == []


def test_given_a_name_that_is_not_a_dns_label_then_422_names_name(operator: Any, api: InstantStartClient) -> None:
    refused = refusal(lambda: api.create_training_job(TAG, {**JOB, "name": "Llama_SFT"}))

    assert refused.status == 422
    assert refused.details[0]["field"] == "name" and "DNS-1123" in refused.details[0]["message"]


@pytest.mark.parametrize(
    ("change", "field", "requested", "available"),
    [({"nprocPerNode": 2}, "nprocPerNode", 2, 1), ({"nodes": 3}, "nodes", 3, 2)],
    ids=["gpus", "nodes"],
)
def test_given_more_gpus_or_nodes_than_the_cluster_has_then_422_gives_both_numbers(
    operator: Any, api: InstantStartClient, change: dict[str, int], field: str, requested: int, available: int
) -> None:
    refused = refusal(lambda: api.create_training_job(TAG, {**JOB, **change}))

    assert refused.status == 422
    detail = refused.details[0]
    assert (detail["field"], detail["requested"], detail["available"]) == (field, requested, available)
    assert str(requested) in refused.message and str(available) in refused.message
    assert api.list_training_jobs(TAG)["trainingJobs"] == []


def test_given_a_pytorch_job_then_it_runs_then_succeeds_and_the_logs_of_each_rank_are_readable(
    operator: Any, api: InstantStartClient
) -> None:
    accepted = api.create_training_job(TAG, JOB)

    assert (accepted["name"], accepted["namespace"], accepted["kind"]) == (
        "llama-sft-1", "default", "HyperPodPyTorchJob",
    )  # fmt: skip
    op = finished(api, accepted["operation"])
    assert op["status"] == "SUCCEEDED", op
    running = eventually(lambda: api.get_training_job(TAG, "llama-sft-1"), lambda j: j["status"] != "Pending")
    assert running["status"] == "Running", running
    assert [(p["rank"], p["phase"]) for p in running["pods"]] == [(0, "Running"), (1, "Running")]
    assert len({p["nodeName"] for p in running["pods"]}) == 2
    listed = api.list_training_jobs(TAG)["trainingJobs"]
    assert [(j["name"], j["recipe"], j["status"]) for j in listed] == [("llama-sft-1", "pytorch", "Running")]

    done = eventually(
        lambda: api.get_training_job(TAG, "llama-sft-1"), lambda j: j["status"] in ("Succeeded", "Failed")
    )
    assert done["status"] == "Succeeded" and done["restarts"] == 0, done

    rank0 = api.get_training_job_logs(TAG, "llama-sft-1")
    second = running["pods"][1]["name"]
    rank1 = api.get_training_job_logs(TAG, "llama-sft-1", pod=second, tail_lines=2)
    assert rank0["pod"] == running["pods"][0]["name"] and "[rank 0]" in rank0["text"]
    assert "[rank 1]" not in rank0["text"]
    assert rank1["pod"] == second and len(rank1["text"].splitlines()) == 2 and "[rank 1]" in rank1["text"]
    missing = refusal(lambda: api.get_training_job_logs(TAG, "llama-sft-1", pod="llama-sft-1-pod-9"))
    assert missing.status == 404 and missing.code == "PodNotFound"


def test_given_a_job_when_deleted_then_it_and_its_pods_are_gone(operator: Any, api: InstantStartClient) -> None:
    eventually(lambda: api.list_training_jobs(TAG)["trainingJobs"], bool)

    accepted = api.delete_training_job(TAG, "llama-sft-1")

    assert finished(api, accepted["operation"])["status"] == "SUCCEEDED"
    assert api.list_training_jobs(TAG)["trainingJobs"] == []
    gone = refusal(lambda: api.get_training_job(TAG, "llama-sft-1"))
    assert gone.status == 404 and gone.code == "TrainingJobNotFound"


def running_job(api: InstantStartClient, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` created, its operation SUCCEEDED, then read once every pod runs."""
    accepted = api.create_training_job(TAG, body)
    assert finished(api, accepted["operation"])["status"] == "SUCCEEDED"
    job = eventually(
        lambda: api.get_training_job(TAG, body["name"]),
        lambda j: j["status"] == "Running" and all(p["phase"] == "Running" for p in j["pods"]),
    )
    assert job["status"] == "Running", job
    return dict(job)


def ended(api: InstantStartClient, name: str) -> dict[str, Any]:
    """Job ``name`` polled until Succeeded or Failed."""
    return dict(eventually(lambda: api.get_training_job(TAG, name), lambda j: j["status"] in ("Succeeded", "Failed")))


def test_given_a_pod_crash_within_the_budget_then_the_pod_restarts_and_the_job_still_succeeds(
    operator: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    job = running_job(api, {**JOB, "name": "restart-1"})

    sandbox.aws.extension.training.fail_pod(f"eks-cluster-{TAG}", "default", job["pods"][1]["name"], 1)

    done = eventually(
        lambda: api.get_training_job(TAG, "restart-1"), lambda j: j["status"] in ("Succeeded", "Failed"), timeout=180
    )
    assert done["status"] == "Succeeded", done
    assert done["restarts"] == 1
    assert [(c["type"], c["reason"]) for c in done["restartHistory"]] == [("Restarting", "PodLevelRestart")]
    # the crashed rank's container restarted in place: same pod, same node, its own count
    assert [(p["name"], p["nodeName"], p["restarts"]) for p in done["pods"]] == [
        (p["name"], p["nodeName"], 1 if p["rank"] == 1 else 0) for p in job["pods"]
    ]
    assert api.list_training_jobs(TAG)["trainingJobs"][0]["restarts"] == 1
    assert finished(api, api.delete_training_job(TAG, "restart-1")["operation"])["status"] == "SUCCEEDED"


def test_given_a_node_turning_unhealthy_during_a_job_then_its_pod_moves_to_a_healthy_node_and_the_job_succeeds(
    operator: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    job = running_job(api, {**JOB, "name": "node-fault-1", "nodes": 1})  # the cluster's other node is the spare
    sick = job["pods"][0]["nodeName"]
    hyperpod = sandbox.aws.extension.hyperpod

    hyperpod.report_node_health(
        f"hp-cluster-{TAG}",
        sick.removeprefix("hyperpod-"),
        "UnschedulablePendingReplacement",
        "GPU health check failed",
    )
    try:
        moved = eventually(
            lambda: api.get_training_job(TAG, "node-fault-1"),
            lambda j: j["restarts"] == 1 and [p["phase"] for p in j["pods"]] == ["Running"],
        )
        done = ended(api, "node-fault-1")
    finally:
        hyperpod.report_node_health(f"hp-cluster-{TAG}", sick.removeprefix("hyperpod-"), "Schedulable", "healthy")

    [pod] = moved["pods"]
    assert pod["nodeName"] not in (None, sick) and pod["rank"] == 0, moved
    assert pod["restarts"] == 0  # a new pod on another node: its own container restarts start at 0
    [restart] = moved["restartHistory"]
    assert (restart["type"], restart["reason"]) == ("Restarting", "PodLevelRestart")
    assert f"node {sick}" in restart["message"] and "UnschedulablePendingReplacement" in restart["message"]
    assert done["status"] == "Succeeded" and done["restarts"] == 1, done
    assert [(p["name"], p["nodeName"]) for p in done["pods"]] == [(pod["name"], pod["nodeName"])]
    rank0 = api.get_training_job_logs(TAG, "node-fault-1")
    assert "attempt 2" in rank0["text"] and "[rank 0] training complete" in rank0["text"]


def test_given_no_restart_budget_when_a_pod_crashes_then_the_job_fails_with_the_reason(
    operator: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    body = {**JOB, "name": "no-budget", "runPolicy": {"jobMaxRetryCount": 0}}
    job = running_job(api, body)

    sandbox.aws.extension.training.fail_pod(f"eks-cluster-{TAG}", "default", job["pods"][0]["name"], 137)

    failed = eventually(lambda: api.get_training_job(TAG, "no-budget"), lambda j: j["status"] == "Failed")
    assert failed["status"] == "Failed", failed
    assert failed["reason"] and "restart budget exhausted" in failed["reason"]
    assert failed["restarts"] == 0


# simulated seconds (10 s at the tests' time scale): long enough to see Running between polls under load
SHORT = {"SANDBOX_TRAINING_SECONDS": "1200"}
COMMON = {"instanceType": "ml.g6.4xlarge", "nodes": 1, "image": IMAGE, "env": SHORT}
TORCH_RECIPES = {
    "script": (
        {"recipe": "script", "command": ["python3", "/s3/code/train.py"], "args": ["--epochs", "1"]},
        ["python3", "/s3/code/train.py", "--epochs", "1"],
    ),
    "llamafactory": (
        {
            "recipe": "llamafactory",
            "model": "Qwen/Qwen2.5-0.5B-Instruct",
            "dataset": "alpaca",
            "outputPath": "/s3/outputs/qwen-lf",
            "config": {"stage": "sft", "finetuning_type": "lora"},
        },
        [
            "-m",
            "llamafactory.launcher",
            "/etc/instantstart/train.yaml",
            "model_name_or_path=Qwen/Qwen2.5-0.5B-Instruct",
            "dataset=alpaca",
        ],
    ),
    "msswift": (
        {
            "recipe": "msswift",
            "model": "Qwen/Qwen2.5-0.5B-Instruct",
            "dataset": "alpaca",
            "outputPath": "/s3/outputs/qwen-swift",
            "configPath": "/s3/configs/swift.yaml",
        },
        ["-m", "swift.cli.sft", "--config", "/s3/configs/swift.yaml", "--model", "Qwen/Qwen2.5-0.5B-Instruct"],
    ),
}


@pytest.mark.parametrize("recipe", list(TORCH_RECIPES))
def test_given_each_torch_recipe_then_its_job_runs_then_succeeds_and_rank_0_logs_are_readable(
    operator: Any, api: InstantStartClient, recipe: str
) -> None:
    body, argv = TORCH_RECIPES[recipe]
    name = f"{recipe}-1"

    job = running_job(api, {**COMMON, **body, "name": name})

    assert (job["kind"], job["recipe"]) == ("HyperPodPyTorchJob", recipe)
    command = job["spec"]["command"]
    assert any(command[i : i + len(argv)] == argv for i in range(len(command))), command
    assert [(p["rank"], p["phase"]) for p in job["pods"]] == [(0, "Running")]
    done = ended(api, name)
    assert done["status"] == "Succeeded" and done["restarts"] == 0, done
    logs = api.get_training_job_logs(TAG, name)
    assert logs["pod"] == job["pods"][0]["name"]
    assert f"starting job {name}" in logs["text"] and "[rank 0] training complete" in logs["text"]


@pytest.fixture(scope="module")
def kuberay(operator: Any, api: InstantStartClient) -> dict[str, Any]:
    """The cluster after PATCH /features turned kubeRay on (the verl recipe's RayJob needs its operator)."""
    op = finished(api, api.update_features(TAG, {"kubeRay": {"enabled": True}}))
    assert op["status"] == "SUCCEEDED", op
    return dict(operator)


def test_given_kuberay_on_then_a_verl_rayjob_runs_its_head_and_worker_then_succeeds_and_head_logs_are_readable(
    kuberay: Any, api: InstantStartClient
) -> None:
    body = {
        **COMMON,
        "recipe": "verl",
        "name": "verl-grpo-1",
        "nodes": 2,
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "trainFiles": "/s3/data/gsm8k/train.parquet",
        "valFiles": "/s3/data/gsm8k/test.parquet",
        "outputPath": "/s3/outputs/verl-grpo",
        "shutdownAfterJobFinishes": False,  # keep the Ray cluster: its head's log stays readable
    }

    job = running_job(api, body)

    assert (job["kind"], job["recipe"]) == ("RayJob", "verl")
    assert "verl.trainer.main_ppo" in job["spec"]["entrypoint"]
    assert [(p["rank"], p["phase"]) for p in job["pods"]] == [(0, "Running"), (1, "Running")]
    assert job["pods"][0]["name"].endswith("-head") and "-worker-" in job["pods"][1]["name"]
    done = ended(api, "verl-grpo-1")
    assert done["status"] == "Succeeded", done
    logs = api.get_training_job_logs(TAG, "verl-grpo-1")
    assert logs["pod"] == job["pods"][0]["name"]
    assert "verl.trainer.main_ppo" in logs["text"] and "job verl-grpo-1 succeeded" in logs["text"]


def test_given_a_script_job_of_about_1_mb_then_422_names_command_and_its_byte_bound_and_nothing_is_written(
    operator: Any, api: InstantStartClient
) -> None:
    # within each argument's own bounds (128 arguments of 4096 characters, for command and for args): 1 MiB in all,
    # more than DynamoDB's 400 KB item that the operation record carrying it is
    job = {
        "recipe": "script",
        "name": "huge-argv",
        "instanceType": "ml.g6.4xlarge",
        "image": IMAGE,
        "command": ["python"] + ["c" * 4096] * 127,
        "args": ["a" * 4096] * 128,
    }
    before = api.list_cluster_operations(TAG)["operations"]

    refused = refusal(lambda: api.create_training_job(TAG, job))

    assert refused.status == 422, refused
    fields = {d["field"]: d["message"] for d in refused.details}
    assert set(fields) == {"command", "args"}
    assert "at most 65536 bytes" in fields["command"] and str(6 + 127 * 4096) in fields["command"]
    assert "at most 65536 bytes" in fields["args"] and str(128 * 4096) in fields["args"]
    assert api.list_cluster_operations(TAG)["operations"] == before

    # at the bound of each list the job is accepted: the bounds leave the whole request room in its record
    fitting = {
        **job,
        "command": ["c" * 4096] * 16,
        "args": ["a" * 4096] * 16,
        "env": {f"E{i}": "v" * 4000 for i in range(16)},
    }
    accepted = api.create_training_job(TAG, fitting)
    assert accepted["name"] == "huge-argv"
    assert finished(api, accepted["operation"])["status"] == "SUCCEEDED"
    assert finished(api, api.delete_training_job(TAG, "huge-argv")["operation"])["status"] == "SUCCEEDED"


def test_given_workloads_when_their_features_are_turned_off_then_409_names_them_unless_remove_dependents(
    kuberay: Any, api: InstantStartClient
) -> None:
    job = {**JOB, "name": "depends-on-operator", "nodes": 1}
    assert finished(api, api.create_training_job(TAG, job)["operation"])["status"] == "SUCCEEDED"
    rayjobs = [j["name"] for j in api.list_training_jobs(TAG)["trainingJobs"] if j["kind"] == "RayJob"]
    assert rayjobs, "the verl RayJob (kept after it finished) is a dependent of kubeRay"

    for feature, kind, name in (
        ("kubeRay", "RayJob", rayjobs[0]),
        ("trainingOperator", "HyperPodPyTorchJob", "depends-on-operator"),
    ):
        refused = refusal(lambda feature=feature: api.update_features(TAG, {feature: {"enabled": False}}))

        assert refused.status == 409 and refused.code == "FeatureHasDependents", refused.body
        assert refused.details[0]["field"] == f"{feature}.removeDependents"
        assert f"{kind} default/{name}" in refused.details[0]["dependents"], refused.details
        assert f"{kind} default/{name}" in refused.message and "removeDependents" in refused.message
        assert api.get_features(TAG)["features"][feature]["enabled"] is True

        off = finished(api, api.update_features(TAG, {feature: {"enabled": False, "removeDependents": True}}))

        assert off["status"] == "SUCCEEDED", off
        assert off["features"][feature]["result"] == "changed"
        assert api.get_features(TAG)["features"][feature]["enabled"] is False
        assert api.get_features(TAG)["features"][feature]["desired"] == {"enabled": False}
        left = [j["name"] for j in api.list_training_jobs(TAG)["trainingJobs"] if j["kind"] == kind]
        assert left == []
    assert api.list_training_jobs(TAG)["trainingJobs"] == []
