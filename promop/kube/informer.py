"""Informers: a local, indexed cache of one resource kept current by LIST+WATCH, with event handlers.

Threads, and why:

* one reflector thread per resource (per namespace when `namespaces` is
  given) reads the API and queues deltas; it never blocks on handlers;
* one dispatch thread applies deltas to the store in order and turns them
  into notifications (RealFIFO-style: every event, in order, no coalescing);
* one thread per handler, each with its own unbounded queue, so a slow
  handler delays only itself (client-go's processorListener).

Handlers typically push `object_key(obj)` into a workqueue. Exceptions in
handlers are logged and counted, never fatal. Objects handed to handlers and
kept in `store` are shared plain dicts: read-only.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable

from promop.kube.backoff import Backoff
from promop.kube.client import WATCH_IDLE_GRACE, KubeClient
from promop.kube.informer_metrics import informer_metrics
from promop.kube.logfields import kv
from promop.kube.reflector import Reflector
from promop.kube.resources import Resource
from promop.kube.store import NAMESPACE_INDEX, Store, Tombstone, object_key
from promop.kube.transforms import Transform, strip_managed_fields  # noqa: F401 - the public hook

log = logging.getLogger("promop.kube.informer")

_STOP = object()


def _rv(obj: dict) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")


class _Listener:
    """One handler set with its own queue and thread."""

    def __init__(self, informer: "Informer", on_add: Any, on_update: Any, on_delete: Any, index: int) -> None:
        self.informer = informer
        self.calls = {"add": on_add, "update": on_update, "delete": on_delete}
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.name = f"informer-{informer.name}-handler-{index}"
        self.thread: threading.Thread | None = None
        # Two counters, each written by one side only, so their difference is exact without a lock:
        # `queued` by the producers (always under the informer's dispatch lock), `delivered` by this
        # thread after a handler returns. A notification taken off the queue but not yet handled is
        # still counted, which `queue.qsize()` alone would miss.
        self.queued = 0
        self.delivered = 0

    def put(self, note: tuple) -> None:
        """Queue a notification (callers hold the informer's dispatch lock)."""
        self.queued += len(note[1]) if note[0] == "adds" else 1
        self.queue.put(note)

    def pending(self) -> int:
        return self.queued - self.delivered

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self.thread.start()

    def _run(self) -> None:
        get = self.queue.get
        calls = self.calls
        while True:
            note = get()
            if note is _STOP:
                return
            if note[0] == "adds":  # a LIST's new objects, one queue item for the lot
                fn = calls["add"]
                objs, initial = note[1], note[2]
                for obj in objs:
                    if fn is not None:
                        try:
                            fn(obj, initial)
                        except Exception as exc:  # noqa: BLE001
                            self._failed("add", exc)
                    self.delivered += 1
                continue
            fn = calls[note[0]]
            if fn is not None:
                try:
                    fn(*note[1:])
                except Exception as exc:  # noqa: BLE001 - a handler bug must not stop the informer
                    self._failed(note[0], exc)
            self.delivered += 1

    def _failed(self, event: str, exc: Exception) -> None:
        informer = self.informer
        informer.handler_errors += 1
        informer.metrics.handler_errors.labels(informer.res.label).inc()
        log.exception("informer handler raised", extra=kv(informer=informer.name, event=event, err=exc))


class Informer:
    """A cache of `res` (optionally one namespace, or a list of them) plus event handlers.

    Every timing is a parameter so tests run fast: `backoff_base`/`backoff_cap`
    (watch/list failure backoff), `watch_timeout_range` (server-side
    timeoutSeconds), `idle_grace` or `idle_timeout` (the dead-stream guard,
    always longer than the server-side timeout: see `reflector`) and
    `resync_period` (0 = never).

    `transform` runs on every object before it is cached (default: strip
    managedFields).
    """

    def __init__(
        self,
        client: KubeClient,
        res: Resource,
        *,
        namespace: str | None = None,
        namespaces: list[str] | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = strip_managed_fields,
        resync_period: float = 0,
        name: str | None = None,
        watch_timeout_range: tuple[float, float] = (300, 600),
        idle_timeout: float | None = None,
        idle_grace: float = WATCH_IDLE_GRACE,
        backoff_base: float = 0.8,
        backoff_cap: float = 30.0,
        backoff_reset: float = 120.0,
        min_watch_duration: float = 1.0,
        page_size: int = 500,
        indexers: dict[str, Callable[[dict], list[str]]] | None = None,
        registry: Any = None,
    ) -> None:
        if namespace is not None and namespaces is not None:
            raise ValueError(f"informer for {res.label}: give namespace or namespaces, not both")
        if (namespace or namespaces) and not res.namespaced:
            raise ValueError(f"informer for {res.label}: a cluster-scoped resource has no namespaces")
        if namespaces is not None and not namespaces:
            raise ValueError(f"informer for {res.label}: namespaces is empty (pass None to watch all namespaces)")
        scopes: list[str | None] = list(dict.fromkeys(namespaces)) if namespaces else [namespace]
        self.client = client
        self.res = res
        self.name = name or res.label
        self.resync_period = resync_period
        self.metrics = informer_metrics(registry)
        self.store = Store(indexers)
        self.handler_errors = 0
        self._deltas: queue.SimpleQueue = queue.SimpleQueue()
        # Deltas put by the reflectors (under `_deltas_lock`: several reflectors may put at once) and
        # deltas applied by the dispatch thread (under the dispatch lock): see `pending`.
        self._deltas_lock = threading.Lock()
        self._deltas_put = 0
        self._deltas_applied = 0
        self._listeners: list[_Listener] = []
        self._dispatch_lock = threading.Lock()
        self._unsynced = set(scopes)
        self._synced = threading.Event()
        self._started = False
        self._stopped = False
        self._dispatch_thread: threading.Thread | None = None
        self.reflectors = [
            Reflector(
                client, res, self._put_delta, metrics=self.metrics, namespace=scope,
                label_selector=label_selector, field_selector=field_selector, metadata_only=metadata_only,
                transform=transform, page_size=page_size,
                watch_timeout_range=watch_timeout_range, idle_timeout=idle_timeout, idle_grace=idle_grace, backoff=Backoff(backoff_base, backoff_cap, reset_after=backoff_reset),
                min_watch_duration=min_watch_duration, name=f"{self.name}/{scope}" if scope else self.name,
            )
            for scope in scopes
        ]

    # ---- public API -------------------------------------------------------------------

    def add_handler(
        self,
        on_add: Callable[[dict, bool], None] | None = None,
        on_update: Callable[[dict, dict], None] | None = None,
        on_delete: Callable[[dict | Tombstone], None] | None = None,
    ) -> None:
        """Register handlers; a late handler first gets `on_add(obj, True)` for every cached object."""
        with self._dispatch_lock:
            listener = _Listener(self, on_add, on_update, on_delete, len(self._listeners))
            cached = self.store.list()
            if cached:
                listener.put(("adds", cached, True))
            self._listeners.append(listener)
            if self._started and not self._stopped:
                listener.start()

    def start(self) -> None:
        """Start the reflector(s), the dispatch thread and the handler threads."""
        if self._started:
            raise RuntimeError(f"informer {self.name} already started")
        self._started = True
        with self._dispatch_lock:
            for listener in self._listeners:
                listener.start()
        self._dispatch_thread = threading.Thread(target=self._dispatch, name=f"informer-{self.name}", daemon=True)
        self._dispatch_thread.start()
        for reflector in self.reflectors:
            reflector.start()

    def stop(self, timeout: float = 5) -> None:
        """Stop reading, deliver what is queued, and stop the threads (waiting at most `timeout` in all)."""
        if not self._started or self._stopped:
            self._stopped = True
            return
        self._stopped = True
        deadline = time.monotonic() + timeout
        for reflector in self.reflectors:
            reflector.stop()
        for reflector in self.reflectors:
            reflector.join(max(0.0, deadline - time.monotonic()))
        self._deltas.put(_STOP)
        if self._dispatch_thread is not None:
            self._dispatch_thread.join(max(0.0, deadline - time.monotonic()))
        with self._dispatch_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.queue.put(_STOP)
        for listener in listeners:
            if listener.thread is not None:
                listener.thread.join(max(0.0, deadline - time.monotonic()))

    def has_synced(self) -> bool:
        """True once the first LIST of every namespace is in the store and queued to the handlers."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def pending(self) -> int:
        """Deltas not yet applied plus notifications not yet handled; 0 only when nothing is in transit
        (a delta or notification taken off its queue still counts until it has been dealt with)."""
        with self._dispatch_lock:
            with self._deltas_lock:
                deltas = self._deltas_put - self._deltas_applied
            return deltas + sum(listener.pending() for listener in self._listeners)

    def _put_delta(self, delta: tuple) -> None:
        with self._deltas_lock:
            self._deltas_put += 1
            self._deltas.put(delta)

    # ---- the dispatch thread ------------------------------------------------------------

    def _dispatch(self) -> None:
        get = self._deltas.get
        period = self.resync_period
        next_resync = time.monotonic() + period if period > 0 else None
        while True:
            if next_resync is None:
                delta = get()
            else:
                try:
                    delta = get(timeout=max(0.0, next_resync - time.monotonic()))
                except queue.Empty:
                    self._resync()
                    next_resync = time.monotonic() + period
                    continue
            if delta is _STOP:
                return
            try:
                with self._dispatch_lock:
                    if delta[0] == "event":
                        self._apply_event(delta[1], delta[2])
                    else:
                        self._apply_list(delta[1], delta[2], delta[3])
            except Exception as exc:  # noqa: BLE001 - e.g. an object without a name; skip it, keep going
                log.exception("informer could not apply a delta", extra=kv(informer=self.name, err=exc))
            finally:
                with self._deltas_lock:
                    self._deltas_applied += 1
            if next_resync is not None and time.monotonic() >= next_resync:  # busy streams resync too
                self._resync()
                next_resync = time.monotonic() + period

    def _notify(self, note: tuple) -> None:
        for listener in self._listeners:
            listener.put(note)

    def _apply_event(self, kind: str, obj: dict) -> None:
        key = object_key(obj)
        if kind == "DELETED":
            self.store.delete(key)
            self._notify(("delete", obj))
            return
        old = self.store.put(key, obj)
        if old is None:
            self._notify(("add", obj, False))
        else:
            self._notify(("update", old, obj))

    def _apply_list(self, scope: str | None, keyed: list, initial: bool) -> None:
        """Apply a LIST (`keyed` = [key, object, ...]): adds, updates, and tombstones for what vanished."""
        store = self.store
        keys, objs = keyed[0::2], keyed[1::2]
        was_empty = len(store) == 0
        notify = self._notify
        olds = store.put_all(keys, objs)
        if was_empty and not any(olds):  # a first LIST: everything is new, in LIST order
            if objs:
                notify(("adds", objs, initial))
        else:
            added: list[dict] = []
            for obj, old in zip(objs, olds):
                if old is None:
                    added.append(obj)
                elif _rv(old) != _rv(obj):
                    if added:  # keep the order of the LIST
                        notify(("adds", added, initial))
                        added = []
                    notify(("update", old, obj))
            if added:
                notify(("adds", added, initial))
        if not was_empty:  # a relist: deliver a tombstone for every cached object that vanished
            seen = set(keys)
            cached = store.index_keys(NAMESPACE_INDEX, scope) if scope else store.keys()
            for key in cached:
                if key not in seen:
                    last = store.delete(key)
                    if last is not None:
                        self._notify(("delete", Tombstone(key, last)))
        if initial:
            self._unsynced.discard(scope)
            if not self._unsynced:
                self._synced.set()
                log.info("informer synced", extra=kv(informer=self.name, objects=len(store)))

    def _resync(self) -> None:
        with self._dispatch_lock:
            for obj in self.store.list():
                self._notify(("update", obj, obj))
