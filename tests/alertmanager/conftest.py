"""Fixtures for the Alertmanager controller tests: a sandbox with every CRD, operators run in-process."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.operator.app import Operator
from promop.operator.install import install_crds
from promop.operator.options import Options
from promop.sandbox import Sandbox

from .operator_helpers import AGENT, FAST_INFORMERS, ROOT, Running, eventually


@pytest.fixture
def cluster():
    with Sandbox(port=0, simulate_statefulsets=True) as sb:
        install_crds(KubeClient(sb.api_client()), ROOT / "crds")
        yield sb


@pytest.fixture
def kube(cluster) -> KubeClient:
    return KubeClient(cluster.api_client())


@pytest.fixture
def start_operator(cluster):
    running: list[Running] = []

    def start(**opts: Any) -> Running:
        api = cluster.api_client()
        api.user_agent = AGENT
        registry = CollectorRegistry()
        options = Options(listen_address="127.0.0.1:0", **opts)
        op = Operator(options, client=KubeClient(api, registry=registry), registry=registry, web=False,
                      controller_kwargs={"informer_kwargs": dict(FAST_INFORMERS)})
        stop = threading.Event()
        r = Running(op, stop)
        r.thread = threading.Thread(target=lambda: r.result.setdefault("code", op.run(stop)), daemon=True)
        r.thread.start()
        running.append(r)
        eventually(op.synced.is_set, 30, "caches to sync")
        return r

    yield start
    for r in running:
        r.shutdown()
