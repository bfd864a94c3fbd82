"""`promop explain`: why a ServiceMonitor, PodMonitor or PrometheusRule is (not) used.

For every Prometheus in the files: whether it selects the object and, if so,
the scrape jobs or rule file it becomes, or exactly why not (the selector
requirement that failed, or the rejection with its field). Exit 0 when at
least one Prometheus uses the object, 1 when none does, 2 on input errors.
"""

from __future__ import annotations

import argparse
import sys

from promop.commands.render import EXIT_INPUT, EXIT_OK, EXIT_REJECTED, add_file_argument, load_or_exit

KIND_ALIASES = {
    "Prometheus": ("prometheus", "prometheuses", "prom"),
    "PrometheusAgent": ("prometheusagent", "prometheusagents", "promagent"),
    "ServiceMonitor": ("servicemonitor", "servicemonitors", "smon"),
    "PodMonitor": ("podmonitor", "podmonitors", "pmon"),
    "PrometheusRule": ("prometheusrule", "prometheusrules", "promrule"),
    "Probe": ("probe", "probes", "prb"),
}
KIND_ALIASES["ScrapeConfig"] = ("scrapeconfig", "scrapeconfigs", "scfg")
RULES_DIR = "/etc/prometheus/rules"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "explain", help="say which Prometheus objects use a monitor or rule, and why (not)",
        description="Explain whether each Prometheus in the files selects the object, what it becomes "
                    "(scrape jobs or a rule file) or exactly why not.")
    parser.add_argument("kind", help="ServiceMonitor (smon), PodMonitor (pmon), PrometheusRule (promrule), Probe, "
                                     "ScrapeConfig (scfg), or Prometheus (prom) for everything one Prometheus selects "
                                     "and why, or ThanosRuler (ruler) for the PrometheusRules one ThanosRuler selects")
    parser.add_argument("name", metavar="NAMESPACE/NAME", help="the object; the namespace defaults to 'default'")
    add_file_argument(parser)
    parser.set_defaults(func=run)


def canonical_kind(text: str) -> str | None:
    low = text.lower().split(".", 1)[0]  # also accept servicemonitors.monitoring.coreos.com
    for kind, aliases in KIND_ALIASES.items():
        if low in aliases:
            return kind
    return None


def run(args: argparse.Namespace) -> int:
    from promop.render.model import obj_meta
    from promop.render.offline import render_loaded

    from promop.render.alertmanager import offline as am_offline  # Alertmanager objects (hook)

    from promop.render.thanos import offline as tr_offline  # ThanosRuler objects (hook)

    if tr_offline.is_kind(args.kind):
        namespace, _, name = args.name.rpartition("/")
        loaded = load_or_exit(args.files)
        if loaded is None:
            return EXIT_INPUT
        lines, ok = tr_offline.explain(namespace or "default", name, loaded)
        print("\n".join(lines))
        return EXIT_INPUT if lines[0].startswith("error:") else EXIT_OK if ok else EXIT_REJECTED
    am_kind = am_offline.canonical_kind(args.kind)
    if am_kind is not None:
        namespace, _, name = args.name.rpartition("/")
        loaded = load_or_exit(args.files)
        if loaded is None:
            return EXIT_INPUT
        lines, used = am_offline.explain(am_kind, namespace or "default", name, loaded)
        print("\n".join(lines))
        return EXIT_INPUT if lines[0].startswith("error:") else EXIT_OK if used else EXIT_REJECTED
    kind = canonical_kind(args.kind)
    if kind is None:
        print(f"error: unknown kind {args.kind!r}; use ServiceMonitor (smon), PodMonitor (pmon), "
              "PrometheusRule (promrule), Probe or Prometheus (prom)", file=sys.stderr)
        return EXIT_INPUT
    namespace, _, name = args.name.rpartition("/")
    namespace = namespace or "default"
    loaded = load_or_exit(args.files)
    if loaded is None:
        return EXIT_INPUT
    if not any(obj_meta(o) == (namespace, name) for o in loaded.of(kind)):
        print(f"error: {kind} {namespace}/{name} not found in the given files", file=sys.stderr)
        return EXIT_INPUT
    if not loaded.of("Prometheus") and not loaded.of("PrometheusAgent"):
        print(f"{kind} {namespace}/{name}: not used: no Prometheus object in the given files")
        return EXIT_REJECTED
    rendered = render_loaded(loaded)
    if kind in ("Prometheus", "PrometheusAgent"):
        lines, ok = explain_prometheus(namespace, name, rendered, kind)
        print("\n".join(lines))
        return EXIT_OK if ok else EXIT_REJECTED
    lines, used = explain(kind, namespace, name, rendered)
    if not loaded.of("Namespace") and any("not selected: namespace '" in line for line in lines):
        lines.append("note: the files hold no Namespace objects, so every namespace counts as unlabelled; "
                     "add the Namespace manifests with -f to evaluate namespace selectors")
    print(f"{kind} {namespace}/{name}:")
    for line in lines:
        print(f"  {line}")
    return EXIT_OK if used else EXIT_REJECTED


