"""Fields promop does not implement produce warnings naming the field; supported ones do not."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from promop.render.unsupported import unsupported_fields

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "kube-prometheus"


def obj(kind: str, spec: dict) -> dict:
    return {"kind": kind, "metadata": {"name": "x", "namespace": "ns"}, "spec": spec}


def fields(o: dict) -> list[str]:
    return [p.field for p in unsupported_fields(o)]


def test_unsupported_prometheus_fields_are_named_with_a_reason():
    problems = unsupported_fields(obj("Prometheus", {
        "thanos": {"image": "thanos"}, "remoteRead": [{"url": "http://x"}], "scrapeInterval": "30s",
        "probeSelector": {}}))
    by_field = {p.field: p.message for p in problems}
    assert set(by_field) == {"spec.thanos", "spec.remoteRead", "spec.probeSelector"}
    assert by_field["spec.thanos"] == "the Thanos sidecar is not supported; the field is ignored"
    assert by_field["spec.remoteRead"] == "not supported by promop; the field is ignored"
    assert all((p.kind, p.namespace, p.name) == ("Prometheus", "ns", "x") for p in problems)


def test_nested_fields_are_checked_per_list_item():
    sm = obj("ServiceMonitor", {"selector": {}, "endpoints": [
        {"port": "web"}, {"port": "x", "oauth2": {"clientId": {}}, "futureField": 1,
                          "tlsConfig": {"caFile": "/ca", "futureTLS": True}}]})
    assert fields(sm) == ["spec.endpoints[1].futureField", "spec.endpoints[1].tlsConfig.futureTLS"]
    pm = obj("PodMonitor", {"podMetricsEndpoints": [{"port": "web", "tlsConfig": {"caFile": "/x"}}]})
    assert fields(pm) == ["spec.podMetricsEndpoints[0].tlsConfig.caFile"]


def test_null_values_and_other_kinds_are_ignored():
    assert fields(obj("Prometheus", {"thanos": None})) == []
    assert fields(obj("Secret", {"anything": 1})) == []
    assert fields({"kind": "Prometheus", "metadata": {"name": "x"}}) == []


def test_prometheus_rule_groups_are_fully_supported():
    assert fields(obj("PrometheusRule", {"groups": [{"name": "g", "rules": [], "interval": "1m"}]})) == []


def test_kube_prometheus_fixtures_only_warn_about_probes_and_scrape_configs():
    if not FIXTURES.exists():
        pytest.skip("../shared/fixtures not present")
    found = set()
    for path in FIXTURES.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            found.update(f"{doc['kind']} {p.field}" for p in unsupported_fields(doc))
    assert found == {"Prometheus spec.probeSelector", "Prometheus spec.probeNamespaceSelector",
                     "Prometheus spec.scrapeConfigSelector", "Prometheus spec.scrapeConfigNamespaceSelector"}


def test_additional_args_the_operator_manages_are_reported():
    problems = unsupported_fields(obj("Prometheus", {"additionalArgs": [
        {"name": "storage.tsdb.path", "value": "/x"}, {"name": "web.page-title", "value": "ok"}]}))
    assert [(p.field, p.message) for p in problems] == [(
        "spec.additionalArgs",
        "--storage.tsdb.path is managed by the operator; this additional argument is ignored")]
