"""The running adapter: state, relist in the background, config reload.

Requests read `adapter.state` once and use that object throughout, so a
relist or reload never changes what a request sees halfway. A relist builds a
whole new registry off to the side and swaps it in; if any seriesQuery
fails, the previous registry stays. A reload (the config file changed) is
checked, relisted with the new rules, and only then swapped in; a bad config
is logged and the running one keeps serving.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from promop.adapter.config import AdapterConfig, ConfigError, load_config
from promop.adapter.naming import Namer, ResourceNamer
from promop.adapter.provider import State
from promop.adapter.registry import Registry, SeriesSet, build, collect, series_queries
from promop.adapter.resources import ResourceMapper
from promop.prom import PromError, PrometheusClient

log = logging.getLogger("promop.adapter")


class AdapterMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.requests = Counter("promop_adapter_requests_total", "API requests answered, by API and HTTP code.",
                                ["api", "code"], registry=r)
        self.latency = Histogram("promop_adapter_request_duration_seconds", "Time to answer an API request.",
                                 ["api"], registry=r,
                                 buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
        self.relists = Counter("promop_adapter_relists_total", "Series discoveries, by result.", ["result"],
                               registry=r)
        self.relist_duration = Histogram("promop_adapter_relist_duration_seconds", "Time a series discovery took.",
                                         registry=r, buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
        self.last_relist = Gauge("promop_adapter_last_successful_relist_timestamp_seconds",
                                 "When the registry was last rebuilt.", registry=r)
        self.registry_size = Gauge("promop_adapter_registry_metrics", "Metrics served, by API.", ["api"], registry=r)
        self.series_seen = Gauge("promop_adapter_series_seen", "Series the last discovery read.", registry=r)
        self.reloads = Counter("promop_adapter_config_reloads_total", "Config reloads, by result.", ["result"],
                               registry=r)
        for api in ("custom", "external", "resource", "discovery", "other"):
            self.latency.labels(api)
        for result in ("success", "failure"):
            self.relists.labels(result)
            self.reloads.labels(result)


@dataclass
class Options:
    config_path: str
    relist_interval: float = 600.0
    max_age: float | None = None          # default: the relist interval
    series_timeout: float = 120.0


def compile_state(cfg: AdapterConfig, mapper: ResourceMapper, registry: Registry | None = None,
                  generation: int = 0) -> State:
    namers = [Namer(r, mapper) for r in cfg.rules]
    external = [Namer(r, mapper) for r in cfg.external_rules]
    rr = cfg.resource_rules
    cpu = ResourceNamer(rr.cpu, mapper) if rr else None
    mem = ResourceNamer(rr.memory, mapper) if rr else None
    reg = registry or Registry(namers=namers, external_namers=external)
    return State(cfg, mapper, namers, external, cpu, mem, reg, generation)


def discover_series(prom: PrometheusClient, namers: list[Namer], start: float | None,
                    timeout: float | None = None) -> dict[str, SeriesSet]:
    """Ask each distinct seriesQuery once, in parallel; raise PromError if any fails."""
    queries = series_queries(namers)
    if not queries:
        return {}

    def one(item: tuple[str, list[Namer]]) -> tuple[str, SeriesSet]:
        query, group = item
        return query, collect(prom.iter_series(query, start=start, timeout=timeout, batch_bytes=256 * 1024), group)

    with ThreadPoolExecutor(max_workers=min(8, len(queries)), thread_name_prefix="adapter-series") as pool:
        return dict(pool.map(one, queries.items()))


class Adapter:
    def __init__(self, options: Options, prom: PrometheusClient, mapper: ResourceMapper,
                 config: AdapterConfig, metrics: AdapterMetrics | None = None,
                 clock: Callable[[], float] = time.time,
                 discover_resources: Callable[[], list[Any]] | None = None) -> None:
        self.options = options
        self.discover_resources = discover_resources
        self.prom = prom
        self.mapper = mapper
        self.metrics = metrics or AdapterMetrics()
        self.clock = clock
        self.state: State = compile_state(config, mapper)
        self.ready = threading.Event()
        self._config_hash = _file_hash(options.config_path)
        self._relist_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._observer: Any = None
        self.watch_handler: ConfigWatchHandler | None = None
        for w in config.warnings:
            log.warning("config warning: %s", w)

    # -- relist ------------------------------------------------------------------------

    def _max_age(self) -> float:
        return self.options.max_age if self.options.max_age is not None else self.options.relist_interval

    def relist(self, state: State | None = None) -> State | None:
        """Rebuild the registry for `state` (default: the current one); swap it in on success."""
        with self._relist_lock:
            base = self._refresh_resources(state or self.state)
            started = time.monotonic()
            try:
                sets = discover_series(self.prom, base.namers + base.external_namers,
                                       start=self.clock() - self._max_age(), timeout=self.options.series_timeout)
            except PromError as exc:
                self.metrics.relists.labels("failure").inc()
                log.error("series discovery failed, keeping the previous registry: %s", exc)
                return None
            registry = build(base.namers, base.external_namers, sets)
            new = State(base.config, base.mapper, base.namers, base.external_namers, base.cpu, base.memory,
                        registry, base.generation + 1)
            self.state = new
            self.metrics.relists.labels("success").inc()
            self.metrics.relist_duration.observe(time.monotonic() - started)
            self.metrics.last_relist.set(self.clock())
            self.metrics.registry_size.labels("custom").set(len(registry.custom))
            self.metrics.registry_size.labels("external").set(len(registry.external))
            self.metrics.series_seen.set(registry.series_seen)
            self.ready.set()
            log.info("registry rebuilt custom=%d external=%d series_seen=%d took=%.3fs", len(registry.custom),
                     len(registry.external), registry.series_seen, time.monotonic() - started)
            return new

    def _refresh_resources(self, base: State) -> State:
        """Re-read the API server's resources (a CRD installed since the start becomes mappable)."""
        if self.discover_resources is None:
            return base
        try:
            found = self.discover_resources()
        except Exception as exc:
            log.warning("resource discovery failed, keeping the known resources: %s", exc)
            return base
        if set(found) <= set(self.mapper.infos):
            return base
        mapper = ResourceMapper()
        mapper.add(found)
        self.mapper = mapper
        log.info("resources changed, recompiling the rules resources=%d", len(mapper.infos))
        return compile_state(base.config, mapper, base.registry, base.generation)

    # -- reload -------------------------------------------------------------------------

    def reload(self) -> bool:
        """Load the config file again; serve it once its registry is built. False if it was refused."""
        try:
            cfg = load_config(self.options.config_path)
        except ConfigError as exc:
            self.metrics.reloads.labels("failure").inc()
            log.error("config reload refused, still serving the previous config: %s", str(exc).replace("\n", " "))
            return False
        for w in cfg.warnings:
            log.warning("config warning: %s", w)
        candidate = compile_state(cfg, self.mapper, generation=self.state.generation)
        if self.relist(candidate) is None:
            self.metrics.reloads.labels("failure").inc()
            log.error("config reload: discovery with the new config failed; still serving the previous config")
            return False
        self.metrics.reloads.labels("success").inc()
        log.info("config reloaded path=%s", self.options.config_path)
        return True

    def check_config_changed(self) -> bool:
        h = _file_hash(self.options.config_path)
        if h is None or h == self._config_hash:
            return False
        self._config_hash = h
        return True

    # -- background ---------------------------------------------------------------------

    def start(self, watch_config: bool = True) -> None:
        t = threading.Thread(target=self._relist_loop, name="adapter-relist", daemon=True)
        t.start()
        self._threads.append(t)
        if watch_config:
            self._start_watch()

    def _relist_loop(self) -> None:
        while not self._stop.is_set():
            if self.check_config_changed():
                if not self.reload():
                    self.relist()
            else:
                self.relist()
            interval = self.options.relist_interval if self.ready.is_set() else min(5.0, self.options.relist_interval)
            self._wake.wait(interval)
            self._wake.clear()

    def _start_watch(self) -> None:
        try:
            from watchdog.observers import Observer
        except ImportError:  # pragma: no cover - watchdog is a dependency
            return
        directory = os.path.dirname(os.path.abspath(self.options.config_path))
        self._observer = Observer()
        self.watch_handler = ConfigWatchHandler(self)
        self._observer.schedule(self.watch_handler, directory, recursive=False)
        self._observer.daemon = True
        self._observer.start()

    def check_config_changed_peek(self) -> bool:
        h = _file_hash(self.options.config_path)
        return h is not None and h != self._config_hash

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(5)
        for t in self._threads:
            t.join(10)


# Events that can change what the config path reads. Opening and closing without writing cannot, and
# must be ignored: the handler itself reads the file to compare its hash, which causes exactly those
# events, so reacting to them spun the watch threads forever (a third of a CPU, slowing every request).
CONTENT_EVENTS = frozenset({"created", "modified", "moved", "deleted", "closed"})


class ConfigWatchHandler:
    """watchdog handler: wakes the relist loop when the config file's content changed."""

    def __init__(self, adapter: "Adapter") -> None:
        self.adapter = adapter
        self.peeks = 0          # times the file was read (for tests)

    def dispatch(self, event: Any) -> None:
        if event.event_type not in CONTENT_EVENTS:
            return
        self.peeks += 1
        if self.adapter.check_config_changed_peek():
            self.adapter._wake.set()


def _file_hash(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None
