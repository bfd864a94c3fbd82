"""One discovery rule at work: series → API metric names and resources → PromQL.

Follows prometheus-adapter's `pkg/naming`: series names pass `seriesFilters`
and `name.matches`, are renamed by `name.as`; each label names a resource
through `overrides` or by fitting `resources.template`, and is resolved by the
ResourceMapper (unknown ones are skipped). Queries are the rule's
`metricsQuery` executed with `Series`, `LabelMatchers`, `LabelValuesByName`,
`GroupBy`, `GroupBySlice`.
"""

from __future__ import annotations

from dataclasses import dataclass

from promop.adapter.config import DiscoveryRule, GroupResource, ResourceMapping, ResourceRule
from promop.adapter.resources import ResourceInfo, ResourceMapper, sanitize_group
from promop.adapter.selector import Requirement, SelectorError, label_eq, matcher_for
from promop.goregex import expand
from promop.render.gotemplate import TemplateError
from promop.render.gotemplate_exec import GoMap, Struct

NAMESPACES = GroupResource("", "namespaces")
CLUSTER_SCOPED = {GroupResource("", "namespaces"), GroupResource("", "nodes"), GroupResource("", "persistentvolumes")}


class QueryError(ValueError):
    """A query that cannot be built (the message says why)."""


@dataclass(frozen=True)
class LabelResource:
    label: str
    info: ResourceInfo
    via: str  # "override" or "template"


class ResourceConverter:
    """Labels ↔ resources for one rule's `resources` block."""

    def __init__(self, mapping: ResourceMapping, mapper: ResourceMapper, path: str) -> None:
        self.mapping = mapping
        self.mapper = mapper
        self.path = path
        self.label_to: dict[str, ResourceInfo] = {}
        self.resource_to_label: dict[GroupResource, str] = {}
        self.unknown_overrides: dict[str, GroupResource] = {}
        for label, gr in mapping.overrides.items():
            info = mapper.normalize(gr)
            if info is None:
                self.unknown_overrides[label] = gr
                continue
            self.label_to[label] = info
            self.resource_to_label[info.group_resource] = label
        self._cache: dict[str, tuple[LabelResource | None, str]] = {}
        self._by_template: dict[str, ResourceInfo] | None = None

    def resolve_label(self, label: str) -> tuple[LabelResource | None, str]:
        """(the resource `label` names, or None and why not)."""
        hit = self._cache.get(label)
        if hit is not None:
            return hit
        if label in self.label_to:
            out: tuple[LabelResource | None, str] = (LabelResource(label, self.label_to[label], "override"), "")
        elif label in self.unknown_overrides:
            gr = self.unknown_overrides[label]
            out = (None, f"override {label} → {gr} names no known resource")
        elif self.mapping.label_regex is not None and label in self._template_labels():
            out = (LabelResource(label, self._template_labels()[label], "template"), "")
        elif self.mapping.label_regex is not None:
            m = self.mapping.label_regex.match(label)
            if not m:
                out = (None, "")
            else:
                gr = GroupResource(m.groupdict().get("group") or "", m.group("resource"))
                info = self.mapper.normalize(gr)
                if info is None:
                    out = (None, f"label {label} fits template {self.mapping.template!r} as {gr}, "
                                 f"which is no known resource")
                else:
                    out = (LabelResource(label, info, "template"), "")
        else:
            out = (None, "")
        self._cache[label] = out
        return out

    def _template_labels(self) -> dict[str, ResourceInfo]:
        """The label the template gives each known resource (exact where the regex guess would split
        `kube_networking_k8s_io_ingress` wrongly); the core group wins a tie."""
        if self._by_template is None:
            table: dict[str, ResourceInfo] = {}
            for info in sorted(self.mapper.infos, key=lambda i: i.group == ""):
                try:
                    text = self.mapping.label_template.execute(  # type: ignore[union-attr]
                        Struct("schema.GroupResource", Group=sanitize_group(info.group), Resource=info.singular))
                except TemplateError:
                    continue
                if text:
                    table[text] = info
            self._by_template = table
        return self._by_template

    def resources_for(self, labels: tuple[str, ...] | list[str]) -> tuple[list[LabelResource], bool, list[str]]:
        """(resources the labels name, whether one names namespaces, reasons labels were skipped)."""
        found: list[LabelResource] = []
        skipped: list[str] = []
        namespaced = False
        for label in labels:
            if label == "__name__":
                continue
            lr, why = self.resolve_label(label)
            if lr is None:
                if why:
                    skipped.append(why)
                continue
            found.append(lr)
            if lr.info.group_resource == NAMESPACES:
                namespaced = True
        return found, namespaced, skipped

    def label_for(self, info: ResourceInfo) -> str:
        """The label holding names of `info`: the override's, else the template's with the
        group sanitised and the resource singular."""
        label = self.resource_to_label.get(info.group_resource)
        if label:
            return label
        if self.mapping.label_template is None:
            raise QueryError(f"{self.path}.resources: no label for {info.group_resource} "
                             "(no override for it and no template)")
        try:
            text = self.mapping.label_template.execute(
                Struct("schema.GroupResource", Group=sanitize_group(info.group), Resource=info.singular))
        except TemplateError as exc:
            raise QueryError(f"{self.path}.resources.template: {exc}") from None
        if not text:
            raise QueryError(f"{self.path}.resources.template: empty label produced by label template")
        self.resource_to_label[info.group_resource] = text
        return text


