"""ScaledObject status writes off the scale loops' threads: one coalescing writer per controller.

Why: at 10,000 ScaledObjects a loop thread that waits for its status PATCH (a second or more on a
loaded apiserver, plus the client's rate limit) makes every other loop late (docs/keda.md
"Benchmark"). The /scale write stays in the loop (it is the decision); the status is a report of
it, so the loop hands it here and goes on.

Per object: the latest desired status wins (a poll's status replaces one still waiting), a write
in flight is never doubled (the work queue runs a key in one worker at a time and runs it once
more if it changed meanwhile), and a failed write (409, 429, 5xx, a dropped connection) is retried
with the queue's per-key exponential backoff, the one every reconcile uses. The patch is a merge
patch from every status the server may hold (what the poll read, what was last sent) to the
desired one: setting a field to the value it already has is harmless, a stale base is not.

A status is built on `latest()`, not on the informer's cache: the cache shows our own write a watch
event later, and a status built on the older one would undo it (CI saw a loop's first poll, computed
from the cache while the reconcile's write was in flight, patch hpaName away and Ready back to
Unknown). A status that was built on an older one anyway (its poll read `latest()` before a write
went out) is rebased: its own changes over the newest status known.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, Counter

from promop.host.logs import fields
from promop.host.workers import keys_from
from promop.kube.errors import ApiError
from promop.kube.rate_limiting_queue import RateLimitingQueue

from promop.autoscaler.keda.resources import SCALEDOBJECTS
from promop.autoscaler.keda.statusdiff import merge_diff

log = logging.getLogger("promop.autoscaler.keda")

#: refused for good: retrying the same body cannot help (the next poll's status is written anew)
_FINAL = (400, 403, 404, 422)
_MAX_BASES = 4
_UNKNOWN = "?"     # nothing was sent: what the server holds is as it was


def _not_older(cached_rv: str | None, written_rv: str | None) -> bool:
    """Whether the cache's object is at least as new as our write. resourceVersions are opaque, but the
    apiserver's are etcd revisions (integers); anything else counts as not caught up, and the view lasts
    until the cache shows the status itself."""
    if cached_rv is None or written_rv is None:
        return False
    if cached_rv == written_rv:
        return True
    return cached_rv.isdigit() and written_rv.isdigit() and int(cached_rv) >= int(written_rv)


@dataclass
class _Pending:
    namespace: str
    name: str
    desired: dict
    bases: list[dict] = field(default_factory=list)   # statuses the server may hold now

    def add_base(self, base: dict) -> None:
        if not any(b == base for b in self.bases):
            self.bases.append(base)
            if len(self.bases) > _MAX_BASES:   # the oldest after the first are the least likely
                del self.bases[1]


def patch_from(bases: list[dict], desired: dict) -> dict:
    """One merge patch that turns any of `bases` into `desired` (the deep union of each diff)."""
    out: dict = {}
    for base in bases:
        _union(out, merge_diff(base, desired))
    return out


def _union(into: dict, patch: dict) -> None:
    for k, v in patch.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _union(into[k], v)
        elif k not in into or not isinstance(v, dict):
            into[k] = v          # a whole value (or null) covers a nested patch toward the same value


def rebase(old: dict, new: dict, onto: dict) -> dict:
    """A reconcile's change (`old` -> `new`, from a cache that may not show the loop's last status yet)
    applied over `onto`, the newer status a loop asked for. Without this the reconcile's whole status
    would replace the loop's: its Active condition and triggersActivity, lost until the next poll
    (an hour away at pollingInterval 3600). Conditions are merged per type."""
    out = dict(onto)
    for key in set(old) | set(new):
        if old.get(key) == new.get(key):
            continue
        if key == "conditions":
            out[key] = _rebase_conditions(old.get(key) or [], new.get(key) or [], onto.get(key) or [])
        elif key in new:
            out[key] = new[key]
        else:
            out.pop(key, None)
    return out


def _rebase_conditions(old: list, new: list, onto: list) -> list:
    by_type = lambda conds: {c.get("type"): c for c in conds}  # noqa: E731
    old_t, new_t = by_type(old), by_type(new)
    changed = {t for t in set(old_t) | set(new_t) if old_t.get(t) != new_t.get(t)}
    out = [new_t[c.get("type")] if c.get("type") in changed else c
           for c in onto if c.get("type") not in changed or c.get("type") in new_t]
    present = {c.get("type") for c in out}
    out.extend(c for c in new if c.get("type") in changed and c.get("type") not in present)
    return out


def fingerprint(status: dict) -> int:
    return hash(orjson.dumps(status, option=orjson.OPT_SORT_KEYS))


class StatusWriter:
    """`submit` (the loops: returns at once) and `write_now` (reconciles: waits, raises ApiError)."""

    def __init__(self, client: Any, *, workers: int = 2, registry: CollectorRegistry | None = None,
                 queue: RateLimitingQueue | None = None) -> None:
        self.client = client
        self.workers = workers
        self.queue = queue or RateLimitingQueue(name="scaledobject_status", registry=registry)
        self._cond = threading.Condition()
        self._pending: dict[str, _Pending] = {}
        self._inflight: dict[str, dict] = {}
        self._written: dict[str, int] = {}        # fingerprint of the last status written, per key
        self._active: dict[str, str] = {}         # the newest lastActiveTime written, per key
        self._views: dict[str, tuple[dict, str | None]] = {}  # our last write, until the cache shows it
        self._threads: list[threading.Thread] = []
        self.writes = Counter("promop_keda_status_writes_total",
                              "ScaledObject status writes by result (ok, retry, dropped)", ["result"],
                              registry=registry) if registry is not None else None

    # -- what a status is built on -------------------------------------------------------------------
    def latest(self, key: str, obj: dict) -> dict:
        """The newest status of `key` known here: the one waiting, in flight, or last written while the
        cached `obj` does not show it yet; else the cache's. A shallow copy, to build a new one on."""
        cached = obj.get("status") or {}
        with self._cond:
            newest = self._newest(key)
            if newest is self._views.get(key, (None,))[0] and newest is not None:
                _, written_rv = self._views[key]
                if newest == cached or _not_older((obj.get("metadata") or {}).get("resourceVersion"), written_rv):
                    del self._views[key]            # the cache has caught up (or moved past us)
                    newest = None
        return dict(cached if newest is None else newest)

    def _newest(self, key: str) -> dict | None:
        entry = self._pending.get(key)
        if entry is not None:
            return entry.desired
        inflight = self._inflight.get(key)
        if inflight is not None:
            return inflight
        view = self._views.get(key)
        return view[0] if view is not None else None

    # -- the loops' side ----------------------------------------------------------------------------
    def submit(self, key: str, namespace: str, name: str, old: dict, new: dict) -> bool:
        """Queue `new` as the status of `key` (read as `old`); False when there is nothing to write."""
        with self._cond:
            newest = self._newest(key)
            if newest is not None and newest != old:     # built on an older status than ours
                new = rebase(old, new, newest)
                old = newest
            entry = self._pending.get(key)
            if entry is not None:
                entry.desired = new
                entry.add_base(old)
                return True
            inflight = self._inflight.get(key)
            if inflight is None and (not merge_diff(old, new) or self._written.get(key) == fingerprint(new)):
                return False
            entry = _Pending(namespace, name, new, [old])
            if inflight is not None:
                entry.add_base(inflight)
            self._pending[key] = entry
        self.queue.add(key)
        return True

    def backlog(self) -> int:
        with self._cond:
            return len(self._pending) + len(self._inflight)

    # -- the reconciles' side -----------------------------------------------------------------------
    def write_now(self, key: str, namespace: str, name: str, old: dict, new: dict, *,
                  timeout: float = 60.0) -> None:
        """Write in the caller's thread, after any write in flight for `key`; it supersedes a waiting one.
        A reconcile does not compute lastActiveTime: the newest one written or waiting is kept (its
        cache may not show it yet)."""
        with self._cond:
            prior = self._inflight.get(key)
            self._cond.wait_for(lambda: key not in self._inflight, timeout)
            entry = self._pending.pop(key, None)
            bases = [old]
            newer = self._active.get(key, "")
            if entry is not None:
                for b in entry.bases:
                    if b not in bases:
                        bases.append(b)
                newer = max(newer, entry.desired.get("lastActiveTime") or "")
            loops = entry.desired if entry is not None else prior
            if loops is None:
                view = self._views.get(key)
                loops = view[0] if view is not None else None
            if loops is not None and loops != old:   # a newer status stands where the reconcile changed nothing
                if loops not in bases:
                    bases.append(loops)
                new = rebase(old, new, loops)
            if newer and (new.get("lastActiveTime") or "") < newer:   # RFC 3339 UTC: text order is time order
                new = dict(new, lastActiveTime=newer)
            patch = patch_from(bases, new)
            if not patch:
                return
            self._inflight[key] = new
        try:
            self._done(key, new, self._patch(namespace, name, patch))
        finally:
            with self._cond:
                self._inflight.pop(key, None)
                self._cond.notify_all()

    def forget(self, key: str) -> None:
        with self._cond:
            self._pending.pop(key, None)
            self._written.pop(key, None)
            self._active.pop(key, None)
            self._views.pop(key, None)

    # -- the writer threads -------------------------------------------------------------------------
    def start(self) -> None:
        if self._threads:
            return
        for i in range(max(1, self.workers)):
            t = threading.Thread(target=self._work, name=f"keda-status-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 5.0) -> None:
        self.queue.shutdown()
        for t in self._threads:
            t.join(timeout)

    def _work(self) -> None:
        for key in keys_from(self.queue):
            try:
                self.write_one(key)
            finally:
                self.queue.done(key)

    def write_one(self, key: str) -> None:
        """Write the waiting status of `key` (one worker at a time per key: the queue's guarantee)."""
        with self._cond:
            # a reconcile's write_now runs outside the queue: two patches of one key at once could land
            # in either order, the older status last
            self._cond.wait_for(lambda: key not in self._inflight, 60.0)
            entry = self._pending.pop(key, None)
            if entry is None:
                return
            self._inflight[key] = entry.desired
        try:
            patch = patch_from(entry.bases, entry.desired)
            rv = self._patch(entry.namespace, entry.name, patch) if patch else _UNKNOWN
            self._done(key, entry.desired, rv)
            self.queue.forget(key)
            self._count("ok")
        except ApiError as exc:
            if exc.status in _FINAL:
                self._count("dropped")
                if exc.status != 404:
                    log.warning("status write refused; the next poll writes anew",
                                **fields(scaledobject=key, error=str(exc)))
                self.queue.forget(key)
                return
            self._retry(key, entry, exc)
        except Exception as exc:  # noqa: BLE001 - a writer thread never dies
            self._retry(key, entry, exc)
        finally:
            with self._cond:
                self._inflight.pop(key, None)
                self._cond.notify_all()

    def _retry(self, key: str, entry: _Pending, exc: BaseException) -> None:
        """Put the failed write back (a newer one waiting keeps its status, and gains our bases: the
        server state is unknown after a failure), then requeue with the key's backoff."""
        self._count("retry")
        log.info("status write failed; retrying with backoff", **fields(scaledobject=key, error=str(exc)))
        with self._cond:
            newer = self._pending.get(key)
            if newer is None:
                self._pending[key] = entry
            else:
                for b in entry.bases:
                    newer.add_base(b)
        self.queue.add_rate_limited(key)

    def _patch(self, namespace: str, name: str, patch: dict) -> str | None:
        """The patch; the resourceVersion it made (None if the answer has none)."""
        out = self.client.patch(SCALEDOBJECTS, name, {"status": patch}, namespace, subresource="status")
        return ((out or {}).get("metadata") or {}).get("resourceVersion") if isinstance(out, dict) else None

    def _done(self, key: str, written: dict, rv: str | None = None) -> None:
        with self._cond:
            self._written[key] = fingerprint(written)
            if rv is not _UNKNOWN:
                self._views[key] = (written, rv)
            active = written.get("lastActiveTime")
            if active and active > self._active.get(key, ""):
                self._active[key] = active
            entry = self._pending.get(key)
            if entry is not None:      # a newer status waits: the server now holds what we wrote
                entry.add_base(written)

    def _count(self, result: str) -> None:
        if self.writes is not None:
            self.writes.labels(result).inc()
