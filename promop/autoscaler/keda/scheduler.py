"""One timer heap and a few worker threads for every ScaledObject's scale loop.

KEDA runs one goroutine per ScaledObject; a thread each would not hold 10,000 of them. Here a
single heap orders the next tick of every key and a small pool runs the due ones. A key is
never run twice at once: a tick that comes due while the previous one still runs waits for it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

from promop.host.logs import fields

log = logging.getLogger("promop.autoscaler.keda")


class Scheduler:
    """`every(key, seconds, first_in)` starts (or re-times) a key's loop; `cancel(key)` ends it.

    `run(key)` is called in a worker thread; it returns nothing and must not raise (an exception
    is logged and the loop goes on: one bad ScaledObject never stops the others).
    """

    def __init__(self, run: Callable[[str], None], *, workers: int = 4,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._run = run
        self._clock = clock
        self._heap: list[tuple[float, int, str]] = []
        self._period: dict[str, float] = {}
        self._generation: dict[str, int] = {}      # a stale heap entry (re-timed or cancelled) is skipped
        self._running: set[str] = set()
        self._counter = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._threads = [threading.Thread(target=self._work, name=f"keda-loop-{i}", daemon=True)
                         for i in range(max(1, workers))]
        self.lateness_max = 0.0                    # seconds: the worst tick lateness seen (a saturated pool)
        self.lateness_last = 0.0                   # seconds: how late the last tick started

    def start(self) -> "Scheduler":
        for t in self._threads:
            t.start()
        return self

    def __len__(self) -> int:
        with self._cond:
            return len(self._period)

    def __contains__(self, key: str) -> bool:
        with self._cond:
            return key in self._period

    def every(self, key: str, seconds: float, first_in: float = 0.0) -> None:
        """Run `key` in `first_in` seconds, then every `seconds` (replacing any earlier timing)."""
        with self._cond:
            self._period[key] = max(0.05, float(seconds))
            gen = self._generation.get(key, 0) + 1
            self._generation[key] = gen
            heapq.heappush(self._heap, (self._clock() + max(0.0, first_in), gen, key))
            self._cond.notify()

    def trigger(self, key: str) -> None:
        """Run `key` now (keeping its period): e.g. after its spec changed."""
        with self._cond:
            if key not in self._period:
                return
            gen = self._generation[key] + 1
            self._generation[key] = gen
            heapq.heappush(self._heap, (self._clock(), gen, key))
            self._cond.notify()

    def cancel(self, key: str) -> None:
        with self._cond:
            self._period.pop(key, None)
            self._generation[key] = self._generation.get(key, 0) + 1

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        for t in self._threads:
            if t.is_alive():
                t.join(timeout)

    def _next(self) -> str | None:
        """The next due key (blocking until one is due), or None when stopped."""
        with self._cond:
            while not self._stopped:
                if not self._heap:
                    self._cond.wait(1.0)
                    continue
                at, gen, key = self._heap[0]
                now = self._clock()
                if at > now:
                    self._cond.wait(min(1.0, at - now))
                    continue
                heapq.heappop(self._heap)
                if self._generation.get(key) != gen or key not in self._period:
                    continue
                if key in self._running:  # still running: come back when it ends
                    heapq.heappush(self._heap, (now + 0.05, gen, key))
                    continue
                self.lateness_last = now - at
                self.lateness_max = max(self.lateness_max, self.lateness_last)
                self._running.add(key)
                period = self._period[key]
                heapq.heappush(self._heap, (at + period if at + period > now else now + period, gen, key))
                return key
            return None

    def _work(self) -> None:
        while True:
            key = self._next()
            if key is None:
                return
            try:
                self._run(key)
            except Exception as exc:  # noqa: BLE001 - the loop goes on
                log.exception("scale loop failed", **fields(scaledobject=key, error=str(exc)))
            finally:
                with self._cond:
                    self._running.discard(key)
