"""The `promop autoscaler` process: connect, serve /metrics /healthz /readyz, lead (optionally), run.

`Autoscaler.run(stop)` blocks until `stop` is set and returns 0, or 1 when
leadership was lost (the process must restart rather than run a second writer).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.autoscaler.controller import Controller
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError
from promop.kube.resources import NAMESPACES
from promop.operator.logs import fields
from promop.operator.options import parse_listen_address
from promop.operator.web import WebServer

log = logging.getLogger("promop.autoscaler")


@dataclass(frozen=True)
class Options:
    kubeconfig: str | None = None
    context: str | None = None
    prometheus_url: str = "http://prometheus-operated.monitoring.svc:9090"
    prometheus_timeout: float = 10.0
    sync_period: float = 15.0
    workers: int = 2
    listen_address: str = ":8080"
    leader_elect: bool = False
    lease_name: str = "promop-autoscaler"
    lease_namespace: str = "default"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def with_identity(self) -> str:
        return self.identity or f"{socket.gethostname()}_{os.getpid()}"


class Autoscaler:
    def __init__(self, options: Options, *, client: KubeClient | None = None, prometheus: Any = None,
                 registry: CollectorRegistry | None = None, web: bool = True,
                 clock: Callable[[], float] = time.time, informer_kwargs: dict | None = None,
                 leader_kwargs: dict | None = None) -> None:
        self.options = options
        self.client = client
        self.prometheus = prometheus
        self.registry = registry if registry is not None else CollectorRegistry()
        self.clock = clock
        self.controller: Controller | None = None
        self.web: WebServer | None = None
        self._want_web = web
        self._informer_kwargs = informer_kwargs or {}
        self._leader_kwargs = leader_kwargs or {}
        self.elector: Any = None
        self.leading = threading.Event()
        self.lost_leadership = threading.Event()

    def readiness(self) -> tuple[bool, str]:
        if self.controller is None:
            return False, "not connected to the apiserver yet"
        return self.controller.readiness()

    def health(self) -> tuple[bool, str]:
        if self.elector is not None and not self.elector.check(max_tolerable_expiry=20.0):
            return False, "leader election: lease not renewed in time"
        return True, ""

    def run(self, stop: threading.Event) -> int:
        if self._want_web:
            host, port = parse_listen_address(self.options.listen_address)
            self.web = WebServer(host, port, self.registry, self.readiness, self.health).start()
            log.info("serving /metrics /healthz /readyz", **fields(address=f"{host}:{self.web.port}"))
        try:
            return self._run(stop)
        finally:
            if self.web is not None:
                self.web.stop()

    def _connect(self, stop: threading.Event) -> KubeClient | None:
        delay = 1.0
        while not stop.is_set():
            try:
                client = KubeClient.from_config(self.options.kubeconfig, self.options.context,
                                                registry=self.registry)
                client.list(NAMESPACES, limit=1)
                return client
            except ApiError as exc:
                log.warning("apiserver unreachable; retrying", **fields(retry_in=delay, error=str(exc)))
                stop.wait(delay)
                delay = min(30.0, delay * 2)
        return None

    def _run(self, stop: threading.Event) -> int:
        if self.client is None:
            self.client = self._connect(stop)
            if self.client is None:
                return 0
        if self.prometheus is None:
            from promop.prom import PrometheusClient

            self.prometheus = PrometheusClient(self.options.prometheus_url, timeout=self.options.prometheus_timeout)
        self.controller = Controller(self.client, self.prometheus, sync_period=self.options.sync_period,
                                     workers=self.options.workers, registry=self.registry, clock=self.clock,
                                     informer_kwargs=self._informer_kwargs)
        self.controller.start_informers()
        waited = 0
        while not self.controller.wait_for_sync(1.0, stop):
            if stop.is_set():
                self.controller.stop()
                return 0
            if waited % 10 == 0:
                log.warning("waiting for caches to sync (is the MemHpa CRD installed?)",
                            **fields(reason=self.controller.readiness()[1]))
            waited += 1
        log.info("caches synced")
        thread = None
        if self.options.leader_elect:
            thread = self._start_elector(stop)
        else:
            self.leading.set()
            self.controller.start_workers()
        while not stop.is_set() and not self.lost_leadership.is_set():
            stop.wait(0.2)
        lost = self.lost_leadership.is_set() and not stop.is_set()
        self.controller.stop()
        if self.elector is not None:
            self.elector.stop()
            if thread is not None:
                thread.join(10)
        log.info("stopped", **fields(lost_leadership=lost))
        return 1 if lost else 0

    def _start_elector(self, stop: threading.Event) -> threading.Thread:
        from promop.kube.leader_election import LeaderElectionConfig, LeaderElector

        o = self.options
        timings = {"lease_duration": o.lease_duration, "renew_deadline": o.renew_deadline,
                   "retry_period": o.retry_period, **self._leader_kwargs}
        cfg = LeaderElectionConfig(o.lease_name, o.lease_namespace, o.with_identity(), **timings)
        controller = self.controller
        assert controller is not None

        def started(_stop: Any) -> None:
            log.info("became leader", **fields(identity=o.with_identity()))
            self.leading.set()
            controller.start_workers()

        def stopped() -> None:
            controller.stop_taking_work()
            if self.leading.is_set() and not stop.is_set():
                log.error("leadership lost: exiting", **fields(identity=o.with_identity()))
                self.lost_leadership.set()
            self.leading.clear()

        self.elector = LeaderElector(self.client, cfg, on_started_leading=started, on_stopped_leading=stopped,
                                     registry=self.registry)
        t = threading.Thread(target=self.elector.run, name="autoscaler-leader-election", daemon=True)
        t.start()
        return t
