"""The ``instantstart jobs`` commands through typer's CliRunner, against the real API function in process (moto
behind it).

The in-process API has no Kubernetes: :class:`FakeKube` stands in for the cluster's Kubernetes API at the
``instantstart.kube.client`` boundary (``connect``, ``list_objects``, the dynamic client's ``get``) and for
``CoreV1Api.read_namespaced_pod_log``, holding HyperPodPyTorchJobs and pods shaped as the operator writes them.
EKS in moto has no add-ons, so the training operator is off unless a test turns :func:`operator_on` on.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from inprocess_api import InProcessApi
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import NotFoundError
from test_client_cli_instance_groups import hyperpod_cluster
from typer.testing import CliRunner, Result

import instantstart_client.cli
from instantstart.kube import client as kube
from instantstart.training import rules
from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app

Run = Callable[..., Result]
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311"


class _Found:
    def __init__(self, obj: dict[str, Any]) -> None:
        self._obj = obj

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._obj))


class FakeKube:
    """Jobs and pods of one cluster, and the log text of each pod (a list of answers, one per read)."""

    def __init__(self) -> None:
        self.objects: list[dict[str, Any]] = []
        self.logs: dict[str, list[str]] = {}
        self.log_reads: list[dict[str, Any]] = []
        self.client = object()
        self.resources = self

    # dyn.resources.get(api_version=, kind=) -> resource; resource.get(name=, namespace=)
    def get(self, **kwargs: Any) -> Any:
        if "kind" in kwargs:
            return self._resource_get(kwargs["api_version"], kwargs["kind"])
        raise AssertionError(kwargs)

    def _resource_get(self, api_version: str, kind: str) -> Any:
        fake = self

        class Resource:
            def get(self, name: str, namespace: str, **_: Any) -> _Found:
                for obj in fake.list(api_version, kind, namespace):
                    if obj["metadata"]["name"] == name:
                        return _Found(obj)
                raise NotFoundError(ApiException(status=404, reason="Not Found"))

        return Resource()

    def list(self, api_version: str, kind: str, namespace: str | None, selector: str | None = None) -> list[Any]:
        out = []
        for obj in self.objects:
            if obj["apiVersion"] != api_version or obj["kind"] != kind:
                continue
            if namespace and obj["metadata"].get("namespace") != namespace:
                continue
            if selector:
                key, _, value = selector.partition("=")
                if (obj["metadata"].get("labels") or {}).get(key) != value:
                    continue
            out.append(obj)
        return out

    def read_log(self, pod: str, namespace: str, **kwargs: Any) -> str:
        self.log_reads.append({"pod": pod, "namespace": namespace, **kwargs})
        answers = self.logs[pod]
        return answers.pop(0) if len(answers) > 1 else answers[0]

    def job(self, name: str, status: str, *, restarts: int = 0, pods: int = 2, namespace: str = "default") -> None:
        """A HyperPodPyTorchJob with a True condition ``status`` and its ``pods`` (rank = replica index)."""
        self.objects.append(
            {
                "apiVersion": "sagemaker.amazonaws.com/v1",
                "kind": "HyperPodPyTorchJob",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "creationTimestamp": "2026-12-01T05:00:00Z",
                    "labels": {"instantstart/recipe": "pytorch"},
                },
                "spec": {"nprocPerNode": 1, "replicaSpecs": [{"name": "pods", "replicas": pods}]},
                "status": {
                    "restartCount": restarts,
                    "conditions": [
                        {
                            "type": status,
                            "status": "True",
                            "lastTransitionTime": "2026-12-01T05:01:00Z",
                            **({"message": "jobMaxRetryCount 3 exhausted"} if status == "Failed" else {}),
                        }
                    ],
                },
            }
        )
        for index in range(pods):
            self.objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-pods-{index}",
                        "namespace": namespace,
                        "labels": {"instantstart/training-job": name, "replica-index": str(index)},
                    },
                    "spec": {"nodeName": f"hyperpod-i-000000000000000{index}"},
                    "status": {"phase": "Running", "containerStatuses": [{"restartCount": index}]},
                }
            )


@pytest.fixture
def kube_fake(monkeypatch: pytest.MonkeyPatch) -> FakeKube:
    fake = FakeKube()
    monkeypatch.setattr(kube, "connect", lambda *a, **k: fake)
    monkeypatch.setattr(kube, "list_objects", lambda dyn, v, kind, ns=None, sel=None, **_: fake.list(v, kind, ns, sel))

    class CoreV1Api:
        def __init__(self, _client: Any) -> None:
            pass

        read_namespaced_pod_log = staticmethod(fake.read_log)

    import kubernetes.client

    monkeypatch.setattr(kubernetes.client, "CoreV1Api", CoreV1Api)
    return fake


@pytest.fixture
def run(inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(
        instantstart_client.cli,
        "InstantStartClient",
        functools.partial(InstantStartClient, transport=inprocess_api, sleep=lambda s: None),
    )
    monkeypatch.setattr(instantstart_client.cli, "_sleep", lambda s: None)

    def _run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(app, ["--api-url", inprocess_api.url, *args], input=input)

    return _run


@pytest.fixture
def ready(inprocess_api: InProcessApi, aws: Any) -> Iterator[None]:
    """Cluster ``demo`` READY; its HyperPod cluster holds 3 ml.g5.8xlarge nodes (1 GPU each) in two groups."""
    inprocess_api.add_cluster("demo")
    hyperpod_cluster(aws, "demo", ("accel", 1), ("spare", 2))
    yield


@pytest.fixture
def operator_on(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The training operator add-on ACTIVE (moto's EKS has no add-ons); returns the clusters asked about."""
    asked: list[str] = []
    monkeypatch.setattr(rules, "require_training_operator", lambda eks, tag, name: asked.append(name))
    return asked


