"""Unit tests of the operator's pure logic: options, status, feedback, mapping, diff, logs."""

from __future__ import annotations

import argparse
import io
import json
import logging

import pytest

from promop.host import logs
from promop.operator import diff, feedback, mapping, options, status
from promop.render.model import Decision, Problem


def parse(*argv: str) -> options.Options:
    parser = argparse.ArgumentParser()
    options.add_flags(parser)
    return options.from_args(parser.parse_args(list(argv)))


def test_options_defaults_and_maps():
    o = parse("--labels", "team=infra, env=prod", "--namespaces", "a,b,a")
    assert o.labels == {"team": "infra", "env": "prod"}
    assert o.namespaces == ("a", "b")
    assert o.listen_host_port() == ("0.0.0.0", 8080)
    assert o.namespace_allowed("a") and not o.namespace_allowed("c")
    assert o.render_options().labels == {"team": "infra", "env": "prod"}


def test_options_errors_name_the_flag():
    with pytest.raises(options.OptionsError, match="mutually exclusive"):
        parse("--namespaces", "a", "--deny-namespaces", "b")
    with pytest.raises(options.OptionsError, match="--labels"):
        parse("--labels", "novalue")
    with pytest.raises(options.OptionsError, match="listen-address"):
        parse("--web.listen-address", "8080")
    with pytest.raises(options.OptionsError, match="--workers"):
        parse("--workers", "0")
    with pytest.raises(options.OptionsError, match="renew_deadline"):
        parse("--leader-elect", "--leader-election-lease-duration", "5", "--leader-election-renew-deadline", "6")
    assert parse("--leader-elect", "--leader-election-lease-duration", "3", "--leader-election-renew-deadline",
                 "2", "--leader-election-retry-period", "0.5").lease_duration == 3
    deny = parse("--deny-namespaces", "kube-system,x")
    assert deny.namespace_field_selector() == "metadata.namespace!=kube-system,metadata.namespace!=x"
    assert not deny.namespace_allowed("x") and deny.namespace_allowed("y")


def prom(name="k8s", ns="monitoring", gen=1, **spec):
    return {"metadata": {"name": name, "namespace": ns, "generation": gen, "uid": f"uid-{name}"}, "spec": spec}


def sts(replicas, available, updated=None):
    return {"status": {"replicas": replicas, "availableReplicas": available,
                       "updatedReplicas": replicas if updated is None else updated}}


def cond(st, ctype):
    return next(c for c in st["conditions"] if c["type"] == ctype)


def test_status_available_true_degraded_false():
    p = prom(replicas=2, shards=2)
    ok = status.prometheus_status(p, {0: sts(2, 2), 1: sts(2, 2)}, now="T1")
    assert (ok["replicas"], ok["availableReplicas"], ok["unavailableReplicas"], ok["shards"]) == (4, 4, 0, 2)
    assert cond(ok, "Available")["status"] == "True"
    assert cond(ok, "Reconciled") == {"type": "Reconciled", "status": "True", "reason": "", "message": "",
                                      "observedGeneration": 1, "lastTransitionTime": "T1"}
    deg = status.prometheus_status(p, {0: sts(2, 1), 1: sts(2, 2)}, now="T1")
    assert cond(deg, "Available")["status"] == "Degraded"
    assert cond(deg, "Available")["reason"] == "SomePodsNotReady"
    bad = status.prometheus_status(p, {0: sts(2, 0), 1: None}, now="T1")
    assert cond(bad, "Available")["status"] == "False"
    assert cond(bad, "Available")["reason"] == "NoPodReadyAndStatefulSetNotFound"
    assert bad["shardStatuses"][1] == {"shardID": "1", "replicas": 0, "updatedReplicas": 0,
                                       "availableReplicas": 0, "unavailableReplicas": 0}
    assert "app.kubernetes.io/name=prometheus" in ok["selector"]


