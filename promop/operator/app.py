"""The operator process: connect (with retries), serve HTTP, lead (optionally), run the controller.

Used by `promop run`, `promop demo` and the in-process tests. `Operator.run`
blocks until `stop` is set (SIGTERM) and returns the exit code: 0 after a
clean shutdown (in-flight syncs finished, lease released), 1 when leadership
was lost (the process must restart rather than run a second writer).
"""

from __future__ import annotations

import gc
import logging
import random
import threading
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.errors import UserError
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError
from promop.kube.resources import NAMESPACES
from promop.operator.controller import Controller
from promop.operator.logs import fields
from promop.operator.options import Options
from promop.operator.web import WebServer

log = logging.getLogger("promop.operator")

EXIT_OK, EXIT_LOST_LEADERSHIP, EXIT_STOPPED_EARLY = 0, 1, 0
# SIGTERM to exit: Kubernetes' default grace period is 30 s; we stop within 10 s whatever the backlog.
STOP_SECONDS = 6.0


def build_controllers(client: KubeClient, options: Options, registry: CollectorRegistry,
                      **prometheus_kwargs: Any) -> list[Any]:
    """Every controller this process runs; the first is the Prometheus controller.

    A controller has start_informers(), synced(), readiness() -> (bool, str), start_workers(),
    stop_taking_work() and stop(timeout). Another component adds its own with one line here.
    """
    from promop.operator.alertmanager.startup import prepare  # CRDs, Alertmanager, kubelet endpoints

    metrics, extra = prepare(client, options, registry, prometheus_kwargs)
    controllers: list[Any] = [Controller(client, options, registry, metrics=metrics, **prometheus_kwargs), *extra]
    return controllers


def check_kubeconfig(kubeconfig: str | None, context: str | None, flag: str = "--kubeconfig") -> None:
    """Raise UserError when the configuration cannot be used at all (no network is touched): a
    kubeconfig path that does not exist or does not parse, an unknown context, no configuration.
    An apiserver that does not answer is not a user error: `connect` retries it."""
    import os

    from kubernetes.client import Configuration
    from kubernetes.config import ConfigException, load_incluster_config, load_kube_config

    if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST") \
            and not os.environ.get("KUBECONFIG"):
        try:
            load_incluster_config(client_configuration=Configuration())
        except ConfigException as exc:
            raise UserError(f"in-cluster configuration cannot be used: {exc}; run in a pod with a "
                            f"service account token, or pass {flag}") from None
        return
    where = f"{flag} {kubeconfig}" if kubeconfig else (
        f"KUBECONFIG={os.environ['KUBECONFIG']}" if os.environ.get("KUBECONFIG") else "~/.kube/config")
    paths = [kubeconfig] if kubeconfig else (
        os.environ["KUBECONFIG"].split(os.pathsep) if os.environ.get("KUBECONFIG")
        else [os.path.expanduser("~/.kube/config")])
    for path in paths:
        if path and not os.path.exists(path):
            raise UserError(f"{where}: no such file; pass the path of a kubeconfig file "
                            f"(or run `promop demo` to try promop without a cluster)")
        if path and os.path.isdir(path):
            raise UserError(f"{where}: is a directory; pass the path of a kubeconfig file")
        if path:
            _check_yaml(path, where)
    try:
        load_kube_config(config_file=kubeconfig, context=context, client_configuration=Configuration(),
                         persist_config=False)
    except ConfigException as exc:
        if context and "context" in str(exc).lower():
            raise UserError(f"--context {context}: not in {where} ({exc}); "
                            "`kubectl config get-contexts` lists the contexts") from None
        raise UserError(f"{where}: not a usable kubeconfig ({exc}); pass a kubeconfig with clusters, "
                        "users and contexts, such as the one your cluster's installer wrote") from None
    except Exception as exc:  # noqa: BLE001 - YAML syntax errors, wrong types: the file is broken
        raise UserError(f"{where}: cannot be read as a kubeconfig ({type(exc).__name__}: {exc}); "
                        "check the file's YAML, or pass another with --kubeconfig") from None


def _check_yaml(path: str, where: str) -> None:
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except OSError as exc:
        raise UserError(f"{where}: cannot be read ({exc.strerror}); check its permissions") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(f"{where}: is not valid YAML ({exc}); fix the file or pass another kubeconfig") from None
    if not isinstance(doc, dict):
        raise UserError(f"{where}: is not a kubeconfig (expected a YAML mapping with clusters, users and "
                        "contexts); pass the kubeconfig your cluster's installer wrote")


