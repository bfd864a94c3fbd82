"""Per-render settings derived once from the Prometheus object and the operator options."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

from promop.render.model import RenderOptions, obj_meta
from promop.render.shards import shard_count  # the one shard count (status uses it too)
from promop.render.store import Store
from promop.render.versions import SUPPORTED_MAJORS, Version, VersionError

# Prometheus spec fields that cannot change a monitor's scrape jobs. Everything
# else (a deny-list, so a forgotten field costs cache hits, never correctness)
# goes into the fragment cache key.
_SPEC_IRRELEVANT_TO_MONITORS = frozenset({
    "replicas", "resources", "image", "baseImage", "tag", "sha", "podMetadata", "nodeSelector",
    "tolerations", "affinity", "securityContext", "serviceAccountName", "storage", "volumes",
    "volumeMounts", "containers", "initContainers", "imagePullSecrets", "imagePullPolicy",
    "retention", "retentionSize", "walCompression", "externalUrl", "routePrefix", "logLevel",
    "logFormat", "paused", "priorityClassName", "topologySpreadConstraints", "minReadySeconds",
    "hostAliases", "web", "thanos", "remoteWrite", "remoteRead", "alerting", "ruleSelector",
    "ruleNamespaceSelector", "additionalScrapeConfigs", "additionalAlertRelabelConfigs",
    "additionalAlertManagerConfigs", "externalLabels", "evaluationInterval", "query", "queryLogFile",
    "enableAdminAPI", "enableFeatures", "secrets", "configMaps", "listenLocal", "portName",
    "serviceMonitorSelector", "serviceMonitorNamespaceSelector", "podMonitorSelector",
    "podMonitorNamespaceSelector", "probeSelector", "probeNamespaceSelector",
    "scrapeConfigSelector", "scrapeConfigNamespaceSelector", "prometheusExternalLabelName",
    "replicaExternalLabelName", "disableCompaction", "tsdb", "exemplars", "persistentVolumeClaimRetentionPolicy",
    "hostNetwork", "dnsPolicy", "dnsConfig", "automountServiceAccountToken", "shardRetentionPolicy",
})


@dataclass
class GenContext:
    """Everything config generation needs besides the object being rendered."""

    prometheus: Mapping[str, Any]
    options: RenderOptions
    store: Store
    spec: Mapping[str, Any] = field(init=False)
    namespace: str = field(init=False)
    name: str = field(init=False)
    version: Version = field(init=False)
    shards: int = field(init=False)
    scrape_classes: dict[str, dict] = field(init=False)
    default_class: dict | None = field(init=False)
    apiserver_sd: dict = field(default_factory=dict)  # filled by the pipeline from spec.apiserverConfig
    daemonset: bool = False  # a PrometheusAgent in DaemonSet mode: pods of the agent's own node, no sharding

    def __post_init__(self) -> None:
        self.spec = self.prometheus.get("spec") or {}
        self.namespace, self.name = obj_meta(self.prometheus)
        version = self.spec.get("version")
        if version is not None and not isinstance(version, str):
            raise VersionError(f"spec.version: {version!r} is not a Prometheus version; use a form like v2.42.0 or v3.13.2")
        self.version = Version(version)
        if self.version.major not in SUPPORTED_MAJORS:
            raise VersionError(f"spec.version: unsupported Prometheus version {version!r}; promop (like upstream) "
                               "supports Prometheus 2.x and 3.x")
        self.shards = shard_count(self.spec)
        self.scrape_classes = {c.get("name"): c for c in self.spec.get("scrapeClasses") or () if isinstance(c, Mapping)}
        defaults = [c for c in self.scrape_classes.values() if c.get("default")]
        self.default_class = defaults[0] if defaults else None

    def scrape_interval(self) -> str:
        return self.spec.get("scrapeInterval") or "30s"

    def monitor_key(self) -> str:
        """A digest of every input besides the monitor itself that can change its jobs."""
        relevant = {k: v for k, v in self.spec.items() if k not in _SPEC_IRRELEVANT_TO_MONITORS}
        o = self.options
        blob = json.dumps(
            [self.namespace, self.name, relevant, self.apiserver_sd, o.endpointslice_supported, o.shard_retention_policy,
             o.feature_gates.as_dict(), o.kubernetes_version, self.daemonset],
            sort_keys=True, default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()
