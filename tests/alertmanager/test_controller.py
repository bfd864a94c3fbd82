"""The Alertmanager controller against the sandbox: edits reach the Secret, bad objects are rejected alone,
deletion removes what the Alertmanager owned, status and feedback."""

from __future__ import annotations

import yaml

from promop.kube.resources import EVENTS, NAMESPACES, SECRETS, SERVICES, STATEFULSETS
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS

from .operator_helpers import alertmanager, amc, eventually, generated_config, modify

NS = "monitoring"


def receivers(kube) -> list[str]:
    return [r["name"] for r in yaml.safe_load(generated_config(kube, NS, "main"))["receivers"]]


def test_edit_reaches_the_secret_bad_one_rejected_alone_delete_cleans_up(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator()
    kube.create(ALERTMANAGERS, alertmanager())
    kube.create(ALERTMANAGERCONFIGS, amc("good"))
    eventually(lambda: receivers(kube) == ["null", "monitoring/good/r"], 20, "the good config in the Secret")
    # the config Secret is written before the Service and the StatefulSet: wait for those too
    eventually(lambda: kube.get(STATEFULSETS, "alertmanager-main", NS)["spec"]["replicas"] == 1, 20, "the StatefulSet")
    eventually(lambda: kube.get(SERVICES, "alertmanager-operated", NS)["spec"]["clusterIP"] == "None", 20,
               "the governing Service")

    # an edit reaches the Secret
    modify(kube, ALERTMANAGERCONFIGS, "good", NS,
           lambda o: o["spec"]["receivers"][0]["webhookConfigs"][0].update(url="http://127.0.0.1:2/edited"))
    eventually(lambda: "http://127.0.0.1:2/edited" in generated_config(kube, NS, "main"), 20, "the edit")

    # a bad one is rejected alone, with an Event and a binding saying why
    kube.create(ALERTMANAGERCONFIGS, amc("bad", receiver="nope"))
    kube.create(ALERTMANAGERCONFIGS, amc("also-good"))
    eventually(lambda: receivers(kube) == ["null", "monitoring/also-good/r", "monitoring/good/r"], 20, "also-good")

    def bad_binding():
        bindings = kube.get(ALERTMANAGERCONFIGS, "bad", NS).get("status", {}).get("bindings") or []
        assert bindings and bindings[0].get("conditions"), bindings
        cond = bindings[0]["conditions"][0]
        assert bindings[0]["resource"] == "alertmanagers" and bindings[0]["name"] == "main"
        assert cond["status"] == "False" and "spec.route.receiver" in cond["message"]
        return True
    eventually(bad_binding, 20, "the rejection in status.bindings")
    eventually(lambda: kube.get(ALERTMANAGERCONFIGS, "good", NS).get("status", {}).get("bindings"), 20, "good binding")
    good = kube.get(ALERTMANAGERCONFIGS, "good", NS)["status"]["bindings"][0]["conditions"][0]
    assert good["status"] == "True"
    eventually(lambda: any(e["reason"] == "InvalidConfiguration" and e["involvedObject"]["name"] == "bad"
                           for e in kube.list(EVENTS, NS)["items"]), 20, "an Event for the bad one")

    def reconciled():
        status = kube.get(ALERTMANAGERS, "main", NS).get("status") or {}
        conds = {c["type"]: c for c in status.get("conditions") or []}
        return conds.get("Reconciled", {}).get("status") == "True" and conds.get("Available", {}).get("status") == "True"
    eventually(reconciled, 20, "status Reconciled and Available")
    metrics = op.operator.registry
    # the gauge is set at the end of the sync that rejected it, which may finish after its binding (written
    # by the feedback thread) and after a status an earlier sync already wrote: polled, like the rest
    eventually(lambda: metrics.get_sample_value("prometheus_operator_managed_resources", {
        "controller": "alertmanager", "resource": "AlertmanagerConfig", "state": "rejected"}) == 1, 20,
        "the rejected AlertmanagerConfig counted")
    assert metrics.get_sample_value("prometheus_operator_reconcile_operations_total",
                                    {"controller": "alertmanager"}) >= 1

    # deleting the Alertmanager removes what it owned
    kube.delete(ALERTMANAGERS, "main", NS)
    owned = ("alertmanager-main-generated", "alertmanager-main-tls-assets-0", "alertmanager-main-web-config")
    eventually(lambda: not any(s["metadata"]["name"] in owned for s in kube.list(SECRETS, NS)["items"]), 20,
               "owned Secrets gone")
    eventually(lambda: not kube.list(STATEFULSETS, NS)["items"], 20, "StatefulSet gone")
    eventually(lambda: not (kube.get(ALERTMANAGERCONFIGS, "good", NS).get("status") or {}).get("bindings"), 20,
               "bindings removed")


def test_base_config_error_keeps_the_previous_secret(kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    start_operator()
    kube.create(ALERTMANAGERS, alertmanager())
    eventually(lambda: receivers(kube) == ["null"], 20, "the default config")
    kube.create(SECRETS, {"metadata": {"name": "alertmanager-main", "namespace": NS},
                          "stringData": {"alertmanager.yaml": "route:\n  receiver: missing\nreceivers: []\n"}})

    def failed():
        conds = {c["type"]: c for c in kube.get(ALERTMANAGERS, "main", NS).get("status", {}).get("conditions") or []}
        c = conds.get("Reconciled") or {}
        return c.get("status") == "False" and "receiver 'missing' is not defined" in c.get("message", "")
    eventually(failed, 20, "Reconciled False with the reason")
    assert receivers(kube) == ["null"]  # the previous configuration stays
    modify(kube, SECRETS, "alertmanager-main", NS, lambda s: s.update(
        data={}, stringData={"alertmanager.yaml": 'route:\n  receiver: x\nreceivers:\n- name: x\n'}))
    eventually(lambda: receivers(kube) == ["x"], 20, "the fixed user config")