def connect(options: Options, stop: threading.Event, *, base_delay: float = 1.0, max_delay: float = 30.0,
            client_factory: Callable[[], KubeClient] | None = None, registry: Any = None) -> KubeClient | None:
    """A client that has answered one request; retries with backoff (logging each try) until `stop`."""
    delay = base_delay
    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            client = client_factory() if client_factory else KubeClient.from_config(
                options.kubeconfig, options.context, registry=registry, qps=options.kube_api_qps,
                burst=options.kube_api_burst, component="operator")
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
        self.controller: Controller | None = None  # the Prometheus controller (controllers[0])
        self.controllers: list[Any] = []
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
        if not self.controllers:
            return False, "not connected to the apiserver yet"
        for controller in self.controllers:
            ok, why = controller.readiness()
            if not ok:
                return ok, why
        return True, ""

    def _synced(self, stop: threading.Event) -> bool:
        """Wait up to 1 s for every controller's caches (False when not all synced yet, or stopped)."""
        import time

        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if all(c.synced() for c in self.controllers):
                return True
            if stop.wait(0.05):
                return False
        return all(c.synced() for c in self.controllers)

    def _stop_controllers(self, timeout: float = STOP_SECONDS) -> None:
        """Stop them all at once, within `timeout` in all."""
        threads = [threading.Thread(target=c.stop, args=(timeout,), daemon=True) for c in self.controllers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 0.5)

    def start_web(self) -> None:
        """Serve /metrics, /healthz and /readyz (once); UserError when the address cannot be used."""
        if not self._want_web or self.web is not None:
            return
        host, port = self.options.listen_host_port()
        try:
            self.web = WebServer(host, port, self.registry, self.readiness, self.health).start()
        except OSError as exc:
            raise UserError(f"--web.listen-address {self.options.listen_address}: cannot listen "
                            f"({exc.strerror or exc}); pass a free address, e.g. 127.0.0.1:0 for any port") from None
        log.info("serving /metrics /healthz /readyz", **fields(address=f"{host}:{self.web.port}"))

    def run(self, stop: threading.Event) -> int:
        self.start_web()
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
        self.controllers = build_controllers(self.client, self.options, self.registry, **self._controller_kwargs)
        self.controller = self.controllers[0]
        for controller in self.controllers:
            controller.start_informers()
        waited = 0
        while not self._synced(stop):
            if stop.is_set():
                self._stop_controllers()
                return EXIT_STOPPED_EARLY
            if waited % 10 == 0:  # e.g. the CRDs are not installed: say so every 10 s, not every second
                log.warning("waiting for caches to sync", **fields(waited_s=waited + 1,
                                                                   reason=self.readiness()[1]))
            waited += 1
        self.synced.set()
        # Once (`promop run` and `promop demo` only: a process of its own): what the caches hold now
        # lives as long as the process. Out of the cyclic collector's
        # sight, a full collection no longer walks thousands of cached objects (about 1 s with 5,000
        # ServiceMonitors, landing in whichever sync allocates at that moment); objects still free
        # by reference count as usual. Public API (gc.freeze), the same on every Python we support.
        if self.options.gc_freeze:
            gc.freeze()
        log.info("caches synced", **fields(frozen_objects=gc.get_freeze_count()))
        elector_thread = None
        if self.options.leader_elect:
            elector_thread = self._start_elector(stop)
        else:
            self.leading.set()
            for controller in self.controllers:
                controller.start_workers()
        while not stop.is_set() and not self.lost_leadership.is_set():
            stop.wait(0.2)
        lost = self.lost_leadership.is_set() and not stop.is_set()
        log.info("shutting down: queued work is dropped, in-flight syncs get a few seconds",
                 **fields(lost_leadership=lost, within_s=STOP_SECONDS))
        import time

        began = time.monotonic()
        self._stop_controllers()
        if self.elector is not None:
            self.elector.stop()  # releases the lease (when we hold it)
            if elector_thread is not None:  # what is left of the 10 s, and at least 1 s
                elector_thread.join(max(1.0, STOP_SECONDS + 1.5 - (time.monotonic() - began)))
        log.info("stopped")
        return EXIT_LOST_LEADERSHIP if lost else EXIT_OK

    def _start_elector(self, stop: threading.Event) -> threading.Thread:
        from promop.kube.leader_election import LeaderElectionConfig, LeaderElector

        timings = {"lease_duration": self.options.lease_duration, "renew_deadline": self.options.renew_deadline,
                   "retry_period": self.options.retry_period, **self._leader_kwargs}
        cfg = LeaderElectionConfig(self.options.lease_name, self.options.lease_namespace, self.options.identity,
                                   **timings)
        controllers = list(self.controllers)

        def started(_stop_event: Any) -> None:
            log.info("became leader", **fields(identity=self.options.identity, lease=self.options.lease_name))
            self.leading.set()
            for controller in controllers:
                controller.start_workers()

        def stopped() -> None:
            for controller in controllers:
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
