"""The reloader's Prometheus metrics, in a registry of its own (names as upstream).

prometheus_client is imported only by `create()`: the init container serves no metrics, and
importing the client (with its HTTP exposition stack) was a large part of its start-up CPU.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry, Counter, Gauge

VERSION = "0.1.0"


@dataclass
class Metrics:
    registry: CollectorRegistry | None  # None: unrecorded()
    reloads: Counter
    reloads_failed: Counter
    last_reload_successful: Gauge
    last_reload_success_timestamp: Gauge
    apply_operations: Counter
    apply_operations_failed: Counter
    envvar_expansion_errors: Gauge
    watches: Gauge
    watch_events: Counter
    watch_errors: Counter
    api_watch_events: Counter
    api_watch_errors: Counter


class _Unrecorded:
    """Stands in for a counter or gauge where nothing is exposed (init mode)."""

    def inc(self, amount: float = 1) -> None:
        return None

    def set(self, value: float) -> None:
        return None

    def labels(self, *values: str) -> "_Unrecorded":
        return self


def unrecorded() -> Metrics:
    """Metrics that record nothing, for the init container (it has no /metrics to serve)."""
    stub: Any = _Unrecorded()
    return Metrics(**{f.name: None if f.name == "registry" else stub for f in fields(Metrics)})


def create(method: str) -> Metrics:
    from prometheus_client import (CollectorRegistry, Counter, Gauge, PlatformCollector, ProcessCollector,
                                   disable_created_metrics)

    disable_created_metrics()
    reg = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=reg)
    PlatformCollector(registry=reg)
    Gauge("reloader_info", "Info about the reloader.", ["method"], registry=reg).labels(method).set(1)
    Gauge(
        "prometheus_config_reloader_build_info", "Build information.", ["version"], registry=reg
    ).labels(VERSION).set(1)
    return Metrics(
        registry=reg,
        reloads=Counter("reloader_reloads", "Reload attempts (failed ones included).", registry=reg),
        reloads_failed=Counter("reloader_reloads_failed", "Reload attempts that failed.", registry=reg),
        last_reload_successful=Gauge(
            "reloader_last_reload_successful", "1 if the last reload attempt succeeded.", registry=reg
        ),
        last_reload_success_timestamp=Gauge(
            "reloader_last_reload_success_timestamp_seconds",
            "Unix time of the last successful reload.",
            registry=reg,
        ),
        apply_operations=Counter(
            "reloader_config_apply_operations", "Passes over the config and watched dirs.", registry=reg
        ),
        apply_operations_failed=Counter(
            "reloader_config_apply_operations_failed",
            "Passes whose input could not be read or whose output could not be written.",
            registry=reg,
        ),
        envvar_expansion_errors=Gauge(
            "reloader_config_environment_variable_expansion_errors",
            "$(VAR) references left unexpanded (unset variables) in the last written output.",
            registry=reg,
        ),
        watches=Gauge("reloader_watches", "Paths currently watched.", registry=reg),
        watch_events=Counter("reloader_watch_events", "Watch events received.", registry=reg),
        watch_errors=Counter("reloader_watch_errors", "Errors setting up or running watches.", registry=reg),
        api_watch_events=Counter("reloader_api_watch_events", "Events received from Kubernetes API watches.",
                                 ["resource"], registry=reg),
        api_watch_errors=Counter("reloader_api_watch_errors",
                                 "Kubernetes API requests or watches that failed (each is retried with backoff).",
                                 ["resource"], registry=reg),
    )
