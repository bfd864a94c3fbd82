"""Filesystem watches (watchdog/inotify) on the config's directory and the watched dirs.

Directory watches are what catch kubelet's atomic `..data` symlink swap. Read
events (opened, closed-without-write) are filtered out, since the reloader
itself reads every watched file while hashing.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Iterable

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

try:  # watchdog >= 7 on Linux
    from watchdog.observers.inotify_c import InotifyConstants, InotifyFD
except ImportError:  # pragma: no cover - other platforms or older watchdog
    InotifyFD = None  # type: ignore[assignment,misc]

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


class _Backend:
    """A watchdog thread that calls `on_path` for changed paths and `on_lost` for dropped watches."""

    def __init__(self, thread: Any, on_path: Callable[[str], None], on_lost: Callable[[str, object], None]):
        self.thread = thread
        self.on_path = on_path
        self.on_lost = on_lost

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.thread.stop()
        self.thread.join(timeout=0.5)


class _ObserverBackend(_Backend):
    """watchdog's portable Observer: inotify thread -> emitter thread -> dispatch thread."""

    def __init__(self, on_path: Callable[[str], None], on_lost: Callable[[str, object], None]):
        super().__init__(Observer(), on_path, on_lost)
        self.observer = self.thread

    def add(self, path: str) -> object:
        backend = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                backend.on_path(os.fsdecode(event.src_path))
                dest = getattr(event, "dest_path", "")
                if dest:
                    backend.on_path(os.fsdecode(dest))

        return self.observer.schedule(Handler(), path, recursive=False, event_filter=WRITE_EVENTS)

    def remove(self, handle: object) -> None:
        self.observer.unschedule(handle)  # type: ignore[arg-type]


class _InotifyBackend(_Backend):
    """watchdog's own inotify reader thread calling us directly (Linux, watchdog >= 7).

    One thread hop from the kernel to the run loop instead of three: the
    Observer's emitter and dispatch threads each add a wake-up (~0.15 ms on a
    loaded machine) to every change's latency.
    """

    def __init__(self, on_path: Callable[[str], None], on_lost: Callable[[str, object], None]):
        assert InotifyFD is not None
        super().__init__(InotifyFD(), on_path, on_lost)
        self.fd = self.thread
        c = InotifyConstants
        # The write events only: the reloader's own reads (open, close-nowrite) are not changes.
        self.mask = (c.IN_CREATE | c.IN_DELETE | c.IN_MODIFY | c.IN_MOVED_FROM | c.IN_MOVED_TO
                     | c.IN_CLOSE_WRITE | c.IN_ATTRIB | c.IN_DELETE_SELF | c.IN_MOVE_SELF)

    def add(self, path: str) -> object:
        backend = self
        raw = os.fsencode(path)

        class Callback:
            def on_event(self, event: Any) -> None:
                backend.on_path(os.fsdecode(os.path.join(raw, event.name)) if event.name else path)

            def on_watch_deleted(self, wd: int) -> None:
                backend.on_lost(path, wd)

            def on_queue_overflow(self) -> None:
                backend.on_path(path)  # events were lost: a full pass finds what changed

        return self.fd.add_callback(raw, self.mask, Callback(), id(self))

    def remove(self, handle: object) -> None:
        self.fd.remove_callbacks([(handle, id(self))])  # type: ignore[list-item]


class Watcher:
    """Keeps one non-recursive watch per directory and re-creates lost ones."""

    def __init__(
        self,
        dirs: Iterable[str],
        notify: Callable[[], None],
        metrics: Metrics,
        log: Log,
        ignore: Callable[[str], bool] = lambda path: False,
        portable: bool = False,
    ):
        self.dirs = list(dict.fromkeys(os.path.abspath(d) for d in dirs))
        self.notify = notify
        self.metrics = metrics
        self.log = log
        self.ignore = ignore
        backend = _ObserverBackend if portable or InotifyFD is None else _InotifyBackend
        self.backend = backend(self._event, self._lost)
        self.watches: dict[str, tuple[object, int]] = {}
        self.failing: set[str] = set()
        self.lock = threading.Lock()

    def start(self) -> None:
        self.backend.start()
        self.ensure()

    def stop(self) -> None:
        self.backend.stop()

    def _event(self, path: str) -> None:
        if self.ignore(path):
            return
        self.metrics.watch_events.inc()
        self.log.debug("watch event", path=path)
        self.notify()

    def _lost(self, path: str, handle: object) -> None:
        """The kernel dropped a watch (directory deleted): re-watch once it is back."""
        with self.lock:
            current = self.watches.get(path)
            if current is None or current[0] != handle:
                return  # an older watch of a directory we already re-watched
            del self.watches[path]
            self.metrics.watches.set(len(self.watches))
            self.failing.add(path)
        self.log.info("watched directory removed; re-watching when it is back", dir=path)
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
            try:
                self.backend.remove(current[0])
            except (KeyError, OSError):  # already gone with its directory
                pass
            del self.watches[path]
            self.log.info("watched directory replaced or removed; re-watching", dir=path)
        if inode < 0:
            self._failed(path, "does not exist (yet)")
            return
        try:
            watch = self.backend.add(path)
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
