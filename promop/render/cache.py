"""RenderCache: reuse per-monitor fragments (and rule ConfigMaps) between renders.

A fragment is keyed by the monitor's identity and version (uid +
resourceVersion, or a content hash when either is missing) plus a digest of
every Prometheus/option input that can change it. It is reused only if every
Secret/ConfigMap key it read still has the same value, so a render with the
cache gives exactly the output of a render without it.

Results share dicts with the cache: treat RenderResult contents as read-only.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from promop.render.context import GenContext
from promop.render import listdiff
from promop.render.generate import ConfigMemo, Fragment, monitor_fragment, sort_key
from promop.render.listdiff import change_limit
from promop.render.selection_index import SelectionIndex
from promop.render.split import PartMemo
from promop.render.store import Store


def object_key(obj: Mapping[str, Any]) -> tuple:
    """Identity + version of an object: (uid, resourceVersion), or a content hash."""
    md = obj.get("metadata") or {}
    uid, rv = md.get("uid"), md.get("resourceVersion")
    if uid and rv:
        return ("rv", uid, rv)
    blob = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return ("sha", hashlib.sha256(blob.encode()).hexdigest())


def _reads_valid(store: Store, reads: Mapping[tuple[str, str, str, str], str | None]) -> bool:
    return all(store.get(*ref) == value for ref, value in reads.items())


class _BoundedDict(dict):
    """A dict that forgets everything when it grows past `limit` (entries are cheap to recompute)."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: Hashable, value: Any) -> None:
        if len(self) >= self.limit:
            self.clear()
        super().__setitem__(key, value)


@dataclass
class _Fragments:
    """What sorted_fragments() saw and gave for one kind: per position of the input list its
    fragment, sort key and rank in the sorted output; the positions whose fragment read a key."""

    snap: listdiff.Snapshot
    monitor_key: str
    frags: list
    keys: list[str]
    sorted: list
    rank: list[int]
    reading: set[int]


