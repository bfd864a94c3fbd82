"""The operator's one record of what it last wrote (or last found already right), per object.

Three questions are answered from it, all keyed by (kind, namespace, name[, "status"]):

- is a watch event the echo of our own write?  (`matches`: the event's resourceVersion is the
  one our write produced, or the one we compared and found equal to what we wanted);
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
from dataclasses import dataclass
from typing import Any, Hashable, Mapping

ABSENT = "<absent>"  # the resourceVersion of an object that does not exist (a create replaces it)
NOTHING = object()  # `pending` when the cache is not behind any write of ours


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
        self._lock = threading.Lock()

    def wrote(self, key: Hashable, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
              content: Any) -> None:
        """We wrote `content` over `before` (None: created); the server answered `after`."""
        with self._lock:
            self._records[key] = Record(rv(before), rv(after), content)

    def matched(self, key: Hashable, current: Mapping[str, Any], content: Any) -> None:
        """`current` (from the API) already holds `content`: no write was needed."""
        with self._lock:
            self._records[key] = Record("", rv(current), content)

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

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)
