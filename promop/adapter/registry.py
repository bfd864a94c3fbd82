"""Series discovery: which API metrics exist, from the series Prometheus reports.

Pure: label sets in, a `Registry` out. Only what the rules need is kept —
each distinct (series name, label names) pair whose name some rule accepts,
and the distinct names no rule accepts (to say why a metric is missing) —
so memory follows the metrics served, not the number of series seen.

Registration follows upstream's SetSeries: rules in order, each series
registered for every resource its labels name; a later rule overwrites an
earlier one for the same (resource, scope, metric).
"""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass, field
from typing import Iterable

from promop.adapter.config import GroupResource
from promop.adapter.naming import CLUSTER_SCOPED, Namer
from promop.adapter.resources import ResourceInfo

MAX_REJECTED_NAMES = 50_000


@dataclass
class SeriesSet:
    """What one seriesQuery returned, reduced to what the rules need."""

    kept: dict[str, set[tuple[str, ...]]] = field(default_factory=dict)  # series name → label-name tuples
    rejected: set[str] = field(default_factory=set)                         # names no rule accepts
    count: int = 0                                                          # series seen


def collect(batches: Iterable[list[dict[str, str]]], namers: list[Namer]) -> SeriesSet:
    """Reduce a stream of label-set batches for the namers sharing one seriesQuery."""
    out = SeriesSet()
    accepted: dict[str, bool] = {}
    kept = out.kept
    for batch in batches:
        out.count += len(batch)
        for labels in batch:
            name = labels.get("__name__", "")
            ok = accepted.get(name)
            if ok is None:
                ok = any(n.name_for(name)[0] is not None for n in namers)
                accepted[name] = ok
            if ok:
                shape = tuple(labels)
                shapes = kept.get(name)
                if shapes is None:
                    kept[name] = {shape}
                else:
                    shapes.add(shape)
            elif len(out.rejected) < MAX_REJECTED_NAMES:
                out.rejected.add(name)
    return out


@dataclass(frozen=True)
class MetricKey:
    group: str
    resource: str
    namespaced: bool
    metric: str

    @property
    def group_resource(self) -> GroupResource:
        return GroupResource(self.group, self.resource)


@dataclass
class CustomEntry:
    series: str
    namer: Namer
    info: ResourceInfo
    label: str            # the series label naming the objects


@dataclass
class ExternalEntry:
    series: str
    namer: Namer


@dataclass
class Event:
    """One decision of discovery, for `explain`."""

    rule: str
    series: str
    outcome: str          # registered, dropped, overwritten
    detail: str
    metric: str = ""
    resource: str = ""


