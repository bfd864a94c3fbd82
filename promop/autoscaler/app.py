"""The `promop autoscaler` process: the MemHpa controller on the controller host.

`Autoscaler.run(stop)` blocks until `stop` is set and returns 0, or 1 when
leadership was lost (the process must restart rather than run a second writer).
The lifecycle (web, connect, sync, leader election, shutdown) is the host's.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.autoscaler.controller import Controller
from promop.host.flags import HostOptions
from promop.host.logs import fields
from promop.host.process import ControllerProcess
from promop.kube.client import KubeClient

log = logging.getLogger("promop.autoscaler")


@dataclass(frozen=True)
class Options(HostOptions):
    lease_name: str = "promop-autoscaler"
    prometheus_url: str = "http://prometheus-operated.monitoring.svc:9090"
    prometheus_timeout: float = 10.0
    sync_period: float = 15.0
    workers: int = 2
    keda: str = "auto"                       # auto (on when the keda.sh CRDs are installed) | true | false
    keda_metrics_address: str = ""           # "" = no endpoint (the command's default is :9666)
    keda_loop_workers: int = 8
    kube_api_qps: float = 50.0               # the client's rate limit (KEDA: --kube-api-qps 20, --kube-api-burst 30)
    kube_api_burst: int = 100


class Autoscaler(ControllerProcess):
    component = "autoscaler"
    logger = log
    sync_hint = "waiting for caches to sync (is the MemHpa CRD installed?)"
    stop_seconds = 8.0

    def __init__(self, options: Options, *, client: KubeClient | None = None, prometheus: Any = None,
                 registry: CollectorRegistry | None = None, web: bool = True,
                 clock: Callable[[], float] = time.time, informer_kwargs: dict | None = None,
                 leader_kwargs: dict | None = None) -> None:
        super().__init__(options, client=client, registry=registry, web=web, leader_kwargs=leader_kwargs)
        self.prometheus = prometheus
        self.clock = clock
        self.controller: Controller | None = None
        self.keda: Any = None                # promop.autoscaler.keda.controller.KedaController when on
        self.keda_endpoint: Any = None
        self._informer_kwargs = informer_kwargs or {}

    def make_client(self) -> KubeClient:
        """The host's client with this process' rate limit (at 10,000 ScaledObjects the first reconcile
        is about four requests each: the limit sets how long it takes)."""
        from promop.host.connect import client_factory

        return client_factory(self.options.kubeconfig, self.options.context, registry=self.registry,
                              component=self.component, qps=self.options.kube_api_qps,
                              burst=self.options.kube_api_burst)()

    def start_keda_endpoint(self) -> None:
        """The ScaledObject metrics endpoint, once the controller is on (a busy port is a one-line error)."""
        if not self.options.keda_metrics_address or self.keda_endpoint is not None:
            return
        from promop.autoscaler.keda.metrics_api import MetricError, MetricsEndpoint
        from promop.errors import UserError
        from promop.host.flags import parse_listen_address

        def answer(namespace: str, name: str, metric: str) -> dict:
            if self.keda is None:
                raise MetricError(503, "the ScaledObject controller is not running here (keda.sh CRDs not "
                                       "installed, or not connected to the apiserver yet)")
            return self.keda.scaled_object_metric(namespace, name, metric)

        def detail(namespace: str, name: str) -> dict:
            if self.keda is None:
                raise MetricError(503, "the ScaledObject controller is not running here")
            return self.keda.last_good(namespace, name)

        host, port = parse_listen_address(self.options.keda_metrics_address)
        try:
            self.keda_endpoint = MetricsEndpoint(host, port, answer, detail).start()
        except OSError as exc:
            raise UserError(f"--keda-metrics-address {self.options.keda_metrics_address}: cannot listen "
                            f"({exc.strerror or exc}); pass a free address, e.g. :9666") from None
        log.info("serving ScaledObject metrics for the adapter",
                 **fields(address=f"{host}:{self.keda_endpoint.port}"))

    def run(self, stop: Any) -> int:
        try:
            return super().run(stop)
        finally:
            if self.keda_endpoint is not None:
                self.keda_endpoint.stop()

    def build_controllers(self, client: KubeClient) -> list[Any]:
        if self.prometheus is None:
            from promop.prom import PrometheusClient

            self.prometheus = PrometheusClient(self.options.prometheus_url, timeout=self.options.prometheus_timeout)
        self.controller = Controller(client, self.prometheus, sync_period=self.options.sync_period,
                                     workers=self.options.workers, registry=self.registry, clock=self.clock,
                                     informer_kwargs=self._informer_kwargs)
        controllers: list[Any] = [self.controller]
        keda = self._keda_wanted(client)
        if keda and not self._memhpa_served(client):
            log.info("MemHpa controller off: the MemHpa CRD is not installed (KEDA ScaledObjects only)")
            controllers = []
        if keda:
            from promop.autoscaler.keda.controller import KedaController

            self.keda = KedaController(client, registry=self.registry, workers=self.options.workers,
                                       loop_workers=self.options.keda_loop_workers, clock=self.clock,
                                       informer_kwargs=self._informer_kwargs)
            controllers.append(self.keda)
            self.start_keda_endpoint()
        return controllers

    @staticmethod
    def _memhpa_served(client: KubeClient) -> bool:
        from promop.autoscaler.crd import MEMHPAS
        from promop.kube.errors import ApiError

        try:
            client.list(MEMHPAS, limit=1)
        except ApiError as exc:
            return exc.status != 404
        return True

    def _keda_wanted(self, client: KubeClient) -> bool:
        """--keda=auto: on when the ScaledObject CRD is served; say so either way."""
        if self.options.keda == "false":
            log.info("ScaledObject controller off (--keda=false)")
            return False
        if self.options.keda == "true":
            return True
        from promop.autoscaler.keda.resources import SCALEDOBJECTS
        from promop.kube.errors import ApiError

        try:
            client.list(SCALEDOBJECTS, limit=1)
        except ApiError as exc:
            if exc.status == 404:
                log.info("ScaledObject controller off: the keda.sh CRDs are not installed (kubectl apply -f "
                         "crds/keda.sh_scaledobjects.yaml and the other keda.sh CRDs, then restart; or pass "
                         "--keda=true to wait for them)")
                return False
            log.warning("ScaledObject controller: cannot tell whether the keda.sh CRDs are installed; starting it",
                        **fields(error=str(exc)))
        log.info("ScaledObject controller on (keda.sh/v1alpha1)")
        return True
