"""enforcedNamespaceLabel: every selector of a rule expression gets the namespace matcher."""

from __future__ import annotations

import promql_parser
import pytest

from promop.render.namespace_label import EnforceError, enforce_namespace_label

CASES = [
    ("up", 'up{namespace="ns"}'),
    ('up{job="a"}', 'up{job="a",namespace="ns"}'),
    ('up{namespace="other",job="a"}', 'up{job="a",namespace="ns"}'),  # replaced, as upstream
    ('up{namespace=~".+"}', 'up{namespace="ns"}'),
    ("sum by (job) (rate(x[5m]))", 'sum by (job) (rate(x{namespace="ns"}[5m]))'),
    ("sum(rate(x[5m])) by (job)", 'sum(rate(x{namespace="ns"}[5m])) by (job)'),
    ("a / on(job) group_left(team) b", 'a{namespace="ns"} / on(job) group_left(team) b{namespace="ns"}'),
    ("max_over_time(x[1h:5m] offset 1d)", 'max_over_time(x{namespace="ns"}[1h:5m] offset 1d)'),
    ("x @ start()", 'x{namespace="ns"} @ start()'),
    ('{__name__="x"}', '{__name__="x",namespace="ns"}'),
    ('label_replace(x, "a", "$1", "b", "(.*)\\\\.y")', 'label_replace(x{namespace="ns"}, "a", "$1", "b", "(.*)\\\\.y")'),
    ("count(x) > bool 3 and absent(y)", 'count(x{namespace="ns"}) > bool 3 and absent(y{namespace="ns"})'),
    ("vector(1) + 2 * scalar(z)", 'vector(1) + 2 * scalar(z{namespace="ns"})'),
    ("# a comment\nrecord:job:x > 1e3", '# a comment\nrecord:job:x{namespace="ns"} > 1e3'),
    ("topk(3, x) unless on() y", 'topk(3, x{namespace="ns"}) unless on() y{namespace="ns"}'),
]


@pytest.mark.parametrize("expr,want", CASES)
def test_enforce(expr, want):
    got = enforce_namespace_label(expr, "namespace", "ns")
    assert got == want
    promql_parser.parse(got)


def test_value_is_escaped():
    assert enforce_namespace_label("up", "namespace", 'a"b') == 'up{namespace="a\\"b"}'


def test_or_matchers_are_refused_rather_than_guessed():
    with pytest.raises(EnforceError, match="'or' matchers"):
        enforce_namespace_label('up{job="a" or job="b"}', "namespace", "ns")


def test_a_character_outside_promql_is_refused_with_its_offset():
    with pytest.raises(EnforceError, match=r"unexpected ';' at offset 3"):
        enforce_namespace_label("up ; x", "namespace", "ns")


def test_rewrites_shared_within_a_render_keep_each_rule_its_own_namespace_and_problems():
    """build_rule_configmaps memoises rewrites by (expression, namespace) for one render: rules in
    two namespaces with the same expressions (one that cannot be rewritten) render exactly as
    each rule rendered alone."""
    from promop.render.model import RenderOptions
    from promop.render.rules import build_rule_configmaps

    from .test_rules import prom, rule

    groups = [{"name": "g", "rules": [{"record": "a:up", "expr": "sum(up)"},
                                      {"alert": "Up", "expr": "sum(up) > 0"},
                                      {"record": "b:up", "expr": "sum(up)"}]}]
    bad = [{"name": "g", "rules": [{"record": "c:up", "expr": 'up{job="a" or job="b"}'}]}]
    objs = [rule("r1", "apps", groups, uid="1"), rule("r2", "web", groups, uid="2"),
            rule("bad1", "apps", bad, uid="3"), rule("bad2", "web", bad, uid="4")]
    p = prom({"enforcedNamespaceLabel": "namespace"})
    together = build_rule_configmaps(p, objs, RenderOptions())
    alone = [build_rule_configmaps(p, [o], RenderOptions()) for o in objs]
    data = together.configmaps[0]["data"]
    assert data == {k: v for r in alone for k, v in r.configmaps[0]["data"].items()}
    assert 'sum(up{namespace="web"})' in data["web-r2-2.yaml"]
    assert 'namespace="apps"' not in data["web-r2-2.yaml"]
    assert [(p.namespace, p.name, p.field) for p in together.rejected] == [
        ("apps", "bad1", "spec.groups[0].rules[0].expr"), ("web", "bad2", "spec.groups[0].rules[0].expr")]
    assert together.rejected == [p for r in alone for p in r.rejected]
