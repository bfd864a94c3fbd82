"""prometheus-adapter's configuration file, read with its semantics and checked fully.

The schema is upstream's `pkg/config` (`rules`, `externalRules`,
`resourceRules`); upstream decodes it strictly, so an unknown field is an
error here too. Unlike upstream, every problem is collected with its path
(`rules[2].name.matches: ...`) instead of stopping at the first, and
templates and regexes are compiled at load time rather than failing on the
first request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import promql_parser
import yaml

from promop.goregex import GoRegexError as RegexError, GoRegexp, compile_go
from promop.duration import DurationError, parse_duration
from promop.render.gotemplate import TemplateError
from promop.render.gotemplate_exec import GoMap, Struct, Template

DELIMS = ("<<", ">>")


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(ValueError):
    """An unusable configuration; `problems` lists every one found, with its path."""

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        self.problems = problems
        self.source = source
        head = f"invalid adapter config{f' {source}' if source else ''}"
        super().__init__(head + ":\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class GroupResource:
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass
class RegexFilter:
    pattern: str
    positive: bool
    regex: GoRegexp

    def matches(self, name: str) -> bool:
        return (self.regex.search(name) is not None) == self.positive

    def __str__(self) -> str:
        return f"{'is' if self.positive else 'isNot'}: {self.pattern}"


@dataclass
class ResourceMapping:
    template: str = ""
    overrides: dict[str, GroupResource] = field(default_factory=dict)
    namespaced: bool | None = None
    label_template: Template | None = None
    label_regex: GoRegexp | None = None   # the template turned back into a label matcher


@dataclass
class NameMapping:
    matches: str
    as_: str
    regex: GoRegexp


@dataclass
class DiscoveryRule:
    path: str                      # "rules[0]" or "externalRules[1]": how explain names it
    series_query: str
    series_filters: list[RegexFilter]
    resources: ResourceMapping
    name: NameMapping
    metrics_query: str
    query_template: Template

    def filters(self) -> list[RegexFilter]:
        """The explicit filters plus the implicit `is: <name.matches>`."""
        implicit = RegexFilter(self.name.matches, True, self.name.regex)
        return [*self.series_filters, implicit] if self.name.matches else list(self.series_filters)


@dataclass
class ResourceRule:
    path: str
    container_query: str
    node_query: str
    resources: ResourceMapping
    container_label: str
    container_template: Template
    node_template: Template


@dataclass
class ResourceRules:
    cpu: ResourceRule
    memory: ResourceRule
    window: str
    window_seconds: float


@dataclass
class AdapterConfig:
    rules: list[DiscoveryRule] = field(default_factory=list)
    external_rules: list[DiscoveryRule] = field(default_factory=list)
    resource_rules: ResourceRules | None = None
    warnings: list[Problem] = field(default_factory=list)


class _Reader:
    """Walks the decoded YAML, recording problems with their paths."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def err(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def mapping(self, value: Any, path: str, allowed: tuple[str, ...]) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.err(path, f"must be a mapping, got {_type(value)}")
            return {}
        for key in value:
            if key not in allowed:
                hint = _closest(str(key), allowed)
                self.err(f"{path}.{key}" if path else str(key),
                         f"unknown field{f' (did you mean {hint!r}?)' if hint else ''}; "
                         f"allowed: {', '.join(allowed)}")
        return value

    def string(self, m: dict, key: str, path: str, required: bool = False) -> str:
        value = m.get(key)
        if value is None:
            if required:
                self.err(_join(path, key), "is required")
            return ""
        if not isinstance(value, str):
            self.err(_join(path, key), f"must be a string, got {_type(value)}")
            return ""
        if required and not value.strip():
            self.err(_join(path, key), "must not be empty")
        return value

    def regex(self, pattern: str, path: str) -> GoRegexp | None:
        try:
            return compile_go(pattern)
        except RegexError as exc:
            self.err(path, f"invalid regular expression {pattern!r}: {exc}")
            return None

    def template(self, text: str, path: str, name: str) -> Template | None:
        try:
            return Template(text, name=name, delims=DELIMS)
        except TemplateError as exc:
            self.err(path, str(exc))
            return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(value), type(value).__name__)


def _closest(word: str, options: tuple[str, ...]) -> str | None:
    import difflib

    found = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return found[0] if found else None


