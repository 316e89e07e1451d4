"""EventBridge handler: "Step Functions Execution Status Change" of a workflow that ended abnormally.

The event is EventBridge's JSON as a dict (Powertools' ``EventBridgeEvent`` would import every data class of its
package at cold start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from instantstart.clusters.reconcile import on_execution_status_change, once
from instantstart.config import EVENT_SETTINGS
from instantstart.runtime import Runtime

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
RUNTIME = Runtime.from_env(EVENT_SETTINGS)
STATUS_CHANGE = "Step Functions Execution Status Change"


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Reconcile the operation of an ABORTED, TIMED_OUT or FAILED execution, once per event id (others are ignored)."""
    if event["source"] != "aws.states" or event["detail-type"] != STATUS_CHANGE:
        return {"action": "ignored", "detailType": event["detail-type"]}
    result = once(RUNTIME, event["id"], lambda: on_execution_status_change(RUNTIME, dict(event["detail"]))).to_api()
    logger.info("reconciled", extra=result)
    return result
