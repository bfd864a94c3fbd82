"""Work that a real cluster does after the request that caused it (kube-controller-manager's
garbage collector and namespace controller, the StatefulSet controller): one worker thread
that runs scheduled callables in due order. It exits when idle and starts again on demand, so
sandboxes left unstopped keep no thread."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

log = logging.getLogger("promop.sandbox")
IDLE_EXIT = 1.0  # seconds without work before the worker thread ends


class Background:
    def __init__(self, name: str = "promop-sandbox-background") -> None:
        self.name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._running = 0
        self.paused = False  # tests: hold all background work (nothing runs while True)

    def after(self, delay: float, work: Callable[[], None]) -> None:
        """Run `work` once, `delay` seconds from now (in due order with other work)."""
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), work))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def pause(self, paused: bool = True) -> None:
        with self._cond:
            self.paused = paused
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._heap) + self._running

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Until no work is scheduled or running (True), or `timeout` passes (False)."""
        deadline = time.monotonic() + timeout
        while self.pending():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def _run(self) -> None:
        idle_since = time.monotonic()
        while True:
            with self._cond:
                while True:
                    now = time.monotonic()
                    if self._heap and not self.paused and self._heap[0][0] <= now:
                        _, _, work = heapq.heappop(self._heap)
                        self._running += 1
                        break
                    if not self._heap and now - idle_since >= IDLE_EXIT:
                        self._thread = None
                        return
                    wait = IDLE_EXIT if not self._heap or self.paused else \
                        self._heap[0][0] - now
                    self._cond.wait(max(wait, 0.001))
            try:
                work()
            except Exception:  # a sandbox bug: log it, keep serving the rest
                log.exception("sandbox background work failed")
            finally:
                with self._cond:
                    self._running -= 1
                idle_since = time.monotonic()
