"""Incremental selection: one Prometheus's decisions over every candidate of a kind, kept between
renders and updated from the objects that changed.

At 10,000 ServiceMonitors a full select() of every candidate (and building a cache key over all
of them) was a third of an edit's sync, although an edit changes one object. The index keeps, per
position of the last list, the Decision it got, and on the next render decides only on the
positions that changed (promop.render.listdiff: another object, or the same one at another
resourceVersion; the informer hands over the same dict while an object is unchanged). When
objects came or went, the last list's objects are found by identity instead. An object without
a resourceVersion is always decided again. Whatever the
decisions depend on besides the object itself (the Prometheus's identity and selector fields, the
Namespace objects and their labels) is the caller's `basis`: when it differs, everything is
decided again.

The result is exactly select()'s (tests/render/test_selection_index.py compares the two over
random edits, deletions, selector and namespace-label changes).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import compress
from typing import Any

from promop.render import listdiff
from promop.render.model import Decision, Problem
from promop.render.selection import Decider


def _name(d: Decision) -> tuple[str, str]:
    return d.namespace, d.name


class SelectionIndex:
    """The decisions of one kind for one Prometheus (see the module docstring). Not thread-safe:
    one per render cache, as the operator keeps one cache per Prometheus and syncs a key at a time."""

    def __init__(self, kind: str, versions_of: Callable[[Sequence[Any]], list] = listdiff.versions,
                 note_versions: Callable[[Sequence[Any], list], None] | None = None) -> None:
        self.kind = kind
        self._versions_of = versions_of
        self._note_versions = note_versions  # told the selected list's versions (the render cache shares them)
        self._basis: Hashable = None
        self._warnings: list[Problem] = []
        self._decide: Decider | None = None
        self._snap: listdiff.Snapshot | None = None  # the list of the last update, per position:
        self._decisions: list[Decision] = []  # its Decision
        self._flags: list[bool] = []  # and whether it is selected
        self._src: Sequence[Any] | None = None  # that list itself (selected() answers for it only)
        self._order: list[Decision] = []  # sorted by (namespace, name), as select() returns them
        self._pos: dict[tuple[str, str], int] = {}  # (namespace, name) -> index in _order, names unique
        self._selected: list | None = None  # the selected objects of _src, once asked
        self.full_updates = 0  # for tests and benchmarks: how often everything was decided again

    def update(self, basis: Hashable, prometheus: Mapping[str, Any], objs: Sequence[Mapping[str, Any]],
               namespaces: Sequence[Mapping[str, Any]]) -> tuple[list[Decision], list[Problem]]:
        """select(prometheus, objs, kind, namespaces)'s decisions and the warnings it would add."""
        if basis != self._basis or self._decide is None or self._snap is None:
            return self._full(basis, prometheus, objs, namespaces)
        rvs = self._versions_of(objs)
        changed = self._snap.changed(objs, rvs, listdiff.change_limit(len(objs)))
        if changed is None:
            return self._by_identity(objs, rvs)
        if not changed:  # the same objects (another list, or the same asked again): the same selection
            if objs is not self._src:
                self._snap, self._src = listdiff.Snapshot(objs, rvs), objs
            return self._order, list(self._warnings)
        decide = self._decide
        decisions, flags = list(self._decisions), list(self._flags)
        removed, added = [], []
        for i in changed:
            removed.append(decisions[i])
            d = decisions[i] = decide(objs[i])
            flags[i] = d.selected
            added.append(d)
        self._decisions, self._flags = decisions, flags
        self._snap, self._src, self._selected = listdiff.Snapshot(objs, rvs), objs, None
        self._patch_order(removed, added)
        return self._order, list(self._warnings)

    def _patch_order(self, removed: list[Decision], added: list[Decision]) -> None:
        """_order with `removed` replaced by `added`: in place when they are the same names (each
        takes its old place), else sorted again (stable: input order among equal names, as select())."""
        if len(self._pos) == len(self._order) and sorted(map(_name, removed)) == sorted(map(_name, added)) \
                and len({_name(d) for d in added}) == len(added):
            order = list(self._order)
            for d in added:
                order[self._pos[_name(d)]] = d
            self._order = order
        else:
            self._reorder(self._decisions)

    def _by_identity(self, objs: Sequence[Mapping[str, Any]], rvs: list) -> tuple[list[Decision], list[Problem]]:
        """Objects came or went: the last list's objects are found by identity (the same dict at the
        same resourceVersion keeps its decision), the rest decided."""
        decisions = self._snap.carry_over(self._decisions, objs, rvs, self._decide)
        self._remember(objs, rvs, decisions)
        self._reorder(decisions)
        return self._order, list(self._warnings)

    def selected(self, objs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]] | None:
        """The objects of `objs` selected, in their order, when `objs` is the list of the last
        update (else None: the caller selects by name)."""
        if objs is not self._src:
            return None
        if self._selected is None:
            self._selected = list(compress(objs, self._flags))
            if self._note_versions is not None:
                self._note_versions(self._selected, list(compress(self._snap.rvs, self._flags)))
        return self._selected

    def _remember(self, objs: Sequence[Mapping[str, Any]], rvs: list, decisions: list[Decision]) -> None:
        self._snap, self._src, self._selected = listdiff.Snapshot(objs, rvs), objs, None
        self._decisions = decisions
        self._flags = [d.selected for d in decisions]

    def _full(self, basis: Hashable, prometheus: Mapping[str, Any], objs: Sequence[Mapping[str, Any]],
              namespaces: Sequence[Mapping[str, Any]]) -> tuple[list[Decision], list[Problem]]:
        self.full_updates += 1
        warnings: list[Problem] = []
        decide = Decider(prometheus, self.kind, namespaces, warnings)
        decisions = [decide(obj) for obj in objs]
        self._basis, self._decide, self._warnings = basis, decide, warnings
        self._remember(objs, self._versions_of(objs), decisions)
        self._reorder(decisions)
        return self._order, list(warnings)

    def _reorder(self, decisions: list[Decision]) -> None:
        self._order = sorted(decisions, key=_name)
        self._pos = {_name(d): i for i, d in enumerate(self._order)}
