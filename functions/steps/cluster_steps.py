"""Step Functions task handler of the cluster workflows: one payload in, one step of the core library run."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from instantstart.config import STEP_SETTINGS
from instantstart.runtime import Runtime
from instantstart.steps import run_step

logger = Logger()
RUNTIME = Runtime.from_env(STEP_SETTINGS)


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Run ``event["action"]`` (see :data:`instantstart.steps.ACTIONS`) and return its small result."""
    logger.append_keys(
        clusterTag=event.get("clusterTag"), operationId=event.get("operationId"), action=event.get("action")
    )
    return run_step(RUNTIME, event)
