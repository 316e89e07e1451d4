"""Hooks on moto's Step Functions engine so executions run on the sandbox's simulated clock.

Only the sandbox clock scales Wait, Retry intervals, TimeoutSeconds and HeartbeatSeconds; the
committed ASL keeps realistic seconds (a callback task's timeout counts from its Lambda's return:
:data:`LAMBDA_RUN_ALLOWANCE_WALL_SECONDS`), and so does the execution history (``TaskScheduled``'s
``timeoutInSeconds``). Also closes moto's StartExecution-without-a-name gap (AWS
generates a UUID), passes SendTaskFailure's ``cause`` on (moto drops it) and emits the
"Step Functions Execution Status Change" EventBridge event when an execution ends (moto does not). The control plane's
ASL uses only ``lambda:invoke`` tasks, so moto's ``aws-sdk:*`` conversion is not needed and stays
as moto ships it.

Logging: the engine's own records (logger ``moto``: parser internals, component reprs of hundreds of
characters) go to a file (:func:`route_engine_logs`); the logger ``instantstart_sandbox.executions``
gets one INFO line when an execution starts, when it enters a Task/Parallel/Map state other than
the one it last reported (a poll loop is one line), and when it ends (error and cause on one line; a Lambda
error's stack trace is left out).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import types
import uuid
from pathlib import Path
from typing import Any

from instantstart_sandbox.clock import SimClock

_CLOCK: SimClock | None = None
EXECUTIONS = logging.getLogger("instantstart_sandbox.executions")
_REPORTED_STATE_TYPES = ("TaskStateEntered", "ParallelStateEntered", "MapStateEntered")
_CAUSE_CHARS = 300


def route_engine_logs(path: Path) -> Path:
    """Send every ``moto`` log record (the Step Functions engine's included) to the file ``path`` only.

    Returns ``path``. Repeated calls replace the previous file handler.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = logging.getLogger("moto")
    for handler in list(engine.handlers):
        if getattr(handler, "_instantstart_engine_log", False):
            engine.removeHandler(handler)
            handler.close()
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._instantstart_engine_log = True  # type: ignore[attr-defined]
    engine.addHandler(handler)
    engine.setLevel(logging.INFO)
    engine.propagate = False
    return path


def _one_line(text: Any, limit: int = _CAUSE_CHARS) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _cause_line(cause: Any) -> str:
    """An execution's cause for the terminal: a Lambda error payload becomes ``errorType: errorMessage``
    (its stack trace stays in the execution history), anything else is shortened to one line."""
    try:
        payload = json.loads(str(cause or ""))
    except ValueError:
        payload = None
    if isinstance(payload, dict) and "errorMessage" in payload:
        kind = payload.get("errorType")
        return _one_line(f"{kind}: {payload['errorMessage']}" if kind else payload["errorMessage"])
    return _one_line(cause)


MIN_TIMEOUT_WALL_SECONDS = 0.25
"""A Task's timeout never runs out in less wall time than this."""

LAMBDA_RUN_ALLOWANCE_WALL_SECONDS = 60.0
"""The simulated clock compresses waiting, not the wall time an in-process Lambda needs to run: a
``.waitForTaskToken`` task's timeout counts from the moment its Lambda returned (the callback wait), and
the Lambda's own run may take up to this many wall seconds on top. On AWS a check takes a second
against a 60-second timeout; compressed 120 times, a check slower than half a second (a loaded
machine, a queue of invocations of a single-concurrency function) would time out every round."""

_OUTER_TIMEOUT = threading.local()
_FOR_HISTORY = threading.local()


def _scale(seconds: float) -> float:
    return seconds if _CLOCK is None else _CLOCK.to_wall(seconds)


def install(clock: SimClock) -> None:
    """Point the engine's waits at ``clock`` (re-installing only swaps the clock)."""
    global _CLOCK
    _CLOCK = clock
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.common.timeouts import heartbeat, timeout
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function import wait_function

    if getattr(wait_function.WaitFunction, "_instantstart_patched", False):
        return

    def _wait_interval(self: Any, env: Any, wait_seconds: float) -> None:
        if wait_seconds > 0:
            env.program_state_event.wait(_scale(wait_seconds))

    wait_function.WaitFunction._wait_interval = _wait_interval  # type: ignore[method-assign]
    wait_function.WaitFunction._instantstart_patched = True  # type: ignore[attr-defined]

    # Retry backoff: the retrier sleeps through its module's ``time``.
    setattr(retrier_decl, "time", types.SimpleNamespace(sleep=lambda s: time.sleep(_scale(s))))  # noqa: B010

    def _timeout_eval_body(self: Any, env: Any) -> None:
        if getattr(_FOR_HISTORY, "active", False):  # TaskScheduled's timeoutInSeconds: the ASL's own seconds
            env.stack.append(self._eval_seconds(env=env))
            return
        seconds = max(_scale(self._eval_seconds(env=env)), MIN_TIMEOUT_WALL_SECONDS)
        if getattr(_OUTER_TIMEOUT, "active", False):  # the whole state's bound: Lambda run + callback wait
            seconds += LAMBDA_RUN_ALLOWANCE_WALL_SECONDS
        env.stack.append(seconds)

    timeout.Timeout._eval_body = _timeout_eval_body  # type: ignore[method-assign]
    heartbeat.Heartbeat._eval_body = _timeout_eval_body  # type: ignore[method-assign]

    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (
        StateTaskServiceCallback,
    )

    evaluate_with_timeout = ExecutionState._evaluate_with_timeout

    def _evaluate_with_timeout(self: Any, env: Any) -> None:
        # The state's outer bound is evaluated in this thread; the callback wait's own bound is evaluated
        # in the thread that runs the task, after its Lambda returned, without the allowance.
        callback = isinstance(self, StateTaskServiceCallback) and self._is_integration_pattern()  # type: ignore[no-untyped-call]
        _OUTER_TIMEOUT.active = callback
        try:
            evaluate_with_timeout(self, env)
        finally:
            _OUTER_TIMEOUT.active = False

    ExecutionState._evaluate_with_timeout = _evaluate_with_timeout  # type: ignore[method-assign]

    _history_records_the_asl_seconds()
    _allow_unnamed_executions()
    _catch_back_to_the_same_state()
    _stop_inside_parallel_is_abort()
    _a_stopped_execution_stays_stopped()
    _keep_task_failure_cause()
    _emit_execution_status_change()
    _report_state_changes()


def _history_records_the_asl_seconds() -> None:
    """A ``TaskScheduled`` event's ``timeoutInSeconds`` and ``heartbeatInSeconds`` are the state's own seconds, as
    on AWS; only the wait itself runs on the scaled clock.

    moto evaluates the state's timeout once more to record it, through the same hook that scales it: the history
    showed wall seconds truncated to an integer (0 for a 60-second poll at 480x).
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )

    original = StateTaskService._before_eval_execution

    def _before_eval_execution(self: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        _FOR_HISTORY.active = True
        try:
            original(self, env, *args, **kwargs)
        finally:
            _FOR_HISTORY.active = False

    StateTaskService._before_eval_execution = _before_eval_execution  # type: ignore[method-assign]


def _catch_back_to_the_same_state() -> None:
    """A ``Catch`` whose ``Next`` is its own state re-enters it, as on AWS.

    moto decides whether a state's next state was "overridden" by comparing it with the state's own
    name, so a catcher pointing back at its own state fell through to the state's ``Next`` instead.
    """
    from moto.stepfunctions.parser.asl.component.common.catch.catch_outcome import CatchOutcome
    from moto.stepfunctions.parser.asl.component.state.state import CommonStateField

    original = CommonStateField._set_next

    def _set_next(self: Any, env: Any) -> None:
        if env.stack and env.stack[-1] is CatchOutcome.Caught:
            return  # the catcher already chose the next state (possibly this one)
        original(self, env)

    CommonStateField._set_next = _set_next  # type: ignore[method-assign]


def _stop_inside_parallel_is_abort() -> None:
    """StopExecution while a Parallel state runs ends the execution ABORTED, as on AWS.

    moto re-raised the stopped branches' exit as a failure named ``States.*``, which its own error
    model refuses ("Custom Error Names MUST NOT begin with 'States.'"), so the execution ended FAILED.
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branches_decl import BranchesDecl

    original = BranchesDecl._eval_body

    def _eval_body(self: Any, env: Any) -> None:
        try:
            original(self, env)
        except Exception:
            if env.is_running():
                raise
            # the execution was stopped: the stop, not this state, decides how it ends

    BranchesDecl._eval_body = _eval_body  # type: ignore[method-assign]


def _a_stopped_execution_stays_stopped() -> None:
    """StopExecution ends the execution ABORTED whatever it was doing, as on AWS.

    moto lost the race three ways, each seen on a busy machine: stopped between two steps of a state (e.g. a Wait's
    InputPath), its program thread raised "Could not set NextField value when in state ProgramStopped" and recorded
    that error over the stop (the execution ended FAILED, ``States.Runtime``); stopped before its first state, the
    stop was dropped (only a running program takes it) and the execution ran on to SUCCEEDED; stopped before the
    worker thread made its environment, StopExecution itself failed (``None.set_stop``).
    """
    from moto.stepfunctions.parser.asl.component.program.program import Program
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    original = Environment.set_error
    if getattr(original, "_instantstart_patched", False):
        return

    def set_error(self: Any, error: Any) -> None:
        with self._state_mutex:  # an RLock: the original takes it again
            if isinstance(self._program_state, ProgramStopped):
                return  # the stop, not the error its unwinding raised, decides how the execution ends
            original(self, error)

    set_stop = Environment.set_stop

    def set_stop_before_start(self: Any, stop_date: Any, cause: Any, error: Any) -> None:
        with self._state_mutex:
            if self._program_state is None:  # stopped before its first state: it never runs one
                self._program_state = ProgramStopped(stop_date=stop_date, cause=cause, error=error)
                self.program_state_event.set()
                self.program_state_event.clear()
                return
        set_stop(self, stop_date=stop_date, cause=cause, error=error)

    program_eval = Program.eval

    def eval_unless_stopped(self: Any, env: Any) -> None:
        try:
            program_eval(self, env)
        except RuntimeError:  # "Could not set NextState value when in state ProgramStopped"
            if not isinstance(env._program_state, ProgramStopped):
                raise

    # StopExecution before the worker thread made its environment: moto called ``None.set_stop`` (a 500); the stop
    # waits on the worker for the environment instead, which applies it as soon as it exists
    make_environment = ExecutionWorker._get_evaluation_environment
    worker_stop = ExecutionWorker.stop
    pending = threading.Lock()

    def environment_with_pending_stop(self: Any) -> Any:
        env = make_environment(self)
        with pending:
            self._instantstart_env = env
            stop = getattr(self, "_instantstart_stop", None)
        if stop is not None:
            env.set_stop(*stop)
        return env

    def stop_when_ready(self: Any, stop_date: Any, error: Any, cause: Any) -> None:
        with pending:
            if getattr(self, "_instantstart_env", None) is None:
                self._instantstart_stop = (stop_date, cause, error)
                return
        worker_stop(self, stop_date=stop_date, error=error, cause=cause)

    set_error._instantstart_patched = True  # type: ignore[attr-defined]
    Environment.set_error = set_error  # type: ignore[method-assign]
    Environment.set_stop = set_stop_before_start  # type: ignore[method-assign]
    Program.eval = eval_unless_stopped  # type: ignore[method-assign]
    ExecutionWorker._get_evaluation_environment = environment_with_pending_stop  # type: ignore[method-assign]
    ExecutionWorker.stop = stop_when_ready  # type: ignore[method-assign]


def _report_state_changes() -> None:
    """One INFO line per execution start and per newly entered Task/Parallel/Map state."""
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    original = ExecutionWorker._get_evaluation_environment
    if getattr(original, "_instantstart_patched", False):
        return

    def get_environment(self: Any) -> Any:
        env = original(self)
        details = self._evaluation_details
        name = details.execution_details.name
        machine = details.state_machine_details.name
        manager = env.event_manager
        add_event = manager.add_event
        last: list[str] = [""]

        def add(context: Any, event_type: Any, event_details: Any = None, *args: Any, **kwargs: Any) -> Any:
            kind = getattr(event_type, "value", str(event_type))
            if kind in _REPORTED_STATE_TYPES and event_details:
                state = (event_details.get("stateEnteredEventDetails") or {}).get("name", "")
                if state and state != last[0]:
                    last[0] = state
                    EXECUTIONS.info("%s %s: %s", machine, name, state)
            return add_event(context, event_type, event_details, *args, **kwargs)

        manager.add_event = add  # type: ignore[method-assign]
        EXECUTIONS.info("%s %s: started", machine, name)
        return env

    get_environment._instantstart_patched = True  # type: ignore[attr-defined]
    ExecutionWorker._get_evaluation_environment = get_environment  # type: ignore[method-assign]


def _allow_unnamed_executions() -> None:
    """StartExecution without ``name``: AWS names the execution with a UUID; moto needs one given."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend.start_execution
    if getattr(original, "_instantstart_patched", False):
        return

    def start_execution(self: Any, state_machine_arn: str, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        return original(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    start_execution._instantstart_patched = True  # type: ignore[attr-defined]
    StepFunctionsParserBackend.start_execution = start_execution  # type: ignore[method-assign]


def _keep_task_failure_cause() -> None:
    """moto's SendTaskFailure handler drops ``cause``; AWS passes it to the failed task's Catch."""
    from moto.core.responses import EmptyResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self: Any) -> Any:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
        )
        return EmptyResult()

    StepFunctionResponse.send_task_failure = send_task_failure  # type: ignore[method-assign]


EVENT_PAYLOAD_BYTES = 248 * 1024
"""The most escaped input plus output a "Step Functions Execution Status Change" event carries (EventBridge's quota)."""


def _event_payloads(input_data: Any, output: Any, *, succeeded: bool) -> dict[str, Any]:
    """The event's ``input``/``inputDetails``/``output``/``outputDetails``, as AWS's Step Functions guide describes:
    JSON strings (``output`` only for a SUCCEEDED execution, else null with null ``outputDetails``); an output whose
    escaped form exceeds :data:`EVENT_PAYLOAD_BYTES` is left out, and so is the input when input and output together
    exceed it (``included: false``)."""
    text_in = json.dumps(input_data, separators=(",", ":"))
    text_out = json.dumps(output, separators=(",", ":")) if succeeded else None
    size_out = len(json.dumps(text_out)) if text_out is not None else 0
    keep_out = size_out <= EVENT_PAYLOAD_BYTES
    keep_in = len(json.dumps(text_in)) + (size_out if keep_out else 0) <= EVENT_PAYLOAD_BYTES
    return {
        "input": text_in if keep_in else None,
        "inputDetails": {"included": keep_in},
        "output": text_out if keep_out else None,
        "outputDetails": None if text_out is None else {"included": keep_out},
    }


def _emit_execution_status_change() -> None:
    """Emit "Step Functions Execution Status Change" (source ``aws.states``) when an execution ends, as AWS does."""
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    original = BaseExecutionWorkerCommunication.terminated
    if getattr(original, "_instantstart_patched", False):
        return

    def terminated(self: Any) -> None:
        original(self)
        execution = self.execution
        from instantstart_sandbox.aws.eventbridge import put_event

        status = execution.exec_status.value if execution.exec_status else "FAILED"
        if status == "SUCCEEDED":
            EXECUTIONS.info("%s %s: SUCCEEDED", execution.state_machine.name, execution.name)
        else:
            EXECUTIONS.info(
                "%s %s: %s %s: %s",
                execution.state_machine.name,
                execution.name,
                status,
                execution.error or "",
                _cause_line(execution.cause),
            )
        detail = {
            "executionArn": execution.exec_arn,
            "stateMachineArn": execution.state_machine_arn,
            "name": execution.name,
            "status": status,
            "startDate": int(execution.start_date.timestamp() * 1000) if execution.start_date else None,
            "stopDate": int(execution.stop_date.timestamp() * 1000) if execution.stop_date else None,
            **_event_payloads(execution.input_data, execution.output, succeeded=status == "SUCCEEDED"),
            "error": execution.error,
            "cause": execution.cause,
        }
        put_event(
            execution.account_id,
            execution.region_name,
            "aws.states",
            "Step Functions Execution Status Change",
            detail,
            [execution.exec_arn],
            time=_CLOCK.now() if _CLOCK else None,
        )

    terminated._instantstart_patched = True  # type: ignore[attr-defined]
    BaseExecutionWorkerCommunication.terminated = terminated  # type: ignore[method-assign]
