"""Rule ConfigMaps: file keys, content, sanitising, namespace enforcement, sharding, promtool."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from promop.render.model import RenderOptions
from promop.render.rules import (
    MAX_CONFIGMAP_DATA_SIZE,
    build_rule_configmaps,
    configmap_names,
    dump_rule_file,
    shard_rule_files,
)
from .helpers import promtool_path as promtool

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "kube-prometheus"


def prom(spec=None, name="foo", namespace="monitoring") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": name, "namespace": namespace, "uid": "p-uid"}, "spec": spec or {}}


def rule(name="r", namespace="apps", groups=None, uid=None) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"},
            "spec": {"groups": groups if groups is not None else [
                {"name": f"{name}.rules", "rules": [{"record": "job:up:sum", "expr": "sum by (job) (up)"}]}]}}


def check_rules_with_promtool(configmaps: list[dict], tmp_path: Path) -> int:
    """Write every rule file as the pod would see it, run `promtool check rules`; returns file count."""
    files = []
    for cm in configmaps:
        d = tmp_path / cm["metadata"]["name"]
        d.mkdir(parents=True, exist_ok=True)
        for key, content in cm["data"].items():
            (d / key).write_text(content)
            files.append(str(d / key))
    if files:
        proc = subprocess.run([promtool(), "check", "rules", *files], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return len(files)


def test_no_rules_still_gives_one_empty_configmap_and_three_names():
    res = build_rule_configmaps(prom(), [], RenderOptions())
    assert [cm["metadata"]["name"] for cm in res.configmaps] == ["prometheus-foo-rulefiles-0"]
    assert res.configmaps[0]["data"] == {}
    assert res.names == ["prometheus-foo-rulefiles-0", "prometheus-foo-rulefiles-1", "prometheus-foo-rulefiles-2"]
    assert not res.rejected and not res.rule_files


def test_file_key_content_metadata_and_mapping():
    r = rule(groups=[{"name": "g", "partial_response_strategy": "warn", "interval": "1m", "rules": [
        {"alert": "A", "expr": "up == 0", "for": "5m", "labels": {"severity": "page"},
         "annotations": {"summary": "{{ $labels.job }} down"}}]}])
    res = build_rule_configmaps(prom(), [r], RenderOptions(labels={"team": "x"}, annotations={"a": "b"}))
    (cm,) = res.configmaps
    assert list(cm["data"]) == ["apps-r-uid-r.yaml"]
    content = cm["data"]["apps-r-uid-r.yaml"]
    assert yaml.safe_load(content) == {"groups": [{"interval": "1m", "name": "g", "rules": [
        {"alert": "A", "annotations": {"summary": "{{ $labels.job }} down"}, "expr": "up == 0", "for": "5m",
         "labels": {"severity": "page"}}]}]}
    assert content.index("interval:") < content.index("name:") < content.index("rules:")  # alphabetical
    assert "partial_response_strategy" not in content
    assert cm["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "prometheus-operator",
                                        "managed-by": "prometheus-operator", "prometheus-name": "foo", "team": "x"}
    assert cm["metadata"]["annotations"] == {"a": "b"}
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "p-uid"
    assert res.rule_files == {("apps", "r"): ("prometheus-foo-rulefiles-0", "apps-r-uid-r.yaml")}


def test_fields_too_new_for_the_version_are_dropped_with_a_warning():
    r = rule(groups=[{"name": "g", "limit": 5, "query_offset": "1m", "labels": {"team": "a"}, "rules": [
        {"alert": "A", "expr": "up == 0", "keep_firing_for": "5m"}]}])
    res = build_rule_configmaps(prom({"version": "v2.30.0"}), [r], RenderOptions())
    group = yaml.safe_load(res.configmaps[0]["data"]["apps-r-uid-r.yaml"])["groups"][0]
    assert group == {"name": "g", "rules": [{"alert": "A", "expr": "up == 0"}]}
    assert sorted(w.field for w in res.warnings) == [
        "spec.groups[0].labels", "spec.groups[0].limit", "spec.groups[0].query_offset",
        "spec.groups[0].rules[0].keep_firing_for"]
    assert all("dropped: needs Prometheus >=" in w.message for w in res.warnings)
    res = build_rule_configmaps(prom({"version": "v3.13.2"}), [r], RenderOptions())
    assert not res.warnings
    assert yaml.safe_load(res.configmaps[0]["data"]["apps-r-uid-r.yaml"])["groups"][0]["labels"] == {"team": "a"}


def test_enforced_namespace_label_rewrites_selectors_and_labels():
    r = rule(groups=[{"name": "g", "rules": [
        {"record": "x", "expr": 'sum by (job) (rate(http_total{code=~"5..",namespace="other"}[5m]))'},
        {"alert": "A", "expr": 'label_replace(up, "a", "$1", "b", "(.*)\\\\.x") == 0 and on() vector(1)'}]}])
    res = build_rule_configmaps(prom({"enforcedNamespaceLabel": "namespace"}), [r], RenderOptions())
    rules = yaml.safe_load(res.configmaps[0]["data"]["apps-r-uid-r.yaml"])["groups"][0]["rules"]
    assert rules[0]["expr"] == 'sum by (job) (rate(http_total{code=~"5..",namespace="apps"}[5m]))'
    assert rules[1]["expr"] == ('label_replace(up{namespace="apps"}, "a", "$1", "b", "(.*)\\\\.x") == 0 '
                                'and on() vector(1)')
    assert all(r_["labels"] == {"namespace": "apps"} for r_ in rules)


def test_excluded_from_enforcement():
    spec = {"enforcedNamespaceLabel": "namespace", "excludedFromEnforcement": [
        {"group": "monitoring.coreos.com", "resource": "prometheusrules", "namespace": "apps", "name": "r"}]}
    res = build_rule_configmaps(prom(spec), [rule(), rule("other")], RenderOptions())
    data = res.configmaps[0]["data"]
    assert "namespace" not in data["apps-r-uid-r.yaml"]
    assert 'up{namespace="apps"}' in data["apps-other-uid-other.yaml"]


def test_sharding_boundaries_like_upstream():
    # derived/PrometheusRuleSync.expected.yaml: a full first file forces the second into a new ConfigMap
    assert shard_rule_files({"first.yaml": "a" * MAX_CONFIGMAP_DATA_SIZE, "second.yaml": "a"}) == [
        {"first.yaml": "a" * MAX_CONFIGMAP_DATA_SIZE}, {"second.yaml": "a"}]
    # exactly at the limit still fits in one
    assert len(shard_rule_files({"a": "x" * (MAX_CONFIGMAP_DATA_SIZE - 1), "b": "y"})) == 1
    assert len(shard_rule_files({"a": "x" * (MAX_CONFIGMAP_DATA_SIZE - 1), "b": "yz"})) == 2
    # sorted by file name, filled in order (not bin-packed)
    assert shard_rule_files({"c": "3", "a": "1", "b": "2"}) == [{"a": "1", "b": "2", "c": "3"}]
    assert shard_rule_files({}) == [{}]
    assert configmap_names(prom(), 1) == ["prometheus-foo-rulefiles-0", "prometheus-foo-rulefiles-1",
                                          "prometheus-foo-rulefiles-2"]
    assert configmap_names(prom(), 4)[-1] == "prometheus-foo-rulefiles-3"


def _big_rule(name: str, size: int) -> dict:
    return rule(name, groups=[{"name": "g", "rules": [
        {"alert": "Big", "expr": "up == 0", "annotations": {"description": "x" * size}}]}])


def test_large_rules_spread_over_several_configmaps(tmp_path):
    rules = [_big_rule(f"r{i}", 200_000) for i in range(5)]
    res = build_rule_configmaps(prom(), rules, RenderOptions())
    assert not res.rejected
    sizes = [sum(len(v.encode()) for v in cm["data"].values()) for cm in res.configmaps]
    assert len(res.configmaps) == 3 and all(s <= MAX_CONFIGMAP_DATA_SIZE for s in sizes)
    assert [len(cm["data"]) for cm in res.configmaps] == [2, 2, 1]
    assert res.names == [f"prometheus-foo-rulefiles-{i}" for i in range(3)]
    assert res.rule_files[("apps", "r4")] == ("prometheus-foo-rulefiles-2", "apps-r4-uid-r4.yaml")
    assert check_rules_with_promtool(res.configmaps, tmp_path) == 5


@pytest.mark.prometheus
@pytest.mark.parametrize("enforce", [None, "namespace"])
def test_kube_prometheus_rules_pass_promtool(tmp_path, enforce):
    if not FIXTURES.exists():
        pytest.skip("../shared/fixtures not present")
    rules = [yaml.safe_load(p.read_text()) for p in sorted(FIXTURES.glob("*prometheusRule.yaml"))]
    res = build_rule_configmaps(prom({"version": "v2.42.0", "enforcedNamespaceLabel": enforce}), rules,
                                RenderOptions())
    assert not res.rejected, res.rejected
    assert len(res.rule_files) == len(rules) == 8
    assert check_rules_with_promtool(res.configmaps, tmp_path) == 8


def test_memo_reuses_unchanged_rules_and_gives_equal_results():
    p = prom({"enforcedNamespaceLabel": "namespace"})
    rules = [rule(f"r{i}") for i in range(3)] + [rule("bad", groups=[{"name": "g", "rules": [{"expr": "up"}]}])]
    memo: dict = {}
    first = build_rule_configmaps(p, rules, RenderOptions(), memo=memo)
    assert len(memo) == 4
    assert first == build_rule_configmaps(p, rules, RenderOptions())  # same with or without a memo
    rules[0]["spec"]["groups"][0]["rules"][0]["expr"] = "count(up)"
    second = build_rule_configmaps(p, rules, RenderOptions(), memo=memo)
    assert len(memo) == 5  # only the changed rule was rendered again
    assert 'count(up{namespace="apps"})' in second.configmaps[0]["data"]["apps-r0-uid-r0.yaml"]
    assert second.rejected == first.rejected
    # the Prometheus settings are part of the key: no stale enforcement
    third = build_rule_configmaps(prom(), rules, RenderOptions(), memo=memo)
    assert "namespace" not in third.configmaps[0]["data"]["apps-r1-uid-r1.yaml"]


@pytest.mark.prometheus
def test_holt_winters_is_accepted_for_prometheus_2(tmp_path):
    r = rule(groups=[{"name": "g", "rules": [{"record": "x:smoothed", "expr": "holt_winters(x[5m], 0.5, 0.5)"}]}])
    res = build_rule_configmaps(prom({"version": "v2.42.0", "enforcedNamespaceLabel": "namespace"}), [r],
                                RenderOptions())
    assert not res.rejected
    assert check_rules_with_promtool(res.configmaps, tmp_path) == 1


def test_rule_without_spec_is_rejected_as_the_apiserver_would(tmp_path):
    empty = {"kind": "PrometheusRule", "metadata": {"name": "e", "namespace": "apps", "uid": "u"}}
    res = build_rule_configmaps(prom({"enforcedNamespaceLabel": "namespace"}), [empty], RenderOptions())
    assert [(p.field, p.message) for p in res.rejected] == [("spec", "Required value (CRD schema)")]
    assert res.configmaps[0]["data"] == {}


def test_rule_with_empty_spec_renders_an_empty_file(tmp_path):
    empty = {"kind": "PrometheusRule", "metadata": {"name": "e", "namespace": "apps", "uid": "u"}, "spec": {}}
    res = build_rule_configmaps(prom({"enforcedNamespaceLabel": "namespace"}), [empty], RenderOptions())
    assert not res.rejected
    assert res.configmaps[0]["data"] == {"apps-e-u.yaml": "{}\n"}
    assert check_rules_with_promtool(res.configmaps, tmp_path) == 1


# Upstream's own limit, written out here on purpose (not imported from promop): pkg/operator/rules.go
# MaxConfigMapDataSize = MaxSecretSize * 0.5 = 1048576 / 2 bytes of ConfigMap data, counted as the
# byte length of each rule file's content (reference s2).
UPSTREAM_MAX_CONFIGMAP_DATA = 524288


def _rule_of_size(name: str, size: int) -> dict:
    """A PrometheusRule whose rendered rule file is exactly `size` bytes (UTF-8): the padding is one
    ASCII byte per character, so the size is the size with no padding plus the padding."""
    [base] = build_rule_configmaps(prom(), [_big_rule(name, 1)], RenderOptions()).configmaps[0]["data"].values()
    obj = _big_rule(name, size - len(base.encode()) + 1)
    assert len(dump_rule_file(obj["spec"]).encode()) == size
    return obj


def _configmap_sizes(res) -> list[int]:
    return [sum(len(v.encode()) for v in cm["data"].values()) for cm in res.configmaps]


@pytest.mark.parametrize("total,expected_configmaps", [
    (UPSTREAM_MAX_CONFIGMAP_DATA - 1, 1),  # just under the limit: one ConfigMap
    (UPSTREAM_MAX_CONFIGMAP_DATA, 1),      # exactly at the limit still fits (upstream starts a new one only when >)
    (UPSTREAM_MAX_CONFIGMAP_DATA + 1, 2),  # one byte over: the second file goes to a second ConfigMap
])
def test_rule_configmap_sharding_at_upstreams_limit(total, expected_configmaps):
    first = _rule_of_size("a-first", 400_000)
    second = _rule_of_size("b-second", total - 400_000)
    res = build_rule_configmaps(prom(), [second, first], RenderOptions())
    assert not res.rejected
    assert len(res.configmaps) == expected_configmaps
    assert sum(_configmap_sizes(res)) == total
    assert all(size <= UPSTREAM_MAX_CONFIGMAP_DATA for size in _configmap_sizes(res))
    # files are taken in name order, so the first file always opens the first ConfigMap
    assert list(res.configmaps[0]["data"])[0].startswith("apps-a-first-")


def test_single_rule_file_over_upstreams_limit_is_rejected_and_at_it_accepted():
    at_limit = _rule_of_size("fits", UPSTREAM_MAX_CONFIGMAP_DATA)
    over = _rule_of_size("too-big", UPSTREAM_MAX_CONFIGMAP_DATA + 1)
    res = build_rule_configmaps(prom(), [at_limit, over], RenderOptions())
    assert [(p.name, p.field) for p in res.rejected] == [("too-big", "spec")]
    assert "524289 bytes, over the 524288-byte ConfigMap limit" in res.rejected[0].message
    assert _configmap_sizes(res) == [UPSTREAM_MAX_CONFIGMAP_DATA]
