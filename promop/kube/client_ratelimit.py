"""Client-side QPS/burst limit for API requests (client-go's `rest.Config.QPS/Burst`).

A token bucket on the monotonic clock. `wait()` reserves a token first and
sleeps outside the lock, so concurrent callers queue fairly and a waiting
thread never blocks others from reserving.
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class TokenBucket:
    """`qps` tokens per second, at most `burst` saved; starts full. qps <= 0 disables it."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"client rate limit: burst must be >= 1 when qps > 0 (got qps={qps}, burst={burst})")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock()

    @property
    def enabled(self) -> bool:
        return self.qps > 0

    def _refill(self, now: float) -> None:
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now

    def reserve(self) -> float:
        """Take a token now (possibly going into debt); return how long to wait before using it."""
        if not self.enabled:
            return 0.0
        with self._lock:
            self._refill(self._clock())
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def try_accept(self) -> bool:
        """Take a token only if one is available right now."""
        if not self.enabled:
            return True
        with self._lock:
            self._refill(self._clock())
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    def wait(self, max_wait: float | None = None) -> float | None:
        """Block until a token is ours; return the seconds waited. If that would take
        longer than `max_wait`, give the token back and return None at once."""
        delay = self.reserve()
        if max_wait is not None and delay > max_wait:
            with self._lock:
                self._tokens += 1.0
            return None
        if delay > 0:
            self._sleep(delay)
        return delay
