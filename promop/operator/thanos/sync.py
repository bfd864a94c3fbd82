"""sync(key): one ThanosRuler from the caches to the API, writing only what differs.

Order (upstream's): paused check; render (PrometheusRule selection, rule ConfigMaps, the Secrets);
rule ConfigMaps (stale shards deleted), Secrets, the governing Service (owner references merged
across the namespace's ThanosRulers), the StatefulSet (skipped when its input hash is unchanged);
Events for rejected PrometheusRules; the ThanosRuler status. A ThanosRuler upstream would refuse
(no query endpoint, a bad version, a clashing additional argument) writes nothing: the status and
an Event say why. Referenced Secret content (remote write credentials) and the web TLS Secrets and
ConfigMaps (checked before the pods mount them) are read with direct GETs; a change of one of them
re-syncs the ruler (the controller maps it through `references`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promop.kube.errors import Forbidden, NotFound
from promop.kube.resources import CONFIGMAPS, SECRETS, STATEFULSETS
from promop.operator import feedback
from promop.operator.apply import UNCHANGED
from promop.operator.diff import input_hash
from promop.operator.thanos import CONTROLLER, THANOSRULERS
from promop.operator.thanos.status import ruler_status
from promop.operator.workload.sync import SyncReport, WorkloadSyncer, ns_name
from promop.render.thanos.ruler_render import InvalidThanosRuler, RulerInputs, RulerResult, render_ruler
from promop.render.thanos.ruler_web import web_tls_references

log = logging.getLogger("promop.operator.thanos")

_RULE_SHARD = re.compile(r"-rulefiles-\d+$")
_TLS_SHARD = re.compile(r"-tls-assets-\d+$")


@dataclass
class Stores:
    thanosrulers: Any
    prometheusrules: Any
    namespaces: Any
    statefulsets: Any
    configmaps: Any
    secrets: Any = None  # metadata only: the ruler's TLS asset shards, for deleting the stale ones


def secret_refs(ruler: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(namespace, name) of the Secrets the render reads (remote write credentials)."""
    ns = ns_name(ruler)[0]
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


class RulerSyncer(WorkloadSyncer):
    """Reconciles one ThanosRuler per call; safe for concurrent calls on different keys."""

    kind = "ThanosRuler"
    resource = THANOSRULERS
    controller = CONTROLLER
    log = log

    def instance(self, key: str) -> dict | None:
        return self.stores.thanosrulers.get(key)

    def _reconcile(self, key: str, ruler: dict) -> SyncReport:
        """Render and write; a ThanosRuler upstream would refuse writes nothing, its status and an Event say
        why (not retried: only a change of it can help). Any other failure is in the status, then retried."""
        report = SyncReport(key)

        def work() -> None:
            try:
                result = self._render(key, ruler)
                self._write_all(ruler, result, report)
                self._feedback(result, report)
            except InvalidThanosRuler as exc:  # upstream refuses it: nothing written, the status says why
                report.error = str(exc)
                self._event(ruler, "ReconciliationFailed", f"nothing generated for ThanosRuler: {exc}")

        alive, failure = self._attempt(work)
        if not alive:
            return SyncReport(key, skipped="deleted")
        self._update_status(ruler, str(failure) if failure is not None else report.error or None)
        if failure is not None:
            raise failure
        return report

    def _render(self, key: str, ruler: dict) -> RulerResult:
        refs = {("Secret", ns, name) for ns, name in secret_refs(ruler)} | set(web_tls_references(ruler))
        fetched: dict[str, dict[tuple[str, str], dict]] = {"Secret": {}, "ConfigMap": {}}
        for kind, ns, name in sorted(refs):
            try:
                fetched[kind][(ns, name)] = self.client.get(SECRETS if kind == "Secret" else CONFIGMAPS, name, ns)
            except (NotFound, Forbidden):
                continue  # the renderer says what is missing (web TLS objects may come later, as upstream)
        with self._lock:  # before rendering: a ruler refused for a bad Secret is re-synced when it is fixed
            self.references[key] = refs
        inputs = RulerInputs(
            ruler=ruler, prometheus_rules=self.stores.prometheusrules.list(),
            namespaces=[n for n in self.stores.namespaces.list() if self.namespace_allowed(ns_name(n)[1])],
            secrets=fetched["Secret"], configmaps=fetched["ConfigMap"], options=self.options)
        result = render_ruler(inputs)
        with self._lock:
            self.last_result[key] = result
        return result

    def _write_all(self, ruler: dict, result: RulerResult, report: SyncReport) -> None:
        ns, name = ns_name(ruler)
        check = self._owner_check(ruler)
        for obj in result.objects()[:-1]:  # the StatefulSet last, below
            self._apply_rendered(obj, ns, check, report)
        self._delete_stale(CONFIGMAPS, self.stores.configmaps.list(), ruler, f"thanos-ruler-{name}", _RULE_SHARD,
                           {cm["metadata"]["name"] for cm in result.rule_configmaps}, report)
        if self.stores.secrets is not None:  # fewer TLS asset shards than before: the extra ones go
            self._delete_stale(SECRETS, self.stores.secrets.list(), ruler, f"thanos-ruler-{name}", _TLS_SHARD,
                               {s["metadata"]["name"] for s in result.tls_secrets}, report)
        sts = result.statefulset
        current = self.stores.statefulsets.get(f"{ns}/{sts['metadata']['name']}")
        if current is not None and input_hash(current) == input_hash(sts):
            report.count(UNCHANGED)
            return
        # Cache-fed, as the other StatefulSets: on a conflict wait for the cache (RetryLater) rather than
        # GET it, which the ClusterRole does not grant (least privilege, promop/operator/rbac.py).
        report.count(self.applier.apply(STATEFULSETS, sts, current, refetch=False, before_create=check))

    def _feedback(self, result: RulerResult, report: SyncReport) -> None:
        """An Event on each PrometheusRule the ruler selected but rejected (the others still load)."""
        problems: dict[tuple[str, str], list[str]] = {}
        for p in result.rejected:
            problems.setdefault((p.namespace, p.name), []).append(f"{p.field}: {p.message}")
        report.selected = len(result.accepted_rules())
        report.rejected = len(problems)
        for obj in self.stores.prometheusrules.list():
            msgs = problems.get(ns_name(obj))
            if msgs:
                self._event(obj, feedback.INVALID, f"PrometheusRule {ns_name(obj)[1]} was rejected by ThanosRuler: "
                            + "; ".join(msgs), kind="PrometheusRule", api_version="monitoring.coreos.com/v1")

    def _update_status(self, ruler: dict, error: str | None) -> None:
        ns, name = ns_name(ruler)
        sts = self.stores.statefulsets.get(f"{ns}/thanos-ruler-{name}")
        self._write_status(ruler, ruler_status(ruler, sts, error=error, now=self.now()), ruler.get("status") or {})
