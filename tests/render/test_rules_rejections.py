"""One test per PrometheusRule rejection reason: the message names the field, other rules still render."""

from __future__ import annotations

import pytest
import yaml

from promop.render.model import RenderOptions
from promop.render.rules import build_rule_configmaps

GOOD = {"name": "good.rules", "rules": [{"record": "job:up:sum", "expr": "sum by (job) (up)"}]}


def prom(version="v3.13.2") -> dict:
    return {"kind": "Prometheus", "metadata": {"name": "p", "namespace": "monitoring", "uid": "u"},
            "spec": {"version": version}}


def rule(name: str, groups: list) -> dict:
    return {"kind": "PrometheusRule", "metadata": {"name": name, "namespace": "apps", "uid": name},
            "spec": {"groups": groups}}


def render_bad(groups: list, version: str = "v3.13.2"):
    res = build_rule_configmaps(prom(version), [rule("bad", groups), rule("good", [GOOD])], RenderOptions())
    # the valid rule always renders, and only it
    assert res.rule_files == {("apps", "good"): ("prometheus-p-rulefiles-0", "apps-good-good.yaml")}
    assert list(res.configmaps[0]["data"]) == ["apps-good-good.yaml"]
    assert res.rejected and all((p.kind, p.namespace, p.name) == ("PrometheusRule", "apps", "bad")
                                for p in res.rejected)
    return res.rejected


def one(problems):
    assert len(problems) == 1, problems
    return problems[0]


def test_promql_that_does_not_parse():
    p = one(render_bad([{"name": "g", "rules": [{"record": "x", "expr": "sum(rate(x[5m])"}]}]))
    assert p.field == "spec.groups[0].rules[0].expr"
    assert p.message.startswith("PromQL does not parse:")


def test_bad_promql_duration():
    p = one(render_bad([{"name": "g", "rules": [{"record": "x", "expr": "rate(x[5mm])"}]}]))
    assert p.field == "spec.groups[0].rules[0].expr" and "5mm" in p.message


@pytest.mark.parametrize("where,value", [("for", "5 minutes"), ("keep_firing_for", "1hour"), ("interval", "-1m"),
                                         ("query_offset", "1m30")])
def test_bad_durations(where, value):
    group = {"name": "g", "rules": [{"alert": "A", "expr": "up == 0"}]}
    if where in ("interval", "query_offset"):
        group[where] = value
        field = f"spec.groups[0].{where}"
    else:
        group["rules"][0][where] = value
        field = f"spec.groups[0].rules[0].{where}"
    p = one(render_bad([group]))
    assert p.field == field
    assert p.message == f"{value!r} is not a duration; use a form like 30s, 5m, 1h30m or 0"


def test_duplicate_group_names():
    p = one(render_bad([GOOD, {"name": "good.rules", "rules": [{"record": "y", "expr": "up"}]}]))
    assert p.field == "spec.groups[1].name"
    assert "group name 'good.rules' is repeated (first used by spec.groups[0])" in p.message


def test_rule_with_neither_record_nor_alert():
    p = one(render_bad([{"name": "g", "rules": [{"expr": "up"}]}]))
    assert p.field == "spec.groups[0].rules[0]"
    assert p.message == "one of 'record' or 'alert' must be set"


def test_rule_with_both_record_and_alert():
    p = one(render_bad([{"name": "g", "rules": [{"record": "x", "alert": "A", "expr": "up"}]}]))
    assert p.message == "only one of 'record' and 'alert' may be set"


def test_missing_expr():
    p = one(render_bad([{"name": "g", "rules": [{"alert": "A"}]}]))
    assert p.field == "spec.groups[0].rules[0].expr" and "must be set" in p.message


def test_invalid_label_name_before_prometheus_3():
    p = one(render_bad([{"name": "g", "rules": [{"alert": "A", "expr": "up", "labels": {"team-name": "x"}}]}],
                       version="v2.42.0"))
    assert p.field == "spec.groups[0].rules[0].labels.team-name"
    assert p.message.startswith("invalid label name 'team-name'")


def test_reserved_label_name():
    p = one(render_bad([{"name": "g", "rules": [{"alert": "A", "expr": "up", "labels": {"__name__": "x"}}]}]))
    assert p.field == "spec.groups[0].rules[0].labels.__name__"


def test_recording_rule_with_annotations():
    p = one(render_bad([{"name": "g", "rules": [{"record": "x", "expr": "up", "annotations": {"a": "b"}}]}]))
    assert p.message == "invalid field 'annotations' in recording rule 'x'"


def test_invalid_recording_rule_name_before_prometheus_3():
    p = one(render_bad([{"name": "g", "rules": [{"record": "job-up", "expr": "up"}]}], version="v2.42.0"))
    assert p.field == "spec.groups[0].rules[0].record"


