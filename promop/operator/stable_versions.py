"""The monitors a render sees keep their resourceVersion while only their status changes.

The render cache (promop.render.cache) keys each monitor's fragment, references, warnings and
the whole selection by uid + resourceVersion. Every status write bumps the resourceVersion: our
own `status.bindings`, one per monitor and Prometheus, written after every first sync and after
every edit. Without this, the first sync after a bindings backlog found every one of 10,000
fragments stale and rendered them all again (seconds), and every edit also re-rendered the
monitors whose bindings had just been written.

The renderer's output does not depend on a monitor's `metadata.resourceVersion`, nor on its
`status` as the apiserver stores it (the renderer only checks the whole object against the CRD
schema, and the apiserver validates every /status write against that same schema), so an object
whose only differences from the version last handed to a render are those (and managedFields)
is handed over as a shallow view carrying that earlier resourceVersion: the render's output is
the same, and its cache entries still apply. Any other difference hands over the object itself.
"""

from __future__ import annotations

import threading
from itertools import compress
from operator import is_not
from typing import Any, Mapping

from promop.render.listdiff import change_limit

_IGNORED_METADATA = ("resourceVersion", "managedFields")


def _same_but_status(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal except for status, metadata.resourceVersion and metadata.managedFields."""
    if a.keys() - {"status"} != b.keys() - {"status"}:
        return False
    if any(a[k] != b[k] for k in a if k not in ("status", "metadata")):
        return False
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    keys = (ma.keys() | mb.keys()) - set(_IGNORED_METADATA)
    return all(ma.get(k) == mb.get(k) for k in keys)


class StableVersions:
    """Per (kind, uid): the resourceVersion last seen and the object handed to the render for it.
    Thread-safe (syncs of different Prometheus objects run at once and share it)."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, tuple[str, Mapping[str, Any]]]] = {}  # kind -> uid -> entry
        self._last: dict[str, tuple[list, list]] = {}  # kind -> (the last list given, the views given)
        self._lock = threading.Lock()

    def views(self, kind: str, objects: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """`objects` as the render should see them (same order); forgets the objects of `kind`
        no longer listed. Once per sync over every candidate. The informer's list keeps an updated
        object in its place, so against the last list of `kind` only the positions holding another
        dict are looked at (found at C speed, promop.render.listdiff); another length, or another
        object at a position, looks at every object (one dict lookup each)."""
        with self._lock:
            last = self._last.get(kind)
            if last is not None and len(objects) == len(last[0]):
                changed = list(compress(range(len(objects)), map(is_not, objects, last[0])))
                if len(changed) <= change_limit(len(objects)):
                    out = self._patched(kind, objects, last, changed)
                    if out is not None:
                        self._last[kind] = (list(objects), out)
                        return out
            out = self._all(kind, objects)
            self._last[kind] = (list(objects), out)
            return out

    def _patched(self, kind: str, objects: list[Mapping[str, Any]], last: tuple[list, list],
                 changed: list[int]) -> list[Mapping[str, Any]] | None:
        """The last views with the changed positions' replaced; None when a position holds another
        object (uid) than before, or one without uid or resourceVersion."""
        seen = self._seen.setdefault(kind, {})
        out = list(last[1])
        for i in changed:
            md, before = objects[i].get("metadata") or {}, last[0][i].get("metadata") or {}
            uid, rv = md.get("uid"), md.get("resourceVersion")
            if not uid or not rv or uid != before.get("uid"):
                return None
            entry = seen.get(uid)
            if entry is None or entry[0] != rv:
                entry = seen[uid] = (rv, self._view(objects[i], entry[1] if entry is not None else None))
            out[i] = entry[1]
        return out

    def _all(self, kind: str, objects: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        out = []
        seen = self._seen.get(kind) or {}
        fresh: dict[str, tuple[str, Mapping[str, Any]]] = {}
        for obj in objects:
            md = obj.get("metadata") or {}
            uid, rv = md.get("uid"), md.get("resourceVersion")
            if not uid or not rv:
                out.append(obj)
                continue
            entry = seen.get(uid)
            if entry is None or entry[0] != rv:
                entry = (rv, self._view(obj, entry[1] if entry is not None else None))
            fresh[uid] = entry
            out.append(entry[1])
        self._seen[kind] = fresh
        return out

    @staticmethod
    def _view(obj: Mapping[str, Any], before: Mapping[str, Any] | None) -> Mapping[str, Any]:
        if before is None or not _same_but_status(before, obj):
            return obj
        md = obj.get("metadata") or {}
        kept = (before.get("metadata") or {}).get("resourceVersion")
        return {**obj, "metadata": {**md, "resourceVersion": kept}}
