"""One copy of the strings every cached ScaledObject and HPA repeats.

Each object decoded from a watch event has its own copy of every key ("conditions", "lastTransitionTime",
"scaledobject.keda.sh/name", ...) and of the values KEDA's status repeats ("ScaledObjectReady", "ScaledObject
is defined correctly and is ready for scaling", "apps/v1.Deployment", ...). At 10,000 ScaledObjects that was
about half of a cached object (docs/keda.md, Benchmark). The table is bounded (`SHARED_MAX` strings), so
names and uids of deleted objects cannot grow it without end, which sys.intern would do (interned strings
are immortal on Python 3.12); the values unique to one object (name, uid, resourceVersion, timestamps of
metadata) are not entered at all.
"""

from __future__ import annotations

import threading
from typing import Any

SHARED_MAX = 8192
UNIQUE_METADATA = frozenset({"name", "uid", "resourceVersion", "creationTimestamp", "generation",
                             "deletionTimestamp", "managedFields"})

_shared: dict[str, str] = {}
_shared_lock = threading.Lock()


def shared(s: str) -> str:
    """The table's copy of `s` while the table has room; `s` itself after."""
    got = _shared.get(s)
    if got is not None:
        return got
    with _shared_lock:
        if len(_shared) < SHARED_MAX:
            return _shared.setdefault(s, s)
    return s


def shared_size() -> int:
    return len(_shared)


def shared_copy(value: Any) -> Any:
    """A copy of JSON-decoded `value` (dicts, lists, scalars) whose strings come from the table."""
    if type(value) is str:
        return shared(value)
    if type(value) is dict:
        return {shared(k) if type(k) is str else k: shared_copy(v) for k, v in value.items()}
    if type(value) is list:
        return [shared_copy(v) for v in value]
    return value


def shared_object(obj: dict) -> dict:
    """`obj` copied with `shared_copy`, except metadata's values unique to this object (kept as they are)
    and metadata.managedFields (dropped, as the informer's default transform does)."""
    out = {}
    for k, v in obj.items():
        if k == "metadata" and type(v) is dict:
            out["metadata"] = {shared(mk): (mv if mk in UNIQUE_METADATA else shared_copy(mv))
                               for mk, mv in v.items() if mk != "managedFields"}
        else:
            out[shared(k)] = shared_copy(v)
    return out


# the LIST path may cut managedFields out before decoding (promop.kube.transforms.drops_managed_fields)
shared_object.strips_managed_fields = True  # type: ignore[attr-defined]
