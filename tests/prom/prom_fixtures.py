"""A real Prometheus with real data, for any test that reads metrics.

Two ways to give Prometheus data it really stored:

- backfill: `Series` objects written as OpenMetrics and turned into TSDB blocks
  by `promtool tsdb create-blocks-from openmetrics`, then served by Prometheus.
  Exact timestamps and values, so expectations can be computed by hand.
- scrape: an `Exporter` (an HTTP server in the test) that Prometheus scrapes at
  a short interval; `PrometheusServer.wait_scrapes` waits for enough samples.

Use from another test package (tests/ is on sys.path through tests/conftest.py):

    from prom.prom_fixtures import Series, counter, gauge, prometheus_factory, exporter_factory  # noqa

Importing the fixture functions into a test module (or a conftest) makes them
available there. Everything binds loopback and free ports, so tests can run in
parallel.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pytest
import requests
import yaml

from deadlines import scaled

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")


def require_binaries() -> tuple[str, str]:
    """Paths of prometheus and promtool, or skip (fail under CI) when missing."""
    if PROMETHEUS and PROMTOOL:
        return PROMETHEUS, PROMTOOL
    if os.environ.get("CI"):
        pytest.fail("prometheus/promtool not found but CI is set: `apt-get install prometheus`")
    pytest.skip("prometheus/promtool not found; install Debian's prometheus package")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> object:
    """Poll `check` until it returns something truthy; fail naming `what` at the deadline
    (`timeout` times PROMOP_TEST_TIMEOUT_SCALE, deadlines.py)."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


# -- backfilled data -----------------------------------------------------------


@dataclass
class Series:
    """One series to backfill: `points` are (unix seconds, value) in time order.

    `name` is the sample name as queried (`http_requests_total`); for a counter
    the OpenMetrics family name drops the `_total` suffix, as the format wants.
    """

    name: str
    labels: dict[str, str]
    points: list[tuple[float, float]]
    type: str = "gauge"

    @property
    def family(self) -> str:
        if self.type == "counter" and self.name.endswith("_total"):
            return self.name[: -len("_total")]
        return self.name


def counter(name: str, labels: dict[str, str], start: float, end: float, step: float,
            first: float, per_second: float) -> Series:
    """A counter rising at exactly `per_second`: rate()/irate() of it is `per_second`."""
    if not name.endswith("_total"):
        raise ValueError("counter names end in _total")
    points = []
    t = start
    while t <= end + 1e-9:
        points.append((t, first + per_second * (t - start)))
        t += step
    return Series(name, dict(labels), points, "counter")


def gauge(name: str, labels: dict[str, str], start: float, end: float, step: float,
          value: float | Callable[[float], float]) -> Series:
    """A gauge sampled every `step` seconds: a constant, or value(t)."""
    points = []
    t = start
    while t <= end + 1e-9:
        points.append((t, value(t) if callable(value) else value))
        t += step
    return Series(name, dict(labels), points, "gauge")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def openmetrics_text(series: Iterable[Series]) -> str:
    """OpenMetrics exposition with timestamps, families contiguous, ending in `# EOF`."""
    families: dict[str, list[Series]] = {}
    types: dict[str, str] = {}
    for s in series:
        families.setdefault(s.family, []).append(s)
        if types.setdefault(s.family, s.type) != s.type:
            raise ValueError(f"family {s.family} given as both {types[s.family]} and {s.type}")
    lines = []
    for family, members in families.items():
        lines.append(f"# TYPE {family} {types[family]}")
        for s in members:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels.items())
            head = f"{s.name}{{{labels}}}" if labels else s.name
            for ts, v in s.points:
                lines.append(f"{head} {_number(v)} {ts:.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def backfill(series: Iterable[Series], data_dir: Path) -> None:
    """Write `series` into TSDB blocks in `data_dir` with promtool."""
    _, promtool = require_binaries()
    data_dir.mkdir(parents=True, exist_ok=True)
    source = data_dir.parent / f"{data_dir.name}.om.txt"
    source.write_text(openmetrics_text(series))
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data_dir)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"promtool create-blocks-from failed: {proc.stderr[-2000:]}")


# -- a scraped exporter --------------------------------------------------------


