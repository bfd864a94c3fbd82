"""Fixtures for the reloader tests: a real Prometheus, the reloader as a subprocess.

Deliberately not a conftest.py: without an __init__.py (a tests/reloader package would
shadow the real `reloader` package) every conftest.py is imported as the top-level module
`conftest`, and a second one replaces another area's in sys.modules. Test modules import
these fixtures by name instead.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import pytest
import requests

from deadlines import scaled
from reloader_testlib import CountingServer, free_port, metric_values, parse_json_lines, wait_for

PROMETHEUS = shutil.which("prometheus")
T = TypeVar("T")


def _require_prometheus() -> str:
    if PROMETHEUS:
        return PROMETHEUS
    if os.environ.get("CI"):
        pytest.fail("prometheus binary not found but CI is set: `apt-get install prometheus` (see .ci/run)")
    pytest.skip("prometheus binary not found; install Debian's prometheus package to run this test")


class Prometheus:
    """A real Prometheus on a free loopback port with its own storage directory."""

    def __init__(self, config: Path, workdir: Path, port: int | None = None, executable: str | None = None):
        self.config = config
        self._chosen_port = port is not None
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workdir = workdir
        self.executable = executable or _require_prometheus()
        self.proc: subprocess.Popen | None = None
        self.log = workdir / f"prometheus-{self.port}.log"

    def start(self) -> "Prometheus":
        storage = self.workdir / f"tsdb-{self.port}"
        for attempt in range(5):
            args = [
                self.executable,
                "--web.enable-lifecycle",
                f"--config.file={self.config}",
                f"--storage.tsdb.path={storage}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ]
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
            wait_for(lambda: self.proc.poll() is not None or self._ready(), timeout=30,
                     what=f"prometheus on port {self.port} to be ready (log: {self.log})")
            if self.proc.poll() is None:
                return self
            # free_port() closes its socket before Prometheus binds: under xdist another process
            # may take the port in between. Only that is retried, on a new port the test did not choose.
            if attempt == 4 or self._chosen_port or "address already in use" not in self.log.read_text():
                break
            self.port = free_port()
            self.base = f"http://127.0.0.1:{self.port}"
        raise AssertionError(f"prometheus exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")

    def _ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
        try:
            return requests.get(f"{self.base}/-/ready", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def status_config(self) -> str:
        return requests.get(f"{self.base}/api/v1/status/config", timeout=5).json()["data"]["yaml"]

    def rule_groups(self) -> list[str]:
        data = requests.get(f"{self.base}/api/v1/rules", timeout=5).json()["data"]
        return sorted(g["name"] for g in data["groups"])


class ReloaderProcess:
    """promop-config-reloader in a subprocess, with its JSON log lines collected."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, command: list[str] | None = None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.command = (command or [sys.executable, "-m", "reloader"]) + ["--log-format=json", "--log-level=debug"] + args
        self.proc = subprocess.Popen(
            self.command, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._port: int | None = None

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    @property
    def logs(self) -> list[dict]:
        return parse_json_lines(list(self.lines))

    def find_log(self, msg: str, **fields: object) -> dict | None:
        for entry in self.logs:
            if entry.get("msg") == msg and all(entry.get(k) == v for k, v in fields.items()):
                return entry
        return None

    def count_logs(self, msg: str) -> int:
        return sum(1 for e in self.logs if e.get("msg") == msg)

    def wait_log(self, msg: str, timeout: float = 10.0, **fields: object) -> dict:
        return wait_for(lambda: self._alive_or_fail() and self.find_log(msg, **fields), timeout,
                        what=f"log {msg!r} {fields or ''}; got:\n" + "\n".join(self.lines[-20:]))

    def _alive_or_fail(self) -> bool:
        if self.proc.poll() is not None:
            self._reader.join(2)
            raise AssertionError(f"reloader exited with {self.proc.returncode}:\n" + "\n".join(self.lines[-30:]))
        return True

    @property
    def port(self) -> int:
        if self._port is None:
            self._port = int(self.wait_log("listening")["port"])
        return self._port

    def metrics(self) -> dict[str, float]:
        text = requests.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5).text
        return metric_values(text)

    def metric(self, name: str) -> float:
        return self.metrics().get(name, 0.0)

    def wait_metric(self, name: str, check: Callable[[float], bool], timeout: float = 10.0) -> float:
        holder: dict[str, float] = {}

        def ok() -> bool:
            holder["v"] = self.metric(name)
            return check(holder["v"])

        wait_for(ok, timeout, what=f"metric {name} (last value {holder.get('v')}); log tail:\n" + "\n".join(self.lines[-10:]))
        return holder["v"]

    def wait_reloaded(self, n: int, timeout: float = 10.0) -> None:
        """Wait until `n` reloads have completed successfully (not merely started)."""
        wait_for(lambda: self._alive_or_fail() and self.count_logs("reload triggered") >= n, timeout,
                 what=f"{n} successful reloads; log tail:\n" + "\n".join(self.lines[-10:]))

    def wait_exit(self, timeout: float = 10.0) -> int:
        """The exit code, waiting at most `timeout` times PROMOP_TEST_TIMEOUT_SCALE."""
        rc = self.proc.wait(timeout=scaled(timeout))
        self._reader.join(2)
        return rc

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def prometheus_binary() -> str:
    return _require_prometheus()


class _Made:
    """Objects a factory fixture made, each closed by `close` at teardown."""

    def __init__(self, close: Callable[[object], None]):
        self.items: list[object] = []
        self.close = close

    def add(self, item: T) -> T:
        self.items.append(item)
        return item

    def close_all(self) -> None:
        for item in self.items:
            self.close(item)


@pytest.fixture
def prometheus_factory(tmp_path: Path) -> Iterator[Callable[..., Prometheus]]:
    made = _Made(lambda prom: prom.stop())

    def make(config: Path, port: int | None = None, executable: str | None = None, start: bool = True) -> Prometheus:
        prom = made.add(Prometheus(config, tmp_path, port=port, executable=executable))
        return prom.start() if start else prom

    yield make
    made.close_all()


@pytest.fixture
def reloader_factory() -> Iterator[Callable[..., ReloaderProcess]]:
    made = _Made(lambda proc: proc.terminate())

    def make(args: list[str], env: dict[str, str] | None = None, command: list[str] | None = None) -> ReloaderProcess:
        return made.add(ReloaderProcess(args, env=env, command=command))

    yield make
    made.close_all()


@pytest.fixture
def reload_server() -> Iterator[Callable[..., CountingServer]]:
    made = _Made(lambda srv: srv.close())

    def make(**kwargs: object) -> CountingServer:
        return made.add(CountingServer(**kwargs))  # type: ignore[arg-type]

    yield make
    made.close_all()


FAST = ["--delay-interval=50ms", "--retry-interval=200ms", "--watch-interval=1m", "--listen-address=127.0.0.1:0"]


@pytest.fixture
def fast_flags() -> list[str]:
    """Short intervals so the tests run in well under a second each."""
    return list(FAST)

