"""One replica of a controller process: serve HTTP, connect, sync caches, lead (optionally), stop.

`ControllerProcess.run(stop)` blocks until `stop` is set (SIGTERM) and returns
the exit code: 0 after a clean shutdown (in-flight work finished, lease
released), 1 when leadership was lost (the process must restart rather than
run a second writer). The operator, the autoscaler and the recommender are
subclasses that say which controllers to build; the rest is the same for all.

A controller here has start_informers(), synced(), readiness() -> (bool, str),
start_workers(), stop_taking_work() and stop(timeout).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from prometheus_client import CollectorRegistry

from promop.errors import UserError
from promop.host.connect import client_factory, connect
from promop.host.flags import default_identity, parse_listen_address
from promop.host.logs import fields
from promop.host.web import WebServer
from promop.host.webtls import TLSConfigError
from promop.kube.client import KubeClient

EXIT_OK, EXIT_LOST_LEADERSHIP, EXIT_STOPPED_EARLY = 0, 1, 0


class ControllerProcess:
    """The lifecycle shared by every long-running command; subclasses implement `build_controllers`."""

    component = "controller"          # the User-Agent's component and the thread names
    logger = logging.getLogger("promop.host")
    sync_hint = "waiting for caches to sync"
    stop_seconds = 6.0                # SIGTERM to exit well within Kubernetes' 30 s grace period

    def __init__(self, options: Any, *, client: KubeClient | None = None,  # a host.flags.HostOptions (or alike)
                 registry: CollectorRegistry | None = None, web: bool = True,
                 leader_kwargs: dict | None = None) -> None:
        self.options = options
        self.client = client
        self.registry = registry if registry is not None else CollectorRegistry()
        self.controllers: list[Any] = []
        self.web: WebServer | None = None
        self._want_web = web
        self._leader_kwargs = leader_kwargs or {}
        self.elector: Any = None
        self.leading = threading.Event()
        self.lost_leadership = threading.Event()
        self.synced = threading.Event()

    # ---- what a subclass says ---------------------------------------------------------

    def build_controllers(self, client: KubeClient) -> list[Any]:
        raise NotImplementedError

    def make_client(self) -> KubeClient:
        """The client `connect` tries (retried while the apiserver does not answer)."""
        return client_factory(self.options.kubeconfig, self.options.context, registry=self.registry,
                              component=self.component)()

    def after_sync(self) -> None:
        """Called once every cache has synced, before leading."""
        self.logger.info("caches synced")

    @property
    def identity(self) -> str:
        return self.options.identity or default_identity()

    # ---- probes -----------------------------------------------------------------------

    def health(self) -> tuple[bool, str]:
        """Liveness: False only when we lead but stopped renewing the lease (a stuck elector)."""
        if self.elector is not None and not self.elector.check(max_tolerable_expiry=20.0):
            return False, "leader election: lease not renewed in time"
        return True, ""

    def readiness(self) -> tuple[bool, str]:
        if not self.controllers:
            return False, "not connected to the apiserver yet"
        for controller in self.controllers:
            ok, why = controller.readiness()
            if not ok:
                return ok, why
        return True, ""

    def start_web(self) -> None:
        """Serve /metrics, /healthz and /readyz (once); UserError when the address cannot be used."""
        if not self._want_web or self.web is not None:
            return
        host, port = parse_listen_address(self.options.listen_address)
        try:
            self.web = WebServer(host, port, self.registry, self.readiness, self.health,
                                 tls=getattr(self.options, "web_tls", None)).start()
        except TLSConfigError as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:
            raise UserError(f"--web.listen-address {self.options.listen_address}: cannot listen "
                            f"({exc.strerror or exc}); pass a free address, e.g. 127.0.0.1:0 for any port") from None
        self.logger.info("serving /metrics /healthz /readyz", **fields(address=f"{host}:{self.web.port}",
                                                                        scheme="https" if self.web.tls else "http"))

    # ---- the lifecycle ----------------------------------------------------------------

    def run(self, stop: threading.Event) -> int:
        self.start_web()
        try:
            return self._run(stop)
        finally:
            if self.web is not None:
                self.web.stop()

    def _run(self, stop: threading.Event) -> int:
        if self.client is None:
            self.client = connect(self.make_client, stop, logger=self.logger)
            if self.client is None:
                return EXIT_STOPPED_EARLY
        self.controllers = self.build_controllers(self.client)
        for controller in self.controllers:
            controller.start_informers()
        if not self._wait_for_sync(stop):
            self.stop_controllers()
            return EXIT_STOPPED_EARLY
        self.synced.set()
        self.after_sync()
        elector_thread = self._start_elector(stop) if self.options.leader_elect else self._lead_alone()
        while not stop.is_set() and not self.lost_leadership.is_set():
            stop.wait(0.2)
        return self._shut_down(stop, elector_thread)

    def _lead_alone(self) -> None:
        self.leading.set()
        for controller in self.controllers:
            controller.start_workers()

    def _synced_within(self, stop: threading.Event, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if all(c.synced() for c in self.controllers):
                return True
            if stop.wait(0.05):
                return False
        return all(c.synced() for c in self.controllers)

    def _wait_for_sync(self, stop: threading.Event) -> bool:
        """True once every cache holds its first LIST; False when stopped first. Says why every 10 s."""
        waited = 0
        while not self._synced_within(stop, 1.0):
            if stop.is_set():
                return False
            if waited % 10 == 0:  # e.g. the CRDs are not installed: say so every 10 s, not every second
                self.logger.warning(self.sync_hint, **fields(waited_s=waited + 1, reason=self.readiness()[1]))
            waited += 1
        return True

    def stop_controllers(self, timeout: float | None = None) -> None:
        """Stop them all at once, within `timeout` (default `stop_seconds`) in all."""
        timeout = self.stop_seconds if timeout is None else timeout
        threads = [threading.Thread(target=c.stop, args=(timeout,), daemon=True) for c in self.controllers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 0.5)

    def _shut_down(self, stop: threading.Event, elector_thread: threading.Thread | None) -> int:
        lost = self.lost_leadership.is_set() and not stop.is_set()
        self.logger.info("shutting down: queued work is dropped, in-flight work gets a few seconds",
                         **fields(lost_leadership=lost, within_s=self.stop_seconds))
        began = time.monotonic()
        self.stop_controllers()
        if self.elector is not None:
            self.elector.stop()  # releases the lease (when we hold it)
            if elector_thread is not None:  # what is left of the budget, and at least 1 s
                elector_thread.join(max(1.0, self.stop_seconds + 1.5 - (time.monotonic() - began)))
        self.logger.info("stopped")
        return EXIT_LOST_LEADERSHIP if lost else EXIT_OK

    def _start_elector(self, stop: threading.Event) -> threading.Thread:
        from promop.kube.leader_election import LeaderElectionConfig, LeaderElector

        o = self.options
        timings = {"lease_duration": o.lease_duration, "renew_deadline": o.renew_deadline,
                   "retry_period": o.retry_period, **self._leader_kwargs}
        cfg = LeaderElectionConfig(o.lease_name, o.lease_namespace, self.identity, **timings)
        controllers = list(self.controllers)

        def started(_stop_event: Any) -> None:
            self.logger.info("became leader", **fields(identity=self.identity, lease=o.lease_name))
            self.leading.set()
            for controller in controllers:
                controller.start_workers()

        def stopped() -> None:
            for controller in controllers:
                controller.stop_taking_work()
            if self.leading.is_set() and not stop.is_set():
                self.logger.error("leadership lost: exiting", **fields(identity=self.identity))
                self.lost_leadership.set()
            self.leading.clear()

        self.elector = LeaderElector(self.client, cfg, on_started_leading=started, on_stopped_leading=stopped,
                                     registry=self.registry)
        t = threading.Thread(target=self.elector.run, name=f"{self.component}-leader-election", daemon=True)
        t.start()
        self.logger.info("waiting for leadership", **fields(identity=self.identity, lease=o.lease_name))
        return t
