"""How a HyperPod wait ends: one module for the ``hyperpod`` stage's steps and the event reconcilers.

The stage stores a Step Functions task token and waits; whoever sees the HyperPod cluster reach
``InService`` or ``Failed`` first (the EventBridge "SageMaker HyperPod Cluster State Change" event
through :func:`instantstart.clusters.reconcile.on_hyperpod_state_change`, or the step itself when
it re-checks after storing the token) sends the token with :func:`complete_task`. Both paths record
what they saw with :func:`observe`. SageMaker API:
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeCluster.html
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.models.cluster import HyperPodView, InstanceGroupRequest, InstanceGroupView
from instantstart.models.common import CapacityType, StageName
from instantstart.models.resources import HyperPodResources
from instantstart.runtime import Runtime

TERMINAL_STATUSES = ("InService", "Failed")
"""HyperPod ``ClusterStatus`` values that end the wait."""

_STALE_TOKEN_ERRORS = ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist")


def describe(sm: Any, name: str) -> dict[str, Any] | None:
    """SageMaker ``DescribeCluster`` of ``name``, or None when it does not exist."""
    try:
        return dict(sm.describe_cluster(ClusterName=name))
    except ClientError as exc:
        if error_code(exc) in ("ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
            return None
        raise


def observe(
    rt: Runtime, tag: str, generation: int, found: dict[str, Any], requested: list[InstanceGroupRequest]
) -> None:
    """Record an observation of the HyperPod cluster (a DescribeCluster answer or a state-change event detail).

    One recorder for the poll path and the event path: the cluster's ``hyperPod`` view (status, instance
    groups with target/current counts and the requested capacity type) and the stage's observed status.
    """
    capacity = {g.instance_group_name: g.capacity_type for g in requested}
    view = HyperPodView(
        cluster_name=found["ClusterName"],
        cluster_arn=found["ClusterArn"],
        status=found["ClusterStatus"],
        instance_groups=[
            InstanceGroupView(
                instance_group_name=g["InstanceGroupName"],
                instance_type=g.get("InstanceType", ""),
                instance_count=g.get("TargetCount", 0),
                current_count=g.get("CurrentCount", 0),
                status=g.get("Status"),
                capacity_type=capacity.get(g["InstanceGroupName"], CapacityType.ON_DEMAND),
            )
            for g in found.get("InstanceGroups", [])
        ],
    )
    rt.store.record_observations(tag, now=records.now(), hyper_pod=view)
    records.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.HYPERPOD,
        resources=HyperPodResources(hyper_pod_cluster_arn=found["ClusterArn"]),
        observed_status=f"HyperPod {found['ClusterStatus']}",
    )


def wait_with_token(rt: Runtime, tag: str, generation: int, task_token: str) -> None:
    """Store the task token the ``hyperpod`` stage waits on (before anything can complete it)."""
    rt.store.set_task_token(tag, generation, StageName.HYPERPOD, task_token)


def complete_task(rt: Runtime, task_token: str, status: str, failure_message: str | None = None) -> None:
    """``SendTaskSuccess`` for InService, ``SendTaskFailure`` (``HyperPodClusterFailed``, message verbatim) for Failed.

    A token that was already used or timed out (``TaskTimedOut``, ``InvalidToken``, ``TaskDoesNotExist``)
    is ignored: the poll fallback owns the stage then.
    """
    sfn = rt.client("stepfunctions")
    try:
        if status == "InService":
            sfn.send_task_success(taskToken=task_token, output='{"clusterStatus": "InService"}')
        else:
            sfn.send_task_failure(
                taskToken=task_token,
                error="HyperPodClusterFailed",
                cause=str(failure_message or "HyperPod cluster creation failed")[:32000],
            )
    except ClientError as exc:
        if error_code(exc) not in _STALE_TOKEN_ERRORS:
            raise


def resume_waiting_stage(rt: Runtime, tag: str, generation: int, status: str, failure_message: str | None) -> bool:
    """Complete the ``hyperpod`` stage's wait when ``status`` is terminal and a token is stored.

    Returns True when a token was sent.
    """
    stage = rt.store.get_stage(tag, generation, StageName.HYPERPOD)
    if status not in TERMINAL_STATUSES or stage is None or not stage.task_token:
        return False
    complete_task(rt, stage.task_token, status, failure_message)
    return True
