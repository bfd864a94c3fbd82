"""Request metrics of the Kubernetes API client, named as prometheus-operator names them.

Metrics are created once per registry (a registry refuses duplicate names),
so many clients or informers can share the default registry while tests pass
their own `CollectorRegistry`.
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

T = TypeVar("T")

_lock = threading.Lock()
_cache: dict[tuple[int, str], tuple[CollectorRegistry, object]] = {}


def per_registry(registry: CollectorRegistry | None, kind: str, factory: Callable[[CollectorRegistry], T]) -> T:
    """The `kind` metrics bundle for `registry`, created on first use."""
    registry = REGISTRY if registry is None else registry
    key = (id(registry), kind)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is registry:
            return hit[1]  # type: ignore[return-value]
        made = factory(registry)
        _cache[key] = (registry, made)
        return made


class ClientMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "prometheus_operator_kubernetes_client_http_requests",
            "Kubernetes API requests by HTTP status code (<error> when no response arrived).",
            ["status_code"],
            registry=registry,
        )
        self.duration = Histogram(
            "prometheus_operator_kubernetes_client_http_request_duration_seconds",
            "Kubernetes API request latency (until the response headers for watches) by path template.",
            ["endpoint"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=registry,
        )
        self.rate_limited = Histogram(
            "prometheus_operator_kubernetes_client_rate_limiter_duration_seconds",
            "Time requests waited for the client-side QPS/burst limiter, by path template.",
            ["endpoint"],
            buckets=(0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30),
            registry=registry,
        )

    def observe(self, endpoint: str, status: int | None, seconds: float) -> None:
        self.requests.labels(str(status) if status else "<error>").inc()
        self.duration.labels(endpoint).observe(seconds)


def client_metrics(registry: CollectorRegistry | None = None) -> ClientMetrics:
    return per_registry(registry, "client", ClientMetrics)
