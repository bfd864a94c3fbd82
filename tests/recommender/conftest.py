"""Fixtures: a sandbox with the CRDs, a real Prometheus with backfilled cAdvisor-like history."""

from __future__ import annotations

from pathlib import Path

import pytest
from prom.prom_fixtures import prometheus_factory  # noqa: F401

from promop.kube.client import KubeClient
from promop.operator.install import install_crds
from promop.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cluster():
    with Sandbox(port=0) as sb:
        install_crds(KubeClient(sb.api_client()), ROOT / "crds")
        yield sb


@pytest.fixture
def kube(cluster) -> KubeClient:
    return KubeClient(cluster.api_client())
