"""HyperPod day-2 node operations on the simulated clock (continuous provisioning clusters).

- ``BatchAddClusterNodes``: raises each named group's target by ``IncrementTargetCountBy`` (a
  ``Scaling`` cluster operation) and the group's launch loop launches the new instances; the answer
  lists one ``NodeLogicalId`` per promised instance (``Pending``) and per-group ``Failed`` entries
  (``InstanceGroupNotFound``, ``InvalidInstanceGroupStatus``).
- ``BatchDeleteClusterNodes``: removes the instances at once, lowers their group's target, deletes the
  Kubernetes nodes; unknown ids are ``Failed`` (``NodeIdNotFound``).
- ``BatchRebootClusterNodes``: the node is labelled ``UnschedulablePendingReboot`` and goes NotReady
  (instance ``Pending``, message "Rebooting") for :data:`REBOOT_SECONDS`, then Ready/``Schedulable``
  and ``Running`` again, same instance id.
- ``BatchReplaceClusterNodes``: the node is labelled ``UnschedulablePendingReplacement``; after
  :data:`TERMINATE_SECONDS` the instance is gone (its Kubernetes node deleted) and a new instance id
  takes its place (``Pending``, then ``Running`` with a new Kubernetes node after the launch time).
- ``StartClusterHealthCheck``: a ``DeepHealthCheck`` cluster operation; each node of the chosen groups
  (or the listed ``InstanceIds``) is ``DeepHealthCheckInProgress`` (label
  ``deep-health-check-status=InProgress``, node ``Unschedulable``) for :data:`DEEP_HEALTH_CHECK_SECONDS`,
  then ``Passed``/``Schedulable``. A node whose check fails (``faults.fail_deep_health_check``) is
  ``Failed``/``UnschedulablePendingReplacement`` and replaced.
- Spot interruption (test hook :meth:`HyperPodNodeOperations.interrupt_spot_instance`): EC2 reclaims
  a Spot instance: Warn event, node ``UnschedulablePendingReplacement``, replaced like above. A replacement that
  finds no capacity (``FaultInjector.fail_hyperpod_capacity``) leaves the group short: the old instance goes and
  the group's launch loop retries, with an Error event carrying EC2's message each time, until capacity returns.

Per-call limits come from the botocore model (NodeIds: at most 25 for reboot/replace, 3000 for delete;
NodesToAdd: at most 5; DeepHealthCheckConfigurations: at most 99); more is a ``ValidationException``
in AWS's "1 validation error detected" wording. Each accepted node gets cluster events carrying the
operation id where one exists. These operations refuse clusters without continuous provisioning
(AWS documents BatchAddClusterNodes for continuous mode only; the sandbox applies the harsher reading
to reboot/replace/health checks as well, except BatchDeleteClusterNodes which works in both modes).

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_BatchAddClusterNodes.html,
API_BatchRebootClusterNodes.html, API_BatchReplaceClusterNodes.html, API_StartClusterHealthCheck.html.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import cache
from typing import Any

import botocore.session

from instantstart_sandbox.aws.hyperpod import INSTANCE_LAUNCH_SECONDS, HpCluster, HpGroup, HpNode, HyperPodEmulator
from instantstart_sandbox.aws.hyperpod_events import ClusterEvent, ClusterOperation
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest, RawResponse

REBOOT_SECONDS = 180.0
"""Simulated seconds a rebooting node is NotReady."""
TERMINATE_SECONDS = 60.0
"""Simulated seconds from a replacement decision until the old instance is terminated and the new one launches."""
DEEP_HEALTH_CHECK_SECONDS = 600.0
"""Simulated seconds an on-demand deep health check takes per node."""
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"

Handler = Callable[[AwsRequest, Callable[[], RawResponse]], Any]


@cache
def _limit(operation: str, member: str) -> int | None:
    """The ``max`` of list ``member`` of ``operation``'s input in the installed botocore SageMaker model (read once per
    operation and member: loading the model costs about 50 CPU-ms)."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model(operation).input_shape
    assert shape is not None
    limit = shape.members[member].metadata.get("max")
    return int(limit) if limit is not None else None