def test_status_keeps_last_transition_time_while_unchanged():
    p = prom(replicas=1)
    first = status.prometheus_status(p, {0: sts(1, 1)}, now="T1")
    p["status"] = first
    second = status.prometheus_status(p, {0: sts(1, 1)}, now="T2")
    assert cond(second, "Available")["lastTransitionTime"] == "T1"
    assert not status.status_changed(first, second)
    failed = status.prometheus_status(p, {0: sts(1, 1)}, error="boom", now="T3")
    rec = cond(failed, "Reconciled")
    assert (rec["status"], rec["reason"], rec["message"], rec["lastTransitionTime"]) == (
        "False", "ReconciliationFailed", "boom", "T3")
    assert cond(failed, "Available")["lastTransitionTime"] == "T1"
    assert status.status_changed(first, failed)


def test_feedback_verdicts_and_bindings():
    sel = [Decision("ServiceMonitor", "a", "good", True), Decision("ServiceMonitor", "a", "bad", True),
           Decision("ServiceMonitor", "a", "other", False, "label team missing")]
    rej = [Problem("ServiceMonitor", "a", "bad", "spec.endpoints[0].scrapeTimeout", "exceeds interval")]
    v = feedback.verdicts(sel, rej)
    assert v[("ServiceMonitor", "a", "good")] == feedback.Verdict(True)
    assert v[("ServiceMonitor", "a", "bad")].reason == "InvalidConfiguration"
    assert "exceeds interval" in v[("ServiceMonitor", "a", "bad")].message
    assert ("ServiceMonitor", "a", "other") not in v

    p, p2 = prom(), prom(name="other")
    sm = {"metadata": {"name": "bad", "namespace": "a", "generation": 3}}
    b1 = feedback.desired_bindings(sm, p, v[("ServiceMonitor", "a", "bad")], now="T1")
    assert b1[0]["name"] == "k8s" and b1[0]["conditions"][0]["status"] == "False"
    assert b1[0]["conditions"][0]["observedGeneration"] == 3
    sm["status"] = {"bindings": b1}
    assert sm["status"]["bindings"] == feedback.desired_bindings(sm, p, v[("ServiceMonitor", "a", "bad")], now="T2")
    assert feedback.binding_current(sm, p, v[("ServiceMonitor", "a", "bad")])
    assert not feedback.binding_current(sm, p, feedback.Verdict(True))
    assert not feedback.binding_current(sm, p, None)
    assert feedback.binding_current(sm, p2, None) and not feedback.binding_current(sm, p2, feedback.Verdict(True))
    sm["metadata"]["generation"] = 4
    assert not feedback.binding_current(sm, p, v[("ServiceMonitor", "a", "bad")])
    sm["metadata"]["generation"] = 3
    both = feedback.desired_bindings(sm, p2, feedback.Verdict(True), now="T2")
    assert [b["name"] for b in both] == ["k8s", "other"]
    sm["status"] = {"bindings": both}
    flipped = feedback.desired_bindings(sm, p, feedback.Verdict(True), now="T3")
    assert flipped[0]["conditions"][0]["lastTransitionTime"] == "T3"
    assert flipped[1] == both[1]
    assert [b["name"] for b in feedback.desired_bindings(sm, p, None, now="T3")] == ["other"]


def test_event_dedup_and_notes():
    obj = {"metadata": {"name": "x", "namespace": "a", "uid": "u1", "generation": 1}}
    d = feedback.EventDeduper()
    assert d.should_emit(obj, "InvalidConfiguration", "n1")
    assert not d.should_emit(obj, "InvalidConfiguration", "n1")
    assert d.should_emit(obj, "InvalidConfiguration", "n2")
    obj["metadata"]["generation"] = 2
    assert d.should_emit(obj, "InvalidConfiguration", "n2")
    notes = feedback.problem_events([Problem("ServiceMonitor", "a", "x", "spec.f", "bad")], rejected=True)
    assert notes == [(("ServiceMonitor", "a", "x"),
                      '"a/x" was rejected due to invalid configuration: spec.f: bad')]
    ev = feedback.event_for(obj, feedback.API_VERSION, "ServiceMonitor", "InvalidConfiguration", "m", "Warning",
                            "T")
    assert ev["involvedObject"]["uid"] == "u1" and ev["type"] == "Warning" and ev["metadata"]["namespace"] == "a"


