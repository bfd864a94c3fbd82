"""Which ServiceMonitors, PodMonitors and PrometheusRules a Prometheus selects, and why not.

Upstream semantics: a nil object selector selects nothing, `{}` selects all;
a nil namespace selector means the Prometheus's own namespace only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from promop.labelselector import Selector, SelectorError, parse_selector
from promop.render.model import Decision, Problem, obj_meta

# kind -> (object selector field, namespace selector field)
SELECTOR_FIELDS = {
    "ServiceMonitor": ("serviceMonitorSelector", "serviceMonitorNamespaceSelector"),
    "PodMonitor": ("podMonitorSelector", "podMonitorNamespaceSelector"),
    "PrometheusRule": ("ruleSelector", "ruleNamespaceSelector"),
    "Probe": ("probeSelector", "probeNamespaceSelector"),
}
SELECTOR_FIELDS["ScrapeConfig"] = ("scrapeConfigSelector", "scrapeConfigNamespaceSelector")


def namespace_labels(namespaces: Iterable[Mapping[str, Any]]) -> dict[str, dict]:
    """name -> labels for Namespace objects (labels include kubernetes.io/metadata.name)."""
    out: dict[str, dict] = {}
    for ns in namespaces:
        md = ns.get("metadata") or {}
        name = md.get("name") or ""
        labels = dict(md.get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", name)
        out[name] = labels
    return out


def select(
    prometheus: Mapping[str, Any],
    candidates: Sequence[Mapping[str, Any]],
    kind: str,
    namespaces: Sequence[Mapping[str, Any]] = (),
    warnings: list[Problem] | None = None,
) -> list[Decision]:
    """One Decision per candidate, sorted by (namespace, name).

    `namespaces` are Namespace objects; a candidate's namespace that is not
    among them is treated as a namespace without labels. An unparsable
    selector on the Prometheus selects nothing, says why in every Decision and,
    if `warnings` is given, adds a warning there.
    """
    decide = Decider(prometheus, kind, namespaces, warnings)
    return [decide(obj) for obj in sorted(candidates, key=obj_meta)]


class Decider:
    """One Prometheus's selection of one kind, object by object: the selectors and namespace labels
    are parsed once, so that an incremental selection (promop.render.selection_index) can decide
    on a changed object alone and get the Decision a full select() would."""

    def __init__(self, prometheus: Mapping[str, Any], kind: str, namespaces: Sequence[Mapping[str, Any]] = (),
                 warnings: list[Problem] | None = None) -> None:
        self.kind = kind
        self.sel_field, self.ns_field = sel_field, ns_field = SELECTOR_FIELDS[kind]
        spec = prometheus.get("spec") or {}
        prom_ns, prom_name = obj_meta(prometheus)
        self.prom_ns = prom_ns
        self.ns_labels = namespace_labels(namespaces)
        self.obj_sel, obj_err = _parse(spec.get(sel_field), f"spec.{sel_field}")
        ns_spec = spec.get(ns_field)
        self.ns_sel, ns_err = (None, None) if ns_spec is None else _parse(ns_spec, f"spec.{ns_field}")
        for err, fld in ((obj_err, sel_field), (ns_err, ns_field)):
            if err and warnings is not None:
                warnings.append(Problem("Prometheus", prom_ns, prom_name, f"spec.{fld}",
                                        f"{err}; nothing of kind {kind} is selected"))
        self.error = obj_err or ns_err

    def __call__(self, obj: Mapping[str, Any]) -> Decision:
        ns, name = obj_meta(obj)
        reason = ""
        if self.error:
            reason = f"{self.error}"
        elif self.ns_sel is None:
            if ns != self.prom_ns:
                reason = (
                    f"namespace {ns!r} not matched: {self.ns_field} is not set, so only the Prometheus's own "
                    f"namespace {self.prom_ns!r} is searched (set {self.ns_field}: {{}} for all namespaces)"
                )
        else:
            why = self.ns_sel.explain(self.ns_labels.get(ns, {"kubernetes.io/metadata.name": ns}), self.ns_field)
            if why is not None:
                reason = f"namespace {ns!r} not matched by {why}"
        if not reason:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            why = self.obj_sel.explain(labels, self.sel_field)
            if why is not None:
                reason = why
        return Decision(self.kind, ns, name, not reason, reason)


def _parse(spec: Any, where: str) -> tuple[Selector | None, str | None]:
    try:
        return parse_selector(spec, where), None
    except SelectorError as e:
        return None, f"invalid selector: {e}"
