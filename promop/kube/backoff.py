"""Jittered exponential backoff that forgets after a healthy spell (client-go's reflector backoff).

Defaults as the reflector: 0.8 s, doubling, jitter factor 1.0 (each delay is
d..2d), capped at 30 s, back to 0.8 s after 2 minutes without a failure.
Against a dead apiserver that settles around one attempt every 30 s.
"""

from __future__ import annotations

import random
import time
from typing import Callable


class Backoff:
    def __init__(
        self,
        base: float = 0.8,
        cap: float = 30.0,
        *,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if base <= 0 or cap < base or factor < 1 or jitter < 0:
            raise ValueError(
                f"backoff needs 0 < base <= cap, factor >= 1, jitter >= 0 (got base={base}, cap={cap}, "
                f"factor={factor}, jitter={jitter})"
            )
        self.base = base
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._clock = clock
        self._rng = rng
        self._current = base
        self._last_failure: float | None = None
        self.failures = 0

    def next_delay(self) -> float:
        """Record a failure and return how long to wait before the next attempt."""
        now = self._clock()
        if self._last_failure is not None and now - self._last_failure >= self.reset_after:
            self.reset()
        self._last_failure = now
        self.failures += 1
        delay = self._current
        self._current = min(self._current * self.factor, self.cap)
        return min(delay * (1.0 + self._rng() * self.jitter), self.cap)

    def reset(self) -> None:
        self._current = self.base
        self.failures = 0
