"""Lambda without Docker: moto's runtime is replaced by an in-process import-and-call of the handler.

Each function has one execution environment by default (its invocations run one at a time, as in one
Lambda container); different functions run concurrently. :func:`set_environments` lets a function have
several, as Lambda scales a function out under concurrent invocations: each further environment is a
fresh import of the function's own modules (its directory's ``*.py``), so module globals (the idempotency config's
Lambda context) are never shared by two invocations, and the Powertools resolver's current event, kept on a class,
is per thread.

The deployer registers each function's local code directory and handler; moto keeps its own
``Invoke`` API, FunctionError header and logs. Handlers share one interpreter, so every handler
module name must be unique across function directories (a contract test checks it) and all
functions share one process environment (the deployer refuses conflicting variables).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
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


class _Environments:
    """The execution environments of one function's code: at most ``limit`` invocations run at once, each in its own.

    Like a Lambda container, an environment runs one invocation at a time: handlers keep per-invocation
    state in module globals (the Powertools resolver's current event, the logger's keys), and real Lambda
    never runs two invocations in one environment. Environment 0 is the function's modules as imported
    (``sys.modules``, so a test that patches a handler module patches it); environment n > 0 is a private
    import of them, made when n invocations already run, and used only while the limit is above n. Different
    functions always run in parallel, so a function invoking another cannot deadlock.
    """

    def __init__(self, code: LambdaCode, limit: int) -> None:
        self.code = code
        self.limit = limit
        self.handlers: dict[int, Any] = {}
        self.busy: set[int] = set()
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def acquire(self) -> Iterator[Any]:
        """The handler of the lowest-numbered idle environment below ``limit`` (made on first use), held inside."""
        with self.changed:
            while (index := next((i for i in range(self.limit) if i not in self.busy), None)) is None:
                self.changed.wait()
            self.busy.add(index)
            handler = self.handlers.get(index)
        try:
            if index == 0:  # looked up at each call, as before there were several environments
                handler = _load_handler(self.code)
            elif handler is None:
                _powertools_router_state_per_thread()
                handler = _load_private_handler(self.code)
                with self.changed:
                    self.handlers[index] = handler
            yield handler
        finally:
            with self.changed:
                self.busy.discard(index)
                self.changed.notify_all()

    def set_limit(self, limit: int) -> None:
        with self.changed:
            self.limit = limit
            self.changed.notify_all()


_environments: dict[str, _Environments] = {}
_limits: dict[str, int] = {}
_default_limit = 1
_environments_guard = threading.Lock()


def _environments_of(name: str, code: LambdaCode) -> _Environments:
    """The environments of function ``name``; new ones when its code changed (a new deployment)."""
    with _environments_guard:
        pool = _environments.get(name)
        if pool is None or pool.code != code:
            pool = _environments[name] = _Environments(code, _limits.get(name, _default_limit))
        return pool


def set_environments(count: int, function_name: str | None = None) -> None:
    """Let ``function_name`` (None: every function) run up to ``count`` invocations at once.

    1 (the default) is one Lambda container per function; more is Lambda scaling out under concurrent
    requests, which is what lets two API requests race on the same records. Lowering the count takes
    effect as the running invocations end.

    Raises:
        ValueError: ``count`` is below 1.
    """
    global _default_limit
    if count < 1:
        raise ValueError(f"count must be 1 or more; got {count}")
    if count > 1:
        _powertools_router_state_per_thread()
    with _environments_guard:
        if function_name is None:
            _default_limit = count
            _limits.clear()
            pools = list(_environments.values())
        else:
            _limits[function_name] = count
            pools = [p for name, p in _environments.items() if name == function_name]
    for pool in pools:
        pool.set_limit(count)


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


class _PerThread:
    """A data descriptor whose value belongs to the thread that set it (on a class: through its metaclass too)."""

    def __init__(self, name: str, local: threading.local) -> None:
        self.name = name
        self.local = local

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        try:
            return getattr(self.local, self.name)
        except AttributeError:
            raise AttributeError(self.name) from None

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(self.local, self.name, value)


def _powertools_router_state_per_thread() -> None:
    """Powertools' resolver keeps the current event and Lambda context on the ``BaseRouter`` class (process-global:
    one Lambda process runs one invocation at a time). In-process invocations of several environments run on their
    own threads, so those two class attributes become per thread, read and written as before (idempotent)."""
    try:  # the functions' dependency, not the sandbox's: nothing to do without it
        BaseRouter: Any = importlib.import_module("aws_lambda_powertools.event_handler.api_gateway").BaseRouter
    except ModuleNotFoundError:
        return
    meta = type(BaseRouter)
    if getattr(meta, "_instantstart_per_thread", False):
        return
    local = threading.local()
    names = ("current_event", "lambda_context")
    per_thread = {name: _PerThread(name, local) for name in names}
    # instance access (self.current_event) goes through the class, class-level access (BaseRouter.current_event = ...)
    # through the metaclass: the class's entries first, while its metaclass still stores them
    for name, descriptor in per_thread.items():
        setattr(BaseRouter, name, descriptor)
    BaseRouter.__class__ = type(f"PerThread{meta.__name__}", (meta,), {**per_thread, "_instantstart_per_thread": True})


def _load_private_handler(code: LambdaCode) -> Any:
    """The handler of a private import of the function's own modules (a further execution environment).

    The function's modules are imported afresh with ``sys.modules`` holding none of them, then taken out again: the
    copy's modules refer to each other, and ``sys.modules`` keeps the first environment's. Libraries stay shared;
    the one process global they keep per invocation (Powertools' current event) is made per thread first.
    """
    module_name, func_name = code.handler.rsplit(".", 1)
    with _import_lock:
        own = {path.stem for path in code.code_dir.glob("*.py")} | {module_name}
        path = str(code.code_dir)
        if path not in sys.path:
            sys.path.insert(0, path)
        saved = {name: sys.modules.pop(name) for name in own if name in sys.modules}
        try:
            module = importlib.import_module(module_name)
        finally:
            for name in own:
                sys.modules.pop(name, None)
            sys.modules.update(saved)
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
        with _environments_of(name, code).acquire() as handler, iam_audit.acting_as(name):
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
