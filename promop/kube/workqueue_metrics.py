"""Workqueue metrics, as component-base names them, prefixed `prometheus_operator_`.

Each queue keeps plain counters and histogram buckets that it updates while it
already holds its own lock (no extra lock, no per-queue metrics thread); one
collector per registry turns them into metric families at scrape time, which
is also when `unfinished_work_seconds` and `longest_running_processor_seconds`
are computed from the in-flight start times. Queues with the same name in one
registry are summed; a garbage-collected queue's counters are kept so that the
counters never go backwards.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Hashable, Iterator, Optional

from prometheus_client import REGISTRY
from prometheus_client.utils import floatToGoString
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from promop.kube.clock import Clock

PREFIX = "prometheus_operator_workqueue_"
#: component-base's ExponentialBuckets(10e-7, 10, 10): 1 µs ... 1000 s.
BUCKETS: tuple[float, ...] = (1e-06, 1e-05, 1e-04, 1e-03, 1e-02, 1e-01, 1.0, 10.0, 100.0, 1000.0)

_HELP = {
    "depth": "Current depth of workqueue",
    "adds_total": "Total number of adds handled by workqueue",
    "queue_duration_seconds": "How long in seconds an item stays in workqueue before being requested.",
    "work_duration_seconds": "How long in seconds processing an item from workqueue takes.",
    "unfinished_work_seconds": (
        "How many seconds of work has done that is in progress and hasn't been observed by "
        "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
        "threads by observing the rate at which this increases."
    ),
    "longest_running_processor_seconds": (
        "How many seconds has the longest running processor for workqueue been running."
    ),
    "retries_total": "Total number of retries handled by workqueue",
}


class _Histogram:
    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.total = 0.0

    def merge(self, other: "_Histogram") -> None:
        for i, count in enumerate(other.counts):
            self.counts[i] += count
        self.total += other.total

    def copy(self) -> "_Histogram":
        new = _Histogram()
        new.merge(self)
        return new

    def cumulative(self) -> list[tuple[str, float]]:
        out, running = [], 0
        for bound, count in zip(BUCKETS + (float("inf"),), self.counts):
            running += count
            out.append((floatToGoString(bound), running))
        return out


class QueueStats:
    """One queue's numbers. The queue updates the counters and histograms with its
    lock held; depth and the in-flight gauges are read from its own dicts."""

    def __init__(
        self,
        name: str,
        lock: Any,
        clock: Clock,
        owner: Any,
        dirty: dict[Hashable, float],
        processing: dict[Hashable, float],
    ) -> None:
        self.name = name
        self.lock = lock
        self.clock = clock
        self.owner = weakref.ref(owner)
        self._dirty = dirty  # depth: client-go's +1 per non-deduplicated add, -1 per get
        self._processing = processing  # item -> start time
        self.adds = 0
        self.retries = 0
        self.queue_latency = _Histogram()
        self.work_duration = _Histogram()

    def snapshot(self) -> "_Totals":
        with self.lock:
            owner = self.owner()
            if owner is not None:
                owner._promote_due()  # a due delayed item counts in depth, as in client-go
            now = self.clock.now()
            ages = [now - started for started in self._processing.values()]
            return _Totals(
                depth=len(self._dirty),
                adds=self.adds,
                retries=self.retries,
                queue_latency=self.queue_latency.copy(),
                work_duration=self.work_duration.copy(),
                unfinished=sum(ages),
                longest=max(ages, default=0.0),
            )


class _Totals:
    __slots__ = ("depth", "adds", "retries", "queue_latency", "work_duration", "unfinished", "longest")

    def __init__(self, depth=0, adds=0, retries=0, queue_latency=None, work_duration=None,
                 unfinished=0.0, longest=0.0) -> None:
        self.depth = depth
        self.adds = adds
        self.retries = retries
        self.queue_latency = queue_latency or _Histogram()
        self.work_duration = work_duration or _Histogram()
        self.unfinished = unfinished
        self.longest = longest

    def merge(self, other: "_Totals") -> None:
        self.depth += other.depth
        self.adds += other.adds
        self.retries += other.retries
        self.queue_latency.merge(other.queue_latency)
        self.work_duration.merge(other.work_duration)
        self.unfinished += other.unfinished
        self.longest = max(self.longest, other.longest)


class _Collector:
    """All workqueues of one registry."""

    def __init__(self) -> None:
        # Re-entrant: a queue's finalizer may run (GC) in a thread inside collect().
        self._lock = threading.RLock()
        self._live: list[QueueStats] = []
        self._retired: dict[str, _Totals] = {}

    def add(self, stats: QueueStats, owner: Any) -> None:
        with self._lock:
            self._live.append(stats)
        weakref.finalize(owner, self._retire, stats)

    def _retire(self, stats: QueueStats) -> None:
        totals = stats.snapshot()
        totals.depth, totals.unfinished, totals.longest = 0, 0.0, 0.0
        with self._lock:
            self._live = [s for s in self._live if s is not stats]
            self._retired.setdefault(stats.name, _Totals()).merge(totals)

    def describe(self) -> Iterator[Metric]:
        return iter(self._families({}))

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            live = list(self._live)
            by_name = {name: _merged(_Totals(), t) for name, t in self._retired.items()}
        for stats in live:  # queue locks are taken without holding ours
            by_name.setdefault(stats.name, _Totals()).merge(stats.snapshot())
        return iter(self._families(by_name))

    @staticmethod
    def _families(by_name: dict[str, _Totals]) -> list[Metric]:
        def gauge(key: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(PREFIX + key, _HELP[key], labels=["name"])

        def counter(key: str) -> CounterMetricFamily:
            return CounterMetricFamily(PREFIX + key, _HELP[key], labels=["name"])

        def histogram(key: str) -> HistogramMetricFamily:
            return HistogramMetricFamily(PREFIX + key, _HELP[key], labels=["name"])

        depth, adds, retries = gauge("depth"), counter("adds_total"), counter("retries_total")
        queue_latency = histogram("queue_duration_seconds")
        work_duration = histogram("work_duration_seconds")
        unfinished = gauge("unfinished_work_seconds")
        longest = gauge("longest_running_processor_seconds")
        for name, t in sorted(by_name.items()):
            depth.add_metric([name], t.depth)
            adds.add_metric([name], t.adds)
            retries.add_metric([name], t.retries)
            queue_latency.add_metric([name], t.queue_latency.cumulative(), t.queue_latency.total)
            work_duration.add_metric([name], t.work_duration.cumulative(), t.work_duration.total)
            unfinished.add_metric([name], t.unfinished)
            longest.add_metric([name], t.longest)
        return [depth, adds, queue_latency, work_duration, unfinished, longest, retries]


def _merged(into: _Totals, other: _Totals) -> _Totals:
    into.merge(other)
    return into


_collectors: "weakref.WeakKeyDictionary[Any, _Collector]" = weakref.WeakKeyDictionary()
_collectors_lock = threading.Lock()


def register_queue(stats: QueueStats, registry: Any = None) -> QueueStats:
    """Expose a queue's stats through `registry` (default: prometheus_client.REGISTRY)."""
    registry = REGISTRY if registry is None else registry
    with _collectors_lock:
        collector = _collectors.get(registry)
        if collector is None:
            collector = _Collector()
            registry.register(collector)
            _collectors[registry] = collector
    collector.add(stats, stats.owner())
    return stats
