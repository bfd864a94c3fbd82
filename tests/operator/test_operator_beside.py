"""Running beside other operators: --controller-id, the instance namespaces and selectors.

Two operators (in-process, each with its own user agent) against one sandbox: each manages only
its own Prometheus objects (upstream's `operator.prometheus.io/controller-id` annotation), writes
nothing for the other's and never its status.
"""

from __future__ import annotations

import pytest
from operator_fakes import fake_references, fake_render
from operator_testlib import eventually, modify, operator_writes

from promop.kube.errors import NotFound
from promop.kube.resources import NAMESPACES, PROMETHEUSES, SECRETS, SERVICEMONITORS
from promop.operator.ownership import CONTROLLER_ID_ANNOTATION, manages

NS = "mon"


def prom(name, controller_id=None, namespace=NS, labels=None):
    md = {"name": name, "namespace": namespace, "labels": labels or {}}
    if controller_id is not None:
        md["annotations"] = {CONTROLLER_ID_ANNOTATION: controller_id}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": md,
            "spec": {"serviceMonitorSelector": {}}}


def sm(name, namespace=NS):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {}, "endpoints": [{"port": "web"}]}}


def has_config(kube, name, namespace=NS) -> bool:
    try:
        kube.get(SECRETS, f"prometheus-{name}", namespace)
        return True
    except NotFound:
        return False


def status(kube, name, namespace=NS) -> dict:
    return kube.get(PROMETHEUSES, name, namespace).get("status") or {}


def touched(writes, name) -> list:
    """The writes that concern Prometheus `name`: its config Secret, StatefulSet, status, ..."""
    return [w for w in writes if w.name == name or (w.name or "").startswith(f"prometheus-{name}")]


@pytest.fixture
def ns(kube):
    for n in (NS, "other"):
        kube.create(NAMESPACES, {"metadata": {"name": n}})


def start(start_operator, agent, **kw):
    return start_operator(agent=agent, render=fake_render, references=fake_references, **kw)


def test_manages_compares_the_annotation_with_the_id():
    assert manages(prom("p"), "") and manages(prom("p", ""), "")
    assert not manages(prom("p", "a"), "") and not manages(prom("p"), "a")
    assert manages(prom("p", "a"), "a") and not manages(prom("p", "b"), "a")


def test_two_operators_with_different_ids_each_manage_only_their_own(cluster, kube, ns, start_operator):
    a = start(start_operator, "operator-a", controller_id="a")
    b = start(start_operator, "operator-b", controller_id="b")
    kube.create(PROMETHEUSES, prom("pa", "a"))
    kube.create(PROMETHEUSES, prom("pb", "b"))
    kube.create(PROMETHEUSES, prom("pn"))  # no ID: neither operator's
    eventually(lambda: has_config(kube, "pa") and has_config(kube, "pb"), what="both configs")
    eventually(lambda: status(kube, "pa").get("conditions") and status(kube, "pb").get("conditions"),
               what="both statuses")
    # one more object for each: when both are handled, anything about the others would have happened
    kube.create(SERVICEMONITORS, sm("s"))
    eventually(lambda: "mon/pa" in a.controller.syncer.last_report and "mon/pb" in b.controller.syncer.last_report,
               what="both synced")
    eventually(lambda: a.controller.reporter.idle() and b.controller.reporter.idle(), what="feedback written")
    assert not has_config(kube, "pn") and status(kube, "pn") == {}
    writes_a, writes_b = operator_writes(cluster, "operator-a"), operator_writes(cluster, "operator-b")
    assert touched(writes_a, "pa") and touched(writes_b, "pb")
    assert touched(writes_a, "pb") == [] and touched(writes_a, "pn") == []
    assert touched(writes_b, "pa") == [] and touched(writes_b, "pn") == []
    assert set(a.controller.syncer.last_report) == {"mon/pa"}
    assert set(b.controller.syncer.last_report) == {"mon/pb"}

    # handing pn to operator b: b takes it over, a still ignores it
    modify(kube, PROMETHEUSES, "pn", NS, lambda o: o["metadata"].setdefault("annotations", {}).update(
        {CONTROLLER_ID_ANNOTATION: "b"}))
    eventually(lambda: has_config(kube, "pn") and status(kube, "pn").get("conditions"), what="b manages pn")
    assert touched(operator_writes(cluster, "operator-a"), "pn") == []
    assert "mon/pn" not in a.controller.syncer.last_report


def test_an_operator_without_id_ignores_objects_with_one(cluster, kube, ns, start_operator):
    op = start(start_operator, "operator-none")
    kube.create(PROMETHEUSES, prom("mine", ""))  # an empty value is no ID
    kube.create(PROMETHEUSES, prom("theirs", "x"))
    eventually(lambda: has_config(kube, "mine") and status(kube, "mine").get("conditions"), what="mine managed")
    eventually(op.idle, what="idle")
    assert not has_config(kube, "theirs") and status(kube, "theirs") == {}
    # deleting the other's object is no business of ours either
    kube.delete(PROMETHEUSES, "theirs", NS)
    kube.create(PROMETHEUSES, prom("later", ""))
    eventually(lambda: has_config(kube, "later"), what="a later sync")
    assert "mon/theirs" not in op.controller.syncer.last_report


def test_the_instance_selector_filters_the_prometheus_informer(cluster, kube, ns, start_operator):
    op = start(start_operator, "operator-sel", prometheus_instance_selector="team in (a),!skip")
    kube.create(PROMETHEUSES, prom("pa", labels={"team": "a"}))
    kube.create(PROMETHEUSES, prom("pb", labels={"team": "b"}))
    kube.create(PROMETHEUSES, prom("ps", labels={"team": "a", "skip": "yes"}))
    eventually(lambda: has_config(kube, "pa"), what="pa managed")
    eventually(op.idle, what="idle")
    assert op.controller.prometheuses.store.keys() == ["mon/pa"]  # filtered by the apiserver, not after
    assert not has_config(kube, "pb") and not has_config(kube, "ps")


def test_instance_namespaces_win_over_deny_for_prometheus_not_for_monitors(cluster, kube, ns, start_operator):
    op = start(start_operator, "operator-ns", deny_namespaces=(NS,), prometheus_instance_namespaces=(NS,))
    kube.create(SERVICEMONITORS, sm("denied"))  # monitors still follow --deny-namespaces
    kube.create(PROMETHEUSES, prom("p"))
    kube.create(PROMETHEUSES, prom("elsewhere", namespace="other"))  # allowed by the deny-list, not an instance ns
    eventually(lambda: has_config(kube, "p"), what="p managed despite --deny-namespaces")
    eventually(op.idle, what="idle")
    assert op.controller.servicemonitors.store.keys() == []
    assert op.controller.prometheuses.store.keys() == ["mon/p"]
    assert not has_config(kube, "elsewhere", "other")
