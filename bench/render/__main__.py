"""Render benchmark: 1,000 ServiceMonitors x 3 endpoints + 500 PrometheusRules (10,000 rules).

    python3 -m bench.render [--repeat N] [--monitors N] [--rules N] [--cli-only] [--cli-repeat N]

First issue 32's figure (bench/render/cli.py): the `promop render -f DIR --out OUT` command on
that workload, start-up subtracted, against orjson.dumps of what it wrote (target <= 25x); then,
with the renderer called in this process (skipped with --cli-only):
  full      render() with no cache (selection, CRD schema validation, config + YAML + gzip,
            rule ConfigMaps, TLS Secrets, StatefulSets)
  baseline  orjson.dumps of the same output: the config dict, every rule file's groups as
            data, and the Kubernetes objects (issue 11's floor; no YAML at all)
  emit      promop.render.emit of the config alone, against orjson.dumps of the same dict
  rerender  render() with a warm RenderCache after one ServiceMonitor changed
  refs      references() after that change, without and with the same RenderCache
            (the operator calls references() then render() on every sync)
  cold      a full render after clearing the process-wide memos (parsed PromQL, checked
            templates, emitted strings): an operator's first render after start
Targets: CLI <= 25x; rerender/full <= 0.10 (full/baseline <= 10 was issue 11's in-process target).
  --cpu     time with process CPU time instead of wall time (steadier on a loaded machine)
  --pyyaml  also time PyYAML's CSafeDumper on the config (slow: tens of seconds)
  --profile print where a full render spends its time (cProfile, top entries)
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import time
from pathlib import Path

import orjson
import yaml

from promop.render import RenderCache, RenderInputs, references, render
from promop.render.emit import emit

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
NAMESPACES = 20


def workload(monitors: int = 1000, rule_objects: int = 500) -> RenderInputs:
    prom = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {"name": "bench", "namespace": "monitoring", "uid": "uid-bench"},
        "spec": {
            "version": "v2.42.0",
            "serviceMonitorSelector": {"matchLabels": {"bench": "yes"}},
            "serviceMonitorNamespaceSelector": {},
            "ruleSelector": {},
            "ruleNamespaceSelector": {},
            "enforcedNamespaceLabel": "namespace",
            "shards": 2,
        },
    }
    sms = []
    for i in range(monitors):
        ns = f"team-{i % NAMESPACES}"
        sms.append({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {"name": f"svc-{i}", "namespace": ns, "labels": {"bench": "yes"},
                         "uid": f"sm-{i}", "resourceVersion": "1"},
            "spec": {
                "selector": {"matchLabels": {"app": f"svc-{i}", "app.kubernetes.io/part-of": "bench"}},
                "targetLabels": ["team"],
                "jobLabel": "app.kubernetes.io/name",
                "endpoints": [
                    {"port": "web", "interval": "30s", "path": "/metrics",
                     "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node_name",
                                      "action": "replace"}]},
                    {"port": "admin", "interval": "1m", "scrapeTimeout": "20s", "honorLabels": True,
                     "metricRelabelings": [{"sourceLabels": ["__name__"], "regex": "go_(gc|memstats)_.*",
                                            "action": "drop"}]},
                    {"targetPort": 9102, "scheme": "https", "tlsConfig": {"insecureSkipVerify": True}},
                ],
            },
        })
    rules = []
    for i in range(rule_objects):
        ns = f"team-{i % NAMESPACES}"
        groups = []
        for g in range(2):
            groups.append({
                "name": f"group-{i}-{g}",
                "rules": [
                    {"record": f"job:http_requests:rate5m_{i}_{g}_{r}",
                     "expr": f'sum by (job) (rate(http_requests_total{{code=~"5..",handler="/api/{r}"}}[5m]))'}
                    if r % 2 == 0 else
                    {"alert": f"HighErrorRate{i}x{g}x{r}",
                     "expr": f'job:http_requests:rate5m_{i}_{g}_{r - 1} > 0.5',
                     "for": "10m", "labels": {"severity": "warning"},
                     "annotations": {"summary": "High error rate on {{ $labels.job }}",
                                     "description": "{{ $value }} errors per second"}}
                    for r in range(10)
                ],
            })
        rules.append({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": f"rules-{i}", "namespace": ns, "uid": f"rule-{i}", "resourceVersion": "1",
                         "labels": {"bench": "yes"}},
            "spec": {"groups": groups},
        })
    namespaces = [{"metadata": {"name": f"team-{i}"}} for i in range(NAMESPACES)] + [{"metadata": {"name": "monitoring"}}]
    return RenderInputs(prometheus=prom, service_monitors=sms, prometheus_rules=rules, namespaces=namespaces)


def baseline(result, rule_specs) -> None:
    """orjson.dumps of everything the render outputs (config, rule file data, objects)."""
    orjson.dumps(result.config)
    for spec in rule_specs:
        orjson.dumps(spec)
    orjson.dumps(result.objects())


CLOCK = time.perf_counter


def timed(fn, repeat: int, before=None) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        gc.collect()
        t = CLOCK()
        fn()
        times.append(CLOCK() - t)
    return statistics.median(times)


def clear_process_memos() -> None:
    """Forget what earlier renders in this process memoised (as a freshly started operator)."""
    from promop.render import emit as emit_module
    from promop.render import rule_validation

    rule_validation.check_promql.cache_clear()
    rule_validation._template_problem.cache_clear()
    emit_module._cache.clear()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m bench.render")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pyyaml", action="store_true", help="also time PyYAML's CSafeDumper on the config")
    ap.add_argument("--profile", action="store_true", help="print where a full render spends its time")
    ap.add_argument("--cpu", action="store_true", help="measure process CPU time, not wall time")
    ap.add_argument("--monitors", type=int, default=1000, help="ServiceMonitors in the workload (default 1000)")
    ap.add_argument("--rules", type=int, default=500, help="PrometheusRules in the workload (default 500)")
    ap.add_argument("--cli-only", action="store_true", help="only issue 32's CLI figure")
    ap.add_argument("--cli-repeat", type=int, default=5, help="(start-up, render) pairs of CLI runs (default 5)")
    ap.add_argument("--root", default=None, help="run the CLI of another checkout (e.g. a baseline), not this one")
    args = ap.parse_args(argv)
    if args.monitors < 1 or args.rules < 1:
        ap.error("--monitors and --rules must be at least 1")
    global CLOCK
    CLOCK = time.process_time if args.cpu else time.perf_counter
    inputs = workload(args.monitors, args.rules)
    from bench.render import cli

    figure = cli.measure(inputs, args.cli_repeat, **({"root": Path(args.root).resolve()} if args.root else {}))
    print_rows(cli.rows(figure))
    if args.cli_only:
        return 0
    result = render(inputs)
    assert not result.rejected, result.rejected[:3]
    jobs = len(result.config["scrape_configs"])
    n_rules = sum(len(g["rules"]) for r in inputs.prometheus_rules for g in r["spec"]["groups"])
    rule_specs = [{"groups": r["spec"]["groups"]} for r in inputs.prometheus_rules]

    full = timed(lambda: render(inputs), args.repeat)
    cold = timed(lambda: render(inputs), args.repeat, before=clear_process_memos)
    from promop.render.rules import build_rule_configmaps
    rules_only = timed(lambda: build_rule_configmaps(inputs.prometheus, list(inputs.prometheus_rules), inputs.options),
                       args.repeat)
    base = timed(lambda: baseline(result, rule_specs), args.repeat)
    config_json = timed(lambda: orjson.dumps(result.config), args.repeat)
    config_emit = timed(lambda: emit(result.config), args.repeat)
    pyyaml = None
    if args.pyyaml:
        pyyaml = timed(lambda: yaml.dump(result.config, Dumper=_Dumper, default_flow_style=False, sort_keys=False,
                                         allow_unicode=True), 1)

    cache = RenderCache()
    render(inputs, cache)
    changed = copy.copy(inputs)
    sms = list(inputs.service_monitors)
    state = {"rv": 1}

    def change_one() -> None:
        state["rv"] += 1
        sm = copy.deepcopy(sms[len(sms) // 2])
        sm["metadata"]["resourceVersion"] = str(state["rv"])
        sm["spec"]["endpoints"][0]["interval"] = f"{10 + state['rv'] % 50}s"
        sms[len(sms) // 2] = sm
        changed.service_monitors = list(sms)

    def rerender() -> None:
        change_one()
        render(changed, cache)

    re = timed(rerender, args.repeat)

    rules = list(inputs.prometheus_rules)

    def rerender_rule() -> None:  # one PrometheusRule (of 500 by default) changed
        state["rv"] += 1
        rule = copy.deepcopy(rules[len(rules) // 2])
        rule["metadata"]["resourceVersion"] = str(state["rv"])
        rule["spec"]["groups"][0]["rules"][0]["expr"] = f"sum(rate(http_requests_total[{state['rv'] % 50 + 1}m]))"
        rules[len(rules) // 2] = rule
        changed.prometheus_rules = list(rules)
        render(changed, cache)

    re_rule = timed(rerender_rule, args.repeat)

    def resync() -> None:  # what the operator does per sync: references(), then render()
        change_one()
        references(changed, cache)
        render(changed, cache)

    refs_plain = timed(lambda: references(changed), args.repeat)
    refs_cached = timed(lambda: references(changed, cache), args.repeat)
    sync = timed(resync, args.repeat)
    assert references(changed, cache) == references(changed)
    # purity spot-check: the cached render equals a fresh one
    assert render(changed, cache).config_text == render(changed).config_text

    rows = [
        ("workload", f"{len(inputs.service_monitors)} ServiceMonitors, {jobs} jobs, "
                     f"{len(inputs.prometheus_rules)} PrometheusRules, {n_rules} rules, "
                     f"config {len(result.config_text) / 1e6:.1f} MB"),
        ("clock", "process CPU time" if args.cpu else "wall time"),
        ("full render (median)", f"{full * 1000:.0f} ms (of which rule ConfigMaps {rules_only * 1000:.0f})"),
        ("full render, process memos cleared", f"{cold * 1000:.0f} ms ({cold / base:.1f}x orjson)"),
        ("orjson.dumps of the same output", f"{base * 1000:.0f} ms"),
        ("full / orjson ratio (target <= 10)", f"{full / base:.1f}"),
        ("config: emit / orjson.dumps", f"{config_emit * 1000:.0f} ms / {config_json * 1000:.0f} ms "
                                        f"= {config_emit / config_json:.1f}"),
        *([("config: PyYAML CSafeDumper", f"{pyyaml * 1000:.0f} ms ({pyyaml / config_emit:.0f}x emit)")]
          if pyyaml is not None else []),
        ("re-render, 1 ServiceMonitor changed, RenderCache", f"{re * 1000:.0f} ms"),
        ("re-render / full (target <= 10%)", f"{re / full * 100:.1f}%"),
        ("re-render, 1 PrometheusRule changed, RenderCache", f"{re_rule * 1000:.0f} ms "
                                                             f"({re_rule / full * 100:.1f}% of full)"),
        ("references(), no cache / RenderCache", f"{refs_plain * 1000:.1f} ms / {refs_cached * 1000:.1f} ms "
                                                  f"({refs_plain / refs_cached:.0f}x)"),
        ("sync path: references() + render(), cached, 1 change", f"{sync * 1000:.0f} ms"),
    ]
    print_rows(rows)
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.runcall(render, inputs)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    return 0


def print_rows(rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
