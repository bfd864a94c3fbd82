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
from bisect import bisect_left
from collections import deque
from typing import Any, Hashable, Optional

from promop.kube import workqueue_metrics
from promop.kube.clock import MONOTONIC, Clock, FakeClock
from promop.kube.workqueue_metrics import BUCKETS

#: Upper bound of any single wait, so a waiting thread re-checks its state even if
#: a notification were ever missed (client-go's delaying loop uses the same 10 s).
HEARTBEAT_SECONDS = 10.0

__all__ = ["HEARTBEAT_SECONDS", "MONOTONIC", "Clock", "FakeClock", "Queue"]


class Queue:
    """A FIFO of hashable items with deduplication and single-flight processing.

    - `add` of an item that is already waiting is a no-op;
    - `add` while the item is being processed gives exactly one more run after `done`;
    - `get` blocks until an item is available or the queue is shut down;
    - after `shutdown`, `get` still hands out the backlog and then returns `(None, True)`.

    Metrics (`prometheus_operator_workqueue_*{name}`) are kept only when `name` is set.
    """

    #: Delayed items (a heap in DelayingQueue); empty here, so `if self._heap` skips
    #: the promotion call on the hot path.
    _heap: Any = ()

    def __init__(
        self,
        name: Optional[str] = None,
        registry: Any = None,
        clock: Optional[Clock] = None,
    ) -> None:
        self.name = name
        self._clock = clock or MONOTONIC
        # time.monotonic itself on the hot path when the clock is the real one
        self._now = time.monotonic if type(self._clock) is Clock else self._clock.now
        # Operations take the bare lock (cheaper than entering the Condition) and
        # notify only when a thread is actually waiting.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiters = 0
        self._queue: deque[Hashable] = deque()
        # dirty: item -> time it became dirty; processing: item -> time handed out.
        # The times feed queue/work durations and the in-flight gauges.
        self._dirty: dict[Hashable, float] = {}
        self._processing: dict[Hashable, float] = {}
        self._shutting_down = False
        self._drain = False
        self._stats = (
            workqueue_metrics.register_queue(
                workqueue_metrics.QueueStats(
                    name, self._lock, self._clock, self, self._dirty, self._processing
                ),
                registry,
            )
            if name
            else None
        )

    # -- hooks for the delaying queue -------------------------------------------------
    def _promote_due(self) -> Optional[float]:
        """Move due delayed items into the queue; return the next ready time, if any."""
        return None

    def _wake_for_delayed(self) -> None:
        """Make one waiting `get` recompute its wait (a new earliest ready time)."""
        if self._waiters:
            self._cond.notify()

    # -- public API --------------------------------------------------------------------
    def add(self, item: Hashable) -> None:
        with self._lock:
            if self._shutting_down:
                return
            if self._heap:
                self._promote_due()
            self._add_locked(item)

    def _add_locked(self, item: Hashable) -> None:
        if item in self._dirty:
            return
        self._dirty[item] = self._now()
        if self._stats is not None:
            self._stats.adds += 1
        if item in self._processing:
            return
        self._queue.append(item)
        if self._waiters:
            self._cond.notify()

    def get(self, timeout: Optional[float] = None) -> tuple[Any, bool]:
        """Block for the next item: `(item, False)`, `(None, True)` once shut down and
        empty, or `(None, False)` when `timeout` seconds pass first (0 = don't block)."""
        with self._lock:
            if self._heap or not self._queue:
                if not self._wait_for_item(timeout):
                    return None, self._shutting_down
            item = self._queue.popleft()
            now = self._now()
            added = self._dirty.pop(item)
            self._processing[item] = now
            stats = self._stats
            if stats is not None:
                hist = stats.queue_latency
                hist.counts[bisect_left(BUCKETS, now - added)] += 1
                hist.total += now - added
            return item, False

    def _wait_for_item(self, timeout: Optional[float]) -> bool:
        """With the lock held: wait until the FIFO has an item (True), or the queue is
        shut down and empty, or `timeout` passes (False)."""
        clock = self._clock
        deadline = None if timeout is None else clock.now() + timeout
        while True:
            next_ready = self._promote_due()
            if self._queue:
                return True
            if self._shutting_down:
                return False
            wait = HEARTBEAT_SECONDS
            now = clock.now() if (next_ready is not None or deadline is not None) else 0.0
            if next_ready is not None:
                wait = min(wait, next_ready - now)
            if deadline is not None:
                remaining = deadline - now
                if remaining <= 0:
                    return False
                wait = min(wait, remaining)
            self._waiters += 1
            try:
                clock.wait(self._cond, max(wait, 0.0))
            finally:
                self._waiters -= 1

    def done(self, item: Hashable) -> None:
        """Mark the item processed; re-queue it if it was added meanwhile."""
        with self._lock:
            if self._heap:
                self._promote_due()  # due items were queued before this re-queue, as in client-go
            started = self._processing.pop(item, None)
            stats = self._stats
            if stats is not None and started is not None:
                hist = stats.work_duration
                elapsed = self._now() - started
                hist.counts[bisect_left(BUCKETS, elapsed)] += 1
                hist.total += elapsed
            if item in self._dirty:
                self._queue.append(item)
                if self._waiters:
                    self._cond.notify()
            if self._shutting_down and not self._processing:
                self._cond.notify_all()  # a shutdown_with_drain may be waiting

    def shutdown(self) -> None:
        """Stop accepting items; waiting `get`s return once the backlog is handed out."""
        with self._lock:
            self._begin_shutdown(drain=False)

    def shutdown_with_drain(self) -> None:
        """Shut down, then wait until every item handed out by `get` is `done`.

        Waits for in-flight items only, not for the backlog; a later `shutdown()`
        from another thread ends the wait."""
        with self._lock:
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
        with self._lock:
            return self._shutting_down

    def __len__(self) -> int:
        with self._lock:
            self._promote_due()
            return len(self._queue)

    def processing(self) -> int:
        """How many items are handed out and not yet `done`."""
        with self._lock:
            return len(self._processing)
