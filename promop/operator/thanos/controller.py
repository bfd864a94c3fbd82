"""The ThanosRuler controller: informers -> event mapping -> rate-limited queue -> workers -> sync.

Event mapping: a ThanosRuler event enqueues itself; a PrometheusRule add/delete, or an update of its
spec or labels, enqueues every ThanosRuler that may select it (same namespace, or a namespace
selector matching its namespace); a StatefulSet or rule ConfigMap change enqueues its owner; a
Namespace label change enqueues the ThanosRulers with a namespace selector.

Beside other operators as the Prometheus controller: only ThanosRulers `ownership.manages`
(--controller-id), informers scoped by `scope.informer_factory` with --thanos-ruler-instance-namespaces/
-selector, and `repair.repair` on the StatefulSets after each sync (--repair-policy-for-statefulsets).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from prometheus_client import CollectorRegistry

from promop.host.logs import fields
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, NotFound
from promop.kube.informer import Informer
from promop.kube.informer_group import InformerGroup
from promop.kube.resources import CONFIGMAPS, NAMESPACES, PROMETHEUSRULES, STATEFULSETS
from promop.kube.store import Tombstone
from promop.kube.workqueue import RateLimitingQueue
from promop.labelselector import SelectorError, parse_selector
from promop.operator import mapping, ownership, repair, scope
from promop.operator.apply import RetryLater
from promop.operator.metrics import OperatorMetrics
from promop.operator.thanos import CONTROLLER, THANOSRULERS
from promop.operator.thanos.sync import RulerSyncer, Stores

log = logging.getLogger("promop.operator.thanos")

OWNED_SELECTOR = "app.kubernetes.io/managed-by in (prometheus-operator),app.kubernetes.io/name in (thanos-ruler)"
RULE_CONFIGMAP_SELECTOR = "thanos-ruler-name"


def _md(obj: Any) -> dict:
    return (obj.obj if isinstance(obj, Tombstone) else obj).get("metadata") or {}


def _owner_keys(obj: Any) -> list[str]:
    """The ThanosRulers controlling a StatefulSet or rule ConfigMap (its ownerReferences)."""
    md = _md(obj)
    return [f"{md.get('namespace')}/{r['name']}" for r in md.get("ownerReferences") or []
            if r.get("kind") == "ThanosRuler" and r.get("controller")]


class ThanosRulerController(InformerGroup):
    """Owns the informers, queue and workers for ThanosRuler objects (same interface as Controller)."""

    def __init__(self, client: KubeClient, options: Any, registry: CollectorRegistry | None = None,
                 metrics: OperatorMetrics | None = None, informer_kwargs: dict | None = None) -> None:
        self.client = client
        self.options = options
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = metrics or OperatorMetrics(self.registry)
        self.queue = RateLimitingQueue(name=CONTROLLER, registry=self.registry)
        kw = {"resync_period": 0, "registry": self.registry, **(informer_kwargs or {})}
        # --thanos-ruler-instance-namespaces/-selector: where ThanosRulers and what we create for them are
        # watched (wins over --namespaces/--deny-namespaces); PrometheusRules keep following --namespaces
        informer = scope.informer_factory(client, options, options.thanos_ruler_instance_namespaces, kw)
        self.thanosrulers = informer(THANOSRULERS, True, resync_period=getattr(options, "resync_period", 0),
                                     label_selector=options.thanos_ruler_instance_selector or None)
        self.prometheusrules = informer(PROMETHEUSRULES)
        self.statefulsets = informer(STATEFULSETS, True, label_selector=OWNED_SELECTOR)
        self.configmaps = informer(CONFIGMAPS, True, metadata_only=True, label_selector=RULE_CONFIGMAP_SELECTOR)
        self.namespaces = Informer(client, NAMESPACES, **kw)
        self.informers = [self.thanosrulers, self.prometheusrules, self.statefulsets, self.configmaps, self.namespaces]
        self.syncer = RulerSyncer(
            client, Stores(self.thanosrulers.store, self.prometheusrules.store, self.namespaces.store,
                           self.statefulsets.store, self.configmaps.store),
            options.render_options(), self.metrics, namespace_allowed=options.namespace_allowed)
        self._workers: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._register_handlers()

    # ---- lifecycle (as Controller) --------------------------------------------------------

    def start_workers(self) -> None:
        if self._workers:
            return
        self.metrics.ready.labels(CONTROLLER).set(1)
        for i in range(max(1, getattr(self.options, "workers", 1))):
            t = threading.Thread(target=self._worker, name=f"promop-thanosruler-worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)

    def stop_taking_work(self) -> None:
        self._stopping.set()
        self.metrics.ready.labels(CONTROLLER).set(0)

    def stop(self, timeout: float = 30.0) -> None:
        self.stop_taking_work()
        drained = threading.Thread(target=self.queue.shutdown_with_drain, daemon=True)
        drained.start()
        drained.join(timeout)
        self.queue.shutdown()
        for t in self._workers:
            t.join(timeout)
        for inf in self.informers:
            inf.stop()

    repair_recheck = 60.0  # seconds: a rollout still unfinished is looked at again (--repair-policy-for-statefulsets)

    def idle(self) -> bool:
        done = all(k in self.syncer.last_report for k in self.thanosrulers.store.keys()
                   if ownership.key_managed(self.thanosrulers.store, k, self.options.controller_id))
        return (done and len(self.queue) == 0 and self.queue.processing() == 0 and self.queue.waiting() == 0
                and all(inf.pending() == 0 for inf in self.informers))

    def _worker(self) -> None:
        q = self.queue
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            if key is None:
                continue
            if self._stopping.is_set():
                q.done(key)
                continue
            if not ownership.key_managed(self.thanosrulers.store, key, self.options.controller_id):
                q.forget(key)  # another operator's (--controller-id): neither reconciled nor its status written
                q.done(key)
                continue
            try:
                self.syncer.sync(key)
            except RetryLater as exc:
                log.debug("sync deferred; retrying", **fields(key=key, reason=str(exc)))
                q.add_rate_limited(key)
            except Exception as exc:  # noqa: BLE001 - every failure is retried with backoff
                log.warning("thanosruler sync failed; retrying with backoff",
                            **fields(key=key, error=str(exc), retries=q.num_requeues(key)))
                q.add_rate_limited(key)
            else:
                q.forget(key)
                self._repair(key)
            finally:
                q.done(key)

    def _repair(self, key: str) -> None:
        """--repair-policy-for-statefulsets: after a sync, unstick the ThanosRuler's StatefulSets (repair.py)."""
        ruler = self.thanosrulers.store.get(key)
        if self.options.repair_policy == "none" or ruler is None:
            return
        mine = [s for s in self.statefulsets.store.list() if key in _owner_keys(s)]
        repair.repair(self.client, mine, self.options.repair_policy,
                      lambda note: self.syncer.tell({**ruler, "kind": "ThanosRuler"}, repair.REASON, note))
        if any(repair.rolling(s) for s in mine):  # a stuck pod changes nothing: look again later
            self.queue.add_after(key, self.repair_recheck)

    # ---- event mapping --------------------------------------------------------------------

    def _enqueue(self, keys: list[str], triggered_by: str, action: str) -> None:
        keys = ownership.managed_keys(keys, self.thanosrulers.store, self.options.controller_id)
        if not keys:
            return
        self.metrics.triggered.labels(CONTROLLER, triggered_by, action).inc()
        for key in keys:
            self.queue.add(key)

    def _ns_labels(self, namespace: str) -> dict:
        ns = self.namespaces.store.get(namespace)
        labels = dict(((ns or {}).get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels

    def _rulers(self) -> list[dict]:
        """The ThanosRulers this operator manages (--controller-id)."""
        return [r for r in self.thanosrulers.store.list() if ownership.manages(r, self.options.controller_id)]

    def for_namespace(self, namespace: str) -> list[str]:
        """ThanosRulers that may select PrometheusRules of `namespace`."""
        out = []
        for ruler in self._rulers():
            md = ruler.get("metadata") or {}
            ns_sel = (ruler.get("spec") or {}).get("ruleNamespaceSelector")
            if md.get("namespace") == namespace:
                out.append(mapping.key_of(ruler))
            elif ns_sel is not None:
                try:
                    if parse_selector(ns_sel).matches(self._ns_labels(namespace)):
                        out.append(mapping.key_of(ruler))
                except SelectorError:
                    continue
        return out

    def _register_handlers(self) -> None:
        e = self._enqueue

        def own_key(obj: Any) -> list[str]:
            if not ownership.manages(obj.obj if isinstance(obj, Tombstone) else obj, self.options.controller_id):
                return []  # another operator's, also when it is deleted
            return [obj.key] if isinstance(obj, Tombstone) else [mapping.key_of(obj)]

        def ruler_update(old: dict, new: dict) -> None:
            if not mapping.resource_version_changed(old, new) or mapping.prometheus_update_matters(old, new):
                e(own_key(new), "ThanosRuler", "update")

        self.thanosrulers.add_handler(on_add=lambda o, initial: e(own_key(o), "ThanosRuler", "add"),
                                      on_update=ruler_update,
                                      on_delete=lambda o: e(own_key(o), "ThanosRuler", "delete"))

        def rule_keys(obj: Any) -> list[str]:
            return self.for_namespace(_md(obj).get("namespace", ""))

        self.prometheusrules.add_handler(
            on_add=lambda o, initial: None if initial else e(rule_keys(o), "PrometheusRule", "add"),
            on_update=lambda old, new: e(rule_keys(new), "PrometheusRule", "update")
            if mapping.monitor_update_matters(old, new) else None,
            on_delete=lambda o: e(rule_keys(o), "PrometheusRule", "delete"))

        owner = _owner_keys
        for kind, inf in (("StatefulSet", self.statefulsets), ("ConfigMap", self.configmaps)):
            inf.add_handler(
                on_add=lambda o, initial, k=kind: None if initial else e(owner(o), k, "add"),
                on_update=lambda old, new, k=kind: e(owner(new), k, "update")
                if mapping.resource_version_changed(old, new) else None,
                on_delete=lambda o, k=kind: e(owner(o), k, "delete"))

        def ns_change(old: Any, new: Any) -> None:
            o = (_md(old).get("labels") if old is not None else None) or {}
            n = (_md(new).get("labels") if new is not None else None) or {}
            if o == n and old is not None and new is not None:
                return
            keys = [mapping.key_of(r) for r in self._rulers()
                    if (r.get("spec") or {}).get("ruleNamespaceSelector") is not None]
            e(keys, "Namespace", "update")

        self.namespaces.add_handler(on_add=lambda o, initial: None if initial else ns_change(None, o),
                                    on_update=ns_change, on_delete=lambda o: ns_change(o, None))


def start_if_served(client: KubeClient, options: Any, registry: CollectorRegistry, metrics: OperatorMetrics,
                    informer_kwargs: dict | None = None) -> ThanosRulerController | None:
    """The controller, or None (logged) when the ThanosRuler CRD is not installed, as upstream."""
    try:
        client.list(THANOSRULERS, limit=1)
    except NotFound:
        log.warning("the ThanosRuler CRD is not installed; the ThanosRuler controller is not started "
                    "(install crds/ or run with --manage-crds)")
        return None
    except ApiError as exc:
        log.warning("cannot check the ThanosRuler CRD; the ThanosRuler controller is not started",
                    **fields(error=str(exc)))
        return None
    return ThanosRulerController(client, options, registry, metrics, informer_kwargs=informer_kwargs)
