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
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, Conflict, Forbidden, NotFound
from promop.kube.resources import SECRETS, STATEFULSETS
from promop.operator import feedback
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS, CONTROLLER
from promop.operator.alertmanager.status import alertmanager_status, desired_bindings
from promop.operator.apply import UNCHANGED, RetryLater
from promop.operator.diff import input_hash
from promop.host.logs import fields
from promop.operator.metrics import OperatorMetrics
from promop.operator.status import keep_transition_times, now_rfc3339
from promop.operator.workload.sync import SyncReport, WorkloadSyncer, ns_name, resource_version
from promop.operator.writer import BY_KIND
from promop.render.alertmanager.cache import AMRenderCache
from promop.render.alertmanager.model import AMRenderInputs, AMRenderOptions, AMRenderResult
from promop.render.alertmanager.pipeline import references, render

log = logging.getLogger("promop.operator.alertmanager")

_TLS_SHARD = re.compile(r"-tls-assets-\d+$")


@dataclass
class Stores:
    alertmanagers: Any
    alertmanagerconfigs: Any
    namespaces: Any
    statefulsets: Any
    secrets: Any
    configmaps: Any = None


class AlertmanagerSyncer(WorkloadSyncer):
    """Reconciles one Alertmanager per call; safe for concurrent calls on different keys."""

    kind = "Alertmanager"
    resource = ALERTMANAGERS
    controller = CONTROLLER
    log = log

    def __init__(self, client: KubeClient, stores: Stores, options: AMRenderOptions, metrics: OperatorMetrics,
                 namespace_allowed: Callable[[str], bool] = lambda ns: True,
                 now: Callable[[], str] = now_rfc3339) -> None:
        super().__init__(client, stores, options, metrics, namespace_allowed, now)
        self._counts: dict[str, tuple[int, int]] = {}  # key -> (selected, rejected) AlertmanagerConfigs
        self._ok: dict[str, bool] = {}  # key -> whether its last sync succeeded
        self._written: dict[tuple, tuple[str, str, Any]] = {}  # memo key -> (cached rv, our new rv, what we wrote)
        self._caches: dict[str, AMRenderCache] = {}  # per Alertmanager: unchanged AlertmanagerConfigs are reused
        self._contents: dict[tuple[str, str, str], dict] = {}  # referenced Secret/ConfigMap content by rv

    def instance(self, key: str) -> dict | None:
        return self.stores.alertmanagers.get(key)

    def _reconcile(self, key: str, am: dict) -> SyncReport:
        """Render and write; a fatal render error (base config, global AlertmanagerConfig, version) writes
        nothing, so the previous configuration keeps running, and the status and an Event say why."""
        report = SyncReport(key)
        result: AMRenderResult | None = None

        def work() -> None:
            nonlocal result
            result = self._render(key, am)
            if result.fatal is None:
                self._write_all(am, result, report)
            else:
                report.error = str(result.fatal)
                self._event(am, "ReconciliationFailed",
                            f"no configuration generated (the previous one stays): {result.fatal}")
            self._feedback(am, result, report)

        alive, error = self._attempt(work)
        if not alive:
            return SyncReport(key, skipped="deleted")
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
            namespaces=[n for n in self.stores.namespaces.list() if self.namespace_allowed(ns_name(n)[1])],
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
        if meta is not None and known is not None and resource_version(known) == resource_version(meta):
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

    def _write_all(self, am: dict, result: AMRenderResult, report: SyncReport) -> None:
        ns, name = ns_name(am)
        check = self._owner_check(am)
        wanted_secrets = set()
        for obj in result.objects():
            kind = obj["kind"]
            if kind == "StatefulSet":
                continue
            if kind == "Secret":
                wanted_secrets.add(obj["metadata"]["name"])
            self._apply_rendered(obj, ns, check, report)
        self._delete_stale(SECRETS, self.stores.secrets.list(), am, f"alertmanager-{name}", _TLS_SHARD,
                           wanted_secrets, report)
        sts = result.statefulset
        current = self.stores.statefulsets.get(f"{ns}/{sts['metadata']['name']}")
        memo_key = ("sts", ns, sts["metadata"]["name"])
        known, _ = self._as_written(memo_key, current, input_hash(current))
        if known is not None and known == input_hash(sts):
            report.count(UNCHANGED)  # also when the cache has not shown our own write yet
        else:
            with self._lock:
                pending = self._written.get(memo_key)
            if pending is not None and pending[0] == resource_version(current):
                raise RetryLater(f"StatefulSet {ns}/{sts['metadata']['name']}: our last write is not in the cache yet")
            applied = self.applier.apply(STATEFULSETS, sts, current, refetch=False, before_create=check)
            if applied.action != UNCHANGED and applied.after is not None:  # what the server answered to our write
                self._remember(memo_key, current, applied.after, input_hash(applied.after))
            report.count(applied)

    # ---- feedback -------------------------------------------------------------------

    def _feedback(self, am: dict, result: AMRenderResult, report: SyncReport) -> None:
        ns, name = ns_name(am)
        problems: dict[tuple[str, str], list[str]] = {}
        for p in result.rejected:
            problems.setdefault((p.namespace, p.name), []).append(f"{p.field}: {p.message}")
        selected = {(d.namespace, d.name) for d in result.selection if d.selected}
        report.selected = len(selected - set(problems))
        report.rejected = len(selected & set(problems))
        now = self.now()
        conflicts = 0
        for obj in self.stores.alertmanagerconfigs.list():
            key = ns_name(obj)
            verdict = None
            if key in selected and result.fatal is None:
                msgs = problems.get(key)
                verdict = (False, "; ".join(msgs)) if msgs else (True, "")
            elif key in selected:
                continue  # nothing was generated: keep what the last good sync said
            if msgs_for := problems.get(key):
                self._event(obj, feedback.INVALID,
                            f"AlertmanagerConfig {key[1]} was rejected due to invalid configuration "
                            f"(Alertmanager {ns}/{name}): {'; '.join(msgs_for)}",
                            kind="AlertmanagerConfig", api_version=ALERTMANAGERCONFIGS.api_version)
            conflicts += not self._write_bindings(obj, am, verdict, now)
        if conflicts:
            raise RetryLater(f"{conflicts} AlertmanagerConfig status writes conflicted; retrying")

    def _write_bindings(self, obj: dict, am: dict, verdict: tuple[bool, str] | None, now: str) -> bool:
        """Write `obj`'s status.bindings if they change; False on a conflict (the caller requeues)."""
        ns, name = ns_name(obj)
        memo_key = ("bindings", ns, name, "/".join(ns_name(am)))
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
        rv = resource_version(cached)
        with self._lock:
            memo = self._written.get(memo_key)
        if memo is not None and memo[0] == rv:
            return memo[2], memo[1]
        return value, rv

    def _remember(self, memo_key: tuple, based_on: Mapping[str, Any], written: Mapping[str, Any], value: Any) -> None:
        with self._lock:
            old = self._written.get(memo_key)
            base = old[0] if old is not None and old[0] == resource_version(based_on) else resource_version(based_on)
            self._written[memo_key] = (base, resource_version(written), value)

    # ---- status ---------------------------------------------------------------------

    def _update_status(self, am: dict, error: str | None, result: AMRenderResult | None) -> None:
        ns, name = ns_name(am)
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
        written = self._write_status(am, desired, current, resource_version=base_rv)
        if written is not None:
            self._remember(memo_key, am, written, desired)

    def _record(self, key: str, am: dict, result: AMRenderResult | None, ok: bool) -> None:
        ns, name = ns_name(am)
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