def _selector_parts(reqs: list[Requirement]) -> tuple[list[str], dict[str, str]]:
    exprs: list[str] = []
    by_name: dict[str, str] = {}
    for r in reqs:
        expr, joined = matcher_for(r)
        exprs.append(expr)
        by_name[r.key] = joined
    return exprs, by_name


def _execute(template, args: Struct, path: str) -> str:
    try:
        text = template.execute(args)
    except TemplateError as exc:
        raise QueryError(f"{path}: {exc}") from None
    if not text:
        raise QueryError(f"{path}: empty query produced by metrics query template")
    return text


def build_query(template, path: str, converter: ResourceConverter, series: str, info: ResourceInfo,
                namespace: str, names: list[str], metric_selector: list[Requirement],
                extra_group_by: list[str] | None = None) -> str:
    """The PromQL for `names` of resource `info` (upstream's MetricsQuery.Build)."""
    if not names:
        raise QueryError("no resource names to query")
    try:
        exprs, by_name = _selector_parts(metric_selector)
    except SelectorError as exc:
        raise QueryError(str(exc)) from None
    if namespace:
        ns_label = converter.label_for(converter.mapper.get(NAMESPACES))  # type: ignore[arg-type]
        exprs.append(label_eq(ns_label, namespace))
        by_name[ns_label] = namespace
    res_label = converter.label_for(info)
    target = "|".join(names)
    exprs.append(f"{res_label}{'=~' if len(names) > 1 else '='}{_q(target)}")
    by_name[res_label] = target
    group_by = [res_label, *(extra_group_by or [])]
    args = Struct("naming.queryTemplateArgs", Series=series, LabelMatchers=",".join(exprs),
                  LabelValuesByName=GoMap(by_name, zero=""), GroupBy=",".join(group_by), GroupBySlice=group_by)
    return _execute(template, args, path)


def build_external_query(template, path: str, converter: ResourceConverter, series: str, namespace: str,
                         metric_selector: list[Requirement]) -> str:
    """upstream's BuildExternal: the selector, plus the namespace matcher when given; GroupBy empty."""
    try:
        exprs, by_name = _selector_parts(metric_selector)
    except SelectorError as exc:
        raise QueryError(str(exc)) from None
    if namespace:
        ns_label = converter.label_for(converter.mapper.get(NAMESPACES))  # type: ignore[arg-type]
        exprs.append(label_eq(ns_label, namespace))
        by_name[ns_label] = namespace
    args = Struct("naming.queryTemplateArgs", Series=series, LabelMatchers=",".join(exprs),
                  LabelValuesByName=GoMap(by_name, zero=""), GroupBy="", GroupBySlice=[])
    return _execute(template, args, path)


def _q(value: str) -> str:
    from promop.render.gotemplate_exec import go_quote

    return go_quote(value)


class Namer:
    """A compiled discovery rule."""

    def __init__(self, rule: DiscoveryRule, mapper: ResourceMapper) -> None:
        self.rule = rule
        self.path = rule.path
        self.converter = ResourceConverter(rule.resources, mapper, rule.path)
        self._name_cache: dict[str, tuple[str | None, str]] = {}

    def name_for(self, series_name: str) -> tuple[str | None, str]:
        """(API metric name, "") or (None, why the series is dropped)."""
        hit = self._name_cache.get(series_name)
        if hit is not None:
            return hit
        out: tuple[str | None, str] = (None, "")
        for f in self.rule.series_filters:
            if not f.matches(series_name):
                out = (None, f"seriesFilters {{{f}}} rejects it")
                break
        else:
            m = self.rule.name.regex.search(series_name)
            if m is None:
                out = (None, f"name.matches {self.rule.name.matches!r} does not match")
            else:
                out = (expand(self.rule.name.as_, self.rule.name.regex, m), "")
        if len(self._name_cache) < 100_000:
            self._name_cache[series_name] = out
        return out

    def query(self, series: str, info: ResourceInfo, namespace: str, names: list[str],
              metric_selector: list[Requirement]) -> str:
        return build_query(self.rule.query_template, f"{self.path}.metricsQuery", self.converter, series, info,
                           namespace, names, metric_selector)

    def external_query(self, series: str, namespace: str, metric_selector: list[Requirement]) -> str:
        ns = namespace if self.rule.resources.namespaced is not False else ""
        return build_external_query(self.rule.query_template, f"{self.path}.metricsQuery", self.converter,
                                    series, ns, metric_selector)


class ResourceNamer:
    """resourceRules.cpu or .memory, compiled."""

    def __init__(self, rule: ResourceRule, mapper: ResourceMapper) -> None:
        self.rule = rule
        self.converter = ResourceConverter(rule.resources, mapper, rule.path)
        self.mapper = mapper

    def container_query(self, namespace: str, pods: list[str]) -> str:
        info = self.mapper.get(GroupResource("", "pods"))
        assert info is not None
        return build_query(self.rule.container_template, f"{self.rule.path}.containerQuery", self.converter, "",
                           info, namespace, pods, [], [self.rule.container_label])

    def node_query(self, nodes: list[str]) -> str:
        info = self.mapper.get(GroupResource("", "nodes"))
        assert info is not None
        return build_query(self.rule.node_template, f"{self.rule.path}.nodeQuery", self.converter, "", info, "",
                           nodes, [])

    def pod_label(self) -> str:
        return self.converter.label_for(self.mapper.get(GroupResource("", "pods")))  # type: ignore[arg-type]

    def node_label(self) -> str:
        return self.converter.label_for(self.mapper.get(GroupResource("", "nodes")))  # type: ignore[arg-type]