def test_mapping_rules():
    p_own = prom("own", "mon")  # nil selectors: own namespace only
    p_all = prom("all", "mon", serviceMonitorNamespaceSelector={})
    p_team = prom("team", "mon", serviceMonitorNamespaceSelector={"matchLabels": {"team": "web"}})
    proms = [p_own, p_all, p_team]
    labels = {"web": {"team": "web"}, "mon": {}}.get
    assert mapping.for_monitor("ServiceMonitor", "web", proms, labels) == ["mon/all", "mon/team"]
    assert mapping.for_monitor("ServiceMonitor", "mon", proms, labels) == ["mon/all", "mon/own", "mon/team"]
    assert mapping.for_monitor("PrometheusRule", "web", proms, labels) == []
    refs = {"mon/team": {("Secret", "web", "creds")}}
    assert mapping.for_referenced("Secret", "web", "creds", proms, refs) == ["mon/team"]
    assert mapping.for_referenced("Secret", "web", "unrelated", proms, refs) == []
    assert mapping.for_referenced("Secret", "mon", "prometheus-own", proms, refs) == ["mon/all", "mon/own", "mon/team"]
    assert mapping.for_namespace_change({}, {"team": "web"}, "web", proms) == ["mon/team"]
    assert mapping.for_namespace_change(None, {}, "new", proms) == ["mon/all"]
    assert mapping.for_namespace_change({"x": "1"}, {"x": "2"}, "web", proms) == []


def test_monitor_events_reach_only_prometheuses_that_select_a_version_of_the_object():
    """Upstream's object selector semantics, applied to the event's old and new objects: a
    Prometheus whose valid selector matches neither (and that neither names in status.bindings)
    cannot change, so it is not synced; every other case still is."""
    ns_all = {"serviceMonitorNamespaceSelector": {}}
    p_team = prom("team", "mon", serviceMonitorSelector={"matchLabels": {"team": "a"}}, **ns_all)
    p_expr = prom("expr", "mon", serviceMonitorSelector={"matchExpressions": [
        {"key": "team", "operator": "NotIn", "values": ["a"]}]}, **ns_all)
    p_nil = prom("nil", "mon", **ns_all)  # nil selector: never used to leave a Prometheus out
    p_bad = prom("bad", "mon", serviceMonitorSelector={"matchLabels": {"bad key!": "x"}}, **ns_all)
    proms = [p_team, p_expr, p_nil, p_bad]
    labels = {"web": {}}.get

    def sm(team=None, bindings=()):
        obj = {"metadata": {"name": "s", "namespace": "web", "labels": {"team": team} if team else {}}}
        if bindings:
            obj["status"] = {"bindings": [{"group": "monitoring.coreos.com", "resource": "prometheuses",
                                           "namespace": "mon", "name": b} for b in bindings]}
        return obj

    def keys(*objects):
        return mapping.for_monitor("ServiceMonitor", "web", proms, labels, objects=objects)

    assert keys(sm("a"), None) == ["mon/bad", "mon/nil", "mon/team"]
    assert keys(sm("b"), None) == ["mon/bad", "mon/expr", "mon/nil"]
    assert keys(sm("a"), sm("b")) == ["mon/bad", "mon/expr", "mon/nil", "mon/team"]  # relabelled: both
    assert keys(sm("b"), sm("a")) == ["mon/bad", "mon/expr", "mon/nil", "mon/team"]
    assert keys(sm("b", bindings=["team"]), None) == ["mon/bad", "mon/expr", "mon/nil", "mon/team"]
    assert keys(sm("b"), sm("b", bindings=["team"])) == ["mon/bad", "mon/expr", "mon/nil", "mon/team"]
    # without the objects (the agent controller): by namespace only, as before
    assert mapping.for_monitor("ServiceMonitor", "web", proms, labels) == ["mon/bad", "mon/expr", "mon/nil",
                                                                           "mon/team"]
    # the namespace selector still applies first
    p_own = prom("own", "mon", serviceMonitorSelector={})
    assert mapping.for_monitor("ServiceMonitor", "web", [p_own], labels, objects=(sm("a"), None)) == []
    # each kind reads its own selector field
    p_rules = prom("rules", "mon", ruleSelector={"matchLabels": {"team": "a"}}, ruleNamespaceSelector={})
    assert mapping.for_monitor("PrometheusRule", "web", [p_rules], labels, objects=(sm("b"), None)) == []
    assert mapping.for_monitor("PrometheusRule", "web", [p_rules], labels, objects=(sm("a"), None)) == ["mon/rules"]
    owned = {"metadata": {"namespace": "mon", "ownerReferences": [
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "name": "own", "controller": True}]}}
    assert mapping.for_statefulset(owned) == ["mon/own"]
    assert mapping.for_statefulset({"metadata": {"namespace": "mon"}}) == []