def pytorch_args(*extra: str) -> list[str]:
    return [
        "jobs", "create", "demo", "--recipe", "pytorch", "--name", "llama-sft-1", "--instance-type", "ml.g5.8xlarge",
        "--image", IMAGE, "--script", "/s3/code/train.py", *extra,
    ]  # fmt: skip


# -- create -----------------------------------------------------------------------------------------------------------


def test_jobs_create_sends_the_recipe_body_and_prints_the_operation_and_how_to_follow(
    ready: None, run: Run, inprocess_api: InProcessApi, operator_on: list[str], tmp_path: Path, kube_fake: FakeKube
) -> None:
    """Given a READY cluster with the training operator on and the bucket's claim in default,
    when `jobs create` runs with options and a --file holding the runPolicy,
    then the API gets one body (options over the file) and the CLI prints the operation and the follow commands."""
    claim = {"name": "s3-claim", "namespace": "default"}
    kube_fake.objects.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": claim})
    body_file = tmp_path / "job.json"
    body_file.write_text(json.dumps({"runPolicy": {"jobMaxRetryCount": 5}, "nodes": 1}))

    result = run(
        *pytorch_args("--nodes", "2", "--arg", "--epochs", "--arg", "3", "--env", "NCCL_DEBUG=INFO"),
        "--file",
        str(body_file),
    )

    assert result.exit_code == 0, result.output
    [sent] = inprocess_api.requests_to("POST", "/clusters/demo/training-jobs")
    assert sent.json() == {
        "recipe": "pytorch",
        "runPolicy": {"jobMaxRetryCount": 5},
        "nodes": 2,
        "name": "llama-sft-1",
        "instanceType": "ml.g5.8xlarge",
        "image": IMAGE,
        "script": "/s3/code/train.py",
        "args": ["--epochs", "3"],
        "env": {"NCCL_DEBUG": "INFO"},
    }
    assert "CREATE_TRAINING_JOB HyperPodPyTorchJob default/llama-sft-1 on demo" in result.stdout
    assert "instantstart jobs logs demo llama-sft-1 -n default --follow" in result.stdout
    assert operator_on == ["eks-cluster-demo"]


