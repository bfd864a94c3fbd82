"""Render benchmark: 1,000 ServiceMonitors x 3 endpoints + 500 PrometheusRules (10,000 rules).

    python3 -m bench.render [--repeat N]

Measures, in the same run (the machine is shared and noisy, so only ratios count):
  full      render() with no cache (selection, validation, config + YAML + gzip,
            rule ConfigMaps, TLS Secrets, StatefulSets)
  baseline  yaml CSafeDumper dumping the same output: the config dict, every rule
            file's groups as data, and the Kubernetes objects
  rerender  render() with a warm RenderCache after one ServiceMonitor changed
  refs      references() after that change, without and with the same RenderCache
            (the operator calls references() then render() on every sync)
Targets: full/baseline <= 2.0; rerender/full <= 0.10.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import time

import yaml

from promop.render import RenderCache, RenderInputs, references, render

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
NAMESPACES = 20


def workload() -> RenderInputs:
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
    for i in range(1000):
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
    for i in range(500):
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


def dump(data) -> str:
    return yaml.dump(data, Dumper=_Dumper, default_flow_style=False, sort_keys=False, allow_unicode=True)


def dump_config(result, rule_specs) -> None:
    dump(result.config)


def dump_rules(result, rule_specs) -> None:
    for spec in rule_specs:
        dump(spec)


def dump_objects(result, rule_specs) -> None:
    dump(result.objects())


BASELINE = (dump_config, dump_rules, dump_objects)


def dump_config_ours(result, rule_specs) -> None:
    """The config with promop's own dumper (CSafeDumper + memoised tag resolution), for reference."""
    from promop.render.config import dump as ours

    ours(result.config)


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m bench.render")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    inputs = workload()
    result = render(inputs)
    assert not result.rejected, result.rejected[:3]
    jobs = len(result.config["scrape_configs"])
    n_rules = sum(len(g["rules"]) for r in inputs.prometheus_rules for g in r["spec"]["groups"])
    rule_specs = [{"groups": r["spec"]["groups"]} for r in inputs.prometheus_rules]

    full = timed(lambda: render(inputs), args.repeat)
    from promop.render.rules import build_rule_configmaps
    rules_only = timed(lambda: build_rule_configmaps(inputs.prometheus, list(inputs.prometheus_rules), inputs.options),
                       args.repeat)
    parts = [timed(lambda f=f: f(result, rule_specs), args.repeat) for f in BASELINE]
    base = sum(parts)
    ours = timed(lambda: dump_config_ours(result, rule_specs), args.repeat) + parts[1] + parts[2]

    cache = RenderCache()
    render(inputs, cache)
    changed = copy.copy(inputs)
    sms = list(inputs.service_monitors)
    state = {"rv": 1}

    def change_one() -> None:
        state["rv"] += 1
        sm = copy.deepcopy(sms[500])
        sm["metadata"]["resourceVersion"] = str(state["rv"])
        sm["spec"]["endpoints"][0]["interval"] = f"{10 + state['rv'] % 50}s"
        sms[500] = sm
        changed.service_monitors = list(sms)

    def rerender() -> None:
        change_one()
        render(changed, cache)

    re = timed(rerender, args.repeat)

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
                     f"{len(inputs.prometheus_rules)} PrometheusRules, {n_rules} rules"),
        ("full render (median)", f"{full * 1000:.0f} ms (of which rule ConfigMaps {rules_only * 1000:.0f})"),
        ("CSafeDumper of the same output", f"{base * 1000:.0f} ms (config {parts[0] * 1000:.0f}, "
                                            f"rule files {parts[1] * 1000:.0f}, objects {parts[2] * 1000:.0f})"),
        ("full / dump ratio (target <= 2.0)", f"{full / base:.2f}"),
        ("full / dump with promop's ConfigDumper", f"{full / ours:.2f} ({ours * 1000:.0f} ms)"),
        ("re-render, 1 ServiceMonitor changed, RenderCache", f"{re * 1000:.0f} ms"),
        ("re-render / full (target <= 10%)", f"{re / full * 100:.1f}%"),
        ("references(), no cache / RenderCache", f"{refs_plain * 1000:.1f} ms / {refs_cached * 1000:.1f} ms "
                                                  f"({refs_plain / refs_cached:.0f}x)"),
        ("sync path: references() + render(), cached, 1 change", f"{sync * 1000:.0f} ms"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
