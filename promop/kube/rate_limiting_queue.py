"""The queue controllers use: a delaying queue plus a retry rate limiter.

Canonical worker loop (client-go's examples/workqueue)::

    while True:
        key, shutdown = q.get()
        if shutdown:
            return
        try:
            sync(key)
        except Exception:
            if q.num_requeues(key) < 5:
                q.add_rate_limited(key)
            else:
                q.forget(key)        # give up; report the error
        else:
            q.forget(key)            # success resets the key's backoff
        finally:
            q.done(key)
"""

from __future__ import annotations

from typing import Any, Hashable, Optional

from promop.kube.delaying_queue import DelayingQueue
from promop.kube.queue import Clock
from promop.kube.rate_limiter import RateLimiter, default_controller_rate_limiter


class RateLimitingQueue(DelayingQueue):
    """`DelayingQueue` plus `add_rate_limited`, `forget` and `num_requeues`.

    `rate_limiter=None` uses `default_controller_rate_limiter()` on the same clock.
    """

    def __init__(
        self,
        rate_limiter: Optional[RateLimiter] = None,
        name: Optional[str] = "prometheus",
        registry: Any = None,
        clock: Optional[Clock] = None,
    ) -> None:
        super().__init__(name=name, registry=registry, clock=clock)
        self.rate_limiter = rate_limiter or default_controller_rate_limiter(clock=clock)

    def add_rate_limited(self, item: Hashable) -> None:
        """Add the item once the rate limiter says so (records a failure of it)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Hashable) -> None:
        """Reset the item's backoff. It does not remove the item: still call `done`."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.rate_limiter.num_requeues(item)
