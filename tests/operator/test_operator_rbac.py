"""The install bundle's ClusterRole is exactly what the operator uses.

The operator (with leader election) runs through a scenario that reaches every
code path that talks to the API; the (group, resource, verb) triples of its
requests, read from the sandbox's request log, must equal the granted ones.
"""

from __future__ import annotations

from operator_testlib import (FAST_LEASE, NS, OPERATOR_AGENT, eventually, jobs, names, prometheus, rule,
                              service_monitor)

from promop.kube.resources import (CONFIGMAPS, EVENTS, NAMESPACES, PODMONITORS, PROMETHEUSES, PROMETHEUSRULES,
                                   SECRETS, SERVICEMONITORS, SERVICES, STATEFULSETS)
from promop.operator.bundle import render_bundle
from promop.operator.rbac import granted

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
                        leader_kwargs=FAST_LEASE)
    eventually(op.operator.leading.is_set, 20, "leadership")
    prom = kube.create(PROMETHEUSES, prometheus(shards=2, podMonitorSelector={}))
    kube.create(SERVICEMONITORS, service_monitor("good"))
    bad = service_monitor("needs-ca")  # references a missing ConfigMap: GET, rejection, Event
    bad["spec"]["endpoints"][0]["tlsConfig"] = {"ca": {"configMap": {"name": "missing-ca", "key": "ca.crt"}}}
    kube.create(SERVICEMONITORS, bad)
    kube.create(PODMONITORS, {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
                              "metadata": {"name": "pm", "namespace": NS},
                              "spec": {"selector": {}, "podMetricsEndpoints": [{"port": "web"}]}})
    kube.create(PROMETHEUSRULES, rule("r", "up"))
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p", "prometheus-p-shard-1"], 20, "2 shards")
    eventually(lambda: jobs(kube) and any(e["reason"] == "InvalidConfiguration"
                                          for e in kube.list(EVENTS, NS)["items"]), 20, "jobs and an Event")
    eventually(lambda: kube.get(PODMONITORS, "pm", NS).get("status", {}).get("bindings"), 20, "PodMonitor binding")
    eventually(lambda: kube.get(PROMETHEUSRULES, "r", NS).get("status", {}).get("bindings"), 20, "rule binding")

    # stale objects to delete, foreign edits to restore, an update of every managed kind
    kube.create(SECRETS, {**owned(prom, "prometheus-p-tls-assets-5"), "data": {}})
    kube.create(CONFIGMAPS, {**owned(prom, "prometheus-p-rulefiles-7", labels={"prometheus-name": "p"}),
                             "data": {}})
    svc = kube.get(SERVICES, "prometheus-operated", NS)
    svc["spec"]["ports"][0]["port"] = 1234
    kube.update(SERVICES, svc, NS)
    secret = kube.get(SECRETS, "prometheus-p", NS)
    secret["data"]["extra"] = "eA=="
    kube.update(SECRETS, secret, NS)
    r = kube.get(PROMETHEUSRULES, "r", NS)
    r["spec"]["groups"][0]["rules"].append({"record": "more", "expr": "sum(up)"})
    kube.update(PROMETHEUSRULES, r, NS)
    kube.patch(PROMETHEUSES, "p", {"metadata": {"labels": {"touched": "yes"}}, "spec": {"shards": 1}}, NS)
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p"], 20, "excess shard deleted")
    eventually(lambda: "prometheus-p-tls-assets-5" not in names(kube, SECRETS), 20, "stale TLS Secret deleted")
    eventually(lambda: names(kube, CONFIGMAPS) == ["prometheus-p-rulefiles-0"], 20, "stale ConfigMap deleted")
    eventually(lambda: kube.get(SERVICES, "prometheus-operated", NS)["spec"]["ports"][0]["port"] == 9090, 20,
               "Service restored")
    eventually(lambda: "extra" not in kube.get(SECRETS, "prometheus-p", NS)["data"], 20, "Secret restored")
    eventually(op.idle, 20)
    eventually(lambda: any(r.resource == "leases" and r.verb == "update" for r in cluster.requests
                           if r.user_agent.startswith(OPERATOR_AGENT)), 20, "a lease renewal")

    cluster.faults.close_watches()  # a watch is logged when it ends
    eventually(lambda: {t for t in granted() if t[2] == "watch"} <= used(cluster), 20, "watches logged")
    got = used(cluster)
    assert got - granted() == set(), "the operator uses permissions the ClusterRole lacks"
    leases = [(r.verb, r.code, r.user_agent) for r in cluster.requests if r.resource == "leases"]
    assert granted() - got == set(), f"the ClusterRole grants permissions the operator never used; {leases}"


def test_bundle_cluster_role_is_the_rbac_table():
    docs = [d for f in render_bundle() for d in f.documents()]
    role = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "promop")
    triples = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    assert triples == granted()
