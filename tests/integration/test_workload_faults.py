"""Given a READY cluster in the sandbox, when a training job cannot run as asked, then the API says why: at
submission a 422 naming the field (a team without its Kueue queue, storage not mounted in the job's namespace, a
RayJob name KubeRay refuses), and afterwards ``GET .../training-jobs/{name}`` shows the reason as soon as Kubernetes
reports it (the kubelet's image pull failure, the scheduler's message, Kueue's inadmissible Workload). A job on a
managed-Karpenter group at 0 nodes is accepted (scale from zero) and its pods are protected from consolidation."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, eventually, finished, ready_cluster, refusal

TAG = "faults"
EKS = f"eks-cluster-{TAG}"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311"
BAD_IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:9.9.9-missing"
AUTO = {"instanceGroupName": "auto", "instanceType": "ml.g5.8xlarge", "instanceCount": 0, "capacityType": "OnDemand"}
JOB = {
    "recipe": "pytorch",
    "name": "pull-fails",
    "instanceType": "ml.g6.4xlarge",
    "nodes": 1,
    "image": BAD_IMAGE,
    "script": "/s3/code/train.py",
    "env": {"SANDBOX_TRAINING_SECONDS": "3600"},
}


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """``faults``: ``accel`` (one ml.g6.4xlarge, one GPU) and ``auto`` (ml.g5.8xlarge at 0, scaled by managed
    Karpenter), with the training operator and task governance on."""
    found = ready_cluster(api, TAG, [GROUP, AUTO])
    on = finished(
        api, api.update_features(TAG, {"trainingOperator": {"enabled": True}, "taskGovernance": {"enabled": True}})
    )
    assert on["status"] == "SUCCEEDED", on
    karpenter = finished(api, api.update_autoscaling(TAG, enabled=True, instance_groups=["auto"]))
    assert karpenter["status"] == "SUCCEEDED", karpenter
    return found


def submit(api: InstantStartClient, body: dict[str, Any]) -> dict[str, Any]:
    accepted = api.create_training_job(TAG, body)
    op = finished(api, accepted["operation"])
    assert op["status"] == "SUCCEEDED", op
    return dict(accepted)


def test_an_unpullable_image_then_a_job_with_no_gpu_left_show_the_kubelets_and_the_schedulers_reasons(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    sandbox.aws.extension.inference.fail_image_pull(EKS, BAD_IMAGE, "manifest unknown: 9.9.9-missing")
    submit(api, JOB)
    pulling = eventually(lambda: api.get_training_job(TAG, "pull-fails"), lambda j: j["reason"] is not None)
    submit(api, {**JOB, "name": "no-gpu-left", "image": IMAGE})
    waiting = eventually(lambda: api.get_training_job(TAG, "no-gpu-left"), lambda j: j["reason"] is not None)

    assert pulling["status"] == "Pending"
    pod = pulling["pods"][0]
    assert pod["reason"] in ("ErrImagePull", "ImagePullBackOff"), pod
    assert "manifest unknown" in pod["message"] or "Back-off pulling image" in pod["message"], pod
    assert pod["reason"] in pulling["reason"] and "pull-fails-pod-0" in pulling["reason"]
    assert waiting["status"] == "Pending"
    assert waiting["pods"][0]["reason"] == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in waiting["pods"][0]["message"], waiting["pods"]
    assert "Unschedulable" in waiting["reason"] and "Insufficient nvidia.com/gpu" in waiting["reason"]


def test_a_team_without_its_kueue_queue_is_422_and_a_job_queued_to_a_missing_queue_shows_kueues_reason(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    refused = refusal(lambda: api.create_training_job(TAG, {**JOB, "name": "ghost-team", "team": "ghost"}))
    kube = sandbox.kube.cluster(EKS)
    kube.create(
        {
            "apiVersion": "sagemaker.amazonaws.com/v1",
            "kind": "HyperPodPyTorchJob",
            "metadata": {
                "name": "queued-nowhere",
                "namespace": "default",
                "labels": {"kueue.x-k8s.io/queue-name": "hyperpod-ns-ghost-localqueue"},
            },
            "spec": {
                "nprocPerNode": "1",
                "replicaSpecs": [
                    {
                        "name": "pods",
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "pytorch", "image": IMAGE}]}},
                    }
                ],
            },
        }
    )
    held = eventually(lambda: api.get_training_job(TAG, "queued-nowhere"), lambda j: j["reason"] is not None)

    assert refused.status == 422 and refused.details[0]["field"] == "team"
    assert "hyperpod-ns-ghost-localqueue" in refused.message
    assert held["status"] == "Pending" and held["pods"] == []
    assert "LocalQueue hyperpod-ns-ghost-localqueue doesn't exist" in held["reason"]


def test_a_storage_path_in_a_namespace_without_its_claim_is_422_naming_the_field(
    cluster: Any, api: InstantStartClient
) -> None:
    refused = refusal(lambda: api.create_training_job(TAG, {**JOB, "name": "elsewhere", "namespace": "research"}))

    assert refused.status == 422
    assert refused.details[0]["field"] == "script" and refused.details[0]["claim"] == "s3-claim"
    assert "research" in refused.message and "/s3" in refused.message


@pytest.mark.parametrize("name", ["v" * 48, "1-verl"], ids=["48-characters", "starts-with-a-digit"])
def test_a_rayjob_name_kuberay_refuses_is_422_stating_kuberays_rule(
    cluster: Any, api: InstantStartClient, name: str
) -> None:
    body = {
        "recipe": "verl",
        "name": name,
        "instanceType": "ml.g6.4xlarge",
        "image": IMAGE,
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "trainFiles": "/s3/data/train.parquet",
        "valFiles": "/s3/data/test.parquet",
        "outputPath": "/s3/outputs/verl",
    }
    refused = refusal(lambda: api.create_training_job(TAG, body))

    assert refused.status == 422 and refused.details[0]["field"] == "name"
    assert "DNS-1035" in refused.details[0]["message"] and "47" in refused.details[0]["message"]


def test_a_job_on_a_karpenter_group_at_zero_is_accepted_and_its_pods_carry_do_not_disrupt(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    accepted = submit(api, {**JOB, "name": "from-zero", "instanceType": "ml.g5.8xlarge", "image": IMAGE})
    pod = eventually(
        lambda: sandbox.kube.cluster(EKS).peek("v1", "Pod", "from-zero-pod-0", "default"), lambda p: p is not None
    )

    assert accepted["kind"] == "HyperPodPyTorchJob"
    assert pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"


def test_a_team_with_its_compute_quota_is_admitted_by_kueue_and_its_pods_start(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    quota = {
        "computeQuotaConfig": {"computeQuotaResources": [{"instanceType": "ml.g6.4xlarge", "count": 1}]},
        "computeQuotaTarget": {"teamName": "ml", "fairShareWeight": 10},
    }
    name = api.create_compute_quota(TAG, quota)["name"]
    eventually(
        lambda: next(q for q in api.list_compute_quotas(TAG)["computeQuotas"] if q["name"] == name),
        lambda q: q["status"] == "Created",
    )
    body = {**JOB, "name": "team-job", "team": "ml", "image": IMAGE, "script": "/opt/train.py"}
    body["instanceType"] = "ml.g5.8xlarge"
    accepted = submit(api, body)
    pod = eventually(
        lambda: sandbox.kube.cluster(EKS).peek("v1", "Pod", "team-job-pod-0", "hyperpod-ns-ml"), lambda p: p is not None
    )
    shown = api.get_training_job(TAG, "team-job", namespace="hyperpod-ns-ml")

    assert accepted["namespace"] == "hyperpod-ns-ml"
    assert pod is not None and pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-ml-localqueue"
    assert shown["reason"] is None or "Kueue" not in shown["reason"], shown["reason"]
