"""The two ways to make Prometheus reload: POST /-/reload, or SIGHUP + runtimeinfo."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from datetime import datetime
from typing import Callable, Protocol

from .httpcall import HttpCallError, call, redacted
from .process import find_pids


class ReloadError(Exception):
    """A reload attempt failed; the caller retries after --retry-interval."""


class Stopped(Exception):
    """The reloader is shutting down; abandon the attempt."""


class Reloader(Protocol):
    def __call__(self, stop: threading.Event) -> None: ...


class HttpReloader:
    """POST the reload URL; anything but 200 is a failure (TLS not verified, no keep-alive)."""

    def __init__(self, url: str, timeout: float):
        self.url = url
        self.timeout = timeout

    def __call__(self, stop: threading.Event) -> None:
        try:
            status, body = call("POST", self.url, self.timeout, limit=2000)
        except HttpCallError as exc:
            raise ReloadError(f"{_short(exc)} (is Prometheus up?)") from exc
        if status != 200:
            text = body.decode("utf-8", "replace").strip().replace("\n", " ")[:500]
            raise ReloadError(f"POST {redacted(self.url)} returned {status}: {text}")


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) < 300 else text[:300] + "..."


def _parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class SignalReloader:
    """SIGHUP the process named --process-executable-name and confirm via runtimeinfo.

    Prometheus reports lastConfigTime with one-second resolution, so before
    signalling we wait until the wall clock is in a later second than the
    current lastConfigTime: a successful reload then always shows a newer time.
    """

    def __init__(
        self,
        process_name: str,
        runtimeinfo_url: str,
        timeout: float,
        poll_interval: float = 0.1,
        find: Callable[[str], list[int]] = find_pids,
    ):
        self.process_name = process_name
        self.runtimeinfo_url = runtimeinfo_url
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.find = find

    def _runtimeinfo(self) -> tuple[bool, float]:
        where = redacted(self.runtimeinfo_url)
        try:
            status, body = call("GET", self.runtimeinfo_url, self.timeout)
            if status != 200:
                raise ValueError(f"status {status}")
            data = json.loads(body)["data"]
            return bool(data["reloadConfigSuccess"]), _parse_time(data["lastConfigTime"])
        except (HttpCallError, ValueError, KeyError, TypeError) as exc:
            raise ReloadError(f"cannot read runtimeinfo from {where}: {_short(exc)}") from exc

    def _pid(self) -> int:
        pids = self.find(self.process_name)
        if not pids:
            raise ReloadError(
                f"no process named {self.process_name!r} found; the signal method needs a shared "
                f"process namespace (shareProcessNamespace: true)"
            )
        if len(pids) > 1:
            raise ReloadError(
                f"{len(pids)} processes named {self.process_name!r} found (pids {pids}); "
                f"refusing to guess which one to reload"
            )
        return pids[0]

    def __call__(self, stop: threading.Event) -> None:
        deadline = time.monotonic() + self.timeout
        pid = self._pid()
        was_ok, before = self._runtimeinfo()
        wait = before + 1.0 - time.time()
        if wait > 0 and stop.wait(wait):
            raise Stopped()
        try:
            os.kill(pid, signal.SIGHUP)
        except OSError as exc:
            raise ReloadError(f"cannot send SIGHUP to {self.process_name} (pid {pid}): {exc.strerror}") from exc
        while True:
            if stop.wait(self.poll_interval):
                raise Stopped()
            ok, last = self._runtimeinfo()
            if ok and last > before:
                return
            if was_ok and not ok:
                raise ReloadError(
                    f"{self.process_name} (pid {pid}) rejected the new config (runtimeinfo "
                    f"reloadConfigSuccess=false); see its log"
                )
            if time.monotonic() > deadline:
                raise ReloadError(
                    f"{self.process_name} (pid {pid}) did not report a successful reload within "
                    f"{self.timeout:g}s after SIGHUP (reloadConfigSuccess={str(ok).lower()})"
                )
