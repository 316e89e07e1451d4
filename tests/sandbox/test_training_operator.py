"""The sandbox's training operators (HyperPodPyTorchJob, RayJob), driven by the official kubernetes client.

Each test runs a KubeApiServer on a fast simulated clock, installs the training operator the way the EKS add-on
does (its CRD and controller Deployment) or the KubeRay operator of the kubeRay feature, adds HyperPod-like nodes,
and watches what a user of ``kubectl`` would see: pods and their nodes, job status, logs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from instantstart_sandbox.aws.addons import CATALOG, addon_objects
from instantstart_sandbox.aws.extension import TrainingFaults
from instantstart_sandbox.clock import SimClock
from instantstart_sandbox.kube.server import KubeApiServer
from instantstart_sandbox.kube.store import KubeCluster
from instantstart_sandbox.kube.training import HEALTH_LABEL

SCALE = 300.0
GROUP, VERSION, PLURAL = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"
P5, G5 = "ml.p5.48xlarge", "ml.g5.8xlarge"


@pytest.fixture(scope="module")
def server() -> Iterator[KubeApiServer]:
    clock = SimClock(scale=SCALE)
    srv = KubeApiServer(clock=clock)
    srv.start()
    yield srv
    srv.stop()
    clock.stop()


@pytest.fixture
def name(server: KubeApiServer, request: pytest.FixtureRequest) -> str:
    cluster = request.node.name.replace("_", "-")[:50].strip("-")
    server.add_cluster(cluster)
    return cluster


@pytest.fixture
def kube(server: KubeApiServer, name: str) -> KubeCluster:
    return server.cluster(name)


@pytest.fixture
def api(server: KubeApiServer, name: str, tmp_path: Path) -> client.ApiClient:
    ca = tmp_path / "ca.pem"
    ca.write_text(server.ca_pem)
    cfg = client.Configuration()
    cfg.host = server.endpoint(name)
    cfg.ssl_ca_cert = str(ca)
    cfg.api_key = {"authorization": "Bearer sandbox-test-token"}
    return client.ApiClient(cfg)


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def install_operator(kube: KubeCluster) -> None:
    spec = CATALOG["amazon-sagemaker-hyperpod-training-operator"]
    for obj in addon_objects(spec, spec.versions[0], "us-west-2"):
        kube.apply(obj, field_manager="eks")


def node(kube: KubeCluster, name: str, instance_type: str = P5, gpus: int = 8, health: str = "Schedulable") -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "node.kubernetes.io/instance-type": instance_type,
                    HEALTH_LABEL: health,
                },
            },
            "spec": {},
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.1.17"}],
                "allocatable": {
                    "cpu": "190",
                    "memory": "2000Gi",
                    "pods": "110",
                    "nvidia.com/gpu": str(gpus),
                    "vpc.amazonaws.com/efa": "32",
                },
            },
        }
    )


def job(
    name: str, replicas: int = 2, seconds: int = 600, run_policy: dict[str, Any] | None = None, gpus: int = 8
) -> dict[str, Any]:
    resources = {"nvidia.com/gpu": gpus, "vpc.amazonaws.com/efa": 32}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nprocPerNode": str(gpus),
            "replicaSpecs": [
                {
                    "name": "pods",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "nodeSelector": {"node.kubernetes.io/instance-type": P5},
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "public.ecr.aws/pytorch/train:2.5.1",
                                    "env": [{"name": "SANDBOX_TRAINING_SECONDS", "value": str(seconds)}],
                                    "resources": {"requests": resources, "limits": resources},
                                }
                            ],
                        }
                    },
                }
            ],
            "runPolicy": {"cleanPodPolicy": "None", **(run_policy or {})},
        },
    }


def get_job(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    return dict(custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name))


def state(custom: client.CustomObjectsApi, name: str) -> str | None:
    conds = (get_job(custom, name).get("status") or {}).get("conditions") or []
    return next(
        (
            c["type"]
            for c in conds
            if c["status"] == "True" and c["type"] in ("Running", "Restarting", "Succeeded", "Failed")
        ),
        None,
    )


def condition(custom: client.CustomObjectsApi, name: str, ctype: str) -> dict[str, Any]:
    conds = (get_job(custom, name).get("status") or {}).get("conditions") or []
    return next(c for c in conds if c["type"] == ctype)


def pods(core: client.CoreV1Api, job_name: str) -> dict[str, Any]:
    items = core.list_namespaced_pod("default", label_selector=f"sagemaker.amazonaws.com/job-name={job_name}").items
    return {p.metadata.name: p for p in items}


def test_job_pods_land_on_healthy_matching_nodes_run_log_and_succeed(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    install_operator(kube)
    node(kube, "p5-a")
    node(kube, "p5-b")
    node(kube, "p5-sick", health="UnschedulablePendingReplacement")
    node(kube, "g5-a", instance_type=G5, gpus=1)
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, job("llama", seconds=900))

    wait_for(lambda: state(custom, "llama") == "Running")
    running = pods(core, "llama")
    assert sorted(running) == ["llama-pod-0", "llama-pod-1"]
    assert sorted(p.spec.node_name for p in running.values()) == ["p5-a", "p5-b"]
    status = get_job(custom, "llama")["status"]
    assert condition(custom, "llama", "Created")["status"] == "True"
    assert status["restartCount"] == 0
    assert [p["name"] for p in status["jobPods"]] == ["llama-pod-0", "llama-pod-1"]
    assert status["masterAddr"] == running["llama-pod-0"].status.pod_ip

    first = wait_for(lambda: core.read_namespaced_pod_log("llama-pod-1", "default"))
    assert first.startswith("[rank 1] HyperPodElasticAgent: starting job llama attempt 1: world_size=2")
    log = wait_for(
        lambda: (text := core.read_namespaced_pod_log("llama-pod-0", "default")) and "step 3/10" in text and text
    )
    assert "[rank 0] step 1/10 loss " in log
    tail = core.read_namespaced_pod_log("llama-pod-0", "default", tail_lines=1)
    assert tail.count("\n") == 1 and tail.startswith("[rank 0] step ")
    assert core.read_namespaced_pod_log("llama-pod-0", "default", since_seconds=1) in ("", tail)
    stamped = core.read_namespaced_pod_log("llama-pod-0", "default", timestamps=True, limit_bytes=30)
    assert len(stamped.encode()) <= 30 and stamped[:4].isdigit()

    wait_for(lambda: state(custom, "llama") == "Succeeded")
    done = get_job(custom, "llama")["status"]
    assert done["completionTime"] >= done["startTime"]
    assert {p.status.phase for p in pods(core, "llama").values()} == {"Succeeded"}  # cleanPodPolicy None keeps them
    final = core.read_namespaced_pod_log("llama-pod-1", "default")
    assert "[rank 1] step 10/10 loss" in final
    assert final.endswith("training complete: 10 steps, final loss 0.5062\n")


def test_a_job_waits_for_fitting_nodes_and_the_operator(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    node(kube, "g5-a", instance_type=G5, gpus=1)
    spec = CATALOG["amazon-sagemaker-hyperpod-training-operator"]
    for obj in addon_objects(spec, spec.versions[0], "us-west-2"):
        if obj["kind"] != "Deployment":
            kube.apply(obj, field_manager="eks")
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, job("waits", replicas=1))
    time.sleep(0.3)
    assert pods(core, "waits") == {}  # the CRD alone runs nothing
    assert "status" not in get_job(custom, "waits")

    install_operator(kube)
    wait_for(lambda: pods(core, "waits"))
    pod = wait_for(lambda: (p := pods(core, "waits")["waits-pod-0"]).status.conditions and p)
    assert pod.spec.node_name is None
    assert "didn't match Pod's node affinity/selector" in pod.status.conditions[0].message
    assert state(custom, "waits") is None

    node(kube, "p5-a")
    wait_for(lambda: state(custom, "waits") == "Running")
    assert pods(core, "waits")["waits-pod-0"].spec.node_name == "p5-a"


def test_schema_refuses_a_bad_run_policy(kube: KubeCluster, custom: client.CustomObjectsApi) -> None:
    install_operator(kube)
    bad = job("bad", run_policy={"cleanPodPolicy": "Sometimes"})
    with pytest.raises(client.exceptions.ApiException) as err:
        custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, bad)
    assert err.value.status == 422 and "cleanPodPolicy" in str(err.value.body)
    with pytest.raises(client.exceptions.ApiException) as err:  # Kubeflow's value, not the HyperPod operator's
        custom.create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, job("bad", run_policy={"cleanPodPolicy": "Running"})
        )
    assert err.value.status == 422 and "OnlyComplete" in str(err.value.body)
    no_period = job("bad", run_policy={"restartPolicy": {"maxFullJobRestarts": 1}})
    with pytest.raises(client.exceptions.ApiException) as err:
        custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, no_period)
    assert err.value.status == 422 and "evalPeriodSeconds" in str(err.value.body)


def test_a_pod_failure_restarts_the_pod_and_the_job_still_succeeds(
    server: KubeApiServer, name: str, kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    install_operator(kube)
    node(kube, "p5-a")
    node(kube, "p5-b")
    policy = {
        "jobMaxRetryCount": 5,
        "restartPolicy": {"numRestartBeforeFullJobRestart": 2, "evalPeriodSeconds": 3600, "maxFullJobRestarts": 1},
    }
    custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, job("crash", replicas=2, seconds=1200, run_policy=policy)
    )
    wait_for(lambda: state(custom, "crash") == "Running")
    wait_for(lambda: "step 1/10" in core.read_namespaced_pod_log("crash-pod-1", "default"))
    before = pods(core, "crash")

    TrainingFaults(server).fail_pod(name, "default", "crash-pod-1", 137)  # extension.training.fail_pod

    wait_for(lambda: get_job(custom, "crash")["status"]["restartCount"] == 1)
    restarting = condition(custom, "crash", "Restarting")
    assert restarting["reason"] == "PodLevelRestart"
    assert "crash-pod-1 failed with exit code 137" in restarting["message"]
    assert get_job(custom, "crash")["status"]["restartStatus"]["restartCount"] == 1
    wait_for(lambda: state(custom, "crash") == "Running")
    after = pods(core, "crash")
    assert after["crash-pod-0"].metadata.uid == before["crash-pod-0"].metadata.uid  # rank 0 kept running
    assert after["crash-pod-0"].status.container_statuses[0].restart_count == 0
    # the crashed container restarts in place: same pod and node, the kubelet's restartCount
    restarted = after["crash-pod-1"]
    assert (restarted.metadata.uid, restarted.spec.node_name) == (
        before["crash-pod-1"].metadata.uid,
        before["crash-pod-1"].spec.node_name,
    )
    assert restarted.status.container_statuses[0].restart_count == 1
    assert restarted.status.container_statuses[0].last_state.terminated.exit_code == 137
    assert "attempt 2" in wait_for(lambda: core.read_namespaced_pod_log("crash-pod-1", "default"))

    wait_for(lambda: state(custom, "crash") == "Succeeded", timeout=30)
    assert get_job(custom, "crash")["status"]["restartCount"] == 1


def test_an_exhausted_restart_budget_fails_the_job_with_the_reason(
    server: KubeApiServer, name: str, kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    install_operator(kube)
    node(kube, "p5-a")
    policy = {"jobMaxRetryCount": 1, "cleanPodPolicy": "All"}
    custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, job("fragile", replicas=1, seconds=3000, run_policy=policy)
    )
    wait_for(lambda: state(custom, "fragile") == "Running")
    server.training(name).fail_pod("default", "fragile-pod-0", 1)
    # the restart is read from what stays (the count and the condition's record), not caught while it lasts
    wait_for(lambda: get_job(custom, "fragile")["status"].get("restartCount") == 1)
    assert condition(custom, "fragile", "Restarting")["reason"] == "JobLevelRestart"  # no restartPolicy: full restarts
    wait_for(lambda: state(custom, "fragile") == "Running")
    server.training(name).fail_pod("default", "fragile-pod-0", 1)

    wait_for(lambda: state(custom, "fragile") == "Failed")
    failed = condition(custom, "fragile", "Failed")
    assert failed["reason"] == "MaxRestartsExceeded"
    assert "restart budget exhausted after 1 restarts" in failed["message"]
    assert get_job(custom, "fragile")["status"]["restartCount"] == 1
    wait_for(lambda: pods(core, "fragile") == {})  # cleanPodPolicy All


def test_a_node_health_change_moves_the_pod_to_a_healthy_node(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    install_operator(kube)
    node(kube, "p5-a")
    node(kube, "p5-b")
    policy = {"restartPolicy": {"numRestartBeforeFullJobRestart": 3, "evalPeriodSeconds": 3600}}
    custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, job("moves", replicas=1, seconds=1200, run_policy=policy)
    )
    wait_for(lambda: state(custom, "moves") == "Running")
    sick = pods(core, "moves")["moves-pod-0"].spec.node_name
    spare = "p5-b" if sick == "p5-a" else "p5-a"

    core.patch_node(sick, {"metadata": {"labels": {HEALTH_LABEL: "UnschedulablePendingReplacement"}}})

    wait_for(lambda: get_job(custom, "moves")["status"]["restartCount"] == 1)
    assert (
        f"node {sick} of pod moves-pod-0 is UnschedulablePendingReplacement"
        in (condition(custom, "moves", "Restarting")["message"])
    )
    wait_for(lambda: state(custom, "moves") == "Running")
    moved = pods(core, "moves")["moves-pod-0"]
    assert moved.spec.node_name == spare
    assert moved.status.container_statuses[0].restart_count == 0  # a new pod: its own count starts at 0
    wait_for(lambda: state(custom, "moves") == "Succeeded", timeout=30)


def test_rayjob_runs_its_cluster_then_shuts_down_and_expires(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    from instantstart.features.kuberay import operator_objects

    for obj in operator_objects():
        kube.apply(obj, field_manager="instantstart")
    node(kube, "p5-a")
    node(kube, "p5-b")
    pod_template = {
        "spec": {
            "containers": [
                {
                    "name": "ray",
                    "image": "rayproject/ray:2.40.0",
                    "env": [{"name": "SANDBOX_TRAINING_SECONDS", "value": "900"}],
                }
            ]
        }
    }
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "verl", "namespace": "default"},
        "spec": {
            "entrypoint": "python3 -m verl.trainer.main_ppo",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 600,
            "rayClusterSpec": {
                "headGroupSpec": {"template": pod_template},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": pod_template}],
            },
        },
    }
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", rayjob)

    def status() -> dict[str, Any]:
        return dict(
            custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "verl").get("status") or {}
        )

    initial = wait_for(status)
    assert initial["jobDeploymentStatus"] in ("Initializing", "Running")
    wait_for(lambda: status()["jobStatus"] == "RUNNING")
    assert status()["jobDeploymentStatus"] == "Running"
    cluster = status()["rayClusterName"]
    assert custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayclusters", cluster)
    names = sorted(
        p.metadata.name for p in core.list_namespaced_pod("default", label_selector=f"ray.io/cluster={cluster}").items
    )
    assert names == [f"{cluster}-gpu-worker-0", f"{cluster}-gpu-worker-1", f"{cluster}-head"]
    assert "job verl submitted: python3 -m verl.trainer.main_ppo" in core.read_namespaced_pod_log(
        f"{cluster}-head", "default"
    )

    wait_for(lambda: status()["jobStatus"] == "SUCCEEDED", timeout=30)
    assert status()["jobDeploymentStatus"] == "Complete"
    wait_for(lambda: not core.list_namespaced_pod("default", label_selector=f"ray.io/cluster={cluster}").items)
    wait_for(
        lambda: not custom.list_namespaced_custom_object("ray.io", "v1", "default", "rayjobs")["items"], timeout=30
    )


def test_a_rayjob_name_kuberay_refuses_is_validation_failed_and_gets_no_ray_cluster(
    kube: KubeCluster, custom: client.CustomObjectsApi
) -> None:
    from instantstart.features.kuberay import operator_objects

    for obj in operator_objects():
        kube.apply(obj, field_manager="instantstart")
    name = "r" * 48
    template = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.40.0"}]}}
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"entrypoint": "python3 x.py", "rayClusterSpec": {"headGroupSpec": {"template": template}}},
    }
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", rayjob)

    def status() -> dict[str, Any]:
        found = custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", name)
        return dict(found.get("status") or {})

    wait_for(lambda: status().get("jobDeploymentStatus") == "ValidationFailed")
    assert "no more than 47 characters" in status()["message"]
    assert kube.peek_list("ray.io/v1", "RayCluster", "default") == []


def test_a_job_queued_to_a_missing_local_queue_is_never_admitted_and_runs_once_the_queue_exists(
    kube: KubeCluster, core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    install_operator(kube)
    spec = CATALOG["amazon-sagemaker-hyperpod-taskgovernance"]
    for obj in addon_objects(spec, spec.versions[0], "us-west-2"):
        kube.apply(obj, field_manager="eks")
    node(kube, "p5-a")
    queued = job("queued", replicas=1)
    queued["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-lq"}
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, queued)

    def workload() -> dict[str, Any] | None:
        found = kube.peek_list("kueue.x-k8s.io/v1beta1", "Workload", "default")
        return found[0] if found and (found[0].get("status") or {}).get("conditions") else None

    held = wait_for(workload)
    assert held["status"]["conditions"][0]["reason"] == "Inadmissible"
    assert held["status"]["conditions"][0]["message"] == "LocalQueue team-lq doesn't exist"
    assert pods(core, "queued") == {}

    kube.apply(
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "team-cq"}, "spec": {}},
        field_manager="test",
    )
    kube.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": "team-lq", "namespace": "default"},
            "spec": {"clusterQueue": "team-cq"},
        },
        field_manager="test",
    )
    wait_for(lambda: pods(core, "queued"))
    admitted = {
        c["type"]: c["status"]
        for c in kube.peek_list("kueue.x-k8s.io/v1beta1", "Workload", "default")[0]["status"]["conditions"]
    }
    assert admitted == {"QuotaReserved": "True", "Admitted": "True"}
