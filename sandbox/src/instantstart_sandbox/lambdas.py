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

Every invocation counts the AWS calls its handler makes (the botocore API calls of the handler's thread; the
invocation log has them, with the event's scalar fields). :data:`FAULTS` kills one invocation right after its
n-th AWS call returned, the way Lambda ends a crashed runtime (``Runtime.ExitError``) or a function that ran
past its ``Timeout`` (``Sandbox.Timedout``): the handler's thread is frozen for good at that point (no ``finally``
block, no later write runs: the process is gone) and the caller gets the error payload.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import json
import logging
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from instantstart_sandbox.clock import SimClock

from instantstart_sandbox import iam_audit
from instantstart_sandbox.lambda_faults import (  # re-exported: Sandbox.lambda_faults and the tests
    CRASH_ERROR as CRASH_ERROR,
)
from instantstart_sandbox.lambda_faults import (
    FAULTS as FAULTS,
)
from instantstart_sandbox.lambda_faults import (
    TIMEOUT_ERROR as TIMEOUT_ERROR,
)
from instantstart_sandbox.lambda_faults import (
    FaultKind as FaultKind,
)
from instantstart_sandbox.lambda_faults import (
    InvocationFault as InvocationFault,
)
from instantstart_sandbox.lambda_faults import (
    LambdaFaults as LambdaFaults,
)

logger = logging.getLogger(__name__)


@dataclass
class LambdaCode:
    """Where a deployed function's built code lives on this machine (``sam build``'s layout, ``make build-host``):
    ``code_dir`` its ``LAMBDA_TASK_ROOT``, ``layers`` the ``python`` directory of each of its layers (``/opt/python``),
    ``environment`` its ``Environment.Variables``; ``timeout`` in seconds, ``memory_size`` in MiB."""

    code_dir: Path
    handler: str
    timeout: int = 30
    memory_size: int = 512
    layers: tuple[Path, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)


RuntimeMode = Literal["thread", "process"]
_runtime: list[RuntimeMode] = ["thread"]


def use_runtime(mode: RuntimeMode) -> None:
    """How invocations run: ``"process"``, each execution environment a process running AWS's runtime interface
    client on the built artifacts (:mod:`instantstart_sandbox.lambda_process`); ``"thread"``, the handler imported
    from the same artifacts into this process and called on the invoking thread (the test suites' default: cheaper).

    Raises:
        ValueError: ``mode`` is neither.
    """
    if mode not in ("thread", "process"):
        raise ValueError(f"lambda runtime must be thread or process; got {mode!r}")
    _runtime[0] = mode


def runtime() -> RuntimeMode:
    """The runtime :func:`use_runtime` chose."""
    return _runtime[0]


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
        """Milliseconds left before the function's timeout, in simulated time when a clock is installed (the
        ``Timeout`` a timed-out invocation waits out, :func:`_wait_out_timeout`)."""
        scale = _clock.scale if _clock is not None else 1.0
        return max(0, int((self.timeout_seconds - (time.monotonic() - self._started) * scale) * 1000))


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


def environment_limit(name: str) -> int:
    """How many execution environments function ``name`` may run at once (:func:`set_environments`)."""
    with _environments_guard:
        return _limits.get(name, _default_limit)


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
    from instantstart_sandbox import lambda_process

    lambda_process.set_limits(count, function_name)


_invocations: list[dict[str, Any]] = []
_invocations_lock = threading.Lock()


def invocations() -> list[dict[str, Any]]:
    """A copy of the invocation log, one dict per call: ``function``, ``errored``, ``seconds`` (wall), ``calls`` (the
    AWS calls its handler made), ``event`` (the event's top-level string, number and boolean fields, none whose name
    mentions a token) and ``fault`` (``crash``/``timeout`` when :data:`FAULTS` killed it, else None)."""
    with _invocations_lock:
        return list(_invocations)


_clock: SimClock | None = None


def use_sim_clock(clock: SimClock | None) -> None:
    """A timed-out invocation's ``Timeout`` passes on ``clock`` (simulated seconds), None: in real seconds."""
    global _clock
    _clock = clock


def _wait_out_timeout(timeout: int, started: float) -> None:
    """Block until ``timeout`` simulated seconds have passed since ``started`` (``time.monotonic()``)."""
    scale = _clock.scale if _clock is not None else 1.0
    left = timeout - (time.monotonic() - started) * scale
    if left > 0:
        if _clock is not None:
            _clock.sleep(left)
        else:
            time.sleep(left)


@dataclass
class _Invocation:
    """One running invocation: its AWS calls so far and, when a fault is armed on it, whether it was killed."""

    fault: InvocationFault | None = None
    calls: int = 0
    killed: threading.Event = field(default_factory=threading.Event)

    def called(self, operation: str) -> None:
        """An AWS call of the handler returned (or raised): count it; at the fault's call, freeze this thread."""
        self.calls += 1
        fault = self.fault
        if fault is not None and (
            operation == fault.after_operation if fault.after_operation else self.calls == fault.after_calls
        ):
            self.killed.set()
            threading.Event().wait()  # the runtime is gone: nothing after this call ever runs


_CURRENT: ContextVar[_Invocation | None] = ContextVar("sandbox_invocation", default=None)
_calls_hooked = False


