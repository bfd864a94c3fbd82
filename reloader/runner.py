"""The run loop: debounced watch events, periodic checks and retries, one thread.

Timers are plain deadlines evaluated by a single loop thread that sleeps on an
Event, so a SIGTERM (which sets `stop`) ends any wait at once.
"""
from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

from .apply import Applier, Result
from .atomic import is_temp_of
from .flags import Options
from .logs import Log
from .metrics import Metrics

if TYPE_CHECKING:
    from .watcher import Watcher

# A steady stream of events must not postpone the pass forever.
MAX_DEBOUNCE_FACTOR = 10
# A thread sleeping on a timeout wakes 0.1-0.3 ms late on a busy machine (kernel
# wake-up latency, timer slack): the last stretch before a debounce deadline is
# waited out actively so the pass starts right at --delay-interval.
PRECISE_WAIT = 0.0005
# The inputs are hashed this fraction of --delay-interval before the debounced pass
# (after a burst of events is over), so the pass itself only has to reload.
HASH_LEAD = 0.5


class Runner:
    """Decides when a pass runs: after a quiet --delay-interval, periodically, or to retry."""

    def __init__(self, opts: Options, applier: Applier, metrics: Metrics, log: Log, extra_dirs: tuple[str, ...] = ()):
        self.opts = opts
        self.applier = applier
        self.log = log
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.first_event: float | None = None
        self.last_event: float | None = None
        self.seq = 0  # counts events: a hash computed at one number is stale at the next
        self.urgent_at: float | None = None  # new content from the API: pass now, no debounce
        dirs = list(opts.watched_dirs) + list(extra_dirs)
        if opts.config_parts_dir:
            dirs.append(opts.config_parts_dir)
        source = opts.mounted_config_file or (opts.config_file if not opts.watch_secret else "")
        if source:
            dirs.insert(0, os.path.dirname(os.path.abspath(source)))
        self.watch_dirs = dirs
        self.metrics = metrics
        self._watcher: "Watcher | None" = None

    @property
    def watcher(self) -> "Watcher":
        """Made on first use: init mode never watches, and needs neither watchdog nor its import time."""
        if self._watcher is None:
            from .watcher import Watcher

            self._watcher = Watcher(self.watch_dirs, self._on_event, self.metrics, self.log, ignore=self._ignored)
        return self._watcher

    def _ignored(self, path: str) -> bool:
        """Our own output writes are not changes of the input."""
        out = self.opts.config_envsubst_file
        if not out:
            return False
        return os.path.abspath(path) == os.path.abspath(out) or is_temp_of(out, path)

    def _on_event(self) -> None:
        """Record an event; wake the loop only for the first of a burst.

        Later events only move the deadline, which the loop re-reads when it
        wakes for the old one: waking it for each of them would make it compete
        with the watch thread for the GIL while the burst is still arriving.
        """
        now = time.monotonic()
        with self.lock:
            first = self.first_event is None
            if first:
                self.first_event = now
            self.last_event = now
            self.seq += 1
        if first:
            self.wake.set()

    def request_pass(self) -> None:
        """New content arrived through the API, whole and consistent: apply it without the debounce."""
        with self.lock:
            if self.urgent_at is None:
                self.urgent_at = time.monotonic()
            self.seq += 1
        self.wake.set()

    def _pending(self) -> tuple[int, float | None]:
        """The event sequence number and when the debounced pass is due (None: no events)."""
        with self.lock:
            if self.urgent_at is not None:
                return self.seq, self.urgent_at
            if self.last_event is None or self.first_event is None:
                return self.seq, None
            delay = self.opts.delay_interval
            return self.seq, min(self.last_event + delay, self.first_event + delay * MAX_DEBOUNCE_FACTOR)

    def _take_events(self) -> int:
        with self.lock:
            self.first_event = self.last_event = None
            self.urgent_at = None
            return self.seq

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
        from .reloaders import Stopped

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
        retry_at = self._retry_time(self.applier.apply(self.stop))
        hashed_seq: int | None = None
        lead = self.opts.delay_interval * HASH_LEAD
        while not self.stop.is_set():
            seq, event_due = self._pending()
            hash_at = event_due - lead if event_due is not None and seq != hashed_seq and lead > 0 else None
            rewatch_at = next_rewatch if self.watcher.failing else None
            wake_at = min(t for t in (next_periodic, retry_at, rewatch_at, hash_at, event_due) if t is not None)
            self._sleep_until(wake_at, precise=wake_at == event_due)
            self.wake.clear()
            if self.stop.is_set():
                return
            now = time.monotonic()
            if self.watcher.failing and now >= next_rewatch:
                # A directory that could not be watched yet: try again (success notifies).
                next_rewatch = now + self.opts.retry_interval
                self.watcher.ensure()
            seq, event_due = self._pending()
            periodic = now >= next_periodic
            retry = retry_at is not None and now >= retry_at
            if not (periodic or retry or (event_due is not None and now >= event_due)):
                if event_due is not None and seq != hashed_seq and lead > 0 and now >= event_due - lead:
                    self.applier.precompute(seq)
                    hashed_seq = seq
                elif event_due is not None:
                    self.applier.prepare()
                continue
            if periodic:
                next_periodic = now + self.opts.watch_interval
                self.watcher.ensure()
            taken = self._take_events()
            # Periodic and retry passes look at everything afresh; a debounced one may use
            # the hash computed during the delay if no event came since.
            result = self.applier.apply(self.stop, seq=None if periodic or retry else taken)
            retry_at = self._retry_time(result)

    def _sleep_until(self, deadline: float, precise: bool) -> None:
        """Wait until `deadline` or a wake-up; `precise` spins (yielding) for the last moment."""
        left = deadline - time.monotonic()
        if not precise or left > PRECISE_WAIT:
            if self.wake.wait(max(0.0, left - PRECISE_WAIT if precise else left)) or not precise:
                return
        while time.monotonic() < deadline and not self.wake.is_set():
            pass  # at most PRECISE_WAIT of spinning; a wake-up (event, stop) ends it

    def _retry_time(self, result: Result) -> float | None:
        if result is Result.RETRY:
            self.watcher.ensure()
            return time.monotonic() + self.opts.retry_interval
        return None