@dataclass
class Registry:
    custom: dict[MetricKey, CustomEntry] = field(default_factory=dict)
    external: dict[str, ExternalEntry] = field(default_factory=dict)
    namers: list[Namer] = field(default_factory=list)
    external_namers: list[Namer] = field(default_factory=list)
    series_sets: dict[str, SeriesSet] = field(default_factory=dict)
    series_seen: int = 0
    built_at: float = 0.0
    _why: dict = field(default_factory=dict, repr=False)
    _index: dict = field(default_factory=dict, repr=False)

    def custom_metrics(self) -> list[MetricKey]:
        return sorted(self.custom, key=lambda k: (k.group, k.resource, k.metric, k.namespaced))

    def external_metrics(self) -> list[str]:
        return sorted(self.external)

    def why_missing(self, gr: GroupResource, namespaced: bool, metric: str) -> str:
        """Why (resource, metric) is not served (cached: the registry never changes once built)."""
        key = (gr, namespaced, metric)
        hit = self._why.get(key)
        if hit is None:
            hit = self._why_missing(gr, namespaced, metric)
            if len(self._why) < 10_000:
                self._why[key] = hit
        return hit

    def _why_missing(self, gr: GroupResource, namespaced: bool, metric: str) -> str:
        """Why (resource, metric) is not served: the rule that would have to match, and what it saw."""
        scope = "namespaced" if namespaced else "cluster-scoped"
        same_metric = [k for k in self.custom if k.metric == metric]
        for k in same_metric:
            if k.group_resource == gr and k.namespaced != namespaced:
                entry = self.custom[k]
                return (f"{metric} for {gr} is registered only as {'namespaced' if k.namespaced else 'cluster-scoped'} "
                        f"(series {entry.series}, {entry.namer.path}): "
                        + ("ask under /namespaces/<ns>/" if k.namespaced else
                           "its series has no label naming a namespace, so ask without /namespaces/<ns>/"))
        reasons: list[str] = []
        if same_metric:
            others = sorted({str(k.group_resource) for k in same_metric})
            reasons.append(f"{metric} is served for {', '.join(others)}, not for {gr}")
        if not self.namers:
            return "no custom metrics rules are configured (config `rules` is empty)"
        for namer, series_name in self._candidates(self.namers, metric):
            sset = self.series_sets[namer.rule.series_query]
            api_name, why = namer.name_for(series_name)
            if api_name is None:
                reasons.append(f"{namer.path} drops series {series_name}: {why}")
                continue
            if api_name != metric:
                reasons.append(f"{namer.path} serves series {series_name} as {api_name!r}, not {metric!r}")
                continue
            shapes = sset.kept.get(series_name, set())
            labels = sorted({lbl for shape in shapes for lbl in shape if lbl != "__name__"})
            try:
                want = namer.converter.label_for(namer.converter.mapper.get(gr) or _fake(gr))
            except Exception:
                want = "?"
            reasons.append(f"{namer.path} names series {series_name} {metric!r}, but none of its labels "
                           f"({', '.join(labels) or 'none'}) maps to {gr} (it would need label {want!r} "
                           f"in resources.overrides or fitting resources.template)")
        if len(reasons) == (1 if same_metric else 0):
            queries = "; ".join(f"{n.path}: {n.rule.series_query}" for n in self.namers)
            close = difflib.get_close_matches(metric, sorted({k.metric for k in self.custom if k.group_resource == gr}), 3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            reasons.append(f"no series returned by any rule's seriesQuery is named {metric!r} after renaming "
                           f"({queries}).{hint}")
        return "; ".join(reasons)

    def _candidates(self, namers: list[Namer], metric: str, limit: int = 6) -> list[tuple[Namer, str]]:
        """The series the user probably meant: named `metric`, renamed to it, prefixed by it, or close."""
        key = tuple(n.path for n in namers)
        index = self._index.get(key)
        if index is None:   # once per registry: every name a series has or would get → (rule, series)
            index = {}
            for namer in namers:
                sset = self.series_sets.get(namer.rule.series_query)
                for series_name in sorted(set(sset.kept) | sset.rejected) if sset else ():
                    for name in {series_name, _would_be_name(namer, series_name)}:
                        if name:
                            index.setdefault(name, []).append((namer, series_name))
            self._index[key] = index
        keys = [metric] if metric in index else []
        keys += sorted(k for k in index if k.startswith(metric + "_"))[:limit]
        keys += [k for k in difflib.get_close_matches(metric, list(index), n=3, cutoff=0.85) if k not in keys]
        out: list[tuple[Namer, str]] = []
        for k in keys:
            for hit in index[k]:
                if hit not in out:
                    out.append(hit)
        return out[:limit]

    def why_missing_external(self, metric: str) -> str:
        if not self.external_namers:
            return "no externalRules are configured"
        reasons = []
        for namer, series_name in self._candidates(self.external_namers, metric):
            api_name, why = namer.name_for(series_name)
            if api_name is None:
                reasons.append(f"{namer.path} drops series {series_name}: {why}")
            elif api_name != metric:
                reasons.append(f"{namer.path} serves series {series_name} as {api_name!r}")
        if not reasons:
            close = difflib.get_close_matches(metric, sorted(self.external), 3)
            queries = "; ".join(f"{n.path}: {n.rule.series_query}" for n in self.external_namers)
            reasons.append(f"no series returned by any external rule's seriesQuery is named {metric!r} after "
                           f"renaming ({queries})" + (f". Did you mean {', '.join(close)}?" if close else ""))
        return f"no external metric {metric}: " + "; ".join(reasons)


def _fake(gr: GroupResource) -> ResourceInfo:
    return ResourceInfo(gr.group, "v1", gr.resource, gr.resource.rstrip("s"), gr.resource, True)


def _would_be_name(namer: Namer, series_name: str) -> str | None:
    from promop.goregex import expand

    m = namer.rule.name.regex.search(series_name)
    return expand(namer.rule.name.as_, namer.rule.name.regex, m) if m else None


def build(namers: list[Namer], external_namers: list[Namer], series_sets: dict[str, SeriesSet],
          events: list[Event] | None = None) -> Registry:
    """The registry for these rules and what each seriesQuery returned."""
    reg = Registry(namers=namers, external_namers=external_namers, series_sets=series_sets,
                   series_seen=sum(s.count for s in series_sets.values()), built_at=time.time())
    for namer in namers:
        sset = series_sets.get(namer.rule.series_query) or SeriesSet()
        for series_name in sorted(sset.kept):
            metric, why = namer.name_for(series_name)
            if metric is None:
                if events is not None:
                    events.append(Event(namer.path, series_name, "dropped", why))
                continue
            for shape in sorted(sset.kept[series_name]):
                found, namespaced, skipped = namer.converter.resources_for(shape)
                if not found:
                    if events is not None:
                        labels = ", ".join(x for x in shape if x != "__name__") or "none"
                        extra = f"; {'; '.join(skipped)}" if skipped else ""
                        events.append(Event(namer.path, series_name, "dropped",
                                            f"no label names a resource (labels: {labels}){extra}", metric))
                    continue
                for lr in found:
                    gr = lr.info.group_resource
                    key = MetricKey(gr.group, gr.resource, namespaced and gr not in CLUSTER_SCOPED, metric)
                    previous = reg.custom.get(key)
                    if events is not None and previous is not None and previous.namer is not namer:
                        events.append(Event(previous.namer.path, previous.series, "overwritten",
                                            f"{namer.path} registers {gr}/{metric} again (later rules win)",
                                            metric, str(gr)))
                    reg.custom[key] = CustomEntry(series_name, namer, lr.info, lr.label)
                    if events is not None:
                        events.append(Event(namer.path, series_name, "registered",
                                            f"label {lr.label} ({lr.via}) → {gr}, "
                                            f"{'namespaced' if key.namespaced else 'cluster-scoped'}",
                                            metric, str(gr)))
                for why in skipped:
                    if events is not None:
                        events.append(Event(namer.path, series_name, "note", why, metric))
        if events is not None:
            for series_name in sorted(sset.rejected):
                _, why = namer.name_for(series_name)
                events.append(Event(namer.path, series_name, "dropped", why))
    for namer in external_namers:
        sset = series_sets.get(namer.rule.series_query) or SeriesSet()
        for series_name in sorted(sset.kept):
            metric, why = namer.name_for(series_name)
            if metric is None:
                if events is not None:
                    events.append(Event(namer.path, series_name, "dropped", why))
                continue
            previous = reg.external.get(metric)
            if events is not None and previous is not None and previous.namer is not namer:
                events.append(Event(previous.namer.path, previous.series, "overwritten",
                                    f"{namer.path} registers external {metric} again (later rules win)", metric))
            reg.external[metric] = ExternalEntry(series_name, namer)
            if events is not None:
                events.append(Event(namer.path, series_name, "registered", "external metric", metric))
        if events is not None:
            for series_name in sorted(sset.rejected):
                _, why = namer.name_for(series_name)
                events.append(Event(namer.path, series_name, "dropped", why))
    return reg


def series_queries(namers: list[Namer]) -> dict[str, list[Namer]]:
    """Distinct seriesQuery → the namers sharing it (each is asked once per relist)."""
    out: dict[str, list[Namer]] = {}
    for n in namers:
        out.setdefault(n.rule.series_query, []).append(n)
    return out
