"""A work queue whose items can be added after a delay (client-go's delaying queue).

client-go runs one goroutine per queue that moves due items from a min-heap
into the FIFO. Here there is no extra thread: every operation that can observe
the FIFO (`add`, `get`, `done`, `len`, `shutdown`, a metrics scrape) first moves
the due items across, in ready-time order, and a waiting `get` sleeps only
until the earliest ready time (or the heartbeat). The observable order is the
same as client-go's: a due item is queued before anything added after it
became due.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any, Hashable, Optional

from promop.kube.queue import Queue

# A heap entry: [ready_at, sequence, item, live]; `live` is cleared instead of
# deleting from the middle of the heap when the item's ready time moves earlier.
_READY, _SEQ, _ITEM, _LIVE = 0, 1, 2, 3


class DelayingQueue(Queue):
    """`Queue` plus `add_after(item, delay_seconds)`.

    A repeated `add_after` of a waiting item only ever moves its ready time
    earlier. Items still waiting when the queue shuts down are dropped.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Takes `Queue`'s arguments (name, registry, clock)."""
        super().__init__(*args, **kwargs)
        self._heap: list[list[Any]] = []
        self._waiting: dict[Hashable, list[Any]] = {}
        self._seq = itertools.count()

    def add_after(self, item: Hashable, delay_seconds: float) -> None:
        with self._lock:
            if self._shutting_down:
                return
            if self._stats is not None:
                self._stats.retries += 1
            self._promote_due()  # an item that is already due is queued, not waiting
            if delay_seconds <= 0:
                self._add_locked(item)
                return
            ready_at = self._clock.now() + delay_seconds
            entry = self._waiting.get(item)
            if entry is not None:
                if ready_at >= entry[_READY]:
                    return
                entry[_LIVE] = False
            entry = [ready_at, next(self._seq), item, True]
            self._waiting[item] = entry
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._wake_for_delayed()

    def _promote_due(self) -> Optional[float]:
        heap = self._heap
        if not heap:
            return None
        if self._shutting_down:
            heap.clear()
            self._waiting.clear()
            return None
        now = self._clock.now()
        while heap and heap[0][_READY] <= now:
            entry = heapq.heappop(heap)
            if entry[_LIVE]:
                del self._waiting[entry[_ITEM]]
                self._add_locked(entry[_ITEM])
        while heap and not heap[0][_LIVE]:
            heapq.heappop(heap)
        return heap[0][_READY] if heap else None

    def waiting(self) -> int:
        """How many items wait for their ready time (not yet in the FIFO)."""
        with self._lock:
            self._promote_due()
            return len(self._waiting)
