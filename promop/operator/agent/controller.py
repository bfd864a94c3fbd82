"""The PrometheusAgent controller: informers -> event mapping -> rate-limited queue -> workers -> AgentSyncer.

Event mapping as for a Prometheus (promop.operator.mapping): an agent event enqueues itself; a
ServiceMonitor/PodMonitor/Probe/ScrapeConfig event enqueues every agent whose selectors may pick it; a
Secret or ConfigMap event the agents whose last sync read it; a StatefulSet/DaemonSet event its
owner (a status refresh); a Namespace label change the agents with namespace selectors.

Beside other operators as the Prometheus controller: only agents `ownership.manages` (--controller-id),
informers scoped by `scope.informer_factory` with the Prometheus instance flags (as upstream), and
`repair.repair` on the agent's StatefulSets after each sync (--repair-policy-for-statefulsets).
The queue, workers and routing are the shared `WorkloadController`'s.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.resources import (CONFIGMAPS, PODMONITORS, PROBES, SCRAPECONFIGS, SECRETS,
                                   SERVICEMONITORS, STATEFULSETS)
from promop.kube.shared_informers import SharedInformers
from promop.operator import mapping, scope
from promop.operator.agent import CONTROLLER, DAEMONSETS, PROMETHEUSAGENTS
from promop.operator.agent.sync import KIND, AgentStores, AgentSyncer
from promop.operator.apply import RetryLater
from promop.operator.workload.controller import WorkloadController, crds_served, metadata

log = logging.getLogger("promop.operator.agent")

# Only the workloads we manage for agents (upstream's selector with mode agent).
WORKLOAD_SELECTOR = "managed-by in (prometheus-operator),operator.prometheus.io/name,operator.prometheus.io/mode in (agent)"


class AgentController(WorkloadController):
    """Owns the informers, queue and workers for PrometheusAgent objects (the Controller interface).

    A key queued only for changes of its workloads' status gets a status refresh from the last render
    (`AgentSyncer.refresh_status`), any other event a full sync."""

    kind = KIND
    name = CONTROLLER
    worker_name = "agent"
    log = log
    max_workers = 2
    owner_controller_only = False  # any ownerReference of a PrometheusAgent maps its StatefulSet/DaemonSet

    def __init__(self, client: KubeClient, options: Any, registry: CollectorRegistry | None = None,
                 informer_kwargs: dict | None = None, shared: SharedInformers | None = None) -> None:
        super().__init__(client, options, registry, informer_kwargs, shared)
        # upstream: agents share the Prometheus instance flags (--prometheus-instance-namespaces/-selector)
        informer = scope.informer_factory(client, options, options.prometheus_instance_namespaces,
                                          self.informer_kwargs, shared)
        self.agents = self.instances = informer(PROMETHEUSAGENTS, True, resync_period=options.resync_period,
                                                label_selector=options.prometheus_instance_selector or None)
        self.servicemonitors = informer(SERVICEMONITORS)
        self.podmonitors = informer(PODMONITORS)
        self.probes = informer(PROBES) if scope.crd_served(client, PROBES) else None
        self.scrapeconfigs = informer(SCRAPECONFIGS) if scope.crd_served(client, SCRAPECONFIGS) else None
        # --watch-referenced-objects-in-all-namespaces: as the Prometheus controller (agents share its flags)
        referenced = (scope.informer_factory(client, options, scope.referenced_namespaces(options), self.informer_kwargs,
                                             shared)
                      if getattr(options, "watch_referenced_objects_in_all_namespaces", False) else informer)
        self.secrets = referenced(SECRETS, True, metadata_only=True, field_selector=options.secret_field_selector)
        self.configmaps = referenced(CONFIGMAPS, True, metadata_only=True,
                                     field_selector=getattr(options, "configmap_field_selector", ""))
        self.statefulsets = informer(STATEFULSETS, True, label_selector=WORKLOAD_SELECTOR)
        # always watched: an agent switched back to StatefulSet mode (or the gate turned off) loses its DaemonSet
        self.daemonsets = informer(DAEMONSETS, True, label_selector=WORKLOAD_SELECTOR)
        self.namespaces = scope.namespaces_informer(client, self.informer_kwargs, shared)
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
        self.synced_keys: set[str] = set()
        self._register_handlers()

    # ---- the status-refresh path (hooks of WorkloadController) ----------------------------

    def _queued(self, key: str, status_only: bool) -> None:
        if not status_only:
            with self._lock:
                self._full.add(key)

    def _take(self, key: str) -> bool:
        """True when only workload status changes queued `key` since it was last taken."""
        with self._lock:
            status_only = key not in self._full
            self._full.discard(key)
        return status_only

    def _reconcile(self, key: str, status_only: bool) -> None:
        if status_only and key in self.synced_keys:
            self.syncer.refresh_status(key)
            return
        try:
            self.syncer.sync(key)
        except RetryLater:
            raise
        except Exception:
            self.synced_keys.add(key)  # failed, but tried once: `idle` does not wait for it
            raise
        self.synced_keys.add(key)

    def _retry(self, key: str, status_only: bool) -> None:
        """Queue `key` again with backoff; a failed full sync is retried as a full sync (were it retried as
        a status refresh, what it did not write would wait for the next change of the agent)."""
        self._queued(key, status_only)
        self.queue.add_rate_limited(key)

    def _synced_once(self, key: str) -> bool:
        return key in self.synced_keys

    # ---- events -------------------------------------------------------------------------

    def _ns_labels(self, namespace: str) -> dict | None:
        ns = self.namespaces.store.get(namespace)
        return ((ns or {}).get("metadata") or {}).get("labels") or {}

    def _namespace_keys(self, old: Any, new: Any) -> list[str]:
        old_labels = (metadata(old).get("labels") or {}) if old is not None else None
        new_labels = (metadata(new).get("labels") or {}) if new is not None else None
        name = metadata(new if new is not None else old).get("name", "")
        return mapping.for_namespace_change(old_labels, new_labels, name, self.managed())

    def _register_handlers(self) -> None:
        self.route_instances()
        for kind, inf in (("ServiceMonitor", self.servicemonitors), ("PodMonitor", self.podmonitors),
                          ("Probe", self.probes), ("ScrapeConfig", self.scrapeconfigs)):
            if inf is None:  # CRD not installed
                continue
            def monitor_keys(obj: Any, kind: str = kind) -> list[str]:
                return mapping.for_monitor(kind, metadata(obj).get("namespace", ""), self.managed(), self._ns_labels)

            self.route(inf, kind, monitor_keys, mapping.monitor_update_matters)
        for kind, inf in (("Secret", self.secrets), ("ConfigMap", self.configmaps)):
            self.route(inf, kind, functools.partial(self.readers, kind), mapping.resource_version_changed)
        for kind, inf in (("StatefulSet", self.statefulsets), ("DaemonSet", self.daemonsets)):
            self.route(inf, kind, self.owner_keys, mapping.resource_version_changed, on_initial=True,
                       status_only=mapping.statefulset_status_only)
        self.route_namespaces()


def start_if_served(client: KubeClient, options: Any, registry: CollectorRegistry,
                    informer_kwargs: dict | None = None,
                    shared: SharedInformers | None = None) -> AgentController | None:
    """The controller, or None (with a warning) when the PrometheusAgent CRD is not installed."""
    if not crds_served(client, (PROMETHEUSAGENTS,), KIND, log):
        return None
    return AgentController(client, options, registry, informer_kwargs=informer_kwargs, shared=shared)
