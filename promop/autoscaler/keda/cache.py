"""The one shared Prometheus result cache: a distinct query runs at most once per polling interval.

KEDA queries each trigger once per poll and again on every HPA sync (the request in KEDA #2918);
here the scale loops of every ScaledObject and the metrics endpoint the HPA reaches all read
through this cache, keyed by promop.keda.prometheus.cache_key (server, query, namespace, headers,
parameters, auth identity). A result, value or error, is reused for at most `max_age` seconds,
the smallest pollingInterval among its users. Concurrent readers of one missing key wait for one
fetch (single flight) instead of each querying.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Hashable


@dataclass(frozen=True)
class Result:
    """What one query gave: a value, or the error text (never both)."""

    value: float | None
    error: str | None
    at: float                     # clock time of the fetch


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Result | None = None


class ResultCache:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._results: dict[Hashable, Result] = {}
        self._flights: dict[Hashable, _Flight] = {}
        self.fetches = 0          # queries actually sent (the benchmark's figure)
        self.hits = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._results)

    def get(self, key: Hashable, max_age: float, fetch: Callable[[], float]) -> Result:
        """The cached result when younger than `max_age`, else `fetch()`'s (an exception is an error
        result: its text is what the trigger reports)."""
        with self._lock:
            cached = self._results.get(key)
            if cached is not None and self._clock() - cached.at < max_age:
                self.hits += 1
                return cached
            flight = self._flights.get(key)
            leader = flight is None
            if leader:
                flight = self._flights[key] = _Flight()
        assert flight is not None
        if not leader:
            flight.done.wait(60.0)
            if flight.result is not None:
                with self._lock:
                    self.hits += 1
                return flight.result
            return self.get(key, max_age, fetch)
        try:
            value, error = fetch(), None
        except Exception as exc:  # noqa: BLE001 - a failed query is a result (error) like any other
            value, error = None, str(exc) or type(exc).__name__
        result = Result(value, error, self._clock())
        with self._lock:
            self.fetches += 1
            self._results[key] = result
            self._flights.pop(key, None)
        flight.result = result
        flight.done.set()
        return result

    def peek(self, key: Hashable) -> Result | None:
        """The last result, however old (for `promop keda explain`)."""
        with self._lock:
            return self._results.get(key)

    def prune(self, keep: set) -> None:
        """Drop the results no ScaledObject uses any more."""
        with self._lock:
            for k in [k for k in self._results if k not in keep]:
                del self._results[k]
