"""sync(key): one Prometheus from the caches to the API, writing only what differs.

Order (upstream's): paused check; select and render; rule ConfigMaps (changed
ones first, then stale ones deleted); config Secret, TLS asset Secrets and
other Secrets; the governing Service; one StatefulSet per shard, then excess
shards deleted; feedback on monitors and rules; the Prometheus status.

Secret/ConfigMap informers hold metadata only, so the content a render needs
(`references`) is read with direct GETs for each sync.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, Conflict, Forbidden, NotFound
from promop.kube.resources import (CONFIGMAPS, EVENTS, PODMONITORS, PROMETHEUSES, PROMETHEUSRULES, SECRETS,
                                   SERVICEMONITORS, SERVICES, STATEFULSETS, Resource)
from promop.operator import feedback
from promop.operator.apply import UNCHANGED, UPDATED, Applier, RetryLater
from promop.operator.diff import input_hash
from promop.operator.logs import fields
from promop.operator.metrics import OperatorMetrics
from promop.operator.status import now_rfc3339, prometheus_status, shard_count, status_changed
from promop.render.model import RenderInputs, RenderOptions, RenderResult

log = logging.getLogger("promop.operator.sync")

BY_KIND: dict[str, Resource] = {
    "Secret": SECRETS, "ConfigMap": CONFIGMAPS, "Service": SERVICES, "StatefulSet": STATEFULSETS,
}
MONITOR_RESOURCES: dict[str, Resource] = {
    "ServiceMonitor": SERVICEMONITORS, "PodMonitor": PODMONITORS, "PrometheusRule": PROMETHEUSRULES,
}
_TLS_SHARD = re.compile(r"-tls-assets-\d+$")
_STS_SHARD = re.compile(r"^(?:-shard-\d+)?$")


class OwnerGone(Exception):
    """The Prometheus was deleted while our cache still had it: creating objects for it would leak them."""


class Stores:
    """The informer caches sync reads (each a promop.kube.store.Store or anything with get/list)."""

    def __init__(self, prometheuses: Any, servicemonitors: Any, podmonitors: Any, prometheusrules: Any,
                 namespaces: Any, statefulsets: Any, secrets: Any, configmaps: Any) -> None:
        self.prometheuses = prometheuses
        self.monitors = {"ServiceMonitor": servicemonitors, "PodMonitor": podmonitors,
                         "PrometheusRule": prometheusrules}
        self.namespaces = namespaces
        self.statefulsets = statefulsets
        self.secrets = secrets
        self.configmaps = configmaps


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
                 now: Callable[[], str] = now_rfc3339, cache_factory: Callable[[], Any] | None = None) -> None:
        self.client = client
        self.stores = stores
        self.options = options
        self.metrics = metrics
        self.render = render
        self.references_of = references
        self.namespace_allowed = namespace_allowed
        self.now = now
        self.applier = Applier(client, on_sts_recreate=lambda: metrics.sts_delete_create.labels("prometheus").inc(),
                               on_written=self._own_write)
        # (kind, ns, name, resourceVersion) of our latest writes: their watch events need no sync
        self._own_writes: dict[tuple[str, str, str], str] = {}
        self.events = feedback.EventDeduper()
        # (what, ns, name[, prometheus]) -> (resourceVersion our write was based on, what we wrote):
        # until the informer delivers our own write, the cache still shows the old object, and
        # a sync in that window must not write the same thing again (a 409 at best).
        self._memo: dict[tuple, tuple[str, Any]] = {}
        # (kind, ns, name) -> (resourceVersion, fingerprint of the desired object it matched)
        self._content: dict[tuple[str, str, str], tuple[str, str]] = {}
        self._lock = threading.Lock()
        self.references: dict[str, set[tuple[str, str, str]]] = {}  # key -> (kind, ns, name) it read
        self.last_result: dict[str, RenderResult] = {}
        self.last_report: dict[str, SyncReport] = {}  # key -> what its last finished sync did
        self._synced: dict[str, tuple] = {}  # key -> _identity() of the Prometheus its last good sync saw
        self._render_caches: dict[str, Any] = {}  # per key: a cache is not shared between workers
        if cache_factory is None:
            from promop.render import RenderCache as cache_factory
        self._cache_factory = cache_factory

    # ---- entry point ------------------------------------------------------------------

    def sync(self, key: str) -> SyncReport:
        try:
            report = self._sync(key)
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
            return self.sync(key)  # also when the Prometheus changed since its last sync (event not yet seen)
        report = SyncReport(key, skipped="status only")
        report.writes = int(self._update_status(key, prom, result, None))
        return report

    def _sync(self, key: str) -> SyncReport:
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
        try:
            result = self._render(key, prom)
            self._write_all(prom, result, report)
            self._feedback(prom, result, report)
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
        try:
            self._update_status(key, prom, result, error)
        except (ApiError, RetryLater) as exc:
            error = error or exc
        ns, name = _key(prom)
        if result is not None:
            self.metrics.record_sync(ns, name, error is None, prom.get("spec") or {},
                                     selected=_count_selected(result), rejected=_count_rejected(result))
        else:
            self.metrics.record_sync(ns, name, False, prom.get("spec") or {})
        if error is not None:
            raise error
        with self._lock:
            self._synced[key] = _identity(prom)
        log.debug("synced", **fields(key=key, writes=report.writes, **(report.actions or {})))
        return report

    # ---- render -----------------------------------------------------------------------

    def _render(self, key: str, prom: dict) -> RenderResult:
        inputs = RenderInputs(
            prometheus=prom,
            service_monitors=self._candidates("ServiceMonitor"),
            pod_monitors=self._candidates("PodMonitor"),
            prometheus_rules=self._candidates("PrometheusRule"),
            namespaces=[n for n in self.stores.namespaces.list() if self.namespace_allowed(_key(n)[1])],
            options=self.options,
        )
        with self._lock:
            cache = self._render_caches.get(key)
            if cache is None:
                cache = self._render_caches[key] = self._cache_factory()
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
        result = self.render(inputs, cache=cache)
        with self._lock:
            self.last_result[key] = result
        return result

    def _candidates(self, kind: str) -> list[dict]:
        return self.stores.monitors[kind].list()

    # ---- writes -----------------------------------------------------------------------

    def _count(self, report: SyncReport, action: str) -> None:
        report.actions[action] = report.actions.get(action, 0) + 1  # type: ignore[index]
        if action != UNCHANGED:
            report.writes += 1

    def _owner_check(self, prom: dict) -> Callable[[], None]:
        """Run before each create: is this Prometheus (same uid) still there? A direct GET, because
        the cache may lag behind a deletion whose garbage collection already ran; creating then
        would leak objects owned by nothing. Creates are rare, so the GET is cheap."""
        ns, name = _key(prom)
        uid = (prom.get("metadata") or {}).get("uid")

        def check() -> None:
            try:
                live = self.client.get(PROMETHEUSES, name, ns)
            except NotFound:
                raise OwnerGone(f"{ns}/{name}") from None
            md = live.get("metadata") or {}
            if md.get("uid") != uid or md.get("deletionTimestamp"):
                raise OwnerGone(f"{ns}/{name}")
        return check

    def _write_all(self, prom: dict, result: RenderResult, report: SyncReport) -> None:
        ns, name = _key(prom)
        check = self._owner_check(prom)
        self._write_rule_configmaps(prom, result.rule_configmaps, report, check)
        desired_secret_names = set()
        for obj in result.objects():
            kind = obj.get("kind")
            if kind == "Secret":
                desired_secret_names.add(obj["metadata"]["name"])
            if kind in ("ConfigMap", "StatefulSet"):
                continue
            if obj is result.config_secret and getattr(result, "config_unmanaged", False):
                # unmanaged config: the user owns the Secret; we only create it when absent
                if self._get(SECRETS, obj["metadata"]["name"], ns) is None:
                    self._count(report, self.applier.apply(SECRETS, obj, None, before_create=check))
                continue
            self._apply_known(BY_KIND[kind], obj, report, check)
        self._delete_stale_tls(prom, desired_secret_names, report)
        self._write_statefulsets(prom, result.statefulsets, report, check)

    def _meta_store(self, res: Resource) -> Any:
        return {"Secret": self.stores.secrets, "ConfigMap": self.stores.configmaps}.get(res.kind)

    def _apply_known(self, res: Resource, obj: dict, report: SyncReport, check: Callable[[], None]) -> None:
        """Apply `obj`, skipping even the GET when the metadata cache shows the version we last wrote
        or compared with, and `obj` is what we wanted then (so nothing can differ)."""
        ns, name = _key(obj)
        key = (res.kind, ns, name)
        fingerprint = _fingerprint(obj)
        store = self._meta_store(res)
        meta = store.get(f"{ns}/{name}") if store is not None else None
        with self._lock:
            known = self._content.get(key)
        if meta is not None and known == (_rv(meta), fingerprint):
            self._count(report, UNCHANGED)
            return
        current = self._get(res, name, ns)
        action = self.applier.apply(res, obj, current, before_create=check)
        with self._lock:
            rv = self._own_writes.get(key) if action != UNCHANGED else _rv(current)
            if rv:
                self._content[key] = (rv, fingerprint)
        self._count(report, action)

    def _write_rule_configmaps(self, prom: dict, desired: list[dict], report: SyncReport,
                               check: Callable[[], None]) -> None:
        """Changed ConfigMaps first, then stale ones deleted (upstream's order).

        The metadata cache says which exist; content is read only for those that may differ."""
        ns, name = _key(prom)
        cached = {_key(o)[1] for o in self.stores.configmaps.list()
                  if _key(o)[0] == ns and ((o.get("metadata") or {}).get("labels") or {}).get("prometheus-name") == name
                  and _owned_by(o, prom)}
        for obj in desired:
            self._apply_known(CONFIGMAPS, obj, report, check)
        wanted = {o["metadata"]["name"] for o in desired}
        for stale in sorted(cached - wanted):
            if self.applier.delete(CONFIGMAPS, stale, ns):
                self._count(report, "deleted")

    def _delete_stale_tls(self, prom: dict, desired: set[str], report: SyncReport) -> None:
        ns, name = _key(prom)
        prefix = f"prometheus-{name}"
        for obj in self.stores.secrets.list():
            o_ns, o_name = _key(obj)
            if (o_ns == ns and o_name.startswith(prefix) and _TLS_SHARD.search(o_name)
                    and o_name[: _TLS_SHARD.search(o_name).start()] == prefix
                    and o_name not in desired and _owned_by(obj, prom)):
                if self.applier.delete(SECRETS, o_name, ns):
                    self._count(report, "deleted")

    def _write_statefulsets(self, prom: dict, desired: list[dict], report: SyncReport,
                            check: Callable[[], None]) -> None:
        ns, name = _key(prom)
        for obj in desired:
            current = self.stores.statefulsets.get(f"{ns}/{obj['metadata']['name']}")
            # read from the cache: on a conflict, wait for the informer rather than GET (no get verb needed)
            memo = ("sts", ns, obj["metadata"]["name"])
            pending = self._written_over(memo, current)
            if pending == input_hash(obj):
                self._count(report, UNCHANGED)
                continue
            if pending is not _NOTHING:
                raise RetryLater(f"StatefulSet {ns}/{obj['metadata']['name']}: our last write is not in the cache yet")
            action = self.applier.apply(STATEFULSETS, obj, current, refetch=False, before_create=check)
            if action == UPDATED:
                self._wrote(memo, current, input_hash(obj))
            self._count(report, action)
        wanted = {o["metadata"]["name"] for o in desired}
        prefix = f"prometheus-{name}"
        for obj in self.stores.statefulsets.list():
            o_ns, o_name = _key(obj)
            if (o_ns == ns and o_name not in wanted and o_name.startswith(prefix)
                    and _STS_SHARD.match(o_name[len(prefix):]) and _owned_by(obj, prom)):
                if self.applier.delete(STATEFULSETS, o_name, ns, propagation_policy="Foreground"):
                    self._count(report, "deleted")

    def _own_write(self, res: Resource, obj: dict) -> None:
        ns, name = _key(obj)
        with self._lock:
            self._own_writes[(res.kind, ns, name)] = _rv(obj)

    def is_own_write(self, kind: str, obj: Mapping[str, Any]) -> bool:
        """Is this watch event the echo of our own latest write of the object (same resourceVersion)?"""
        ns, name = _key(obj)
        with self._lock:
            return bool(_rv(obj)) and self._own_writes.get((kind, ns, name)) == _rv(obj)

    def _written_over(self, key: tuple, cached: Mapping[str, Any] | None) -> Any:
        """What we wrote over exactly this cached version (the cache has not caught up with our
        write yet), else _NOTHING. Until it catches up, the cache is no basis for a comparison:
        writing the same again would be a duplicate (a 409 at best), and a desired state equal
        to the stale cache would wrongly look done, losing the update."""
        with self._lock:
            memo = self._memo.get(key)
        if cached is None or memo is None or memo[0] != _rv(cached):
            return _NOTHING
        return memo[1]

    def _wrote(self, key: tuple, based_on: Mapping[str, Any] | None, content: Any) -> None:
        with self._lock:
            self._memo[key] = (_rv(based_on), content)

    def _get(self, res: Resource, name: str, ns: str) -> dict | None:
        try:
            return self.client.get(res, name, ns)
        except NotFound:
            return None

    # ---- feedback -----------------------------------------------------------------------

    def _feedback(self, prom: dict, result: RenderResult, report: SyncReport) -> None:
        verdicts = feedback.verdicts(result.selection, result.rejected)
        report.selected = sum(1 for v in verdicts.values() if v.accepted)
        report.rejected = sum(1 for v in verdicts.values() if not v.accepted)
        now = self.now()
        conflicts = 0
        for kind, store in self.stores.monitors.items():
            for obj in store.list():
                o_ns, o_name = _key(obj)
                verdict = verdicts.get((kind, o_ns, o_name))
                conflicts += not self._write_bindings(kind, obj, prom, verdict, now)
        self._emit_events(prom, result, now)
        if conflicts:
            raise RetryLater(f"{conflicts} status.bindings writes conflicted with newer objects; retrying")

    def _write_bindings(self, kind: str, obj: dict, prom: dict, verdict: feedback.Verdict | None, now: str) -> bool:
        """Write `obj`'s status.bindings if they change; False on a conflict (the caller requeues)."""
        o_ns, o_name = _key(obj)
        memo = ("bindings", kind, o_ns, o_name, "/".join(_key(prom)))
        pending = self._written_over(memo, obj)
        if pending is not _NOTHING:
            return pending == verdict  # False: our newer write is not cached yet; retry after it is
        if feedback.binding_current(obj, prom, verdict):
            return True
        bindings = feedback.desired_bindings(obj, prom, verdict, now)
        if not feedback.bindings_changed(obj, bindings):
            return True
        body = {**obj, "status": {**(obj.get("status") or {}), "bindings": bindings}}
        try:
            self.client.update(MONITOR_RESOURCES[kind], body, subresource="status")
            self._wrote(memo, obj, verdict)
        except Conflict:
            return False  # our cache is behind; the informer brings the new object before the retry
        except NotFound:
            pass
        return True

    def _emit_events(self, prom: dict, result: RenderResult, now: str) -> None:
        for problems, rejected in ((result.rejected, True), (result.warnings, False)):
            for (kind, ns, name), note in feedback.problem_events(problems, rejected):
                obj = prom if kind == "Prometheus" else (
                    self.stores.monitors[kind].get(f"{ns}/{name}") if kind in self.stores.monitors else None)
                if obj is None:
                    continue
                reason = feedback.INVALID if rejected else "UnsupportedConfiguration"
                if not self.events.should_emit(obj, reason, note):
                    continue
                log.warning("skipping object" if rejected else "object uses unsupported fields",
                            **fields(kind=kind, object=f"{ns}/{name}", prometheus="/".join(_key(prom)), note=note))
                event = feedback.event_for(obj, feedback.API_VERSION, kind, reason, note, "Warning", now)
                try:
                    self.client.create(EVENTS, event, ns)
                except ApiError as exc:
                    log.warning("cannot record event", **fields(object=f"{ns}/{name}", error=str(exc)))

    # ---- status -------------------------------------------------------------------------

    def _update_status(self, key: str, prom: dict, result: RenderResult | None, error: Exception | None) -> bool:
        """Write the Prometheus status if it changes; True when written."""
        ns, name = _key(prom)
        shards: dict[int, dict | None] = {}
        for shard in range(shard_count(prom)):
            sts_name = f"prometheus-{name}" + (f"-shard-{shard}" if shard else "")
            shards[shard] = self.stores.statefulsets.get(f"{ns}/{sts_name}")
        reason = ""
        if result is not None and not any(d.selected for d in result.selection):
            reason = "NoSelectedResources"
        desired = prometheus_status(prom, shards, error=str(error) if error else None,
                                    reconciled_reason=reason, now=self.now())
        memo = ("status", key)
        comparable = {k: v for k, v in desired.items() if k != "conditions"}, [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in desired["conditions"]]
        pending = self._written_over(memo, prom)
        if pending == comparable:
            return False
        if pending is not _NOTHING:
            raise RetryLater(f"status of Prometheus {key}: our last status write is not in the cache yet")
        if not status_changed(prom.get("status"), desired):
            return False
        self.metrics.status_updates.labels("prometheus").inc()
        try:
            self.client.update(PROMETHEUSES, {**prom, "status": desired}, subresource="status")
            self._wrote(memo, prom, comparable)
        except Conflict:
            raise RetryLater(f"status of Prometheus {key}: our cached copy is outdated; retrying") from None
        except NotFound:
            return False
        except ApiError:
            self.metrics.status_update_errors.labels("prometheus").inc()
            raise
        return True

    # ---- deletion -------------------------------------------------------------------------

    def _deleted(self, key: str) -> None:
        """The Prometheus is gone: owned objects go by garbage collection; drop our bindings."""
        ns, _, name = key.partition("/")
        self.metrics.forget(ns, name)
        self.last_report.pop(key, None)
        with self._lock:
            mine = [m for m in self._memo
                    if m[-1] == key or (m[0] == "sts" and m[1] == ns and m[2].startswith(f"prometheus-{name}"))]
            for memo in mine:
                del self._memo[memo]
            for content_key in [k for k in self._content if k[1] == ns and k[2].startswith(f"prometheus-{name}")]:
                del self._content[content_key]
        with self._lock:
            self.references.pop(key, None)
            self._synced.pop(key, None)
            self.last_result.pop(key, None)
            self._render_caches.pop(key, None)
        ghost = {"metadata": {"namespace": ns, "name": name}}
        now = self.now()
        conflicts = 0
        for kind, store in self.stores.monitors.items():
            for obj in store.list():
                conflicts += not self._write_bindings(kind, obj, ghost, None, now)
        if conflicts:
            raise RetryLater(f"removing bindings of deleted Prometheus {key}: {conflicts} conflicts; retrying")


_NOTHING = object()


def _identity(prom: Mapping[str, Any]) -> tuple:
    """What a status-only refresh needs unchanged since the last full sync: the same object, spec
    generation, labels and annotations, and not being deleted."""
    md = prom.get("metadata") or {}
    return (md.get("uid"), md.get("generation"), _fingerprint(md.get("labels") or {}),
            _fingerprint(md.get("annotations") or {}), bool(md.get("deletionTimestamp")))


def _fingerprint(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def _owned_by(obj: Mapping[str, Any], prom: Mapping[str, Any]) -> bool:
    uid = (prom.get("metadata") or {}).get("uid")
    return any(r.get("uid") == uid and r.get("kind") == "Prometheus"
               for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


def _count_selected(result: RenderResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for kind in MONITOR_RESOURCES:
        out[kind] = len(result.accepted(kind))
    return out


def _count_rejected(result: RenderResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in {(p.kind, p.namespace, p.name) for p in result.rejected}:
        out[p[0]] = out.get(p[0], 0) + 1
    return out
