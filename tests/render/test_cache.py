"""RenderCache: identical output with or without it, reuse of unchanged fragments, invalidation."""

from __future__ import annotations

import copy

from promop.render import RenderCache, RenderInputs, render

from .helpers import prometheus_obj, secret, service_monitor


def _inputs(sms, **spec):
    return RenderInputs(
        prometheus=prometheus_obj(**spec),
        service_monitors=sms,
        secrets={("monitoring", "creds"): secret("creds", token="one")},
    )


def _sms(n=5):
    sms = []
    for i in range(n):
        sm = service_monitor(f"sm{i}", endpoints=[{"port": "web"}, {"port": "metrics", "bearerTokenSecret": {"name": "creds", "key": "token"}}])
        sm["metadata"].update(uid=f"uid-{i}", resourceVersion="1")
        sms.append(sm)
    return sms


def _same(a, b):
    assert a.config_text == b.config_text
    assert a.objects() == b.objects()
    assert a.rejected == b.rejected and a.warnings == b.warnings and a.selection == b.selection
    assert a.jobs == b.jobs and a.rule_files == b.rule_files


def test_cache_gives_identical_output_and_reuses_fragments():
    cache = RenderCache()
    inputs = _inputs(_sms())
    first = render(inputs, cache)
    _same(first, render(inputs))
    misses = cache.misses
    second = render(inputs, cache)
    _same(second, render(inputs))
    assert cache.misses == misses  # everything reused


def test_changed_monitor_is_regenerated():
    cache = RenderCache()
    sms = _sms()
    render(_inputs(sms), cache)
    changed = copy.deepcopy(sms)
    changed[2]["spec"]["endpoints"][0]["interval"] = "10s"
    changed[2]["metadata"]["resourceVersion"] = "2"
    misses = cache.misses
    result = render(_inputs(changed), cache)
    _same(result, render(_inputs(changed)))
    assert cache.misses == misses + 1
    job = next(j for j in result.config["scrape_configs"] if j["job_name"] == "serviceMonitor/monitoring/sm2/0")
    assert job["scrape_interval"] == "10s"


def test_objects_without_resource_version_are_keyed_by_content():
    cache = RenderCache()
    sms = _sms()
    for sm in sms:
        del sm["metadata"]["resourceVersion"]
    render(_inputs(sms), cache)
    changed = copy.deepcopy(sms)
    changed[0]["spec"]["endpoints"][0]["path"] = "/other"
    _same(render(_inputs(changed), cache), render(_inputs(changed)))


def test_changed_secret_invalidates_fragments_that_read_it():
    cache = RenderCache()
    inputs = _inputs(_sms())
    render(inputs, cache)
    inputs.secrets = {("monitoring", "creds"): secret("creds", token="two")}
    result = render(inputs, cache)
    _same(result, render(inputs))
    assert "bearer_token: two" in result.config_text


def test_removed_secret_turns_into_rejection_even_when_cached():
    cache = RenderCache()
    inputs = _inputs(_sms(2))
    render(inputs, cache)
    inputs.secrets = {}
    result = render(inputs, cache)
    _same(result, render(inputs))
    assert {p.name for p in result.rejected} == {"sm0", "sm1"}


def test_prometheus_change_invalidates_fragments():
    cache = RenderCache()
    sms = _sms(2)
    render(_inputs(sms), cache)
    result = render(_inputs(sms, enforcedNamespaceLabel="tenant"), cache)
    _same(result, render(_inputs(sms, enforcedNamespaceLabel="tenant")))
    assert "target_label: tenant" in result.config_text
    # an irrelevant change (replicas) still gives identical output
    result = render(_inputs(sms, enforcedNamespaceLabel="tenant", replicas=3), cache)
    _same(result, render(_inputs(sms, enforcedNamespaceLabel="tenant", replicas=3)))


