"""The operator's writes against the sandbox and the real kube-apiserver + kube-controller-manager.

The operator runs in-process (no node needed: its StatefulSets get no pods). Checked: what it
writes is accepted by a real apiserver (Secrets, Services, StatefulSets, ConfigMaps, status and
status.bindings through /status), carries ownerReferences that the real garbage collector follows
when the Prometheus is deleted; two Alertmanagers (or ThanosRulers) share their namespace's
governing Service, which outlives the one deleted first (issue 30 item 4); and the operator run as
the install bundle's ServiceAccount, with --manage-crds, gets no 403 from the real RBAC authorizer.
"""

from __future__ import annotations

import threading
from typing import Any

import kubernetes
import pytest
from prometheus_client import CollectorRegistry
from real_api_lib import eventually

from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.kube.resources import (CONFIGMAPS, PROMETHEUSES, PROMETHEUSRULES, SECRETS, SERVICEMONITORS, SERVICES,
                                   STATEFULSETS, Resource)
from promop.operator.alertmanager.flags import AMOptions
from promop.operator.app import Operator
from promop.operator.bundle import render_bundle
from promop.operator.options import Options

ALERTMANAGERS = Resource("monitoring.coreos.com", "v1", "alertmanagers", kind="Alertmanager")
THANOSRULERS = Resource("monitoring.coreos.com", "v1", "thanosrulers", kind="ThanosRuler")
# the sandbox authorizes as the real apiserver does (its admin token is in system:masters)
SANDBOX_OPTIONS = {"authorization": "rbac"}
FAST_INFORMERS = {"backoff_base": 0.05, "backoff_cap": 0.5, "idle_timeout": 30.0}


class Running:
    def __init__(self, operator: Operator, registry: CollectorRegistry) -> None:
        self.operator = operator
        self.registry = registry
        self.stop = threading.Event()
        self.thread = threading.Thread(target=operator.run, args=(self.stop,), daemon=True)

    def status_codes(self) -> dict[str, float]:
        out = {}
        for metric in self.registry.collect():
            if metric.name == "prometheus_operator_kubernetes_client_http_requests":
                for s in metric.samples:
                    if s.name.endswith("_total"):
                        out[s.labels["status_code"]] = s.value
        return out


def start(kube: KubeClient, options: Options) -> Running:
    registry = CollectorRegistry()
    client = KubeClient(kube.api_client, registry=registry)
    running = Running(Operator(options, client=client, registry=registry, web=False,
                               controller_kwargs={"informer_kwargs": dict(FAST_INFORMERS)}), registry)
    running.thread.start()
    eventually(running.operator.synced.is_set, 60, "the operator's caches to sync")
    return running


@pytest.fixture
def operator(api):
    running: list[Running] = []

    def run(kube: KubeClient | None = None, **opts: Any) -> Running:
        api.need_crds()
        r = start(kube or api.client(), Options(listen_address="127.0.0.1:0", **opts))
        running.append(r)
        return r

    yield run
    for r in running:
        r.stop.set()
        r.thread.join(30)


def get(kube: KubeClient, res: Resource, name: str, ns: str) -> dict | None:
    try:
        return kube.get(res, name, ns)
    except NotFound:
        return None


def owners(obj: dict | None) -> list[tuple[str, str, bool, bool]]:
    return [(r["kind"], r["name"], bool(r.get("controller")), bool(r.get("blockOwnerDeletion")))
            for r in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []]


def test_prometheus_objects_owned_bound_and_collected(api, operator):
    kube, ns = api.admin, api.ns
    operator()
    kube.create(SERVICEMONITORS, {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
                                  "metadata": {"name": "sm", "namespace": ns},
                                  "spec": {"selector": {"matchLabels": {"app": "x"}}, "endpoints": [{"port": "web"}]}})
    kube.create(PROMETHEUSRULES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
                                  "metadata": {"name": "r", "namespace": ns},
                                  "spec": {"groups": [{"name": "g", "rules": [{"record": "a", "expr": "up"}]}]}})
    prom = kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                                      "metadata": {"name": "p", "namespace": ns},
                                      "spec": {"serviceMonitorSelector": {}, "ruleSelector": {}}})
    eventually(lambda: get(kube, STATEFULSETS, "prometheus-p", ns), 30, "the StatefulSet")
    controlled = ("Prometheus", "p", True, True)
    for res, name in ((SECRETS, "prometheus-p"), (STATEFULSETS, "prometheus-p"),
                      (CONFIGMAPS, "prometheus-p-rulefiles-0"), (SECRETS, "prometheus-p-web-config")):
        obj = eventually(lambda res=res, name=name: get(kube, res, name, ns), 30, f"{res.kind} {name}")
        assert owners(obj) == [controlled], (res.kind, name, owners(obj))
        assert obj["metadata"]["ownerReferences"][0]["uid"] == prom["metadata"]["uid"]
    service = get(kube, SERVICES, "prometheus-operated", ns)
    assert [(kind, name, controller) for kind, name, controller, _ in owners(service)] == [("Prometheus", "p", False)]

    def bound() -> bool:
        bindings = (kube.get(SERVICEMONITORS, "sm", ns).get("status") or {}).get("bindings") or []
        return [(b["name"], [c["type"] + "=" + c["status"] for c in b["conditions"]]) for b in bindings] == [
            ("p", ["Accepted=True"])]

    eventually(bound, 30, "ServiceMonitor status.bindings Accepted for p")
    eventually(lambda: any(c["type"] == "Reconciled" and c["status"] == "True"
                           for c in (kube.get(PROMETHEUSES, "p", ns).get("status") or {}).get("conditions") or []),
               30, "the Prometheus' Reconciled condition")
    kube.delete(PROMETHEUSES, "p", ns)
    eventually(lambda: not any(get(kube, res, name, ns) for res, name in (
        (SECRETS, "prometheus-p"), (STATEFULSETS, "prometheus-p"), (CONFIGMAPS, "prometheus-p-rulefiles-0"),
        (SERVICES, "prometheus-operated"))), 60, "the garbage collector to remove the Prometheus' objects")


