"""A small managed-Karpenter NodePool controller for HyperPod instance groups.

HyperPod's managed Karpenter serves two cluster-scoped kinds: ``NodePool`` (``karpenter.sh/v1``,
``spec.template.spec.nodeClassRef`` = {group ``karpenter.sagemaker.amazonaws.com``, kind
``HyperpodNodeClass``, name}) and ``HyperpodNodeClass`` (``karpenter.sagemaker.amazonaws.com/v1``,
``spec.instanceGroups``: at most 10 instance group names). :func:`karpenter_crds` are minimal
CustomResourceDefinitions for them (written for the sandbox: structural schemas that keep unknown
fields and enforce the documented limits).

:class:`NodePoolController` polls every :data:`INTERVAL_SECONDS` (simulated): each Pending pod the
scheduler marked ``Unschedulable`` asks for one more instance in the first instance group of a
NodePool's node class that its ``nodeSelector`` admits (``scale_up(group, 1)``); a node of a managed
group with no pods but DaemonSet pods for the NodePool's ``spec.disruption.consolidateAfter``
(default 0s; at least one poll) is removed (``remove_node(node_name)``), so the group returns to 0.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from instantstart_sandbox.clock import SimClock

log = logging.getLogger(__name__)
Obj = dict[str, Any]

INTERVAL_SECONDS = 15.0
"""Simulated seconds between controller passes."""
NODEPOOL = ("karpenter.sh/v1", "NodePool")
NODECLASS = ("karpenter.sagemaker.amazonaws.com/v1", "HyperpodNodeClass")
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
NODEPOOL_LABEL = "karpenter.sh/nodepool"


def _crd(group: str, kind: str, plural: str, spec_schema: Obj) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": spec_schema,
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                }
            ],
        },
    }


def karpenter_crds() -> list[Obj]:
    """CustomResourceDefinitions of ``NodePool`` (karpenter.sh/v1) and ``HyperpodNodeClass``."""
    node_class_spec: Obj = {
        "type": "object",
        "required": ["instanceGroups"],
        "properties": {"instanceGroups": {"type": "array", "maxItems": 10, "items": {"type": "string"}}},
        "x-kubernetes-preserve-unknown-fields": True,
    }
    node_pool_spec: Obj = {
        "type": "object",
        "required": ["template"],
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "template": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {
                    "spec": {
                        "type": "object",
                        "required": ["nodeClassRef"],
                        "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {
                            "nodeClassRef": {
                                "type": "object",
                                "required": ["group", "kind", "name"],
                                "properties": {
                                    "group": {"type": "string"},
                                    "kind": {"type": "string"},
                                    "name": {"type": "string"},
                                },
                            }
                        },
                    }
                },
            }
        },
    }
    return [
        _crd("karpenter.sh", "NodePool", "nodepools", node_pool_spec),
        _crd("karpenter.sagemaker.amazonaws.com", "HyperpodNodeClass", "hyperpodnodeclasses", node_class_spec),
    ]


def parse_duration(value: str | None) -> float | None:
    """Seconds of a Karpenter duration ("30s", "5m", "1h30m"); None for "Never"; 0 when absent."""
    if value is None or value == "":
        return 0.0
    if value == "Never":
        return None
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(h|m|s)", value):
        total += float(amount) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total


class NodePoolController:
    """Scales HyperPod instance groups referenced by NodePools from Pending pods, and consolidates empty nodes.

    Args:
        cluster: the emulated Kubernetes cluster (``KubeCluster``: ``list`` by apiVersion/kind).
        clock: the simulated clock driving the passes.
        scale_up: ``scale_up(instance_group, n)`` raises the group's target by n.
        remove_node: ``remove_node(node_name)`` removes the node's instance and lowers its group's target.
    """

    def __init__(
        self,
        cluster: Any,
        clock: SimClock,
        scale_up: Callable[[str, int], None],
        remove_node: Callable[[str], None],
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.scale_up = scale_up
        self.remove_node = remove_node
        self._asked: set[str] = set()  # uids of pending pods an instance was asked for
        self._empty_since: dict[str, float] = {}
        self._stopped = threading.Event()
        self.clock.call_later(INTERVAL_SECONDS, self._tick)

    def stop(self) -> None:
        """Stop after the current pass."""
        self._stopped.set()

    def _tick(self) -> None:
        if self._stopped.is_set():
            return
        try:
            self.reconcile()
        except Exception:
            log.debug("karpenter pass failed", exc_info=True)
        self.clock.call_later(INTERVAL_SECONDS, self._tick)

    def _managed(self) -> dict[str, Obj]:
        """Instance group name -> the NodePool whose node class lists it."""
        classes = {c["metadata"]["name"]: c for c in self.cluster.list(*NODECLASS)}
        out: dict[str, Obj] = {}
        for pool in self.cluster.list(*NODEPOOL):
            ref = ((pool.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeClassRef") or {}
            node_class = classes.get(ref.get("name", ""))
            if node_class is None or ref.get("kind") != NODECLASS[1]:
                continue
            for group in (node_class.get("spec") or {}).get("instanceGroups") or []:
                out.setdefault(str(group), pool)
        return out

    def reconcile(self) -> None:
        """One pass: ask for instances for unschedulable pods, remove nodes empty long enough."""
        managed = self._managed()
        pods = self.cluster.list("v1", "Pod")
        pending = [
            p
            for p in pods
            if (p.get("status") or {}).get("phase") == "Pending"
            and not (p.get("spec") or {}).get("nodeName")
            and any(
                c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                for c in (p.get("status") or {}).get("conditions") or []
            )
        ]
        self._asked &= {p["metadata"].get("uid", "") for p in pending}
        for pod in pending:
            uid = pod["metadata"].get("uid", "")
            if uid in self._asked:
                continue
            selector = (pod.get("spec") or {}).get("nodeSelector") or {}
            for group, pool in managed.items():
                if selector.get(GROUP_LABEL, group) != group:
                    continue
                pool_name = pool["metadata"]["name"]
                if selector.get(NODEPOOL_LABEL, pool_name) != pool_name:
                    continue
                self._asked.add(uid)
                self.scale_up(group, 1)
                break
        if pending:
            self._empty_since.clear()
            return
        now = self.clock.now()
        busy = {
            (p.get("spec") or {}).get("nodeName")
            for p in pods
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])
        }
        for node in self.cluster.list("v1", "Node"):
            name = node["metadata"]["name"]
            node_group = (node["metadata"].get("labels") or {}).get(GROUP_LABEL)
            if node_group not in managed or name in busy:
                self._empty_since.pop(name, None)
                continue
            disruption = (managed[node_group].get("spec") or {}).get("disruption") or {}
            after = parse_duration(disruption.get("consolidateAfter"))
            since = self._empty_since.setdefault(name, now)
            if after is not None and now > since and now - since >= after:
                self._empty_since.pop(name, None)
                self.remove_node(name)
