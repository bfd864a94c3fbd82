"""AMRenderCache: reuse each unchanged AlertmanagerConfig's converted part and its YAML text across renders.

An entry is keyed by the object (uid + generation, or a digest of its
spec when it has none) and by everything else its conversion reads from the
Alertmanager (version, matcher strategy, namespace, which global SMTP
defaults exist); it is valid only while every Secret/ConfigMap key it read
still has the value it had. So a render with the cache equals one without
(tested), and the operator's re-render after one object changed converts and
dumps that object only.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from promop.render.model import Problem


@dataclass
class Entry:
    object_key: tuple
    context_key: tuple
    reads: dict[tuple[str, str, str, str], str | None]
    fragment: Any = None  # amconfig.Fragment, or None when rejected
    problem: Problem | None = None
    warnings: list[Problem] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # part -> YAML text of its list items
    receiver_names: frozenset[str] = frozenset()  # names of fragment.receivers (checked for clashes each render)


def object_key(obj: Mapping[str, Any]) -> tuple:
    """(uid, generation): only a spec change bumps the generation (status.bindings writes do not)."""
    md = obj.get("metadata") or {}
    if md.get("generation") and md.get("uid"):
        return (md["uid"], md["generation"])
    blob = json.dumps([md.get("namespace"), md.get("name"), obj.get("spec")], sort_keys=True, default=str)
    return ("digest", hashlib.sha256(blob.encode()).hexdigest())


class AMRenderCache:
    """Per-AlertmanagerConfig fragments for one Alertmanager; thread-safe. Do not mutate what renders return."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._entries: dict[tuple[str, str], Entry] = {}
        self._refs: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self._max = max_entries
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[str, str], obj_key: tuple, ctx_key: tuple, store: Any) -> Entry | None:
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or entry.object_key != obj_key or entry.context_key != ctx_key:
            self.misses += 1
            return None
        for (kind, ns, name, k), value in entry.reads.items():
            if store.get(kind, ns, name, k) != value:
                self.misses += 1
                return None
        self.hits += 1
        return entry

    def put(self, key: tuple[str, str], entry: Entry) -> None:
        with self._lock:
            if len(self._entries) >= self._max and key not in self._entries:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = entry

    def references(self, obj: Mapping[str, Any], compute: Any) -> Any:
        """The Secret/ConfigMap references of one object, memoised by object_key."""
        key = ("refs", object_key(obj))
        with self._lock:
            hit = self._refs.get(key)
        if hit is None:
            hit = compute()
            with self._lock:
                if len(self._refs) >= self._max:
                    self._refs.clear()
                self._refs[key] = hit
        return hit

    def retain(self, keys: set[tuple[str, str]]) -> None:
        """Forget objects that are no longer candidates."""
        with self._lock:
            for key in [k for k in self._entries if k not in keys]:
                del self._entries[key]
