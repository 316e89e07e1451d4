"""EventBridge delivery to Lambda and Step Functions targets, and event emission for lifecycles.

moto 5.2.5's ``Rule.send_to_targets`` raises NotImplementedError for Lambda and Step Functions
targets, which also starves every other target of the rule. :func:`install` replaces it: Lambda
targets are invoked asynchronously through moto's Lambda backend ``invoke`` (the sandbox's Lambda
runtime runs the handler), Step Functions targets start an execution, and every other target goes
through moto's own code, one target at a time so one failure cannot starve the others.

:func:`put_event` is how the sandbox's own lifecycles emit AWS events: through moto's PutEvents, so
rules match exactly as for events a client puts.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_installed = False
_install_lock = threading.Lock()
_original_send_to_targets: Callable[..., None] | None = None


def _iso(value: Any) -> str:
    if isinstance(value, (int, float)):
        return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def target_payload(target: dict[str, Any], event: dict[str, Any]) -> Any:
    """The payload EventBridge delivers to ``target`` for ``event``.

    ``Input`` (constant JSON) wins over ``InputPath`` (a JSONPath into the event) over
    ``InputTransformer``; without any of them the whole event (with an ISO-8601 ``time``) is sent.
    """
    full = {
        "version": event.get("version", "0"),
        "id": event.get("id"),
        "detail-type": event.get("detail-type"),
        "source": event.get("source"),
        "account": event.get("account"),
        "time": _iso(event.get("time")),
        "region": event.get("region"),
        "resources": event.get("resources", []),
        "detail": event.get("detail", {}),
    }
    if target.get("Input"):
        return json.loads(target["Input"])
    if target.get("InputPath"):
        from jsonpath_ng.ext.parser import parse

        matches = parse(target["InputPath"]).find(full)
        return matches[0].value if matches else None
    transformer = target.get("InputTransformer")
    if transformer:
        from moto.events.utils import EventTemplateParser

        return EventTemplateParser.parse(
            input_template=transformer.get("InputTemplate"),
            input_paths_map=transformer.get("InputPathsMap", {}),
            event=full,  # type: ignore[arg-type]
        )
    return full


def invoke_lambda_target(account_id: str, region: str, function_arn: str, payload: Any) -> None:
    """Invoke a Lambda function asynchronously (invocation type ``Event``) through moto's backend."""
    from moto.awslambda.models import lambda_backends

    arn_parts = function_arn.split(":")
    region = arn_parts[3] if len(arn_parts) > 3 and arn_parts[3] else region
    account_id = arn_parts[4] if len(arn_parts) > 4 and arn_parts[4] else account_id
    qualifier = arn_parts[7] if len(arn_parts) > 7 else None
    name = arn_parts[6] if len(arn_parts) > 6 else function_arn
    lambda_backends[account_id][region].invoke(
        name, qualifier, json.dumps(payload), {"x-amz-invocation-type": "Event"}, {}
    )


def start_execution_target(account_id: str, region: str, state_machine_arn: str, payload: Any) -> None:
    """Start a Step Functions execution of ``state_machine_arn`` with ``payload`` as input."""
    from moto.stepfunctions.responses import get_backend

    arn_parts = state_machine_arn.split(":")
    region = arn_parts[3] if len(arn_parts) > 3 and arn_parts[3] else region
    account_id = arn_parts[4] if len(arn_parts) > 4 and arn_parts[4] else account_id
    get_backend(account_id, region).start_execution(state_machine_arn, str(uuid.uuid4()), json.dumps(payload))


def _in_background(fn: Callable[..., None], *args: Any) -> None:
    def run() -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("EventBridge target delivery failed: %s", args[2] if len(args) > 2 else args)

    threading.Thread(target=run, name="eventbridge-target", daemon=True).start()


def _send_to_targets(self: Any, original_event: dict[str, Any], transform_input: bool = True) -> None:
    if self.state not in ("ENABLED", "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS"):
        return
    if not self.event_pattern.matches_event(original_event):
        return
    assert _original_send_to_targets is not None
    for target in list(self.targets):
        arn = str(target.get("Arn", ""))
        service = arn.split(":")[2] if arn.count(":") >= 5 else ""
        try:
            if service == "lambda":
                payload = target_payload(target, original_event)
                _in_background(invoke_lambda_target, self.account_id, self.region_name, arn, payload)
            elif service == "states":
                payload = target_payload(target, original_event)
                _in_background(start_execution_target, self.account_id, self.region_name, arn, payload)
            else:
                single = copy.copy(self)
                single.targets = [target]
                _original_send_to_targets(single, original_event, transform_input)
        except Exception:
            log.exception("EventBridge target %s of rule %s failed", arn, self.name)


def install() -> None:
    """Patch moto's ``Rule.send_to_targets`` (idempotent)."""
    global _installed, _original_send_to_targets
    with _install_lock:
        if _installed:
            return
        from moto.events.models import Rule

        _original_send_to_targets = Rule.send_to_targets
        Rule.send_to_targets = _send_to_targets  # type: ignore[method-assign,assignment]
        _installed = True


def put_event(
    account_id: str,
    region: str,
    source: str,
    detail_type: str,
    detail: dict[str, Any],
    resources: list[str] | None = None,
    time: float | None = None,
    event_bus_name: str = "default",
) -> None:
    """Emit an AWS service event on ``event_bus_name`` through moto's PutEvents path.

    ``time`` is epoch seconds (the sandbox passes its simulated clock). Failures are logged, never
    raised: event delivery is best effort, as with AWS.
    """
    from moto.events.models import events_backends

    entry: dict[str, Any] = {
        "Source": source,
        "DetailType": detail_type,
        "Detail": json.dumps(detail, default=_json_default),
        "Resources": resources or [],
        "EventBusName": event_bus_name,
    }
    if time is not None:
        entry["Time"] = time
    try:
        events_backends[account_id][region].put_events([entry])
    except Exception:
        log.exception("emitting %s %s failed", source, detail_type)


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {type(value)!r}")
