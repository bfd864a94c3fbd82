"""The ThanosRuler controller beside other operators, on the sandbox: --controller-id and
--thanos-ruler-instance-namespaces/-selector (as for Prometheus: test_operator_beside.py).
--repair-policy-for-statefulsets: test_operator_repair_others.py."""

from __future__ import annotations

from operator_testlib import NS, eventually, modify, operator_writes, rule

from promop.kube.errors import NotFound
from promop.kube.resources import NAMESPACES, PROMETHEUSRULES, STATEFULSETS
from promop.operator.ownership import CONTROLLER_ID_ANNOTATION
from promop.operator.thanos import THANOSRULERS
from promop.operator.thanos.controller import ThanosRulerController


def ruler(name: str, controller_id: str | None = None, namespace: str = NS, labels: dict | None = None) -> dict:
    md = {"name": name, "namespace": namespace, "labels": labels or {}}
    if controller_id is not None:
        md["annotations"] = {CONTROLLER_ID_ANNOTATION: controller_id}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler", "metadata": md,
            "spec": {"queryEndpoints": ["dnssrv+_http._tcp.thanos-query.monitoring.svc"], "ruleSelector": {}}}


def _get(kube, res, name, namespace=NS):
    try:
        return kube.get(res, name, namespace)
    except NotFound:
        return None


def _status(kube, name, namespace=NS) -> dict:
    return (_get(kube, THANOSRULERS, name, namespace) or {}).get("status") or {}


def _rulers(running) -> ThanosRulerController:
    return next(c for c in running.operator.controllers if isinstance(c, ThanosRulerController))


def _namespaces(kube, *names):
    for n in names:
        kube.create(NAMESPACES, {"metadata": {"name": n}})


def test_only_thanos_rulers_with_our_controller_id_are_managed(cluster, kube, start_operator):
    _namespaces(kube, NS)
    op = start_operator(agent="operator-a", controller_id="a")
    kube.create(THANOSRULERS, ruler("theirs", "b"))
    kube.create(THANOSRULERS, ruler("none"))  # no ID: not the business of an operator with one
    kube.create(THANOSRULERS, ruler("mine", "a"))
    eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-mine"), 30, "our ThanosRuler's StatefulSet")
    eventually(lambda: _status(kube, "mine").get("conditions"), 30, "our ThanosRuler's status")
    kube.create(PROMETHEUSRULES, rule("r", "sum(up)"))  # a later event every ThanosRuler may select
    ctl = _rulers(op)
    eventually(lambda: _get(kube, THANOSRULERS, "mine") and ctl.idle(), 30, "the ThanosRuler controller idle")
    assert set(ctl.syncer.last_report) == {f"{NS}/mine"}
    for other in ("theirs", "none"):
        assert _get(kube, STATEFULSETS, f"thanos-ruler-{other}") is None
        assert _status(kube, other) == {}
        assert not [w for w in operator_writes(cluster, "operator-a") if other in (w.name or "")]

    modify(kube, THANOSRULERS, "none", NS,
           lambda o: o["metadata"].setdefault("annotations", {}).update({CONTROLLER_ID_ANNOTATION: "a"}))
    eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-none"), 30, "the handed-over ThanosRuler's StatefulSet")


def test_the_thanos_ruler_instance_selector_filters_the_informer(cluster, kube, start_operator):
    _namespaces(kube, NS)
    op = start_operator(thanos_ruler_instance_selector="team in (a),!skip")
    kube.create(THANOSRULERS, ruler("ta", labels={"team": "a"}))
    kube.create(THANOSRULERS, ruler("tb", labels={"team": "b"}))
    kube.create(THANOSRULERS, ruler("ts", labels={"team": "a", "skip": "y"}))
    eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-ta"), 30, "the selected ThanosRuler's StatefulSet")
    ctl = _rulers(op)
    eventually(ctl.idle, 30, "the ThanosRuler controller idle")
    assert ctl.thanosrulers.store.keys() == [f"{NS}/ta"]  # filtered by the apiserver, not after
    assert _get(kube, STATEFULSETS, "thanos-ruler-tb") is None and _get(kube, STATEFULSETS, "thanos-ruler-ts") is None


def test_thanos_ruler_instance_namespaces_win_over_deny_not_for_rules(cluster, kube, start_operator):
    _namespaces(kube, NS, "other")
    op = start_operator(deny_namespaces=(NS,), thanos_ruler_instance_namespaces=(NS,))
    kube.create(PROMETHEUSRULES, rule("denied", "sum(up)"))  # PrometheusRules still follow --deny-namespaces
    kube.create(THANOSRULERS, ruler("tr"))
    kube.create(THANOSRULERS, ruler("elsewhere", namespace="other"), "other")  # not an instance namespace
    eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-tr"), 30, "the ThanosRuler managed despite the deny-list")
    ctl = _rulers(op)
    eventually(ctl.idle, 30, "the ThanosRuler controller idle")
    assert ctl.thanosrulers.store.keys() == [f"{NS}/tr"]
    assert ctl.prometheusrules.store.keys() == []
    assert ctl.statefulsets.store.keys() == [f"{NS}/thanos-ruler-tr"]  # what we create: the instance namespaces
    assert _get(kube, STATEFULSETS, "thanos-ruler-elsewhere", "other") is None
