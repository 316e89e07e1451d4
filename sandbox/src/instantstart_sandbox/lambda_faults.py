"""The faults of the sandbox's Lambda runtimes: kill an invocation after its n-th AWS call, as a crashed runtime
(``Runtime.ExitError``) or one that ran past its ``Timeout`` (``Sandbox.Timedout``). Both runtimes
(:mod:`instantstart_sandbox.lambdas`, in process; :mod:`instantstart_sandbox.lambda_process`, a process per
environment) arm them from :data:`FAULTS` (``Sandbox.lambda_faults``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

CRASH_ERROR = "Runtime.ExitError"
"""The ``errorType`` Lambda answers for a runtime that exited during an invocation (killed, out of memory, ...)."""

TIMEOUT_ERROR = "Sandbox.Timedout"
"""The ``errorType`` Lambda answers for an invocation that ran past the function's ``Timeout``."""

FaultKind = Literal["crash", "timeout"]


@dataclass
class InvocationFault:
    """Kill the next ``remaining`` invocations of ``function`` whose event holds ``when`` (key by key) right after
    their ``after_calls``-th AWS call returned (0: before the handler runs), or, with ``after_operation``, right after
    their first call of that operation (``CreateVpc``) returned.

    ``crash``: the caller gets ``error_type`` at once. ``timeout``: the caller gets it once the function's
    ``Timeout`` (from the template, simulated seconds) has passed since the invocation started. An invocation that
    ends before its ``after_calls``-th call is not killed and leaves the fault to the next matching one.
    """

    kind: FaultKind
    function: str
    after_calls: int
    when: dict[str, Any]
    error_type: str
    remaining: int = 1
    after_operation: str | None = None
    fired: list[dict[str, Any]] = field(default_factory=list)
    """One ``{"function", "event", "calls", "errorType"}`` per invocation it killed."""
    armed: bool = False
    """An invocation carries it now (it is not offered to another one meanwhile)."""

    def matches(self, function: str, event: Any) -> bool:
        """Whether an invocation of ``function`` with ``event`` is one this fault is for (and it is free)."""
        if function != self.function or self.remaining <= 0 or self.armed:
            return False
        return isinstance(event, Mapping) and all(event.get(k) == v for k, v in self.when.items())


class LambdaFaults:
    """The invocation faults of the in-process runtime (thread-safe): :meth:`crash`, :meth:`timeout`, :meth:`clear`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[InvocationFault] = []

    def crash(
        self,
        function: str,
        *,
        after_calls: int,
        when: Mapping[str, Any] | None = None,
        times: int = 1,
        error_type: str = CRASH_ERROR,
        after_operation: str | None = None,
    ) -> InvocationFault:
        """Kill the runtime of the next ``times`` matching invocations of ``function`` (its deployed name) right after
        their ``after_calls``-th AWS call (or their first ``after_operation`` call, e.g. ``CreateVpc``); the caller
        gets ``{"errorType": error_type, "errorMessage"}`` at once (Lambda's ``Runtime.ExitError`` by default; Step
        Functions documents unhandled errors as ``Lambda.Unknown``).

        Raises:
            ValueError: ``after_calls`` < 0 or ``times`` < 1.
        """
        fault = InvocationFault("crash", function, after_calls, dict(when or {}), error_type, times, after_operation)
        return self._add(fault)

    def timeout(
        self,
        function: str,
        *,
        after_calls: int,
        when: Mapping[str, Any] | None = None,
        times: int = 1,
        after_operation: str | None = None,
    ) -> InvocationFault:
        """Make the next ``times`` matching invocations of ``function`` hang right after their ``after_calls``-th AWS
        call (or their first ``after_operation`` call) until the function's ``Timeout`` passed; the caller then gets
        ``Sandbox.Timedout``.

        Raises:
            ValueError: ``after_calls`` < 0 or ``times`` < 1.
        """
        fault = InvocationFault(
            "timeout", function, after_calls, dict(when or {}), TIMEOUT_ERROR, times, after_operation
        )
        return self._add(fault)

    def _add(self, fault: InvocationFault) -> InvocationFault:
        if fault.after_calls < 0 or fault.remaining < 1:
            raise ValueError("after_calls must be >= 0 and times >= 1")
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Forget every fault (invocations already frozen stay frozen)."""
        with self._lock:
            self._faults.clear()

    def faults(self) -> list[InvocationFault]:
        """Every fault added since the last :meth:`clear` (spent ones too)."""
        with self._lock:
            return list(self._faults)

    def arm(self, function: str, event: Any) -> InvocationFault | None:
        """The first free fault for this invocation, now carried by it (None: none matches)."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(function, event):
                    fault.armed = True
                    return fault
        return None

    def disarm(self, fault: InvocationFault, killed: dict[str, Any] | None) -> None:
        """The invocation carrying ``fault`` ended; ``killed`` (its record) when the fault killed it."""
        with self._lock:
            fault.armed = False
            if killed is not None:
                fault.remaining -= 1
                fault.fired.append(killed)


FAULTS = LambdaFaults()
"""The runtime's invocation faults (``Sandbox.lambda_faults``)."""