def _resources(r: _Reader, value: Any, path: str, allow_namespaced: bool) -> ResourceMapping:
    allowed = ("template", "overrides", "namespaced")
    m = r.mapping(value, path, allowed)
    out = ResourceMapping()
    out.template = r.string(m, "template", path)
    if out.template:
        t = r.template(out.template, _join(path, "template"), "resource-label")
        if t is not None:
            out.label_template = t
            try:
                raw = t.execute(Struct("schema.GroupResource", Group="(?P<group>.+?)", Resource="(?P<resource>.+?)"))
            except TemplateError as exc:
                r.err(_join(path, "template"), f"unable to convert label template to matcher: {exc}")
                raw = None
            if raw is not None:
                if not raw:
                    r.err(_join(path, "template"), "unable to convert label template to matcher: empty template")
                else:
                    try:
                        rx = compile_go("^" + raw + "$")
                    except RegexError as exc:
                        r.err(_join(path, "template"), f"unable to convert label template to matcher: {exc}")
                        rx = None
                    if rx is not None and "resource" not in rx.groupindex:
                        r.err(_join(path, "template"), "must include at least `<<.Resource>>` in the label template")
                    elif rx is not None:
                        out.label_regex = rx
    overrides = m.get("overrides")
    if overrides is not None:
        if not isinstance(overrides, dict):
            r.err(_join(path, "overrides"), f"must be a mapping of label name to {{group, resource}}, got {_type(overrides)}")
        else:
            for label, gr in overrides.items():
                opath = f"{path}.overrides.{label}"
                if not isinstance(label, str) or not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", label):
                    r.err(opath, f"{label!r} is not a valid Prometheus label name")
                    continue
                g = r.mapping(gr, opath, ("group", "resource"))
                if not isinstance(gr, dict):
                    continue
                resource = r.string(g, "resource", opath, required=True)
                group = r.string(g, "group", opath)
                if resource:
                    out.overrides[label] = GroupResource(group, resource)
    if "namespaced" in m:
        ns = m["namespaced"]
        if not isinstance(ns, bool):
            r.err(_join(path, "namespaced"), f"must be true or false, got {ns!r}")
        else:
            out.namespaced = ns
            if not allow_namespaced:
                r.warnings.append(Problem(_join(path, "namespaced"), "only externalRules use `namespaced`; ignored here"))
    return out


def _sample_query_args() -> Struct:
    return Struct("naming.queryTemplateArgs", Series="sample_series", LabelMatchers='namespace="ns",pod="p"',
                  LabelValuesByName=GoMap({"namespace": "ns", "pod": "p"}, zero=""),
                  GroupBy="pod", GroupBySlice=["pod"])


def _check_promql(r: _Reader, template: Template, path: str, args: Struct) -> None:
    """Warn (not fail) when the template renders to PromQL that does not parse."""
    try:
        text = template.execute(args)
    except TemplateError as exc:
        r.err(path, str(exc))
        return
    if not text.strip():
        r.err(path, "renders to an empty query")
        return
    try:
        promql_parser.parse(text)
    except Exception as exc:  # the parser raises its own error types
        r.warnings.append(Problem(path, f"renders to PromQL that may not parse ({exc}): {text}"))


def _rule(r: _Reader, value: Any, path: str, external: bool) -> DiscoveryRule | None:
    allowed = ("seriesQuery", "seriesFilters", "resources", "name", "metricsQuery")
    if not isinstance(value, dict):
        r.err(path, f"must be a mapping, got {_type(value)}")
        return None
    before = len(r.problems)
    m = r.mapping(value, path, allowed)
    series_query = r.string(m, "seriesQuery", path, required=True)
    if series_query.strip():
        try:
            expr = promql_parser.parse(series_query)
            if type(expr).__name__ != "VectorSelector":
                r.err(_join(path, "seriesQuery"), f"must be a series selector such as {{__name__=~\"^container_.*\"}}, "
                                                 f"not an expression ({series_query})")
        except Exception as exc:
            r.err(_join(path, "seriesQuery"), f"is not a valid series selector: {exc}")
    filters: list[RegexFilter] = []
    raw_filters = m.get("seriesFilters")
    if raw_filters is not None and not isinstance(raw_filters, list):
        r.err(_join(path, "seriesFilters"), f"must be a list of {{is: regex}} or {{isNot: regex}}, got {_type(raw_filters)}")
        raw_filters = []
    for i, f in enumerate(raw_filters or ()):
        fpath = f"{path}.seriesFilters[{i}]"
        fm = r.mapping(f, fpath, ("is", "isNot"))
        if not isinstance(f, dict):
            continue
        is_, is_not = r.string(fm, "is", fpath), r.string(fm, "isNot", fpath)
        if is_ and is_not:
            r.err(fpath, f"cannot have both an `is` ({is_!r}) and `isNot` ({is_not!r}) expression in a single filter")
            continue
        if not is_ and not is_not:
            r.err(fpath, "must have either an `is` or `isNot` expression")
            continue
        rx = r.regex(is_ or is_not, _join(fpath, "is" if is_ else "isNot"))
        if rx is not None:
            filters.append(RegexFilter(is_ or is_not, bool(is_), rx))
    resources = _resources(r, m.get("resources"), _join(path, "resources"), allow_namespaced=external)
    nm = r.mapping(m.get("name"), _join(path, "name"), ("matches", "as"))
    matches = r.string(nm, "matches", _join(path, "name"))
    as_ = r.string(nm, "as", _join(path, "name"))
    name_rx = r.regex(matches or ".*", _join(path, "name.matches"))
    if name_rx is not None and not as_:
        if name_rx.groups == 0:
            as_ = "$0"
        elif name_rx.groups == 1:
            as_ = "$1"
        else:
            r.err(_join(path, "name.as"), f"is required: name.matches {matches!r} has {name_rx.groups} capture groups, "
                                          "so say which to use, e.g. as: \"${1}_${2}\"")
    metrics_query = r.string(m, "metricsQuery", path, required=True)
    template = r.template(metrics_query, _join(path, "metricsQuery"), "metrics-query") if metrics_query.strip() else None
    if template is not None:
        args = _sample_query_args()
        if external:
            args = Struct("naming.queryTemplateArgs", **{**args, "GroupBy": "", "GroupBySlice": []})
        _check_promql(r, template, _join(path, "metricsQuery"), args)
    if not external and not resources.template and not resources.overrides:
        r.warnings.append(Problem(_join(path, "resources"), "maps no label to a resource (no template, no overrides): "
                                                           "its series can never be served"))
    if len(r.problems) > before or template is None or name_rx is None:
        return None
    return DiscoveryRule(path, series_query, filters, resources, NameMapping(matches or ".*", as_, name_rx),
                         metrics_query, template)


