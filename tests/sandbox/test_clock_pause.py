"""The simulated clock can be paused, so a test observes a transient state without racing wall time (issue 28)."""

from __future__ import annotations

import threading
import time

import pytest

from instantstart_sandbox.clock import SimClock


def test_given_a_paused_clock_then_time_stands_still_and_no_timer_fires_until_it_runs_again() -> None:
    clock = SimClock(scale=10_000)
    fired = threading.Event()
    try:
        with clock.paused():
            clock.call_later(1.0, fired.set)  # 0.1 ms of wall time, were the clock running
            frozen = clock.now()
            time.sleep(0.05)  # 500 simulated seconds, had the clock run
            assert clock.now() == frozen
            assert not fired.is_set()
        assert fired.wait(5), "the timer fires once the clock runs again"
        assert clock.now() - frozen < 500, "the paused wall time is not counted"
    finally:
        clock.stop()


def test_given_a_paused_clock_when_paused_again_then_it_refuses() -> None:
    clock = SimClock(scale=10)
    with clock.paused(), pytest.raises(RuntimeError, match="already paused"), clock.paused():
        pass
