"""One pass: render the config, hash inputs, reload Prometheus if something changed.

Upstream-compatible rule: reload only when the hash of the config and the
watched directories differs from the last successfully reloaded one, or when
the previous reload failed. Bad input never clobbers the last good output.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Callable

from .atomic import OutputError, remove_stale_temps
from .envsubst import Expansion, environment
from .flags import Options
from .hashing import add_stream, dirs_digest
from .logs import Log
from .parts import Parts
from .metrics import Metrics
from .render import render
from .source import InputError

if TYPE_CHECKING:  # the init container never reloads: it need not import the HTTP client
    from .reloaders import Reloader


class Result(Enum):
    OK = "ok"
    RETRY = "retry"


@dataclass
class _Rendered:
    digest: str | None
    error: str | None = None


class Applier:
    """Holds what was last written and last reloaded, so passes act only on change."""

    def __init__(self, opts: Options, reload: Reloader | None, metrics: Metrics, log: Log):
        self.opts = opts
        self.reload = reload
        self.metrics = metrics
        self.log = log
        self.env = environment(opts.statefulset_ordinal_from_envvar)
        self.written_digest: str | None = None
        self.seen_fingerprint: tuple[int, ...] | None = None
        self.reloaded_state: tuple[str | None, str] | None = None
        self.force_reload = False
        self.warned_vars: set[str] = set()
        self.last_error: str | None = None
        self.precomputed: tuple[int, _Rendered, tuple[str | None, str] | None] | None = None
        # Called first in every pass: the API inputs take the mounted copies when those are newer.
        self.before_pass: Callable[[], None] | None = None
        self.hashed_dirs = list(opts.watched_dirs)
        # a config split over several Secrets (--config-parts-dir): hashed like a watched directory
        self.parts = Parts(opts.config_parts_dir, opts.config_parts_out_dir) if opts.config_parts_dir else None
        if opts.config_parts_dir:
            self.hashed_dirs.append(opts.config_parts_dir)
        # The config reaches Prometheus only through its rendered digest; with --watch-secret the mounted copy
        # is merely a fallback input (staged into config_file when chosen), so kubelet refreshing it with content
        # already applied, or older, changes nothing Prometheus loads and must not reload it.
        self.hash_exclude = {os.path.abspath(p) for p in (opts.config_file, opts.config_envsubst_file,
                                                         opts.mounted_config_file) if p}
        if opts.config_envsubst_file:
            for name in remove_stale_temps(opts.config_envsubst_file):
                log.info("removed a temp file left by an earlier run", file=name)

    def apply(self, stop: threading.Event, reload: bool = True, seq: int | None = None) -> Result:
        """Run one pass; RETRY means try again after --retry-interval.

        `seq` is the runner's event number: when `precompute` ran at that same
        number, no event came since and its render and hash are still current.
        """
        early, self.precomputed = self.precomputed, None
        if early is not None and (seq is None or early[0] != seq):
            early = None
        result = self._pass(stop, reload, early)
        self.log.debug("pass finished", result=result.value, precomputed=early is not None)
        return result

    def precompute(self, seq: int) -> None:
        """Render and hash now, during the debounce delay, for the pass that follows."""
        rendered = self._render()
        state = self._state(rendered) if self.reload is not None else None
        self.precomputed = (seq, rendered, state)

    def _state(self, rendered: _Rendered) -> tuple[str | None, str]:
        return rendered.digest, dirs_digest(self.hashed_dirs, self.hash_exclude)

    def _pass(self, stop: threading.Event, reload: bool,
              early: tuple[int, _Rendered, tuple[str | None, str] | None] | None) -> Result:
        self.metrics.apply_operations.inc()
        if self.before_pass is not None:
            self.before_pass()
            early = None  # the inputs may have just been restaged: render and hash afresh
        rendered = self._sync_parts(early[1] if early is not None else self._render())
        if rendered.error is not None:
            self.metrics.apply_operations_failed.inc()
            self._log_error(rendered.error)
        else:
            self.last_error = None
        outcome = Result.RETRY if rendered.error else Result.OK
        if not reload or self.reload is None:
            return outcome
        if self.opts.config_envsubst_file and self.written_digest is None:
            # Nothing valid has been written yet: Prometheus has nothing new to load.
            return Result.RETRY
        state = early[2] if early is not None and early[2] is not None else self._state(rendered)
        if state == self.reloaded_state and not self.force_reload:
            return outcome
        if not self._reload(stop, state):
            return Result.RETRY
        return outcome

    def _sync_parts(self, rendered: _Rendered) -> _Rendered:
        """Mirror the config parts after the main config, before any reload (which must see both)."""
        if self.parts is None or rendered.error is not None:
            return rendered
        count, error = self.parts.sync(self.env)
        if count:
            self.log.info("config parts written", cfg_in=self.parts.src, cfg_out=self.parts.out, files=count)
        return _Rendered(rendered.digest, error) if error else rendered

    def _log_error(self, message: str) -> None:
        # Logged at error level once per distinct problem; repeats go to debug.
        if message != self.last_error:
            self.log.error("cannot apply config", err=message)
        else:
            self.log.debug("cannot apply config (unchanged)", err=message)
        self.last_error = message

    def _render(self) -> _Rendered:
        """Hash the input; when it changed, write the output. Returns the digest in effect."""
        path = self.opts.config_file
        if not path:
            return _Rendered(digest=None)
        out = self.opts.config_envsubst_file
        try:
            stream = open(path, "rb")
        except FileNotFoundError:
            return _Rendered(self.written_digest, f"config file {path} does not exist (yet); waiting for it")
        except OSError as exc:
            return _Rendered(self.written_digest, f"cannot open config file {path}: {exc.strerror}")
        with stream:
            self.seen_fingerprint = _fingerprint(os.fstat(stream.fileno()))
            h = hashlib.sha256()
            try:
                add_stream(h, path, stream)
            except OSError as exc:
                return _Rendered(self.written_digest, f"cannot read config file {path}: {exc.strerror}")
            digest = h.hexdigest()
            if not out:
                return _Rendered(digest)
            if digest == self.written_digest and os.path.exists(out):
                return _Rendered(digest)
            stream.seek(0)
            started = time.monotonic()
            try:
                size, expansion = render(stream, path, out, self.env)
            except (InputError, OutputError) as exc:
                return _Rendered(self.written_digest, str(exc))
        self.written_digest = digest
        self._report_expansion(expansion)
        self.log.info(
            "config written", cfg_in=path, cfg_out=out, bytes=size,
            seconds=round(time.monotonic() - started, 4),
        )
        return _Rendered(digest)

    def prepare(self) -> None:
        """Render the output as soon as a watch event shows a new input file.

        Called on events, before the debounce delay is over: the slow part of
        a pass (gunzip, expansion, fsync) then overlaps the delay, and the
        debounced pass only hashes and reloads. A stat fingerprint keeps this
        cheap when the event did not touch the config file. Errors are left to
        the debounced pass, which reports and counts them.
        """
        path, out = self.opts.config_file, self.opts.config_envsubst_file
        if not (path and out):
            return
        try:
            fingerprint = _fingerprint(os.stat(path))
        except OSError:
            return
        if fingerprint != self.seen_fingerprint:
            rendered = self._render()
            if rendered.error:
                self.log.debug("early render failed; the debounced pass will report it", err=rendered.error)

    def _report_expansion(self, expansion: Expansion) -> None:
        self.metrics.envvar_expansion_errors.set(expansion.error_count)
        for name, count in sorted(expansion.missing.items()):
            if name not in self.warned_vars:
                self.warned_vars.add(name)
                self.log.warning(
                    "environment variable not set; $(...) left as is", var=name, occurrences=count
                )

    def _reload(self, stop: threading.Event, state: tuple[str | None, str]) -> bool:
        from .reloaders import ReloadError

        assert self.reload is not None
        self.metrics.reloads.inc()
        started = time.monotonic()
        try:
            self.reload(stop)
        except ReloadError as exc:
            self.force_reload = True
            self.metrics.reloads_failed.inc()
            self.metrics.last_reload_successful.set(0)
            self.log.error("reload failed; will retry", err=str(exc), retry_in=self.opts.retry_interval)
            return False
        self.force_reload = False
        self.reloaded_state = state
        self.metrics.last_reload_successful.set(1)
        self.metrics.last_reload_success_timestamp.set(time.time())
        self.log.info("reload triggered", method=self.opts.reload_method,
                      seconds=round(time.monotonic() - started, 4))
        return True


def _fingerprint(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