def test_update_filters():
    a = {"metadata": {"generation": 1, "labels": {"x": "1"}, "resourceVersion": "5"}}
    status_only = {"metadata": {"generation": 1, "labels": {"x": "1"}, "resourceVersion": "6"}}
    assert not mapping.prometheus_update_matters(a, status_only)
    assert not mapping.monitor_update_matters(a, status_only)
    assert mapping.resource_version_changed(a, status_only)
    assert mapping.prometheus_update_matters(a, {"metadata": {**a["metadata"], "annotations": {"y": "1"}}})
    assert mapping.monitor_update_matters(a, {"metadata": {**a["metadata"], "generation": 2}})
    assert not mapping.resource_version_changed(a, a)


def test_bound_prometheuses():
    b = {"group": "monitoring.coreos.com", "resource": "prometheuses", "namespace": "n", "name": "p"}
    obj = {"status": {"bindings": [b, {**b, "resource": "alertmanagers"}, {**b, "name": ""}, "junk",
                                   {**b, "namespace": "m", "name": "q"}]}}
    assert mapping.bound_prometheuses(obj) == ["n/p", "m/q"]
    assert mapping.bound_prometheuses({}) == []


def test_statefulset_status_only():
    old = {"metadata": {"name": "s", "labels": {"x": "1"}, "resourceVersion": "5", "generation": 1},
           "spec": {"replicas": 1}, "status": {"readyReplicas": 1}}
    assert mapping.statefulset_status_only(old, {**old, "metadata": {**old["metadata"], "resourceVersion": "6"},
                                                 "status": {"readyReplicas": 0}})
    assert not mapping.statefulset_status_only(old, {**old, "spec": {"replicas": 2}})
    assert not mapping.statefulset_status_only(old, {**old, "metadata": {**old["metadata"], "labels": {}}})
    assert not mapping.statefulset_status_only(old, {**old, "metadata": {**old["metadata"],
                                                                         "deletionTimestamp": "2026-01-01T00:00:00Z"}})


def secret(data, labels=None, refs=None, **extra):
    md = {"name": "s", "namespace": "n", "labels": labels or {"managed-by": "prometheus-operator"}}
    if refs is not None:
        md["ownerReferences"] = refs
    return {"apiVersion": "v1", "kind": "Secret", "metadata": md, "data": data, **extra}


def test_diff_secret_semantics():
    ref = [{"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "name": "k", "uid": "u",
            "controller": True, "blockOwnerDeletion": True}]
    want = secret({"a": "eA=="}, refs=ref)
    have = secret({"a": "eA=="}, labels={"managed-by": "prometheus-operator", "foreign": "1"}, refs=ref)
    have["metadata"].update(resourceVersion="9", uid="x", managedFields=[{}], creationTimestamp="t")
    assert diff.semantically_equal(want, have)
    assert not diff.semantically_equal(want, secret({"a": "eQ=="}, refs=ref))  # foreign value change
    assert not diff.semantically_equal(want, secret({"a": "eA==", "b": "eA=="}, refs=ref))  # extra key
    assert not diff.semantically_equal(want, secret({"a": "eA=="}, refs=[]))  # ownerRef removed
    assert not diff.semantically_equal(want, None)
    assert diff.semantically_equal(secret({}, refs=ref, stringData={"a": "x"}), have)
    body = diff.for_update(want, have)
    assert body["metadata"]["labels"]["foreign"] == "1"
    assert body["metadata"]["resourceVersion"] == "9"
    assert "managedFields" not in body["metadata"]


