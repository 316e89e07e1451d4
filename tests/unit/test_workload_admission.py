"""The pure rules behind "workloads fail loudly": a pod's problem as Kubernetes reports it, the storage paths of a
request and the submission checks, Kueue's verdict on a job, the nodes rule with managed Karpenter, and the RayJob
name rule."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from instantstart.errors import ValidationFailed
from instantstart.kube.pod_problems import pod_problem, pod_problems, summary
from instantstart.models.training_jobs import CreateTrainingJobRequest
from instantstart.training import admission, builders, rules

IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311"
REQUESTS: TypeAdapter[Any] = TypeAdapter(CreateTrainingJobRequest)


def job(**change: Any) -> Any:
    body = {"recipe": "pytorch", "name": "j", "instanceType": "ml.g6.4xlarge", "image": IMAGE, "script": "/s3/t.py"}
    return REQUESTS.validate_python({**body, **change})


def pod(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "j-pod-0"}, "status": status}


def test_a_waiting_container_with_a_pull_fault_wins_over_scheduling_and_container_creating_is_no_problem() -> None:
    pulling = pod(
        {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [
                {"name": "pytorch", "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}
            ],
        }
    )
    creating = pod(
        {
            "phase": "Pending",
            "containerStatuses": [{"name": "p", "state": {"waiting": {"reason": "ContainerCreating"}}}],
        }
    )
    unschedulable = pod(
        {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"}
            ],
        }
    )

    found = pod_problem(pulling)
    assert found is not None and (found.reason, found.message, found.container) == (
        "ErrImagePull",
        "not found",
        "pytorch",
    )
    assert pod_problem(creating) is None
    assert summary(pod_problems([creating, unschedulable, unschedulable])) == (
        "pod j-pod-0: Unschedulable: 0/1 nodes (2 pods: Unschedulable)"
    )
    assert summary([]) is None


def test_storage_paths_name_each_field_and_a_namespace_without_the_claim_is_422_naming_it() -> None:
    request = job(namespace="research", args=["--data", "/fsx/data", "--epochs", "1"])

    paths = admission.storage_paths(request)
    with pytest.raises(ValidationFailed) as refused:
        admission.check_submission("t", request, admission.SubmissionFacts(claims=frozenset({builders.S3_CLAIM})))

    assert paths == [("script", "/s3/t.py", "s3-claim"), ("args[1]", "/fsx/data", "fsx-claim")]
    assert [d["field"] for d in refused.value.details] == ["args[1]"]
    assert "research" in refused.value.message
    admission.check_submission("t", job(), admission.SubmissionFacts(claims=frozenset({builders.S3_CLAIM})))


def test_a_team_without_its_local_queue_or_cluster_queue_is_422_naming_team() -> None:
    request = job(team="ml")
    claims = frozenset({builders.S3_CLAIM})

    with pytest.raises(ValidationFailed) as no_queue:
        admission.check_submission("t", request, admission.SubmissionFacts(claims=claims))
    local = {"spec": {"clusterQueue": "hyperpod-ns-ml-clusterqueue"}}
    with pytest.raises(ValidationFailed) as no_cq:
        admission.check_submission("t", request, admission.SubmissionFacts(claims=claims, local_queue=local))

    assert no_queue.value.details[0]["field"] == "team" and "hyperpod-ns-ml-localqueue" in no_queue.value.message
    assert no_cq.value.details[0]["field"] == "team" and "hyperpod-ns-ml-clusterqueue" in no_cq.value.message
    admission.check_submission(
        "t", request, admission.SubmissionFacts(claims=claims, local_queue=local, cluster_queue_exists=True)
    )


def test_kueues_inadmissible_workload_is_the_reason_and_an_admitted_one_is_none() -> None:
    held = {
        "spec": {"queueName": "q"},
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Inadmissible",
                    "message": "LocalQueue q doesn't exist",
                }
            ]
        },
    }
    admitted = {"status": {"conditions": [{"type": "Admitted", "status": "True"}]}}

    assert admission.admission_problem(held) == (
        "Kueue has not admitted the job (queue q): Inadmissible: LocalQueue q doesn't exist"
    )
    assert admission.admission_problem(admitted) is None
    assert admission.admission_problem(None) is None


def test_a_type_at_zero_nodes_passes_only_when_managed_karpenter_scales_a_group_of_it() -> None:
    described = {"InstanceGroups": [{"InstanceGroupName": "auto", "InstanceType": "ml.g5.8xlarge", "TargetCount": 0}]}

    with pytest.raises(ValidationFailed) as refused:
        rules.check_nodes_fit(2, "ml.g5.8xlarge", described)
    rules.check_nodes_fit(2, "ml.g5.8xlarge", described, karpenter_groups=["auto"])

    assert refused.value.details[0]["field"] == "instanceType"


def test_training_pods_carry_karpenters_do_not_disrupt() -> None:
    facts = builders.InstanceFacts("ml.g6.4xlarge", gpus=1, efa=0, memory_mib=65536, vcpus=16)
    built = builders.build(job(), builders.BuildContext(facts=facts))

    template = built.job["spec"]["replicaSpecs"][0]["template"]
    assert template["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}


@pytest.mark.parametrize("name", ["v" * 48, "1-verl"])
def test_a_verl_name_follows_kuberays_rayjob_rule(name: str) -> None:
    body = {
        "recipe": "verl",
        "instanceType": "ml.g6.4xlarge",
        "image": IMAGE,
        "model": "m",
        "trainFiles": "/s3/a",
        "valFiles": "/s3/b",
        "outputPath": "/s3/o",
    }

    with pytest.raises(ValidationError):
        REQUESTS.validate_python({**body, "name": name})
    assert REQUESTS.validate_python({**body, "name": "v" * 47}).name == "v" * 47
