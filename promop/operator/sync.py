"""sync(key): one Prometheus from the caches to the API, writing only what differs.

The parts, each testable on its own:
- render (here): select from the caches, read the referenced Secrets/ConfigMaps with direct
  GETs (their informers hold metadata only), call the pure renderer;
- write (promop.operator.writer.ConfigWriter): rule ConfigMaps, Secrets, Service, StatefulSets;
- feedback and status (promop.operator.reporter.Reporter): handed over, written by their own
  workers. A sync ends when the config objects are written.

One WriteLog records what was last written or found right, for all of them.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from promop.kube.client import KubeClient
from promop.kube.errors import Forbidden, NotFound
from promop.kube.resources import SERVICEMONITORS, PODMONITORS, PROMETHEUSRULES, PROBES, Resource
from promop.kube.resources import SCRAPECONFIGS
from promop.operator import feedback
from promop.operator.apply import OwnerGone, RetryLater
from promop.host.logs import fields
from promop.operator.metrics import OperatorMetrics
from promop.operator.reporter import Outcome, Reporter
from promop.operator.stable_versions import StableVersions
from promop.operator.status import now_rfc3339
from promop.operator.writelog import WriteLog
from promop.operator.writer import BY_KIND, ConfigWriter, fingerprint, key_of
from promop.render import fast_reload, split
from promop.render.model import RenderInputs, RenderOptions, RenderResult

log = logging.getLogger("promop.operator.sync")

MONITOR_RESOURCES: dict[str, Resource] = {
    "ServiceMonitor": SERVICEMONITORS, "PodMonitor": PODMONITORS, "PrometheusRule": PROMETHEUSRULES,
    "Probe": PROBES,
}
MONITOR_RESOURCES["ScrapeConfig"] = SCRAPECONFIGS
_key = key_of


class Stores:
    """The informer caches sync reads (each a promop.kube.store.Store or anything with get/list)."""

    def __init__(self, prometheuses: Any, servicemonitors: Any, podmonitors: Any, prometheusrules: Any,
                 namespaces: Any, statefulsets: Any, secrets: Any, configmaps: Any, probes: Any = None,
                 scrapeconfigs: Any = None) -> None:
        self.prometheuses = prometheuses
        self.monitors = {"ServiceMonitor": servicemonitors, "PodMonitor": podmonitors,
                         "PrometheusRule": prometheusrules}
        self.monitors["Probe"] = probes if probes is not None else _EmptyStore()
        self.monitors["ScrapeConfig"] = scrapeconfigs if scrapeconfigs is not None else _EmptyStore()
        self.namespaces = namespaces
        self.statefulsets = statefulsets
        self.secrets = secrets
        self.configmaps = configmaps


class _EmptyStore:
    """The store of a kind nobody watches (callers that predate ScrapeConfig pass none)."""

    def list(self) -> list:
        return []

    def get(self, key: str) -> None:
        return None


@dataclass
class SyncReport:
    """What one sync did: writes per action, for logs, tests and benchmarks."""

    key: str
    skipped: str = ""  # why nothing was done (paused, deleted)
    writes: int = 0
    actions: dict[str, int] | None = None
    selected: int = 0
    rejected: int = 0


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return md.get("namespace") or "", md.get("name") or ""


class Syncer:
    """Reconciles one Prometheus per call; safe for concurrent calls on different keys."""

    def __init__(self, client: KubeClient, stores: Stores, options: RenderOptions, metrics: OperatorMetrics,
                 render: Callable[..., RenderResult], references: Callable[..., set],
                 namespace_allowed: Callable[[str], bool] = lambda ns: True,
                 now: Callable[[], str] = now_rfc3339, cache_factory: Callable[[], Any] | None = None,
                 reporter: Reporter | None = None, registry: Any = None, render_pool: Any = None) -> None:
        self.client = client
        self.stores = stores
        self.options = options
        self.metrics = metrics
        self.render = render
        self.references_of = references
        self.namespace_allowed = namespace_allowed
        self.now = now
        self.writelog = WriteLog()
        self.writer = ConfigWriter(client, stores, self.writelog,
                                   on_sts_recreate=lambda: metrics.sts_delete_create.labels("prometheus").inc(),
                                   shard_retention=options.shard_retention_policy)
        self.reporter = reporter or Reporter(client, stores, self.writelog, metrics, now=now, registry=registry)
        self._lock = threading.Lock()
        self.references: dict[str, set[tuple[str, str, str]]] = {}  # key -> (kind, ns, name) it read
        self.last_result: dict[str, RenderResult] = {}
        self.last_report: dict[str, SyncReport] = {}  # key -> what its last finished sync did
        self._synced: dict[str, tuple] = {}  # key -> _identity() of the Prometheus its last good sync saw
        self._render_caches: dict[str, Any] = {}  # per key: a cache is not shared between workers
        self._stable = StableVersions()
        if cache_factory is None:
            from promop.render import RenderCache

            # one sync asks for one selection and one rule render: the latest two whole-render
            # entries are all that is ever reused (each holds a decision per candidate monitor)
            # and the operator never reads a result's decoded config: fragments keep their jobs as text
            cache_factory = functools.partial(RenderCache, max_renders=2, keep_jobs=False)
        self._cache_factory = cache_factory
        self.render_pool = render_pool  # a second process for first renders (promop.operator.render_pool)

    # ---- entry point ------------------------------------------------------------------

    def sync(self, key: str, cause: str = "") -> SyncReport:
        try:
            report = self._sync(key, cause)
        except Exception:
            self.last_report[key] = SyncReport(key, skipped="failed")
            raise
        self.last_report[key] = report
        return report

    def sync_status(self, key: str) -> SyncReport:
        """Only a StatefulSet's status changed: refresh the Prometheus status (no render, no other
        read or write), upstream's separate status path. The Reconciled condition keeps the outcome
        of the last sync; without a successful last sync to build on, this is a full sync."""
        prom = self.stores.prometheuses.get(key)
        last = self.last_report.get(key)
        with self._lock:
            result, synced = self.last_result.get(key), self._synced.get(key)
        if (prom is None or last is None or last.skipped or result is None or synced != _identity(prom)
                or (prom.get("spec") or {}).get("paused")):
            return self.sync(key, "StatefulSet status")  # also when the Prometheus changed since its last sync
        if not self.reporter.status(key):
            return self.sync(key, "StatefulSet status")
        return SyncReport(key, skipped="status only")

    def is_own_write(self, kind: str, obj: Mapping[str, Any]) -> bool:
        """Is this watch event the echo of one of our own last writes of the object (or of a
        version we compared and found right)?"""
        ns, name = _key(obj)
        return self.writelog.echo((kind, ns, name), obj)

    def settle_write(self, kind: str, obj: Mapping[str, Any], timeout: float) -> bool:
        """Wait until no write of the object is in flight (its echo may come before its answer)."""
        ns, name = _key(obj)
        return self.writelog.settle((kind, ns, name), timeout)

    def _sync(self, key: str, cause: str) -> SyncReport:
        prom = self.stores.prometheuses.get(key)
        if prom is None:
            self._deleted(key)
            return SyncReport(key, skipped="deleted")
        if (prom.get("metadata") or {}).get("deletionTimestamp"):
            return SyncReport(key, skipped="deleting")
        if (prom.get("spec") or {}).get("paused"):
            log.info("paused: no action taken", **fields(key=key))
            return SyncReport(key, skipped="paused")
        started = time.monotonic()
        self.metrics.reconcile_operations.labels("prometheus").inc()
        report = SyncReport(key, actions={})
        result: RenderResult | None = None
        error: Exception | None = None
        wrote: list[str] = []
        rendered = started
        try:
            result = self._render(key, prom)
            rendered = time.monotonic()
            writes = self.writer.write(prom, result)
            report.actions, report.writes, wrote = writes.actions, writes.total, writes.objects
        except OwnerGone:
            log.info("Prometheus deleted during the sync; nothing created", **fields(key=key))
            return SyncReport(key, skipped="deleted")
        except RetryLater:
            raise  # transient (our cache is behind): not a failure worth a status condition
        except Exception as exc:  # noqa: BLE001 - reported in status, then retried by the caller
            error = exc
            self.metrics.reconcile_errors.labels("prometheus").inc()
        finally:
            self.metrics.reconcile_duration.labels("prometheus").observe(time.monotonic() - started)
        # feedback: handed over to the reporter's queue; this sync does not wait for it
        reason = getattr(error, "reason", "") if error is not None else ""  # e.g. ConfigTooLarge
        if result is not None and not any(d.selected for d in result.selection):
            reason = "NoSelectedResources"
        mode = fast_reload.mode(prom, self.options) if fast_reload.requested(prom, self.options) else None
        self.reporter.status(key, Outcome(str(error) if error else None, reason,
                                          reload_mode=(mode.fast, mode.reason, mode.message) if mode else None))
        ns, name = _key(prom)
        if result is not None:
            selected, rejected = _counts(result)
            if error is None:
                self._feedback(prom, result, report, selected, rejected)
            self.metrics.record_sync(ns, name, error is None, prom.get("spec") or {},
                                     selected={k: selected[k] - rejected.get(k, 0) for k in selected},
                                     rejected=rejected)
        else:
            self.metrics.record_sync(ns, name, False, prom.get("spec") or {})
        if error is not None:
            raise error
        with self._lock:
            self._synced[key] = _identity(prom)
        log.info("synced", **fields(
            key=key, cause=cause or "resync", jobs=result.job_count if result else 0,
            accepted=report.selected, rejected=report.rejected, writes=report.writes,
            wrote="; ".join(wrote) if wrote else "nothing (unchanged)",
            ms=round((time.monotonic() - started) * 1000), render_ms=round((rendered - started) * 1000)))
        return report

    # ---- render -----------------------------------------------------------------------

    def _render(self, key: str, prom: dict) -> RenderResult:
        inputs = RenderInputs(
            prometheus=prom,
            service_monitors=self._candidates("ServiceMonitor"),
            pod_monitors=self._candidates("PodMonitor"),
            prometheus_rules=self._candidates("PrometheusRule"),
            probes=self._candidates("Probe"),
            scrape_configs=self._candidates("ScrapeConfig"),
            namespaces=[n for n in self.stores.namespaces.list() if self.namespace_allowed(_key(n)[1])],
            options=self.options,
            config_parts=self._config_parts(prom),
        )
        with self._lock:
            cache = self._render_caches.get(key)
            if cache is None:
                cache = self._render_caches[key] = self._cache_factory()
                if self.render_pool is not None and hasattr(cache, "offload"):
                    from promop.operator.render_pool import fragment_from

                    cache.offload, cache.from_answer = self.render_pool.offload, fragment_from
                    cache.offload_min = 2 * self.render_pool.min_batch
        refs = self.references_of(inputs, cache=cache)  # the cache memoises selection and per-monitor refs
        secrets: dict[tuple[str, str], dict] = {}
        configmaps: dict[tuple[str, str], dict] = {}
        for ref in refs:
            target = secrets if ref.kind == "Secret" else configmaps
            try:
                target[(ref.namespace, ref.name)] = self.client.get(BY_KIND[ref.kind], ref.name, ref.namespace)
            except NotFound:
                pass  # the renderer rejects what needs it, and says so
            except Forbidden as exc:  # one unreadable Secret must not fail every other monitor
                log.warning("cannot read a referenced object; treating it as missing",
                            **fields(key=key, object=str(ref), error=str(exc)))
        inputs.secrets, inputs.configmaps = secrets, configmaps
        with self._lock:
            self.references[key] = {(r.kind, r.namespace, r.name) for r in refs}
            # the previous result (its whole config text among it) is not kept alive through the
            # render of the next: at 10,000 monitors that is tens of MiB more at the peak. A failed
            # render leaves none, as a failed sync already made sync_status do a full sync.
            self.last_result.pop(key, None)
        result = self.render(inputs, cache=cache)
        with self._lock:
            self.last_result[key] = result
        return result

    def _config_parts(self, prom: dict) -> int:
        """How many config part Secrets this Prometheus has now (promop.render.split keeps that count)."""
        ns, _ = _key(prom)
        return len([o for o in self.stores.secrets.list() if _key(o)[0] == ns
                    and split.part_index(prom, _key(o)[1]) is not None])

    def _candidates(self, kind: str) -> list[dict]:
        store = self.stores.monitors.get(kind)
        # status-only changes (our bindings writes) keep the version the render cache knows
        return self._stable.views(kind, store.list()) if store is not None else []

    # ---- feedback (queued, written by the reporter's workers) -------------------------------

    def _feedback(self, prom: dict, result: RenderResult, report: SyncReport,
                  selected: dict[str, int], rejected: dict[str, int]) -> None:
        report.rejected = sum(rejected.values())
        report.selected = sum(selected.values()) - report.rejected
        self.reporter.judged("/".join(_key(prom)), result.selection, result.rejected)
        for problems, rejected in ((result.rejected, True), (result.warnings, False)):
            for (kind, ns, name), note in feedback.problem_events(problems, rejected):
                obj = prom if kind == "Prometheus" else (
                    self.stores.monitors[kind].get(f"{ns}/{name}") if kind in self.stores.monitors else None)
                if obj is None:
                    continue
                reason = feedback.INVALID if rejected else "UnsupportedConfiguration"
                if self.reporter.event(obj, kind, reason, note):
                    log.warning("skipping object" if rejected else "object uses unsupported fields",
                                **fields(kind=kind, object=f"{ns}/{name}", prometheus="/".join(_key(prom)),
                                         note=note))

    # ---- deletion -------------------------------------------------------------------------

    def _deleted(self, key: str) -> None:
        """The Prometheus is gone: owned objects go by garbage collection; drop our bindings."""
        ns, _, name = key.partition("/")
        self.metrics.forget(ns, name)
        self.last_report.pop(key, None)
        self.writer.forget(ns, name)
        with self._lock:
            self.references.pop(key, None)
            self._synced.pop(key, None)
            self.last_result.pop(key, None)
            self._render_caches.pop(key, None)
        self.reporter.forget_prometheus(ns, name)


def _identity(prom: Mapping[str, Any]) -> tuple:
    """What a status-only refresh needs unchanged since the last full sync: the same object, spec
    generation, labels and annotations, and not being deleted."""
    md = prom.get("metadata") or {}
    return (md.get("uid"), md.get("generation"), fingerprint(md.get("labels") or {}),
            fingerprint(md.get("annotations") or {}), bool(md.get("deletionTimestamp")))


def _counts(result: RenderResult) -> tuple[dict[str, int], dict[str, int]]:
    """Selected and rejected objects per kind, in one pass (a sync may see thousands)."""
    selected = dict.fromkeys(MONITOR_RESOURCES, 0)
    for d in result.selection:
        if d.selected and d.kind in selected:
            selected[d.kind] += 1
    rejected: dict[str, int] = {}
    for kind, _, _ in {(p.kind, p.namespace, p.name) for p in result.rejected}:
        rejected[kind] = rejected.get(kind, 0) + 1
    return selected, rejected