class Exporter:
    """A /metrics endpoint whose samples the test sets; counts the scrapes it served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._types: dict[str, str] = {}
        self.scrapes = 0
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = exporter.exposition().encode()
                with exporter._lock:
                    exporter.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.target = f"127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def set(self, name: str, labels: dict[str, str], value: float, type: str = "gauge") -> None:
        with self._lock:
            self._types[name] = type
            self._samples[(name, tuple(sorted(labels.items())))] = value

    def inc(self, name: str, labels: dict[str, str], by: float) -> None:
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            self._types.setdefault(name, "counter")
            self._samples[key] = self._samples.get(key, 0.0) + by

    def remove(self, name: str, labels: dict[str, str]) -> None:
        with self._lock:
            self._samples.pop((name, tuple(sorted(labels.items()))), None)

    def exposition(self) -> str:
        with self._lock:
            items = sorted(self._samples.items())
            types = dict(self._types)
        lines, typed = [], set()
        for (name, labels), value in items:
            if name not in typed:
                lines.append(f"# TYPE {name} {'counter' if types[name] == 'counter' else 'gauge'}")
                typed.add(name)
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            lines.append(f"{name}{{{text}}} {_number(value)}" if text else f"{name} {_number(value)}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def scrape_config(exporter: Exporter, interval: str = "200ms", job: str = "test") -> dict:
    """A Prometheus config scraping `exporter`; honor_labels keeps its pod/namespace/instance labels."""
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": job, "honor_labels": True, "static_configs": [{"targets": [exporter.target]}]}],
    }


# -- the server ----------------------------------------------------------------


class PrometheusServer:
    """Debian's Prometheus on a free loopback port, with its own storage."""

    def __init__(self, workdir: Path, *, config: dict | None = None, data_dir: Path | None = None,
                 extra_args: Iterable[str] = ()) -> None:
        self.binary, _ = require_binaries()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workdir = workdir
        self.data_dir = data_dir or workdir / f"tsdb-{self.port}"
        self.config_path = workdir / f"prometheus-{self.port}.yml"
        self.config_path.write_text(yaml.safe_dump(config or {"global": {"scrape_interval": "15s"}}))
        self.log = workdir / f"prometheus-{self.port}.log"
        self.extra_args = list(extra_args)
        self.proc: subprocess.Popen | None = None

    def start(self) -> "PrometheusServer":
        for attempt in range(5):
            args = [self.binary, f"--config.file={self.config_path}", f"--storage.tsdb.path={self.data_dir}",
                    f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-lifecycle", *self.extra_args]
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
            try:
                wait_for(self._ready, 60, f"prometheus on {self.url} to be ready (log: {self.log})")
                return self
            except AssertionError:
                # free_port() closes its socket before Prometheus binds: under xdist another
                # process may take the port in between. Only that is retried, on a new port.
                if attempt == 4 or self.proc.poll() is None or "address already in use" not in self.log.read_text():
                    raise
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"
        raise AssertionError("unreachable")

    def _ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
        try:
            return requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def query(self, promql: str, at: float | None = None) -> list[dict]:
        """A raw instant query (independent of promop.prom): the `result` list."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        body = requests.get(f"{self.url}/api/v1/query", params=params, timeout=10).json()
        assert body["status"] == "success", body
        return body["data"]["result"]

    def wait_scrapes(self, n: int, job: str = "test", timeout: float = 30) -> None:
        """Wait until Prometheus has stored at least `n` successful scrapes of `job` (up is 1 or
        0: a scrape that timed out on a loaded machine stored no sample of the target)."""
        def enough() -> bool:
            result = self.query(f'sum_over_time(up{{job="{job}"}}[1h])')
            return bool(result) and float(result[0]["value"][1]) >= n
        wait_for(enough, timeout, f"{n} scrapes of job {job} by {self.url}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- pytest fixtures (import them into your test module or conftest) ------------------


@pytest.fixture
def prometheus_factory(tmp_path: Path) -> Iterator[Callable[..., PrometheusServer]]:
    """make(series=[...]) → a started Prometheus serving backfilled `series`;
    make(exporter=e, interval="200ms", scrapes=3) → one scraping `e`, after `scrapes` scrapes;
    make(config={...}) → one with that config. Stopped after the test."""
    servers: list[PrometheusServer] = []

    def make(series: Iterable[Series] | None = None, *, exporter: Exporter | None = None,
             interval: str = "200ms", scrapes: int = 2, config: dict | None = None,
             extra_args: Iterable[str] = ()) -> PrometheusServer:
        workdir = tmp_path / f"prom{len(servers)}"
        workdir.mkdir()
        data_dir = workdir / "data"
        if series is not None:
            backfill(series, data_dir)
        if exporter is not None and config is None:
            config = scrape_config(exporter, interval)
        server = PrometheusServer(workdir, config=config, data_dir=data_dir, extra_args=extra_args)
        servers.append(server)
        server.start()
        if exporter is not None and scrapes:
            server.wait_scrapes(scrapes)
        return server

    yield make
    for s in servers:
        s.stop()


@pytest.fixture
def exporter_factory() -> Iterator[Callable[[], Exporter]]:
    """make() → a started Exporter, closed after the test."""
    made: list[Exporter] = []

    def make() -> Exporter:
        e = Exporter()
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()
