"""One simulated clock for the sandbox.

Everything time-dependent in the sandbox (Step Functions Wait/Retry/Timeout, resource lifecycles,
scheduled EventBridge emissions) reads this clock, so realistic durations (EKS ~10 minutes,
HyperPod ~15 minutes) run in seconds. ``scale`` is simulated seconds per wall-clock second.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator


class SimClock:
    """A monotonic simulated clock that runs ``scale`` times faster than wall time.

    Args:
        scale: simulated seconds per wall second (> 0). 1.0 is real time.
        epoch: simulated epoch seconds at start (defaults to the wall clock at construction).
    """

    def __init__(self, scale: float = 60.0, epoch: float | None = None) -> None:
        if scale <= 0:
            raise ValueError("scale must be > 0")
        self.scale = float(scale)
        self._wall0 = time.monotonic()
        self._sim0 = time.time() if epoch is None else epoch
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._paused_at: float | None = None  # the wall time of pause(), while paused

    # -- reading -----------------------------------------------------------------------------
    def now(self) -> float:
        """Simulated epoch seconds (frozen while :meth:`paused`)."""
        wall = self._paused_at if self._paused_at is not None else time.monotonic()
        return self._sim0 + (wall - self._wall0) * self.scale

    # -- pausing -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Freeze simulated time inside the block: :meth:`now` stands still and no timer fires, so a test can
        observe a transient state (a cluster ``Creating``) however busy the machine is; on exit the clock runs on from
        where it stood (the paused wall time is not counted). Not reentrant."""
        with self._cv:
            if self._paused_at is not None:
                raise RuntimeError("the clock is already paused")
            self._paused_at = time.monotonic()
        try:
            yield
        finally:
            with self._cv:
                assert self._paused_at is not None
                self._wall0 += time.monotonic() - self._paused_at
                self._paused_at = None
                self._cv.notify_all()

    def to_wall(self, sim_seconds: float) -> float:
        """Wall seconds that ``sim_seconds`` of simulated time take."""
        return max(0.0, sim_seconds) / self.scale

    # -- waiting -----------------------------------------------------------------------------
    def sleep(self, sim_seconds: float) -> None:
        """Block for ``sim_seconds`` of simulated time."""
        time.sleep(self.to_wall(sim_seconds))

    def wait(self, event: threading.Event, sim_seconds: float | None) -> bool:
        """Wait on ``event`` for at most ``sim_seconds`` simulated seconds; returns event.is_set()."""
        return event.wait(None if sim_seconds is None else self.to_wall(sim_seconds))

    # -- scheduling --------------------------------------------------------------------------
    def call_later(self, sim_seconds: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the clock's timer thread after ``sim_seconds`` simulated seconds."""
        self.call_at(self.now() + sim_seconds, fn)

    def call_at(self, sim_time: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the clock's timer thread once simulated time reaches ``sim_time``."""
        with self._cv:
            heapq.heappush(self._timers, (sim_time, next(self._seq), fn))
            self._ensure_thread()
            self._cv.notify()

    def stop(self) -> None:
        """Stop the timer thread; pending timers are dropped."""
        with self._cv:
            self._stopped = True
            self._timers.clear()
            self._cv.notify()

    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sim-clock", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._stopped and (
                    self._paused_at is not None or not self._timers or self._timers[0][0] > self.now()
                ):
                    idle = self._paused_at is not None or not self._timers
                    timeout = None if idle else self.to_wall(self._timers[0][0] - self.now())
                    self._cv.wait(timeout)
                if self._stopped:
                    return
                _, _, fn = heapq.heappop(self._timers)
            try:
                fn()
            except Exception:
                import logging

                logging.getLogger(__name__).exception("sandbox timer failed")
