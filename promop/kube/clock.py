"""The queues' and rate limiters' clock: monotonic time and timed waits, real or driven by a test.

The clock is injectable so that the delaying queue and the rate limiters can be
tested deterministically with `FakeClock`; production uses `time.monotonic`.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Optional


class Clock:
    """Monotonic time and timed waits; the default uses the real clock."""

    def now(self) -> float:
        return time.monotonic()

    def wait(self, cond: threading.Condition, timeout: Optional[float]) -> None:
        """Wait on `cond` (held by the caller) for at most `timeout` seconds of this clock."""
        cond.wait(timeout)

    def sleep(self, seconds: float, stop: Optional[threading.Event] = None) -> bool:
        """Sleep, returning True early if `stop` gets set."""
        if stop is None:
            time.sleep(max(0.0, seconds))
            return False
        return stop.wait(max(0.0, seconds))


MONOTONIC = Clock()


class FakeClock(Clock):
    """A clock that only moves when a test calls `advance`.

    Threads waiting through this clock are woken on every advance and re-check
    their deadlines, so tests never depend on real time passing.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self._moved = threading.Condition(self._lock)
        self._conds: "weakref.WeakSet[threading.Condition]" = weakref.WeakSet()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"FakeClock.advance: cannot move time backwards ({seconds} s)")
        with self._lock:
            self._now += seconds
            conds = list(self._conds)
            self._moved.notify_all()
        for cond in conds:
            with cond:
                cond.notify_all()

    def wait(self, cond: threading.Condition, timeout: Optional[float]) -> None:
        with self._lock:
            self._conds.add(cond)
        # Woken by advance() or by the queue itself; the real-time cap only
        # guards against a test that forgets to advance the clock.
        cond.wait(1.0)

    def sleep(self, seconds: float, stop: Optional[threading.Event] = None) -> bool:
        deadline = self._now + seconds
        with self._lock:
            while self._now < deadline:
                if stop is not None and stop.is_set():
                    return True
                self._moved.wait(0.05)
        return bool(stop is not None and stop.is_set())