def _resource_rule(r: _Reader, value: Any, path: str) -> ResourceRule | None:
    before = len(r.problems)
    m = r.mapping(value, path, ("containerQuery", "nodeQuery", "resources", "containerLabel"))
    if value is None:
        r.err(path, "is required (containerQuery, nodeQuery, resources, containerLabel)")
        return None
    cq = r.string(m, "containerQuery", path, required=True)
    nq = r.string(m, "nodeQuery", path, required=True)
    resources = _resources(r, m.get("resources"), _join(path, "resources"), allow_namespaced=False)
    label = r.string(m, "containerLabel", path)
    if not label:
        r.warnings.append(Problem(_join(path, "containerLabel"), "is empty: container names will all be \"\""))
    ct = r.template(cq, _join(path, "containerQuery"), "resource-container-query") if cq.strip() else None
    nt = r.template(nq, _join(path, "nodeQuery"), "resource-node-query") if nq.strip() else None
    if ct is not None:
        _check_promql(r, ct, _join(path, "containerQuery"),
                      Struct("naming.queryTemplateArgs", Series="", LabelMatchers='namespace="ns",pod=~"a|b"',
                             LabelValuesByName=GoMap({"namespace": "ns", "pod": "a|b"}, zero=""),
                             GroupBy=f"pod,{label or 'container'}", GroupBySlice=["pod", label or "container"]))
    if nt is not None:
        _check_promql(r, nt, _join(path, "nodeQuery"),
                      Struct("naming.queryTemplateArgs", Series="", LabelMatchers='node=~"a|b"',
                             LabelValuesByName=GoMap({"node": "a|b"}, zero=""), GroupBy="node", GroupBySlice=["node"]))
    if not resources.template and not resources.overrides:
        r.err(_join(path, "resources"), "must map labels to pods, namespaces and nodes (overrides or template)")
    if len(r.problems) > before or ct is None or nt is None:
        return None
    return ResourceRule(path, cq, nq, resources, label, ct, nt)


def parse_config(data: Any) -> AdapterConfig:
    """Check decoded YAML; raise ConfigError listing every problem."""
    r = _Reader()
    top = r.mapping(data, "", ("rules", "externalRules", "resourceRules"))
    if data is not None and not isinstance(data, dict):
        raise ConfigError(r.problems)
    cfg = AdapterConfig()
    for key, external, target in (("rules", False, cfg.rules), ("externalRules", True, cfg.external_rules)):
        rules = top.get(key)
        if rules is None:
            continue
        if not isinstance(rules, list):
            r.err(key, f"must be a list of rules, got {_type(rules)}")
            continue
        for i, rule in enumerate(rules):
            parsed = _rule(r, rule, f"{key}[{i}]", external)
            if parsed is not None:
                target.append(parsed)
    rr = top.get("resourceRules")
    if rr is not None:
        m = r.mapping(rr, "resourceRules", ("cpu", "memory", "window"))
        cpu = _resource_rule(r, m.get("cpu"), "resourceRules.cpu")
        mem = _resource_rule(r, m.get("memory"), "resourceRules.memory")
        window = m.get("window")
        seconds = 0.0
        if window is None:
            r.err("resourceRules.window", "is required: the window the queries average over, e.g. 5m")
        else:
            try:
                seconds = parse_duration(window) / 1000
            except DurationError as exc:
                r.err("resourceRules.window", str(exc))
        if cpu and mem and not r.problems:
            cfg.resource_rules = ResourceRules(cpu, mem, str(window), seconds)
    if r.problems:
        raise ConfigError(r.problems)
    cfg.warnings = r.warnings
    return cfg


def load_config_text(text: str, source: str = "") -> AdapterConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError([Problem(where, f"not valid YAML: {problem}")], source) from None
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(exc.problems, source) from None


def load_config(path: str) -> AdapterConfig:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigError([Problem("", f"cannot read {path}: {exc.strerror}")], path) from None
    return load_config_text(text, path)
