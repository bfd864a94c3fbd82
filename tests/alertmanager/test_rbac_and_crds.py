"""--manage-crds and --kubelet-service: their permissions are granted only with their flags, and used."""

from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry

from promop.kube.client import KubeClient
from promop.kube.resources import CRDS, NAMESPACES, STATEFULSETS
from promop.operator.alertmanager import ALERTMANAGERS
from promop.operator.alertmanager.flags import AMOptions
from promop.operator.app import Operator
from promop.operator.bundle import render_bundle
from promop.operator.kubelet import NODES
from promop.operator.options import Options
from promop.operator.rbac import KUBELET_PERMISSIONS, MANAGE_CRDS_PERMISSIONS, granted
from promop.sandbox import Sandbox

from .operator_helpers import AGENT, FAST_INFORMERS, alertmanager, eventually
from .test_kubelet import add_node, ips, node, slice_ips


def used(cluster) -> set[tuple[str, str, str]]:
    return {(r.group or "", r.resource + (f"/{r.subresource}" if r.subresource else ""), r.verb)
            for r in cluster.requests if r.user_agent.startswith(AGENT) and r.resource}


def triples(table) -> set[tuple[str, str, str]]:
    return {(g, r, v) for g, r, verbs in table for v in verbs}


def test_flag_permissions_are_used_and_nothing_else(cluster, kube, start_operator):
    add_node(kube, node("n1", "10.0.0.1"))
    start_operator(alertmanager=AMOptions(manage_crds=True, kubelet_service="kube-system/kubelet",
                                          kubelet_endpointslice=True))
    eventually(lambda: ips(kube) == ["10.0.0.1"] and slice_ips(kube) == ["10.0.0.1"], 20, "the node listed")
    add_node(kube, node("n2", "10.0.0.2"))  # Endpoints and the EndpointSlice are updated
    eventually(lambda: slice_ips(kube) == ["10.0.0.1", "10.0.0.2"], 20, "the second node listed")
    kube.delete(NODES, "n1")
    kube.delete(NODES, "n2")  # the last node goes: its EndpointSlice is deleted
    eventually(lambda: ips(kube) == [] and slice_ips(kube) == [], 20, "no node listed")
    wanted = triples(MANAGE_CRDS_PERMISSIONS) | triples(KUBELET_PERMISSIONS)
    last_close = [0.0]

    def all_used() -> bool:
        missing = wanted - used(cluster)
        if missing and time.monotonic() - last_close[0] > 1:
            cluster.faults.close_watches()  # a watch is logged when it ends
            last_close[0] = time.monotonic()
        assert not missing, sorted(missing)
        return True
    eventually(all_used, 30, "every CRD and kubelet permission to be used")
    extra = used(cluster) - granted(manage_crds=True, kubelet=True)
    assert not extra, sorted(extra)
    assert not (wanted & granted())  # the default ClusterRole has none of them


def test_manifests_grant_flag_permissions_only_with_the_flags():
    def rules(**kw):
        docs = [d for f in render_bundle(**kw) for d in f.documents()]
        role = next(d for d in docs if d["kind"] == "ClusterRole")
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        return ({(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
                 for v in rule["verbs"]}, deployment["spec"]["template"]["spec"]["containers"][0]["args"])

    plain, args = rules()
    assert plain == granted() and "--manage-crds" not in args
    full, args = rules(manage_crds=True, kubelet_service="kube-system/kubelet")
    assert full == granted(manage_crds=True, kubelet=True)
    assert "--manage-crds" in args and "--kubelet-service=kube-system/kubelet" in args


def test_manage_crds_installs_them_then_runs_the_alertmanager_controller():
    with Sandbox(port=0, simulate_statefulsets=True) as sb:
        kube = KubeClient(sb.api_client())
        assert not any(c["metadata"]["name"].startswith("alertmanager") for c in kube.list(CRDS)["items"])
        api = sb.api_client()
        api.user_agent = AGENT
        registry = CollectorRegistry()
        op = Operator(Options(listen_address="127.0.0.1:0", alertmanager=AMOptions(manage_crds=True)),
                      client=KubeClient(api, registry=registry), registry=registry, web=False,
                      controller_kwargs={"informer_kwargs": dict(FAST_INFORMERS)})
        stop = threading.Event()
        thread = threading.Thread(target=op.run, args=(stop,), daemon=True)
        thread.start()
        try:
            eventually(op.synced.is_set, 30, "caches to sync")
            names = {c["metadata"]["name"] for c in kube.list(CRDS)["items"]}
            assert {"alertmanagers.monitoring.coreos.com", "alertmanagerconfigs.monitoring.coreos.com",
                    "prometheuses.monitoring.coreos.com"} <= names
            kube.create(NAMESPACES, {"metadata": {"name": "monitoring"}})
            kube.create(ALERTMANAGERS, alertmanager())
            eventually(lambda: kube.get(STATEFULSETS, "alertmanager-main", "monitoring"), 20, "the StatefulSet")
        finally:
            stop.set()
            thread.join(30)


def test_without_its_crds_the_alertmanager_controller_is_skipped():
    with Sandbox(port=0) as sb:
        from promop.operator.install import install_crds
        from promop.packaged import crds_dir

        import shutil
        import tempfile
        from pathlib import Path

        only_prometheus = Path(tempfile.mkdtemp())
        for f in crds_dir().glob("*.yaml"):
            if "alertmanager" not in f.name:
                shutil.copy(f, only_prometheus)
        install_crds(KubeClient(sb.api_client()), only_prometheus)
        registry = CollectorRegistry()
        op = Operator(Options(listen_address="127.0.0.1:0"), client=KubeClient(sb.api_client(), registry=registry),
                      registry=registry, web=False, controller_kwargs={"informer_kwargs": dict(FAST_INFORMERS)})
        stop = threading.Event()
        thread = threading.Thread(target=op.run, args=(stop,), daemon=True)
        thread.start()
        try:
            eventually(op.synced.is_set, 30, "the Prometheus controller to run without the Alertmanager CRDs")
            # the Prometheus controller and those whose CRDs are there (ThanosRuler, PrometheusAgent); no Alertmanager
            kinds = [type(c).__name__ for c in op.controllers]
            assert kinds[0] == "Controller" and not any("Alertmanager" in k for k in kinds), kinds
        finally:
            stop.set()
            thread.join(30)
