"""Hooks on moto's Step Functions engine so executions run on the sandbox's simulated clock.

Only the sandbox clock scales Wait, Retry intervals, TimeoutSeconds and HeartbeatSeconds; the
committed ASL keeps realistic seconds. Also closes moto's StartExecution-without-a-name gap (AWS
generates a UUID), passes SendTaskFailure's ``cause`` on (moto drops it) and emits the
"Step Functions Execution Status Change" EventBridge event when an execution ends (moto does not). The control plane's
ASL uses only ``lambda:invoke`` tasks, so moto's ``aws-sdk:*`` conversion is not needed and stays
as moto ships it.
"""

from __future__ import annotations

import time
import types
import uuid
from typing import Any

from instantstart_sandbox.clock import SimClock

_CLOCK: SimClock | None = None


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
        env.stack.append(_scale(self._eval_seconds(env=env)))

    timeout.Timeout._eval_body = _timeout_eval_body  # type: ignore[method-assign]
    heartbeat.Heartbeat._eval_body = _timeout_eval_body  # type: ignore[method-assign]

    _allow_unnamed_executions()
    _keep_task_failure_cause()
    _emit_execution_status_change()


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
        detail = {
            "executionArn": execution.exec_arn,
            "stateMachineArn": execution.state_machine_arn,
            "name": execution.name,
            "status": status,
            "startDate": int(execution.start_date.timestamp() * 1000) if execution.start_date else None,
            "stopDate": int(execution.stop_date.timestamp() * 1000) if execution.stop_date else None,
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
