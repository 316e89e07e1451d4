"""The update workflow's steps of HyperPod's own cluster operations: software updates and deep health checks.

``UPDATE_CLUSTER_SOFTWARE``: :func:`apply_software_update` calls SageMaker ``UpdateClusterSoftware`` once
(:func:`software_update_params`), then :func:`check_software_update` waits until ``DescribeCluster`` reports the
update done. ``START_CLUSTER_HEALTH_CHECK``: :func:`apply_health_check` calls ``StartClusterHealthCheck`` once and
records the DeepHealthCheck operation it started, then :func:`check_health_check` waits for that operation to end
(``DescribeClusterOperation``; a node that failed a check fails the operation with HyperPod's failure message).
:data:`CHANGES` hands them to the update workflow (:mod:`instantstart.clusters.changes`). The API side that starts
these operations is :mod:`instantstart.clusters.hyperpod_operations`, from which every public name here is
importable too.
"""

from __future__ import annotations

from typing import Any

from instantstart.capacity import groups as group_rules
from instantstart.clusters import changes, records
from instantstart.clusters.events_feed import event_failure_message
from instantstart.clusters.node_action_steps import record_result
from instantstart.errors import StageFailed
from instantstart.models.common import OperationType
from instantstart.models.hyperpod_operations import (
    HealthCheckRequest,
    HyperPodOperationStatus,
    HyperPodOperationType,
    SoftwareUpdateRequest,
)
from instantstart.models.nodes import NodeFailure
from instantstart.models.operation import OperationProgress
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime

# -- software update ------------------------------------------------------------------------------
SOFTWARE_UPDATE_RUNNING = ("Pending", "InProgress", "RollbackInProgress")
"""``SoftwareUpdateStatus`` values of an update that has started and not ended (botocore model)."""


def software_update_params(name: str, request: SoftwareUpdateRequest) -> dict[str, Any]:
    """The ``UpdateClusterSoftware`` request of HyperPod cluster ``name`` for ``request`` (camelCase -> AWS shapes)."""
    params: dict[str, Any] = {"ClusterName": name}
    if request.instance_group_names:
        params["InstanceGroups"] = [{"InstanceGroupName": g} for g in request.instance_group_names]
    if request.image_id:
        params["ImageId"] = request.image_id
    config = request.deployment_config
    if config is not None:
        deployment: dict[str, Any] = {}
        if config.rolling_update_policy is not None:
            policy = config.rolling_update_policy
            rolling: dict[str, Any] = {
                "MaximumBatchSize": {
                    "Type": policy.maximum_batch_size.type.value,
                    "Value": policy.maximum_batch_size.value,
                }
            }
            if policy.rollback_maximum_batch_size is not None:
                rolling["RollbackMaximumBatchSize"] = {
                    "Type": policy.rollback_maximum_batch_size.type.value,
                    "Value": policy.rollback_maximum_batch_size.value,
                }
            deployment["RollingUpdatePolicy"] = rolling
        if config.wait_interval_in_seconds is not None:
            deployment["WaitIntervalInSeconds"] = config.wait_interval_in_seconds
        if config.auto_rollback_alarm_names:
            deployment["AutoRollbackConfiguration"] = [{"AlarmName": a} for a in config.auto_rollback_alarm_names]
        if deployment:
            params["DeploymentConfig"] = deployment
    return params


def _describe(sm: Any, name: str) -> dict[str, Any]:
    found = dict(sm.describe_cluster(ClusterName=name))
    if found.get("ClusterStatus") == "Failed":
        raise StageFailed("HyperPodClusterFailed", str(found.get("FailureMessage") or f"{name} is Failed"))
    return found


def _updating(found: dict[str, Any], names: list[str]) -> bool:
    """Whether DescribeCluster shows a software update under way on the cluster or one of ``names``."""
    if found.get("ClusterStatus") == "SystemUpdating":
        return True
    for group in found.get("InstanceGroups") or []:
        if group.get("InstanceGroupName") in names and (
            group.get("Status") == "SystemUpdating" or group.get("SoftwareUpdateStatus") in SOFTWARE_UPDATE_RUNNING
        ):
            return True
    return False


def apply_software_update(rt: Runtime, p: StepPayload) -> StepResult:
    """Call ``UpdateClusterSoftware`` once, recording on the operation that it did (and which groups it updates).

    The API has no ClientToken: the step marks the operation before calling; a redelivered task that finds the
    mark and DescribeCluster already showing the update under way calls nothing.

    Raises:
        StageFailed: the HyperPod cluster is Failed. AWS errors (e.g. ``ValidationException``: the cluster is not
            InService) leave named by their code and fail the operation verbatim.
    """
    op, request = changes.operation_change(rt, p, SoftwareUpdateRequest)
    result = op.result or OperationProgress()
    if result.called:
        return StepResult(status="UpdateClusterSoftware already called")
    sm = rt.client("sagemaker")
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    found = _describe(sm, name)
    names = list(request.instance_group_names or [str(g["InstanceGroupName"]) for g in found["InstanceGroups"]])
    if result.calling and _updating(found, names):
        record_result(rt, op, OperationProgress(called=True, updating_seen=True))
        return StepResult(status="UpdateClusterSoftware already under way")
    record_result(rt, op, OperationProgress(calling=True, groups=names))
    sm.update_cluster_software(**software_update_params(name, request))
    seen = _updating(_describe(sm, name), names)
    record_result(rt, op, OperationProgress(called=True, updating_seen=seen, observed="UpdateClusterSoftware accepted"))
    return StepResult(status="UpdateClusterSoftware accepted")


