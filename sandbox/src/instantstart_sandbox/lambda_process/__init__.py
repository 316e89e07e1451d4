"""The sandbox's ``process`` Lambda runtime: each execution environment a process running AWS's ``awslambdaric`` on the
artifacts ``sam build``'s layout holds (:mod:`.environments`, :mod:`.runtime_api`, :mod:`.bootstrap`)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from instantstart_sandbox import iam_audit
from instantstart_sandbox.lambda_process.environments import (
    ProcessSettings,
    configure,
    environment_of,
    pool_of,
    set_limits,
    stop_all,
)

__all__ = ["ProcessSettings", "configure", "environment_of", "invoke", "set_limits", "stop_all"]


def invoke(function: Any, event: Any) -> tuple[str, bool, str]:
    """Run an invocation of moto's ``function`` (a ``LambdaFunction``) in one of its process environments:
    ``(payload JSON, errored, logs)``, the contract of moto's ``_invoke_lambda``. The event goes to the runtime as the
    bytes moto received; faults of :data:`instantstart_sandbox.lambdas.FAULTS` apply as in the in-process runtime."""
    from instantstart_sandbox import lambdas

    name = function.function_name
    code = lambdas.REGISTRY.get(name)
    if code is None:
        return json.dumps({"errorType": "ResourceNotFoundException", "errorMessage": f"{name} has no code"}), True, ""
    if isinstance(event, bytes):
        body = event or b"{}"
    elif isinstance(event, str):
        body = (event or "{}").encode()
    else:
        body = json.dumps(event).encode()
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    started = time.monotonic()
    fault = lambdas.FAULTS.arm(name, parsed)
    request_id = str(uuid.uuid4())
    killed: dict[str, Any] | None = None
    calls = 0
    kind: str | None = None
    try:
        with pool_of(name, code, lambdas.environment_limit(name)).acquire() as environment:
            environment.fault = fault
            environment.label = iam_audit.current_label()
            try:
                payload, errored, kind = environment.invoke(body, function.function_arn, request_id)
                calls = environment.calls
            finally:
                environment.fault = None
                environment.label = None
        if kind is not None and fault is not None:
            killed = {"function": name, "event": lambdas.event_summary(parsed), "calls": calls}
            killed["errorType"] = fault.error_type
            if fault.kind == "crash":
                payload = json.dumps({**json.loads(payload), "errorType": fault.error_type}).encode()
    finally:
        if fault is not None:
            lambdas.FAULTS.disarm(fault, killed)
    killed_by = fault.kind if killed is not None and fault is not None else None
    lambdas.record_invocation(name, errored, time.monotonic() - started, calls, parsed, killed_by)
    return payload.decode(), errored, ""
