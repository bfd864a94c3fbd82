from __future__ import annotations

import pytest

from tests.autoscaler.harness import Harness
from tests.prom.prom_fixtures import exporter_factory, prometheus_factory, require_binaries  # noqa: F401


@pytest.fixture
def env(sandbox, sandbox_kubeconfig, exporter_factory, prometheus_factory):  # noqa: F811
    """The harness with a real Prometheus scraping the simulated memory exporter every 200 ms."""
    require_binaries()
    exporter = exporter_factory()
    h = Harness(sandbox, sandbox_kubeconfig, exporter)
    h.prometheus = prometheus_factory(exporter=exporter, interval="200ms", scrapes=1)
    yield h
    h.close()
