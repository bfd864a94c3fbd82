"""The run loop: debounced watch events, periodic checks and retries, one thread.

Timers are plain deadlines evaluated by a single loop thread that sleeps on an
Event, so a SIGTERM (which sets `stop`) ends any wait at once.
"""
from __future__ import annotations

import os
import threading
import time

from .apply import Applier, Result
from .atomic import is_temp_of
from .flags import Options
from .logs import Log
from .metrics import Metrics
from .reloaders import Stopped
from .watcher import Watcher

# A steady stream of events must not postpone the pass forever.
MAX_DEBOUNCE_FACTOR = 10


class Runner:
    """Decides when a pass runs: after a quiet --delay-interval, periodically, or to retry."""

    def __init__(self, opts: Options, applier: Applier, metrics: Metrics, log: Log):
        self.opts = opts
        self.applier = applier
        self.log = log
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.first_event: float | None = None
        self.last_event: float | None = None
        dirs = list(opts.watched_dirs)
        if opts.config_file:
            dirs.insert(0, os.path.dirname(os.path.abspath(opts.config_file)))
        self.watcher = Watcher(dirs, self._on_event, metrics, log, ignore=self._ignored)

    def _ignored(self, path: str) -> bool:
        """Our own output writes are not changes of the input."""
        out = self.opts.config_envsubst_file
        if not out:
            return False
        return os.path.abspath(path) == os.path.abspath(out) or is_temp_of(out, path)

    def _on_event(self) -> None:
        now = time.monotonic()
        with self.lock:
            if self.first_event is None:
                self.first_event = now
            self.last_event = now
        self.wake.set()

    def _event_due(self) -> float | None:
        with self.lock:
            if self.last_event is None or self.first_event is None:
                return None
            delay = self.opts.delay_interval
            return min(self.last_event + delay, self.first_event + delay * MAX_DEBOUNCE_FACTOR)

    def _take_events(self) -> None:
        with self.lock:
            self.first_event = self.last_event = None

    def run_once(self) -> int:
        """Init-container mode: write the output (waiting out bad input), never reload."""
        while not self.stop.is_set():
            if self.applier.apply(self.stop, reload=False) is Result.OK:
                self.log.info("config rendered; exiting (watch interval is 0)")
                return 0
            if self.stop.wait(self.opts.retry_interval):
                break
        return 0

    def run(self) -> int:
        """Watch mode: loop until stopped."""
        self.watcher.start()
        try:
            self._loop()
        except Stopped:
            pass
        finally:
            self.watcher.stop()
        return 0

    def _loop(self) -> None:
        now = time.monotonic()
        next_periodic = now + self.opts.watch_interval
        next_rewatch = now + self.opts.retry_interval
        self._take_events()
        result = self.applier.apply(self.stop)
        retry_at = self._retry_time(result)
        while not self.stop.is_set():
            due = [next_periodic]
            if retry_at is not None:
                due.append(retry_at)
            if self.watcher.failing:
                due.append(next_rewatch)
            event_due = self._event_due()
            if event_due is not None:
                due.append(event_due)
            self.wake.wait(max(0.0, min(due) - time.monotonic()))
            self.wake.clear()
            if self.stop.is_set():
                return
            now = time.monotonic()
            if self.watcher.failing and now >= next_rewatch:
                # A directory that could not be watched yet: try again (success notifies).
                next_rewatch = now + self.opts.retry_interval
                self.watcher.ensure()
            event_due = self._event_due()
            periodic = now >= next_periodic
            retry = retry_at is not None and now >= retry_at
            if not (periodic or retry or (event_due is not None and now >= event_due)):
                if event_due is not None:
                    self.applier.prepare()
                continue
            if periodic:
                next_periodic = now + self.opts.watch_interval
                self.watcher.ensure()
            self._take_events()
            result = self.applier.apply(self.stop)
            retry_at = self._retry_time(result)

    def _retry_time(self, result: Result) -> float | None:
        if result is Result.RETRY:
            self.watcher.ensure()
            return time.monotonic() + self.opts.retry_interval
        return None
