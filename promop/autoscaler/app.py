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
        self._informer_kwargs = informer_kwargs or {}

    def build_controllers(self, client: KubeClient) -> list[Any]:
        if self.prometheus is None:
            from promop.prom import PrometheusClient

            self.prometheus = PrometheusClient(self.options.prometheus_url, timeout=self.options.prometheus_timeout)
        self.controller = Controller(client, self.prometheus, sync_period=self.options.sync_period,
                                     workers=self.options.workers, registry=self.registry, clock=self.clock,
                                     informer_kwargs=self._informer_kwargs)
        return [self.controller]