def test_cache_is_bounded():
    cache = RenderCache(max_entries=3, max_renders=2)
    render(_inputs(_sms(6)), cache)
    assert len(cache) <= 3 + 3 + 2 + 2  # fragments, per-object memos, rule renders, selections


def test_whole_render_entries_do_not_accumulate():
    """A long-running operator re-renders after every change: only the latest few rule renders
    and selections (each as big as the whole input) are kept, however many changes there were."""
    cache = RenderCache(max_renders=2)
    sms = _sms(3)
    rule = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "r", "namespace": "monitoring", "uid": "u1", "resourceVersion": "1"},
            "spec": {"groups": [{"name": "g", "rules": [{"record": "a:b", "expr": "up"}]}]}}
    for rv in range(10):
        sms[0]["metadata"]["resourceVersion"] = str(rv)
        rule["metadata"]["resourceVersion"] = str(rv)
        inputs = _inputs(copy.deepcopy(sms))
        inputs.prometheus_rules = [copy.deepcopy(rule)]
        _same(render(inputs, cache), render(inputs))
    assert len(cache._rules) == 2 and len(cache._renders) <= 2
    # the selection is no longer a whole-render entry: an incremental index holds one decision per
    # candidate of the latest render, not one set per render
    assert len(cache.selection_index("ServiceMonitor")._decisions) == len(sms)


def test_status_writes_do_not_invalidate_rules():
    cache = RenderCache()
    rule = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "r", "namespace": "monitoring", "uid": "u1", "resourceVersion": "1"},
            "spec": {"groups": [{"name": "g", "rules": [{"record": "a:b", "expr": "up"}]}]}}
    inputs = _inputs(_sms(1))
    inputs.prometheus_rules = [rule]
    render(inputs, cache)
    inputs.prometheus["metadata"]["resourceVersion"] = "99"
    inputs.prometheus["status"] = {"replicas": 1}
    misses = cache.misses
    _same(render(inputs, cache), render(inputs))
    assert cache.misses == misses


def test_older_versions_of_a_monitor_are_dropped():
    """Fragments and per-object memos of superseded resourceVersions do not pile up."""
    cache = RenderCache()
    sms = _sms(2)
    render(_inputs(sms), cache)
    sizes = (len(cache._fragments), len(cache._memo))
    for rv in range(2, 12):
        sms = copy.deepcopy(sms)
        sms[0]["metadata"]["resourceVersion"] = str(rv)
        sms[0]["spec"]["endpoints"][0]["interval"] = f"{rv}s"
        _same(render(_inputs(sms), cache), render(_inputs(sms)))
    assert (len(cache._fragments), len(cache._memo)) == sizes


def test_one_changed_prometheus_rule_re_renders_only_that_rule(monkeypatch):
    from promop.render import rules as rules_module

    def rule(i: int, expr: str = "up == 0") -> dict:
        return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
                "metadata": {"name": f"r{i}", "namespace": "apps", "uid": f"u{i}", "resourceVersion": "1",
                             "labels": {}},
                "spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": expr}]}]}}

    calls = []
    real = rules_module._render_one
    monkeypatch.setattr(rules_module, "_render_one", lambda *a: calls.append(a[1]["metadata"]["name"]) or real(*a))
    inputs = _inputs(_sms(1))
    inputs.prometheus["spec"]["ruleSelector"] = {}
    inputs.prometheus_rules = [rule(i) for i in range(5)]
    cache = RenderCache()
    render(inputs, cache)
    assert sorted(calls) == ["r0", "r1", "r2", "r3", "r4"]
    calls.clear()
    changed = rule(2, "up == 1")
    changed["metadata"]["resourceVersion"] = "2"
    inputs.prometheus_rules = [*inputs.prometheus_rules[:2], changed, *inputs.prometheus_rules[3:]]
    result = render(inputs, cache)
    assert calls == ["r2"]
    monkeypatch.setattr(rules_module, "_render_one", real)
    _same(result, render(inputs))
