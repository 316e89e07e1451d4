"""Events the control plane publishes on its own EventBridge bus for users' automation.

``source: instantstart``; detail-types ``Operation State Change`` and ``Stage State Change``.
Calls EventBridge ``PutEvents`` (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html).
Publishing is best effort: a failed publish is logged and never fails the workflow.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from instantstart.runtime import Runtime

SOURCE = "instantstart"
logger = logging.getLogger(__name__)


def publish(rt: Runtime, detail_type: str, detail: dict[str, Any]) -> None:
    """Put one event on the control plane's bus (best effort)."""
    try:
        out = rt.client("events").put_events(
            Entries=[
                {
                    "Source": SOURCE,
                    "DetailType": detail_type,
                    "Detail": json.dumps(detail, default=str),
                    "EventBusName": rt.settings.EVENT_BUS_NAME,
                }
            ]
        )
        if out.get("FailedEntryCount"):
            logger.warning("event not published: %s", out["Entries"])
    except Exception:
        logger.exception("event not published: %s", detail_type)
