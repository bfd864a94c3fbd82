"""First LISTs sent before the informers that will ask for them exist.

Why: `promop run` spends about half a second importing and building its
controllers before its informers send their first LISTs, and the apiserver then
takes about as long again to answer a LIST of 10,000 custom resources (it
encodes every object while we wait). Sent first, from threads that only wait on
their sockets, the LISTs are answered while the imports run.

The answer is kept as the raw bytes of the response, and handed over, once, to
the first request that is exactly the same one: the same apiserver, path and
query (`resourceVersion=0`, the same page size and selectors: a reflector's
first LIST) and the same Accept. The informer decodes, trims and pages it as
its own answer, then watches from its resourceVersion, as client-go's reflector
does after any LIST: whatever changed since the answer comes as watch events,
and an answer so old that its resourceVersion is gone makes the watch relist.
So the informer's view is the same as without the prefetch, only sooner.

An answer nobody asked for within `max_age` seconds (a standby waiting for the
lease, or flags that narrowed the watch) is dropped, and its memory freed. A
failed prefetch is forgotten: the informer then sends its own request, and
meets the error itself. Nothing here is ever needed for correctness.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Iterable

from promop.kube.logfields import kv

log = logging.getLogger("promop.kube.prefetch")

MAX_AGE = 30.0   # seconds an answer waits for its informer
WAIT = 60.0      # the longest a request waits for a prefetch of the same LIST still in flight

Key = tuple[str, str, tuple, str]


class _Entry:
    __slots__ = ("done", "data", "at")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.data: bytes | None = None
        self.at = 0.0


_lock = threading.Lock()
_entries: dict[Key, _Entry] = {}


def key(host: str, path: str, query: dict[str, Any], accept: str) -> Key:
    return (host, path, tuple(sorted((k, str(v)) for k, v in query.items())), accept)


def fetch(key_: Key, request: Callable[[], bytes], *, max_age: float = MAX_AGE,
          clock: Callable[[], float] = time.monotonic) -> threading.Thread:
    """Send `request` in a thread and keep its answer under `key_` for `max_age` seconds."""
    entry = _Entry()
    with _lock:
        _entries[key_] = entry

    def run() -> None:
        started = clock()
        try:
            entry.data = request()
        except Exception as exc:  # any failure: the informer sends its own request and meets it itself
            log.debug("prefetch failed", extra=kv(path=key_[1], err=exc))
            _forget(key_, entry)
        else:
            log.debug("prefetched", extra=kv(path=key_[1], bytes=len(entry.data or b""),
                                           ms=round((clock() - started) * 1000)))
        entry.at = clock()
        entry.done.set()
        if entry.data is not None:
            timer = threading.Timer(max_age, _forget, (key_, entry))
            timer.daemon = True
            timer.start()

    thread = threading.Thread(target=run, name=f"kube-prefetch {key_[1]}", daemon=True)
    thread.start()
    return thread


def take(key_: Key, *, wait: float = WAIT) -> bytes | None:
    """The prefetched answer for exactly this request, once; None when there is none (or it failed)."""
    with _lock:
        entry = _entries.get(key_)
    if entry is None:
        return None
    if not entry.done.wait(wait):
        return None
    with _lock:
        if _entries.get(key_) is not entry:
            return None   # taken by another request, failed, or expired
        del _entries[key_]
    data, entry.data = entry.data, None
    return data


def pending() -> list[str]:
    """The paths with an answer waiting or in flight (for tests and logs)."""
    with _lock:
        return sorted(k[1] for k in _entries)


def clear() -> None:
    with _lock:
        for entry in _entries.values():
            entry.data = None
        _entries.clear()


def _forget(key_: Key, entry: _Entry) -> None:
    with _lock:
        if _entries.get(key_) is entry:
            del _entries[key_]
            if entry.data is not None:
                log.debug("prefetched answer dropped, not asked for in time", extra=kv(path=key_[1]))
    entry.data = None


def first_lists(client: Any, resources: Iterable[Any], namespace: str | None = None, page_size: int = 500, *,
                field_selector: str | None = None, max_age: float = MAX_AGE) -> list[threading.Thread]:
    """A reflector's first LIST (RV "0", `page_size`, no label selector) of each resource, prefetched."""
    query = {"limit": page_size, "resource_version": "0", "field_selector": field_selector or None}
    return [fetch(client.list_key(res, namespace, **query),
                  lambda res=res: client.list_raw(res, namespace, **query), max_age=max_age)
            for res in resources]
