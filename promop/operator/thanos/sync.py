"""sync(key): one ThanosRuler from the caches to the API, writing only what differs.

Order (upstream's): paused check; render (PrometheusRule selection, rule ConfigMaps, the Secrets);
rule ConfigMaps (stale shards deleted), Secrets, the governing Service (owner references merged
across the namespace's ThanosRulers), the StatefulSet (skipped when its input hash is unchanged);
Events for rejected PrometheusRules; the ThanosRuler status. A ThanosRuler upstream would refuse
(no query endpoint, a bad version, a clashing additional argument) writes nothing: the status and
an Event say why. Referenced Secret content (remote write credentials) is read with direct GETs.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from promop.host.logs import fields
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError, Conflict, Forbidden, NotFound
from promop.kube.resources import CONFIGMAPS, EVENTS, SECRETS, SERVICES, STATEFULSETS, Resource
from promop.operator import feedback
from promop.operator.apply import UNCHANGED, Applier, RetryLater
from promop.operator.diff import input_hash
from promop.operator.metrics import OperatorMetrics
from promop.operator.status import keep_transition_times, now_rfc3339
from promop.operator.thanos import CONTROLLER, THANOSRULERS
from promop.operator.thanos.status import ruler_status
from promop.render.model import RenderOptions
from promop.render.thanos.ruler_render import InvalidThanosRuler, RulerInputs, RulerResult, render_ruler

log = logging.getLogger("promop.operator.thanos")

BY_KIND: dict[str, Resource] = {"Secret": SECRETS, "ConfigMap": CONFIGMAPS, "Service": SERVICES,
                                "StatefulSet": STATEFULSETS}
_RULE_SHARD = re.compile(r"-rulefiles-\d+$")


class OwnerGone(Exception):
    """The ThanosRuler was deleted while our cache still had it."""


@dataclass
class Stores:
    thanosrulers: Any
    prometheusrules: Any
    namespaces: Any
    statefulsets: Any
    configmaps: Any


@dataclass
class SyncReport:
    key: str
    skipped: str = ""
    writes: int = 0
    selected: int = 0
    rejected: int = 0
    error: str = ""
    actions: dict[str, int] = field(default_factory=dict)


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return md.get("namespace") or "", md.get("name") or ""


def _rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def _owned_by(obj: Mapping[str, Any], ruler: Mapping[str, Any]) -> bool:
    uid = (ruler.get("metadata") or {}).get("uid")
    return any(r.get("uid") == uid and r.get("kind") == "ThanosRuler"
               for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


def secret_refs(ruler: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(namespace, name) of the Secrets the render reads (remote write credentials)."""
    ns = _key(ruler)[0]
    out: set[tuple[str, str]] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            if isinstance(value.get("name"), str) and "key" in value:
                out.add((ns, value["name"]))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk((ruler.get("spec") or {}).get("remoteWrite") or [])
    return out