def check_max_items(operation: str, params: dict[str, Any], member: str) -> None:
    """Refuse a request whose list ``member`` is longer than the botocore model allows.

    Raises:
        AwsError: ValidationException in AWS's "1 validation error detected" wording.
    """
    limit = _limit(operation, member)
    items = params.get(member) or []
    if limit is not None and len(items) > limit:
        field = member[0].lower() + member[1:]
        raise AwsError(
            "ValidationException",
            f"1 validation error detected: Value '{items}' at '{field}' failed to satisfy constraint: "
            f"Member must have length less than or equal to {limit}",
        )


class HyperPodNodeOperations:
    """Batch node operations, on-demand deep health checks and Spot interruptions of the HyperPod emulator.

    Args:
        hyperpod: the emulator whose clusters these operations act on (shares its lock and clock).
    """

    def __init__(self, hyperpod: HyperPodEmulator) -> None:
        self.hp = hyperpod

    def handlers(self) -> dict[str, Handler]:
        """SageMaker operation name -> handler."""
        return {
            "BatchAddClusterNodes": self.batch_add_cluster_nodes,
            "BatchDeleteClusterNodes": self.batch_delete_cluster_nodes,
            "BatchRebootClusterNodes": self.batch_reboot_cluster_nodes,
            "BatchReplaceClusterNodes": self.batch_replace_cluster_nodes,
            "StartClusterHealthCheck": self.start_cluster_health_check,
        }

    # -- helpers ----------------------------------------------------------------------------------
    def _continuous(self, name: str, operation: str) -> HpCluster:
        cluster = self.hp._find(name)
        if not cluster.continuous:
            raise AwsError(
                "ValidationException",
                f"{operation} is supported only for clusters with NodeProvisioningMode Continuous; cluster "
                f"{cluster.name} does not use it",
            )
        if cluster.status != "InService":
            raise AwsError(
                "ValidationException",
                f"Cluster {cluster.name} is in {cluster.status} status; {operation} requires InService",
            )
        return cluster

    @staticmethod
    def _locate(cluster: HpCluster, node_id: str) -> tuple[HpGroup, HpNode] | None:
        for group in cluster.groups.values():
            for node in group.nodes:
                if node_id in (node.instance_id, node.logical_id):
                    return group, node
        return None

    def _relabel(
        self, cluster: HpCluster, node: HpNode, ready: bool | None = None, labels: dict[str, str] | None = None
    ) -> None:
        """Re-apply the node's Kubernetes object with ``labels`` (and Ready ``ready``); call without the lock."""
        kube = self.hp._kube(cluster)
        group = cluster.groups.get(node.group)
        if kube is None or group is None:
            return
        obj = self.hp._node_object(cluster, group, node)
        obj["metadata"]["labels"].update(labels or {})
        status = obj.pop("status")
        try:
            kube.apply(obj, field_manager="sagemaker")
        except Exception:  # noqa: BLE001 - the node may be gone already
            return
        if ready is not None:
            for condition in status["conditions"]:
                if condition["type"] == "Ready":
                    condition["status"] = "True" if ready else "False"
                    condition["reason"] = "KubeletReady" if ready else "KubeletNotReady"
                    condition["message"] = "kubelet is posting ready status" if ready else "node is rebooting"
            patch_status = getattr(kube, "patch_status", None)
            if patch_status is not None:
                try:
                    patch_status("v1", "Node", node.node_name, None, status, field_manager="sagemaker")
                except Exception:  # noqa: BLE001
                    return

    def _event(self, cluster: HpCluster, out: list[ClusterEvent], node: HpNode | None, text: str, **kw: Any) -> None:
        meta = {"Instance": {"NodeLogicalId": node.logical_id}} if node is not None else None
        self.hp._event(
            cluster,
            out,
            "Instance" if node is not None else "Cluster",
            text,
            group=node.group if node is not None else None,
            instance_id=node.instance_id if node is not None else None,
            metadata=kw.pop("metadata", meta),
            **kw,
        )

    def _operation(self, cluster: HpCluster, type_: str, **kw: Any) -> ClusterOperation:
        operation = ClusterOperation(cluster.arn, self.hp.clock.now(), [], type=type_, state="InProgress", **kw)
        cluster.operations.append(operation)
        return operation

    # -- BatchAddClusterNodes ---------------------------------------------------------------------
    def batch_add_cluster_nodes(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """BatchAddClusterNodes: raise group targets; the launch loops add the instances.

        Raises:
            AwsError: ValidationException (no continuous mode, cluster not InService, more than 5
            NodesToAdd); ResourceNotFound for an unknown cluster.
        """
        params = req.params
        check_max_items("BatchAddClusterNodes", params, "NodesToAdd")
        cluster = self._continuous(params["ClusterName"], "BatchAddClusterNodes")
        events: list[ClusterEvent] = []
        successful: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        started: list[str] = []
        with self.hp._lock:
            changes: list[tuple[HpGroup, int]] = []
            for spec in params.get("NodesToAdd") or []:
                name = spec["InstanceGroupName"]
                count = int(spec["IncrementTargetCountBy"])
                group = cluster.groups.get(name)
                error = None
                if group is None:
                    error = ("InstanceGroupNotFound", f"Instance group {name} does not exist in cluster {cluster.name}")
                elif group.status not in ("InService", "Creating"):
                    error = ("InvalidInstanceGroupStatus", f"Instance group {name} is in {group.status} status")
                if error is not None or group is None:
                    assert error is not None
                    failed.append(
                        {"InstanceGroupName": name, "ErrorCode": error[0], "FailedCount": count, "Message": error[1]}
                    )
                    continue
                previous = group.target
                group.spec["InstanceCount"] = previous + count
                ids = [str(uuid.uuid4()) for _ in range(count)]
                group.logical_ids.extend(ids)
                changes.append((group, previous))
                started.append(name)
                for logical_id in ids:
                    result: dict[str, Any] = {
                        "NodeLogicalId": logical_id,
                        "InstanceGroupName": name,
                        "Status": "Pending",
                    }
                    for key in ("AvailabilityZones", "InstanceTypes"):
                        if spec.get(key):
                            result[key] = list(spec[key])
                    successful.append(result)
            if changes:
                self.hp._start_scaling(cluster, changes, events)
        self.hp._publish(events)
        for name in started:
            self.hp._ensure_launching(cluster, name)
        return {"Successful": successful, "Failed": failed}

    # -- BatchDeleteClusterNodes ------------------------------------------------------------------
    def batch_delete_cluster_nodes(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """BatchDeleteClusterNodes: remove the instances now, lower their group's target, delete the Kubernetes nodes.

        Unknown ids are answered in ``Failed`` (``NodeIdNotFound``) / ``FailedNodeLogicalIds``.

        Raises:
            AwsError: ValidationException for more than 3000 NodeIds or 99 NodeLogicalIds.
        """
        params = req.params
        check_max_items("BatchDeleteClusterNodes", params, "NodeIds")
        check_max_items("BatchDeleteClusterNodes", params, "NodeLogicalIds")
        cluster = self.hp._find(params["ClusterName"])
        out: dict[str, list[Any]] = {"Successful": [], "Failed": []}
        removed: list[HpNode] = []
        events: list[ClusterEvent] = []
        with self.hp._lock:
            for key, ok_key, failed_key in (
                ("NodeIds", "Successful", "Failed"),
                ("NodeLogicalIds", "SuccessfulNodeLogicalIds", "FailedNodeLogicalIds"),
            ):
                id_field = "NodeId" if key == "NodeIds" else "NodeLogicalId"
                for node_id in params.get(key) or []:
                    found = self._locate(cluster, node_id)
                    if found is None:
                        out.setdefault(failed_key, []).append(
                            {
                                "Code": "NodeIdNotFound",
                                "Message": f"Node {node_id} not found in cluster {cluster.name}",
                                id_field: node_id,
                            }
                        )
                        continue
                    group, node = found
                    group.nodes.remove(node)
                    group.spec["InstanceCount"] = max(0, group.target - 1)
                    removed.append(node)
                    out.setdefault(ok_key, []).append(node_id)
                    if cluster.continuous:
                        text = f"Instance {node.instance_id} deleted by BatchDeleteClusterNodes"
                        self._event(cluster, events, node, text)
        self.hp._publish(events)
        for node in removed:
            self.hp._deregister_node(cluster, node)
        return out

    # -- reboot / replace -------------------------------------------------------------------------
    def _batch(
        self, req: AwsRequest, operation: str, act: Callable[[HpCluster, HpGroup, HpNode, list[ClusterEvent]], None]
    ) -> dict[str, Any]:
        params = req.params
        check_max_items(operation, params, "NodeIds")
        check_max_items(operation, params, "NodeLogicalIds")
        if not params.get("NodeIds") and not params.get("NodeLogicalIds"):
            raise AwsError("ValidationException", f"{operation} requires NodeIds or NodeLogicalIds")
        cluster = self._continuous(params["ClusterName"], operation)
        out: dict[str, list[Any]] = {}
        events: list[ClusterEvent] = []
        acted: list[tuple[HpGroup, HpNode]] = []
        with self.hp._lock:
            for key, ok_key, failed_key, id_field in (
                ("NodeIds", "Successful", "Failed", "NodeId"),
                ("NodeLogicalIds", "SuccessfulNodeLogicalIds", "FailedNodeLogicalIds", "NodeLogicalId"),
            ):
                for node_id in params.get(key) or []:
                    found = self._locate(cluster, node_id)
                    error = None
                    if found is None:
                        error = ("InstanceIdNotFound", f"Node {node_id} not found in cluster {cluster.name}")
                    elif found[1].status != "Running":
                        error = (
                            "InstanceIdInUse" if found[1].status_message else "InvalidInstanceStatus",
                            f"Node {node_id} is {found[1].status_message or found[1].status}; retry when it is Running",
                        )
                    if error is not None or found is None:
                        assert error is not None
                        out.setdefault(failed_key, []).append(
                            {id_field: node_id, "ErrorCode": error[0], "Message": error[1]}
                        )
                        continue
                    out.setdefault(ok_key, []).append(node_id)
                    acted.append(found)
            for group, node in acted:
                act(cluster, group, node, events)
        self.hp._publish(events)
        for _, node in acted:
            if node.status_message == "Rebooting":
                self._relabel(cluster, node, ready=False)
            else:
                self._relabel(cluster, node)
        return out

    def batch_reboot_cluster_nodes(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """BatchRebootClusterNodes: NotReady + ``UnschedulablePendingReboot`` for :data:`REBOOT_SECONDS`, then back.

        Raises:
            AwsError: ValidationException (more than 25 ids, no ids, no continuous mode, not InService).
        """
        return self._batch(req, "BatchRebootClusterNodes", self._start_reboot)

    def _start_reboot(self, cluster: HpCluster, group: HpGroup, node: HpNode, events: list[ClusterEvent]) -> None:
        node.status, node.status_message, node.health = "Pending", "Rebooting", "UnschedulablePendingReboot"
        self._event(cluster, events, node, f"Instance {node.instance_id} rebooting (BatchRebootClusterNodes)")
        self.hp.clock.call_later(REBOOT_SECONDS, lambda: self._rebooted(cluster, node))

    def _rebooted(self, cluster: HpCluster, node: HpNode) -> None:
        events: list[ClusterEvent] = []
        with self.hp._lock:
            if self._locate(cluster, node.instance_id) is None or node.status_message != "Rebooting":
                return
            node.status, node.status_message, node.health = "Running", "", "Schedulable"
            self._event(cluster, events, node, f"Instance {node.instance_id} rebooted and is Running")
        self.hp._publish(events)
        self._relabel(cluster, node, ready=True)

    def batch_replace_cluster_nodes(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """BatchReplaceClusterNodes: the instance is terminated and a new instance id takes its place.

        Raises:
            AwsError: ValidationException (more than 25 ids, no ids, no continuous mode, not InService).
        """
        return self._batch(
            req,
            "BatchReplaceClusterNodes",
            lambda cluster, group, node, events: self._start_replacement(
                cluster, node, events, "BatchReplaceClusterNodes"
            ),
        )

    def _start_replacement(
        self, cluster: HpCluster, node: HpNode, events: list[ClusterEvent], reason: str, level: str = "Info"
    ) -> None:
        """Mark ``node`` for replacement (lock held; relabel after releasing it); the swap follows later."""
        node.status_message, node.health = "Replacing", "UnschedulablePendingReplacement"
        self._event(cluster, events, node, f"Instance {node.instance_id} will be replaced ({reason})", level=level)
        self.hp.clock.call_later(TERMINATE_SECONDS, lambda: self._swap(cluster, node))

    def _swap(self, cluster: HpCluster, old: HpNode) -> None:
        from instantstart_sandbox.aws.hyperpod import _instance_type

        events: list[ClusterEvent] = []
        new: HpNode | None = None
        with self.hp._lock:
            found = self._locate(cluster, old.instance_id)
            if found is None or cluster.status == "Deleting":
                return
            group = found[0]
            zone, others = self.hp._zones(cluster.request, group.spec, group.nodes.index(old))
            failure = self.hp.faults.take_capacity_failure([_instance_type(group.spec)], zone, others)
            if failure is not None:  # no capacity for the replacement: the group runs short, the launch loop retries
                group.nodes.remove(old)
                self._event(cluster, events, old, f"Instance {old.instance_id} terminated; its replacement is pending")
            else:
                new = self.hp._new_node(cluster, group)
                new.logical_id = old.logical_id  # the logical node keeps its id; the instance is new
                new.subnet_id, new.zone, new.zone_id = old.subnet_id, old.zone, old.zone_id
                new.status = "Pending"
                group.nodes[group.nodes.index(old)] = new
                self._event(
                    cluster, events, old, f"Instance {old.instance_id} terminated; replaced by {new.instance_id}"
                )
                self._event(cluster, events, new, f"Instance {new.instance_id} launching to replace {old.instance_id}")
        self.hp._publish(events)
        self.hp._deregister_node(cluster, old)
        if new is None:
            self.hp._ensure_launching(cluster, group.name)
            return
        replacement = new
        self.hp.clock.call_later(INSTANCE_LAUNCH_SECONDS, lambda: self._replacement_up(cluster, replacement))

    def _replacement_up(self, cluster: HpCluster, node: HpNode) -> None:
        events: list[ClusterEvent] = []
        with self.hp._lock:
            if self._locate(cluster, node.instance_id) is None:
                return
            node.status = "Running"
            node.launch_time = self.hp.clock.now()
            self._event(
                cluster, events, node, f"Instance {node.instance_id} is Running and registered as {node.node_name}"
            )
        self.hp._register_node(cluster, node)
        self.hp._publish(events)

    # -- StartClusterHealthCheck ------------------------------------------------------------------
    def start_cluster_health_check(self, req: AwsRequest, forward: Callable[[], RawResponse]) -> Any:
        """StartClusterHealthCheck: a ``DeepHealthCheck`` operation over the chosen groups / instances.

        Raises:
            AwsError: ValidationException (unknown group or instance, more than 99 configurations, no
            continuous mode, cluster not InService); ResourceNotFound for an unknown cluster.
        """
        params = req.params
        check_max_items("StartClusterHealthCheck", params, "DeepHealthCheckConfigurations")
        cluster = self._continuous(params["ClusterName"], "StartClusterHealthCheck")
        configs = list(params.get("DeepHealthCheckConfigurations") or [])
        events: list[ClusterEvent] = []
        chosen: list[HpNode] = []
        with self.hp._lock:
            for config in configs:
                group = cluster.groups.get(config["InstanceGroupName"])
                if group is None:
                    raise AwsError(
                        "ValidationException",
                        f"Instance group {config['InstanceGroupName']} does not exist in cluster {cluster.name}",
                    )
                ids = config.get("InstanceIds")
                for instance_id in ids or []:
                    if not any(n.instance_id == instance_id for n in group.nodes):
                        raise AwsError(
                            "ValidationException",
                            f"Instance {instance_id} is not in instance group {group.name} of cluster {cluster.name}",
                        )
                busy = [n.instance_id for n in group.nodes if n.status_message and (not ids or n.instance_id in ids)]
                if busy:
                    raise AwsError("ValidationException", f"Instances {', '.join(busy)} have an operation in progress")
                chosen += [n for n in group.nodes if n.status == "Running" and (not ids or n.instance_id in ids)]
            operation = self._operation(cluster, "DeepHealthCheck", health_checks=configs)
            for node in chosen:
                node.status, node.status_message = "DeepHealthCheckInProgress", "DeepHealthCheck"
                node.health = "Unschedulable"
                self._event(
                    cluster,
                    events,
                    node,
                    f"Deep health checks started on instance {node.instance_id}",
                    operation_id=operation.operation_id,
                )
        self.hp._publish(events)
        for node in chosen:
            self._relabel(cluster, node, labels={DEEP_HEALTH_LABEL: "InProgress"})
        self.hp.clock.call_later(DEEP_HEALTH_CHECK_SECONDS, lambda: self._health_checked(cluster, operation, chosen))
        return {"ClusterArn": cluster.arn}

    def _health_checked(self, cluster: HpCluster, operation: ClusterOperation, nodes: list[HpNode]) -> None:
        events: list[ClusterEvent] = []
        results: list[tuple[HpNode, str]] = []
        with self.hp._lock:
            for node in nodes:
                if self._locate(cluster, node.instance_id) is None or node.status != "DeepHealthCheckInProgress":
                    continue
                node.status, node.status_message = "Running", ""
                if self.hp.faults.take_health_check_failure(node.instance_id):
                    self._event(
                        cluster,
                        events,
                        node,
                        f"Deep health checks failed on instance {node.instance_id}",
                        level="Error",
                        operation_id=operation.operation_id,
                        metadata={
                            "Instance": {
                                "NodeLogicalId": node.logical_id,
                                "FailureMessage": "InstanceStress: GPU stress test failed (DCGM diagnostic level 4)",
                            }
                        },
                    )
                    self._start_replacement(cluster, node, events, "deep health check failed", level="Error")
                    results.append((node, "Failed"))
                else:
                    node.health = "Schedulable"
                    self._event(
                        cluster,
                        events,
                        node,
                        f"Deep health checks passed on instance {node.instance_id}",
                        operation_id=operation.operation_id,
                    )
                    results.append((node, "Passed"))
            operation.state = "Done"
        self.hp._publish(events)
        for node, result in results:
            self._relabel(cluster, node, labels={DEEP_HEALTH_LABEL: result})

    # -- Spot interruption (test hook) ------------------------------------------------------------
    def interrupt_spot_instance(self, cluster_name_or_arn: str, instance_id: str | None = None) -> str:
        """Simulate EC2 reclaiming a Spot instance of the cluster: a Warn event, the node is replaced.

        ``instance_id=None`` picks the first Running instance of a group with ``CapacityRequirements.Spot``.
        Returns the interrupted instance id.

        Raises:
            AwsError: ResourceNotFound for an unknown cluster; ValidationException when the instance is
            not a Running Spot instance of the cluster.
        """
        cluster = self.hp._find(cluster_name_or_arn)
        events: list[ClusterEvent] = []
        with self.hp._lock:
            candidates = [
                n
                for g in cluster.groups.values()
                if "Spot" in (g.spec.get("CapacityRequirements") or {})
                for n in g.nodes
                if n.status == "Running" and not n.status_message and instance_id in (None, n.instance_id)
            ]
            if not candidates:
                raise AwsError("ValidationException", f"No Running Spot instance {instance_id or ''} in {cluster.name}")
            node = candidates[0]
            self._event(
                cluster,
                events,
                node,
                f"Spot instance {node.instance_id} interrupted: EC2 reclaimed the capacity",
                level="Warn",
                metadata={
                    "Instance": {
                        "NodeLogicalId": node.logical_id,
                        "FailureMessage": "Server.SpotInstanceTermination: Spot instance termination notice",
                    }
                },
            )
            self._start_replacement(cluster, node, events, "Spot interruption", level="Warn")
        self.hp._publish(events)
        self._relabel(cluster, node)
        return node.instance_id
