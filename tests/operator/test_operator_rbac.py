"""The install bundle's ClusterRole is exactly what the operator uses.

The operator (with leader election) runs through a scenario that reaches every
code path that talks to the API; the (group, resource, verb) triples of its
requests, read from the sandbox's request log, must equal the granted ones.

Nothing here waits for time to pass: each step waits for its visible effect,
and the final check polls until every granted triple has been seen (watches
are logged when they end, so they are closed until each was seen). A granted
permission the code never uses therefore fails by deadline, naming it.
"""

from __future__ import annotations

import time

from operator_testlib import NS, OPERATOR_AGENT, eventually, jobs, modify, names, prometheus, rule, service_monitor

from promop.kube.resources import PROBES
from promop.kube.resources import (CONFIGMAPS, EVENTS, NAMESPACES, PODMONITORS, PROMETHEUSES, PROMETHEUSRULES,
                                   ROLEBINDINGS, ROLES, SECRETS, SERVICEMONITORS, SERVICES, STATEFULSETS)
from promop.kube.resources import SCRAPECONFIGS
from promop.featuregates import FeatureGates
from promop.operator.bundle import render_bundle
from promop.operator.rbac import granted

# A lease that survives a loaded machine's stalls (a lost lease would stop the operator mid-scenario)
# while still renewing (an update) every 0.2 s.
STEADY_LEASE = {"lease_duration": 30.0, "renew_deadline": 20.0, "retry_period": 0.2}


def used(cluster) -> set[tuple[str, str, str]]:
    return {(r.group or "", r.resource + (f"/{r.subresource}" if r.subresource else ""), r.verb)
            for r in cluster.requests if r.user_agent.startswith(OPERATOR_AGENT) and r.resource}


