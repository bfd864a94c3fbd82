"""The PrometheusAgent controller: informers -> event mapping -> rate-limited queue -> workers -> AgentSyncer.

Event mapping as for a Prometheus (promop.operator.mapping): an agent event enqueues itself; a
ServiceMonitor/PodMonitor/Probe/ScrapeConfig event enqueues every agent whose selectors may pick it; a
Secret or ConfigMap event the agents whose last sync read it; a StatefulSet/DaemonSet event its
owner (a status refresh); a Namespace label change the agents with namespace selectors.

Beside other operators as the Prometheus controller: only agents `ownership.manages` (--controller-id),
informers scoped by `scope.informer_factory` with the Prometheus instance flags (as upstream), and
`repair.repair` on the agent's StatefulSets after each sync (--repair-policy-for-statefulsets).
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
from promop.kube.resources import (CONFIGMAPS, NAMESPACES, PODMONITORS, PROBES, SCRAPECONFIGS, SECRETS,
                                   SERVICEMONITORS, STATEFULSETS)
from promop.kube.store import Tombstone
from promop.kube.workqueue import RateLimitingQueue
from promop.operator import mapping, ownership, repair, scope
from promop.operator.agent import CONTROLLER, DAEMONSETS, PROMETHEUSAGENTS
from promop.operator.agent.sync import KIND, AgentStores, AgentSyncer
from promop.operator.apply import RetryLater

log = logging.getLogger("promop.operator.agent")

# Only the workloads we manage for agents (upstream's selector with mode agent).
WORKLOAD_SELECTOR = "managed-by in (prometheus-operator),operator.prometheus.io/name,operator.prometheus.io/mode in (agent)"


def _obj(obj: Any) -> dict:
    return obj.obj if isinstance(obj, Tombstone) else obj


def _md(obj: Any) -> dict:
    return _obj(obj).get("metadata") or {}


class AgentController(InformerGroup):
    """Owns the informers, queue and workers for PrometheusAgent objects (the Controller interface)."""

    def __init__(self, client: KubeClient, options: Any, registry: CollectorRegistry | None = None,
                 informer_kwargs: dict | None = None) -> None:
        self.client = client
        self.options = options
        self.registry = registry if registry is not None else CollectorRegistry()
        self.queue = RateLimitingQueue(name=CONTROLLER, registry=self.registry)
        kw = {"resync_period": 0, "registry": self.registry, **(informer_kwargs or {})}
        # upstream: agents share the Prometheus instance flags (--prometheus-instance-namespaces/-selector)
        informer = scope.informer_factory(client, options, options.prometheus_instance_namespaces, kw)
        self.agents = informer(PROMETHEUSAGENTS, True, resync_period=options.resync_period,
                               label_selector=options.prometheus_instance_selector or None)
        self.servicemonitors = informer(SERVICEMONITORS)
        self.podmonitors = informer(PODMONITORS)
        self.probes = informer(PROBES) if scope.crd_served(client, PROBES) else None
        self.scrapeconfigs = informer(SCRAPECONFIGS) if scope.crd_served(client, SCRAPECONFIGS) else None
        self.secrets = informer(SECRETS, True, metadata_only=True, field_selector=options.secret_field_selector)
        self.configmaps = informer(CONFIGMAPS, True, metadata_only=True)
        self.statefulsets = informer(STATEFULSETS, True, label_selector=WORKLOAD_SELECTOR)
        # always watched: an agent switched back to StatefulSet mode (or the gate turned off) loses its DaemonSet
        self.daemonsets = informer(DAEMONSETS, True, label_selector=WORKLOAD_SELECTOR)
        self.namespaces = Informer(client, NAMESPACES, **kw)
        self.informers = [i for i in (self.agents, self.servicemonitors, self.podmonitors, self.probes,
                                      self.scrapeconfigs, self.secrets, self.configmaps, self.statefulsets,
                                      self.daemonsets, self.namespaces) if i is not None]
        stores = AgentStores(self.agents.store, self.servicemonitors.store, self.podmonitors.store,
                             self.namespaces.store, self.statefulsets.store,
                             self.daemonsets.store if self.daemonsets else None,
                             scrapeconfigs=self.scrapeconfigs.store if self.scrapeconfigs is not None else None,
                             probes=self.probes.store if self.probes is not None else None)
        self.syncer = AgentSyncer(client, stores, options.render_options(), namespace_allowed=options.namespace_allowed)
        self._full: set[str] = set()  # keys queued for a full sync (others: a status refresh)
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._stopping = threading.Event()
        self.synced_keys: set[str] = set()
        self._register_handlers()

    # ---- lifecycle ----------------------------------------------------------------------

    def start_workers(self) -> None:
        if self._workers:
            return
        for i in range(max(1, min(2, self.options.workers))):
            t = threading.Thread(target=self._worker, name=f"promop-agent-worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)

    def stop_taking_work(self) -> None:
        self._stopping.set()

    def stop(self, timeout: float = 8.0) -> None:
        self._stopping.set()
        self.queue.shutdown()
        for t in self._workers:
            t.join(timeout)
        for inf in self.informers:
            inf.stop(timeout)

    repair_recheck = 60.0  # seconds: a rollout still unfinished is looked at again (--repair-policy-for-statefulsets)

    def idle(self) -> bool:
        """Every known agent of ours synced at least once, nothing queued or in flight."""
        done = all(k in self.synced_keys for k in self.agents.store.keys()
                   if ownership.key_managed(self.agents.store, k, self.options.controller_id))
        return done and len(self.queue) == 0 and self.queue.processing() == 0 and self.queue.waiting() == 0

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
            with self._lock:
                status_only = key not in self._full
                self._full.discard(key)
            if not ownership.key_managed(self.agents.store, key, self.options.controller_id):
                q.forget(key)  # another operator's (--controller-id): neither reconciled nor its status written
                q.done(key)
                continue
            try:
                if status_only and key in self.synced_keys:
                    self.syncer.refresh_status(key)
                else:
                    self.syncer.sync(key)
                    self.synced_keys.add(key)
            except RetryLater as exc:
                log.debug("sync deferred; retrying", **fields(key=key, reason=str(exc)))
                self._retry(key, status_only)
            except Exception as exc:  # noqa: BLE001 - every failure is retried with backoff
                log.warning("sync failed; retrying with backoff",
                            **fields(key=key, kind=KIND, error=str(exc), retries=q.num_requeues(key)))
                self.synced_keys.add(key)
                self._retry(key, status_only)
            else:
                q.forget(key)
                self._repair(key)
            finally:
                q.done(key)

    def _retry(self, key: str, status_only: bool) -> None:
        """Queue `key` again with backoff; a failed full sync is retried as a full sync (were it retried as
        a status refresh, what it did not write would wait for the next change of the agent)."""
        if not status_only:
            with self._lock:
                self._full.add(key)
        self.queue.add_rate_limited(key)

    def _repair(self, key: str) -> None:
        """--repair-policy-for-statefulsets: after a sync, unstick the agent's StatefulSets (repair.py)."""
        agent = self.agents.store.get(key)
        if self.options.repair_policy == "none" or agent is None:
            return
        mine = [s for s in self.statefulsets.store.list() if key in self._owner_keys(s)]
        repair.repair(self.client, mine, self.options.repair_policy,
                      lambda note: self.syncer.tell({**agent, "kind": KIND}, repair.REASON, note))
        if any(repair.rolling(s) for s in mine):  # a stuck pod changes nothing: look again later
            self.queue.add_after(key, self.repair_recheck)

    @staticmethod
    def _owner_keys(obj: Any) -> list[str]:
        """The agents owning a StatefulSet/DaemonSet (its ownerReferences)."""
        md = _md(obj)
        return [f"{md.get('namespace')}/{r.get('name')}" for r in md.get("ownerReferences") or ()
                if r.get("kind") == KIND]

    # ---- events -------------------------------------------------------------------------

    def _enqueue(self, keys: list[str], status_only: bool = False) -> None:
        """Queue `keys` (those of other operators' agents dropped, --controller-id); a key queued only for
        workload status changes gets a status refresh, not a sync."""
        for key in ownership.managed_keys(keys, self.agents.store, self.options.controller_id):
            if not status_only:
                with self._lock:
                    self._full.add(key)
            self.queue.add(key)

    def _agents(self) -> list[dict]:
        return [a for a in self.agents.store.list() if ownership.manages(a, self.options.controller_id)]

    def _ns_labels(self, namespace: str) -> dict | None:
        ns = self.namespaces.store.get(namespace)
        return ((ns or {}).get("metadata") or {}).get("labels") or {}

    def _register_handlers(self) -> None:
        e = self._enqueue

        def agent_key(obj: Any) -> list[str]:
            if not ownership.manages(_obj(obj), self.options.controller_id):
                return []  # another operator's, also when it is deleted
            return [obj.key] if isinstance(obj, Tombstone) else [mapping.key_of(obj)]

        self.agents.add_handler(
            on_add=lambda o, initial: e(agent_key(o)),
            on_update=lambda old, new: e(agent_key(new)) if mapping.prometheus_update_matters(old, new)
            or not mapping.resource_version_changed(old, new) else None,
            on_delete=lambda o: e(agent_key(o)))
        for kind, inf in (("ServiceMonitor", self.servicemonitors), ("PodMonitor", self.podmonitors),
                          ("Probe", self.probes), ("ScrapeConfig", self.scrapeconfigs)):
            if inf is None:  # CRD not installed
                continue
            def monitor_keys(obj: Any, kind: str = kind) -> list[str]:
                return mapping.for_monitor(kind, _md(obj).get("namespace", ""), self._agents(), self._ns_labels)

            inf.add_handler(
                on_add=lambda o, initial, f=monitor_keys: None if initial else e(f(o)),
                on_update=lambda old, new, f=monitor_keys: e(f(new)) if mapping.monitor_update_matters(old, new)
                else None,
                on_delete=lambda o, f=monitor_keys: e(f(o)))
        for kind, inf in (("Secret", self.secrets), ("ConfigMap", self.configmaps)):
            def ref_keys(obj: Any, kind: str = kind) -> list[str]:
                md = _md(obj)
                me = (kind, md.get("namespace", ""), md.get("name", ""))
                return [k for k, refs in list(self.syncer.references.items()) if me in refs]

            inf.add_handler(
                on_add=lambda o, initial, f=ref_keys: None if initial else e(f(o)),
                on_update=lambda old, new, f=ref_keys: e(f(new)) if mapping.resource_version_changed(old, new)
                else None,
                on_delete=lambda o, f=ref_keys: e(f(o)))
        for inf in (self.statefulsets, self.daemonsets):
            if inf is None:
                continue

            owner = self._owner_keys
            inf.add_handler(
                on_add=lambda o, initial: e(owner(o), status_only=True),
                on_update=lambda old, new: e(owner(new), status_only=mapping.statefulset_status_only(old, new))
                if mapping.resource_version_changed(old, new) else None,
                on_delete=lambda o: e(owner(o)))

        def ns_change(old: Any, new: Any) -> None:
            old_labels = (_md(old).get("labels") or {}) if old is not None else None
            new_labels = (_md(new).get("labels") or {}) if new is not None else None
            name = _md(new if new is not None else old).get("name", "")
            e(mapping.for_namespace_change(old_labels, new_labels, name, self._agents()))

        self.namespaces.add_handler(
            on_add=lambda o, initial: None if initial else ns_change(None, o),
            on_update=ns_change,
            on_delete=lambda o: ns_change(o, None))


def start_if_served(client: KubeClient, options: Any, registry: CollectorRegistry,
                    informer_kwargs: dict | None = None) -> AgentController | None:
    """The controller, or None (with a warning) when the PrometheusAgent CRD is not installed."""
    try:
        client.list(PROMETHEUSAGENTS, limit=1)
    except NotFound:
        log.warning("the PrometheusAgent CRD is not installed; the PrometheusAgent controller is not started "
                    "(install crds/ or run with --manage-crds)")
        return None
    except ApiError as exc:
        log.warning("cannot check the PrometheusAgent CRD; the PrometheusAgent controller is not started",
                    **fields(error=str(exc)))
        return None
    return AgentController(client, options, registry, informer_kwargs=informer_kwargs)
