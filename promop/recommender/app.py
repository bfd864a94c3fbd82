"""The recommender process: connect, serve /metrics /healthz /readyz, lead (optionally), run."""

from __future__ import annotations

import logging
import threading
from typing import Any

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.errors import ApiError
from promop.kube.resources import NAMESPACES
from promop.operator.web import WebServer
from promop.recommender.controller import Recommender
from promop.recommender.options import Options

log = logging.getLogger("promop.recommender")

EXIT_OK, EXIT_LOST_LEADERSHIP = 0, 1


class App:
    def __init__(self, options: Options, *, client: Any = None, registry: CollectorRegistry | None = None,
                 web: bool = True, recommender_kwargs: dict | None = None, leader_kwargs: dict | None = None):
        self.options = options
        self.client = client
        self.registry = registry if registry is not None else CollectorRegistry()
        self.recommender: Recommender | None = None
        self.web: WebServer | None = None
        self._want_web = web
        self._kwargs = recommender_kwargs or {}
        self._leader_kwargs = leader_kwargs or {}
        self.elector: Any = None
        self.lost_leadership = threading.Event()

    def readiness(self) -> tuple[bool, str]:
        if self.recommender is None:
            return False, "not connected to the apiserver yet"
        return self.recommender.readiness()

    def health(self) -> tuple[bool, str]:
        if self.elector is not None and not self.elector.check(max_tolerable_expiry=20.0):
            return False, "leader election: lease not renewed in time"
        return True, ""

    def run(self, stop: threading.Event) -> int:
        if self._want_web:
            host, port = self.options.listen_host_port()
            self.web = WebServer(host, port, self.registry, self.readiness, self.health).start()
            log.info(f"serving /metrics /healthz /readyz address={host}:{self.web.port}")
        try:
            return self._run(stop)
        finally:
            if self.web is not None:
                self.web.stop()

    def _connect(self, stop: threading.Event) -> Any:
        delay = 1.0
        while not stop.is_set():
            try:
                client = KubeClient.from_config(self.options.kubeconfig, self.options.context, registry=self.registry)
                client.list(NAMESPACES, limit=1)
                return client
            except ApiError as exc:
                log.warning(f"apiserver unreachable; retrying retry_in={delay:g} error={exc}")
                stop.wait(delay)
                delay = min(30.0, delay * 2)
        return None

    def _run(self, stop: threading.Event) -> int:
        if self.client is None:
            self.client = self._connect(stop)
            if self.client is None:
                return EXIT_OK
        self.recommender = Recommender(self.client, self.options, self.registry, **self._kwargs)
        self.recommender.start_informers()
        while not self.recommender.wait_for_sync(1.0):
            if stop.is_set():
                self.recommender.stop()
                return EXIT_OK
        log.info("caches synced")
        if self.options.leader_elect:
            self._start_elector(stop)
        else:
            self.recommender.start_workers()
        while not stop.is_set() and not self.lost_leadership.is_set():
            stop.wait(0.2)
        lost = self.lost_leadership.is_set() and not stop.is_set()
        self.recommender.stop()
        if self.elector is not None:
            self.elector.stop()
        return EXIT_LOST_LEADERSHIP if lost else EXIT_OK

    def _start_elector(self, stop: threading.Event) -> None:
        from promop.kube.leader_election import LeaderElectionConfig, LeaderElector

        o = self.options
        cfg = LeaderElectionConfig(o.lease_name, o.lease_namespace, o.identity, **{
            "lease_duration": o.lease_duration, "renew_deadline": o.renew_deadline, "retry_period": o.retry_period,
            **self._leader_kwargs})
        rec = self.recommender
        assert rec is not None
        leading = threading.Event()

        def started(_stop: Any) -> None:
            log.info(f"became leader identity={o.identity}")
            leading.set()
            rec.start_workers()

        def stopped() -> None:
            if leading.is_set() and not stop.is_set():
                log.error("leadership lost: exiting")
                self.lost_leadership.set()

        self.elector = LeaderElector(self.client, cfg, on_started_leading=started, on_stopped_leading=stopped,
                                     registry=self.registry)
        threading.Thread(target=self.elector.run, name="recommender-leader-election", daemon=True).start()
