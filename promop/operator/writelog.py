"""The operator's one record of what it last wrote (or last found already right), per object.

Three questions are answered from it, all keyed by (kind, namespace, name[, "status"]):

- is a watch event the echo of our own write?  (`echo`: the event's resourceVersion is one of
  the last versions our writes produced or we compared and found equal to what we wanted; a
  write still in flight, whose answer has not come back, is waited for with `settle`);
- may a comparison be skipped?  (`matches` again, plus the same wanted content);
- is the informer cache still behind our write?  (`pending`: the cache shows exactly the
  version our write replaced; until it catches up it is no basis for a comparison, since
  writing again would be a duplicate and a wanted state equal to the stale copy would wrongly
  look done).

Nothing here survives a restart, on purpose: a restarted operator (or a new leader) compares
with the API and must write nothing when nothing changed (tests/operator/test_operator_restart.py).
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Hashable, Iterator, Mapping

ABSENT = "<absent>"  # the resourceVersion of an object that does not exist (a create replaces it)
NOTHING = object()  # `pending` when the cache is not behind any write of ours
# versions kept per object for `echo`: writes in quick succession have their echoes arrive after
# the next write was recorded, and each is still ours
_ECHO_HISTORY = 16


def rv(obj: Mapping[str, Any] | None) -> str:
    """The object's resourceVersion, ABSENT for no object."""
    if obj is None:
        return ABSENT
    return str((obj.get("metadata") or {}).get("resourceVersion") or ABSENT)


@dataclass(frozen=True)
class Record:
    based_on: str  # resourceVersion our write replaced; "" when we only compared
    version: str  # resourceVersion after our write (or the one found equal)
    content: Any  # what we wanted: a fingerprint, an input hash or a comparable value


class WriteLog:
    """Thread-safe; one Record per key, replaced by each write or comparison."""

    def __init__(self) -> None:
        self._records: dict[Hashable, Record] = {}
        self._ours: dict[Hashable, deque[str]] = {}  # the last versions we wrote or found right
        self._in_flight: Counter[Hashable] = Counter()
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)

    def _record(self, key: Hashable, record: Record) -> None:
        self._records[key] = record
        self._ours.setdefault(key, deque(maxlen=_ECHO_HISTORY)).append(record.version)

    def wrote(self, key: Hashable, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
              content: Any) -> None:
        """We wrote `content` over `before` (None: created); the server answered `after`."""
        with self._lock:
            self._record(key, Record(rv(before), rv(after), content))

    def matched(self, key: Hashable, current: Mapping[str, Any], content: Any) -> None:
        """`current` (from the API) already holds `content`: no write was needed."""
        with self._lock:
            self._record(key, Record("", rv(current), content))

    @contextmanager
    def writing(self, key: Hashable) -> Iterator[None]:
        """Around a write of `key` and its `wrote`/`matched`: its echo may arrive before the
        server's answer, and `settle` lets whoever judges that echo wait for the answer."""
        with self._lock:
            self._in_flight[key] += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight[key] -= 1
                if self._in_flight[key] <= 0:
                    del self._in_flight[key]
                self._settled.notify_all()

    def settle(self, key: Hashable, timeout: float) -> bool:
        """Wait (at most `timeout` s) until no write of `key` is in flight; False if one still is."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while key in self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._settled.wait(left)
        return True

    def echo(self, key: Hashable, obj: Mapping[str, Any] | None) -> bool:
        """`obj`'s version is one of the last our writes produced or we found right for `key`.
        resourceVersions are unique per object, so a foreign write is never taken for ours."""
        version = rv(obj)
        if version == ABSENT:
            return False
        with self._lock:
            return version in self._ours.get(key, ())

    def get(self, key: Hashable) -> Record | None:
        with self._lock:
            return self._records.get(key)

    def matches(self, key: Hashable, obj: Mapping[str, Any] | None, content: Any = NOTHING) -> bool:
        """`obj`'s version is the one we wrote or found right (and, if given, for the same `content`)."""
        version = rv(obj)
        if version == ABSENT:
            return False
        with self._lock:
            record = self._records.get(key)
        return (record is not None and record.version == version
                and (content is NOTHING or record.content == content))

    def pending(self, key: Hashable, cached: Mapping[str, Any] | None) -> Any:
        """The content we wrote over exactly the `cached` version (the cache has not caught up
        with our write yet), else NOTHING."""
        with self._lock:
            record = self._records.get(key)
        # a create is never pending: "absent" is no unique version (the object may have been deleted since)
        if record is None or record.based_on in ("", ABSENT) or record.based_on != rv(cached):
            return NOTHING
        return record.content

    def forget(self, predicate: Any) -> None:
        """Drop every record whose key satisfies `predicate(key)` (an owner was deleted)."""
        with self._lock:
            for key in [k for k in self._records if predicate(k)]:
                del self._records[key]
                self._ours.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)
