"""Reconciliation on AWS events (EventBridge): completes waiting stages and refreshes observed state."""

from __future__ import annotations

import logging
from typing import Any

from instantstart.clusters import provision
from instantstart.models.common import StageName
from instantstart.naming import tag_from_hyperpod_cluster_name
from instantstart.runtime import Runtime

logger = logging.getLogger(__name__)

TERMINAL_HYPERPOD_STATUSES = ("InService", "Failed")


def on_hyperpod_state_change(rt: Runtime, detail: dict[str, Any]) -> dict[str, Any]:
    """Handle a "SageMaker HyperPod Cluster State Change" event.

    Records the observed status; on InService/Failed sends the HyperPod stage's stored task token
    (``SendTaskSuccess``/``SendTaskFailure``), so the waiting execution continues at once.
    Events about clusters this control plane did not create are ignored.

    Returns ``{"clusterTag", "status", "action"}`` where action is ``ignored``, ``recorded`` or ``resumed``.
    """
    name = str(detail.get("ClusterName", ""))
    status = str(detail.get("ClusterStatus", ""))
    tag = tag_from_hyperpod_cluster_name(name)
    cluster = rt.store.get_cluster(tag) if tag else None
    if not tag or not cluster:
        return {"clusterTag": tag, "status": status, "action": "ignored"}
    generation = int(cluster["generation"])
    if detail.get("ClusterArn") and detail.get("InstanceGroups") is not None:
        provision._record_hyperpod(
            rt,
            tag,
            generation,
            {**detail, "ClusterName": name, "ClusterStatus": status},
            cluster.get("request", {}).get("instanceGroups", []),
        )
    stage = rt.store.get_stage(tag, generation, StageName.HYPERPOD) or {}
    token = stage.get("taskToken")
    if status not in TERMINAL_HYPERPOD_STATUSES or not token:
        return {"clusterTag": tag, "status": status, "action": "recorded"}
    provision.complete_hyperpod_task(rt, token, {**detail, "ClusterStatus": status})
    logger.info("resumed HyperPod stage of %s on %s", tag, status)
    return {"clusterTag": tag, "status": status, "action": "resumed"}
