"""EventBridge Scheduler handler: the scheduled reconciliation sweep over every cluster
(:func:`instantstart.clusters.sweep.run_sweep`).

The schedule's ``Input`` is a constant ``{"source": "instantstart.schedule", ...}`` (``events/scheduler_reconcile_sweep
.json``); the payload is not read beyond logging it: every invocation sweeps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from instantstart.clusters.sweep import run_sweep
from instantstart.config import SWEEP_SETTINGS
from instantstart.runtime import Runtime

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
RUNTIME = Runtime.from_env(SWEEP_SETTINGS)


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Sweep until the last cluster or until the invocation's time is nearly spent; answers the sweep's summary."""
    summary = run_sweep(RUNTIME, remaining_seconds=lambda: context.get_remaining_time_in_millis() / 1000).to_api()
    logger.info("reconciliation sweep", extra={"input": event, **summary})
    return summary