@pytest.mark.parametrize("res,service,prefix", [(ALERTMANAGERS, "alertmanager-operated", "alertmanager"),
                                                (THANOSRULERS, "thanos-ruler-operated", "thanos-ruler")],
                         ids=["alertmanager", "thanosruler"])
def test_shared_governing_service_outlives_the_first_deleted(api, operator, res, service, prefix):
    """Issue 30 item 4: two workload objects in one namespace share the governing Service; when one
    is deleted the Service stays, owned by the other (the collector drops only the dead reference)."""
    kube, ns = api.admin, api.ns
    operator()
    spec = {"queryEndpoints": ["http://127.0.0.1:9090"]} if res is THANOSRULERS else {}
    made = {name: kube.create(res, {"apiVersion": "monitoring.coreos.com/v1", "kind": res.kind,
                                    "metadata": {"name": name, "namespace": ns}, "spec": spec})
            for name in ("one", "two")}
    for name in ("one", "two"):
        eventually(lambda name=name: get(kube, STATEFULSETS, f"{prefix}-{name}", ns), 30, f"{prefix}-{name}")

    def owned_by(*names: str) -> bool:
        refs = ((get(kube, SERVICES, service, ns) or {}).get("metadata") or {}).get("ownerReferences") or []
        return sorted((r["name"], r["uid"], bool(r.get("controller"))) for r in refs) == sorted(
            (n, made[n]["metadata"]["uid"], False) for n in names)

    eventually(lambda: owned_by("one", "two"), 30, f"{service} owned by both")
    # the one whose sync wrote the Service last goes first: without the merge it would own it alone
    kube.delete(res, "two", ns)
    eventually(lambda: owned_by("one"), 60, f"{service} owned by 'one' only")
    assert get(kube, SERVICES, service, ns) is not None
    assert get(kube, STATEFULSETS, f"{prefix}-one", ns) is not None
    kube.delete(res, "one", ns)
    eventually(lambda: get(kube, SERVICES, service, ns) is None, 60, f"{service} gone with its last owner")


CORE = {"Namespace": Resource("", "v1", "namespaces", namespaced=False, kind="Namespace"),
        "ServiceAccount": Resource("", "v1", "serviceaccounts", kind="ServiceAccount"),
        "Service": SERVICES,
        "ClusterRole": Resource("rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False),
        "ClusterRoleBinding": Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", namespaced=False),
        "Deployment": Resource("apps", "v1", "deployments", kind="Deployment"),
        "ServiceMonitor": SERVICEMONITORS, "Prometheus": PROMETHEUSES}


def test_operator_as_the_bundles_service_account_with_manage_crds_gets_no_403(api, operator):
    """The bundle's ClusterRole (with --manage-crds) is enough on the real RBAC authorizer."""
    kube = api.admin
    api.need_crds()
    bundle_ns = api.namespace("bundle")
    kube.delete(CORE["Namespace"], bundle_ns)  # the bundle brings its own Namespace
    eventually(lambda: get(kube, CORE["Namespace"], bundle_ns, None) is None, 60, "the namespace to go")
    docs = [d for f in render_bundle(namespace=bundle_ns, manage_crds=True) for d in f.documents()]
    for doc in docs:
        if doc["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            existing = get(kube, CORE[doc["kind"]], doc["metadata"]["name"], None)
            if existing is not None:  # another run of this test on the same control plane
                kube.delete(CORE[doc["kind"]], doc["metadata"]["name"])
        kube.create(CORE[doc["kind"]], doc, doc["metadata"].get("namespace"))
    account = next(d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"] == "promop")
    token = kubernetes.client.CoreV1Api(kube.api_client).create_namespaced_service_account_token(
        "promop", bundle_ns, {"spec": {"expirationSeconds": 3600}}).status.token
    as_sa = api.client()
    as_sa.api_client.configuration.api_key = {"authorization": f"Bearer {token}"}
    running = operator(as_sa, alertmanager=AMOptions(manage_crds=True))
    prom = next(d for d in docs if d["kind"] == "Prometheus")
    pns, pname = prom["metadata"]["namespace"], prom["metadata"]["name"]
    eventually(lambda: get(kube, STATEFULSETS, f"prometheus-{pname}", pns), 60, "the bundle's Prometheus StatefulSet")
    eventually(lambda: get(kube, SECRETS, f"prometheus-{pname}", pns), 30, "its config Secret")
    eventually(lambda: (kube.get(PROMETHEUSES, pname, pns).get("status") or {}).get("conditions"), 30,
               "its status, written through /status")
    codes = running.status_codes()
    assert not {c for c in codes if c in ("401", "403")}, f"the operator was refused: {codes}"
    assert account["metadata"]["namespace"] == bundle_ns