def owned(prom: dict, name: str, **md) -> dict:
    ref = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "name": prom["metadata"]["name"],
           "uid": prom["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    return {"metadata": {"name": name, "namespace": NS, "ownerReferences": [ref], **md}}


def test_cluster_role_is_exactly_what_the_operator_uses(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator(leader_elect=True, lease_name="promop", lease_namespace="default", identity="rbac",
                        leader_kwargs=STEADY_LEASE,
                        feature_gates=FeatureGates((("PrometheusAgentDaemonSet", True),)))
    eventually(op.operator.leading.is_set, 20, "leadership")
    prom = kube.create(PROMETHEUSES, prometheus(shards=2, podMonitorSelector={}, probeSelector={},
                                                scrapeConfigSelector={}))
    kube.create(SERVICEMONITORS, service_monitor("good"))
    bad = service_monitor("needs-ca")  # references a missing ConfigMap: GET, rejection, Event
    bad["spec"]["endpoints"][0]["tlsConfig"] = {"ca": {"configMap": {"name": "missing-ca", "key": "ca.crt"}}}
    kube.create(SERVICEMONITORS, bad)
    kube.create(PODMONITORS, {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
                              "metadata": {"name": "pm", "namespace": NS},
                              "spec": {"selector": {}, "podMetricsEndpoints": [{"port": "web"}]}})
    kube.create(PROMETHEUSRULES, rule("r", "up"))
    kube.create(SCRAPECONFIGS, {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "ScrapeConfig",
                                "metadata": {"name": "sc", "namespace": NS},
                                "spec": {"staticConfigs": [{"targets": ["a:9100"]}]}})
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p", "prometheus-p-shard-1"], 20, "2 shards")
    eventually(lambda: jobs(kube) and any(e["reason"] == "InvalidConfiguration"
                                          for e in kube.list(EVENTS, NS)["items"]), 20, "jobs and an Event")
    eventually(lambda: kube.get(PODMONITORS, "pm", NS).get("status", {}).get("bindings"), 20, "PodMonitor binding")
    eventually(lambda: kube.get(PROMETHEUSRULES, "r", NS).get("status", {}).get("bindings"), 20, "rule binding")
    eventually(lambda: kube.get(SCRAPECONFIGS, "sc", NS).get("status", {}).get("bindings"), 20, "ScrapeConfig binding")
    kube.create(PROBES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Probe", "metadata": {"name": "pr", "namespace": NS},
                         "spec": {"prober": {"url": "bb:9115"}, "targets": {"staticConfig": {"static": ["a"]}}}})
    eventually(lambda: kube.get(PROBES, "pr", NS).get("status", {}).get("bindings"), 20, "Probe binding")

    # stale objects to delete, foreign edits to restore, an update of every managed kind
    kube.create(SECRETS, {**owned(prom, "prometheus-p-tls-assets-5"), "data": {}})
    kube.create(CONFIGMAPS, {**owned(prom, "prometheus-p-rulefiles-7", labels={"prometheus-name": "p"}),
                             "data": {}})
    modify(kube, SERVICES, "prometheus-operated", NS, lambda svc: svc["spec"]["ports"][0].update(port=1234))
    modify(kube, SECRETS, "prometheus-p", NS, lambda secret: secret["data"].update(extra="eA=="))
    modify(kube, PROMETHEUSRULES, "r", NS,
           lambda r: r["spec"]["groups"][0]["rules"].append({"record": "more", "expr": "sum(up)"}))
    kube.patch(PROMETHEUSES, "p", {"metadata": {"labels": {"touched": "yes"}}, "spec": {"shards": 1}}, NS)
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p"], 20, "excess shard deleted")
    eventually(lambda: "prometheus-p-tls-assets-5" not in names(kube, SECRETS), 20, "stale TLS Secret deleted")
    eventually(lambda: names(kube, CONFIGMAPS) == ["prometheus-p-rulefiles-0"], 20, "stale ConfigMap deleted")
    eventually(lambda: kube.get(SERVICES, "prometheus-operated", NS)["spec"]["ports"][0]["port"] == 9090, 20,
               "Service restored")
    eventually(lambda: "extra" not in kube.get(SECRETS, "prometheus-p", NS)["data"], 20, "Secret restored")

    # fast reload on (a Role and RoleBinding), a foreign edit of the Role restored, then off (both deleted)
    kube.patch(PROMETHEUSES, "p", {"metadata": {"annotations": {"promop.dev/fast-reload": "true"}}}, NS)
    eventually(lambda: names(kube, ROLEBINDINGS) == ["prometheus-p-config-reader"], 20, "the reloader's Role")
    modify(kube, ROLES, "prometheus-p-config-reader", NS, lambda role: role["rules"][0]["verbs"].append("list"))
    modify(kube, ROLEBINDINGS, "prometheus-p-config-reader", NS,
           lambda binding: binding["subjects"].append({"kind": "ServiceAccount", "name": "x", "namespace": NS}))
    # Roles are not watched (no informer for them): the next sync of the Prometheus restores it
    kube.patch(PROMETHEUSES, "p", {"metadata": {"labels": {"touched": "again"}}}, NS)
    eventually(lambda: kube.get(ROLES, "prometheus-p-config-reader", NS)["rules"][0]["verbs"] == ["get", "watch"],
               20, "Role restored")
    eventually(lambda: len(kube.get(ROLEBINDINGS, "prometheus-p-config-reader", NS)["subjects"]) == 1, 20,
               "RoleBinding restored")
    kube.patch(PROMETHEUSES, "p", {"metadata": {"annotations": {"promop.dev/fast-reload": "false"}}}, NS)
    eventually(lambda: names(kube, ROLES) == [] and names(kube, ROLEBINDINGS) == [], 20, "the Role deleted")
    eventually(op.idle, 20)
    _alertmanager_scenario(kube)  # the Alertmanager controller's permissions
    _thanos_ruler_scenario(kube)  # the ThanosRuler controller's
    _agent_scenario(kube)  # the PrometheusAgent controller's

    last_close = [0.0]

    def every_grant_used() -> bool:
        missing = granted() - used(cluster)
        if missing and all(verb == "watch" for _, _, verb in missing) and time.monotonic() - last_close[0] > 1:
            cluster.faults.close_watches()  # a watch request is logged when it ends
            last_close[0] = time.monotonic()
        assert not missing, f"granted but not (yet) used: {sorted(missing)}"
        return True
    eventually(every_grant_used, 30, "every granted permission to be used")
    assert op.operator.leading.is_set() and not op.operator.lost_leadership.is_set()
    extra = used(cluster) - granted()
    assert not extra, f"the operator uses permissions the ClusterRole lacks: {sorted(extra)}"


def test_bundle_cluster_role_is_the_rbac_table():
    docs = [d for f in render_bundle() for d in f.documents()]
    role = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "promop")
    triples = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    assert triples == granted()


