"""sync(key): one Alertmanager from the caches to the API, writing only what differs.

Order (upstream's): paused check; render (selection, per-object rejection,
the configuration); generated config Secret, TLS asset Secrets (stale shards
deleted), web and cluster TLS config Secrets; the governing Service (owner
references merged across the namespace's Alertmanagers); the StatefulSet
(skipped when its input hash is unchanged); feedback on AlertmanagerConfigs
(status.bindings, Events for rejections); the Alertmanager status.

A configuration error of the Alertmanager itself (its base config, its global
AlertmanagerConfig, its version) writes nothing: the previous generated Secret
stays and the status says why, as upstream. Referenced Secret/ConfigMap
content is read with direct GETs (the informers hold metadata only).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, Conflict, Forbidden, NotFound
from promop.kube.resources import CONFIGMAPS, EVENTS, SECRETS, SERVICES, STATEFULSETS, Resource
from promop.operator import feedback
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS, CONTROLLER
from promop.operator.alertmanager.status import alertmanager_status, desired_bindings, status_changed
from promop.operator.apply import UNCHANGED, Applier, RetryLater
from promop.operator.diff import input_hash
from promop.host.logs import fields
from promop.operator.metrics import OperatorMetrics
from promop.operator.status import keep_transition_times, now_rfc3339
from promop.render.alertmanager.cache import AMRenderCache
from promop.render.alertmanager.model import AMRenderInputs, AMRenderOptions, AMRenderResult
from promop.render.alertmanager.pipeline import references, render

log = logging.getLogger("promop.operator.alertmanager")

BY_KIND: dict[str, Resource] = {"Secret": SECRETS, "ConfigMap": CONFIGMAPS, "Service": SERVICES,
                                "StatefulSet": STATEFULSETS}
_TLS_SHARD = re.compile(r"-tls-assets-\d+$")


class OwnerGone(Exception):
    """The Alertmanager was deleted while our cache still had it."""


@dataclass
class Stores:
    alertmanagers: Any
    alertmanagerconfigs: Any
    namespaces: Any
    statefulsets: Any
    secrets: Any
    configmaps: Any = None


@dataclass
class SyncReport:
    key: str
    skipped: str = ""
    writes: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    selected: int = 0
    rejected: int = 0
    error: str = ""


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return md.get("namespace") or "", md.get("name") or ""


def _rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def _owned_by(obj: Mapping[str, Any], am: Mapping[str, Any]) -> bool:
    uid = (am.get("metadata") or {}).get("uid")
    return any(r.get("uid") == uid and r.get("kind") == "Alertmanager"
               for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


class AlertmanagerSyncer:
    """Reconciles one Alertmanager per call; safe for concurrent calls on different keys."""

    def __init__(self, client: KubeClient, stores: Stores, options: AMRenderOptions, metrics: OperatorMetrics,
                 namespace_allowed: Callable[[str], bool] = lambda ns: True,
                 now: Callable[[], str] = now_rfc3339) -> None:
        self.client = client
        self.stores = stores
        self.options = options
        self.metrics = metrics
        self.namespace_allowed = namespace_allowed
        self.now = now
        self.applier = Applier(client, on_sts_recreate=lambda: metrics.sts_delete_create.labels(CONTROLLER).inc())
        self.events = feedback.EventDeduper()
        self._lock = threading.Lock()
        self.references: dict[str, set[tuple[str, str, str]]] = {}  # key -> (kind, ns, name) its last sync read
        self.last_result: dict[str, AMRenderResult] = {}
        self.last_report: dict[str, SyncReport] = {}
        self._counts: dict[str, tuple[int, int]] = {}  # key -> (selected, rejected) AlertmanagerConfigs
        self._ok: dict[str, bool] = {}  # key -> whether its last sync succeeded
        self._written: dict[tuple, tuple[str, str, Any]] = {}  # memo key -> (cached rv, our new rv, what we wrote)
        self._caches: dict[str, AMRenderCache] = {}
        self._contents: dict[tuple[str, str, str], dict] = {}  # referenced Secret/ConfigMap content by rv  # per Alertmanager: unchanged AlertmanagerConfigs are reused

    def sync(self, key: str) -> SyncReport:
        try:
            report = self._sync(key)
        except Exception:
            self.last_report[key] = SyncReport(key, skipped="failed")
            raise
        self.last_report[key] = report
        return report

    def _sync(self, key: str) -> SyncReport:
        am = self.stores.alertmanagers.get(key)
        if am is None:
            self._deleted(key)
            return SyncReport(key, skipped="deleted")
        if (am.get("metadata") or {}).get("deletionTimestamp"):
            return SyncReport(key, skipped="deleting")
        if (am.get("spec") or {}).get("paused"):
            log.info("paused: no action taken", **fields(key=key))
            return SyncReport(key, skipped="paused")
        started = time.monotonic()
        self.metrics.reconcile_operations.labels(CONTROLLER).inc()
        report = SyncReport(key)
        error: Exception | None = None
        result: AMRenderResult | None = None
        try:
            result = self._render(key, am)
            if result.fatal is None:
                self._write_all(am, result, report)
            else:
                report.error = str(result.fatal)
                self._event(am, "Alertmanager", "ReconciliationFailed",
                            f"no configuration generated (the previous one stays): {result.fatal}")
            self._feedback(am, result, report)
        except OwnerGone:
            return SyncReport(key, skipped="deleted")
        except RetryLater:
            raise
        except Exception as exc:  # noqa: BLE001 - reported in status, then retried
            error = exc
            self.metrics.reconcile_errors.labels(CONTROLLER).inc()
        finally:
            self.metrics.reconcile_duration.labels(CONTROLLER).observe(time.monotonic() - started)
        message = str(error) if error else (str(result.fatal) if result is not None and result.fatal else None)
        try:
            self._update_status(am, message, result)
        except ApiError as exc:
            error = error or exc
        self._record(key, am, result, ok=message is None)
        if error is not None:
            raise error
        return report

    # ---- render ---------------------------------------------------------------------

    def _render(self, key: str, am: dict) -> AMRenderResult:
        inputs = AMRenderInputs(
            alertmanager=am,
            alertmanager_configs=self.stores.alertmanagerconfigs.list(),
            namespaces=[n for n in self.stores.namespaces.list() if self.namespace_allowed(_key(n)[1])],
            options=self.options,
        )
        with self._lock:
            cache = self._caches.setdefault(key, AMRenderCache())
        refs = references(inputs, cache=cache)
        secrets: dict[tuple[str, str], dict] = {}
        configmaps: dict[tuple[str, str], dict] = {}
        for ref in sorted(refs, key=lambda r: (r.kind, r.namespace, r.name)):
            target = secrets if ref.kind == "Secret" else configmaps
            obj = self._content(key, ref)
            if obj is not None:
                target[(ref.namespace, ref.name)] = obj
        inputs.secrets, inputs.configmaps = secrets, configmaps
        result = render(inputs, cache=cache)
        with self._lock:
            self.references[key] = {(r.kind, r.namespace, r.name) for r in refs}
            self.last_result[key] = result
        return result

    def _content(self, key: str, ref: Any) -> dict | None:
        """A referenced Secret/ConfigMap with its data: a direct GET, unless the metadata informer shows the
        resourceVersion we last read (then that content is still current)."""
        store = self.stores.secrets if ref.kind == "Secret" else self.stores.configmaps
        meta = store.get(f"{ref.namespace}/{ref.name}") if store is not None else None
        memo_key = (ref.kind, ref.namespace, ref.name)
        with self._lock:
            known = self._contents.get(memo_key)
        if meta is not None and known is not None and _rv(known) == _rv(meta):
            return known
        try:
            obj = self.client.get(BY_KIND[ref.kind], ref.name, ref.namespace)
        except NotFound:
            return None  # the renderer rejects what needs it, and says so
        except Forbidden as exc:
            log.warning("cannot read a referenced object; treating it as missing",
                        **fields(key=key, object=str(ref), error=str(exc)))
            return None
        with self._lock:
            if len(self._contents) > 50_000:
                self._contents.clear()
            self._contents[memo_key] = obj
        return obj

    # ---- writes ---------------------------------------------------------------------

    def _count(self, report: SyncReport, applied: Any) -> None:
        action = getattr(applied, "action", applied)  # Applier.apply returns an Applied (was: the action string)
        report.actions[action] = report.actions.get(action, 0) + 1
        if action != UNCHANGED:
            report.writes += 1

    def _owner_check(self, am: dict) -> Callable[[], None]:
        ns, name = _key(am)
        uid = (am.get("metadata") or {}).get("uid")

        def check() -> None:
            try:
                live = self.client.get(ALERTMANAGERS, name, ns)
            except NotFound:
                raise OwnerGone(f"{ns}/{name}") from None
            md = live.get("metadata") or {}
            if md.get("uid") != uid or md.get("deletionTimestamp"):
                raise OwnerGone(f"{ns}/{name}")
        return check

    def _get(self, res: Resource, name: str, ns: str) -> dict | None:
        try:
            return self.client.get(res, name, ns)
        except NotFound:
            return None

    def _write_all(self, am: dict, result: AMRenderResult, report: SyncReport) -> None:
        ns, name = _key(am)
        check = self._owner_check(am)
        wanted_secrets = set()
        for obj in result.objects():
            kind = obj["kind"]
            if kind == "StatefulSet":
                continue
            if kind == "Secret":
                wanted_secrets.add(obj["metadata"]["name"])
            current = self._get(BY_KIND[kind], obj["metadata"]["name"], ns)
            if kind == "Service" and current is not None:
                obj = _merge_owners(obj, current)
            self._count(report, self.applier.apply(BY_KIND[kind], obj, current, before_create=check))
        prefix = f"alertmanager-{name}"
        for meta in self.stores.secrets.list():
            o_ns, o_name = _key(meta)
            m = _TLS_SHARD.search(o_name)
            if (o_ns == ns and m and o_name[: m.start()] == prefix and o_name not in wanted_secrets
                    and _owned_by(meta, am)):
                if self.applier.delete(SECRETS, o_name, ns):
                    self._count(report, "deleted")
        sts = result.statefulset
        current = self.stores.statefulsets.get(f"{ns}/{sts['metadata']['name']}")
        memo_key = ("sts", ns, sts["metadata"]["name"])
        known, _ = self._as_written(memo_key, current, input_hash(current))
        if known is not None and known == input_hash(sts):
            self._count(report, UNCHANGED)  # also when the cache has not shown our own write yet
        else:
            with self._lock:
                pending = self._written.get(memo_key)
            if pending is not None and pending[0] == _rv(current):
                raise RetryLater(f"StatefulSet {ns}/{sts['metadata']['name']}: our last write is not in the cache yet")
            applied = self.applier.apply(STATEFULSETS, sts, current, refetch=False, before_create=check)
            if applied.action != UNCHANGED and applied.after is not None:  # what the server answered to our write
                self._remember(memo_key, current, applied.after, input_hash(applied.after))
            self._count(report, applied)

    # ---- feedback -------------------------------------------------------------------

    def _event(self, obj: dict, kind: str, reason: str, note: str) -> None:
        if not self.events.should_emit(obj, reason, note):
            return
        ns, name = _key(obj)
        log.warning(note, **fields(kind=kind, object=f"{ns}/{name}"))
        api_version = ALERTMANAGERCONFIGS.api_version if kind == "AlertmanagerConfig" else ALERTMANAGERS.api_version
        try:
            self.client.create(EVENTS, feedback.event_for(obj, api_version, kind, reason, note, "Warning", self.now()), ns)
        except ApiError as exc:
            log.warning("cannot record event", **fields(object=f"{ns}/{name}", error=str(exc)))

    def _feedback(self, am: dict, result: AMRenderResult, report: SyncReport) -> None:
        ns, name = _key(am)
        problems: dict[tuple[str, str], list[str]] = {}
        for p in result.rejected:
            problems.setdefault((p.namespace, p.name), []).append(f"{p.field}: {p.message}")
        selected = {(d.namespace, d.name) for d in result.selection if d.selected}
        report.selected = len(selected - set(problems))
        report.rejected = len(selected & set(problems))
        now = self.now()
        conflicts = 0
        for obj in self.stores.alertmanagerconfigs.list():
            key = _key(obj)
            verdict = None
            if key in selected and result.fatal is None:
                msgs = problems.get(key)
                verdict = (False, "; ".join(msgs)) if msgs else (True, "")
            elif key in selected:
                continue  # nothing was generated: keep what the last good sync said
            if msgs_for := problems.get(key):
                self._event(obj, "AlertmanagerConfig", feedback.INVALID,
                            f"AlertmanagerConfig {key[1]} was rejected due to invalid configuration "
                            f"(Alertmanager {ns}/{name}): {'; '.join(msgs_for)}")
            conflicts += not self._write_bindings(obj, am, verdict, now)
        if conflicts:
            raise RetryLater(f"{conflicts} AlertmanagerConfig status writes conflicted; retrying")

    def _write_bindings(self, obj: dict, am: dict, verdict: tuple[bool, str] | None, now: str) -> bool:
        """Write `obj`'s status.bindings if they change; False on a conflict (the caller requeues)."""
        ns, name = _key(obj)
        memo_key = ("bindings", ns, name, "/".join(_key(am)))
        current, base_rv = self._as_written(memo_key, obj, ((obj.get("status") or {}).get("bindings")) or [])
        bindings = desired_bindings({**obj, "status": {"bindings": current}}, am, verdict, now)
        if list(current) == bindings:
            return True
        body = {**obj, "metadata": {**obj["metadata"], "resourceVersion": base_rv},
                "status": {**(obj.get("status") or {}), "bindings": bindings}}
        try:
            written = self.client.update(ALERTMANAGERCONFIGS, body, subresource="status")
        except Conflict:
            return False
        except NotFound:
            return True
        self._remember(memo_key, obj, written, bindings)
        return True

    def _as_written(self, memo_key: tuple, cached: Mapping[str, Any], value: Any) -> tuple[Any, str]:
        """(what the object holds, the resourceVersion to write over): our last write when the informer cache
        has not caught up with it yet (writing over the stale copy would only conflict), else the cache."""
        rv = _rv(cached)
        with self._lock:
            memo = self._written.get(memo_key)
        if memo is not None and memo[0] == rv:
            return memo[2], memo[1]
        return value, rv

    def _remember(self, memo_key: tuple, based_on: Mapping[str, Any], written: Mapping[str, Any], value: Any) -> None:
        with self._lock:
            old = self._written.get(memo_key)
            base = old[0] if old is not None and old[0] == _rv(based_on) else _rv(based_on)
            self._written[memo_key] = (base, _rv(written), value)

    # ---- status ---------------------------------------------------------------------

    def _update_status(self, am: dict, error: str | None, result: AMRenderResult | None) -> None:
        ns, name = _key(am)
        sts = self.stores.statefulsets.get(f"{ns}/alertmanager-{name}")
        reason = message = ""
        if result is not None and not error:
            deprecated = [w.message for w in result.warnings if w.field in ("spec.baseImage", "spec.tag", "spec.sha")]
            if deprecated:
                reason, message = "DeprecatedFieldsInUse", "; ".join(deprecated)
        desired = alertmanager_status(am, sts, error=error, reconciled_reason=reason, reconciled_message=message,
                                      now=self.now())
        memo_key = ("status", ns, name)
        current, base_rv = self._as_written(memo_key, am, am.get("status"))
        desired = {**desired, "conditions": keep_transition_times((current or {}).get("conditions"),
                                                                  desired["conditions"])}
        if not status_changed(current, desired):
            return
        self.metrics.status_updates.labels(CONTROLLER).inc()
        try:
            written = self.client.update(ALERTMANAGERS, {**am, "metadata": {**am["metadata"], "resourceVersion": base_rv},
                                                         "status": desired}, subresource="status")
        except Conflict:
            raise RetryLater(f"status of Alertmanager {ns}/{name}: our cached copy is outdated") from None
        except NotFound:
            return
        except ApiError:
            self.metrics.status_update_errors.labels(CONTROLLER).inc()
            raise
        self._remember(memo_key, am, written, desired)

    def _record(self, key: str, am: dict, result: AMRenderResult | None, ok: bool) -> None:
        ns, name = _key(am)
        spec = am.get("spec") or {}
        value = spec.get("replicas")
        self.metrics.spec_replicas.labels(CONTROLLER, ns, name).set(value if isinstance(value, int) else 1)
        with self._lock:
            if result is not None:
                bad = {(p.namespace, p.name) for p in result.rejected}
                chosen = {(d.namespace, d.name) for d in result.selection if d.selected}
                self._counts[key] = (len(chosen - bad), len(chosen & bad))
            self._ok[key] = ok
            self._refresh_gauges()

    def _refresh_gauges(self) -> None:
        selected = sum(s for s, _ in self._counts.values())
        rejected = sum(r for _, r in self._counts.values())
        self.metrics.managed.labels(CONTROLLER, "AlertmanagerConfig", "selected").set(selected)
        self.metrics.managed.labels(CONTROLLER, "AlertmanagerConfig", "rejected").set(rejected)
        self.metrics.syncs.labels(CONTROLLER, "ok").set(sum(1 for v in self._ok.values() if v))
        self.metrics.syncs.labels(CONTROLLER, "failed").set(sum(1 for v in self._ok.values() if not v))

    # ---- deletion -------------------------------------------------------------------

    def _deleted(self, key: str) -> None:
        """Owned objects go by garbage collection; we drop our bindings and metrics."""
        ns, _, name = key.partition("/")
        with self._lock:
            self.references.pop(key, None)
            self.last_result.pop(key, None)
            self._counts.pop(key, None)
            self._ok.pop(key, None)
            self._caches.pop(key, None)
            self._refresh_gauges()
        try:
            self.metrics.spec_replicas.remove(CONTROLLER, ns, name)
        except KeyError:
            pass
        ghost = {"metadata": {"namespace": ns, "name": name}}
        conflicts = 0
        for obj in self.stores.alertmanagerconfigs.list():
            conflicts += not self._write_bindings(obj, ghost, None, self.now())
        if conflicts:
            raise RetryLater(f"removing bindings of deleted Alertmanager {key}: {conflicts} conflicts")


def _merge_owners(desired: dict, current: Mapping[str, Any]) -> dict:
    """The shared Service keeps every Alertmanager's (non-controller) owner reference."""
    refs = list((current.get("metadata") or {}).get("ownerReferences") or [])
    uids = {r.get("uid") for r in refs}
    refs += [r for r in desired["metadata"].get("ownerReferences") or [] if r.get("uid") not in uids]
    return {**desired, "metadata": {**desired["metadata"], "ownerReferences": refs}}
