"""HyperPod managed Karpenter (``AutoScaling``) in the sandbox.

CreateCluster/UpdateCluster with ``AutoScaling {Mode: Enable, AutoScalerType: Karpenter}`` need a
``ClusterRole`` (in the request or already on the cluster) and continuous provisioning: otherwise a
``ValidationException`` (AWS documents the ClusterRole requirement; continuous mode is the harsher
reading). Once enabled the cluster's Kubernetes API serves ``NodePool`` (karpenter.sh/v1) and
``HyperpodNodeClass`` (karpenter.sagemaker.amazonaws.com/v1) and a
:class:`~instantstart_sandbox.kube.karpenter.NodePoolController` scales the referenced instance groups
(from 0 for Pending pods, back to 0 after consolidation). DescribeCluster reports ``AutoScaling`` with
its ``Status``. ``Mode: Disable`` stops the controller.

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterAutoScalingConfig.html
"""

from __future__ import annotations

import logging
from typing import Any

from instantstart_sandbox.aws.hyperpod import HpCluster, HyperPodEmulator
from instantstart_sandbox.aws.hyperpod_events import ClusterEvent
from instantstart_sandbox.aws.kubetypes import KubeApiServerLike
from instantstart_sandbox.aws.protocol import AwsError, AwsRequest
from instantstart_sandbox.kube.karpenter import NodePoolController, karpenter_crds

log = logging.getLogger(__name__)


def _enabled(params: dict[str, Any]) -> bool:
    return (params.get("AutoScaling") or {}).get("Mode") == "Enable"


class HyperPodAutoScaling:
    """Managed Karpenter of HyperPod clusters.

    Args:
        hyperpod: the HyperPod emulator.
        kube: the sandbox Kubernetes API server.
    """

    def __init__(self, hyperpod: HyperPodEmulator, kube: KubeApiServerLike) -> None:
        self.hp = hyperpod
        self.kube = kube
        self.controllers: dict[str, NodePoolController] = {}
        """HyperPod cluster ARN -> its running NodePool controller."""

    def validate(self, params: dict[str, Any], cluster: HpCluster | None) -> None:
        """Refuse enabling Karpenter without a ClusterRole or without continuous provisioning.

        Raises:
            AwsError: ValidationException.
        """
        if not _enabled(params):
            return
        role = params.get("ClusterRole") or (cluster.request.get("ClusterRole") if cluster is not None else None)
        if not role:
            raise AwsError(
                "ValidationException",
                "ClusterRole is required when AutoScaling is enabled: HyperPod uses it to scale instance groups "
                "on behalf of Karpenter.",
            )
        continuous = cluster.continuous if cluster is not None else params.get("NodeProvisioningMode") == "Continuous"
        if not continuous:
            raise AwsError(
                "ValidationException",
                "AutoScaling with Karpenter requires NodeProvisioningMode Continuous.",
            )

    def after_create(self, req: AwsRequest, result: Any) -> None:
        """CreateCluster accepted: start Karpenter when enabled."""
        if _enabled(req.params) and isinstance(result, dict) and result.get("ClusterArn"):
            self._start(self.hp._find(str(result["ClusterArn"])))

    def after_update(self, req: AwsRequest, result: Any) -> None:
        """UpdateCluster accepted: record AutoScaling / ClusterRole; start or stop Karpenter."""
        cluster = self.hp._find(str(req.params["ClusterName"]))
        with self.hp._lock:
            for key in ("AutoScaling", "ClusterRole"):
                if req.params.get(key) is not None:
                    cluster.request[key] = req.params[key]
        if "AutoScaling" not in req.params:
            return
        if _enabled(req.params):
            self._start(cluster)
        else:
            controller = self.controllers.pop(cluster.arn, None)
            if controller is not None:
                controller.stop()

    def _start(self, cluster: HpCluster) -> None:
        if cluster.arn in self.controllers or not cluster.eks_name:
            return
        kube_cluster = self.kube.cluster(cluster.eks_name)
        for crd in karpenter_crds():
            try:
                kube_cluster.apply(crd, field_manager="sagemaker-hyperpod")
            except Exception:
                log.warning("could not install %s", crd["metadata"]["name"], exc_info=True)
                return
        arn = cluster.arn
        self.controllers[arn] = NodePoolController(
            kube_cluster,
            self.hp.clock,
            lambda group, n: self._scale_up(arn, group, n),
            lambda node: self._remove(arn, node),
        )

    def _scale_up(self, arn: str, group_name: str, count: int) -> None:
        events: list[ClusterEvent] = []
        with self.hp._lock:
            cluster = self.hp._clusters.get(arn)
            group = cluster.groups.get(group_name) if cluster is not None else None
            if cluster is None or group is None:
                return
            previous = group.target
            group.spec["InstanceCount"] = previous + count
            self.hp._start_scaling(cluster, [(group, previous)], events)
        self.hp._publish(events)
        self.hp._ensure_launching(cluster, group_name)

    def _remove(self, arn: str, node_name: str) -> None:
        events: list[ClusterEvent] = []
        with self.hp._lock:
            cluster = self.hp._clusters.get(arn)
            if cluster is None:
                return
            found = [(g, n) for g in cluster.groups.values() for n in g.nodes if n.node_name == node_name]
            if not found or found[0][1].status != "Running":
                return
            group, node = found[0]
            previous = group.target
            group.nodes.remove(node)
            group.spec["InstanceCount"] = max(0, previous - 1)
            self.hp._start_scaling(cluster, [(group, previous)], events)
            self.hp._event(
                cluster,
                events,
                "Instance",
                f"Instance {node.instance_id} removed by Karpenter consolidation",
                group=group.name,
                instance_id=node.instance_id,
                metadata={"Instance": {"NodeLogicalId": node.logical_id}},
            )
        self.hp._publish(events)
        self.hp._deregister_node(cluster, node)
        self.hp._ensure_launching(cluster, group.name)  # closes the scaling operation at target
