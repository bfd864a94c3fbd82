"""Every route of the three APIs against a real Prometheus, values from the backfilled data."""

from __future__ import annotations

import time

import pytest

from adapter.adapter_fixtures import (  # noqa: F401 - fixtures
    MI, adapter_factory, cluster_prom, parse_quantity, prometheus_factory,
)

pytestmark = pytest.mark.prometheus


def _close(q: str, expected: float, tol: float = 0.0011) -> bool:
    return abs(parse_quantity(q) - expected) <= tol


def test_smoke(cluster_prom, adapter_factory) -> None:  # noqa: F811
    a = adapter_factory(cluster_prom.url)
    doc = a.json("/apis/custom.metrics.k8s.io/v1beta2")
    print(doc)
    got = a.json("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second")
    print(got)
