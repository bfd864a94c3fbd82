"""Evaluate a ScaledObject's triggers at the same time, in their order.

Why: KEDA queries a ScaledObject's triggers in parallel (reference §2.4); evaluated one after
another, a trigger whose server hangs until its `timeout` (3 s by default) would delay every later
trigger's result, and so the activation and the health the poll records. The first item runs in the
calling thread (a one-trigger ScaledObject costs no thread hand-off); the others go to one small pool
shared by all scale loops, bounded so a cluster of hanging servers cannot grow threads without end.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Fanout:
    def __init__(self, workers: int = 8) -> None:
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _executor(self) -> ThreadPoolExecutor | None:
        with self._lock:
            if self._closed:
                return None
            if self._pool is None:   # created on first need: most ScaledObjects have one trigger
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="keda-trigger")
            return self._pool

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """[fn(item) for item in items], the items after the first evaluated concurrently; an
        exception of fn is raised as by the sequential comprehension (the first in order)."""
        if len(items) <= 1:
            return [fn(item) for item in items]
        pool = self._executor()
        if pool is None:
            return [fn(item) for item in items]
        futures: list[Future] = [pool.submit(fn, item) for item in items[1:]]
        first = fn(items[0])
        return [first, *(f.result() for f in futures)]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
