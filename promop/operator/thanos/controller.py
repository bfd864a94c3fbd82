"""The ThanosRuler controller: informers -> event mapping -> rate-limited queue -> workers -> sync.

Event mapping: a ThanosRuler event enqueues itself; a PrometheusRule add/delete, or an update of its
spec or labels, enqueues every ThanosRuler that may select it (same namespace, or a namespace
selector matching its namespace); a StatefulSet or rule ConfigMap change enqueues its owner; a
Namespace label change enqueues the ThanosRulers with a namespace selector; a Secret or ConfigMap
change enqueues the ThanosRulers whose last render read it (remote write credentials, web TLS).

Beside other operators as the Prometheus controller: only ThanosRulers `ownership.manages`
(--controller-id), informers scoped by `scope.informer_factory` with --thanos-ruler-instance-namespaces/
-selector, and `repair.repair` on the StatefulSets after each sync (--repair-policy-for-statefulsets).
The queue, workers and routing are the shared `WorkloadController`'s.
"""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.shared_informers import SharedInformers
from promop.kube.resources import CONFIGMAPS, PROMETHEUSRULES, SECRETS, STATEFULSETS
from promop.operator import mapping, scope
from promop.operator.metrics import OperatorMetrics
from promop.operator.thanos import CONTROLLER, THANOSRULERS
from promop.operator.thanos.sync import RulerSyncer, Stores
from promop.operator.workload.controller import WorkloadController, crds_served, metadata

log = logging.getLogger("promop.operator.thanos")

OWNED_SELECTOR = "app.kubernetes.io/managed-by in (prometheus-operator),app.kubernetes.io/name in (thanos-ruler)"


class ThanosRulerController(WorkloadController):
    """Owns the informers, queue and workers for ThanosRuler objects (same interface as Controller)."""

    kind = "ThanosRuler"
    name = worker_name = CONTROLLER
    log = log
    namespace_selector_field = "ruleNamespaceSelector"

    def __init__(self, client: KubeClient, options: Any, registry: CollectorRegistry | None = None,
                 metrics: OperatorMetrics | None = None, informer_kwargs: dict | None = None,
                 shared: SharedInformers | None = None) -> None:
        super().__init__(client, options, registry, informer_kwargs, shared)
        self.metrics = metrics or OperatorMetrics(self.registry)
        # --thanos-ruler-instance-namespaces/-selector: where ThanosRulers and what we create for them are
        # watched (wins over --namespaces/--deny-namespaces); PrometheusRules keep following --namespaces
        informer = scope.informer_factory(client, options, options.thanos_ruler_instance_namespaces,
                                          self.informer_kwargs, shared)
        self.thanosrulers = self.instances = informer(
            THANOSRULERS, True, resync_period=getattr(options, "resync_period", 0),
            label_selector=options.thanos_ruler_instance_selector or None)
        self.prometheusrules = informer(PROMETHEUSRULES)
        self.statefulsets = informer(STATEFULSETS, True, label_selector=OWNED_SELECTOR)
        # metadata only, every ConfigMap/Secret of the watched namespaces: rule shards, and what a ruler reads
        self.configmaps = informer(CONFIGMAPS, True, metadata_only=True)
        self.secrets = informer(SECRETS, True, metadata_only=True, field_selector=options.secret_field_selector)
        self.namespaces = scope.namespaces_informer(client, self.informer_kwargs, shared)
        self.informers = [self.thanosrulers, self.prometheusrules, self.statefulsets, self.configmaps, self.secrets,
                          self.namespaces]
        self.syncer = RulerSyncer(
            client, Stores(self.thanosrulers.store, self.prometheusrules.store, self.namespaces.store,
                           self.statefulsets.store, self.configmaps.store, self.secrets.store),
            options.render_options(), self.metrics, namespace_allowed=options.namespace_allowed)
        self._register_handlers()

    def _register_handlers(self) -> None:
        self.route_instances()
        self.route(self.prometheusrules, "PrometheusRule",
                   lambda o: self.for_namespace(metadata(o).get("namespace", "")), mapping.monitor_update_matters)
        self.route(self.statefulsets, "StatefulSet", self.owner_keys, mapping.resource_version_changed)
        for kind, inf in (("ConfigMap", self.configmaps), ("Secret", self.secrets)):
            def keys(obj: Any, kind: str = kind) -> list[str]:
                return sorted(set(self.readers(kind, obj)) | set(self.owner_keys(obj)))

            self.route(inf, kind, keys, mapping.resource_version_changed)
        self.route_namespaces()


def start_if_served(client: KubeClient, options: Any, registry: CollectorRegistry, metrics: OperatorMetrics,
                    informer_kwargs: dict | None = None,
                    shared: SharedInformers | None = None) -> ThanosRulerController | None:
    """The controller, or None (logged) when the ThanosRuler CRD is not installed, as upstream."""
    if not crds_served(client, (THANOSRULERS,), "ThanosRuler", log):
        return None
    return ThanosRulerController(client, options, registry, metrics, informer_kwargs=informer_kwargs, shared=shared)
