"""Object storage: one global resourceVersion counter, a bounded event history for resumable
watches, and fan-out of each committed change to the open watchers."""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import deque
from operator import itemgetter
from typing import Callable

from promop.sandbox.errors import expired
from promop.sandbox.watch import Event, Watcher, encode

ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped
Entry = tuple[dict, bytes]  # (object, its JSON)
_namespace_of = itemgetter(0)


class Store:
    """All state behind one re-entrant lock; callers hold `lock` across read-modify-write."""

    def __init__(self, history_size: int = 10000) -> None:
        self.lock = threading.RLock()
        self.rv = 0
        self.objects: dict[tuple[str, str], dict[ObjKey, Entry]] = {}
        # per resource, its objects' keys in (namespace, name) order, kept sorted on every
        # put/remove so a LIST page is a bisect and a slice, not a sort of the resource
        self.sorted_keys: dict[tuple[str, str], list[ObjKey]] = {}
        # the entries in the same order, so that a page is one slice (no lookup per object)
        self.sorted_entries: dict[tuple[str, str], list[Entry]] = {}
        self.history: deque[Event] = deque(maxlen=history_size)
        self.compacted_rv = 0  # events with rv <= this are no longer in history
        self.watchers: dict[tuple[str, str], set[Watcher]] = {}
        # owner uid -> set of (resource key, namespace, name) of dependents, for GC
        self.dependents: dict[str, set[tuple[tuple[str, str], str, str]]] = {}
        self.uids: dict[str, tuple[tuple[str, str], str, str]] = {}

    # -- reads ---------------------------------------------------------------------------------
    def get(self, key: tuple[str, str], namespace: str, name: str) -> dict | None:
        entry = self.objects.get(key, {}).get((namespace, name))
        return entry[0] if entry else None

    def _span(self, key: tuple[str, str], namespace: str | None) -> tuple[list[ObjKey], int,
                                                                          int]:
        """The sorted keys of a resource and the [lo, hi) range of one namespace (or all)."""
        keys = self.sorted_keys.get(key, [])
        if namespace is None:
            return keys, 0, len(keys)
        return (keys, bisect_left(keys, namespace, key=_namespace_of),
                bisect_right(keys, namespace, key=_namespace_of))

    def items(self, key: tuple[str, str], namespace: str | None) -> list[Entry]:
        """Entries sorted by (namespace, name), the order the real apiserver lists in."""
        keys, lo, hi = self._span(key, namespace)
        return self.sorted_entries.get(key, [])[lo:hi]

    def page(self, key: tuple[str, str], namespace: str | None, after: ObjKey | None,
             predicate: Callable[[dict], bool] | None,
             limit: int = 0) -> tuple[list[Entry], bool, int | None]:
        """Up to `limit` (0: no limit) matching entries after the key `after`, in list order.
        Returns (entries, whether more match, how many more): the count only without a
        predicate, as the apiserver gives remainingItemCount only for unfiltered lists.
        Cost: a bisect plus the page, or with a predicate the entries scanned to fill it."""
        keys, lo, hi = self._span(key, namespace)
        if after is not None:
            lo = max(lo, bisect_right(keys, after))
        in_order = self.sorted_entries.get(key, [])
        if predicate is None:
            end = min(hi, lo + limit) if limit else hi
            rest = hi - end
            return in_order[lo:end], rest > 0, rest or None
        entries: list[Entry] = []
        for index in range(lo, hi):
            entry = in_order[index]
            if predicate(entry[0]):
                if limit and len(entries) == limit:
                    return entries, True, None
                entries.append(entry)
        return entries, False, None

    def changed_since(self, key: tuple[str, str], rv: int) -> bool:
        """Whether any event of resource `key` is newer than `rv` (scans back from the end)."""
        for event in reversed(self.history):
            if event.rv <= rv:
                return False
            if event.key == key:
                return True
        return False

    def snapshot(self, key: tuple[str, str], namespace: str | None, rv: int) -> list[Entry]:
        """The resource's entries as they were at `rv`, in list order: the current ones with
        every later event of the resource rolled back. Caller checks `rv >= compacted_rv`."""
        state = {(e[0]["metadata"].get("namespace", ""), e[0]["metadata"]["name"]): e
                 for e in self.items(key, namespace)}
        for event in reversed(self.history):
            if event.rv <= rv:
                break
            if event.key != key:
                continue
            meta = event.obj["metadata"]
            where = (meta.get("namespace", ""), meta["name"])
            if namespace is not None and where[0] != namespace:
                continue
            if event.type == "ADDED":
                state.pop(where, None)
            elif event.old is not None:
                state[where] = (event.old, encode(event.old))
        return [state[k] for k in sorted(state)]

    def namespace_is_empty(self, namespace: str) -> bool:
        """No object of any resource left in `namespace`."""
        for key in self.sorted_keys:
            keys, lo, hi = self._span(key, namespace)
            if hi > lo:
                return False
        return True

    def by_uid(self, uid: str) -> dict | None:
        where = self.uids.get(uid)
        return self.get(*where) if where else None

    # -- writes --------------------------------------------------------------------------------
    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def put(self, key: tuple[str, str], obj: dict, old: dict | None) -> dict:
        """Store `obj` (a fresh dict the caller no longer mutates) with a new resourceVersion."""
        with self.lock:
            rv = self._next_rv()
            meta = obj["metadata"]
            meta["resourceVersion"] = str(rv)
            namespace, name = meta.get("namespace", ""), meta["name"]
            raw = encode(obj)
            bucket = self.objects.setdefault(key, {})
            keys = self.sorted_keys.setdefault(key, [])
            entries = self.sorted_entries.setdefault(key, [])
            where = bisect_left(keys, (namespace, name))
            entry = (obj, raw)
            if (namespace, name) in bucket:
                entries[where] = entry
            else:
                keys.insert(where, (namespace, name))
                entries.insert(where, entry)
            bucket[(namespace, name)] = entry
            self._index(key, namespace, name, old, obj)
            self._commit(Event(rv, "MODIFIED" if old else "ADDED", key, namespace, obj, raw, old))
            return obj

    def remove(self, key: tuple[str, str], obj: dict) -> dict:
        """Delete; the DELETED event carries the object at a new resourceVersion."""
        with self.lock:
            rv = self._next_rv()
            gone = dict(obj)
            gone["metadata"] = dict(obj["metadata"], resourceVersion=str(rv))
            namespace, name = gone["metadata"].get("namespace", ""), gone["metadata"]["name"]
            if self.objects.get(key, {}).pop((namespace, name), None) is not None:
                keys = self.sorted_keys[key]
                where = bisect_left(keys, (namespace, name))
                del keys[where]
                del self.sorted_entries[key][where]
            self._index(key, namespace, name, obj, None)
            self._commit(Event(rv, "DELETED", key, namespace, gone, encode(gone), obj))
            return gone

    def _index(self, key, namespace: str, name: str, old: dict | None, new: dict | None) -> None:
        where = (key, namespace, name)
        for ref in ((old or {}).get("metadata") or {}).get("ownerReferences") or []:
            self.dependents.get(ref.get("uid"), set()).discard(where)
        for ref in ((new or {}).get("metadata") or {}).get("ownerReferences") or []:
            self.dependents.setdefault(ref.get("uid"), set()).add(where)
        if old is not None:
            self.uids.pop(old["metadata"].get("uid"), None)
        if new is not None:
            self.uids[new["metadata"]["uid"]] = where

    def _commit(self, event: Event) -> None:
        if len(self.history) == self.history.maxlen and self.history:
            self.compacted_rv = self.history[0].rv
        self.history.append(event)
        for watcher in tuple(self.watchers.get(event.key, ())):
            watcher.offer(event)

    def drop_resource(self, key: tuple[str, str]) -> None:
        """Forget a whole resource (its CRD was deleted): close its watches."""
        with self.lock:
            self.objects.pop(key, None)
            self.sorted_keys.pop(key, None)
            self.sorted_entries.pop(key, None)
            for watcher in self.watchers.pop(key, set()):
                watcher.close()

    # -- watches -------------------------------------------------------------------------------
    def add_watcher(self, watcher: Watcher, since: int | None) -> None:
        """Register; replay history after `since`, or send the current state as ADDED."""
        with self.lock:
            if since is None:
                for obj, raw in self.items(watcher.key, watcher.namespace):
                    watcher.offer(Event(self.rv, "ADDED", watcher.key, "", obj, raw))
            else:
                if since < self.compacted_rv:
                    raise expired(f"too old resource version: {since} ({self.compacted_rv + 1})")
                for event in self.history:
                    if event.rv > since and event.key == watcher.key:
                        watcher.offer(event)
            if since is not None:  # what the client knows; replayed events raise it
                watcher.told_rv = max(watcher.told_rv, since)
            self.watchers.setdefault(watcher.key, set()).add(watcher)

    def remove_watcher(self, watcher: Watcher) -> None:
        with self.lock:
            self.watchers.get(watcher.key, set()).discard(watcher)

    def all_watchers(self) -> list[Watcher]:
        """The open watch streams (clients'), not the sandbox's own controllers' feeds: fault injection closes
        and counts streams, as an apiserver restart ends clients' watches, not kube-controller-manager's state."""
        with self.lock:
            return [w for group in self.watchers.values() for w in group if not w.internal]

    def compact(self) -> None:
        """Drop the history: any watch resuming from an RV before now gets 410 Expired."""
        with self.lock:
            self.history.clear()
            self.compacted_rv = self.rv
