"""Fixtures for operator tests: a sandbox with the CRDs, and operators run in-process against it."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.operator.app import Operator
from promop.operator.install import install_crds
from promop.operator.options import Options
from promop.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_AGENT = "promop-operator-under-test"
FAST_INFORMERS = {"backoff_base": 0.05, "backoff_cap": 0.5, "idle_timeout": 10.0}


def eventually(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll `check` until it returns a truthy value before `timeout`; AssertionError and NotFound
    (the object is not there yet) count as not yet."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except (AssertionError, NotFound) as exc:
            last = exc
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f": {last}" if last else ""))


@pytest.fixture
def cluster():
    """A sandbox (StatefulSets report ready) with the monitoring.coreos.com CRDs installed."""
    with Sandbox(port=0, simulate_statefulsets=True) as sb:
        client = KubeClient(sb.api_client())
        install_crds(client, ROOT / "crds")
        yield sb


@pytest.fixture
def kube(cluster) -> KubeClient:
    """The test's own client (its requests are not the operator's)."""
    return KubeClient(cluster.api_client())


@dataclass
class Running:
    operator: Operator
    thread: threading.Thread
    stop: threading.Event
    result: dict = field(default_factory=dict)

    @property
    def controller(self):
        return self.operator.controller

    def shutdown(self, timeout: float = 30.0) -> int | None:
        self.stop.set()
        self.thread.join(timeout)
        return self.result.get("code")

    def idle(self) -> bool:
        """Every known Prometheus synced at least once and nothing queued or in flight."""
        ctl = self.controller
        if ctl is None or not self.operator.synced.is_set():
            return False
        done = all(k in ctl.syncer.last_report for k in ctl.prometheuses.store.keys())
        return done and len(ctl.queue) == 0 and ctl.queue.processing() == 0 and ctl.queue.waiting() == 0 and all(
            inf.pending() == 0 for inf in ctl.informers)


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


class Writes(list):
    """Request records that print readably in assertion messages."""

    def __repr__(self) -> str:
        return repr([(r.verb, r.resource, r.subresource, r.namespace, r.name, r.code) for r in self])


def operator_writes(sb: Sandbox, agent: str = OPERATOR_AGENT) -> list:
    return Writes(r for r in sb.requests if r.is_write and r.user_agent.startswith(agent))


KUBECTL = shutil.which("kubectl")


@pytest.fixture
def kubectl(cluster, tmp_path):
    """kubectl(*args, input=None) against `cluster`; asserts success unless check=False."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")

    def run(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", str(tmp_path / "kcache"), *args],
                              capture_output=True, text=True, timeout=60, input=input)
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc

    return run
