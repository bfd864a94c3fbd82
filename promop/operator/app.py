"""The operator process: connect (with retries), serve HTTP, lead (optionally), run the controllers.

Used by `promop run`, `promop demo` and the in-process tests. The lifecycle is
the host's (promop.host.process): `Operator.run` blocks until `stop` is set
(SIGTERM) and returns 0 after a clean shutdown, 1 when leadership was lost.
Here: which controllers the operator runs, and what it does once synced.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.host.connect import client_factory
from promop.host.connect import connect as connect_with_backoff
from promop.host.logs import fields
from promop.host.process import EXIT_LOST_LEADERSHIP, EXIT_OK, EXIT_STOPPED_EARLY, ControllerProcess
from promop.kube.client import KubeClient
from promop.kube.shared_informers import SharedInformers
from promop.operator import first_syncs, gcfreeze
from promop.operator.controller import Controller
from promop.operator.options import Options

log = logging.getLogger("promop.operator")

__all__ = ["EXIT_LOST_LEADERSHIP", "EXIT_OK", "EXIT_STOPPED_EARLY", "Operator", "build_controllers", "connect"]

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
    # one informer per distinct watch: the Prometheus, ThanosRuler and PrometheusAgent controllers
    # watch the same monitors, rules and Namespaces (one LIST each, one copy of each object)
    shared = SharedInformers(client)
    controllers: list[Any] = [Controller(client, options, registry, metrics=metrics, shared=shared,
                                         **prometheus_kwargs), *extra]
    from promop.operator.thanos.controller import start_if_served as start_thanos_ruler  # ThanosRuler

    informer_kwargs = prometheus_kwargs.get("informer_kwargs")
    thanos = start_thanos_ruler(client, options, registry, metrics, informer_kwargs, shared=shared)
    controllers += [thanos] if thanos is not None else []

    from promop.operator.agent.controller import start_if_served as start_agents  # PrometheusAgent (hook)

    agents = start_agents(client, options, registry, informer_kwargs=informer_kwargs, shared=shared)
    if agents is not None:
        controllers.append(agents)
    return controllers


def connect(options: Options, stop: threading.Event, *, base_delay: float = 1.0, max_delay: float = 30.0,
            factory: Callable[[], KubeClient] | None = None, registry: Any = None) -> KubeClient | None:
    """A client that has answered one request, as the operator builds it (see promop.host.connect)."""
    factory = factory or client_factory(options.kubeconfig, options.context, registry=registry,
                                                qps=options.kube_api_qps, burst=options.kube_api_burst,
                                                component="operator")
    return connect_with_backoff(factory, stop, base_delay=base_delay, max_delay=max_delay, logger=log)


class Operator(ControllerProcess):
    """One operator replica. `client` may be given (tests); otherwise built from options."""

    component = "operator"
    logger = log
    stop_seconds = STOP_SECONDS

    def __init__(self, options: Options, *, client: KubeClient | None = None,
                 registry: CollectorRegistry | None = None, web: bool = True,
                 controller_kwargs: dict | None = None, leader_kwargs: dict | None = None) -> None:
        super().__init__(options, client=client, registry=registry, web=web, leader_kwargs=leader_kwargs)
        self.controller: Controller | None = None  # the Prometheus controller (controllers[0])
        self._controller_kwargs = controller_kwargs or {}
        self.render_pool: Any = None

    def make_client(self) -> KubeClient:
        return client_factory(self.options.kubeconfig, self.options.context, registry=self.registry,
                              qps=self.options.kube_api_qps, burst=self.options.kube_api_burst,
                              component="operator")()

    def build_controllers(self, client: KubeClient) -> list[Any]:
        # the first render's one-time loads (CRD schemas...) while the informers list (promop.render.warm)
        threading.Thread(target=_warm_render, name="operator-render-warm-up", daemon=True).start()
        kwargs = dict(self._controller_kwargs)
        if self.options.render_process and "render_pool" not in kwargs:
            from promop.operator.render_pool import RenderPool

            # started once the caches have synced (after_sync): spawned earlier, its start-up competed
            # with the LISTs for the CPU and cost as much as it saved (docs/benchmarks.md)
            self.render_pool = kwargs["render_pool"] = RenderPool()
        controllers = build_controllers(client, self.options, self.registry, **kwargs)
        self.controller = controllers[0]
        reporters = [c.reporter for c in controllers if hasattr(getattr(c, "reporter", None), "hold")]
        if reporters:  # feedback waits for the first syncs (Reporter.hold says why)
            for reporter in reporters:
                reporter.hold()
            threading.Thread(target=self._release_feedback, args=(controllers, reporters),
                             name="operator-feedback-release", daemon=True).start()
        return controllers

    def _release_feedback(self, controllers: list[Any], reporters: list[Any]) -> None:
        queues = [c.queue for c in controllers if getattr(c, "queue", None) is not None]
        why = first_syncs.wait_first_syncs(queues, self.leading, lambda: any(q.shutting_down() for q in queues))
        for reporter in reporters:
            reporter.release()
        if why != "stopped":
            log.info("feedback released", **fields(after=why))

    def after_sync(self) -> None:
        # Once (`promop run` and `promop demo` only: a process of its own): what the caches hold now
        # lives as long as the process. Out of the cyclic collector's sight, a full collection no
        # longer walks thousands of cached objects (about 1 s with 5,000 ServiceMonitors, landing in
        # whichever sync allocates at that moment); objects still free by reference count as usual.
        # Public API (gc.freeze), the same on every Python we support.
        if self.options.gc_freeze:
            gc.freeze()
            # ... and, once, what the first syncs build (promop.operator.gcfreeze says why)
            threading.Thread(target=self._freeze_first_syncs, name="operator-gc-freeze", daemon=True).start()
        if self.render_pool is not None and self.render_pool.start():
            threading.Thread(target=self._close_render_pool, name="operator-render-pool-close", daemon=True).start()
        log.info("caches synced", **fields(frozen_objects=gc.get_freeze_count()))

    def _freeze_first_syncs(self) -> None:
        queues = [c.queue for c in self.controllers if getattr(c, "queue", None) is not None]
        if gcfreeze.freeze_after_first_syncs(queues, self.leading,
                                             lambda: any(q.shutting_down() for q in queues)):
            log.info("first syncs done; what they built is frozen", **fields(frozen_objects=gc.get_freeze_count()))


    def _close_render_pool(self, standby_for: float = 60.0) -> None:
        """The render worker serves the first syncs only: stopped once they are done, or after
        `standby_for` seconds of standing by (a standby's first syncs, after a failover, render here)."""
        queues = [c.queue for c in self.controllers if getattr(c, "queue", None) is not None]
        if self.leading.wait(standby_for):
            while not any(q.shutting_down() for q in queues) and not gcfreeze.queues_drained(queues):
                time.sleep(0.5)  # polling the queues' counts, as gcfreeze does: no event says "drained"
        self.render_pool.close()
        log.info("render worker stopped", **fields(batches=self.render_pool.batches))

    def stop_controllers(self, timeout: float | None = None) -> None:
        super().stop_controllers(timeout)
        if self.render_pool is not None:
            self.render_pool.close()


def _warm_render() -> None:
    from promop.render.warm import warm

    started = time.monotonic()
    try:
        warm()
    except Exception as exc:  # noqa: BLE001 - only an optimisation: the first sync then loads it all itself
        log.warning("render warm-up failed; the first sync will load what it needs itself",
                    **fields(error=str(exc)))
        return
    log.debug("render warmed up", **fields(ms=round((time.monotonic() - started) * 1000)))
