"""The reflector: LIST then WATCH one resource forever, feeding deltas to an informer.

One thread per resource (and per namespace when an informer watches a list
of namespaces). It never touches the store; it pushes

    ("list", namespace_scope, keyed, is_initial)   after every successful LIST,
                                                   keyed being [key, object, key, object, ...]
    ("event", "ADDED" | "MODIFIED" | "DELETED", obj)

to a sink, in order, and the informer's dispatch thread applies them. This
keeps the socket drained however slow the handlers are.

Reactions, after client-go's reflector:

| what happened                                 | reaction                        |
|-----------------------------------------------|---------------------------------|
| watch closed cleanly (server timeout)         | re-watch from the last RV, at   |
|                                               | once: not a failure             |
| watch silent beyond the dead-stream guard     | count a failure, re-watch from  |
|                                               | the last RV                     |
| 410 Gone (watch start or ERROR event)         | relist at once                  |
| 429 / no connection while watching            | back off, re-watch              |
| watch closed within 1 s without events        | back off, re-watch              |
| any other watch error                         | back off, relist                |
| LIST failed                                   | back off, relist                |

Which LIST, exactly as client-go's reflector (the apiserver's watch cache
answers RV="0" and RV=N lists from memory, unpaginated, in a fraction of the
time a paged consistent read from etcd takes: at 10,000 objects, seconds
against tens of seconds):

| when                                    | resourceVersion | paging            |
|-----------------------------------------|-----------------|-------------------|
| first list                              | "0"             | limit 500 sent; a |
|                                         |                 | continue token in |
|                                         |                 | the answer (no    |
|                                         |                 | watch cache) is   |
|                                         |                 | followed          |
| relist (LIST failed, watch 410, other   | last RV seen    | none, unless the  |
| watch error)                            | (list, event or | RV="0" list came  |
|                                         | bookmark)       | back paginated    |
| a list got 410 Expired or "Too large    | "" (consistent) | pages of 500; an  |
| resource version"                       | at once, and on | expired continue  |
|                                         | every relist    | token falls back  |
|                                         | until one works | to one full list  |

The watch starts from the list's RV, always with `timeoutSeconds` (random in
[300, 600), as client-go) and bookmarks.

A real apiserver sends nothing at all on a watch of an idle resource (no
bookmarks either) until `timeoutSeconds` ends it. So the dead-stream guard,
the socket read timeout that keeps a half-open connection from hanging the
thread, is longer than that: `timeoutSeconds` plus `idle_grace`. A quiet
resource is then re-watched only when the server ends the watch, which is
not a failure; the guard fires only on a connection that died without a
word (TCP keepalive, set by the client, catches most of those sooner).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Callable

from promop.kube.backoff import Backoff
from promop.kube.client import WATCH_IDLE_GRACE, KubeClient, WatchStream
from promop.kube.errors import ApiError, ApiUnreachable, Gone, TooManyRequests, WatchIdleTimeout
from promop.kube.informer_metrics import InformerMetrics
from promop.kube.logfields import kv
from promop.kube.resources import Resource
from promop.kube.transforms import Transform, drops_managed_fields, keyed_page, transformed

log = logging.getLogger("promop.kube.reflector")


def watch_timeouts(timeout_range: tuple[float, float], idle_timeout: float | None, idle_grace: float,
                   draw: Callable[[float, float], float] = random.uniform) -> tuple[int, float]:
    """(timeoutSeconds to ask the server for, the dead-stream guard) for one watch.

    The guard is always longer than the server-side timeout, so a live but
    quiet watch is ended by the server, never by the guard: by default it
    is timeoutSeconds + `idle_grace`; a guard given explicitly (`idle_timeout`,
    short in tests) lowers timeoutSeconds below it instead (to at least 1 s,
    the smallest the API takes).
    """
    timeout = max(1, int(draw(*timeout_range)))
    if idle_timeout is None:
        return timeout, timeout + idle_grace
    ceiling = int(idle_timeout - min(idle_grace, idle_timeout / 4))
    return max(1, min(timeout, ceiling)), idle_timeout


class VeryShortWatch(ApiError):
    """The watch closed almost at once without an event: treated as a failure to avoid a hot loop."""


class Reflector:
    def __init__(
        self,
        client: KubeClient,
        res: Resource,
        sink: Callable[[tuple], None],
        *,
        metrics: InformerMetrics,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = None,
        page_size: int = 500,
        watch_timeout_range: tuple[float, float] = (300, 600),
        idle_timeout: float | None = None,
        idle_grace: float = WATCH_IDLE_GRACE,
        backoff: Backoff | None = None,
        min_watch_duration: float = 1.0,
        name: str | None = None,
    ) -> None:
        self.client = client
        self.res = res
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.metadata_only = metadata_only
        self.transform = transform
        self.page_size = page_size
        self.watch_timeout_range = watch_timeout_range
        self.idle_timeout = idle_timeout
        self.idle_grace = idle_grace
        self.backoff = backoff or Backoff()
        self.min_watch_duration = min_watch_duration
        self.name = name or (f"{res.label}/{namespace}" if namespace else res.label)
        self.metrics = metrics
        self.last_rv: str | None = None
        self.lists = 0
        self.rv_unavailable = False
        self.paginated_result = False
        self._gone_streak = 0
        self._label = res.label
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"reflector-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def join(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    # ---- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        need_list = True
        while not self._stop.is_set():
            if need_list:
                try:
                    self._list()
                except Exception as exc:  # noqa: BLE001 - any failure must back off, never kill the thread
                    self.metrics.list_failed.labels(self._label).inc()
                    self._pause(exc, "list failed")
                    continue
                need_list = False
            try:
                self._watch()
                self._gone_streak = 0
            except WatchIdleTimeout as exc:  # silent past the server's own timeout: a dead connection
                self.metrics.watch_failed.labels(self._label).inc()
                log.warning("watch connection went dead; re-watching", extra=kv(informer=self.name, rv=self.last_rv, err=exc))
            except Gone as exc:
                self.metrics.watch_failed.labels(self._label).inc()
                need_list = True
                self._gone_streak += 1
                if self._gone_streak > 1:  # a fresh list's RV is already too old: do not spin
                    self._pause(exc, "resourceVersion expired again right after a relist; relisting after backoff")
                else:
                    log.info("resourceVersion expired; relisting", extra=kv(informer=self.name, rv=self.last_rv, err=exc))
            except (TooManyRequests, ApiUnreachable, VeryShortWatch) as exc:
                self.metrics.watch_failed.labels(self._label).inc()
                self._pause(exc, "watch failed; re-watching after backoff")
            except Exception as exc:  # noqa: BLE001
                self.metrics.watch_failed.labels(self._label).inc()
                self._pause(exc, "watch failed; relisting after backoff")
                need_list = True

    def _pause(self, exc: BaseException, what: str) -> None:
        if self._stop.is_set():
            return
        delay = self.backoff.next_delay()
        retry_after = getattr(exc, "retry_after", None)
        if retry_after:
            delay = max(delay, float(retry_after))
        log.warning(what, extra=kv(informer=self.name, retry_in=f"{delay:.2f}s", err=exc))
        self._stop.wait(delay)

    def _list(self) -> None:
        self.metrics.list_total.labels(self._label).inc()
        rv = self.relist_resource_version()
        try:
            keyed, new_rv = self._list_at(rv)
        except ApiError as exc:
            if rv == "" or not rv_unavailable_error(exc):
                raise
            # the RV is compacted away (410) or ahead of this apiserver: a consistent read, at once
            log.info("resourceVersion unavailable for LIST; listing again with a consistent read",
                     extra=kv(informer=self.name, rv=rv, err=exc))
            self.rv_unavailable = True
            keyed, new_rv = self._list_at("")
        self.rv_unavailable = False
        if self._stop.is_set():
            return
        self.sink(("list", self.namespace, keyed, self.lists == 0))
        self.lists += 1
        self.last_rv = new_rv

    def relist_resource_version(self) -> str:
        """client-go's relistResourceVersion: "" after an unavailable RV, "0" first, else the last RV seen."""
        if self.rv_unavailable:
            return ""
        return self.last_rv or "0"

    def _list_at(self, rv: str) -> tuple[list, str]:
        """One LIST at `rv`, paged as client-go's reflector pages it (see the module docstring)."""
        page_size = self.page_size
        if rv not in ("", "0") and not self.paginated_result:
            page_size = 0  # so the watch cache can serve it
        keyed, new_rv, paginated = self.client.list_paged(
            self.res, self.namespace, page_size=page_size, resource_version=rv or None,
            label_selector=self.label_selector, field_selector=self.field_selector,
            metadata_only=self.metadata_only, page_transform=self._keyed_page,
            drop_managed_fields=drops_managed_fields(self.transform),
        )
        if rv == "0" and paginated:
            self.paginated_result = True  # no watch cache: keep paging on later relists
        return keyed, new_rv

    def _keyed_page(self, items: list[dict]) -> list:
        """[key, object, ...] for a LIST page, transformed, done as each page arrives.

        Here rather than in the informer's dispatch thread: the page's objects
        are still in the CPU cache, which makes this pass several times cheaper
        than a later one over the whole list.
        """
        return keyed_page(items, self.transform, self.name)

    def _transform(self, obj: dict) -> dict:
        """The transform hook; a failing transform keeps the object as it came (and says so)."""
        return transformed(obj, self.transform, self.name)  # type: ignore[arg-type]

    def _watch(self) -> None:
        timeout, guard = watch_timeouts(self.watch_timeout_range, self.idle_timeout, self.idle_grace)
        self.metrics.watch_total.labels(self._label).inc()
        started = time.monotonic()
        stream = self.client.watch(
            self.res, self.namespace, resource_version=self.last_rv, timeout_seconds=timeout,
            allow_bookmarks=True, label_selector=self.label_selector, field_selector=self.field_selector,
            metadata_only=self.metadata_only, idle_timeout=guard,
        )
        self._stream = stream
        if self._stop.is_set():
            stream.close()
        events = 0
        transform, sink = (self._transform if self.transform else None), self.sink
        try:
            for event in stream:
                kind = event.get("type")
                obj = event.get("object") or {}
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if kind == "BOOKMARK":
                    if rv:
                        self.last_rv = rv
                    continue
                if kind not in ("ADDED", "MODIFIED", "DELETED"):
                    log.warning("ignoring unknown watch event", extra=kv(informer=self.name, type=kind))
                    continue
                if transform is not None:
                    obj = transform(obj)
                sink(("event", kind, obj))
                events += 1
                self._gone_streak = 0
                if rv:
                    self.last_rv = rv
        finally:
            self._stream = None
            stream.close()
        if events == 0 and not self._stop.is_set() and time.monotonic() - started < self.min_watch_duration:
            raise VeryShortWatch(
                f"watch closed after {time.monotonic() - started:.2f}s without an event", path=self.res.path(self.namespace)
            )


def rv_unavailable_error(exc: ApiError) -> bool:
    """410 Expired/Gone, or the apiserver's "Too large resource version" (504 with that cause)."""
    if isinstance(exc, Gone) or exc.status == 410:
        return True
    causes = ((exc.body or {}).get("details") or {}).get("causes") or []
    if any(isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes):
        return True
    return "Too large resource version" in (exc.message or "")
