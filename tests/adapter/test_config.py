"""Config, templates, naming and query building: upstream's semantics, from the reference (§1.2–1.5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_runner import promop

from promop.adapter.config import ConfigError, GroupResource, load_config_text, parse_config
from promop.adapter.default_config import default_config, default_config_yaml
from promop.adapter.naming import Namer, ResourceConverter
from promop.adapter.quantity import binary_quantity, milli_quantity
from promop.duration import format_go_seconds as go_duration
from promop.adapter.registry import SeriesSet, build, collect
from promop.adapter.resources import ResourceMapper
from promop.adapter.selector import SelectorError, matcher_for, parse_selector
from promop.render.gotemplate import TemplateError
from promop.render.gotemplate_exec import GoMap, Struct, go_float, render

MAPPER = ResourceMapper()


def _rule(**kw) -> dict:
    base = {"seriesQuery": 'http_requests_total{namespace!="",pod!=""}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "metricsQuery": "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)"}
    base.update(kw)
    return base


def _namer(**kw) -> Namer:
    return Namer(parse_config({"rules": [_rule(**kw)]}).rules[0], MAPPER)


def test_reference_query_example() -> None:
    n = _namer()
    pods = MAPPER.get(GroupResource("", "pods"))
    assert n.query("http_requests_total", pods, "ns1", ["p1", "p2"], []) == \
        'sum(rate(http_requests_total{namespace="ns1",pod=~"p1|p2"}[2m])) by (pod)'
    assert n.query("http_requests_total", pods, "ns1", ["p1"], []) == \
        'sum(rate(http_requests_total{namespace="ns1",pod="p1"}[2m])) by (pod)'


@pytest.mark.parametrize("selector,matchers", [
    ("verb=GET", ['verb="GET"']),
    ("verb==GET", ['verb="GET"']),
    ("verb!=GET", ['verb!="GET"']),
    ("verb in (PUT,GET)", ['verb=~"GET|PUT"']),        # values sorted, as labels.Parse does
    ("verb in (GET)", ['verb=~"GET"']),
    ("verb notin (GET,PUT)", ['verb!~"GET|PUT"']),
    ("verb", ['verb!=""']),
    ("!verb", ['verb=""']),
    ("zone=a,app=web", ['app="web"', 'zone="a"']),    # requirements sorted by key
])
def test_selector_to_matchers(selector: str, matchers: list[str]) -> None:
    assert [matcher_for(r)[0] for r in parse_selector(selector)] == matchers


@pytest.mark.parametrize("selector", ["count>3", "count<3"])
def test_gt_lt_are_refused(selector: str) -> None:
    with pytest.raises(SelectorError, match="no PromQL equivalent"):
        matcher_for(parse_selector(selector)[0])


@pytest.mark.parametrize("bad", ["a=(", "in (x)", "a b", "a=b,", "a in x"])
def test_bad_selectors(bad: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(bad)


def test_metric_selector_matchers_come_first_and_values_are_go_quoted() -> None:
    n = _namer(metricsQuery="<<.LabelMatchers>>|<<.GroupBy>>|<<index .LabelValuesByName \"verb\">>|"
                            "<<.LabelValuesByName.nope>>|<<range .GroupBySlice>>[<<.>>]<<end>>")
    pods = MAPPER.get(GroupResource("", "pods"))
    out = n.query("s", pods, 'we"ird', ["a", "b"], parse_selector("verb in (GET,PUT)"))
    assert out == 'verb=~"GET|PUT",namespace="we\\"ird",pod=~"a|b"|pod|GET|PUT||[pod]'


def test_template_resources_singular_and_sanitised_group() -> None:
    rule = parse_config({"rules": [_rule(resources={"template": "kube_<<.Group>>_<<.Resource>>"})]}).rules[0]
    conv = ResourceConverter(rule.resources, MAPPER, "rules[0]")
    assert conv.label_for(MAPPER.get(GroupResource("apps", "deployments"))) == "kube_apps_deployment"
    assert conv.label_for(MAPPER.get(GroupResource("networking.k8s.io", "ingresses"))) == "kube_networking_k8s_io_ingress"
    lr, _ = conv.resolve_label("kube_apps_deployment")
    assert lr.info.group_resource == GroupResource("apps", "deployments")
    lr, _ = conv.resolve_label("kube_networking_k8s_io_ingress")
    assert lr.info.group_resource == GroupResource("networking.k8s.io", "ingresses")
    lr, why = conv.resolve_label("kube_apps_gizmo")
    assert lr is None and "no known resource" in why
    assert conv.resolve_label("other") == (None, "")


def test_name_defaults() -> None:
    assert _namer().name_for("http_requests_total") == ("http_requests_total", "")
    assert _namer(name={"matches": "^(.*)_total$"}).name_for("http_requests_total") == ("http_requests", "")
    assert _namer(name={"matches": "^(.*)_(total)$", "as": "${2}_of_${1}"}).name_for("x_total") == ("total_of_x", "")
    with pytest.raises(ConfigError, match=r"rules\[0\].name.as: is required"):
        parse_config({"rules": [_rule(name={"matches": "^(.*)_(total)$"})]})
    n = _namer(seriesFilters=[{"isNot": "^http_.*_seconds_total$"}], name={"matches": "^(.*)_total$"})
    assert n.name_for("http_request_seconds_total") == (None, "seriesFilters {isNot: ^http_.*_seconds_total$} rejects it")
    assert n.name_for("http_up") == (None, "name.matches '^(.*)_total$' does not match")


def test_every_problem_with_its_path() -> None:
    text = """
