"""The Alertmanager controller: informers -> event mapping -> rate-limited queue -> workers -> sync.

Event mapping (reference §9): an Alertmanager event enqueues itself; an
AlertmanagerConfig add/delete, or an update of its spec or labels, enqueues
every Alertmanager that may select it (same namespace, or a namespace selector
matching its namespace); a Secret or ConfigMap change enqueues the
Alertmanagers whose last sync read it, or that live in its namespace (the user
config Secret), never for the objects we write ourselves; a StatefulSet change
enqueues its owner (status); a Namespace label change enqueues the
Alertmanagers with a namespace selector.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, NotFound
from promop.kube.informer import Informer
from promop.kube.informer_group import InformerGroup
from promop.kube.resources import CONFIGMAPS, NAMESPACES, SECRETS, STATEFULSETS, Resource
from promop.labelselector import SelectorError, parse_selector
from promop.kube.store import Tombstone
from promop.kube.workqueue import RateLimitingQueue
from promop.operator import mapping, ownership, repair
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS, CONTROLLER
from promop.operator.alertmanager.sync import AlertmanagerSyncer, Stores
from promop.operator.apply import RetryLater
from promop.host.logs import fields
from promop.operator.metrics import OperatorMetrics
from promop.render.alertmanager.model import AMRenderOptions

log = logging.getLogger("promop.operator.alertmanager")

STATEFULSET_SELECTOR = "app.kubernetes.io/managed-by in (prometheus-operator),app.kubernetes.io/name in (alertmanager)"


def _obj(obj: Any) -> dict:
    return obj.obj if isinstance(obj, Tombstone) else obj


def _md(obj: Any) -> dict:
    return _obj(obj).get("metadata") or {}


def crds_served(client: KubeClient) -> bool:
    """Are the Alertmanager CRDs installed? (upstream skips the controller when they are not)."""
    for res in (ALERTMANAGERS, ALERTMANAGERCONFIGS):
        try:
            client.list(res, limit=1)
        except NotFound:
            return False
    return True


class AlertmanagerController(InformerGroup):
    """Owns the informers, queue and workers for Alertmanager objects (same interface as Controller)."""

    def __init__(self, client: KubeClient, options: Any, registry: CollectorRegistry | None = None,
                 metrics: OperatorMetrics | None = None, render_options: AMRenderOptions | None = None,
                 informer_kwargs: dict | None = None) -> None:
        self.client = client
        self.options = options
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = metrics or OperatorMetrics(self.registry)
        self.queue = RateLimitingQueue(name=CONTROLLER, registry=self.registry)
        kw = {"resync_period": 0, "registry": self.registry, **(informer_kwargs or {})}
        from promop.operator.alertmanager.flags import AMOptions

        am_opts: AMOptions = getattr(options, "alertmanager", None) or AMOptions()
        instances = tuple(am_opts.instance_namespaces or options.namespaces)
        configs = tuple(am_opts.config_namespaces or options.namespaces)
        # Secrets/ConfigMaps only trigger syncs (content is read with GETs): watch where either kind lives
        referenced = tuple(dict.fromkeys(instances + configs)) if instances and configs else ()
        self.instance_namespaces, self.config_namespaces = instances, configs

        def informer(res: Resource, namespaces: tuple[str, ...], **extra: Any) -> Informer:
            # --deny-namespaces applies only where no allow-list is given (upstream: the allow-list wins)
            deny = "" if namespaces else options.namespace_field_selector()
            sel = ",".join(p for p in (extra.pop("field_selector", ""), deny) if p) or None
            scope: dict[str, Any] = {"namespaces": list(namespaces)} if namespaces else {}
            return Informer(client, res, field_selector=sel, **scope, **{**kw, **extra})

        self.alertmanagers = informer(ALERTMANAGERS, instances, resync_period=getattr(options, "resync_period", 0),
                                      label_selector=am_opts.instance_selector or None)
        self.alertmanagerconfigs = informer(ALERTMANAGERCONFIGS, configs)
        self.secrets = informer(SECRETS, referenced, metadata_only=True, field_selector=options.secret_field_selector)
        self.configmaps = informer(CONFIGMAPS, referenced, metadata_only=True)
        self.statefulsets = informer(STATEFULSETS, instances, label_selector=STATEFULSET_SELECTOR)
        self.namespaces = Informer(client, NAMESPACES, **kw)
        self.informers = [self.alertmanagers, self.alertmanagerconfigs, self.secrets, self.configmaps,
                          self.statefulsets, self.namespaces]
        base = options.render_options()
        self.render_options = render_options or AMRenderOptions(
            labels=base.labels, annotations=base.annotations, config_reloader_image=base.config_reloader_image,
            alertmanager_default_base_image=am_opts.default_base_image, cluster_domain=am_opts.cluster_domain)
        self.syncer = AlertmanagerSyncer(
            client, Stores(self.alertmanagers.store, self.alertmanagerconfigs.store, self.namespaces.store,
                           self.statefulsets.store, self.secrets.store, self.configmaps.store),
            self.render_options, self.metrics, namespace_allowed=self.config_namespace_allowed)
        self._workers: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._register_handlers()

    def config_namespace_allowed(self, namespace: str) -> bool:
        """May AlertmanagerConfigs of `namespace` be selected? (the AlertmanagerConfig namespaces)"""
        if self.config_namespaces:
            return namespace in self.config_namespaces
        return self.options.namespace_allowed(namespace)

    # ---- lifecycle (as Controller) --------------------------------------------------------

    def start_workers(self) -> None:
        if self._workers:
            return
        self.metrics.ready.labels(CONTROLLER).set(1)
        for i in range(max(1, getattr(self.options, "workers", 1))):
            t = threading.Thread(target=self._worker, name=f"promop-alertmanager-worker-{i}", daemon=True)
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

    def idle(self) -> bool:
        """Every Alertmanager synced at least once, nothing queued, in flight or undelivered."""
        done = all(k in self.syncer.last_report for k in self.alertmanagers.store.keys()
                   if ownership.key_managed(self.alertmanagers.store, k, self._controller_id))
        return (done and len(self.queue) == 0 and self.queue.processing() == 0 and self.queue.waiting() == 0
                and all(inf.pending() == 0 for inf in self.informers))

    # ---- workers ------------------------------------------------------------------------

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
            try:
                if ownership.key_managed(self.alertmanagers.store, key, self._controller_id):
                    self.syncer.sync(key)  # another operator's (--controller-id): no sync, no status
                    self._repair(key)
            except RetryLater as exc:
                log.debug("sync deferred; retrying", **fields(key=key, reason=str(exc)))
                q.add_rate_limited(key)
            except Exception as exc:  # noqa: BLE001 - every failure is retried with backoff
                log.warning("alertmanager sync failed; retrying with backoff",
                            **fields(key=key, error=str(exc), retries=q.num_requeues(key)))
                q.add_rate_limited(key)
            else:
                q.forget(key)
            finally:
                q.done(key)

    # ---- event mapping --------------------------------------------------------------------

    def _enqueue(self, keys: list[str], triggered_by: str, action: str) -> None:
        keys = ownership.managed_keys(keys, self.alertmanagers.store, self._controller_id)
        if not keys:
            return
        self.metrics.triggered.labels(CONTROLLER, triggered_by, action).inc()
        for key in keys:
            self.queue.add(key)

    def _repair(self, key: str) -> None:
        """--repair-policy-for-statefulsets (promop/operator/repair.py) after a sync."""
        am, policy = self.alertmanagers.store.get(key), getattr(self.options, "repair_policy", "none")
        if policy == "none" or am is None:
            return
        ns, _, name = key.partition("/")
        mine = [s for s in self.statefulsets.store.list() if _md(s).get("namespace") == ns and any(
            r.get("kind") == "Alertmanager" and r.get("name") == name and r.get("controller")
            for r in _md(s).get("ownerReferences") or ())]
        repair.repair(self.client, mine, policy,
                      lambda note: self.syncer._event(am, "Alertmanager", repair.REASON, note))

    @property
    def _controller_id(self) -> str:
        return getattr(self.options, "controller_id", "")

    def _ams(self) -> list[dict]:
        return [a for a in self.alertmanagers.store.list() if ownership.manages(a, self._controller_id)]

    def _ns_labels(self, namespace: str) -> dict:
        ns = self.namespaces.store.get(namespace)
        labels = dict(((ns or {}).get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels

    def for_namespace(self, namespace: str) -> list[str]:
        """Alertmanagers that may select AlertmanagerConfigs of `namespace`."""
        out = []
        for am in self._ams():
            md = am.get("metadata") or {}
            ns_sel = (am.get("spec") or {}).get("alertmanagerConfigNamespaceSelector")
            if md.get("namespace") == namespace:
                out.append(mapping.key_of(am))
                continue
            if ns_sel is None:
                continue
            try:
                if parse_selector(ns_sel).matches(self._ns_labels(namespace)):
                    out.append(mapping.key_of(am))
            except SelectorError:
                continue
        return out

    def for_referenced(self, kind: str, namespace: str, name: str) -> list[str]:
        refs = self.syncer.references
        keys = {k for k, read in list(refs.items()) if (kind, namespace, name) in read}
        keys |= {mapping.key_of(am) for am in self._ams() if (am.get("metadata") or {}).get("namespace") == namespace}
        return sorted(keys)

    def _register_handlers(self) -> None:
        e = self._enqueue

        def am_key(obj: Any) -> list[str]:
            if not ownership.manages(_obj(obj), self._controller_id):
                return []  # another operator's, also when it is deleted
            return [obj.key] if isinstance(obj, Tombstone) else [mapping.key_of(obj)]

        def am_update(old: dict, new: dict) -> None:
            if not mapping.resource_version_changed(old, new) or mapping.prometheus_update_matters(old, new):
                e(am_key(new), "Alertmanager", "update")

        self.alertmanagers.add_handler(on_add=lambda o, initial: e(am_key(o), "Alertmanager", "add"),
                                       on_update=am_update,
                                       on_delete=lambda o: e(am_key(o), "Alertmanager", "delete"))

        def amc_keys(obj: Any) -> list[str]:
            return self.for_namespace(_md(obj).get("namespace", ""))

        self.alertmanagerconfigs.add_handler(
            on_add=lambda o, initial: None if initial else e(amc_keys(o), "AlertmanagerConfig", "add"),
            on_update=lambda old, new: e(amc_keys(new), "AlertmanagerConfig", "update")
            if mapping.monitor_update_matters(old, new) else None,
            on_delete=lambda o: e(amc_keys(o), "AlertmanagerConfig", "delete"))

        for kind, inf in (("Secret", self.secrets), ("ConfigMap", self.configmaps)):
            def ref_keys(obj: Any, kind: str = kind) -> list[str]:
                md = _md(obj)
                if any(r.get("kind") == "Alertmanager" for r in md.get("ownerReferences") or []):
                    return []  # our own generated objects: their writes come from a sync
                return self.for_referenced(kind, md.get("namespace", ""), md.get("name", ""))

            inf.add_handler(
                on_add=lambda o, initial, f=ref_keys, k=kind: None if initial else e(f(o), k, "add"),
                on_update=lambda old, new, f=ref_keys, k=kind: e(f(new), k, "update")
                if mapping.resource_version_changed(old, new) else None,
                on_delete=lambda o, f=ref_keys, k=kind: e(f(o), k, "delete"))

        def sts_owner(obj: Any) -> list[str]:
            md = _md(obj)
            return [f"{md.get('namespace')}/{r['name']}" for r in md.get("ownerReferences") or []
                    if r.get("kind") == "Alertmanager" and r.get("controller")]

        self.statefulsets.add_handler(
            on_add=lambda o, initial: None if initial else e(sts_owner(o), "StatefulSet", "add"),
            on_update=lambda old, new: e(sts_owner(new), "StatefulSet", "update")
            if mapping.resource_version_changed(old, new) else None,
            on_delete=lambda o: e(sts_owner(o), "StatefulSet", "delete"))

        def ns_change(old: Any, new: Any) -> None:
            o = (_md(old).get("labels") if old is not None else None) or {}
            n = (_md(new).get("labels") if new is not None else None) or {}
            if o == n and old is not None and new is not None:
                return
            keys = [mapping.key_of(am) for am in self._ams()
                    if (am.get("spec") or {}).get("alertmanagerConfigNamespaceSelector") is not None]
            e(keys, "Namespace", "update")

        self.namespaces.add_handler(on_add=lambda o, initial: None if initial else ns_change(None, o),
                                    on_update=ns_change, on_delete=lambda o: ns_change(o, None))


def start_if_served(client: KubeClient, options: Any, registry: CollectorRegistry, metrics: OperatorMetrics,
                    informer_kwargs: dict | None = None) -> AlertmanagerController | None:
    """The controller, or None (with a warning) when the Alertmanager CRDs are not installed."""
    try:
        served = crds_served(client)
    except ApiError as exc:
        log.warning("cannot check the Alertmanager CRDs; the Alertmanager controller is not started",
                    **fields(error=str(exc)))
        return None
    if not served:
        log.warning("the Alertmanager CRDs are not installed; the Alertmanager controller is not started "
                    "(install crds/ or run with --manage-crds)")
        return None
    return AlertmanagerController(client, options, registry, metrics, informer_kwargs=informer_kwargs)
