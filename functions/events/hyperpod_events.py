"""EventBridge handler of HyperPod events: state changes and cluster events wake waiting workflows (and recover
DEGRADED clusters); node health findings are recorded."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from instantstart.clusters.reconcile import (
    on_addon_health_change,
    on_cluster_event,
    on_hyperpod_state_change,
    on_node_health_event,
    once,
)
from instantstart.config import EVENT_SETTINGS
from instantstart.runtime import Runtime

logger = Logger()
RUNTIME = Runtime.from_env(EVENT_SETTINGS)
STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"
ADDON_RESTORED = "EKS Addon Health Restored"


@logger.inject_lambda_context
@event_source(data_class=EventBridgeEvent)
def lambda_handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    """Reconcile one event once per event id (a redelivery is a ``duplicate``); other detail-types are ignored."""
    detail = dict(event.detail)
    if event.source == "aws.eks" and event.detail_type == ADDON_RESTORED:
        result = once(RUNTIME, event.get_id, lambda: on_addon_health_change(RUNTIME, detail))
    elif event.source != "aws.sagemaker" or event.detail_type not in (STATE_CHANGE, NODE_HEALTH, CLUSTER_EVENT):
        return {"action": "ignored", "detailType": event.detail_type}
    elif event.detail_type == NODE_HEALTH:
        result = once(RUNTIME, event.get_id, lambda: on_node_health_event(RUNTIME, detail))
    elif event.detail_type == CLUSTER_EVENT:
        result = once(RUNTIME, event.get_id, lambda: on_cluster_event(RUNTIME, detail))
    else:
        result = once(RUNTIME, event.get_id, lambda: on_hyperpod_state_change(RUNTIME, detail, event_time=event.time))
    logger.info("reconciled", extra={"eventId": event.get_id, **result.to_api()})
    return result.to_api()