def check_software_update(rt: Runtime, p: StepPayload) -> PollResult:
    """One round of the wait of a software update (``DescribeCluster``).

    Done when the update was seen under way (cluster or group ``SystemUpdating``, or a group's
    ``SoftwareUpdateStatus`` Pending/InProgress) and now the HyperPod cluster and every updated group are
    InService, each group's ``SoftwareUpdateStatus`` (when reported) is ``Succeeded``, its ``CurrentImageId``
    equals its ``DesiredImageId`` (and the requested AMI, when one was named). AWS does not say how soon after
    the call DescribeCluster shows the update, so an InService answer before the update was seen is not taken
    as done (the harsher reading; a ``Succeeded`` left over from an earlier update would otherwise end the wait).

    Raises:
        StageFailed: ``SoftwareUpdateFailed`` / ``SoftwareUpdateRolledBack`` (the group's SoftwareUpdateStatus
            Failed / RollbackComplete, with the cluster's FailureMessage verbatim when there is one), a group
            vanished, or the cluster Failed.
    """
    op, request = changes.operation_change(rt, p, SoftwareUpdateRequest)
    result = op.result or OperationProgress()
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    found = _describe(rt.client("sagemaker"), name)
    names = list(result.groups or request.instance_group_names or [])
    seen = bool(result.updating_seen) or _updating(found, names)
    waiting: list[str] = []
    if found.get("ClusterStatus") != "InService":
        waiting.append(f"{name} {found.get('ClusterStatus')}")
    reason = f": {found['FailureMessage']}" if found.get("FailureMessage") else ""
    for group_name in names:
        group = group_rules.find_group(found.get("InstanceGroups", []), group_name)
        if group is None:
            raise StageFailed("InstanceGroupNotFound", f"instance group {group_name} no longer exists in {name}")
        update = group.get("SoftwareUpdateStatus")
        if update == "Failed":
            raise StageFailed("SoftwareUpdateFailed", f"instance group {group_name}: software update Failed{reason}")
        if update == "RollbackComplete":
            raise StageFailed(
                "SoftwareUpdateRolledBack", f"instance group {group_name}: software update rolled back{reason}"
            )
        current, desired = group.get("CurrentImageId"), group.get("DesiredImageId")
        wanted = request.image_id if request.image_id and request.image_id != "default" else None
        if group.get("Status") != "InService" or update not in (None, "Succeeded"):
            waiting.append(f"{group_name} {group.get('Status')}, software update {update or 'not reported'}")
        elif current and desired and current != desired:
            waiting.append(f"{group_name} image {current}, desired {desired}")
        elif wanted and current and current != wanted:
            waiting.append(f"{group_name} image {current}, requested {wanted}")
    if not seen:
        waiting.append("the update is not seen under way yet")
    observed = "; ".join(waiting) if waiting else f"{name} InService, software update done"
    record_result(rt, op, OperationProgress(updating_seen=seen, observed=observed[:1024]))
    return PollResult(done=not waiting, status=observed[:256])


# -- deep health checks ---------------------------------------------------------------------------
def _health_check_configs(request: HealthCheckRequest) -> list[dict[str, Any]]:
    configs = []
    for group in request.instance_groups:
        config: dict[str, Any] = {
            "InstanceGroupName": group.instance_group_name,
            "DeepHealthChecks": [c.value for c in group.deep_health_checks],
        }
        if group.instance_ids:
            config["InstanceIds"] = list(group.instance_ids)
        configs.append(config)
    return configs


def _newest_health_check_id(sm: Any, name: str) -> str:
    """The id of HyperPod cluster ``name``'s newest DeepHealthCheck operation ('' when there is none)."""
    out = sm.list_cluster_operations(
        ClusterName=name,
        Type=HyperPodOperationType.DEEP_HEALTH_CHECK.value,
        SortBy="CreationTime",
        SortOrder="Descending",
        MaxResults=1,
    )
    found = out.get("ClusterOperationSummaries") or []
    return str(found[0].get("OperationId") or "") if found else ""


