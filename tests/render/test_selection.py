"""Selection as data: which objects a Prometheus selects, and the reason for each one it does not."""

from __future__ import annotations

from promop.render import RenderInputs, render
from promop.render.selection import select

from .helpers import prometheus_obj, service_monitor


def ns(name, **labels):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def decide(prom, sms, namespaces=()):
    return {(d.namespace, d.name): d for d in select(prom, sms, "ServiceMonitor", namespaces)}


def test_nil_selector_selects_nothing_and_says_so():
    prom = prometheus_obj(namespace="monitoring")
    del prom["spec"]["serviceMonitorSelector"]
    d = decide(prom, [service_monitor("a")])[("monitoring", "a")]
    assert not d.selected
    assert d.reason.startswith("serviceMonitorSelector is not set (a missing selector selects nothing")


def test_empty_selector_selects_everything():
    prom = prometheus_obj(serviceMonitorSelector={}, serviceMonitorNamespaceSelector={})
    sms = [service_monitor("a"), service_monitor("b", namespace="other")]
    assert all(d.selected and d.reason == "" for d in decide(prom, sms).values())


def test_label_mismatch_reason():
    prom = prometheus_obj(serviceMonitorSelector={"matchLabels": {"team": "web"}})
    got = decide(prom, [service_monitor("a"), service_monitor("b", labels={"team": "db"}),
                        service_monitor("c", labels={"team": "web"})])
    assert got[("monitoring", "a")].reason == "serviceMonitorSelector matchLabels team=web: label team missing"
    assert got[("monitoring", "b")].reason == "serviceMonitorSelector matchLabels team=web: label team is 'db', not 'web'"
    assert got[("monitoring", "c")].selected


def test_nil_namespace_selector_means_own_namespace():
    prom = prometheus_obj(namespace="monitoring")
    del prom["spec"]["serviceMonitorNamespaceSelector"]
    got = decide(prom, [service_monitor("a"), service_monitor("b", namespace="x")])
    assert got[("monitoring", "a")].selected
    reason = got[("x", "b")].reason
    assert reason.startswith("namespace 'x' not matched: serviceMonitorNamespaceSelector is not set")
    assert "'monitoring'" in reason


def test_namespace_selector_reason():
    prom = prometheus_obj(serviceMonitorNamespaceSelector={"matchLabels": {"env": "prod"}})
    namespaces = [ns("x"), ns("prod-ns", env="prod")]
    got = decide(prom, [service_monitor("a", namespace="x"), service_monitor("b", namespace="prod-ns")], namespaces)
    assert got[("x", "a")].reason == "namespace 'x' not matched by serviceMonitorNamespaceSelector matchLabels env=prod: label env missing"
    assert got[("prod-ns", "b")].selected


def test_namespace_selector_can_use_metadata_name_label():
    prom = prometheus_obj(serviceMonitorNamespaceSelector={
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a"]}]})
    got = decide(prom, [service_monitor("s", namespace="a"), service_monitor("t", namespace="b")])
    assert got[("a", "s")].selected and not got[("b", "t")].selected


def test_invalid_prometheus_selector_selects_nothing_with_warning():
    prom = prometheus_obj(serviceMonitorSelector={"matchLabels": {"bad key!": "x"}})
    result = render(RenderInputs(prometheus=prom, service_monitors=[service_monitor("a")]))
    [d] = [d for d in result.selection if d.kind == "ServiceMonitor"]
    assert not d.selected and d.reason.startswith("invalid selector: spec.serviceMonitorSelector.matchLabels")
    assert any(w.field == "spec.serviceMonitorSelector" for w in result.warnings)
    assert result.config["scrape_configs"] == []


def test_rules_use_rule_selectors():
    prom = prometheus_obj(ruleSelector={"matchLabels": {"role": "alert-rules"}})
    rule = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "r", "namespace": "monitoring", "labels": {}}, "spec": {"groups": []}}
    [d] = select(prom, [rule], "PrometheusRule")
    assert d.reason == "ruleSelector matchLabels role=alert-rules: label role missing"


def test_render_reports_selection_and_renders_only_selected():
    prom = prometheus_obj(serviceMonitorSelector={"matchLabels": {"team": "web"}})
    result = render(RenderInputs(prometheus=prom, service_monitors=[
        service_monitor("in", labels={"team": "web"}), service_monitor("out")]))
    assert [j["job_name"] for j in result.config["scrape_configs"]] == ["serviceMonitor/monitoring/in/0"]
    assert {(d.name, d.selected) for d in result.selection} == {("in", True), ("out", False)}
    assert result.accepted("ServiceMonitor") == [("monitoring", "in")]
