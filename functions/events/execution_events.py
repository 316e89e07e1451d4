"""EventBridge handler: "Step Functions Execution Status Change" of a workflow that ended abnormally."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from instantstart.clusters.reconcile import on_execution_status_change, once
from instantstart.config import EVENT_SETTINGS
from instantstart.runtime import Runtime

logger = Logger()
RUNTIME = Runtime.from_env(EVENT_SETTINGS)
STATUS_CHANGE = "Step Functions Execution Status Change"


@logger.inject_lambda_context
@event_source(data_class=EventBridgeEvent)
def lambda_handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    """Reconcile the operation of an ABORTED, TIMED_OUT or FAILED execution, once per event id (others are ignored)."""
    if event.source != "aws.states" or event.detail_type != STATUS_CHANGE:
        return {"action": "ignored", "detailType": event.detail_type}
    result = once(RUNTIME, event.get_id, lambda: on_execution_status_change(RUNTIME, dict(event.detail))).to_api()
    logger.info("reconciled", extra=result)
    return result