def apply_health_check(rt: Runtime, p: StepPayload) -> StepResult:
    """Call ``StartClusterHealthCheck`` once and record the DeepHealthCheck operation it started.

    The API has no ClientToken and answers no operation id: the step records the newest DeepHealthCheck
    operation before the call (``ListClusterOperations``); the one listed after it that differs is this call's.
    A redelivered task that finds a newer operation than the recorded one calls nothing.

    Raises:
        AWS errors leave named by their code (``ValidationException``: a node busy, the cluster not InService)
        and fail the operation verbatim.
    """
    op, request = changes.operation_change(rt, p, HealthCheckRequest)
    result = op.result or OperationProgress()
    if result.hyper_pod_operation_id:
        return StepResult(status=f"DeepHealthCheck {result.hyper_pod_operation_id} already started")
    sm = rt.client("sagemaker")
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    newest = _newest_health_check_id(sm, name)
    if result.previous_health_check is not None:
        if newest and newest != result.previous_health_check:
            record_result(rt, op, OperationProgress(hyper_pod_operation_id=newest))
            return StepResult(status=f"DeepHealthCheck {newest} already started")
    else:
        result = record_result(rt, op, OperationProgress(previous_health_check=newest))
    sm.start_cluster_health_check(ClusterName=name, DeepHealthCheckConfigurations=_health_check_configs(request))
    started = _newest_health_check_id(sm, name)
    if started and started != result.previous_health_check:
        record_result(
            rt, op, OperationProgress(hyper_pod_operation_id=started, observed=f"DeepHealthCheck {started} InProgress")
        )
        return StepResult(status=f"DeepHealthCheck {started} started")
    return StepResult(status="StartClusterHealthCheck accepted; its operation is not listed yet")


def _health_check_failures(sm: Any, name: str, operation_id: str) -> list[NodeFailure]:
    """Nodes whose checks failed in HyperPod operation ``operation_id``: its Error-level cluster events
    (``ListClusterEvents`` with ``OperationId``, oldest first), each with the event's FailureMessage
    (``DescribeClusterEvent``) or, without one, its description, verbatim."""
    failures: list[NodeFailure] = []
    params: dict[str, Any] = {
        "ClusterName": name,
        "OperationId": operation_id,
        "SortBy": "EventTime",
        "SortOrder": "Ascending",
        "MaxResults": 100,
    }
    while True:
        out = sm.list_cluster_events(**params)
        for event in out.get("Events") or []:
            if event.get("EventLevel") != "Error":
                continue
            message = event_failure_message(sm, name, str(event["EventId"])) or str(event.get("Description") or "")
            failures.append(
                NodeFailure(node_id=str(event.get("InstanceId") or ""), code="DeepHealthCheckFailed", message=message)
            )
        if not out.get("NextToken"):
            return failures
        params["NextToken"] = out["NextToken"]


def check_health_check(rt: Runtime, p: StepPayload) -> PollResult:
    """One round of the wait of deep health checks: HyperPod's DeepHealthCheck operation (``DescribeClusterOperation``).

    Done when the operation is ``Done`` and no node failed. A node that failed (an Error-level event of the
    operation) fails this operation: every failed node is listed in ``result.failed`` and the error is the first
    one's, HyperPod's FailureMessage verbatim. HyperPod's ``Done`` alone does not say whether the checks passed,
    so the events decide (the harsher reading).

    Raises:
        StageFailed: ``DeepHealthCheckFailed`` (a node failed), ``HyperPodOperationSuperseded``.
    """
    op, _ = changes.operation_change(rt, p, HealthCheckRequest)
    result = op.result or OperationProgress()
    sm = rt.client("sagemaker")
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    operation_id = result.hyper_pod_operation_id
    if not operation_id:
        newest = _newest_health_check_id(sm, name)
        if not newest or newest == result.previous_health_check:
            record_result(rt, op, OperationProgress(observed="DeepHealthCheck operation not listed yet"))
            return PollResult(done=False, status="DeepHealthCheck operation not listed yet")
        operation_id = newest
        record_result(rt, op, OperationProgress(hyper_pod_operation_id=operation_id))
    status = str(sm.describe_cluster_operation(ClusterName=name, OperationId=operation_id).get("Status"))
    if status == HyperPodOperationStatus.SUPERSEDED.value:
        raise StageFailed("HyperPodOperationSuperseded", f"DeepHealthCheck operation {operation_id} was Superseded")
    if status != HyperPodOperationStatus.DONE.value:
        record_result(rt, op, OperationProgress(observed=f"DeepHealthCheck {operation_id} {status}"))
        return PollResult(done=False, status=f"DeepHealthCheck {operation_id} {status}")
    failed = _health_check_failures(sm, name, operation_id)
    record_result(
        rt, op, OperationProgress(failed=failed, observed=f"DeepHealthCheck {operation_id} Done, {len(failed)} failed")
    )
    if failed:
        first = failed[0]
        raise StageFailed("DeepHealthCheckFailed", f"instance {first.node_id}: {first.message}")
    return PollResult(done=True, status=f"DeepHealthCheck {operation_id} Done")


CHANGES = {
    OperationType.UPDATE_CLUSTER_SOFTWARE: changes.ClusterChange(
        apply=apply_software_update, check=check_software_update
    ),
    OperationType.START_CLUSTER_HEALTH_CHECK: changes.ClusterChange(apply=apply_health_check, check=check_health_check),
}
"""The update workflow's handlers of software updates and deep health checks, by operation type."""
