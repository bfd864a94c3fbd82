"""Incremental selection: one Prometheus's decisions over every candidate of a kind, kept between
renders and updated from the objects that changed.

At 10,000 ServiceMonitors a full select() of every candidate (and building a cache key over all
of them) was a third of an edit's sync, although an edit changes one object. The index keeps, per
candidate object, the Decision it got, and on the next render decides only on the objects that
are new or changed. "Changed" is judged the way the render cache judges it (promop.render.cache:
an object is identified by uid + resourceVersion) and more strictly still: the very same object
(the informer hands over the same dict while an object is unchanged) with the same
resourceVersion. An object without uid or resourceVersion is always decided again. Whatever the
decisions depend on besides the object itself (the Prometheus's identity and selector fields, the
Namespace objects and their labels) is the caller's `basis`: when it differs, everything is
decided again.

The result is exactly select()'s (tests/render/test_selection_index.py compares the two over
random edits, deletions, selector and namespace-label changes).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from promop.render.model import Decision, Problem
from promop.render.selection import Decider

_Entry = tuple  # (object, version or None, Decision)


def _version(obj: Mapping[str, Any]) -> str | None:
    md = obj.get("metadata") or {}
    return md.get("resourceVersion") if md.get("uid") else None


def _name(d: Decision) -> tuple[str, str]:
    return d.namespace, d.name


class SelectionIndex:
    """The decisions of one kind for one Prometheus (see the module docstring). Not thread-safe:
    one per render cache, as the operator keeps one cache per Prometheus and syncs a key at a time."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._basis: Hashable = None
        self._warnings: list[Problem] = []
        self._decide: Decider | None = None
        self._memo: dict[int, _Entry] = {}  # id(obj) -> entry; holds obj, so its id is not reused
        self._order: list[Decision] = []  # sorted by (namespace, name), as select() returns them
        self._pos: dict[tuple[str, str], int] = {}  # (namespace, name) -> index in _order, names unique
        self._selected: tuple[Any, list] | None = None  # (the list last seen, its selected objects)
        self.full_updates = 0  # for tests and benchmarks: how often everything was decided again

    def update(self, basis: Hashable, prometheus: Mapping[str, Any], objs: Sequence[Mapping[str, Any]],
               namespaces: Sequence[Mapping[str, Any]]) -> tuple[list[Decision], list[Problem]]:
        """select(prometheus, objs, kind, namespaces)'s decisions and the warnings it would add."""
        self._selected = None
        if basis != self._basis or self._decide is None:
            return self._full(basis, prometheus, objs, namespaces)
        memo, fresh, changed = self._memo, {}, []
        for obj in objs:  # the hot loop at 10,000 candidates: _version() inlined
            key = id(obj)
            entry = memo.get(key)
            if entry is not None and entry[0] is obj and entry[1] is not None \
                    and entry[1] == (obj.get("metadata") or {}).get("resourceVersion"):
                fresh[key] = entry
            else:
                changed.append(obj)
        if not changed and len(fresh) == len(memo) == len(objs):
            return self._order, list(self._warnings)
        decide = self._decide
        for obj in changed:
            fresh[id(obj)] = (obj, _version(obj), decide(obj))
        if len(fresh) != len(objs):  # the same object twice in the list: select() decides on it twice
            return self._full(basis, prometheus, objs, namespaces)
        removed = [entry[2] for key, entry in memo.items() if fresh.get(key) is not entry]
        self._memo = fresh
        added = [fresh[id(obj)][2] for obj in changed]
        if len(self._pos) == len(self._order) and sorted(map(_name, removed)) == sorted(map(_name, added)) \
                and len({_name(d) for d in added}) == len(added):
            order = list(self._order)  # the same names: each changed decision takes its old place
            for d in added:
                order[self._pos[_name(d)]] = d
            self._order = order
        else:  # objects came or went: sort again (stable: input order among equal names, as select())
            self._reorder([fresh[id(obj)][2] for obj in objs])
        return self._order, list(self._warnings)

    def selected(self, objs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]] | None:
        """The objects of `objs` selected, in their order, when `objs` is the list of the last
        update (else None: the caller selects by name)."""
        if self._selected is not None and self._selected[0] is objs:
            return self._selected[1]
        memo = self._memo
        if len(objs) != len(memo):
            return None
        out = []
        for obj in objs:
            entry = memo.get(id(obj))
            if entry is None or entry[0] is not obj:
                return None
            if entry[2].selected:
                out.append(obj)
        self._selected = (objs, out)
        return out

    def _full(self, basis: Hashable, prometheus: Mapping[str, Any], objs: Sequence[Mapping[str, Any]],
              namespaces: Sequence[Mapping[str, Any]]) -> tuple[list[Decision], list[Problem]]:
        self.full_updates += 1
        warnings: list[Problem] = []
        decide = Decider(prometheus, self.kind, namespaces, warnings)
        memo: dict[int, _Entry] = {}
        decisions = []
        for obj in objs:
            entry = (obj, _version(obj), decide(obj))
            memo[id(obj)] = entry
            decisions.append(entry[2])
        self._basis, self._decide, self._warnings = basis, decide, warnings
        self._memo = memo if len(memo) == len(objs) else {}  # duplicates: never reused (decided again next time)
        if not self._memo:
            self._basis = None
        self._reorder(decisions)
        return self._order, list(warnings)

    def _reorder(self, decisions: list[Decision]) -> None:
        self._order = sorted(decisions, key=_name)
        self._pos = {_name(d): i for i, d in enumerate(self._order)}