def test_jobs_create_with_the_operator_off_exits_2_naming_the_feature_to_turn_on(
    ready: None, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto 5.2.5 does not implement EKS DescribeAddon: it answers as EKS does for an add-on not installed."""
    from botocore.client import BaseClient
    from botocore.exceptions import ClientError

    real = BaseClient._make_api_call

    def call(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if operation == "DescribeAddon":
            error = {"Code": "ResourceNotFoundException", "Message": f"No addon: {params['addonName']} found"}
            raise ClientError({"Error": error}, operation)
        return real(self, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", call)

    result = run(*pytorch_args())

    assert result.exit_code == 2, result.output
    assert "409 FeatureNotEnabled" in result.stderr and "trainingOperator" in result.stderr


def test_jobs_create_of_more_nodes_than_the_groups_hold_exits_2_with_the_numbers(
    ready: None, run: Run, operator_on: list[str]
) -> None:
    result = run(*pytorch_args("--nodes", "4"))
    gpus = run(*pytorch_args("--nproc-per-node", "2"))

    assert result.exit_code == 2, result.output
    assert "nodes 4 is more than the cluster's ml.g5.8xlarge groups hold (3)" in result.stderr
    assert gpus.exit_code == 2, gpus.output
    assert "nprocPerNode 2 asks for more GPUs per pod than ml.g5.8xlarge has (1)" in gpus.stderr


def test_jobs_create_of_a_bad_name_exits_2_naming_the_field(ready: None, run: Run, inprocess_api: InProcessApi) -> None:
    args = pytorch_args()
    args[args.index("llama-sft-1")] = "Llama_SFT"

    result = run(*args)

    assert result.exit_code == 2, result.output
    assert "422" in result.stderr and "- name: name must be a DNS-1123 label" in result.stderr


def test_jobs_create_with_an_env_option_without_equals_is_refused_before_any_call(
    ready: None, run: Run, inprocess_api: InProcessApi
) -> None:
    result = run(*pytorch_args("--env", "NCCL_DEBUG"))

    assert result.exit_code == 2
    assert "--env takes NAME=VALUE" in result.output
    assert inprocess_api.requests_to("POST", "/clusters/demo/training-jobs") == []


# -- list and get -----------------------------------------------------------------------------------------------------


def test_jobs_list_shows_status_restarts_and_age_of_each_job(ready: None, run: Run, kube_fake: FakeKube) -> None:
    kube_fake.job("llama-sft-1", "Running", restarts=2)
    kube_fake.job("old-run", "Succeeded", namespace="hyperpod-ns-research")

    result = run("jobs", "list", "demo")
    raw = run("jobs", "list", "demo", "-n", "hyperpod-ns-research", "--json")

    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") > 5}
    assert [c.strip() for c in rows["llama-sft-1"].split("│")[2:7]] == [
        "default", "HyperPodPyTorchJob", "pytorch", "Running", "2",
    ]  # fmt: skip
    assert "Succeeded" in rows["old-run"]
    assert [j["name"] for j in json.loads(raw.stdout)["trainingJobs"]] == ["old-run"]


def test_jobs_get_shows_pods_by_rank_and_why_a_job_failed(ready: None, run: Run, kube_fake: FakeKube) -> None:
    kube_fake.job("llama-sft-1", "Failed", restarts=3)

    result = run("jobs", "get", "demo", "llama-sft-1")

    assert result.exit_code == 0, result.output
    assert "default/llama-sft-1 HyperPodPyTorchJob (pytorch): Failed, 3 restarts" in result.stdout
    assert "Reason: jobMaxRetryCount 3 exhausted" in result.stdout
    pods = [line.split("│")[1:6] for line in result.stdout.splitlines() if "llama-sft-1-pods-" in line]
    assert [(r.strip(), p.strip(), n.strip()) for r, p, n, *_ in pods] == [
        ("0", "llama-sft-1-pods-0", "hyperpod-i-0000000000000000"),
        ("1", "llama-sft-1-pods-1", "hyperpod-i-0000000000000001"),
    ]


def test_jobs_get_of_an_unknown_job_exits_2_with_the_404(ready: None, run: Run, kube_fake: FakeKube) -> None:
    result = run("jobs", "get", "demo", "nosuch")

    assert result.exit_code == 2
    assert "404 TrainingJobNotFound" in result.stderr and "default/nosuch" in result.stderr


# -- logs -------------------------------------------------------------------------------------------------------------


def test_jobs_logs_reads_rank_0_by_default_and_a_named_pod_with_tail(
    ready: None, run: Run, kube_fake: FakeKube
) -> None:
    kube_fake.job("llama-sft-1", "Running")
    kube_fake.logs = {"llama-sft-1-pods-0": ["rank 0 step 1\nrank 0 step 2\n"], "llama-sft-1-pods-1": ["rank 1\n"]}

    rank0 = run("jobs", "logs", "demo", "llama-sft-1")
    named = run("jobs", "logs", "demo", "llama-sft-1", "--pod", "llama-sft-1-pods-1", "--tail", "5")

    assert rank0.exit_code == 0 and named.exit_code == 0, rank0.output + named.output
    assert rank0.stdout == "rank 0 step 1\nrank 0 step 2\n"
    assert named.stdout == "rank 1\n"
    assert [(r["pod"], r.get("tail_lines")) for r in kube_fake.log_reads] == [
        ("llama-sft-1-pods-0", 1000),
        ("llama-sft-1-pods-1", 5),
    ]


def test_jobs_logs_follow_prints_each_new_line_once_until_the_job_ends(
    ready: None, run: Run, kube_fake: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given a running job whose rank 0 writes a line between reads (each sinceSeconds window overlaps the last),
    when `jobs logs --follow` runs and the job then Succeeds,
    then every line is printed once, later reads ask for sinceSeconds, and the CLI exits 0 saying it Succeeded."""
    kube_fake.job("llama-sft-1", "Running")
    kube_fake.logs = {
        "llama-sft-1-pods-0": ["step 1\n", "step 1\nstep 2\n", "step 2\nstep 3\n", "step 3\ndone\n"],
    }
    job = next(o for o in kube_fake.objects if o["kind"] == "HyperPodPyTorchJob")
    clock = iter(range(0, 1000, 7))
    monkeypatch.setattr(instantstart_client.cli, "_monotonic", lambda: float(next(clock)))

    def finish_after_reads(seconds: float) -> None:
        if len(kube_fake.log_reads) == 3:
            job["status"]["conditions"] = [{"type": "Succeeded", "status": "True"}]

    monkeypatch.setattr(instantstart_client.cli, "_sleep", finish_after_reads)

    result = run("jobs", "logs", "demo", "llama-sft-1", "--follow", "--poll-interval", "5")

    assert result.exit_code == 0, result.output
    assert result.stdout == "step 1\nstep 2\nstep 3\ndone\n"
    assert [r.get("since_seconds") for r in kube_fake.log_reads] == [None, 8, 8, 8]
    assert "Job default/llama-sft-1 Succeeded." in result.stderr


def test_jobs_logs_follow_of_a_failed_job_exits_1(ready: None, run: Run, kube_fake: FakeKube) -> None:
    kube_fake.job("llama-sft-1", "Failed")
    kube_fake.logs = {"llama-sft-1-pods-0": ["Traceback\nCUDA error\n"]}

    result = run("jobs", "logs", "demo", "llama-sft-1", "--follow")

    assert result.exit_code == 1, result.output
    assert result.stdout == "Traceback\nCUDA error\n"
    assert "Job default/llama-sft-1 Failed." in result.stderr


def test_jobs_logs_of_a_pod_not_of_the_job_exits_2_listing_its_pods(ready: None, run: Run, kube_fake: FakeKube) -> None:
    kube_fake.job("llama-sft-1", "Running")

    result = run("jobs", "logs", "demo", "llama-sft-1", "--pod", "other-0")

    assert result.exit_code == 2
    assert "404 PodNotFound" in result.stderr and "other-0" in result.stderr


# -- delete -----------------------------------------------------------------------------------------------------------


def test_jobs_delete_asks_for_the_name_and_a_wrong_answer_deletes_nothing(
    ready: None, run: Run, inprocess_api: InProcessApi, kube_fake: FakeKube
) -> None:
    kube_fake.job("llama-sft-1", "Running")

    refused = run("jobs", "delete", "demo", "llama-sft-1", input="llama\n")
    accepted = run("jobs", "delete", "demo", "llama-sft-1", input="llama-sft-1\n")

    assert refused.exit_code == 1 and "nothing was deleted" in refused.stderr
    assert accepted.exit_code == 0, accepted.output
    assert len(inprocess_api.requests_to("DELETE", "/clusters/demo/training-jobs/llama-sft-1")) == 1
    assert "DELETE_TRAINING_JOB HyperPodPyTorchJob default/llama-sft-1 on demo" in accepted.stdout


def test_mlflow_runs_of_a_job_not_in_the_namespace_exits_2_with_the_404_naming_it(
    ready: None, run: Run, kube_fake: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given a cluster with a MLflow connection and job llama-sft-1 in namespace default,
    when `mlflow runs` asks for it in namespace ml (or for a job that does not exist),
    then the CLI exits 2 with the API's 404 naming the job and its namespace: no empty list of runs."""
    from instantstart.training import runs as job_runs

    monkeypatch.setattr(job_runs.mlflow_service, "connection", lambda rt, tag: object())
    kube_fake.job("llama-sft-1", "Running")

    other_namespace = run("mlflow", "runs", "demo", "llama-sft-1", "--namespace", "ml")
    missing = run("mlflow", "runs", "demo", "ghost")

    assert other_namespace.exit_code == 2, other_namespace.output
    assert "TrainingJobNotFound" in other_namespace.output and "ml/llama-sft-1" in other_namespace.output
    assert missing.exit_code == 2 and "default/ghost" in missing.output


def test_jobs_list_and_get_age_is_measured_on_the_clock_of_the_cluster_timestamps(
    ready: None, run: Run, kube_fake: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given a job created at 2026-12-01T05:00:00Z and the product's clock (an emulator's: the one the cluster's
    timestamps come from) at 05:01:30 that day,
    when `jobs list` and `jobs get` run,
    then the age is 1m (measured on that clock, not the machine's, where it showed 0s or days)."""
    from instantstart.models import common

    created = datetime(2026, 12, 1, 5, 0, tzinfo=UTC).timestamp()
    monkeypatch.setattr(common, "_clock", lambda: created + 90)
    kube_fake.job("llama-sft-1", "Running")

    listed = run("jobs", "list", "demo")
    got = run("jobs", "get", "demo", "llama-sft-1")
    raw = run("jobs", "get", "demo", "llama-sft-1", "--json")

    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.stdout.splitlines() if "llama-sft-1" in line)
    assert row.split("│")[7].strip() == "1m", row
    assert "age 1m" in got.stdout
    assert json.loads(raw.stdout)["ageSeconds"] == 90
