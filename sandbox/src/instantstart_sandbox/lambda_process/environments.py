"""Lambda's execution environments as processes: each runs AWS's runtime interface client on the built artifacts.

This is the sandbox's ``process`` runtime (``Sandbox(lambda_runtime="process")``, the default of ``make demo`` and
``instantstart-sandbox serve``). An environment is one ``python -I -S bootstrap.py`` process
(:mod:`instantstart_sandbox.lambda_process.bootstrap`) with Lambda's environment variables, the function's code
directory as ``LAMBDA_TASK_ROOT`` and the layers' ``python`` directories from ``sam build``'s layout
(``make build-host``), nothing of the development environment on ``sys.path``, and its own Runtime API
(:class:`~instantstart_sandbox.lambda_process.runtime_api.RuntimeApi`). It starts on the first invocation that finds
no idle environment (a cold start) and serves the next ones warm, as Lambda does.

What Lambda enforces is enforced here: the function's ``Timeout`` (simulated seconds: the process is killed and the
caller gets ``Sandbox.Timedout``), its ``MemorySize`` (the process's resident set is watched; over it, the process is
killed: ``Runtime.OutOfMemory``), a runtime that exits mid-invocation (``Runtime.ExitError``), an initialisation
that fails (the runtime's own ``Runtime.ImportModuleError`` and the like). Every environment has its own access key
id, so the AWS server knows which function made a call without any header (:func:`attribute`); the faults of
:data:`instantstart_sandbox.lambdas.FAULTS` count those calls and kill the process after the n-th one's answer went out.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from instantstart_sandbox.lambda_process.runtime_api import Invocation, RuntimeApi

if TYPE_CHECKING:
    from instantstart_sandbox.clock import SimClock
    from instantstart_sandbox.lambdas import InvocationFault, LambdaCode

log = logging.getLogger(__name__)

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")
RUNTIME_ID = "python3.13"
POLL_SECONDS = 0.005
MEMORY_POLL_SECONDS = 0.05


@dataclass
class ProcessSettings:
    """What every environment's process gets: the interpreter, the runtime directory (``awslambdaric``), the
    sandbox's AWS endpoint and secret, the simulated clock, the directory of the processes' output and the variables
    every function gets (the sandbox's log level and tracing switch)."""

    python: str
    runtime_dir: Path
    endpoint_url: str
    secret_key: str
    region: str
    clock: SimClock | None
    log_dir: Path
    common_environment: dict[str, str]


_settings: list[ProcessSettings] = []
_access_keys: dict[str, ProcessEnvironment] = {}
_lock = threading.Lock()


def configure(settings: ProcessSettings | None) -> None:
    """Use ``settings`` for the environments started from now on (None: stop every environment)."""
    with _lock:
        _settings[:] = [settings] if settings else []
    if settings is None:
        stop_all()
    else:
        settings.log_dir.mkdir(parents=True, exist_ok=True)


class ProcessEnvironment:
    """One execution environment of function ``name``: a runtime process, started by :meth:`invoke` when none runs."""

    def __init__(self, name: str, code: LambdaCode, index: int) -> None:
        self.name = name
        self.code = code
        self.index = index
        self.access_key = "ASIA" + secrets.token_hex(8).upper()
        self.process: subprocess.Popen[bytes] | None = None
        self.api: RuntimeApi | None = None
        self.label: str | None = None
        self.calls = 0
        self.fault: InvocationFault | None = None
        self.killed_by_fault = threading.Event()
        with _lock:
            _access_keys[self.access_key] = self

    def _environment(self, settings: ProcessSettings, api: RuntimeApi) -> dict[str, str]:
        code = self.code
        variables = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "PYTHONDONTWRITEBYTECODE": "1",  # Lambda's code directories are read-only
            "_HANDLER": code.handler,
            "LAMBDA_TASK_ROOT": str(code.code_dir),
            "LAMBDA_RUNTIME_DIR": str(settings.runtime_dir),
            "AWS_LAMBDA_RUNTIME_API": api.address,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{RUNTIME_ID}",
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(code.memory_size),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"{time.strftime('%Y/%m/%d')}/[$LATEST]{uuid.uuid4().hex}",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_REGION": settings.region,
            "AWS_DEFAULT_REGION": settings.region,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": settings.secret_key,
            "AWS_SESSION_TOKEN": f"sandbox-session-{self.access_key}",
            "AWS_ENDPOINT_URL": settings.endpoint_url,
            "INSTANTSTART_SANDBOX_LAYERS": os.pathsep.join(str(layer) for layer in code.layers),
        }
        if settings.clock is not None:
            clock = settings.clock
            variables["INSTANTSTART_SANDBOX_CLOCK"] = f"{clock.now()!r},{time.monotonic()!r},{clock.scale!r}"
        return {**variables, **settings.common_environment, **code.environment}

    def _start(self, settings: ProcessSettings) -> None:
        self.api = RuntimeApi()
        output = (settings.log_dir / f"{self.name}.{self.index}.log").open("ab")
        self.process = subprocess.Popen(
            [settings.python, "-I", "-S", str(BOOTSTRAP)],
            env=self._environment(settings, self.api),
            cwd=str(self.code.code_dir),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        output.close()
        log.info("lambda %s: environment %d started (pid %d)", self.name, self.index, self.process.pid)

    def alive(self) -> bool:
        """Whether the runtime process runs."""
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Kill the runtime process and close its Runtime API."""
        process, api = self.process, self.api
        self.process = self.api = None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if api is not None:
            api.close()

    def retire(self) -> None:
        """Stop for good: the access key no longer names this environment."""
        self.stop()
        with _lock:
            _access_keys.pop(self.access_key, None)

    def after_call(self, operation: str) -> None:
        """An AWS call of this environment was answered: count it; at the armed fault's call, kill (crash) or freeze
        (timeout) the process."""
        self.calls += 1
        fault = self.fault
        if fault is None or self.process is None:
            return
        if operation == fault.after_operation if fault.after_operation else self.calls == fault.after_calls:
            self.killed_by_fault.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL if fault.kind == "crash" else signal.SIGSTOP)

    def invoke(self, event: bytes, function_arn: str, request_id: str) -> tuple[bytes, bool, str | None]:
        """Run one invocation: ``(payload, errored, fault)`` where ``fault`` is None, ``"crash"`` or ``"timeout"``
        (an armed fault killed it). Starts the process first when none runs; waits at most the function's
        ``Timeout`` (simulated seconds) and its ``MemorySize``. Raises nothing: every failure is a Lambda error
        payload."""
        with _lock:
            settings = _settings[0] if _settings else None
        if settings is None:
            return _error("ServiceException", "the sandbox's process runtime is not configured"), True, None
        clock = settings.clock
        self.calls = 0
        self.killed_by_fault.clear()
        if not self.alive():
            self.stop()
            self._start(settings)
        assert self.api is not None and self.process is not None
        if self.fault is not None and self.fault.after_calls == 0 and not self.fault.after_operation:
            self.killed_by_fault.set()
            self.stop()
            return self._died(request_id), True, self.fault.kind
        deadline_ms = int((time.time() + self.code.timeout / (clock.scale if clock else 1.0)) * 1000)
        invocation = Invocation(request_id, event, function_arn, deadline_ms)
        self.api.hand(invocation)
        next_memory_check = 0.0
        timer: _Elapsed | None = None
        init = _Elapsed(clock)
        while not invocation.done.wait(POLL_SECONDS):
            if not invocation.started.is_set():
                if self.api.init_error is not None:
                    payload = self.api.init_error
                    self.stop()
                    return payload, True, None
                if init.beyond(INIT_SECONDS + self.code.timeout, wall_too=True):
                    self.stop()
                    message = f"RequestId: {request_id} Error: Task timed out after {self.code.timeout:.2f} seconds"
                    return _error("Sandbox.Timedout", message), True, None
            elif timer is None:
                timer = _Elapsed(clock)
            # A fault's hang passes the Timeout on the simulated clock (as in the in-process runtime); a handler that
            # really runs long times out only once the Timeout passed in wall time too: a busy machine's slow
            # seconds are no reason for a timeout at a high time scale.
            hung = self.killed_by_fault.is_set() and self.fault is not None and self.fault.kind == "timeout"
            if timer is not None and timer.beyond(self.code.timeout, wall_too=not hung):
                self.stop()
                kind = self.fault.kind if self.killed_by_fault.is_set() and self.fault else None
                message = f"Task timed out after {self.code.timeout:.2f} seconds"
                return _error("Sandbox.Timedout", f"RequestId: {request_id} Error: {message}"), True, kind
            if self.killed_by_fault.is_set() and self.fault is not None and self.fault.kind == "crash":
                self.stop()
                return self._died(request_id), True, "crash"
            if self.process.poll() is not None:
                self.stop()
                return self._died(request_id), True, None
            if time.monotonic() >= next_memory_check:
                next_memory_check = time.monotonic() + MEMORY_POLL_SECONDS
                if _resident_mb(self.process.pid) > self.code.memory_size:
                    self.stop()
                    message = f"RequestId: {request_id} Error: Runtime exited with error: signal: killed"
                    return _error("Runtime.OutOfMemory", message), True, None
        return invocation.payload, invocation.errored, None

    def _died(self, request_id: str) -> bytes:
        return _error("Runtime.ExitError", f"RequestId: {request_id} Error: Runtime exited with error: signal: killed")


INIT_SECONDS = 10
"""Lambda's limit on a runtime's initialisation (on-demand), before the first event."""


class _Elapsed:
    """Seconds since creation on the simulated clock (or wall seconds without one), and on the wall clock."""

    def __init__(self, clock: SimClock | None) -> None:
        self.clock = clock
        self.sim0 = clock.now() if clock is not None else 0.0
        self.wall0 = time.monotonic()

    def beyond(self, seconds: float, wall_too: bool) -> bool:
        """Whether ``seconds`` passed (simulated; and in wall time too when ``wall_too``)."""
        wall = time.monotonic() - self.wall0
        sim = self.clock.now() - self.sim0 if self.clock is not None else wall
        return sim >= seconds and (wall >= seconds or not wall_too)


def _error(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


def _resident_mb(pid: int) -> float:
    """The resident set of process ``pid`` in MiB (``/proc/<pid>/status`` ``VmRSS``; 0 when unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return 0.0
    return 0.0


class ProcessPool:
    """The process environments of one function's code: at most ``limit`` invocations at once, each in its own."""

    def __init__(self, name: str, code: LambdaCode, limit: int) -> None:
        self.name = name
        self.code = code
        self.limit = limit
        self.environments: dict[int, ProcessEnvironment] = {}
        self.busy: set[int] = set()
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def acquire(self) -> Iterator[ProcessEnvironment]:
        """The lowest-numbered idle environment below ``limit`` (made on first use), held inside."""
        with self.changed:
            while (index := next((i for i in range(self.limit) if i not in self.busy), None)) is None:
                self.changed.wait()
            self.busy.add(index)
            environment = self.environments.get(index)
            if environment is None:
                environment = self.environments[index] = ProcessEnvironment(self.name, self.code, index)
        try:
            yield environment
        finally:
            with self.changed:
                self.busy.discard(index)
                self.changed.notify_all()

    def set_limit(self, limit: int) -> None:
        """Let up to ``limit`` invocations run at once."""
        with self.changed:
            self.limit = limit
            self.changed.notify_all()

    def stop(self) -> None:
        """Stop every environment of this pool."""
        with self.changed:
            environments = list(self.environments.values())
            self.environments.clear()
        for environment in environments:
            environment.retire()


_pools: dict[str, ProcessPool] = {}


def pool_of(name: str, code: LambdaCode, limit: int) -> ProcessPool:
    """The pool of function ``name``; a new one (the old one stopped) when its code changed (a new deployment)."""
    with _lock:
        pool = _pools.get(name)
        if pool is not None and pool.code == code:
            return pool
        _pools[name] = fresh = ProcessPool(name, code, limit)
    if pool is not None:
        pool.stop()
    return fresh


def set_limits(limit: int, function_name: str | None = None) -> None:
    """Apply an environment count to the running pools (``function_name`` None: all)."""
    with _lock:
        pools = [pool for name, pool in _pools.items() if function_name is None or name == function_name]
    for pool in pools:
        pool.set_limit(limit)


def stop_all() -> None:
    """Stop every environment of every function (the sandbox stops)."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.stop()


def environment_of(access_key: str) -> ProcessEnvironment | None:
    """The environment whose process signs with ``access_key`` (None: not a function's process)."""
    with _lock:
        return _access_keys.get(access_key)


def python_for_functions() -> str:
    """The interpreter of the function processes: this one (the host build's ``.pyc`` are compiled by it)."""
    return sys.executable
