"""The MemHpa controller: informers -> one rate-limited queue -> workers -> `Reconciler.sync`.

Every MemHpa is reconciled on change (its spec, its target's pods or size) and
again `sync_period` seconds after each pass, as the HPA controller requeues
each key. A failed pass is retried with backoff; a deleted MemHpa's memory is
dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from prometheus_client import CollectorRegistry, Counter, Histogram

from promop.autoscaler.crd import MEMHPAS
from promop.autoscaler.reconcile import LABEL_INDEX, CACHED_KINDS, Conflict, Reconciler, Retry, label_index
from promop.kube.informer import Informer
from promop.host.workers import QueueController, keys_from
from promop.kube.resources import PODS
from promop.kube.store import NAMESPACE_INDEX, Tombstone, object_key
from promop.kube.workqueue import RateLimitingQueue
from promop.host.logs import fields

log = logging.getLogger("promop.autoscaler.controller")


def _obj(obj: Any) -> dict:
    return obj.obj if isinstance(obj, Tombstone) else obj


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.syncs = Counter("promop_autoscaler_syncs_total", "MemHpa reconcile passes by result", ["result"],
                             registry=registry)
        self.rescales = Counter("promop_autoscaler_rescales_total", "Successful rescales by direction",
                                ["direction"], registry=registry)
        self.duration = Histogram("promop_autoscaler_sync_duration_seconds", "Time of one MemHpa pass",
                                  registry=registry)


class Controller(QueueController):
    def __init__(self, client: Any, prometheus: Any, *, sync_period: float = 15.0, workers: int = 2,
                 registry: CollectorRegistry | None = None, clock: Callable[[], float] = time.time,
                 informer_kwargs: dict | None = None) -> None:
        self.client = client
        self.sync_period = sync_period
        self.workers = workers
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = Metrics(self.registry)
        self.queue = RateLimitingQueue(name="memhpa", registry=self.registry)
        kw = {"registry": self.registry, **(informer_kwargs or {})}
        self.memhpas = Informer(client, MEMHPAS, **kw)
        self.pods = Informer(client, PODS, indexers={LABEL_INDEX: label_index}, **kw)
        self.workload_informers = {kind: Informer(client, res, **kw) for kind, res in CACHED_KINDS.items()}
        self.informers = [self.memhpas, self.pods, *self.workload_informers.values()]
        self.reconciler = Reconciler(client, prometheus, self.memhpas.store, self.pods.store,
                                     {k: i.store for k, i in self.workload_informers.items()}, clock=clock,
                                     metrics=self.metrics)
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._register()

    # -- events -------------------------------------------------------------------------------
    def _register(self) -> None:
        def memhpa_add(obj: dict, _initial: bool = False) -> None:
            self.queue.add(object_key(obj))

        def memhpa_update(old: dict, new: dict) -> None:
            # our own status writes do not change the generation: no pass for them
            if (old.get("metadata") or {}).get("generation") != (new.get("metadata") or {}).get("generation"):
                self.queue.add(object_key(new))

        def memhpa_delete(obj: Any) -> None:
            key = object_key(_obj(obj))
            self.reconciler.forget(key)

        self.memhpas.add_handler(memhpa_add, memhpa_update, memhpa_delete)

        def pod_changed(obj: Any, *_rest: Any) -> None:
            self._enqueue_namespace(_obj(obj))

        def pod_update(old: dict, new: dict) -> None:
            if _pod_state(old) != _pod_state(new):
                self._enqueue_namespace(new)

        self.pods.add_handler(pod_changed, pod_update, pod_changed)

        def workload_update(old: dict, new: dict) -> None:
            if (old.get("spec") or {}).get("replicas") != (new.get("spec") or {}).get("replicas"):
                self._enqueue_targets(new)

        def workload_delete(obj: Any) -> None:
            self._enqueue_targets(_obj(obj))

        for inf in self.workload_informers.values():
            inf.add_handler(None, workload_update, workload_delete)

    def _enqueue_namespace(self, obj: dict) -> None:
        ns = (obj.get("metadata") or {}).get("namespace", "")
        for key in self.memhpas.store.index_keys(NAMESPACE_INDEX, ns):
            self.queue.add(key)

    def _enqueue_targets(self, obj: dict) -> None:
        meta = obj.get("metadata") or {}
        for key in self.memhpas.store.index_keys(NAMESPACE_INDEX, meta.get("namespace", "")):
            m = self.memhpas.store.get(key)
            if m and ((m.get("spec") or {}).get("scaleTargetRef") or {}).get("name") == meta.get("name"):
                self.queue.add(key)

    # -- lifecycle ----------------------------------------------------------------------------
    def start_workers(self) -> None:
        if self._threads:
            return
        for i in range(self.workers):
            t = threading.Thread(target=self._worker, name=f"memhpa-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    # -- work ---------------------------------------------------------------------------------
    def process(self, key: str) -> None:
        """One pass for `key`, then its requeue: after `sync_period` on success, with backoff on failure."""
        started = time.monotonic()
        try:
            self.reconciler.sync(key)
        except Conflict as exc:
            self.metrics.syncs.labels("conflict").inc()
            log.debug("status conflict; retrying", **fields(key=key, error=str(exc)))
            self.queue.add_rate_limited(key)
            return
        except Retry as exc:
            self.metrics.syncs.labels("retry").inc()
            log.warning("pass failed; retrying with backoff", **fields(key=key, error=str(exc)))
            self.queue.add_rate_limited(key)
            return
        except Exception as exc:  # noqa: BLE001 - one bad MemHpa never stops the others
            self.metrics.syncs.labels("error").inc()
            log.exception("pass failed; retrying with backoff", **fields(key=key, error=str(exc)))
            self.queue.add_rate_limited(key)
            return
        finally:
            self.metrics.duration.observe(time.monotonic() - started)
        self.metrics.syncs.labels("ok").inc()
        self.queue.forget(key)
        if key in self.memhpas.store:
            self.queue.add_after(key, self.sync_period)

    def _worker(self) -> None:
        for key in keys_from(self.queue):
            try:
                if not self._stopping.is_set():
                    self.process(key)
            finally:
                self.queue.done(key)


def _pod_state(pod: dict) -> tuple:
    status = pod.get("status") or {}
    ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    return (status.get("phase"), ready, bool((pod.get("metadata") or {}).get("deletionTimestamp")),
            tuple(sorted(((pod.get("metadata") or {}).get("labels") or {}).items())))