class RulerSyncer:
    """Reconciles one ThanosRuler per call; safe for concurrent calls on different keys."""

    def __init__(self, client: KubeClient, stores: Stores, options: RenderOptions, metrics: OperatorMetrics,
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
        self.references: dict[str, set[tuple[str, str]]] = {}
        self.last_result: dict[str, RulerResult] = {}
        self.last_report: dict[str, SyncReport] = {}

    def sync(self, key: str) -> SyncReport:
        try:
            report = self._sync(key)
        except Exception:
            self.last_report[key] = SyncReport(key, skipped="failed")
            raise
        self.last_report[key] = report
        return report

    def _sync(self, key: str) -> SyncReport:
        ruler = self.stores.thanosrulers.get(key)
        if ruler is None:
            with self._lock:
                self.references.pop(key, None)
                self.last_result.pop(key, None)
            return SyncReport(key, skipped="deleted")  # owned objects go by garbage collection
        if (ruler.get("metadata") or {}).get("deletionTimestamp"):
            return SyncReport(key, skipped="deleting")
        if (ruler.get("spec") or {}).get("paused"):
            log.info("paused: no action taken", **fields(key=key))
            return SyncReport(key, skipped="paused")
        started = time.monotonic()
        self.metrics.reconcile_operations.labels(CONTROLLER).inc()
        report = SyncReport(key)
        error: str | None = None
        failure: Exception | None = None
        try:
            result = self._render(key, ruler)
            self._write_all(ruler, result, report)
            self._feedback(result, report)
        except InvalidThanosRuler as exc:
            error = report.error = str(exc)
            self._event(ruler, "ReconciliationFailed", f"nothing generated for ThanosRuler: {exc}")
        except OwnerGone:
            return SyncReport(key, skipped="deleted")
        except RetryLater:
            raise
        except Exception as exc:  # noqa: BLE001 - reported in status, then retried
            failure, error = exc, str(exc)
            self.metrics.reconcile_errors.labels(CONTROLLER).inc()
        finally:
            self.metrics.reconcile_duration.labels(CONTROLLER).observe(time.monotonic() - started)
        self._update_status(ruler, error)
        if failure is not None:
            raise failure
        return report

    def _render(self, key: str, ruler: dict) -> RulerResult:
        secrets: dict[tuple[str, str], dict] = {}
        refs = secret_refs(ruler)
        for ns, name in sorted(refs):
            try:
                secrets[(ns, name)] = self.client.get(SECRETS, name, ns)
            except (NotFound, Forbidden):
                continue  # the renderer says what is missing
        inputs = RulerInputs(
            ruler=ruler, prometheus_rules=self.stores.prometheusrules.list(),
            namespaces=[n for n in self.stores.namespaces.list() if self.namespace_allowed(_key(n)[1])],
            secrets=secrets, options=self.options)
        result = render_ruler(inputs)
        with self._lock:
            self.references[key] = refs
            self.last_result[key] = result
        return result

    def _owner_check(self, ruler: dict) -> Callable[[], None]:
        ns, name = _key(ruler)
        uid = (ruler.get("metadata") or {}).get("uid")

        def check() -> None:
            try:
                live = self.client.get(THANOSRULERS, name, ns)
            except NotFound:
                raise OwnerGone(f"{ns}/{name}") from None
            md = live.get("metadata") or {}
            if md.get("uid") != uid or md.get("deletionTimestamp"):
                raise OwnerGone(f"{ns}/{name}")
        return check

    def _count(self, report: SyncReport, applied: Any) -> None:
        action = getattr(applied, "action", applied)
        report.actions[action] = report.actions.get(action, 0) + 1
        if action != UNCHANGED:
            report.writes += 1

    def _get(self, res: Resource, name: str, ns: str) -> dict | None:
        try:
            return self.client.get(res, name, ns)
        except NotFound:
            return None

    def _write_all(self, ruler: dict, result: RulerResult, report: SyncReport) -> None:
        ns, name = _key(ruler)
        check = self._owner_check(ruler)
        for obj in result.objects()[:-1]:
            kind = obj["kind"]
            current = self._get(BY_KIND[kind], obj["metadata"]["name"], ns)
            if kind == "Service" and current is not None:
                obj = _merge_owners(obj, current)
            self._count(report, self.applier.apply(BY_KIND[kind], obj, current, before_create=check))
        self._delete_stale_rule_configmaps(ruler, {cm["metadata"]["name"] for cm in result.rule_configmaps}, report)
        sts = result.statefulset
        current = self.stores.statefulsets.get(f"{ns}/{sts['metadata']['name']}")
        if current is not None and input_hash(current) == input_hash(sts):
            self._count(report, UNCHANGED)
            return
        applied = self.applier.apply(STATEFULSETS, sts, current, refetch=current is None, before_create=check)
        self._count(report, applied)

    def _delete_stale_rule_configmaps(self, ruler: dict, wanted: set[str], report: SyncReport) -> None:
        ns, name = _key(ruler)
        prefix = f"thanos-ruler-{name}"
        for meta in self.stores.configmaps.list():
            o_ns, o_name = _key(meta)
            m = _RULE_SHARD.search(o_name)
            if (o_ns == ns and m and o_name[: m.start()] == prefix and o_name not in wanted
                    and _owned_by(meta, ruler) and self.applier.delete(CONFIGMAPS, o_name, ns)):
                self._count(report, "deleted")

    def tell(self, ruler: dict, reason: str, note: str) -> None:
        """An Event on the ThanosRuler (what --repair-policy-for-statefulsets did)."""
        self._event(ruler, reason, note)

    def _event(self, obj: dict, reason: str, note: str, kind: str = "ThanosRuler",
               api_version: str = THANOSRULERS.api_version) -> None:
        if not self.events.should_emit(obj, reason, note):
            return
        ns, name = _key(obj)
        log.warning(note, **fields(kind=kind, object=f"{ns}/{name}"))
        try:
            self.client.create(EVENTS, feedback.event_for(obj, api_version, kind, reason, note, "Warning", self.now()),
                               ns)
        except ApiError as exc:
            log.warning("cannot record event", **fields(object=f"{ns}/{name}", error=str(exc)))

    def _feedback(self, result: RulerResult, report: SyncReport) -> None:
        """An Event on each PrometheusRule the ruler selected but rejected (the others still load)."""
        problems: dict[tuple[str, str], list[str]] = {}
        for p in result.rejected:
            problems.setdefault((p.namespace, p.name), []).append(f"{p.field}: {p.message}")
        report.selected = len(result.accepted_rules())
        report.rejected = len(problems)
        for obj in self.stores.prometheusrules.list():
            msgs = problems.get(_key(obj))
            if msgs:
                self._event(obj, feedback.INVALID, f"PrometheusRule {_key(obj)[1]} was rejected by ThanosRuler: "
                            + "; ".join(msgs), kind="PrometheusRule", api_version="monitoring.coreos.com/v1")

    def _update_status(self, ruler: dict, error: str | None) -> None:
        ns, name = _key(ruler)
        sts = self.stores.statefulsets.get(f"{ns}/thanos-ruler-{name}")
        desired = ruler_status(ruler, sts, error=error, now=self.now())
        current = ruler.get("status") or {}
        desired["conditions"] = keep_transition_times(current.get("conditions"), desired["conditions"])
        if not any(current.get(k) != v for k, v in desired.items()):
            return
        self.metrics.status_updates.labels(CONTROLLER).inc()
        try:
            self.client.update(THANOSRULERS, {**ruler, "status": desired}, subresource="status")
        except Conflict:
            raise RetryLater(f"status of ThanosRuler {ns}/{name}: our cached copy is outdated") from None
        except NotFound:
            return
        except ApiError:
            self.metrics.status_update_errors.labels(CONTROLLER).inc()
            raise


def _merge_owners(desired: dict, current: Mapping[str, Any]) -> dict:
    """The shared Service keeps every ThanosRuler's (non-controller) owner reference."""
    refs = list((current.get("metadata") or {}).get("ownerReferences") or [])
    uids = {r.get("uid") for r in refs}
    refs += [r for r in desired["metadata"].get("ownerReferences") or [] if r.get("uid") not in uids]
    return {**desired, "metadata": {**desired["metadata"], "ownerReferences": refs}}