class RenderCache:
    """An LRU memo of monitor fragments and rule renders; one may serve many Prometheus objects."""

    def __init__(self, max_entries: int = 100_000, max_renders: int = 8, keep_jobs: bool = True):
        # Per-object entries (fragments, references, warnings) are small: many are kept. Whole-render
        # entries (rule ConfigMaps, selections over every candidate) are large and only the latest
        # few are useful, so a long-running operator must not accumulate them.
        self.max_entries = max_entries
        self.max_renders = max_renders
        # False: cached fragments keep their jobs as text only (Fragment.drop_jobs), for a caller
        # that never reads RenderResult.config (the operator); reading it decodes them again
        self.keep_jobs = keep_jobs
        self._fragments: OrderedDict[Hashable, Fragment] = OrderedDict()
        self._rules: OrderedDict[Hashable, Any] = OrderedDict()
        # Cheap per-object/per-input memos (selection, references, unsupported-field warnings,
        # the gzipped config's members); not counted in hits/misses, which measure fragment/rule reuse.
        self._memo: OrderedDict[Hashable, Any] = OrderedDict()
        self._renders: OrderedDict[Hashable, Any] = OrderedDict()
        self._members: dict[tuple, bytes] = {}  # the gzip member of each piece of the latest config
        self.config_memo = ConfigMemo()  # the last config's assembly and pieces, to patch after an edit
        self.part_memo = PartMemo()  # the same for the part Secrets of a split config (promop.render.split)
        # Each PrometheusRule's rendered file (or rejection), keyed by everything it depends on, so a
        # change to one PrometheusRule re-renders that one only (see rules.build_rule_configmaps).
        self.rule_files: _BoundedDict = _BoundedDict(max_entries)
        # (table id, entry kind, uid) -> the key of that object's latest entry: an older version
        # of an object is never asked for again, so its entry is dropped when a new one is stored.
        self._latest: dict[Hashable, Hashable] = {}
        self.hits = 0
        self.misses = 0
        # per kind: the selection of the (one) Prometheus this cache serves, updated incrementally
        self._selections: dict[str, SelectionIndex] = {}
        self._lists: dict[Hashable, Any] = {}  # per list pass (tag): what its latest call saw and gave
        self._versions: list[tuple[Sequence, list]] = []  # the latest few lists' resourceVersions
        # offload(ctx, kind, objs) -> a handle whose result() gives, per object, a fragment rendered
        # elsewhere (as from_answer makes it) or None; None: render them all here. The operator sets
        # it to a second process for its first renders (promop.operator.render_pool); pure otherwise.
        self.offload: Callable[..., Any] | None = None
        self.from_answer: Callable[..., Fragment] | None = None
        # a pass offloads only with at least this many objects new since the last pass: an edit's
        # full pass (an addition, a deletion) does not even look for its misses
        self.offload_min = 2

    def sorted_fragments(self, ctx: GenContext, monitor_key: str, kind: str,
                         objs: Sequence[Mapping[str, Any]]) -> list[Fragment]:
        """fragment(...) of each object of `objs`, sorted by `<namespace>/<name>` (stable, as
        sorted(objs, key=sort_key)). Against the list of the previous call for `kind` (the same
        monitor_key), only the positions that changed (promop.render.listdiff) and the fragments
        that read a Secret or ConfigMap key (checked again) are looked at; the rest keep their
        fragment and their place in the sorted list."""
        tag = ("fragments", kind)
        rvs = self.versions_of(objs)
        memo: _Fragments | None = self._lists.get(tag)
        if memo is not None and memo.monitor_key == monitor_key:
            changed = memo.snap.changed(objs, rvs, change_limit(len(objs)))
            if changed is not None:
                done = self._patch_fragments(ctx, memo, kind, objs, rvs, changed)
                if done is not None:
                    return done
        return self._all_fragments(ctx, memo if memo is not None and memo.monitor_key == monitor_key else None,
                                   monitor_key, kind, objs, rvs)

    def _patch_fragments(self, ctx: GenContext, memo: "_Fragments", kind: str, objs: Sequence[Mapping[str, Any]],
                         rvs: list, changed: list[int]) -> list[Fragment] | None:
        """The previous sorted list with the changed positions' fragments replaced; None if a changed
        object sorts elsewhere (a full pass then)."""
        frags, out, reading = list(memo.frags), list(memo.sorted), set(memo.reading)
        changed_set = set(changed)
        store = ctx.store
        for i in sorted(changed_set.union(memo.reading)):
            obj = objs[i]
            if i not in changed_set and _reads_valid(store, frags[i].reads):
                continue
            if sort_key(obj) != memo.keys[i]:
                return None
            frag = frags[i] = self.fragment(ctx, memo.monitor_key, kind, obj)
            out[memo.rank[i]] = frag
            if frag.reads:
                reading.add(i)
            else:
                reading.discard(i)
        self.hits += len(objs) - len(changed)
        self._lists[("fragments", kind)] = _Fragments(listdiff.Snapshot(objs, rvs), memo.monitor_key, frags,
                                                      memo.keys, out, memo.rank, reading)
        return out

    def _all_fragments(self, ctx: GenContext, memo: "_Fragments | None", monitor_key: str, kind: str,
                       objs: Sequence[Mapping[str, Any]], rvs: list) -> list[Fragment]:
        """Every position: the previous call's unchanged objects are found by identity (one dict
        lookup each), the rest through fragment()."""
        known: dict[int, tuple] = {}
        if memo is not None:
            known = {id(o): (o, rv, f) for o, rv, f in zip(memo.snap.objs, memo.snap.rvs, memo.frags)}
        store = ctx.store
        frags: list[Fragment] = []
        elsewhere = self._offload(ctx, monitor_key, kind, objs, rvs, known)
        away = elsewhere[0] if elsewhere is not None else ()
        for i, (obj, rv) in enumerate(zip(objs, rvs)):  # hot on a full pass: once per selected monitor
            entry = known.get(id(obj))
            if entry is not None and entry[0] is obj and rv is not None and entry[1] == rv \
                    and (not entry[2].reads or _reads_valid(store, entry[2].reads)):
                self.hits += 1
                frags.append(entry[2])
            elif i in away:
                frags.append(None)  # type: ignore[arg-type] - filled in below
            else:
                frags.append(self.fragment(ctx, monitor_key, kind, obj))
        if elsewhere is not None:
            for i, answer in zip(elsewhere[1], elsewhere[2].result()):
                frags[i] = self.fragment(ctx, monitor_key, kind, objs[i], answer)
        keys = [sort_key(obj) for obj in objs]
        order = sorted(range(len(objs)), key=keys.__getitem__)
        rank = [0] * len(objs)
        for r, i in enumerate(order):
            rank[i] = r
        out = [frags[i] for i in order]
        reading = {i for i, f in enumerate(frags) if f.reads}
        self._lists[("fragments", kind)] = _Fragments(listdiff.Snapshot(objs, rvs), monitor_key, frags, keys,
                                                      out, rank, reading)
        return out

    def _offload(self, ctx: GenContext, monitor_key: str, kind: str, objs: Sequence[Mapping[str, Any]], rvs: list,
                 known: dict) -> tuple[set[int], list[int], Any] | None:
        """The second half of this pass's misses handed to `offload` (positions as a set and in order,
        and its handle); None when there is no offload or it declined."""
        if self.offload is None or self.from_answer is None or len(objs) - len(known) < max(2, self.offload_min):
            return None
        misses = [i for i, (obj, rv) in enumerate(zip(objs, rvs))
                  if (known.get(id(obj)) or (None,))[0] is not obj
                  and (kind, object_key(obj), monitor_key) not in self._fragments]
        theirs = misses[len(misses) // 2:]
        handle = self.offload(ctx, kind, [objs[i] for i in theirs]) if theirs else None
        return (set(theirs), theirs, handle) if handle is not None else None

    def fragment(self, ctx: GenContext, monitor_key: str, kind: str, obj: Mapping[str, Any],
                 answer: Any = None) -> Fragment:
        """The cached fragment of `obj`, else rendered (or made from `answer`, rendered elsewhere)."""
        key = (kind, object_key(obj), monitor_key)
        frag = self._fragments.get(key)
        if frag is not None and _reads_valid(ctx.store, frag.reads):
            self._fragments.move_to_end(key)
            self.hits += 1
            return frag
        self.misses += 1
        if answer is not None and self.from_answer is not None:
            frag = self.from_answer(kind, obj, answer, self.keep_jobs)
        else:
            frag = monitor_fragment(ctx, kind, obj)
            if not self.keep_jobs:
                frag.drop_jobs()
        self._replace_version(self._fragments, (kind, monitor_key), key)
        self._put(self._fragments, key, frag)
        return frag

    def rules(self, prometheus: Mapping[str, Any], rules: Sequence[Mapping[str, Any]], options: Any, build: Callable[[], Any]) -> Any:
        """The rule render for these selected rules, built by `build()` on a miss."""
        md = prometheus.get("metadata") or {}
        # Not status, resourceVersion or managedFields: the operator's own status writes must not
        # invalidate the (expensive) rule render.
        identity = {k: md.get(k) for k in ("name", "namespace", "uid", "labels", "annotations")}
        blob = json.dumps([identity, prometheus.get("spec"), repr(options)], sort_keys=True, default=str)
        key = (hashlib.sha256(blob.encode()).hexdigest(), tuple(object_key(r) for r in rules))
        if key in self._rules:
            self._rules.move_to_end(key)
            self.hits += 1
            return self._rules[key]
        self.misses += 1
        result = build()
        self._put(self._rules, key, result, self.max_renders)
        return result

    def selection_index(self, kind: str) -> SelectionIndex:
        """The incremental selection of `kind` (promop.render.selection_index); it starts over by
        itself when asked for another Prometheus, selector or set of namespace labels."""
        index = self._selections.get(kind)
        if index is None:
            index = self._selections[kind] = SelectionIndex(kind, self.versions_of, self.note_versions)
        return index

    def per_objects(self, tag: Hashable, objs: Sequence[Mapping[str, Any]], compute: Callable[[Any], Any]) -> list:
        """[compute(obj) for obj in objs], each memoised as per_object(tag, ...) would. Against the
        list of the previous call with this tag only the changed positions are computed
        (promop.render.listdiff); on another length, the previous list's objects are found by
        identity (the same dict at the same resourceVersion) and the rest go through per_object."""
        rvs = self.versions_of(objs)
        memo = self._lists.get(tag)
        if memo is not None:
            snap, last = memo
            changed = snap.changed(objs, rvs, change_limit(len(objs)))
            if changed is not None:
                out = list(last)
                for i in changed:
                    obj = objs[i]
                    out[i] = self.per_object(tag, obj, lambda o=obj: compute(o))
                self._lists[tag] = (listdiff.Snapshot(objs, rvs), out)
                return out
        def one(obj: Mapping[str, Any]) -> Any:
            return self.per_object(tag, obj, lambda: compute(obj))

        out = memo[0].carry_over(memo[1], objs, rvs, one) if memo is not None else [one(obj) for obj in objs]
        self._lists[tag] = (listdiff.Snapshot(objs, rvs), out)
        return out

    def begin(self) -> None:
        """A new pass over the inputs (a render, or references()): a caller may have changed an object
        in place since the last (bumping its resourceVersion), so versions are read again."""
        self._versions = []

    def versions_of(self, objs: Sequence[Mapping[str, Any]]) -> list:
        """listdiff.versions(objs), shared by the passes over the same list in one render (begin()
        starts another)."""
        for held, rvs in self._versions:
            if held is objs:
                return rvs
        rvs = listdiff.versions(objs)
        self.note_versions(objs, rvs)
        return rvs

    def note_versions(self, objs: Sequence[Mapping[str, Any]], rvs: list) -> None:
        """The versions of `objs`, known to the caller (a selection of a list already read)."""
        self._versions = [(objs, rvs), *self._versions[:11]]

    def per_object(self, tag: Hashable, obj: Mapping[str, Any], compute: Callable[[], Any]) -> Any:
        """`compute()` for a result that depends on `obj` alone, memoised by its identity + version."""
        key = (tag, object_key(obj))
        if key not in self._memo:
            self._replace_version(self._memo, tag, key)
        return self._memoised(self._memo, key, compute, self.max_entries)

    def _replace_version(self, table: OrderedDict, scope: Hashable, key: tuple) -> None:
        """Forget the entry of the previous version of the object `key` names (uid + version keys only)."""
        version = next((part for part in key if isinstance(part, tuple) and part and part[0] == "rv"), None)
        if version is None:
            return
        slot = (id(table), scope, version[1])
        old = self._latest.get(slot)
        if old is not None and old != key:
            table.pop(old, None)
        if len(self._latest) > 4 * self.max_entries:  # deleted objects' slots: only an optimisation
            self._latest.clear()
        self._latest[slot] = key

    def per_render(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """`compute()` for a result over a whole render's inputs (only the latest few are kept);
        the caller guarantees the key covers every input."""
        return self._memoised(self._renders, key, compute, self.max_renders)

    def _memoised(self, table: OrderedDict, key: Hashable, compute: Callable[[], Any], limit: int) -> Any:
        if key in table:
            table.move_to_end(key)
            return table[key]
        value = compute()
        self._put(table, key, value, limit)
        return value

    def compressed_pieces(self, config_pieces: Sequence[tuple], compress: Callable[..., tuple[bytes, dict]]) -> bytes:
        """compress(pieces, memo): the gzipped config, each unchanged piece's member reused."""
        gz, self._members = compress(config_pieces, self._members)
        return gz

    def _put(self, table: OrderedDict, key: Hashable, value: Any, limit: int | None = None) -> None:
        table[key] = value
        while len(table) > (self.max_entries if limit is None else limit):
            table.popitem(last=False)

    def __len__(self) -> int:
        return len(self._fragments) + len(self._rules) + len(self._memo) + len(self._renders) + len(self.rule_files)
