"""The workqueue's public names in one import (client-go's util/workqueue).

    from promop.kube.workqueue import RateLimitingQueue
    q = RateLimitingQueue(name="prometheus")
"""

from promop.kube.delaying_queue import DelayingQueue
from promop.kube.queue import HEARTBEAT_SECONDS, MONOTONIC, Clock, FakeClock, Queue
from promop.kube.rate_limiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from promop.kube.rate_limiting_queue import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "Clock",
    "DelayingQueue",
    "FakeClock",
    "HEARTBEAT_SECONDS",
    "ItemExponentialFailureRateLimiter",
    "MONOTONIC",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
]
