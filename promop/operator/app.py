"""The operator process: connect (with retries), serve HTTP, lead (optionally), run the controller.

Used by `promop run`, `promop demo` and the in-process tests. `Operator.run`
blocks until `stop` is set (SIGTERM) and returns the exit code: 0 after a
clean shutdown (in-flight syncs finished, lease released), 1 when leadership
was lost (the process must restart rather than run a second writer).
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.errors import ApiError
from promop.kube.resources import NAMESPACES
from promop.operator.controller import Controller
from promop.operator.logs import fields
from promop.operator.options import Options
from promop.operator.web import WebServer

log = logging.getLogger("promop.operator")

EXIT_OK, EXIT_LOST_LEADERSHIP, EXIT_STOPPED_EARLY = 0, 1, 0


def connect(options: Options, stop: threading.Event, *, base_delay: float = 1.0, max_delay: float = 30.0,
            client_factory: Callable[[], KubeClient] | None = None, registry: Any = None) -> KubeClient | None:
    """A client that has answered one request; retries with backoff (logging each try) until `stop`."""
    delay = base_delay
    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            client = client_factory() if client_factory else KubeClient.from_config(
                options.kubeconfig, options.context, registry=registry, component="operator")
            client.list(NAMESPACES, limit=1)
            if attempt > 1:
                log.info("apiserver reachable", **fields(attempt=attempt))
            return client
        except ApiError as exc:
            wait = min(max_delay, delay) * (0.5 + random.random() / 2)
            log.warning("apiserver unreachable; retrying", **fields(attempt=attempt, retry_in=round(wait, 2),
                                                                    error=str(exc)))
            delay = min(max_delay, delay * 2)
            stop.wait(wait)
    return None


class Operator:
    """One operator replica. `client` may be given (tests); otherwise built from options."""

    def __init__(self, options: Options, *, client: KubeClient | None = None,
                 registry: CollectorRegistry | None = None, web: bool = True,
                 controller_kwargs: dict | None = None, leader_kwargs: dict | None = None) -> None:
        self.options = options
        self.client = client
        self.registry = registry if registry is not None else CollectorRegistry()
        self.controller: Controller | None = None
        self.web: WebServer | None = None
        self._want_web = web
        self._controller_kwargs = controller_kwargs or {}
        self._leader_kwargs = leader_kwargs or {}
        self.elector: Any = None
        self.leading = threading.Event()
        self.lost_leadership = threading.Event()
        self.synced = threading.Event()

    def health(self) -> tuple[bool, str]:
        """Liveness: False only when we lead but stopped renewing the lease (a stuck elector)."""
        if self.elector is not None and not self.elector.check(max_tolerable_expiry=20.0):
            return False, "leader election: lease not renewed in time"
        return True, ""

    def readiness(self) -> tuple[bool, str]:
        if self.controller is None:
            return False, "not connected to the apiserver yet"
        return self.controller.readiness()

    def run(self, stop: threading.Event) -> int:
        if self._want_web:
            host, port = self.options.listen_host_port()
            self.web = WebServer(host, port, self.registry, self.readiness, self.health).start()
            log.info("serving /metrics /healthz /readyz", **fields(address=f"{host}:{self.web.port}"))
        try:
            return self._run(stop)
        finally:
            if self.web is not None:
                self.web.stop()

    def _run(self, stop: threading.Event) -> int:
        if self.client is None:
            self.client = connect(self.options, stop, registry=self.registry)
            if self.client is None:
                return EXIT_STOPPED_EARLY
        self.controller = Controller(self.client, self.options, self.registry, **self._controller_kwargs)
        self.controller.start_informers()
        waited = 0
        while not self.controller.wait_for_sync(1.0, stop):
            if stop.is_set():
                self.controller.stop()
                return EXIT_STOPPED_EARLY
            if waited % 10 == 0:  # e.g. the CRDs are not installed: say so every 10 s, not every second
                log.warning("waiting for caches to sync", **fields(waited_s=waited + 1,
                                                                   reason=self.controller.readiness()[1]))
            waited += 1
        self.synced.set()
        log.info("caches synced")
        elector_thread = None
        if self.options.leader_elect:
            elector_thread = self._start_elector(stop)
        else:
            self.leading.set()
            self.controller.start_workers()
        while not stop.is_set() and not self.lost_leadership.is_set():
            stop.wait(0.2)
        lost = self.lost_leadership.is_set() and not stop.is_set()
        log.info("shutting down: finishing in-flight syncs", **fields(lost_leadership=lost))
        self.controller.stop()
        if self.elector is not None:
            self.elector.stop()  # releases the lease (when we hold it)
            if elector_thread is not None:
                elector_thread.join(10)
        log.info("stopped")
        return EXIT_LOST_LEADERSHIP if lost else EXIT_OK

    def _start_elector(self, stop: threading.Event) -> threading.Thread:
        from promop.kube.leader_election import LeaderElectionConfig, LeaderElector

        timings = {"lease_duration": self.options.lease_duration, "renew_deadline": self.options.renew_deadline,
                   "retry_period": self.options.retry_period, **self._leader_kwargs}
        cfg = LeaderElectionConfig(self.options.lease_name, self.options.lease_namespace, self.options.identity,
                                   **timings)
        controller = self.controller
        assert controller is not None

        def started(_stop_event: Any) -> None:
            log.info("became leader", **fields(identity=self.options.identity, lease=self.options.lease_name))
            self.leading.set()
            controller.start_workers()

        def stopped() -> None:
            controller.stop_taking_work()
            if self.leading.is_set() and not stop.is_set():
                log.error("leadership lost: exiting", **fields(identity=self.options.identity))
                self.lost_leadership.set()
            self.leading.clear()

        self.elector = LeaderElector(self.client, cfg, on_started_leading=started, on_stopped_leading=stopped,
                                     registry=self.registry)
        t = threading.Thread(target=self.elector.run, name="promop-leader-election", daemon=True)
        t.start()
        log.info("waiting for leadership", **fields(identity=self.options.identity, lease=self.options.lease_name))
        return t
