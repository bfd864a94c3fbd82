"""The operator's own metrics, with upstream's names (prometheus_operator_*).

Controller metrics carry `controller="prometheus"` as upstream's const label does.
The runtime (informers, workqueue, client) registers its list/watch, workqueue
and client-request metrics in the same registry.
"""

from __future__ import annotations

import platform
import threading
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from promop import __version__

CONTROLLER = "prometheus"
PREFIX = "prometheus_operator"
MANAGED_KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule", "Probe")
_RESOURCE_NAMES = {"ServiceMonitor": "servicemonitors", "PodMonitor": "podmonitors", "PrometheusRule": "prometheusrules",
                   "Probe": "probes"}
MANAGED_KINDS += ("ScrapeConfig",)
_RESOURCE_NAMES["ScrapeConfig"] = "scrapeconfigs"


@dataclass
class _PerPrometheus:
    ok: bool = True
    selected: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)


class OperatorMetrics:
    """The controller-level metrics; one instance per registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        c = ["controller"]
        self.registry = registry
        self.reconcile_operations = Counter(f"{PREFIX}_reconcile_operations_total",
                                            "Total number of reconcile operations.", c, registry=registry)
        self.reconcile_errors = Counter(f"{PREFIX}_reconcile_errors_total",
                                        "Number of errors that occurred during reconcile operations.", c,
                                        registry=registry)
        self.reconcile_duration = Histogram(f"{PREFIX}_reconcile_duration_seconds",
                                            "Histogram of reconcile operations.", c, registry=registry)
        self.status_updates = Counter(f"{PREFIX}_status_update_operations_total",
                                      "Total number of status update operations.", c, registry=registry)
        self.status_update_errors = Counter(f"{PREFIX}_status_update_errors_total",
                                            "Number of errors that occurred during status update operations.", c,
                                            registry=registry)
        self.triggered = Counter(f"{PREFIX}_triggered_total",
                                 "Number of times a Kubernetes object add, delete or update event triggered "
                                 "the controller to reconcile an object.",
                                 [*c, "triggered_by", "action"], registry=registry)
        self.sts_delete_create = Counter(f"{PREFIX}_reconcile_sts_delete_create_total",
                                         "Number of times that reconciling a StatefulSet required deleting "
                                         "and re-creating it.", c, registry=registry)
        self.ready = Gauge(f"{PREFIX}_ready", "1 when the controller is ready to reconcile resources, 0 otherwise.",
                           c, registry=registry)
        self.syncs = Gauge(f"{PREFIX}_syncs", "Number of objects per sync status (ok/failed).",
                           [*c, "status"], registry=registry)
        self.managed = Gauge(f"{PREFIX}_managed_resources",
                             "Number of resources managed by the operator's controller per state "
                             "(selected/rejected).", [*c, "resource", "state"], registry=registry)
        self.spec_replicas = Gauge(f"{PREFIX}_spec_replicas", "Number of expected replicas for the object.",
                                   [*c, "namespace", "name"], registry=registry)
        self.spec_shards = Gauge(f"{PREFIX}_spec_shards", "Number of expected shards for the object.",
                                 [*c, "namespace", "name"], registry=registry)
        self.build_info = Gauge(f"{PREFIX}_build_info", "A metric with a constant '1' value labeled by version.",
                                ["version", "python_version"], registry=registry)
        self.build_info.labels(__version__, platform.python_version()).set(1)
        self.ready.labels(CONTROLLER).set(0)
        for status in ("ok", "failed"):
            self.syncs.labels(CONTROLLER, status).set(0)
        for kind in MANAGED_KINDS:
            for state in ("selected", "rejected"):
                self.managed.labels(CONTROLLER, _RESOURCE_NAMES[kind], state).set(0)
        self.reconcile_operations.labels(CONTROLLER)
        self.reconcile_errors.labels(CONTROLLER)
        self._lock = threading.Lock()
        self._state: dict[tuple[str, str], _PerPrometheus] = {}

    def trigger(self, triggered_by: str, action: str) -> None:
        """Count an informer event (`triggered_by` a kind, `action` add/update/delete) that enqueued work."""
        self.triggered.labels(CONTROLLER, triggered_by, action).inc()

    def set_ready(self, ready: bool) -> None:
        self.ready.labels(CONTROLLER).set(1 if ready else 0)

    def record_sync(self, namespace: str, name: str, ok: bool, spec: dict | None = None,
                    selected: dict[str, int] | None = None, rejected: dict[str, int] | None = None) -> None:
        """Remember one Prometheus's last sync and refresh the aggregate gauges."""
        with self._lock:
            st = self._state.setdefault((namespace, name), _PerPrometheus())
            st.ok = ok
            if selected is not None:
                st.selected = dict(selected)
            if rejected is not None:
                st.rejected = dict(rejected)
            if spec is not None:
                self.spec_replicas.labels(CONTROLLER, namespace, name).set(_int(spec.get("replicas"), 1))
                self.spec_shards.labels(CONTROLLER, namespace, name).set(max(1, _int(spec.get("shards"), 1)))
            self._refresh()

    def forget(self, namespace: str, name: str) -> None:
        """A Prometheus was deleted: drop its series."""
        with self._lock:
            if self._state.pop((namespace, name), None) is None:
                return
            for gauge in (self.spec_replicas, self.spec_shards):
                try:
                    gauge.remove(CONTROLLER, namespace, name)
                except KeyError:
                    pass
            self._refresh()

    def _refresh(self) -> None:
        states = list(self._state.values())
        self.syncs.labels(CONTROLLER, "ok").set(sum(1 for s in states if s.ok))
        self.syncs.labels(CONTROLLER, "failed").set(sum(1 for s in states if not s.ok))
        for kind in MANAGED_KINDS:
            res = _RESOURCE_NAMES[kind]
            self.managed.labels(CONTROLLER, res, "selected").set(sum(s.selected.get(kind, 0) for s in states))
            self.managed.labels(CONTROLLER, res, "rejected").set(sum(s.rejected.get(kind, 0) for s in states))


def _int(value: object, default: int) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
