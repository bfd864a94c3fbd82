"""Fault injection for reliability tests: failing and slow requests, closed, stalled and
expired watches. Thread-safe; the server consults it on every request."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from promop.sandbox.errors import ApiError
from promop.sandbox.store import Store


@dataclass
class _Failure:
    remaining: int
    code: int
    verb: str | None
    resource: str | None
    retry_after: int | None


@dataclass
class _Latency:
    seconds: float
    verb: str | None
    resource: str | None


def _matches(rule_verb, rule_resource, verb: str, resource: str | None) -> bool:
    return (rule_verb is None or rule_verb == verb) and \
        (rule_resource is None or rule_resource == resource)


class Faults:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._failures: list[_Failure] = []
        self._latencies: list[_Latency] = []
        self.stalled = False

    def close_watches(self) -> None:
        """End every open watch stream now, cleanly, as an apiserver restart or timeout would."""
        for watcher in self._store.all_watchers():
            watcher.close()

    def fail_next(self, n: int, code: int, verb: str | None = None,
                  resource: str | None = None, retry_after: int | None = None) -> None:
        """The next `n` API requests matching verb and resource plural (None: any) get a Status
        with `code`, and a Retry-After header when `retry_after` is given. Discovery and other
        non-resource paths are never failed."""
        with self._lock:
            self._failures.append(_Failure(n, code, verb, resource, retry_after))

    def pending(self) -> int:
        """How many injected failures are still waiting to be served (0 once every
        `fail_next` has been used up or cleared), so tests can wait for a burst to pass."""
        with self._lock:
            return sum(failure.remaining for failure in self._failures)

    def add_latency(self, seconds: float, verb: str | None = None,
                    resource: str | None = None) -> None:
        with self._lock:
            self._latencies.append(_Latency(seconds, verb, resource))

    def stall_watches(self, stalled: bool = True) -> None:
        """While stalled, open watches (and those opened meanwhile) stay connected but receive
        nothing, not even bookmarks; their events queue up and are delivered, in order, when
        un-stalled. A stream whose timeoutSeconds passes while stalled ends without them."""
        self.stalled = stalled
        if not stalled:
            for watcher in self._store.all_watchers():
                watcher.wake()

    def compact(self) -> None:
        """Drop the event history: resuming a watch from an older RV gets ERROR 410 Expired."""
        self._store.compact()

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._latencies.clear()
        self.stall_watches(False)

    # -- used by the server --------------------------------------------------------------------
    def latency(self, verb: str, resource: str | None) -> float:
        with self._lock:
            return sum(l.seconds for l in self._latencies if _matches(l.verb, l.resource,
                                                                      verb, resource))

    def take_failure(self, verb: str, resource: str | None) -> ApiError | None:
        with self._lock:
            for failure in self._failures:
                if failure.remaining > 0 and _matches(failure.verb, failure.resource,
                                                      verb, resource):
                    failure.remaining -= 1
                    if failure.remaining == 0:
                        self._failures.remove(failure)
                    headers = {}
                    if failure.retry_after is not None:
                        headers["Retry-After"] = str(failure.retry_after)
                    details = {"retryAfterSeconds": failure.retry_after} \
                        if failure.retry_after is not None else None
                    return ApiError(failure.code, f"injected fault: {verb} {resource or ''} "
                                    f"failed with {failure.code}", details=details,
                                    headers=headers)
        return None
