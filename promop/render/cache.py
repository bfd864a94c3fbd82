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
from typing import Any, Callable, Hashable, Mapping, Sequence

from promop.render.context import GenContext
from promop.render.generate import Fragment, monitor_fragment
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


class RenderCache:
    """An LRU memo of monitor fragments and rule renders; one may serve many Prometheus objects."""

    def __init__(self, max_entries: int = 100_000):
        self.max_entries = max_entries
        self._fragments: OrderedDict[Hashable, Fragment] = OrderedDict()
        self._rules: OrderedDict[Hashable, Any] = OrderedDict()
        # Cheap per-object/per-input memos (selection, references, unsupported-field warnings,
        # the gzipped config); not counted in hits/misses, which measure fragment/rule reuse.
        self._memo: OrderedDict[Hashable, Any] = OrderedDict()
        self._gz: tuple[str, bytes] | None = None
        self.hits = 0
        self.misses = 0

    def fragment(self, ctx: GenContext, monitor_key: str, kind: str, obj: Mapping[str, Any]) -> Fragment:
        key = (kind, object_key(obj), monitor_key)
        frag = self._fragments.get(key)
        if frag is not None and _reads_valid(ctx.store, frag.reads):
            self._fragments.move_to_end(key)
            self.hits += 1
            return frag
        self.misses += 1
        frag = monitor_fragment(ctx, kind, obj)
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
        self._put(self._rules, key, result)
        return result

    def per_object(self, tag: str, obj: Mapping[str, Any], compute: Callable[[], Any]) -> Any:
        """`compute()` for a result that depends on `obj` alone, memoised by its identity + version."""
        return self.memo((tag, object_key(obj)), compute)

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """`compute()` memoised under `key`; the caller guarantees the key covers every input."""
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        value = compute()
        self._put(self._memo, key, value)
        return value

    def compressed(self, text: str, compress: Callable[[str], bytes]) -> bytes:
        """compress(text), reused while the config text is unchanged (gzip is the costliest step)."""
        if self._gz is None or self._gz[0] != text:
            self._gz = (text, compress(text))
        return self._gz[1]

    def _put(self, table: OrderedDict, key: Hashable, value: Any) -> None:
        table[key] = value
        while len(table) > self.max_entries:
            table.popitem(last=False)

    def __len__(self) -> int:
        return len(self._fragments) + len(self._rules) + len(self._memo)