def _alertmanager_scenario(kube) -> None:
    """An Alertmanager with a good and a rejected AlertmanagerConfig: StatefulSet, status, bindings."""
    from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS

    kube.create(ALERTMANAGERS, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
                                "metadata": {"name": "am", "namespace": NS}, "spec": {"alertmanagerConfigSelector": {}}})
    for name, receiver in (("good", "r"), ("bad", "missing")):
        kube.create(ALERTMANAGERCONFIGS, {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
                                          "metadata": {"name": name, "namespace": NS},
                                          "spec": {"route": {"receiver": receiver}, "receivers": [{"name": "r"}]}})
    eventually(lambda: "alertmanager-am" in names(kube, STATEFULSETS), 20, "the Alertmanager StatefulSet")
    eventually(lambda: kube.get(ALERTMANAGERCONFIGS, "bad", NS).get("status", {}).get("bindings"), 20, "AMC binding")
    eventually(lambda: kube.get(ALERTMANAGERS, "am", NS).get("status", {}).get("conditions"), 20, "AM status")


def _thanos_ruler_scenario(kube) -> None:
    """A ThanosRuler: its StatefulSet (a GET of the owner before creating) and its status."""
    from promop.operator.thanos import THANOSRULERS

    kube.create(THANOSRULERS, {"apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
                               "metadata": {"name": "tr", "namespace": NS},
                               "spec": {"queryEndpoints": ["query:10902"], "ruleSelector": {}}})
    eventually(lambda: "thanos-ruler-tr" in names(kube, STATEFULSETS), 20, "the ThanosRuler StatefulSet")
    eventually(lambda: kube.get(THANOSRULERS, "tr", NS).get("status", {}).get("conditions"), 20, "ThanosRuler status")
def _agent_scenario(kube) -> None:
    """A PrometheusAgent in DaemonSet mode (created, a foreign edit undone), then in StatefulSet mode
    (the DaemonSet deleted): workloads, status."""
    from promop.operator.agent import DAEMONSETS, PROMETHEUSAGENTS

    kube.create(PROMETHEUSAGENTS, {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent",
                                   "metadata": {"name": "ag", "namespace": NS},
                                   "spec": {"mode": "DaemonSet", "podMonitorSelector": {},
                                            "remoteWrite": [{"url": "http://central/api/v1/write"}]}})
    eventually(lambda: names(kube, DAEMONSETS) == ["prom-agent-ag"], 20, "the agent's DaemonSet")
    def edit(ds: dict) -> None:
        ds["spec"]["template"]["spec"]["containers"][0]["image"] = "example.org/other:1"

    modify(kube, DAEMONSETS, "prom-agent-ag", NS, edit)
    eventually(lambda: kube.get(DAEMONSETS, "prom-agent-ag", NS)["spec"]["template"]["spec"]["containers"][0][
        "image"] != "example.org/other:1", 20, "DaemonSet restored")
    kube.patch(PROMETHEUSAGENTS, "ag", {"spec": {"mode": None}}, NS)
    eventually(lambda: names(kube, DAEMONSETS) == [], 20, "the DaemonSet deleted")
    eventually(lambda: "prom-agent-ag" in names(kube, STATEFULSETS), 20, "the agent's StatefulSet")
    eventually(lambda: kube.get(PROMETHEUSAGENTS, "ag", NS).get("status", {}).get("conditions"), 20, "agent status")
