"""EventBridge Scheduler in the sandbox: ``AWS::Scheduler::Schedule`` resources fire on the simulated clock.

moto's ``scheduler`` backend stores the schedules (boto3 ``scheduler`` ``GetSchedule``/``ListSchedules``/
``UpdateSchedule`` see and change them) but never fires them. :data:`SCHEDULES` does: each schedule the deployer
creates (:func:`create`) gets a timer on the sandbox's :class:`~instantstart_sandbox.clock.SimClock` (so
``SimClock.paused()`` stops it too); at each tick the schedule is read again from moto (its ``State``, expression and
target as ``UpdateSchedule`` left them) and its Lambda target is invoked asynchronously with the target's ``Input``
as the payload, as Scheduler does.

Harsh like AWS: Scheduler invokes with the target's ``RoleArn``. Before each invocation the role is read from the
emulated IAM: its trust must let ``scheduler.amazonaws.com`` assume it (an ``aws:SourceAccount`` condition must name
this account) and its policies must allow ``lambda:InvokeFunction`` on the target; otherwise the invocation is
refused (logged and counted in :attr:`ScheduleState.failed`, the target is not invoked), as Scheduler's
``InvocationAttemptCount``/``TargetErrorCount`` metrics would show. Only ``rate(N minute|minutes|hour|hours|day|days)``
expressions are supported (``cron()``/``at()`` are refused at deploy), and ``FlexibleTimeWindow`` ``Mode: OFF``.

Tests use :meth:`Schedules.fire` (one synchronous invocation, the handler's result returned) and
:meth:`Schedules.wait_for_firings` (waits on a condition for the next firings to complete, never polls).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from instantstart_sandbox.aws.calls import IamTarget
from instantstart_sandbox.clock import SimClock

log = logging.getLogger(__name__)

RATE = re.compile(r"^rate\((?P<value>[1-9][0-9]*) (?P<unit>minute|minutes|hour|hours|day|days)\)$")
UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86_400}
SCHEDULER_PRINCIPAL = "scheduler.amazonaws.com"


class ScheduleDeployError(ValueError):
    """A schedule the sandbox cannot create (an unsupported expression, flexible window or target)."""


class InvocationRefused(PermissionError):
    """Scheduler could not invoke the target: its role does not let it (trust or ``lambda:InvokeFunction``)."""


def rate_seconds(expression: str) -> int:
    """Seconds between firings of ``rate(N unit)``; 1 takes the singular unit, more the plural (as AWS checks).

    Raises:
        ScheduleDeployError: not a rate expression the sandbox supports (``cron()``, ``at()``, a wrong unit).
    """
    found = RATE.match(expression.strip())
    if not found:
        raise ScheduleDeployError(
            f"ScheduleExpression {expression!r}: the sandbox supports rate(N minute|minutes|hour|hours|day|days) only"
        )
    value, unit = int(found["value"]), found["unit"]
    if (value == 1) != (not unit.endswith("s")):
        raise ScheduleDeployError(f"ScheduleExpression {expression!r}: use the singular unit for 1, plural above")
    return value * UNIT_SECONDS[unit.rstrip("s")]


@dataclass
class ScheduleState:
    """What the sandbox did with one schedule: invocations made, refused or failed, and the last results."""

    name: str
    group: str = "default"
    fired: int = 0
    """Firings whose invocation completed (successfully or with a function error)."""
    failed: int = 0
    """Firings refused by IAM or whose invocation failed (after the target's ``MaximumRetryAttempts``)."""
    results: list[Any] = field(default_factory=list)
    """The handler results of the last firings (the newest last, at most 20)."""


class Schedules:
    """The sandbox's schedules and their firing (one per process, :data:`SCHEDULES`)."""

    def __init__(self) -> None:
        self.clock: SimClock | None = None
        self.region = "us-west-2"
        self.account_id = "123456789012"
        self.automatic = True
        """Fire on the clock (False: only :meth:`fire` invokes; timers keep running and skip)."""
        self._states: dict[str, ScheduleState] = {}
        self._done = threading.Condition()

    def use(self, clock: SimClock | None, region: str, account_id: str, *, automatic: bool = True) -> None:
        """Fire on ``clock`` (None: stop firing) in ``region``/``account_id``."""
        self.clock, self.region, self.account_id, self.automatic = clock, region, account_id, automatic
        if clock is None:
            self._states.clear()

    def state(self, name: str) -> ScheduleState:
        """The firing record of schedule ``name``. Raises ``KeyError`` for an unknown schedule."""
        return self._states[name]

    def add(self, name: str, group: str = "default") -> None:
        """Start firing schedule ``name`` (already created in moto) on the clock."""
        self._states[name] = ScheduleState(name=name, group=group)
        self._arm(name)

    def _schedule(self, name: str) -> Any:
        from moto.scheduler.models import scheduler_backends

        state = self._states[name]
        return scheduler_backends[self.account_id][self.region].get_schedule(state.group, name)

    def _arm(self, name: str) -> None:
        if self.clock is None:
            return
        try:
            period = rate_seconds(self._schedule(name).schedule_expression)
        except Exception:
            log.exception("schedule %s is gone or unreadable: it stops firing", name)
            return
        self.clock.call_later(period, lambda: self._tick(name))

    def _tick(self, name: str) -> None:
        if name not in self._states:
            return
        try:
            if self.automatic and self._schedule(name).state == "ENABLED":
                threading.Thread(target=self._fire_logged, args=(name,), name=f"schedule-{name}", daemon=True).start()
        finally:
            self._arm(name)

    def _fire_logged(self, name: str) -> None:
        try:
            self.fire(name)
        except Exception:
            log.exception("schedule %s: invocation failed", name)

    def fire(self, name: str) -> Any:
        """Invoke schedule ``name``'s target now, synchronously, as Scheduler does (the target's ``Input``, its
        ``RoleArn`` checked, up to ``RetryPolicy.MaximumRetryAttempts`` retries of a function error, at most 2 here,
        at once rather than with Scheduler's backoff); returns
        the handler's result (parsed JSON). Counts the firing in :meth:`state` and wakes :meth:`wait_for_firings`.

        Raises:
            InvocationRefused: the role may not be assumed by Scheduler or may not invoke the target.
            RuntimeError: the function failed on every attempt (its error payload in the message).
        """
        state = self._states[name]
        target = dict(self._schedule(name).target)
        try:
            self.check_role(str(target["RoleArn"]), str(target["Arn"]))
            retries = int((target.get("RetryPolicy") or {}).get("MaximumRetryAttempts", 185))
            result = self._invoke(str(target["Arn"]), target.get("Input"), attempts=1 + min(retries, 2))
        except Exception:
            with self._done:
                state.failed += 1
                self._done.notify_all()
            raise
        with self._done:
            state.fired += 1
            state.results = [*state.results, result][-20:]
            self._done.notify_all()
        return result

    def wait_for_firings(self, name: str, count: int, timeout: float = 120) -> ScheduleState:
        """Block until ``count`` more firings of ``name`` completed (or were refused) than when called; waits on a
        condition the firings signal (``timeout`` wall seconds, then ``TimeoutError``)."""
        state = self._states[name]
        with self._done:
            goal = state.fired + state.failed + count
            if not self._done.wait_for(lambda: state.fired + state.failed >= goal, timeout):
                raise TimeoutError(f"schedule {name}: {count} firings did not complete within {timeout} s")
        return state

    def _invoke(self, function_arn: str, payload: str | None, attempts: int) -> Any:
        from moto.awslambda.models import lambda_backends

        parts = function_arn.split(":")
        name = parts[6] if len(parts) > 6 else function_arn
        qualifier = parts[7] if len(parts) > 7 else None
        backend = lambda_backends[self.account_id][self.region]
        error = ""
        for _ in range(attempts):
            headers: dict[str, str] = {}
            out = backend.invoke(
                name, qualifier, payload or "{}", {"x-amz-invocation-type": "RequestResponse"}, headers
            )
            text = out.decode() if isinstance(out, bytes) else str(out or "")
            if "x-amz-function-error" not in headers:
                return json.loads(text) if text else None
            error = text
        raise RuntimeError(f"target {function_arn} failed: {error}")

    def check_role(self, role_arn: str, function_arn: str) -> None:
        """Refuse unless Scheduler may assume ``role_arn`` and the role may ``lambda:InvokeFunction`` the target.

        Reads the role from the emulated IAM at each call (a role changed or deleted outside takes effect at the
        next firing). Raises :class:`InvocationRefused` naming what is missing.
        """
        from moto.iam.models import iam_backends

        from instantstart_sandbox.iam_audit import allows

        iam = iam_backends[self.account_id]["aws"]
        role_name = role_arn.rsplit("/", 1)[-1]
        try:
            role = iam.get_role(role_name)
        except Exception as exc:
            raise InvocationRefused(f"role {role_arn} does not exist") from exc
        trust = json.loads(role.assume_role_policy_document)
        if not any(self._trusts(s) for s in _statements(trust)):
            raise InvocationRefused(
                f"role {role_arn} does not trust {SCHEDULER_PRINCIPAL} for account {self.account_id}"
            )
        documents = [json.loads(doc) if isinstance(doc, str) else doc for doc in role.policies.values()]
        for policy in role.managed_policies.values():
            default = next(v for v in policy.versions if v.version_id == policy.default_version_id)
            documents.append(json.loads(default.document) if isinstance(default.document, str) else default.document)
        target = IamTarget(arn=function_arn)
        for statement in (s for d in documents for s in _statements(d)):
            if statement.get("Effect") == "Allow" and allows(
                statement, "lambda:InvokeFunction", target, self.region, self.account_id
            ):
                return
        raise InvocationRefused(f"role {role_arn} is not allowed lambda:InvokeFunction on {function_arn}")

    def _trusts(self, statement: dict[str, Any]) -> bool:
        principal = statement.get("Principal") or {}
        services = principal.get("Service", []) if isinstance(principal, dict) else []
        services = [services] if isinstance(services, str) else services
        if statement.get("Effect") != "Allow" or SCHEDULER_PRINCIPAL not in services:
            return False
        for operator, block in (statement.get("Condition") or {}).items():
            for key, wanted in block.items():
                values = wanted if isinstance(wanted, list) else [wanted]
                if key != "aws:SourceAccount" or operator != "StringEquals" or self.account_id not in values:
                    return False
        return True


def _statements(document: Any) -> list[dict[str, Any]]:
    statements = document.get("Statement", []) if isinstance(document, dict) else []
    return [statements] if isinstance(statements, dict) else list(statements)


SCHEDULES = Schedules()
"""The sandbox's schedules (moto's state is process-global, so is this)."""


def create(client: Any, name: str, props: dict[str, Any]) -> str:
    """``AWS::Scheduler::Schedule`` ``name`` from its resolved properties: checked, created through moto's
    ``CreateSchedule`` (boto3 ``client``), then armed on the clock. Returns its ARN.

    Raises:
        ScheduleDeployError: a ``cron()``/``at()`` or malformed expression, a ``FlexibleTimeWindow`` other than
            ``Mode: OFF``, or a target that is not a Lambda function (with its ``RoleArn``).
    """
    rate_seconds(str(props.get("ScheduleExpression", "")))
    window = props.get("FlexibleTimeWindow") or {}
    if window.get("Mode") != "OFF":
        raise ScheduleDeployError(f"schedule {name}: the sandbox supports FlexibleTimeWindow Mode OFF only")
    target = dict(props.get("Target") or {})
    if ":lambda:" not in str(target.get("Arn", "")) or not target.get("RoleArn"):
        raise ScheduleDeployError(f"schedule {name}: the target must be a Lambda function ARN with a RoleArn")
    kwargs: dict[str, Any] = {
        "Name": name,
        "ScheduleExpression": props["ScheduleExpression"],
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "State": props.get("State", "ENABLED"),
        "Target": {k: target[k] for k in ("Arn", "RoleArn", "Input", "RetryPolicy") if k in target},
    }
    if props.get("GroupName"):
        kwargs["GroupName"] = props["GroupName"]
    if props.get("Description"):
        kwargs["Description"] = props["Description"]
    arn = str(client.create_schedule(**kwargs)["ScheduleArn"])
    SCHEDULES.add(name, props.get("GroupName") or "default")
    return arn
