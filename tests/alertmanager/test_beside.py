"""The Alertmanager controller beside other operators: --controller-id and --alertmanager-instance-selector."""

from __future__ import annotations

from promop.kube.errors import NotFound
from promop.kube.resources import NAMESPACES, SECRETS
from promop.operator.alertmanager import ALERTMANAGERS
from promop.operator.alertmanager.flags import AMOptions
from promop.operator.ownership import CONTROLLER_ID_ANNOTATION

from .operator_helpers import alertmanager, eventually

NS = "monitoring"


def am(name, controller_id=None, labels=None):
    obj = alertmanager(name)
    obj["metadata"]["labels"] = labels or {}
    if controller_id is not None:
        obj["metadata"]["annotations"] = {CONTROLLER_ID_ANNOTATION: controller_id}
    return obj


def generated(kube, name) -> bool:
    try:
        kube.get(SECRETS, f"alertmanager-{name}-generated", NS)
        return True
    except NotFound:
        return False


def status(kube, name) -> dict:
    return kube.get(ALERTMANAGERS, name, NS).get("status") or {}


def _am_controller(op):
    return next(c for c in op.operator.controllers if hasattr(c, "alertmanagers"))


def test_only_alertmanagers_with_our_controller_id_are_managed(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator(controller_id="a")
    kube.create(ALERTMANAGERS, am("other", "b"))
    kube.create(ALERTMANAGERS, am("none"))
    kube.create(ALERTMANAGERS, am("ours", "a"))
    eventually(lambda: generated(kube, "ours") and status(kube, "ours").get("conditions"), 20, "ours managed")
    ctl = _am_controller(op)
    eventually(ctl.idle, 20, "the Alertmanager controller idle")
    assert not generated(kube, "other") and not generated(kube, "none")
    assert status(kube, "other") == {} and status(kube, "none") == {}
    assert set(ctl.syncer.last_report) == {f"{NS}/ours"}


def test_the_instance_selector_filters_the_alertmanager_informer(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator(alertmanager=AMOptions(instance_selector="tier=a"))
    kube.create(ALERTMANAGERS, am("b", labels={"tier": "b"}))
    kube.create(ALERTMANAGERS, am("a", labels={"tier": "a"}))
    eventually(lambda: generated(kube, "a"), 20, "a managed")
    ctl = _am_controller(op)
    eventually(ctl.idle, 20, "idle")
    assert ctl.alertmanagers.store.keys() == [f"{NS}/a"] and not generated(kube, "b")
