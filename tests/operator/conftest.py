"""Fixtures for operator tests: a sandbox with the CRDs, and operators run in-process against it."""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest
from operator_testlib import FAST_INFORMERS, OPERATOR_AGENT, ROOT, Running, eventually, kubectl_runner
from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.operator.app import Operator
from promop.operator.install import install_crds
from promop.operator.options import Options
from promop.sandbox import Sandbox


@pytest.fixture
def cluster():
    """A sandbox (StatefulSets report ready) with the monitoring.coreos.com CRDs installed."""
    # bookmarks as a real apiserver sends them, but every 0.5 s instead of every minute while
    # the store changes: settle() waits for every informer to reach the latest resourceVersion
    with Sandbox(port=0, simulate_statefulsets=True, bookmark_interval=0.5) as sb:
        client = KubeClient(sb.api_client())
        install_crds(client, ROOT / "crds")
        yield sb


@pytest.fixture
def kube(cluster) -> KubeClient:
    """The test's own client (its requests are not the operator's)."""
    return KubeClient(cluster.api_client())


@pytest.fixture
def start_operator(cluster):
    """start_operator(**options) -> Running: an operator in a thread against `cluster`."""
    running: list[Running] = []

    def start(*, agent: str = OPERATOR_AGENT, web: bool = False, leader_kwargs: dict | None = None,
              render: Callable | None = None, references: Callable | None = None, **opts: Any) -> Running:
        api = cluster.api_client()
        api.user_agent = agent
        options = Options(listen_address="127.0.0.1:0", **opts)
        registry = CollectorRegistry()
        op = Operator(options, client=KubeClient(api, registry=registry), registry=registry, web=web,
                      controller_kwargs={"informer_kwargs": dict(FAST_INFORMERS), "render": render,
                                         "references": references},
                      leader_kwargs=leader_kwargs)
        stop = threading.Event()
        r = Running(op, threading.Thread(target=lambda: None), stop)
        r.thread = threading.Thread(target=lambda: r.result.setdefault("code", op.run(stop)), daemon=True)
        r.thread.start()
        running.append(r)
        eventually(op.synced.is_set, 20, "caches to sync")
        return r

    yield start
    for r in running:
        r.shutdown()


@pytest.fixture
def kubectl(cluster, tmp_path):
    """kubectl(*args, input=None) against `cluster`; asserts success unless check=False."""
    return kubectl_runner(cluster, tmp_path)
