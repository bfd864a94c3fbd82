"""The worker half of a controller's lifecycle: stop taking work, then stop (queue, threads, informers).

The informer half is promop.kube.informer_group; a controller that owns a
work queue, worker threads and informers gets both from `QueueController`.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

from promop.kube.informer_group import InformerGroup


def keys_from(queue: Any) -> Iterator[Any]:
    """What a worker takes from `queue`, one key at a time, until the queue shuts down (client-go's
    processNextWorkItem loop); the worker marks each key done."""
    while True:
        key, shutdown = queue.get()
        if shutdown:
            return
        if key is not None:
            yield key


class QueueController(InformerGroup):
    """Mixin over `self.queue`, `self._threads` and `self._stopping` (set by the controller's __init__)."""

    queue: Any
    _threads: list[threading.Thread]
    _stopping: threading.Event

    def stop_taking_work(self) -> None:
        """Leadership lost: no new work starts (the process exits next)."""
        self._stopping.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Drop queued work, give each worker `timeout` to finish its item, stop the informers."""
        self._stopping.set()
        self.queue.shutdown()
        for t in self._threads:
            t.join(timeout)
        for inf in self.informers:
            inf.stop()
