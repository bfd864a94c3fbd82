"""Which AlertmanagerConfigs an Alertmanager selects, and why not (reference §5).

As upstream: a nil `alertmanagerConfigSelector` selects nothing, `{}` all; a
nil `alertmanagerConfigNamespaceSelector` means the Alertmanager's own
namespace only. The global AlertmanagerConfig (`alertmanagerConfiguration.name`)
is never selected as an ordinary one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from promop.labelselector import SelectorError, parse_selector
from promop.render.model import Decision, obj_meta
from promop.render.selection import namespace_labels

KIND = "AlertmanagerConfig"
SEL, NS_SEL = "alertmanagerConfigSelector", "alertmanagerConfigNamespaceSelector"


def select_configs(
    alertmanager: Mapping[str, Any],
    candidates: Sequence[Mapping[str, Any]],
    namespaces: Sequence[Mapping[str, Any]] = (),
) -> list[Decision]:
    """One Decision per candidate, sorted by (namespace, name)."""
    spec = alertmanager.get("spec") or {}
    am_ns, _ = obj_meta(alertmanager)
    global_name = (spec.get("alertmanagerConfiguration") or {}).get("name")
    labels_of = namespace_labels(namespaces)
    err = None
    obj_sel = ns_sel = None
    try:
        obj_sel = parse_selector(spec.get(SEL), f"spec.{SEL}")
        if spec.get(NS_SEL) is not None:
            ns_sel = parse_selector(spec[NS_SEL], f"spec.{NS_SEL}")
    except SelectorError as exc:
        err = f"invalid selector: {exc}"
    out = []
    ns_reasons: dict[str, str] = {}
    for obj in sorted(candidates, key=obj_meta):
        ns, name = obj_meta(obj)
        reason = ""
        if err:
            reason = err
        elif global_name and ns == am_ns and name == global_name:
            reason = "this is the Alertmanager's global configuration (spec.alertmanagerConfiguration.name)"
        elif spec.get(NS_SEL) is None:
            if ns != am_ns:
                reason = (f"namespace {ns!r} not matched: {NS_SEL} is not set, so only the Alertmanager's own "
                          f"namespace {am_ns!r} is searched (set {NS_SEL}: {{}} for all namespaces)")
        else:
            if ns not in ns_reasons:  # one answer per namespace, not per candidate
                why = ns_sel.explain(labels_of.get(ns, {"kubernetes.io/metadata.name": ns}), NS_SEL)
                ns_reasons[ns] = "" if why is None else f"namespace {ns!r} not matched by {why}"
            reason = ns_reasons[ns]
        if not reason:
            why = obj_sel.explain((obj.get("metadata") or {}).get("labels") or {}, SEL)
            if why is not None:
                reason = why
        out.append(Decision(KIND, ns, name, not reason, reason))
    return out
