"""The basic work queue, with client-go's dirty/processing semantics.

A controller must never process one key in two workers at once, must never
lose a change made while the key is being processed, and must coalesce a burst
of changes into one run. client-go's queue gets all three from two sets and a
FIFO (see shared reference §1.1); this is the same algorithm under one
`threading.Condition`.

The clock is injectable so that the delaying queue and the rate limiters can be
tested deterministically with `FakeClock`; production uses `time.monotonic`.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from typing import Any, Hashable, Optional

from promop.kube import workqueue_metrics

#: Upper bound of any single wait, so a waiting thread re-checks its state even if
#: a notification were ever missed (client-go's delaying loop uses the same 10 s).
HEARTBEAT_SECONDS = 10.0


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


class Queue:
    """A FIFO of hashable items with deduplication and single-flight processing.

    - `add` of an item that is already waiting is a no-op;
    - `add` while the item is being processed gives exactly one more run after `done`;
    - `get` blocks until an item is available or the queue is shut down;
    - after `shutdown`, `get` still hands out the backlog and then returns `(None, True)`.

    Metrics (`prometheus_operator_workqueue_*{name}`) are kept only when `name` is set.
    """

    def __init__(
        self,
        name: Optional[str] = None,
        registry: Any = None,
        clock: Optional[Clock] = None,
    ) -> None:
        self.name = name
        self._clock = clock or MONOTONIC
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[Hashable] = deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._shutting_down = False
        self._drain = False
        self._stats = (
            workqueue_metrics.register_queue(name, registry, self._cond, self._clock, self)
            if name
            else None
        )

    # -- hooks for the delaying queue -------------------------------------------------
    def _promote_due(self) -> Optional[float]:
        """Move due delayed items into the queue; return the next ready time, if any."""
        return None

    def _wake_for_delayed(self) -> None:
        """Make one waiting `get` recompute its wait (a new earliest ready time)."""
        self._cond.notify()

    # -- public API --------------------------------------------------------------------
    def add(self, item: Hashable) -> None:
        with self._cond:
            if self._shutting_down:
                return
            self._promote_due()
            self._add_locked(item)

    def _add_locked(self, item: Hashable) -> None:
        if item in self._dirty:
            return
        self._dirty.add(item)
        if self._stats is not None:
            self._stats.on_add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._cond.notify()

    def get(self, timeout: Optional[float] = None) -> tuple[Any, bool]:
        """Block for the next item: `(item, False)`, `(None, True)` once shut down and
        empty, or `(None, False)` when `timeout` seconds pass first (0 = don't block)."""
        clock = self._clock
        with self._cond:
            deadline = None if timeout is None else clock.now() + timeout
            while True:
                next_ready = self._promote_due()
                if self._queue:
                    break
                if self._shutting_down:
                    return None, True
                wait = HEARTBEAT_SECONDS
                now = clock.now() if (next_ready is not None or deadline is not None) else 0.0
                if next_ready is not None:
                    wait = min(wait, next_ready - now)
                if deadline is not None:
                    remaining = deadline - now
                    if remaining <= 0:
                        return None, False
                    wait = min(wait, remaining)
                clock.wait(self._cond, max(wait, 0.0))
            item = self._queue.popleft()
            self._processing.add(item)
            self._dirty.discard(item)
            if self._stats is not None:
                self._stats.on_get(item)
            return item, False

    def done(self, item: Hashable) -> None:
        """Mark the item processed; re-queue it if it was added meanwhile."""
        with self._cond:
            if self._stats is not None:
                self._stats.on_done(item)
            self._promote_due()  # due items were queued before this re-queue, as in client-go
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()
            elif not self._processing:
                self._cond.notify_all()

    def shutdown(self) -> None:
        """Stop accepting items; waiting `get`s return once the backlog is handed out."""
        with self._cond:
            self._begin_shutdown(drain=False)

    def shutdown_with_drain(self) -> None:
        """Shut down, then wait until every item handed out by `get` is `done`.

        Waits for in-flight items only, not for the backlog; a later `shutdown()`
        from another thread ends the wait."""
        with self._cond:
            self._begin_shutdown(drain=True)
            while self._processing and self._drain:
                self._cond.wait(HEARTBEAT_SECONDS)

    def _begin_shutdown(self, drain: bool) -> None:
        if not self._shutting_down:
            self._promote_due()  # what was due before shutdown is backlog, not dropped
        self._shutting_down = True
        self._drain = drain
        self._cond.notify_all()

    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def __len__(self) -> int:
        with self._cond:
            self._promote_due()
            return len(self._queue)

    def processing(self) -> int:
        """How many items are handed out and not yet `done`."""
        with self._cond:
            return len(self._processing)
