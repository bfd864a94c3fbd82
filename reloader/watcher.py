"""Filesystem watches (watchdog/inotify) on the config's directory and the watched dirs.

Directory watches are what catch kubelet's atomic `..data` symlink swap. Read
events (opened, closed-without-write) are filtered out, since the reloader
itself reads every watched file while hashing.
"""
from __future__ import annotations

import os
import threading
from typing import Callable, Iterable

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

from .logs import Log
from .metrics import Metrics

WRITE_EVENTS = [
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
]


class _Handler(FileSystemEventHandler):
    def __init__(self, on_event: Callable[[FileSystemEvent], None]):
        self.on_event = on_event

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.on_event(event)


class Watcher:
    """Keeps one non-recursive watch per directory and re-creates lost ones."""

    def __init__(
        self,
        dirs: Iterable[str],
        notify: Callable[[], None],
        metrics: Metrics,
        log: Log,
        ignore: Callable[[str], bool] = lambda path: False,
    ):
        self.dirs = list(dict.fromkeys(os.path.abspath(d) for d in dirs))
        self.notify = notify
        self.metrics = metrics
        self.log = log
        self.ignore = ignore
        self.observer = Observer()
        self.watches: dict[str, tuple[ObservedWatch, int]] = {}
        self.failing: set[str] = set()
        self.lock = threading.Lock()

    def start(self) -> None:
        self.observer.start()
        self.ensure()

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join(timeout=0.5)

    def _event(self, event: FileSystemEvent) -> None:
        paths = [os.fsdecode(event.src_path)]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(os.fsdecode(dest))
        if all(self.ignore(p) for p in paths):
            return
        self.metrics.watch_events.inc()
        self.log.debug("watch event", event=event.event_type, path=paths[-1])
        self.notify()

    def ensure(self) -> None:
        """(Re)create watches for directories that appeared, vanished or were replaced."""
        with self.lock:
            for path in self.dirs:
                self._ensure_one(path)
            self.metrics.watches.set(len(self.watches))

    def _ensure_one(self, path: str) -> None:
        try:
            inode = os.stat(path).st_ino
        except OSError:
            inode = -1
        current = self.watches.get(path)
        if current is not None and current[1] == inode:
            return
        if current is not None:
            self.observer.unschedule(current[0])
            del self.watches[path]
            self.log.info("watched directory replaced or removed; re-watching", dir=path)
        if inode < 0:
            self._failed(path, "does not exist (yet)")
            return
        try:
            watch = self.observer.schedule(_Handler(self._event), path, recursive=False, event_filter=WRITE_EVENTS)
        except OSError as exc:
            self._failed(path, exc.strerror or str(exc))
            return
        self.watches[path] = (watch, inode)
        self.failing.discard(path)
        # Anything that happened before the watch existed must not be lost.
        self.notify()

    def _failed(self, path: str, reason: str) -> None:
        self.metrics.watch_errors.inc()
        if path not in self.failing:
            self.failing.add(path)
            self.log.error("cannot watch directory; will retry", dir=path, reason=reason)
