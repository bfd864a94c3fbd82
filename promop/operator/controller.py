"""The controller: informers -> event mapping -> one rate-limited queue -> N workers -> Syncer.

Thin on purpose: handlers only turn events into Prometheus keys (mapping.py);
workers only call `Syncer.sync` (or `Syncer.sync_status` when only a StatefulSet's
status changed, upstream's separate status path) and requeue with backoff on error. The queue
guarantees one key is never synced by two workers at once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.informer import Informer
from promop.kube.informer_group import InformerGroup
from promop.kube.shared_informers import SharedInformers
from promop.kube.resources import PROBES
from promop.kube.resources import (CONFIGMAPS, PODMONITORS, PROMETHEUSES, PROMETHEUSRULES, SECRETS,
                                   SERVICEMONITORS, STATEFULSETS)
from promop.kube.resources import SCRAPECONFIGS
from promop.kube.store import Tombstone
from promop.kube.workqueue import RateLimitingQueue
from promop.operator import mapping, ownership, repair, scope
from promop.host.logs import fields
from promop.host.workers import keys_from
from promop.operator.metrics import OperatorMetrics
from promop.operator.options import Options
from promop.operator.apply import RetryLater
from promop.operator.sync import Stores, Syncer

log = logging.getLogger("promop.operator.controller")


# what a dequeued key needs (Controller._work_for)
SYNC, STATUS, SKIP = "sync", "status", "skip"
# how long a worker waits for a write in flight before judging whether an event is its echo: a
# write answers within the client's request timeout; past this the event counts as a real change
ECHO_SETTLE_TIMEOUT = 10.0

# Only the StatefulSets we manage (upstream's selector).
STATEFULSET_SELECTOR = ("managed-by in (prometheus-operator),operator.prometheus.io/shard,"
                        "operator.prometheus.io/name,operator.prometheus.io/mode in (server)")


def _obj(obj: Any) -> dict:
    return obj.obj if isinstance(obj, Tombstone) else obj


def _describe(obj: Any) -> str:
    md = _obj(obj).get("metadata") or {}
    return f"{md.get('namespace')}/{md.get('name')}" if md.get("namespace") else str(md.get("name"))


class Controller(InformerGroup):
    """Owns the informers, the queue and the workers for Prometheus objects."""

    repair_recheck = 60.0  # seconds: a rollout still unfinished is looked at again (--repair-policy-for-statefulsets)

    def __init__(self, client: KubeClient, options: Options, registry: CollectorRegistry | None = None,
                 metrics: OperatorMetrics | None = None, render: Callable | None = None,
                 references: Callable | None = None, informer_kwargs: dict | None = None,
                 shared: SharedInformers | None = None, render_pool: Any = None) -> None:
        if render is None or references is None:
            from promop.render import references as default_references
            from promop.render import render as default_render

            render = render or default_render
            references = references or default_references
        self.client = client
        self.options = options
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = metrics or OperatorMetrics(self.registry)
        self.queue = RateLimitingQueue(name="prometheus", registry=self.registry)
        kw = {"resync_period": 0, "registry": self.registry, **(informer_kwargs or {})}
        # --prometheus-instance-namespaces: where Prometheus objects and what we create for them are watched
        # (the allow-list wins over --namespaces/--deny-namespaces); monitors keep following --namespaces
        informer = scope.informer_factory(client, options, options.prometheus_instance_namespaces, kw, shared)

        self.prometheuses = informer(PROMETHEUSES, True, resync_period=options.resync_period,
                                     label_selector=options.prometheus_instance_selector or None)
        self.servicemonitors = informer(SERVICEMONITORS)
        self.podmonitors = informer(PODMONITORS)
        self.rules = informer(PROMETHEUSRULES)
        # CRDs a cluster may not have installed yet (promop's older CRDs): left out, as upstream leaves out
        # ScrapeConfigs, rather than waiting for ever on an informer that cannot sync
        self.probes = informer(PROBES) if scope.crd_served(client, PROBES) else None
        self.scrapeconfigs = informer(SCRAPECONFIGS) if scope.crd_served(client, SCRAPECONFIGS) else None
        meta = not options.full_secret_informers
        # --watch-referenced-objects-in-all-namespaces: also where the monitors are (upstream's MergeAllowLists)
        referenced = (scope.informer_factory(client, options, scope.referenced_namespaces(options), kw, shared)
                      if options.watch_referenced_objects_in_all_namespaces else informer)
        self.secrets = referenced(SECRETS, True, metadata_only=meta, field_selector=options.secret_field_selector)
        self.configmaps = referenced(CONFIGMAPS, True, metadata_only=meta, field_selector=options.configmap_field_selector)
        self.statefulsets = informer(STATEFULSETS, True, label_selector=STATEFULSET_SELECTOR)
        self.namespaces = scope.namespaces_informer(client, kw, shared)
        self.informers = [self.prometheuses, self.servicemonitors, self.podmonitors, self.rules, self.secrets,
                          self.configmaps, self.statefulsets, self.namespaces]
        self.informers += [inf for inf in (self.probes, self.scrapeconfigs) if inf is not None]
        stores = Stores(self.prometheuses.store, self.servicemonitors.store, self.podmonitors.store,
                        self.rules.store, self.namespaces.store, self.statefulsets.store, self.secrets.store,
                        self.configmaps.store, probes=self.probes.store if self.probes is not None else None,
                        scrapeconfigs=self.scrapeconfigs.store if self.scrapeconfigs is not None else None)
        self.syncer = Syncer(client, stores, options.render_options(), self.metrics, render, references,
                             namespace_allowed=options.namespace_allowed, registry=self.registry,
                             render_pool=render_pool)
        self.syncer.reporter.workers = options.feedback_workers
        self.reporter = self.syncer.reporter
        self._workers: list[threading.Thread] = []
        # Updates of objects we write that may be the echo of our own write, per key: the write's
        # response may be recorded only after its watch event arrived. A key queued for such
        # events only is skipped at dequeue time if they all turn out to be our own writes.
        self._suspects: dict[str, list[tuple[str, dict]]] = {}
        self._real: set[str] = set()
        # keys queued (so far) only for StatefulSet status changes: a status refresh is enough
        self._status_only: set[str] = set()
        # key -> what queued it since it was last taken ("ServiceMonitor ns/name update", ...), for the sync's log line
        self._causes: dict[str, list[str]] = {}
        self._suspect_lock = threading.Lock()
        self._stopping = threading.Event()
        self._register_handlers()

    # ---- lifecycle ----------------------------------------------------------------------

    def start_workers(self) -> None:
        """Start processing the queue (called at once, or when this replica becomes leader)."""
        if self._workers:
            return
        self.metrics.set_ready(True)
        self.reporter.start()
        for i in range(self.options.workers):
            t = threading.Thread(target=self._worker, name=f"promop-worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)
        log.info("workers started", **fields(workers=self.options.workers))

    def stop_taking_work(self) -> None:
        """Workers finish the sync they are in and take no more (leadership lost)."""
        self._stopping.set()
        self.reporter.stop_taking_work()
        self.metrics.set_ready(False)

    def stop(self, timeout: float = 8.0) -> None:
        """Stop within `timeout` whatever the backlog: queued syncs and feedback are dropped (the
        next leader recomputes them), in-flight syncs get what is left of `timeout` to finish, then
        the informers stop (all at once)."""
        import time

        deadline = time.monotonic() + timeout
        self._stopping.set()
        self.metrics.set_ready(False)
        self.reporter.stop(timeout=max(0.0, min(2.0, deadline - time.monotonic())))
        self.queue.shutdown()
        for t in self._workers:
            t.join(max(0.0, deadline - time.monotonic()))
        stoppers = [threading.Thread(target=inf.stop, args=(max(0.1, deadline - time.monotonic()),), daemon=True)
                    for inf in self.informers]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join(max(0.0, deadline - time.monotonic()))

    def enqueue_all(self) -> None:
        self._enqueue(self.prometheuses.store.keys(), "Resync", "all")  # _enqueue keeps only ours

    def _retry(self, key: str) -> None:
        """Requeue after a failure: a real reason, never skipped as an echo."""
        with self._suspect_lock:
            self._real.add(key)
        self.queue.add_rate_limited(key)

    # ---- workers ------------------------------------------------------------------------

    def _worker(self) -> None:
        q = self.queue
        for key in keys_from(q):
            if self._stopping.is_set():
                q.done(key)  # stop taking work: the backlog is dropped, in-flight syncs finish
                continue
            work, cause = self._work_for(key)
            if not ownership.key_managed(self.prometheuses.store, key, self.options.controller_id):
                work = SKIP  # another operator's (--controller-id): neither reconciled nor its status written
            if work == SKIP:
                q.forget(key)
                q.done(key)
                continue
            try:
                if work == STATUS:
                    self.syncer.sync_status(key)
                else:
                    self.syncer.sync(key, cause)
            except RetryLater as exc:
                log.debug("sync deferred; retrying", **fields(key=key, reason=str(exc)))
                self._retry(key)
            except Exception as exc:  # noqa: BLE001 - every failure is retried with backoff
                log.warning("sync failed; retrying with backoff",
                            **fields(key=key, error=str(exc), retries=q.num_requeues(key)))
                self._retry(key)
            else:
                q.forget(key)
                self._repair(key)
            finally:
                q.done(key)

    def _repair(self, key: str) -> None:
        """--repair-policy-for-statefulsets: after a sync, unstick its StatefulSets' rollouts (repair.py)."""
        prom = self.prometheuses.store.get(key)
        if self.options.repair_policy == "none" or prom is None:
            return
        mine = [s for s in self.statefulsets.store.list() if mapping.for_statefulset(s) == [key]]
        repair.repair(self.client, mine, self.options.repair_policy,
                      lambda note: self.reporter.event(prom, "Prometheus", repair.REASON, note))
        if any(repair.rolling(s) for s in mine):  # a stuck pod changes nothing: look again later
            self.queue.add_after(key, self.repair_recheck)

    # ---- event handlers -------------------------------------------------------------------

    def _work_for(self, key: str) -> tuple[str, str]:
        """What the events queued since `key` was last taken ask for: SKIP when they were all the
        echoes of our own writes, STATUS when the rest were StatefulSet status changes, else SYNC;
        and a short description of those events."""
        with self._suspect_lock:
            real = key in self._real
            self._real.discard(key)
            status_only = key in self._status_only
            self._status_only.discard(key)
            suspects = self._suspects.pop(key, [])
            causes = self._causes.pop(key, [])
        cause = ", ".join(causes[:3]) + (f" and {len(causes) - 3} more" if len(causes) > 3 else "")
        if real or not all(self._own_write(k, o) for k, o in suspects):
            return SYNC, cause
        if status_only:
            return STATUS, cause
        return (SKIP if suspects else SYNC), cause

    def _own_write(self, kind: str, obj: dict) -> bool:
        """Is the suspect event `obj` our own write's echo? A write of it still in flight (another
        key's sync: a Secret maps to every Prometheus of its namespace) is waited for first, since
        its echo can arrive before its answer is recorded."""
        if self.syncer.is_own_write(kind, obj):
            return True
        return self.syncer.settle_write(kind, obj, ECHO_SETTLE_TIMEOUT) and self.syncer.is_own_write(kind, obj)

    def _enqueue(self, keys: list[str], triggered_by: str, action: str, maybe_echo: dict | None = None,
                 status_only: bool = False, obj: Any = None) -> None:
        """Queue `keys`. `maybe_echo`: the updated object, if this may be our own write coming back;
        `status_only`: only a StatefulSet's status changed; `obj`: the object of the event."""
        keys = ownership.managed_keys(keys, self.prometheuses.store, self.options.controller_id)
        if not keys:
            return
        cause = f"{triggered_by} {_describe(obj)} {action}" if obj is not None else f"{triggered_by} {action}"
        with self._suspect_lock:
            for key in keys:
                causes = self._causes.setdefault(key, [])
                if len(causes) < 20 and cause not in causes:
                    causes.append(cause)
                if status_only:
                    self._status_only.add(key)
                if maybe_echo is not None:
                    self._suspects.setdefault(key, []).append((triggered_by, maybe_echo))
                elif not status_only:
                    self._real.add(key)
        self.metrics.trigger(triggered_by, action)
        for key in keys:
            self.queue.add(key)

    def _enqueue_gone(self, obj: dict, kind: str) -> None:
        """`obj` is bound to a Prometheus we do not know (deleted while we were down): queue its key,
        whose sync then finds it gone and removes its bindings. Prometheus objects in namespaces we
        do not manage are another operator's business."""
        gone = [k for k in mapping.bound_prometheuses(obj)
                if self.options.prometheus_namespace_allowed(k.partition("/")[0])
                and self.prometheuses.store.get(k) is None]
        self._enqueue(gone, kind, "add")

    def _proms(self) -> list[dict]:
        return [p for p in self.prometheuses.store.list() if ownership.manages(p, self.options.controller_id)]

    def _ns_labels(self, namespace: str) -> dict | None:
        ns = self.namespaces.store.get(namespace)
        return ((ns or {}).get("metadata") or {}).get("labels") or {}

    def _handle(self, inf: Informer, kind: str, keys: Callable[..., list[str]],
                update_matters: Callable[[dict, dict], bool], on_initial: bool = False,
                we_write: bool = False, status_only: Callable[[dict, dict], bool] | None = None,
                update_keys: Callable[[dict, dict], list[str]] | None = None) -> None:
        """Route `inf`'s events through `keys` into the queue; updates only when `update_matters`.

        Objects of the initial LIST are skipped unless `on_initial` (the initial Prometheus
        adds already enqueue every key). For kinds `we_write`, an update that is the echo of
        our own latest write does not cause a sync. An update for which `status_only` holds
        asks only for a status refresh. `update_keys(old, new)`, when given, maps updates instead of
        `keys(new)`."""
        e = self._enqueue
        if update_keys is None:
            update_keys = lambda old, new: keys(new)  # noqa: E731

        def on_update(old: dict, new: dict) -> None:
            if not update_matters(old, new):
                return
            if we_write and self.syncer.is_own_write(kind, new):
                return
            if status_only is not None and status_only(old, new):
                e(update_keys(old, new), kind, "update", status_only=True, obj=new)
                return
            e(update_keys(old, new), kind, "update", maybe_echo=new if we_write else None, obj=new)

        inf.add_handler(
            # an add after the initial LIST may be the echo of our own create; the status, computed
            # from the cache, is refreshed for it all the same (a StatefulSet it did not see yet)
            on_add=lambda o, initial: e(keys(o), kind, "add", maybe_echo=o if we_write and not initial else None,
                                        status_only=status_only is not None and we_write and not initial,
                                        obj=o) if on_initial or not initial else None,
            on_update=on_update,
            on_delete=lambda o: e(keys(o), kind, "delete", obj=o))

    def _register_handlers(self) -> None:
        def prom_key(obj: Any) -> list[str]:
            if not ownership.manages(_obj(obj), self.options.controller_id):
                return []  # another operator's, also when it is deleted
            return [obj.key] if isinstance(obj, Tombstone) else [mapping.key_of(obj)]

        def prom_update_matters(old: dict, new: dict) -> bool:
            resync = not mapping.resource_version_changed(old, new)
            return resync or mapping.prometheus_update_matters(old, new)

        self._handle(self.prometheuses, "Prometheus", prom_key, prom_update_matters, on_initial=True)


        for kind, inf in (("ServiceMonitor", self.servicemonitors), ("PodMonitor", self.podmonitors),
                          ("PrometheusRule", self.rules), ("Probe", self.probes), ("ScrapeConfig", self.scrapeconfigs)):
            if inf is None:  # CRD not installed
                continue
            def monitor_keys(obj: Any, old: Any = None, kind: str = kind) -> list[str]:
                # the Prometheus objects that select this object, before or after (mapping.for_monitor)
                ns = (_obj(obj).get("metadata") or {}).get("namespace", "")
                return mapping.for_monitor(kind, ns, self._proms(), self._ns_labels, objects=(_obj(obj), old))
            self._handle(inf, kind, monitor_keys, mapping.monitor_update_matters,
                         update_keys=lambda old, new, keys=monitor_keys: keys(new, old))
            inf.add_handler(on_add=lambda o, initial, kind=kind: self._enqueue_gone(o, kind))

        for kind, inf in (("Secret", self.secrets), ("ConfigMap", self.configmaps)):
            def ref_keys(obj: Any, kind: str = kind) -> list[str]:
                md = _obj(obj).get("metadata") or {}
                return mapping.for_referenced(kind, md.get("namespace", ""), md.get("name", ""), self._proms(),
                                              self.syncer.references)
            self._handle(inf, kind, ref_keys, mapping.resource_version_changed, we_write=True)

        self._handle(self.statefulsets, "StatefulSet", lambda o: mapping.for_statefulset(_obj(o)),
                     mapping.resource_version_changed, on_initial=True, we_write=True,
                     status_only=mapping.statefulset_status_only)

        def ns_labels(obj: Any) -> dict | None:
            return (_obj(obj).get("metadata") or {}).get("labels") or {}

        def ns_name(obj: Any) -> str:
            return (_obj(obj).get("metadata") or {}).get("name", "")

        e = self._enqueue
        self.namespaces.add_handler(
            on_add=lambda o, initial: None if initial else e(
                mapping.for_namespace_change(None, ns_labels(o), ns_name(o), self._proms()), "Namespace", "add"),
            on_update=lambda old, new: e(
                mapping.for_namespace_change(ns_labels(old), ns_labels(new), ns_name(new), self._proms()),
                "Namespace", "update"),
            on_delete=lambda o: e(
                mapping.for_namespace_change(ns_labels(o), None, ns_name(o), self._proms()), "Namespace", "delete"))
