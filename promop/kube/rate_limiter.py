"""Per-item and overall retry rate limiters (client-go's default_rate_limiters.go).

A failing key must back off exponentially on its own (one broken object must
not hot-loop), and the whole queue must not retry faster than the API server
can take (a thundering herd after an outage). The default controller limiter is
the maximum of both, as in client-go and prometheus-operator.
"""

from __future__ import annotations

import threading
from typing import Hashable, Optional, Protocol

from promop.kube.queue import MONOTONIC, Clock


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Record a failure of `item`; return how many seconds to wait before retrying."""

    def forget(self, item: Hashable) -> None:
        """Clear the item's failure history (it succeeded)."""

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of `item` have been recorded since the last `forget`."""


class ItemExponentialFailureRateLimiter:
    """`base * 2**failures`, capped at `max_delay`; per item.

    With the defaults (5 ms, 1000 s): 5 ms, 10 ms, ... 655.36 s on the 18th
    failure, then 1000 s.
    """

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay <= 0 or max_delay <= 0:
            raise ValueError(
                f"ItemExponentialFailureRateLimiter: base_delay ({base_delay}) and "
                f"max_delay ({max_delay}) must be positive"
            )
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        # 2**exp of a huge exponent is an exact (slow) Python int; past 2**1023 the
        # float product would overflow, and the cap is long reached anyway.
        if exp > 1023:
            return self.max_delay
        return min(self.base_delay * float(2**exp), self.max_delay)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """A token bucket over all items (golang.org/x/time/rate `Reserve().Delay()`).

    The bucket starts full with `burst` tokens and refills at `qps` per second.
    Every call takes a token even when it has to wait for it, so the debt
    accumulates: with 10 qps / burst 100, calls 1-100 wait 0, then 100 ms,
    200 ms, ... Never forgets and never counts requeues.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Optional[Clock] = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(
                f"BucketRateLimiter: qps ({qps}) must be positive and burst ({burst}) at least 1"
            )
        self.qps = float(qps)
        self.burst = burst
        self._clock = clock or MONOTONIC
        self._tokens = float(burst)
        self._last = self._clock.now()
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            now = self._clock.now()
            if now > self._last:
                self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
                self._last = now
            self._tokens -= 1.0
            return -self._tokens / self.qps if self._tokens < 0 else 0.0

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay of several limiters; every limiter advances on every call."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Optional[Clock] = None) -> MaxOfRateLimiter:
    """client-go's DefaultControllerRateLimiter: exponential 5 ms..1000 s per item, and
    10 qps with a burst of 100 overall."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