def explain(kind: str, namespace: str, name: str, rendered) -> tuple[list[str], bool]:
    """(one line per Prometheus and per warning, whether any Prometheus uses the object)."""
    lines: list[str] = []
    used = False
    me = (kind, namespace, name)
    for prometheus, reason in rendered.failed:
        md = prometheus["metadata"]
        lines.append(f"{prometheus.get('kind') or 'Prometheus'} {md['namespace']}/{md['name']}: could not render: {reason}")
    for prometheus, result in rendered.results:
        md = prometheus["metadata"]
        who = f"{prometheus.get('kind') or 'Prometheus'} {md['namespace']}/{md['name']}"
        decision = next((d for d in result.selection if (d.kind, d.namespace, d.name) == me), None)
        rejections = [p for p in result.rejected if (p.kind, p.namespace, p.name) == me]
        if decision is None:
            lines.append(f"{who}: not considered (no selection decision was recorded)")
        elif not decision.selected:
            lines.append(f"{who}: not selected: {decision.reason}")
        elif rejections:
            for p in rejections:
                lines.append(f"{who}: selected but rejected: {p.field}: {p.message}")
        else:
            used = True
            lines.append(f"{who}: selected; {_becomes(kind, namespace, name, result)}")
    for p in rendered.warnings:
        if (p.kind, p.namespace, p.name) == me:
            lines.append(f"warning: {p.field}: {p.message}")
    return lines, used


def _becomes(kind: str, namespace: str, name: str, result) -> str:
    if kind == "PrometheusRule":
        where = result.rule_files.get((namespace, name))
        if not where:
            return "but it produced no rule file"
        cm, key = where
        return f"rule file {RULES_DIR}/{cm}/{key} (ConfigMap {cm}, key {key})"
    jobs = result.jobs.get((kind, namespace, name)) or []
    if not jobs:
        return "but it produced no scrape job (no endpoints?)"
    return "scrape jobs: " + ", ".join(jobs)


def explain_prometheus(namespace: str, name: str, rendered, kind: str = "Prometheus") -> tuple[list[str], bool]:
    """Every candidate object of one Prometheus (or PrometheusAgent): what it becomes, or why it is not used."""
    def mine(p: dict) -> bool:
        return (p.get("kind") or "Prometheus", p["metadata"]["namespace"], p["metadata"]["name"]) == (kind, namespace, name)

    for prometheus, reason in rendered.failed:
        if mine(prometheus):
            return [f"{kind} {namespace}/{name}: could not render: {reason}"], False
    result = next(r for p, r in rendered.results if mine(p))
    jobs = sum(len(j) for j in result.jobs.values())
    workload = (f"{len(result.daemonsets)} DaemonSet(s)" if getattr(result, "daemonsets", None)
                else f"{len(result.statefulsets)} StatefulSet(s)")
    lines = [f"{kind} {namespace}/{name}: {jobs} scrape jobs, {len(result.rule_files)} rule files, {workload}"]
    rejected = {(p.kind, p.namespace, p.name): p for p in result.rejected}
    for d in sorted(result.selection, key=lambda d: (d.kind, d.namespace, d.name)):
        who = f"{d.kind} {d.namespace}/{d.name}"
        if not d.selected:
            lines.append(f"  {who}: not selected: {d.reason}")
        elif (d.kind, d.namespace, d.name) in rejected:
            p = rejected[(d.kind, d.namespace, d.name)]
            lines.append(f"  {who}: selected but rejected: {p.field}: {p.message}")
        else:
            lines.append(f"  {who}: selected; {_becomes(d.kind, d.namespace, d.name, result)}")
    for p in result.warnings:
        if (p.kind, p.namespace, p.name) == (kind, namespace, name):
            lines.append(f"  warning: {p.field}: {p.message}")
    return lines, True