rules:
- seriesQuery: 'rate(x[5m])'
  seriesFilters: [{is: a, isNot: b}, {}, {is: '(?<=x)'}]
  resources: {template: '<<.Group>>', overrides: {pod: {group: x}, "bad-label": {resource: pod}}}
  name: {matches: '(a)(b)', alias: x}
  metricsQuery: '<<if .Series>>'
- 42
externalRules: {}
resourceRules: {cpu: {containerQuery: x, nodeQuery: y, resources: {}}, window: 5 minutes}
extra: 1
"""
    with pytest.raises(ConfigError) as e:
        load_config_text(text, "cfg.yaml")
    paths = [p.path for p in e.value.problems]
    assert paths == [
        "extra", "rules[0].seriesQuery", "rules[0].seriesFilters[0]", "rules[0].seriesFilters[1]",
        "rules[0].seriesFilters[2].is", "rules[0].resources.template", "rules[0].resources.overrides.pod.resource",
        "rules[0].resources.overrides.bad-label", "rules[0].name.alias", "rules[0].name.as", "rules[0].metricsQuery",
        "rules[1]", "externalRules", "resourceRules.cpu.resources", "resourceRules.memory", "resourceRules.window"]
    assert str(e.value).startswith("invalid adapter config cfg.yaml:\n  extra: unknown field")
    with pytest.raises(ConfigError, match="line 1, column"):
        load_config_text("rules: [", "x")


def test_default_config_is_the_reference_table() -> None:
    cfg = default_config()
    rules = cfg["rules"]
    cq = '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
    assert [r["seriesQuery"] for r in rules] == [cq] * 3 + ['{namespace!="",__name__!~"^container_.*"}'] * 3
    assert [r["seriesFilters"] for r in rules] == [[], [{"isNot": "^container_.*_seconds_total$"}],
                                                   [{"isNot": "^container_.*_total$"}], [{"isNot": ".*_total$"}],
                                                   [{"isNot": ".*_seconds_total"}], []]
    assert [r["name"]["matches"] for r in rules] == ["^container_(.*)_seconds_total$", "^container_(.*)_total$",
                                                     "^container_(.*)$", "", "^(.*)_total$", "^(.*)_seconds_total$"]
    assert rules[0]["metricsQuery"] == 'sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[5m])) by (<<.GroupBy>>)'
    assert rules[2]["metricsQuery"] == 'sum(<<.Series>>{<<.LabelMatchers>>,container!="POD"}) by (<<.GroupBy>>)'
    assert rules[3]["resources"] == {"template": "<<.Resource>>"}
    rr = cfg["resourceRules"]
    assert rr["window"] == "5m" and "id='/'" in rr["cpu"]["nodeQuery"] and "[5m]" in rr["cpu"]["containerQuery"]
    assert rr["memory"]["containerQuery"].startswith("sum(container_memory_working_set_bytes{")
    assert set(rr["cpu"]["resources"]["overrides"]) == {"namespace", "pod", "instance"}
    assert rr["cpu"]["resources"]["overrides"]["instance"] == {"resource": "node"}
    other = default_config("120s", "kube_")
    assert other["rules"][3]["seriesQuery"] == '{kube_namespace!="",__name__!~"^container_.*"}'
    assert other["rules"][4]["metricsQuery"].endswith("[2m])) by (<<.GroupBy>>)")
    assert other["resourceRules"]["cpu"]["containerLabel"] == "kube_container"
    loaded = load_config_text(default_config_yaml())
    assert len(loaded.rules) == 6 and loaded.resource_rules.window_seconds == 300


def test_default_config_naming_of_cadvisor_series() -> None:
    cfg = parse_config(default_config())
    namers = [Namer(r, MAPPER) for r in cfg.rules]
    labels = ["__name__", "container", "namespace", "pod"]

    def names(series: str) -> list:
        return [n.name_for(series)[0] for n in namers[:3]]
    assert names("container_cpu_usage_seconds_total") == ["cpu_usage", None, None]
    assert names("container_network_receive_bytes_total") == [None, "network_receive_bytes", None]
    assert names("container_memory_working_set_bytes") == [None, None, "memory_working_set_bytes"]
    sets = {cfg.rules[0].series_query: collect([[dict.fromkeys(labels, "x") | {"__name__": "container_cpu_usage_seconds_total"}]], namers[:3])}
    reg = build(namers[:3], [], sets)
    assert {(k.resource, k.metric, k.namespaced) for k in reg.custom} == {
        ("pods", "cpu_usage", True), ("namespaces", "cpu_usage", False)}


def test_later_rules_overwrite_and_scope() -> None:
    cfg = parse_config({"rules": [
        _rule(name={"matches": "^(.*)_total$", "as": "requests"}),
        _rule(name={"matches": "^(.*)_total$", "as": "requests"},
              metricsQuery="max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"),
        _rule(seriesQuery='node_load1{node!=""}', resources={"overrides": {"node": {"resource": "node"}}},
              metricsQuery="max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"),
    ]})
    namers = [Namer(r, MAPPER) for r in cfg.rules]
    sets = {cfg.rules[0].series_query: collect([[{"__name__": "http_requests_total", "namespace": "a", "pod": "p"},
         {"__name__": "http_requests_total", "pod": "q"}]], namers[:2]),
        cfg.rules[2].series_query: collect([[{"__name__": "node_load1", "node": "n1"}]], namers[2:])}
    events = []
    reg = build(namers, [], sets, events)
    from promop.adapter.registry import MetricKey
    assert reg.custom[MetricKey("", "pods", True, "requests")].namer is namers[1]
    # a series without a namespace label registers the pod metric as cluster-scoped (upstream's Namespaced=false)
    assert MetricKey("", "pods", False, "requests") in reg.custom
    assert MetricKey("", "nodes", False, "node_load1") in reg.custom
    assert any(e.outcome == "overwritten" and e.rule == "rules[0]" for e in events)


def test_go_template_behaviour() -> None:
    d = Struct("args", A="x", L=["a", "b"], M=GoMap({"k": "v"}, zero=""), N=0, F=1e6)
    assert render("{{.A}} {{.L}} {{.M}} {{.N}} {{.F}} {{.M.missing}}|", d) == "x [a b] map[k:v] 0 1e+06 |"
    assert render('{{range $i, $e := .L}}{{if $i}},{{end}}{{$e}}{{end}}', d) == "a,b"
    assert render('{{if eq .A "x" "y"}}yes{{else if .N}}n{{else}}no{{end}}', d) == "yes"
    assert render('{{with .N}}set{{else}}zero{{end}} {{len .L | printf "%03d"}}', d) == "zero 002"
    assert render('{{- "a" -}}  {{/* c */}}  {{- "b"}}', d) == "ab"
    assert render('{{range .L}}{{if eq . "b"}}{{break}}{{end}}{{.}}{{end}}', d) == "a"
    assert render('{{printf "%q %v %s %d" "a\\"b" .L .A 3}}', d) == '"a\\"b" [a b] x 3'
    with pytest.raises(TemplateError, match="can't evaluate field Nope in type args"):
        render("{{.Nope}}", d)
    with pytest.raises(TemplateError, match="function 'nope' not defined"):
        render("{{nope}}", d)
    assert [go_float(x) for x in (0.1, 100000.0, 1234567.0, 1e-5)] == ["0.1", "100000", "1.234567e+06", "1e-05"]


def test_go_template_define_template_block() -> None:
    """Named templates as Go's text/template documents them: {{template "n"}} runs with nil data,
    {{template "n" p}} with dot = p and a fresh $, {{block "n" p}}T{{end}} defines n and runs it in place,
    definitions only at the top level, a second non-empty definition is an error, an empty one is ignored."""
    d = Struct("args", A="x", L=["a", "b"])
    assert render('{{define "item"}}<{{.}}>{{end}}{{range .L}}{{template "item" .}}{{end}}', d) == "<a><b>"
    assert render('{{template "n"}}{{define "n"}}{{.}}{{end}}', d) == "<no value>"
    assert render('{{$v := 1}}{{define "n"}}{{$}}{{end}}{{template "n" .A}}', d) == "x"
    assert render('{{block "b" .A}}[{{.}}]{{end}}/{{template "b" "y"}}', d) == "[x]/[y]"
    assert render('{{define "n"}}one{{end}}{{define "n"}} {{end}}{{template "n"}}', d) == "one"
    for bad, why in [('{{if true}}{{define "n"}}{{end}}{{end}}', "unexpected define"),
                     ('{{define "n"}}a{{end}}{{define "n"}}b{{end}}', 'multiple definition of template "n"'),
                     ("{{template n}}", "the name must be a quoted string"),
                     ('{{block "n"}}{{end}}', "missing value for block"),
                     ('{{template "missing"}}', 'template "missing" not defined'),
                     ('{{define "r"}}{{template "r"}}{{end}}{{template "r"}}', "maximum template depth")]:
        with pytest.raises(TemplateError, match=why):
            render(bad, d)
    # in a metricsQuery, with the adapter's delimiters
    n = _namer(metricsQuery='<<define "sel">><<.Series>>{<<.LabelMatchers>>}<<end>>'
                            'sum(rate(<<template "sel" .>>[2m])) by (<<.GroupBy>>)')
    pods = MAPPER.get(GroupResource("", "pods"))
    assert n.query("http_requests_total", pods, "ns1", ["p1"], []) == \
        'sum(rate(http_requests_total{namespace="ns1",pod="p1"}[2m])) by (pod)'


def test_quantities() -> None:
    assert [milli_quantity(v) for v in (0.033, 0.0336, 2, 1.5, 1500, 2000, -0.5, float("nan"), 0)] == [
        "33m", "33m", "2", "1500m", "1500", "2k", "-500m", "0", "0"]
    assert [binary_quantity(v) for v in (64 * 2**20, 1536 * 2**20, 1000, 512, 1500, 2**30)] == [
        "64Mi", "1536Mi", "1k", "512", "1500", "1Gi"]
    assert [go_duration(s) for s in (300, 120, 30, 3600, 0.5)] == ["5m0s", "2m0s", "30s", "1h0m0s", "500ms"]


def _cli(*args: str, cwd: str | None = None):
    """`promop adapter ...` in-process (tests/cli_runner.py); test_process.py runs the real command."""
    return promop("adapter", *args, cwd=cwd)


def test_cli_default_config_check_and_exit_codes(tmp_path: Path) -> None:
    out = _cli("default-config", "--rate-interval", "2m", "--label-prefix", "kube_")
    assert out.returncode == 0 and yaml.safe_load(out.stdout)["resourceRules"]["window"] == "2m"
    good = tmp_path / "good.yaml"
    good.write_text(out.stdout)
    ok = _cli("check", "--config", str(good))
    assert ok.returncode == 0 and "6 rules" in ok.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n- seriesQuery: up\n  metricsQuery: ''\n  name: {matches: '('}\n")
    res = _cli("check", "--config", str(bad))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "rules[0].name.matches: invalid regular expression" in res.stderr
    assert "rules[0].metricsQuery: must not be empty" in res.stderr
    serve = _cli("--config", str(bad), "--prometheus-url", "http://127.0.0.1:1", "--no-kube", "--secure-port", "0",
                 "--insecure-port", "1")
    assert serve.returncode == 2 and "rules[0].name.matches" in serve.stderr
    assert _cli("default-config", "--rate-interval", "5x").returncode == 2
    missing = _cli("--prometheus-url", "http://x")
    assert missing.returncode == 2 and "--config is required" in missing.stderr
    authz = _cli("--config", str(good), "--no-kube", "--secure-port", "1")
    assert authz.returncode == 2 and "--authorization-always-allow" in authz.stderr
    age = _cli("--config", str(good), "--metrics-relist-interval", "10m", "--metrics-max-age", "1m", "--no-kube")
    assert age.returncode == 2 and "--metrics-max-age" in age.stderr


def test_cli_explain_offline(tmp_path: Path) -> None:
    from adapter.adapter_fixtures import CONFIG

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    series = tmp_path / "series.json"
    series.write_text(json.dumps({"status": "success", "data": [
        {"__name__": "http_requests_total", "namespace": "shop", "pod": "web-1"},
        {"__name__": "http_requests_total", "pod": "orphan"},                         # fails seriesQuery
        {"__name__": "queue_depth", "namespace": "shop", "queue": "q", "gizmo": "g"},
        {"__name__": "queue_misc", "namespace": "shop"}]}))
    out = _cli("explain", "--config", str(cfg), "--series", str(series))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "rules[0]: seriesQuery http_requests_total{namespace!=\"\",pod!=\"\"}  (1 series returned)" in text
    assert "+ http_requests_total → http_requests_per_second: label pod (override) → pods, namespaced" in text
    assert "note: label gizmo fits template '<<.Resource>>' as gizmo, which is no known resource" in text
    assert "pods/http_requests_per_second (namespaced) ← series http_requests_total (rules[0])" in text
    path = _cli("explain", "--config", str(cfg), "--series", str(series),
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/web-1/http_requests_per_second"
                "?metricLabelSelector=verb%3DGET")
    assert 'PromQL: sum(rate(http_requests_total{verb="GET",namespace="shop",pod="web-1"}[2m])) by (pod)' in path.stdout
    ext = _cli("explain", "--config", str(cfg), "--series", str(series),
               "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_depth")
    assert 'PromQL: sum(queue_depth{namespace="shop"}) by (queue)' in ext.stdout
    nf = _cli("explain", "--config", str(cfg), "--series", str(series),
              "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/queue_misc")
    assert "not served (404)" in nf.stdout and "none of its labels (namespace) maps to pods" in nf.stdout
    js = _cli("explain", "--config", str(cfg), "--series", str(series), "--output", "json", "queue_misc")
    doc = json.loads(js.stdout)
    assert {e["outcome"] for e in doc["events"]} == {"registered"}
    assert _cli("explain", "--config", str(cfg)).returncode == 2
