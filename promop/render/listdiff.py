"""What changed between two lists of objects, by position, at C speed.

A sync hands the render its candidates as one list per kind, in the informer store's order: an
update keeps an object's place (a dict update does), so after one edit the list differs from
the last one at one position. Each of the render's per-object passes (selection, references,
warnings, fragments, the config's assembly) used to walk every candidate in Python to find the
unchanged ones: at 30,000 monitors that was most of an edit's sync. Here the walk is
`map`/`compress` over the two lists (no Python frame per object), and only the positions found
are handled in Python.

A position is changed when it holds another object than before, or the same object at another
`metadata.resourceVersion` (objects are read-only, but a caller that edits one in place bumps its
version, as the apiserver would). An object without a resourceVersion is judged changed every
time (`volatile`): the passes then fall back to what they do for such objects (a content key).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_, is_not, itemgetter, methodcaller, ne, or_
from typing import Any, Callable

_METADATA = itemgetter("metadata")
_RESOURCE_VERSION = methodcaller("get", "resourceVersion")


def versions(objs: Sequence[Any]) -> list[Any]:
    """metadata.resourceVersion of each object (None where it has none)."""
    try:
        return list(map(_RESOURCE_VERSION, map(_METADATA, objs)))
    except (KeyError, TypeError, AttributeError):  # no metadata, or not a dict: the slow, forgiving way
        return [((o.get("metadata") or {}) if isinstance(o, dict) else {}).get("resourceVersion") for o in objs]


def unversioned(rvs: Sequence[Any]) -> list[int]:
    """Positions without a resourceVersion."""
    return list(compress(range(len(rvs)), map(is_, rvs, repeat(None))))


class Snapshot:
    """A list as one pass last saw it: its objects and their versions (copies: the caller's list may
    be reused or changed)."""

    __slots__ = ("objs", "rvs", "volatile")

    def __init__(self, objs: Sequence[Any], rvs: Sequence[Any]) -> None:
        self.objs = list(objs)
        self.rvs = list(rvs)
        self.volatile = unversioned(self.rvs)

    def changed(self, objs: Sequence[Any], rvs: Sequence[Any], limit: int) -> list[int] | None:
        """Sorted positions at which `objs` (with versions `rvs`) differs from this snapshot, volatile
        ones included; None when the lengths differ or more than `limit` changed (then a full pass is
        as cheap)."""
        if len(objs) != len(self.objs):
            return None
        found = list(compress(range(len(objs)), map(or_, map(is_not, objs, self.objs), map(ne, rvs, self.rvs))))
        if len(found) > limit:
            return None
        volatile = self.volatile
        if volatile:
            found = sorted(set(found).union(volatile))
        return found

    def carry_over(self, values: Sequence[Any], objs: Sequence[Any], rvs: Sequence[Any],
                   compute: Callable[[Any], Any]) -> list[Any]:
        """For a list of another length: `values[k]` (this snapshot's value at k) for each object of
        `objs` that this snapshot held (the same dict at the same, non-empty resourceVersion), found
        by identity; compute(obj) for the rest."""
        known = {id(o): (o, rv, v) for o, rv, v in zip(self.objs, self.rvs, values)}
        out = []
        for obj, rv in zip(objs, rvs):
            entry = known.get(id(obj))
            if entry is not None and entry[0] is obj and rv is not None and entry[1] == rv:
                out.append(entry[2])
            else:
                out.append(compute(obj))
        return out


def change_limit(n: int) -> int:
    """How many changed positions are still worth handling one by one."""
    return 64 + n // 16