def test_diff_service_and_statefulset():
    want = {"kind": "Service", "metadata": {"name": "prometheus-operated"},
            "spec": {"clusterIP": "None", "ports": [{"name": "web", "port": 9090}]}}
    have = {"kind": "Service", "metadata": {"name": "prometheus-operated", "resourceVersion": "1"},
            "spec": {"clusterIP": "None", "clusterIPs": ["None"], "type": "ClusterIP",
                     "ports": [{"name": "web", "port": 9090, "protocol": "TCP"}]}}
    assert diff.semantically_equal(want, have)
    assert diff.for_update(want, have)["spec"]["clusterIPs"] == ["None"]
    have["spec"]["ports"][0]["port"] = 9091
    assert not diff.semantically_equal(want, have)

    def ss(h, tpl_ann=None):
        return {"kind": "StatefulSet", "metadata": {"name": "p", "annotations": {diff.INPUT_HASH: h}},
                "spec": {"replicas": 1, "template": {"metadata": {"annotations": tpl_ann or {}}}}}
    assert diff.semantically_equal(ss("1"), ss("1"))
    assert not diff.semantically_equal(ss("1"), ss("2"))
    restarted = ss("1", {"kubectl.kubernetes.io/restartedAt": "now"})
    body = diff.for_update(ss("2"), restarted)
    assert body["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] == "now"


def test_subset():
    assert diff.is_subset({"a": [{"b": 1}]}, {"a": [{"b": 1, "c": 2}], "d": 3})
    assert not diff.is_subset({"a": [1, 2]}, {"a": [1]})
    assert not diff.is_subset({"a": 1}, {})


@pytest.mark.parametrize("fmt", ["logfmt", "json"])
def test_logs_are_structured(fmt):
    buf = io.StringIO()
    handler = logs.setup("info", fmt, buf)
    try:
        logging.getLogger("promop.test").info("synced it", **logs.fields(key="ns/name", n=3))
        logging.getLogger("promop.test").debug("hidden")
    finally:
        logging.getLogger().removeHandler(handler)
    line = buf.getvalue().strip()
    assert "\n" not in line
    if fmt == "json":
        rec = json.loads(line)
        assert rec["msg"] == "synced it" and rec["key"] == "ns/name" and rec["n"] == 3 and rec["level"] == "info"
    else:
        assert 'msg="synced it"' in line and "key=ns/name" in line and "n=3" in line and line.startswith("level=info")




@pytest.mark.parametrize("shards,expected", [(3, 3), ("3", 1), (True, 1), (None, 1), (0, 1), (-2, 1)])
def test_one_shard_count_for_status_and_statefulsets(shards, expected):
    """Status and StatefulSets ask the same function, so they never disagree (a string "3" used to
    give 3 shards in status and 1 StatefulSet)."""
    from promop.render.statefulset import shard_count as render_shard_count

    prom = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"shards": shards}}
    assert render_shard_count(prom["spec"]) == expected
    assert status.shard_count(prom) == expected
    st = status.prometheus_status(prom, {}, now="2026-01-01T00:00:00Z")
    assert st["shards"] == expected and len(st["shardStatuses"]) == expected


def test_writelog_one_record_per_object():
    from promop.operator.writelog import NOTHING, WriteLog

    log = WriteLog()
    key = ("Secret", "ns", "s")
    v = lambda rv: {"metadata": {"resourceVersion": rv}}  # noqa: E731
    assert not log.matches(key, v("1")) and log.pending(key, v("1")) is NOTHING
    log.wrote(key, v("1"), v("2"), "A")
    assert log.matches(key, v("2")) and log.matches(key, v("2"), "A") and not log.matches(key, v("2"), "B")
    assert not log.matches(key, v("1"))  # a foreign version is no echo of ours
    assert log.pending(key, v("1")) == "A"  # the cache still shows what our write replaced
    assert log.pending(key, v("3")) is NOTHING  # the cache moved on
    log.wrote(key, None, v("4"), "C")  # a create is never "pending": absent is no unique version
    assert log.pending(key, None) is NOTHING
    log.matched(key, v("5"), "D")
    assert log.matches(key, v("5"), "D") and log.pending(key, v("5")) is NOTHING
    log.forget(lambda k: k == key)
    assert log.get(key) is None and len(log) == 0
