"""EventBridge handler of HyperPod events: state changes and cluster events wake waiting workflows (and recover
DEGRADED clusters); node health findings are recorded.

The event is EventBridge's JSON as a dict (Powertools' ``EventBridgeEvent`` would import every data class of its
package at cold start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from instantstart.clusters.reconcile import (
    on_addon_health_change,
    on_cluster_event,
    on_hyperpod_state_change,
    on_node_health_event,
    once,
)
from instantstart.config import EVENT_SETTINGS
from instantstart.runtime import Runtime

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
RUNTIME = Runtime.from_env(EVENT_SETTINGS)
STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"
ADDON_RESTORED = "EKS Addon Health Restored"


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Reconcile one event once per event id (a redelivery is a ``duplicate``); other detail-types are ignored."""
    detail = dict(event["detail"])
    if event["source"] == "aws.eks" and event["detail-type"] == ADDON_RESTORED:
        result = once(RUNTIME, event["id"], lambda: on_addon_health_change(RUNTIME, detail))
    elif event["source"] != "aws.sagemaker" or event["detail-type"] not in (STATE_CHANGE, NODE_HEALTH, CLUSTER_EVENT):
        return {"action": "ignored", "detailType": event["detail-type"]}
    elif event["detail-type"] == NODE_HEALTH:
        result = once(RUNTIME, event["id"], lambda: on_node_health_event(RUNTIME, detail))
    elif event["detail-type"] == CLUSTER_EVENT:
        result = once(RUNTIME, event["id"], lambda: on_cluster_event(RUNTIME, detail))
    else:
        result = once(RUNTIME, event["id"], lambda: on_hyperpod_state_change(RUNTIME, detail, event_time=event["time"]))
    logger.info("reconciled", extra={"eventId": event["id"], **result.to_api()})
    return result.to_api()