@pytest.mark.parametrize("template,expected", [
    ("{{ $labels.instance ", "unclosed action"),
    ("{{ if $value }}high", "has no matching {{end}}"),
    ("{{ humanise $value }}", "function 'humanise' not defined"),
    ("{{ $labls.job }}", "undefined variable '$labls'"),
    ("{{ end }}", "unexpected {{end}}"),
])
def test_invalid_annotation_template(template, expected):
    p = one(render_bad([{"name": "g", "rules": [{"alert": "A", "expr": "up == 0",
                                                 "annotations": {"summary": template}}]}]))
    assert p.field == "spec.groups[0].rules[0].annotations.summary"
    assert p.message.startswith("invalid template:") and expected in p.message


def test_invalid_label_template():
    p = one(render_bad([{"name": "g", "rules": [{"alert": "A", "expr": "up == 0",
                                                 "labels": {"severity": "{{ (printf \"x\" }}"}}]}]))
    assert p.field == "spec.groups[0].rules[0].labels.severity" and "unclosed left paren" in p.message


def test_rendered_file_over_the_configmap_limit():
    big = [{"name": f"g{i}", "rules": [{"alert": "A", "expr": "up == 0", "annotations": {"d": "x" * 100_000}}]}
           for i in range(6)]
    p = one(render_bad(big))
    assert p.field == "spec"
    assert "over the 524288-byte ConfigMap limit; split it into several PrometheusRules" in p.message


def test_empty_group_name_and_bad_limit():
    problems = render_bad([{"name": "", "limit": -1, "rules": []}])
    assert {(p.field, p.message) for p in problems} == {
        ("spec.groups[0].name", "group name must not be empty"),
        ("spec.groups[0].limit", "must be a non-negative integer, got -1"),
    }


def test_every_problem_in_one_object_is_reported():
    problems = render_bad([{"name": "g", "rules": [{"expr": "up"}, {"record": "x", "expr": "sum("}]}])
    assert [p.field for p in problems] == ["spec.groups[0].rules[0]", "spec.groups[0].rules[1].expr"]


def test_valid_templates_from_real_rules_are_accepted():
    text = """
    - alert: A
      expr: up == 0
      annotations:
        description: '{{ with $labels.cluster -}} on {{ . }} {{- end }} {{ $value | humanizePercentage }}'
        summary: '{{ printf "%.2f" $value }} {{ range $i, $e := query "up" }}{{ $e.Labels.job }}{{ end }}'
        comment: '{{/* a comment */}}{{- if gt $value 1.0 }}x{{ else if eq 1 2 }}y{{ else }}z{{ end -}}'
    """
    res = build_rule_configmaps(prom(), [rule("ok", [{"name": "g", "rules": yaml.safe_load(text)}])],
                                RenderOptions())
    assert not res.rejected


def test_template_function_too_new_for_the_version():
    groups = [{"name": "g", "rules": [{"alert": "A", "expr": "up == 0",
                                       "annotations": {"since": "{{ now | humanizeTimestamp }}"}}]}]
    p = one(render_bad(groups, version="v2.42.0"))
    assert p.message.endswith("function 'now' not defined (needs Prometheus >= 3.6.0)")
    res = build_rule_configmaps(prom("v3.6.0"), [rule("new", groups)], RenderOptions())
    assert not res.rejected


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
                                  "acosh", "atanh", "deg", "rad"])
def test_every_trigonometric_function_needs_prometheus_2_31(name):
    """Each version-gated function is found wherever it sits in the expression (the renderer looks
    for the gated names in the text before walking the parsed expression)."""
    for expr in (f"{name}(x)", f"sum by (instance) (1 + {name} (rate(x_total[5m])))", f"x_instance*{name}(y)"):
        p = one(render_bad([{"name": "g", "rules": [{"record": "x", "expr": expr}]}], version="v2.30.0"))
        assert p.message == f"function {name}() needs Prometheus >= 2.31.0, this Prometheus is v2.30.0", expr
    p = one(render_bad([{"name": "g", "rules": [{"record": "x", "expr": "1 + pi()"}]}], version="v2.30.0"))
    assert p.message == "function pi() needs Prometheus >= 2.31.0, this Prometheus is v2.30.0"


def test_promql_function_not_in_this_prometheus_version():
    p = one(render_bad([{"name": "g", "rules": [{"record": "x", "expr": "holt_winters(x[5m], 0.5, 0.5)"}]}]))
    assert p.field == "spec.groups[0].rules[0].expr"
    assert p.message.startswith("function holt_winters() was renamed double_exponential_smoothing in Prometheus 3.0")
    p = one(render_bad([{"name": "g", "rules": [{"record": "x", "expr": "double_exponential_smoothing(x[5m], .5, .5)"}]}],
                       version="v2.42.0"))
    assert p.message == "function double_exponential_smoothing() needs Prometheus >= 3.0.0, this Prometheus is v2.42.0"