def _hook_aws_calls() -> None:
    """Count every botocore API call made inside a handler (idempotent)."""
    global _calls_hooked
    if _calls_hooked:
        return
    from botocore.client import BaseClient

    cls: Any = BaseClient
    original = cls._make_api_call

    def _make_api_call(self: Any, operation_name: str, api_params: Any) -> Any:
        invocation = _CURRENT.get()
        if invocation is None:
            return original(self, operation_name, api_params)
        try:
            return original(self, operation_name, api_params)
        finally:
            invocation.called(operation_name)

    cls._make_api_call = _make_api_call
    _calls_hooked = True


def record_invocation(
    function: str, errored: bool, seconds: float, calls: int, event: Any, fault: FaultKind | None
) -> None:
    """Append one entry to the invocation log (:func:`invocations`); ``seconds`` of wall time."""
    entry = {"function": function, "errored": errored, "seconds": seconds, "calls": calls}
    with _invocations_lock:
        _invocations.append({**entry, "event": event_summary(event), "fault": fault})


def event_summary(event: Any) -> dict[str, Any]:
    """The event's top-level scalar fields, without any whose name mentions a token."""
    if not isinstance(event, Mapping):
        return {}
    return {
        str(k): v for k, v in event.items() if isinstance(v, str | int | float | bool) and "token" not in str(k).lower()
    }


_KILLED = object()


def _run_killable(name: str, handler: Any, event: Any, context: LambdaContext, invocation: _Invocation) -> Any:
    """Run the handler in a thread of its own: its result, or what it raised, or :data:`_KILLED` once the armed
    fault froze it (the frozen thread is left behind)."""
    assert invocation.fault is not None
    if invocation.fault.after_calls == 0 and not invocation.fault.after_operation:
        return _KILLED
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        token = _CURRENT.set(invocation)
        try:
            with iam_audit.acting_as(name):
                outcome["result"] = handler(event, context)
        except Exception as exc:  # noqa: BLE001 - handed to the invoking thread
            outcome["error"] = exc
        finally:
            _CURRENT.reset(token)
            finished.set()

    threading.Thread(target=contextvars.copy_context().run, args=(run,), name=f"lambda-{name}", daemon=True).start()
    while not finished.wait(0.005):
        if invocation.killed.is_set():
            return _KILLED
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


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

    The error payload has the Lambda shape ``{"errorType", "errorMessage", "stackTrace"}``. An invocation a fault of
    :data:`FAULTS` kills answers ``{"errorType", "errorMessage"}`` as Lambda does for a crashed or timed-out runtime.
    """
    if _runtime[0] == "process":
        from instantstart_sandbox import lambda_process

        return lambda_process.invoke(function, event)
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
    invocation = _Invocation(fault=FAULTS.arm(name, event))
    killed: dict[str, Any] | None = None
    try:
        with _environments_of(name, code).acquire() as handler:
            context._started = time.monotonic()
            if invocation.fault is None:
                token = _CURRENT.set(invocation)
                try:
                    with iam_audit.acting_as(name):
                        result = handler(event, context)
                finally:
                    _CURRENT.reset(token)
            else:
                result = _run_killable(name, handler, event, context, invocation)
        if result is _KILLED:
            assert invocation.fault is not None
            fault = invocation.fault
            killed = {"function": name, "event": event_summary(event), "calls": invocation.calls}
            killed["errorType"] = fault.error_type
            if fault.kind == "timeout":
                # The environment is gone (the lock is free for the next invocation); the caller waits the Timeout.
                _wait_out_timeout(code.timeout, started)
                message = f"Task timed out after {code.timeout:.2f} seconds"
            else:
                message = "Runtime exited with error: signal: killed"
            errored = True
            payload = json.dumps(
                {"errorType": fault.error_type, "errorMessage": f"RequestId: {context.aws_request_id} Error: {message}"}
            )
            logger.info("lambda %s killed (%s) after %d AWS calls", name, fault.kind, invocation.calls)
        else:
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
    finally:
        if invocation.fault is not None:
            FAULTS.disarm(invocation.fault, killed)
    fault_kind = invocation.fault.kind if killed is not None and invocation.fault else None
    record_invocation(name, errored, time.monotonic() - started, invocation.calls, event, fault_kind)
    return payload, errored, ""


def use_clock(clock: Callable[[], float] | None, sleep: Callable[[float], None] | None = None) -> None:
    """In-process functions read ``clock`` (simulated epoch seconds) as the time of day, None: the system clock; and
    the core's paced waits (``instantstart.models.common.sleep``) sleep ``sleep`` (simulated seconds).

    The core takes every record timestamp from one time source (``instantstart.models.common.set_clock``), and
    measures some waits between them (an add-on's grace after the nodes were Ready): on the simulated clock those
    run at the sandbox's pace, as the resources' lifecycles and the Step Functions waits do.
    """
    importlib.import_module("instantstart.models.common").set_clock(clock, sleep)


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

    _hook_aws_calls()
    if getattr(LambdaFunction, "_instantstart_patched", False):
        return

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        return invoke_in_process(self, event)

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
    LambdaFunction._instantstart_patched = True  # type: ignore[attr-defined]
