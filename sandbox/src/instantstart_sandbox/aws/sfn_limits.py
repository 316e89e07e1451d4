"""Step Functions' hard limits that moto's engine does not enforce, answered with Step Functions' own errors.

* StartExecution ``name``: 1-80 characters (longer: ``ValidationException`` "... Member must have length less than or
  equal to 80"), none of whitespace, ``< > { } [ ] ? * " # % \\ ^ | ~ ` $ & , ; : /``, control characters
  (U+0000-001F, U+007F-009F), U+FFFE-FFFF or surrogates (``InvalidName`` "Invalid Name: '<name>'");
* StartExecution ``input``, SendTaskSuccess ``output``: at most 262,144 bytes UTF-8, SendTaskFailure ``cause`` 32,768
  and ``error`` 256 characters, else ``ValidationException`` with the API's length-constraint message (the sandbox's
  reading of the documented constraints: AWS omits a sensitive value from the message);
* a Task's input after ``Parameters`` over 256 KiB fails the state with ``States.DataLimitExceeded`` before the
  task runs (moto already checks a task's result and a state's output);
* ``States.DataLimitExceeded`` is terminal: a ``States.ALL`` retrier or catcher does not match it (AWS documents that
  it can't be caught by ``States.ALL``; moto's catchers matched everything). Named explicitly, it still matches;
* an execution whose history reaches 25,000 events fails with ``States.Runtime`` "The execution reached the maximum
  number of history events (25000)." as its last event: the state running then is not caught or retried, events
  after the 24,999th are not recorded, a Lambda already invoked keeps running;
* GetExecutionHistory answers pages as Step Functions does: ``maxResults`` 100 by default (0 too), at most 1,000
  (more: ``ValidationException``), ``nextToken`` for the next page (one this API did not issue: ``InvalidToken``),
  ``reverseOrder`` newest first; moto answered every event of the execution at once, so a reader that forgot to page
  passed here and read 100 events on AWS.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

MAX_PAYLOAD_BYTES = 262_144
"""Step Functions' quota on an execution's, a state's or a task's input or output (256 KiB of UTF-8)."""

MAX_HISTORY_EVENTS = 25_000
"""Step Functions' hard quota on a Standard execution's history events."""

MAX_NAME_CHARS = 80

HISTORY_PAGE_DEFAULT = 100
HISTORY_PAGE_MAX = 1000
"""GetExecutionHistory's ``maxResults``: the default page (also for 0) and the largest allowed."""

HISTORY_FULL_CAUSE = f"The execution reached the maximum number of history events ({MAX_HISTORY_EVENTS})."

_FORBIDDEN = set(' <>{}[]?*"#%\\^|~`$&,;:/')
_TERMINAL_EVENTS = {"ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"}


def name_problem(name: str) -> bool:
    """Whether an execution name breaks Step Functions' character rules (length is checked apart)."""
    for char in name:
        code = ord(char)
        if char in _FORBIDDEN or char.isspace() or code <= 0x1F or 0x7F <= code <= 0x9F:
            return True
        if 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
            return True
    return False


def _length_error(member: str, limit: int, value: str | None = None) -> Exception:
    from moto.stepfunctions.exceptions import ValidationException

    shown = f"Value '{value}' at '{member}'" if value is not None else f"Value at '{member}'"
    return ValidationException(
        f"1 validation error detected: {shown} failed to satisfy constraint: "
        f"Member must have length less than or equal to {limit}"
    )


def check_start(name: str | None, execution_input: str | None) -> None:
    """StartExecution's checks of ``name`` and ``input``.

    Raises:
        ValidationException: a name over 80 characters, an input over 262,144 bytes.
        InvalidName: a name with a character Step Functions refuses.
    """
    from moto.stepfunctions.exceptions import InvalidName

    if name is not None:
        if len(name) > MAX_NAME_CHARS:
            raise _length_error("name", MAX_NAME_CHARS, name)
        if name_problem(name):
            raise InvalidName(f"Invalid Name: '{name}'")
    if execution_input is not None and len(execution_input.encode("utf-8")) > MAX_PAYLOAD_BYTES:
        raise _length_error("input", MAX_PAYLOAD_BYTES)


def _too_large(value: Any) -> bool:
    from moto.stepfunctions.parser.quotas import is_within_size_quota

    return not is_within_size_quota(value)


