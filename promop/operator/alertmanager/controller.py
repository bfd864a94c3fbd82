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
from typing import Any

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.informer import Informer
from promop.kube.resources import CONFIGMAPS, NAMESPACES, SECRETS, STATEFULSETS, Resource
from promop.operator import mapping
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS, CONTROLLER
from promop.operator.alertmanager.sync import AlertmanagerSyncer, Stores
from promop.operator.metrics import OperatorMetrics
from promop.operator.workload.controller import WorkloadController, crds_served, metadata
from promop.render.alertmanager.model import AMRenderOptions

log = logging.getLogger("promop.operator.alertmanager")

STATEFULSET_SELECTOR = "app.kubernetes.io/managed-by in (prometheus-operator),app.kubernetes.io/name in (alertmanager)"


class AlertmanagerController(WorkloadController):
    """Owns the informers, queue and workers for Alertmanager objects (same interface as Controller)."""

    kind = "Alertmanager"
    name = worker_name = CONTROLLER
    log = log
    namespace_selector_field = "alertmanagerConfigNamespaceSelector"
    repair_recheck = None  # a rollout still unfinished after a repair waits for the next event

    def __init__(self, client: KubeClient, options: Any, registry: CollectorRegistry | None = None,
                 metrics: OperatorMetrics | None = None, render_options: AMRenderOptions | None = None,
                 informer_kwargs: dict | None = None) -> None:
        super().__init__(client, options, registry, informer_kwargs)
        self.metrics = metrics or OperatorMetrics(self.registry)
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
            return Informer(client, res, field_selector=sel, **scope, **{**self.informer_kwargs, **extra})

        self.alertmanagers = self.instances = informer(
            ALERTMANAGERS, instances, resync_period=getattr(options, "resync_period", 0),
            label_selector=am_opts.instance_selector or None)
        self.alertmanagerconfigs = informer(ALERTMANAGERCONFIGS, configs)
        self.secrets = informer(SECRETS, referenced, metadata_only=True, field_selector=options.secret_field_selector)
        self.configmaps = informer(CONFIGMAPS, referenced, metadata_only=True,
                                   field_selector=getattr(options, "configmap_field_selector", ""))
        self.statefulsets = informer(STATEFULSETS, instances, label_selector=STATEFULSET_SELECTOR)
        self.namespaces = Informer(client, NAMESPACES, **self.informer_kwargs)
        self.informers = [self.alertmanagers, self.alertmanagerconfigs, self.secrets, self.configmaps,
                          self.statefulsets, self.namespaces]
        base = options.render_options()
        self.render_options = render_options or AMRenderOptions(
            labels=base.labels, annotations=base.annotations, config_reloader_image=base.config_reloader_image,
            alertmanager_default_base_image=am_opts.default_base_image, cluster_domain=am_opts.cluster_domain,
            config_reloader=base.config_reloader)
        self.syncer = AlertmanagerSyncer(
            client, Stores(self.alertmanagers.store, self.alertmanagerconfigs.store, self.namespaces.store,
                           self.statefulsets.store, self.secrets.store, self.configmaps.store),
            self.render_options, self.metrics, namespace_allowed=self.config_namespace_allowed)
        self._register_handlers()

    def config_namespace_allowed(self, namespace: str) -> bool:
        """May AlertmanagerConfigs of `namespace` be selected? (the AlertmanagerConfig namespaces)"""
        if self.config_namespaces:
            return namespace in self.config_namespaces
        return self.options.namespace_allowed(namespace)

    def for_referenced(self, kind: str, namespace: str, name: str) -> list[str]:
        """The Alertmanagers whose last sync read the Secret/ConfigMap, and those of its namespace (the
        user config Secret)."""
        keys = set(self.readers(kind, {"metadata": {"namespace": namespace, "name": name}}))
        keys |= {mapping.key_of(am) for am in self.managed() if (am.get("metadata") or {}).get("namespace") == namespace}
        return sorted(keys)

    def _register_handlers(self) -> None:
        self.route_instances()
        self.route(self.alertmanagerconfigs, "AlertmanagerConfig",
                   lambda o: self.for_namespace(metadata(o).get("namespace", "")), mapping.monitor_update_matters)
        for kind, inf in (("Secret", self.secrets), ("ConfigMap", self.configmaps)):
            def ref_keys(obj: Any, kind: str = kind) -> list[str]:
                md = metadata(obj)
                if any(r.get("kind") == self.kind for r in md.get("ownerReferences") or []):
                    return []  # our own generated objects: their writes come from a sync
                return self.for_referenced(kind, md.get("namespace", ""), md.get("name", ""))

            self.route(inf, kind, ref_keys, mapping.resource_version_changed)
        self.route(self.statefulsets, "StatefulSet", self.owner_keys, mapping.resource_version_changed)
        self.route_namespaces()


def start_if_served(client: KubeClient, options: Any, registry: CollectorRegistry, metrics: OperatorMetrics,
                    informer_kwargs: dict | None = None) -> AlertmanagerController | None:
    """The controller, or None (with a warning) when the Alertmanager CRDs are not installed."""
    if not crds_served(client, (ALERTMANAGERS, ALERTMANAGERCONFIGS), "Alertmanager", log):
        return None
    return AlertmanagerController(client, options, registry, metrics, informer_kwargs=informer_kwargs)
