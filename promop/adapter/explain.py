"""`promop adapter explain`: why a metric is (not) served, and the PromQL a request would run.

Runs discovery exactly as the server does (the same Namer and registry code),
recording each decision: which rule matched which series, what API name and
resources it became, why a series was dropped (filter, name, no resource
label, unknown resource) and which later rule overwrote an earlier one. With
`--series FILE` it works offline: each rule's seriesQuery is evaluated
against the given label sets.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from urllib.parse import parse_qs, unquote, urlsplit

from promop.adapter.app import compile_state
from promop.adapter.config import ConfigError, load_config
from promop.adapter.naming import QueryError
from promop.adapter.provider import CUSTOM, EXTERNAL, RESOURCE, State
from promop.adapter.registry import Event, SeriesSet, build, collect, series_queries
from promop.adapter.resources import ResourceMapper
from promop.adapter.selector import SelectorError, parse_selector
from promop.goregex import compile_go


class ExplainError(Exception):
    pass


# -- offline selector evaluation --------------------------------------------------------------


def series_matcher(selector: str):
    """A predicate over label sets for a series selector (what /api/v1/series?match[]= does)."""
    import promql_parser

    expr = promql_parser.parse(selector)
    matchers = []
    if getattr(expr, "name", None):
        matchers.append(("__name__", "=", expr.name))
    for m in expr.matchers.matchers:
        op = {"MatchOp.Equal": "=", "MatchOp.NotEqual": "!=", "MatchOp.Re": "=~", "MatchOp.NotRe": "!~"}[str(m.op)]
        matchers.append((m.name, op, m.value))
    compiled = [(n, op, v, compile_go(f"^(?:{v})$") if op in ("=~", "!~") else None) for n, op, v in matchers]

    def match(labels: dict[str, str]) -> bool:
        for name, op, value, rx in compiled:
            actual = labels.get(name, "")
            if op == "=" and actual != value or op == "!=" and actual == value:
                return False
            if op == "=~" and not rx.match(actual) or op == "!~" and rx.match(actual):
                return False
        return True

    return match


def load_series_file(path: str) -> list[dict[str, str]]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise ExplainError(f"cannot read --series {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ExplainError(f"--series {path} is not JSON: {exc}") from None
    if isinstance(data, dict):
        data = data.get("data")
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ExplainError(f"--series {path} must be a JSON list of label sets (or a /api/v1/series answer)")
    return data


def discover_offline(state: State, label_sets: list[dict[str, str]]) -> dict[str, SeriesSet]:
    out = {}
    for query, namers in series_queries(state.namers + state.external_namers).items():
        match = series_matcher(query)
        out[query] = collect([[ls for ls in label_sets if match(ls)]], namers)
    return out


# -- API paths ----------------------------------------------------------------------------------


def explain_path(state: State, target: str) -> list[str]:
    """The registry lookup and the PromQL for one API path."""
    url = urlsplit(target)
    params = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
    parts = [unquote(p) for p in url.path.strip("/").split("/") if p]
    if len(parts) < 4 or parts[0] != "apis":
        raise ExplainError(f"{target!r} is not a metrics API path (/apis/<group>/<version>/...)")
    group, version, rest = parts[1], parts[2], parts[3:]
    out = [f"request: GET {target}"]
    try:
        if group == CUSTOM:
            out += _explain_custom(state, rest, params)
        elif group == EXTERNAL:
            if len(rest) != 3 or rest[0] != "namespaces":
                raise ExplainError("external paths look like /apis/external.metrics.k8s.io/v1beta1/namespaces/NS/METRIC")
            ns, metric = rest[1], rest[2]
            entry = state.registry.external.get(metric)
            if entry is None:
                out.append(f"not served (404): {state.registry.why_missing_external(metric)}")
                return out
            sel = parse_selector(params.get("labelSelector"), "labelSelector")
            out.append(f"external metric {metric}: series {entry.series}, {entry.namer.path}")
            out.append(f"PromQL: {entry.namer.external_query(entry.series, ns, sel)}")
        elif group == RESOURCE:
            out += _explain_resource(state, rest)
        else:
            raise ExplainError(f"unknown API group {group!r}")
    except (QueryError, SelectorError) as exc:
        out.append(f"error: {exc}")
    return out


def _explain_custom(state: State, rest: list[str], params: dict[str, str]) -> list[str]:
    from promop.adapter.config import GroupResource
    from promop.adapter.registry import MetricKey

    if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "metrics":
        resource, namespace, name, metric = "namespaces", None, rest[1], rest[3]
    elif len(rest) == 5 and rest[0] == "namespaces":
        resource, namespace, name, metric = rest[2], rest[1], rest[3], rest[4]
    elif len(rest) == 3:
        resource, namespace, name, metric = rest[0], None, rest[1], rest[2]
    else:
        raise ExplainError("custom paths look like .../namespaces/NS/RESOURCE/NAME/METRIC or .../RESOURCE/NAME/METRIC")
    res, _, grp = resource.partition(".")
    info = state.mapper.normalize(GroupResource(grp, res))
    if info is None:
        return [f"not served (404): no resource {resource!r} is known"]
    key = MetricKey(info.group, info.resource, namespace is not None, metric)
    entry = state.registry.custom.get(key)
    if entry is None:
        return [f"not served (404): {state.registry.why_missing(info.group_resource, namespace is not None, metric)}"]
    msel = parse_selector(params.get("metricLabelSelector"), "metricLabelSelector")
    out = [f"metric {metric} for {info.group_resource} ({'namespaced' if key.namespaced else 'cluster-scoped'}): "
           f"series {entry.series}, {entry.namer.path}, objects named by label "
           f"{entry.namer.converter.label_for(info)!r}"]
    if name == "*":
        sel = params.get("labelSelector") or ""
        out.append(f"the objects: {info.resource} matching labelSelector {sel or '(everything)'}"
                   f"{f' in namespace {namespace}' if namespace else ''}, listed from the API server; "
                   "with two of them, NAME1 and NAME2:")
        names = ["NAME1", "NAME2"]
    else:
        names = [name]
    out.append(f"PromQL: {entry.namer.query(entry.series, info, namespace or '', names, msel)}")
    return out


def _explain_resource(state: State, rest: list[str]) -> list[str]:
    if state.cpu is None or state.memory is None:
        return ["not served: resourceRules is not configured"]
    if rest and rest[0] == "nodes":
        nodes = [rest[1]] if len(rest) > 1 else ["NODE1", "NODE2"]
        return [f"cpu PromQL: {state.cpu.node_query(nodes)}", f"memory PromQL: {state.memory.node_query(nodes)}",
                "a node missing either result is left out (upstream logs 'missing CPU for node')"]
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] == "pods":
        ns = rest[1]
        pods = [rest[3]] if len(rest) > 3 else ["POD1", "POD2"]
        return [f"cpu PromQL: {state.cpu.container_query(ns, pods)}",
                f"memory PromQL: {state.memory.container_query(ns, pods)}",
                "a pod missing either result is left out; a container with only one gets 0 for the other"]
    return ["resource paths look like .../nodes[/NAME] or .../namespaces/NS/pods[/NAME]"]


# -- output -------------------------------------------------------------------------------------


def _relevant(e: Event, target: str) -> bool:
    return not target or target in (e.series, e.metric) or e.series.startswith(target)


def render_text(state: State, events: list[Event], source: str, target: str) -> str:
    cfg = state.config
    lines = [f"series: {source}",
             f"rules: {len(cfg.rules)}, externalRules: {len(cfg.external_rules)}, "
             f"resourceRules: {'set' if cfg.resource_rules else 'not set'}"]
    for w in cfg.warnings:
        lines.append(f"warning: {w}")
    for namer in state.namers + state.external_namers:
        mine = [e for e in events if e.rule == namer.path and _relevant(e, target)]
        sset = state.registry.series_sets.get(namer.rule.series_query)
        seen = sset.count if sset else 0
        lines.append("")
        lines.append(f"{namer.path}: seriesQuery {namer.rule.series_query}  ({seen} series returned)")
        if not mine:
            lines.append("  (nothing" + (f" about {target!r}" if target else "") + ")")
        for e in mine:
            if e.outcome == "registered":
                lines.append(f"  + {e.series} → {e.metric}: {e.detail}")
            elif e.outcome == "overwritten":
                lines.append(f"  ~ {e.series} → {e.metric}: overwritten: {e.detail}")
            elif e.outcome == "note":
                lines.append(f"    note: {e.detail}")
            else:
                lines.append(f"  - {e.series}{f' → {e.metric}' if e.metric else ''}: dropped: {e.detail}")
    served = [k for k in state.registry.custom_metrics() if not target or k.metric == target]
    lines.append("")
    lines.append("served custom metrics:" if served or not target else f"no custom metric named {target!r} is served")
    for k in served:
        res = f"{k.resource}.{k.group}" if k.group else k.resource
        e = state.registry.custom[k]
        lines.append(f"  {res}/{k.metric} ({'namespaced' if k.namespaced else 'cluster-scoped'}) "
                     f"← series {e.series} ({e.namer.path})")
    ext = [m for m in state.registry.external_metrics() if not target or m == target]
    if ext:
        lines.append("served external metrics:")
        for m in ext:
            e = state.registry.external[m]
            lines.append(f"  {m} ← series {e.series} ({e.namer.path})")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    state = compile_state(cfg, ResourceMapper())
    try:
        if args.series:
            label_sets = load_series_file(args.series)
            sets = discover_offline(state, label_sets)
            source = f"{len(label_sets)} label sets from {args.series}"
        elif args.prometheus_url:
            from promop.adapter.app import discover_series
            from promop.duration import parse_go_seconds
            from promop.prom import PromError, PrometheusClient

            try:
                max_age = parse_go_seconds(args.metrics_max_age)
            except ValueError as exc:
                raise ExplainError(f"--metrics-max-age: {exc}") from None
            try:
                sets = discover_series(PrometheusClient(args.prometheus_url, timeout=60),
                                       state.namers + state.external_namers, start=time.time() - max_age)
            except PromError as exc:
                raise ExplainError(str(exc)) from None
            source = f"Prometheus {args.prometheus_url} (series of the last {args.metrics_max_age})"
        else:
            raise ExplainError("give --prometheus-url URL, or --series FILE to work offline")
        events: list[Event] = []
        state.registry = build(state.namers, state.external_namers, sets, events)
        target = args.target or ""
        if target.startswith("/apis/"):
            if args.output == "json":
                print(json.dumps({"path": target, "explanation": explain_path(state, target)}, indent=2))
            else:
                print("\n".join(explain_path(state, target)))
            return 0
        if args.output == "json":
            print(json.dumps({"source": source, "events": [asdict(e) for e in events if _relevant(e, target)],
                              "custom": [asdict(k) for k in state.registry.custom_metrics()],
                              "external": state.registry.external_metrics()}, indent=2))
        else:
            sys.stdout.write(render_text(state, events, source, target))
        return 0
    except ExplainError as exc:
        print(f"promop adapter explain: {exc}", file=sys.stderr)
        return 2