def install() -> None:
    """Patch moto's Step Functions backend and engine with these checks (idempotent)."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    backend: Any = StepFunctionsParserBackend
    if getattr(backend, "_instantstart_limits", False):
        return
    start_execution = backend.start_execution
    send_task_success = backend.send_task_success
    send_task_failure = backend.send_task_failure

    def _start_execution(
        self: Any, state_machine_arn: str, name: Any = None, execution_input: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        check_start(name, execution_input)
        return start_execution(self, state_machine_arn, name, execution_input, *args, **kwargs)

    def _send_task_success(self: Any, task_token: str, outcome: str) -> Any:
        if outcome is not None and len(str(outcome).encode("utf-8")) > MAX_PAYLOAD_BYTES:
            raise _length_error("output", MAX_PAYLOAD_BYTES)
        return send_task_success(self, task_token, outcome)

    def _send_task_failure(self: Any, task_token: str, error: Any = None, cause: Any = None) -> Any:
        if error is not None and len(str(error)) > 256:
            raise _length_error("error", 256)
        if cause is not None and len(str(cause)) > 32_768:
            raise _length_error("cause", 32_768)
        return send_task_failure(self, task_token, error=error, cause=cause)

    backend.start_execution = _start_execution
    backend.send_task_success = _send_task_success
    backend.send_task_failure = _send_task_failure
    backend._instantstart_limits = True
    _data_limit_is_terminal()
    _task_input_is_limited()
    _history_is_limited()
    _history_is_paginated()


def _data_limit_is_terminal() -> None:
    """``States.ALL`` in a retrier's or catcher's ``ErrorEquals`` does not match ``States.DataLimitExceeded``."""
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )

    original = ErrorEqualsDecl._eval_body
    every = StatesErrorName(typ=StatesErrorNameType.StatesALL)
    terminal = StatesErrorName(typ=StatesErrorNameType.StatesStatesDataLimitExceeded)

    def _eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1] if env.stack else None
        if error_name == terminal and terminal not in self.error_names and every in self.error_names:
            env.stack.pop()
            env.stack.append(False)
            return
        original(self, env)

    ErrorEqualsDecl._eval_body = _eval_body  # type: ignore[method-assign]


def _task_input_is_limited() -> None:
    """A service task whose input after ``Parameters`` is over 256 KiB fails with ``States.DataLimitExceeded``."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    original = StateTaskService._before_eval_execution
    kind = StatesErrorNameType.StatesStatesDataLimitExceeded

    def _before_eval_execution(
        self: Any, env: Any, resource_runtime_part: Any, raw_parameters: Any, *args: Any, **kwargs: Any
    ) -> None:
        if _too_large(raw_parameters):
            resource = self._get_sfn_resource()
            raise FailureEventException(
                failure_event=FailureEvent(
                    env=env,
                    error_name=StatesErrorName(typ=kind),
                    event_type=HistoryEventType.TaskFailed,
                    event_details=EventDetails(  # type: ignore[typeddict-item]
                        taskFailedEventDetails=TaskFailedEventDetails(
                            error=kind.to_name(),
                            cause=f"The state/task '{resource}' has an input with a size exceeding the maximum "
                            "number of bytes service limit.",
                            resource=resource,
                            resourceType=self._get_sfn_resource_type(),
                        )
                    ),
                )
            )
        original(self, env, resource_runtime_part, raw_parameters, *args, **kwargs)

    StateTaskService._before_eval_execution = _before_eval_execution  # type: ignore[method-assign]


def _history_is_limited() -> None:
    """Each execution's history events are counted; at the 25,000th the execution fails with ``States.Runtime``."""
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    original = ExecutionWorker._get_evaluation_environment

    def _get_evaluation_environment(self: Any) -> Any:
        env = original(self)
        manager = env.event_manager
        add_event = manager.add_event
        lock = threading.Lock()
        state = {"count": 0, "full": False, "last": 0}

        def add(context: Any, event_type: Any, event_details: Any = None, *args: Any, **kwargs: Any) -> Any:
            kind = getattr(event_type, "value", str(event_type))
            with lock:
                if state["full"] and kind != "ExecutionFailed":
                    return state["last"]
                if not state["full"] and state["count"] >= MAX_HISTORY_EVENTS - 1 and kind not in _TERMINAL_EVENTS:
                    state["full"] = True
                    env.set_error(ExecutionFailedEventDetails(error="States.Runtime", cause=HISTORY_FULL_CAUSE))
                    return state["last"]
                state["count"] += 1
            event_id = add_event(context, event_type, event_details, *args, **kwargs)
            state["last"] = event_id
            return event_id

        manager.add_event = add  # type: ignore[method-assign]
        return env

    ExecutionWorker._get_evaluation_environment = _get_evaluation_environment  # type: ignore[method-assign]


def history_page(
    events: list[Any], execution_arn: str, *, max_results: int | None, reverse: bool, next_token: str | None
) -> dict[str, Any]:
    """One GetExecutionHistory page of ``events`` (oldest first, as recorded): ``{"events": [...], "nextToken"?}``.

    Raises:
        ValidationException: ``maxResults`` outside 0-1,000.
        InvalidToken: ``next_token`` not issued for this execution and order.
    """
    from moto.stepfunctions.exceptions import InvalidToken, ValidationException

    size = HISTORY_PAGE_DEFAULT if not max_results else int(max_results)
    if not 0 <= size <= HISTORY_PAGE_MAX:
        raise ValidationException(
            f"1 validation error detected: Value '{size}' at 'maxResults' failed to satisfy constraint: "
            f"Member must have value less than or equal to {HISTORY_PAGE_MAX}"
        )
    start = 0
    if next_token:
        try:
            token = json.loads(base64.urlsafe_b64decode(next_token.encode()))
            start = int(token["offset"])
            valid = token["executionArn"] == execution_arn and bool(token["reverse"]) == reverse and start > 0
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            raise InvalidToken(f"'{next_token}'")
    ordered = list(reversed(events)) if reverse else events
    page: dict[str, Any] = {"events": ordered[start : start + size]}
    if start + size < len(ordered):
        token = {"executionArn": execution_arn, "offset": start + size, "reverse": reverse}
        page["nextToken"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
    return page


def _history_is_paginated() -> None:
    """moto's GetExecutionHistory answers one page at a time (:func:`history_page`)."""
    from moto.core.responses import ActionResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def get_execution_history(self: Any) -> Any:
        execution_arn = self._get_param("executionArn")
        history = self.stepfunction_backend.get_execution_history(execution_arn)
        return ActionResult(
            history_page(
                list(history["events"]),
                execution_arn,
                max_results=self._get_param("maxResults"),
                reverse=bool(self._get_param("reverseOrder")),
                next_token=self._get_param("nextToken"),
            )
        )

    StepFunctionResponse.get_execution_history = get_execution_history  # type: ignore[method-assign]
