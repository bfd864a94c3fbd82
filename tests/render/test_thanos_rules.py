"""ThanosRuler rule files per Thanos version: upstream's pkg/operator/rules_test.go Thanos-format cases
(shouldAcceptRuleWithValidPartialResponseStrategyValue, shouldAcceptRuleWithLimitThanos,
shouldDropLimitFieldForUnsupportedThanosVersion, shouldDropRuleFiringForThanos, shouldAcceptRuleFiringForThanos)
and the boundaries of sanitizePrometheusRulesSpec's Thanos minimums (limit 0.24, keep_firing_for 0.34,
query_offset 0.38, group labels 0.39), plus the name scheme (UTF-8 names from Thanos 0.38)."""

from __future__ import annotations

import pytest
import yaml

from promop.render.model import RenderOptions
from promop.render.thanos.ruler_render import RulerInputs, render_ruler
from promop.render.thanos.ruler_rules import build_ruler_rule_configmaps
from promop.render.thanos.versions import DEFAULT_THANOS_VERSION


def _ruler(version: str | None = None) -> dict:
    spec: dict = {"queryEndpoints": [""]}
    if version is not None:
        spec["version"] = version
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
            "metadata": {"name": "r", "namespace": "ns", "uid": "u"}, "spec": spec}


def _rule(group: dict, name: str = "pr") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": "ns", "uid": "u1"},
            "spec": {"groups": [{"name": "group", "rules": [{"alert": "alert", "expr": "vector(1)"}], **group}]}}


def _alert(**fields) -> dict:
    return {"rules": [{"alert": "alert", "expr": "vector(1)", **fields}]}


def _file(version: str | None, group: dict):
    """(the rule file as parsed YAML or None when rejected, rejected problems, warnings)."""
    result = build_ruler_rule_configmaps(_ruler(version), [_rule(group)], RenderOptions())
    data = result.configmaps[0]["data"] if result.configmaps else {}
    return (yaml.safe_load(data["ns-pr-u1.yaml"]) if data else None), result.rejected, result.warnings


def test_partial_response_strategy_is_kept_for_thanos():
    doc, rejected, _ = _file(DEFAULT_THANOS_VERSION, {"partial_response_strategy": "warn"})
    assert not rejected
    assert doc["groups"][0]["partial_response_strategy"] == "warn"


@pytest.mark.parametrize("version, group, path, kept", [
    # limit: upstream's shouldAcceptRuleWithLimitThanos / shouldDropLimitFieldForUnsupportedThanosVersion
    (DEFAULT_THANOS_VERSION, {"limit": 50}, ("limit",), True),
    ("v0.23.0", {"limit": 50}, ("limit",), False),
    ("v0.23.9", {"limit": 0}, ("limit",), False),  # set to 0 is still set (upstream: Limit != nil)
    ("v0.24.0", {"limit": 50}, ("limit",), True),
    # keep_firing_for: shouldDropRuleFiringForThanos / shouldAcceptRuleFiringForThanos
    ("v0.33.0", _alert(keep_firing_for="5m"), ("rules", 0, "keep_firing_for"), False),
    ("v0.34.0", _alert(keep_firing_for="5m"), ("rules", 0, "keep_firing_for"), True),
    (DEFAULT_THANOS_VERSION, _alert(keep_firing_for="5m"), ("rules", 0, "keep_firing_for"), True),
    # query_offset
    ("v0.37.2", {"query_offset": "1m"}, ("query_offset",), False),
    ("v0.38.0", {"query_offset": "1m"}, ("query_offset",), True),
    # group labels
    ("v0.38.9", {"labels": {"team": "a"}}, ("labels",), False),
    ("v0.39.0", {"labels": {"team": "a"}}, ("labels",), True),
    ("v0.39.0-rc.0", {"labels": {"team": "a"}}, ("labels",), False),  # a pre-release sorts before its release
])
def test_fields_are_dropped_below_the_thanos_version_that_reads_them(version, group, path, kept):
    doc, rejected, warnings = _file(version, group)
    assert not rejected
    node = doc["groups"][0]
    for step in path[:-1]:
        node = node[step]
    assert (path[-1] in node) is kept
    if kept:
        assert not warnings
    else:
        (warning,) = warnings
        assert warning.kind == "PrometheusRule" and (warning.namespace, warning.name) == ("ns", "pr")
        assert warning.field.endswith(path[-1])
        assert "dropped: needs Thanos >=" in warning.message and version in warning.message


def test_warning_names_the_exact_field():
    _, _, warnings = _file("v0.33.0", {"rules": [{"alert": "a", "expr": "vector(1)"},
                                                 {"alert": "b", "expr": "vector(1)", "keep_firing_for": "5m"}]})
    assert [(w.field, w.message) for w in warnings] == [
        ("spec.groups[0].rules[1].keep_firing_for", "dropped: needs Thanos >= 0.34.0, this ThanosRuler runs v0.33.0")]


def test_other_fields_stay_when_one_is_dropped():
    doc, _, _ = _file("v0.30.0", {"interval": "1m", "limit": 5, "query_offset": "1m",
                                  "rules": [{"alert": "a", "expr": "vector(1)", "for": "5m", "keep_firing_for": "1m"}]})
    assert doc == {"groups": [{"name": "group", "interval": "1m", "limit": 5,
                               "rules": [{"alert": "a", "expr": "vector(1)", "for": "5m"}]}]}


@pytest.mark.parametrize("labels", [{"invalid/label": "v"}, {"dotted.name": "v"}])
def test_legacy_label_names_before_thanos_0_38(labels):
    _, rejected, _ = _file("v0.37.0", _alert(labels=labels))
    assert [p.field for p in rejected] == [f"spec.groups[0].rules[0].labels.{next(iter(labels))}"]


def test_utf8_label_and_record_names_from_thanos_0_38():
    group = {"rules": [{"record": "a.b", "expr": "vector(1)", "labels": {"dotted.name": "v"}}]}
    doc, rejected, _ = _file("v0.38.0", group)
    assert not rejected and doc["groups"][0]["rules"][0]["record"] == "a.b"
    _, rejected, _ = _file("v0.37.9", group)
    assert sorted(p.field for p in rejected) == ["spec.groups[0].rules[0].labels.dotted.name",
                                                 "spec.groups[0].rules[0].record"]


def test_promql_is_checked_with_the_current_parser_whatever_the_thanos_version():
    # upstream validates with its own (current) Prometheus parser: holt_winters is gone since Prometheus 3
    _, rejected, _ = _file("v0.30.0", {"rules": [{"record": "r", "expr": "holt_winters(up[5m], 0.5, 0.5)"}]})
    assert [p.field for p in rejected] == ["spec.groups[0].rules[0].expr"]
    _, rejected, _ = _file("v0.30.0", {"rules": [{"record": "r", "expr": "up =="}]})
    assert [p.field for p in rejected] == ["spec.groups[0].rules[0].expr"]


def test_render_carries_the_drop_warnings_and_keeps_the_rule():
    r = _ruler("v0.33.0")
    r["spec"]["ruleSelector"] = {}
    result = render_ruler(RulerInputs(r, [_rule(_alert(keep_firing_for="5m"))]))
    assert result.accepted_rules() == [("ns", "pr")]
    assert [w.field for w in result.warnings if w.kind == "PrometheusRule"] == [
        "spec.groups[0].rules[0].keep_firing_for"]
    assert "keep_firing_for" not in result.rule_configmaps[0]["data"]["ns-pr-u1.yaml"]
