"""Watch streams: per-event encoding shared by all watchers, and per-watcher queues."""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from promop.sandbox.errors import ApiError


def encode(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def partial_metadata(obj: dict) -> dict:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {}}


@dataclass
class Event:
    """One committed change. `raw` is the object's JSON, encoded once at commit time."""

    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    key: tuple[str, str]
    namespace: str
    obj: dict
    raw: bytes
    old: dict | None = None
    _lines: dict = field(default_factory=dict, repr=False)

    def line(self, type_: str, partial: bool, api_version: str | None,
             convert: Callable[[dict], dict] | None = None) -> bytes:
        """The `{"type","object"}` line for one kind of watcher, cached per event."""
        cache_key = (type_, partial, api_version)
        cached = self._lines.get(cache_key)
        if cached is not None:
            return cached
        source = self.obj
        if type_ == "DELETED" and self.type == "MODIFIED":
            # the object left the watcher's selector: the real apiserver sends the old state
            source = dict(self.old or self.obj)
            source["metadata"] = dict(source.get("metadata") or {})
            source["metadata"]["resourceVersion"] = str(self.rv)
        if partial:
            body = encode(partial_metadata(source))
        elif source is self.obj and (api_version is None or
                                     self.obj.get("apiVersion") == api_version):
            body = self.raw
        else:
            source = dict(source)
            if convert is not None and api_version and source.get("apiVersion") != api_version:
                source = convert(source)  # a CRD conversion webhook (promop.sandbox.conversion)
            if api_version:
                source["apiVersion"] = api_version
            body = encode(source)
        line = b'{"type":"' + type_.encode() + b'","object":' + body + b"}\n"
        self._lines[cache_key] = line
        return line


class Watcher:
    """A watch stream's filter and queue. The store pushes lines; the HTTP thread drains them."""

    internal = False  # a feed of the sandbox's own controllers (no client stream behind it)

    def __init__(self, key: tuple[str, str], namespace: str | None,
                 predicate: Callable[[dict], bool] | None, partial: bool,
                 api_version: str, kind: str) -> None:
        self.key = key
        self.namespace = namespace
        self.predicate = predicate
        self.partial = partial
        self.api_version = api_version
        self.kind = kind
        self.queue: deque[bytes] = deque()
        self.cond = threading.Condition(threading.Lock())
        self.closed = False
        # the newest resourceVersion this stream has been told (by an event or a bookmark):
        # a periodic bookmark is due only when the store has moved past it
        self.told_rv = 0
        self.convert: Callable[[dict], dict] | None = None  # set for CRDs converted by a webhook

    def _visible(self, obj: dict | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and \
                (obj.get("metadata") or {}).get("namespace") != self.namespace:
            return False
        return self.predicate is None or self.predicate(obj)

    def event_type(self, event: Event) -> str | None:
        """What this watcher sees of an event, following selector transitions."""
        if event.type == "ADDED":
            return "ADDED" if self._visible(event.obj) else None
        if event.type == "DELETED":
            return "DELETED" if self._visible(event.obj) else None
        now, before = self._visible(event.obj), self._visible(event.old)
        if now and before:
            return "MODIFIED"
        if now:
            return "ADDED"
        if before:
            return "DELETED"
        return None

    def offer(self, event: Event) -> None:
        type_ = self.event_type(event)
        if type_ is None:
            return
        line = event.line(type_, self.partial, self.api_version, self.convert)
        with self.cond:
            if not self.closed:
                self.queue.append(line)
                self.told_rv = max(self.told_rv, event.rv)
                self.cond.notify()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wake(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def bookmark_line(self, rv: int) -> bytes:
        obj = {"kind": "PartialObjectMetadata" if self.partial else self.kind,
               "apiVersion": "meta.k8s.io/v1" if self.partial else self.api_version,
               "metadata": {"resourceVersion": str(rv)}}
        return b'{"type":"BOOKMARK","object":' + encode(obj) + b"}\n"

    @staticmethod
    def error_line(error: ApiError) -> bytes:
        return b'{"type":"ERROR","object":' + encode(error.status()) + b"}\n"
