"""Lambda without Docker: moto's runtime is replaced by an in-process import-and-call of the handler.

Each function has one execution environment (its invocations run one at a time, as in one Lambda
container); different functions run concurrently.

The deployer registers each function's local code directory and handler; moto keeps its own
``Invoke`` API, FunctionError header and logs. Handlers share one interpreter, so every handler
module name must be unique across function directories (a contract test checks it) and all
functions share one process environment (the deployer refuses conflicting variables).
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from instantstart_sandbox.clock import SimClock

from instantstart_sandbox import iam_audit

logger = logging.getLogger(__name__)


@dataclass
class LambdaCode:
    """Where a deployed function's code lives on this machine."""

    code_dir: Path
    handler: str
    timeout: int = 30
    memory_size: int = 512


@dataclass
class LambdaContext:
    """The Lambda context object handlers receive (what Powertools reads)."""

    function_name: str
    function_version: str = "$LATEST"
    invoked_function_arn: str = ""
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = ""
    timeout_seconds: int = 30
    _started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's timeout."""
        return max(0, int((self.timeout_seconds - (time.monotonic() - self._started)) * 1000))


REGISTRY: dict[str, LambdaCode] = {}
"""Function name -> local code, filled by the deployer."""

_import_lock = threading.Lock()
_function_locks: dict[str, threading.Lock] = {}
_function_locks_guard = threading.Lock()


def _function_lock(name: str) -> threading.Lock:
    """One execution environment per function: like a Lambda container, it runs one invocation at a time.

    Handlers keep per-invocation state in module globals (the Powertools resolver's current event,
    the logger's keys); real Lambda never runs two invocations in one environment. Different
    functions still run in parallel, so a function invoking another cannot deadlock.
    """
    with _function_locks_guard:
        return _function_locks.setdefault(name, threading.Lock())


_invocations: list[dict[str, Any]] = []
_invocations_lock = threading.Lock()


def invocations() -> list[dict[str, Any]]:
    """A copy of the invocation log: ``{"function", "errored", "seconds"}`` per call (for tests/benchmarks)."""
    with _invocations_lock:
        return list(_invocations)


def _load_handler(code: LambdaCode) -> Any:
    module_name, func_name = code.handler.rsplit(".", 1)
    with _import_lock:  # imports are not reentrant-safe across threads; calls run unlocked
        path = str(code.code_dir)
        if path not in sys.path:
            sys.path.insert(0, path)
        module = importlib.import_module(module_name)
    return getattr(module, func_name)


def invoke_in_process(function: Any, event: Any) -> tuple[str, bool, str]:
    """Run a deployed function's handler in this process: ``(payload JSON, errored, logs)``.

    The error payload has the Lambda shape ``{"errorType", "errorMessage", "stackTrace"}``.
    """
    name = function.function_name
    code = REGISTRY.get(name)
    if code is None:
        return (
            json.dumps({"errorType": "ResourceNotFoundException", "errorMessage": f"{name} has no local code"}),
            True,
            "",
        )
    if isinstance(event, str | bytes):
        event = json.loads(event or "{}")
    context = LambdaContext(
        function_name=name,
        invoked_function_arn=function.function_arn,
        memory_limit_in_mb=code.memory_size,
        timeout_seconds=code.timeout,
    )
    started = time.monotonic()
    errored = False
    try:
        handler = _load_handler(code)
        with _function_lock(name), iam_audit.acting_as(name):
            context._started = time.monotonic()
            result = handler(event, context)
        payload = json.dumps(result, default=str)
    except Exception as exc:
        errored = True
        payload = json.dumps(
            {
                "errorType": type(exc).__name__,
                "errorMessage": str(exc),
                "stackTrace": traceback.format_exception(exc)[-8:],
            }
        )
        logger.info(
            "lambda %s raised %s: %s",
            name,
            type(exc).__name__,
            exc,
            exc_info=logger.isEnabledFor(logging.DEBUG),
        )
    with _invocations_lock:
        _invocations.append({"function": name, "errored": errored, "seconds": time.monotonic() - started})
    return payload, errored, ""


def use_clock(clock: Callable[[], float] | None) -> None:
    """In-process functions read ``clock`` (simulated epoch seconds) as the time of day, None: the system clock.

    The core takes every record timestamp from one time source (``instantstart.models.common.set_clock``), and
    measures some waits between them (an add-on's grace after the nodes were Ready): on the simulated clock those
    run at the sandbox's pace, as the resources' lifecycles and the Step Functions waits do.
    """
    importlib.import_module("instantstart.models.common").set_clock(clock)


class _SdkTime:
    """Stands in for the ``time`` module in ``botocore.endpoint``, whose only use of it is the retry backoff sleep."""

    def __init__(self, sleep: Callable[[float], None]) -> None:
        self.sleep = sleep

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def sdk_backoff_on(clock: SimClock | None) -> None:
    """AWS SDK retry backoff in this process sleeps on ``clock`` (simulated seconds), None: in real seconds.

    botocore retries a throttled or failed call after a backoff of up to 20 s (standard mode, 5 attempts): in
    AWS that is real time, and in the sandbox everything else a function waits for runs on the simulated clock,
    so a backoff does too. The attempts, their errors and their order stay as botocore makes them; only the
    wall time between them shrinks by the clock's scale (a throttled delete no longer waits a minute or two of
    real time). The in-process functions and the sandbox's own clients share this process, so both do.
    """
    import botocore.endpoint

    module: Any = botocore.endpoint
    module.time = time if clock is None else _SdkTime(clock.sleep)


def install() -> None:
    """Replace moto's Docker runtime with :func:`invoke_in_process` (idempotent)."""
    from moto.awslambda.models import LambdaFunction

    if getattr(LambdaFunction, "_instantstart_patched", False):
        return

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        return invoke_in_process(self, event)

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
    LambdaFunction._instantstart_patched = True  # type: ignore[attr-defined]
