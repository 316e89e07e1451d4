"""A cluster delete finds the SageMaker side of its managed endpoints by their ownership tags (moto).

The endpoint goes first; its config and model once no endpoint of the cluster is left. A resource named like the
cluster's endpoints without its ownership tags (someone else's) is kept, and the running delete operation lists it
in ``retained`` with the reason; another cluster's resources are not touched.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from instantstart.clusters import records, service
from instantstart.config import Settings
from instantstart.inference import teardown
from instantstart.models.cluster import CreateClusterRequest
from instantstart.models.common import ClusterStatus, OperationStatus
from instantstart.naming import ownership_tags, tag_list
from instantstart.runtime import Runtime

TAG = "sweep"


@pytest.fixture
def rt(aws: Any, table: str, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """A READY cluster ``sweep`` whose delete operation runs (its workflow does not: a one-state machine)."""
    sfn = aws.client("stepfunctions")
    for env in ("CREATE", "UPDATE", "DELETE"):
        arn = sfn.create_state_machine(
            name=env.lower(),
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn="arn:aws:iam::123456789012:role/workflows",
        )["stateMachineArn"]
        monkeypatch.setenv(f"{env}_CLUSTER_STATE_MACHINE_ARN", arn)
    runtime = Runtime(Settings())
    request = {
        "clusterTag": TAG,
        "availabilityZone": "us-west-2c",
        "instanceGroups": [{"instanceType": "ml.g6.4xlarge", "instanceCount": 1}],
    }
    create = service.create_cluster(runtime, CreateClusterRequest.model_validate(request))
    records.finish_operation(
        runtime, operation_id=create.operation_id, tag=TAG, status=OperationStatus.SUCCEEDED,
        cluster_status=ClusterStatus.READY,
    )  # fmt: skip
    service.delete_cluster(runtime, TAG)
    return runtime


def endpoint(sm: Any, name: str, tags: list[dict[str, str]]) -> None:
    """A model, config and endpoint ``name`` as the inference operator makes them, with ``tags`` on all three."""
    sm.create_model(
        ModelName=f"{name}-m",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/operator",
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/djl:1"},
        Tags=tags or [{"Key": "other", "Value": "x"}],
    )
    sm.create_endpoint_config(
        EndpointConfigName=f"{name}-c",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": f"{name}-m",
                "InstanceType": "ml.m5.large",
                "InitialInstanceCount": 1,
            }
        ],
        Tags=tags or [{"Key": "other", "Value": "x"}],
    )
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-c", Tags=tags or [{"Key": "other", "Value": "x"}])


def test_owned_endpoints_go_then_configs_and_models_and_a_lookalike_is_kept_with_its_reason(rt: Runtime) -> None:
    sm = rt.client("sagemaker")
    endpoint(sm, f"instantstart-{TAG}-ours", tag_list(ownership_tags(TAG)))
    endpoint(sm, f"instantstart-{TAG}-foreign", [])
    endpoint(sm, "instantstart-other-theirs", tag_list(ownership_tags("other")))

    first = teardown.remove_sagemaker_resources(rt, TAG)
    second = teardown.remove_sagemaker_resources(rt, TAG)

    assert first == [f"SageMaker endpoint instantstart-{TAG}-ours"]
    assert second == []
    endpoints = sorted(e["EndpointName"] for e in sm.list_endpoints()["Endpoints"])
    assert endpoints == ["instantstart-other-theirs", f"instantstart-{TAG}-foreign"]
    configs = sorted(c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"])
    assert configs == ["instantstart-other-theirs-c", f"instantstart-{TAG}-foreign-c"]
    models = sorted(m["ModelName"] for m in sm.list_models()["Models"])
    assert models == ["instantstart-other-theirs-m", f"instantstart-{TAG}-foreign-m"]
    delete = rt.store.get_operation(records.cluster_record(rt, TAG).current_operation_id or "")
    assert delete is not None
    kept = {(r.resource_type, r.name): r.reason for r in delete.retained or []}
    assert set(kept) == {
        ("SageMakerEndpoint", f"instantstart-{TAG}-foreign"),
        ("SageMakerEndpointConfig", f"instantstart-{TAG}-foreign-c"),
    }
    assert all(reason == teardown.NOT_OURS for reason in kept.values())
