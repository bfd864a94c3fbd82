"""The informer cache: a thread-safe, indexed dict of objects (client-go's ThreadSafeStore).

Objects are the plain dicts decoded from the API, shared with every reader:
**treat them as read-only**. Nothing is deep-copied on read (that would cost
more than the cache saves); copy before you modify.

Keys are `namespace/name`, or `name` for cluster-scoped objects. Indexers
map an index name to a function `obj -> list[str]` of index values; the
`namespace` index is always present.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

IndexFunc = Callable[[dict], Iterable[str]]

NAMESPACE_INDEX = "namespace"


@dataclass(frozen=True)
class Tombstone:
    """A delete whose final state is unknown (client-go's DeletedFinalStateUnknown).

    Delivered to `on_delete` when an object vanished while the watch was
    down; `obj` is the last state we knew, possibly stale.
    """

    key: str
    obj: dict


def object_key(obj: dict | Tombstone) -> str:
    """`namespace/name` or `name`; a tombstone's own key."""
    if isinstance(obj, Tombstone):
        return obj.key
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        raise ValueError(f"object has no metadata, cannot key it: {str(obj)[:200]}")
    name = meta.get("name")
    if not name or not isinstance(name, str):
        raise ValueError(f"object has no metadata.name, cannot key it: {str(obj)[:200]}")
    ns = meta.get("namespace")
    if ns is not None and not isinstance(ns, str):
        raise ValueError(f"object's metadata.namespace is not a string, cannot key it: {str(obj)[:200]}")
    return f"{ns}/{name}" if ns else name


def namespace_index(obj: dict) -> list[str]:
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


class Store:
    """A key -> object dict under an RLock, with secondary indices."""

    def __init__(self, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, dict] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index}
        self._indices: dict[str, dict[str, set[str]]] = {NAMESPACE_INDEX: {}}
        if indexers:
            self.add_indexers(indexers)

    # ---- reads ------------------------------------------------------------------------

    def get(self, key_or_obj: str | dict) -> dict | None:
        """The cached object for a key (or for an object's key), or None."""
        key = key_or_obj if isinstance(key_or_obj, str) else object_key(key_or_obj)
        with self._lock:
            return self._items.get(key)

    def get_by_key(self, key: str) -> dict | None:
        with self._lock:
            return self._items.get(key)

    def list(self) -> list[dict]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def items(self) -> list[tuple[str, dict]]:
        with self._lock:
            return list(self._items.items())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def by_index(self, index_name: str, value: str) -> list[dict]:
        """Objects whose `index_name` function returned `value`."""
        with self._lock:
            return [self._items[k] for k in self._index(index_name).get(value, ())]

    def index_keys(self, index_name: str, value: str) -> list[str]:
        with self._lock:
            return list(self._index(index_name).get(value, ()))

    def index_values(self, index_name: str) -> list[str]:
        """Every value currently present in an index."""
        with self._lock:
            return list(self._index(index_name))

    def _index(self, index_name: str) -> dict[str, set[str]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"store has no index {index_name!r}; known: {sorted(self._indexers)}") from None

    # ---- indexers ---------------------------------------------------------------------

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """Add index functions; existing objects are indexed immediately."""
        with self._lock:
            clash = set(indexers) & set(self._indexers)
            if clash:
                raise ValueError(f"indexer(s) {sorted(clash)} already exist")
            for name, fn in indexers.items():
                self._indexers[name] = fn
                index: dict[str, set[str]] = {}
                self._indices[name] = index
                for key, obj in self._items.items():
                    for value in fn(obj):
                        index.setdefault(value, set()).add(key)

    # ---- writes (the informer's dispatch thread is the only writer) ------------------

    def add(self, obj: dict) -> dict | None:
        """Insert or replace; returns the previous object, if any."""
        return self.put(object_key(obj), obj)

    update = add

    def put(self, key: str, obj: dict) -> dict | None:
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._reindex(key, old, obj)
            return old

    def put_many(self, pairs: Iterable[tuple[str, dict]]) -> list[dict | None]:
        """`put` for many objects under one lock (a LIST page); returns the previous objects."""
        olds: list[dict | None] = []
        append = olds.append
        with self._lock:
            items = self._items
            for key, obj in pairs:
                old = items.get(key)
                items[key] = obj
                append(old)
                self._reindex(key, old, obj)
        return olds

    def put_all(self, keys: list[str], objs: list[dict]) -> list[dict | None]:
        """`put_many(zip(keys, objs))`, at C speed when the store is empty (a first LIST).

        Into an empty store with only the default namespace index, the objects go in
        with one `dict.update` and are indexed by their keys' namespace part
        (keys must be `object_key`s), which spares a walk over every object.
        """
        with self._lock:
            items = self._items
            if items or self._indexers != {NAMESPACE_INDEX: namespace_index}:
                return self.put_many(zip(keys, objs))
            items.update(zip(keys, objs))
            if len(items) != len(keys):  # a key repeats: redo it exactly (the earlier object is an "old")
                items.clear()
                return self.put_many(zip(keys, objs))
            ns_index = self._indices[NAMESPACE_INDEX]
            last_ns, last_keys = None, None
            for key in keys:
                ns, sep, _ = key.partition("/")
                if sep:
                    if ns != last_ns:
                        last_keys = ns_index.get(ns)
                        if last_keys is None:
                            last_keys = ns_index[ns] = set()
                        last_ns = ns
                    last_keys.add(key)
            return [None] * len(keys)

    def delete(self, key_or_obj: str | dict | Tombstone) -> dict | None:
        """Remove; returns the removed object, if it was cached."""
        key = key_or_obj if isinstance(key_or_obj, str) else object_key(key_or_obj)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._reindex(key, old, None)
            return old

    def replace(self, objects: Iterable[dict]) -> None:
        """Swap the whole content for `objects` (no events; the informer diffs itself)."""
        with self._lock:
            self._items = {object_key(o): o for o in objects}
            for name, fn in self._indexers.items():
                index: dict[str, set[str]] = {}
                for key, obj in self._items.items():
                    for value in fn(obj):
                        index.setdefault(value, set()).add(key)
                self._indices[name] = index

    def _reindex(self, key: str, old: dict | None, new: dict | None) -> None:
        for name, fn in self._indexers.items():
            old_values = list(fn(old)) if old is not None else []
            new_values = list(fn(new)) if new is not None else []
            if old_values == new_values:
                continue  # the common case: an update that kept the namespace/labels
            index = self._indices[name]
            for value in old_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]  # no empty sets left behind (k8s #84959)
            for value in new_values:
                index.setdefault(value, set()).add(key)
