"""Which Prometheus keys (`ns/name`) an informer event should enqueue.

Pure functions over the cached Prometheus objects and namespace labels, so the
rules (issue 5 §1, upstream's `enqueueForNamespace`/`HasReferenceFunc`) are unit
tested without a cluster.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from promop.labelselector import SelectorError, parse_selector
from promop.render.model import MONITORING_GROUP
from promop.render.selection import SELECTOR_FIELDS

# the namespace selector field of a Prometheus that decides where it looks for each kind
NAMESPACE_SELECTOR_FIELD = {
    "ServiceMonitor": "serviceMonitorNamespaceSelector",
    "PodMonitor": "podMonitorNamespaceSelector",
    "PrometheusRule": "ruleNamespaceSelector",
    "Probe": "probeNamespaceSelector",
}
NAMESPACE_SELECTOR_FIELD["ScrapeConfig"] = "scrapeConfigNamespaceSelector"

NamespaceLabels = Callable[[str], "Mapping[str, str] | None"]


def key_of(obj: Mapping[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace')}/{md.get('name')}" if md.get("namespace") else str(md.get("name"))


def _md(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def prometheus_update_matters(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """A Prometheus update enqueues only when generation, labels or annotations changed.

    Status writes (ours included) bump resourceVersion only, so they do not loop.
    """
    o, n = _md(old), _md(new)
    return (o.get("generation") != n.get("generation") or (o.get("labels") or {}) != (n.get("labels") or {})
            or (o.get("annotations") or {}) != (n.get("annotations") or {})
            or bool(o.get("deletionTimestamp")) != bool(n.get("deletionTimestamp")))


def monitor_update_matters(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """A monitor/rule update matters when its spec (generation) or labels changed, not its status."""
    o, n = _md(old), _md(new)
    return o.get("generation") != n.get("generation") or (o.get("labels") or {}) != (n.get("labels") or {})


def resource_version_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Secret/ConfigMap/StatefulSet updates: resyncs deliver the same resourceVersion; skip those."""
    return _md(old).get("resourceVersion") != _md(new).get("resourceVersion")


_VOLATILE_METADATA = ("resourceVersion", "managedFields")


def statefulset_status_only(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Only `status` differs (the StatefulSet controller reporting pods): the owner needs a status
    refresh, not a render. Any metadata or spec change (a foreign edit to undo) needs a full sync."""
    def meta(obj: Mapping[str, Any]) -> dict:
        return {k: v for k, v in _md(obj).items() if k not in _VOLATILE_METADATA}
    return old.get("spec") == new.get("spec") and meta(old) == meta(new)


def selects_namespace(prometheus: Mapping[str, Any], field: str, namespace: str,
                      labels: Mapping[str, str] | None) -> bool:
    """Does `prometheus` look for objects in `namespace` through its `field` namespace selector?

    nil selector: only its own namespace; `{}`: every namespace; an invalid
    selector: only its own namespace (the sync reports the error).
    """
    spec = prometheus.get("spec") or {}
    own = _md(prometheus).get("namespace")
    if spec.get(field) is None:
        return namespace == own
    try:
        return parse_selector(spec.get(field), field).matches(labels or {})
    except SelectorError:
        return namespace == own


def for_monitor(kind: str, namespace: str, prometheuses: Iterable[Mapping[str, Any]],
                namespace_labels: NamespaceLabels, objects: Iterable[Mapping[str, Any] | None] | None = None) -> list[str]:
    """A monitor or rule in `namespace` changed: every Prometheus whose namespace selector covers it.

    `objects`: the object's versions this event is about (old and new of an update; the object of
    an add or delete). When given, a Prometheus whose object selector selects none of them, and
    that none of them names in `status.bindings`, is left out: its output cannot change (with
    10,000 monitors, every edit would otherwise re-render every Prometheus in reach). Both sides
    of an update count, so a label change that deselects an object still reaches the Prometheus
    that used to select it; a nil or invalid selector is never used to leave one out.
    """
    field = NAMESPACE_SELECTOR_FIELD[kind]
    labels = namespace_labels(namespace)
    keys = [key_of(p) for p in prometheuses
            if (_md(p).get("namespace") == namespace or selects_namespace(p, field, namespace, labels))
            and (objects is None or may_select(p, kind, objects))]
    if objects is not None:
        bound = {k for obj in objects if obj is not None for k in bound_prometheuses(obj)}
        keys += [key_of(p) for p in prometheuses if key_of(p) in bound and key_of(p) not in keys]
    return sorted(keys)


def may_select(prometheus: Mapping[str, Any], kind: str, objects: Iterable[Mapping[str, Any] | None]) -> bool:
    """False only when `prometheus`'s object selector for `kind` is a valid selector that matches
    the labels of none of `objects` (so no version of them is or was selected)."""
    spec = prometheus.get("spec") or {}
    selector = spec.get(SELECTOR_FIELDS[kind][0])
    if selector is None:
        return True  # nil selects nothing here, but the unmanaged-config rules are the renderer's call
    try:
        parsed = parse_selector(selector, SELECTOR_FIELDS[kind][0])
    except SelectorError:
        return True  # the sync reports it
    return any(parsed.matches(_md(obj).get("labels") or {}) for obj in objects if obj is not None)


def for_referenced(kind: str, namespace: str, name: str, prometheuses: Iterable[Mapping[str, Any]],
                   references: Mapping[str, set]) -> list[str]:
    """A Secret/ConfigMap changed: the Prometheus objects in its namespace or that reference it.

    `references` maps a Prometheus key to the (kind, namespace, name) tuples its
    last render read; Prometheus objects in the same namespace cover the
    objects we own (a foreign edit of our config Secret gets restored).
    """
    ref = (kind, namespace, name)
    return sorted(key_of(p) for p in prometheuses
                  if _md(p).get("namespace") == namespace or ref in references.get(key_of(p), ()))


def bound_prometheuses(obj: Mapping[str, Any]) -> list[str]:
    """Keys of the Prometheus objects a monitor's or rule's `status.bindings` name."""
    out = []
    for b in ((obj.get("status") or {}).get("bindings")) or []:
        if (isinstance(b, Mapping) and b.get("resource") == "prometheuses" and b.get("group") == MONITORING_GROUP
                and b.get("namespace") and b.get("name")):
            out.append(f"{b['namespace']}/{b['name']}")
    return out


def for_statefulset(sts: Mapping[str, Any]) -> list[str]:
    """A StatefulSet event enqueues its controlling Prometheus."""
    md = _md(sts)
    for ref in md.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Prometheus" and str(ref.get("apiVersion", "")).startswith(
                "monitoring.coreos.com/"):
            return [f"{md.get('namespace')}/{ref.get('name')}"]
    return []


def for_namespace_change(old_labels: Mapping[str, str] | None, new_labels: Mapping[str, str] | None,
                         namespace: str, prometheuses: Iterable[Mapping[str, Any]]) -> list[str]:
    """Namespace added, deleted or relabelled: the Prometheus objects whose selection result changes.

    Pass None for the missing side of an add or a delete.
    """
    out = []
    for p in prometheuses:
        for field in NAMESPACE_SELECTOR_FIELD.values():
            before = old_labels is not None and selects_namespace(p, field, namespace, old_labels)
            after = new_labels is not None and selects_namespace(p, field, namespace, new_labels)
            if before != after:
                out.append(key_of(p))
                break
    return sorted(out)
