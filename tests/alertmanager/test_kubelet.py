"""Kubelet endpoints sync: pure address/slice planning, and Node add/remove against the sandbox."""

from __future__ import annotations

import pytest

from promop.kube.resources import ENDPOINTS, SERVICES
from promop.operator.alertmanager.flags import AMOptions
from promop.operator.kubelet import ENDPOINTSLICES, NODES, KubeletSync, node_addresses, plan_slices
from promop.operator.options import OptionsError

from .operator_helpers import eventually


def node(name, ip=None, ready="True", kind="InternalIP", labels=None):
    addrs = [{"type": kind, "address": ip}] if ip else [{"type": "Hostname", "address": name}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"addresses": addrs, "conditions": [{"type": "Ready", "status": ready}]}}


def test_addresses_priority_and_skips():
    nodes = [node("b", "10.0.0.2"), node("a", "10.0.0.1"), node("c"), node("d", "1.2.3.4", kind="ExternalIP"),
             node("e", "not-an-ip")]
    found, errors = node_addresses(nodes)
    assert [(f["ip"], f["node"]["metadata"]["name"]) for f in found] == [
        ("10.0.0.1", "a"), ("10.0.0.2", "b"), ("1.2.3.4", "d")]
    assert any("node c" in e for e in errors) and any("node e" in e for e in errors)
    ext, _ = node_addresses([node("x", "10.0.0.9"), {**node("y", "5.5.5.5", kind="ExternalIP")}], "external")
    assert [f["ip"] for f in ext] == ["10.0.0.9", "5.5.5.5"]


def test_unknown_ready_node_with_a_duplicate_ip_is_dropped():
    found, _ = node_addresses([node("old", "10.0.0.1", ready="Unknown"), node("new", "10.0.0.1")])
    assert [f["node"]["metadata"]["name"] for f in found] == ["new"]


def test_plan_slices_in_place():
    a, b, c = ({"ip": ip, "node": node(n, ip)} for n, ip in (("a", "10.0.0.1"), ("b", "10.0.0.2"), ("c", "fd00::1")))
    existing = [{"metadata": {"name": "kubelet-x"}, "addressType": "IPv4",
                 "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.9"]}]}]
    keep, new, deletes = plan_slices(existing, [a, b, c])
    assert [e["addresses"][0] for e in keep[0]["endpoints"]] == ["10.0.0.1", "10.0.0.2"]
    assert [(n["addressType"], [e["addresses"][0] for e in n["endpoints"]]) for n in new] == [("IPv6", ["fd00::1"])]
    assert deletes == []
    keep, new, deletes = plan_slices(existing, [])
    assert keep == [] and new == [] and deletes == ["kubelet-x"]


@pytest.mark.parametrize("argv,problem", [
    (["--kubelet-service=kubelet"], "namespace/name"),
    (["--kubelet-service=a/b/c"], "namespace/name"),
    (["--kubelet-service=a/b", "--kubelet-endpoints=false"], "at least one"),
])
def test_flag_errors(argv, problem):
    import argparse

    from promop.operator.options import add_flags, from_args

    parser = argparse.ArgumentParser()
    add_flags(parser)
    with pytest.raises(OptionsError, match=problem):
        from_args(parser.parse_args(argv))


def add_node(kube, obj):
    """Create a Node, then set its status through the status subresource (as the kubelet does)."""
    created = kube.create(NODES, {k: v for k, v in obj.items() if k != "status"})
    kube.update(NODES, {**created, "status": obj["status"]}, subresource="status")


def ips(kube) -> list[str]:
    ep = kube.get(ENDPOINTS, "kubelet", "kube-system")
    return [a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []]


def slice_ips(kube) -> list[str]:
    items = kube.list(ENDPOINTSLICES, "kube-system", label_selector="kubernetes.io/service-name=kubelet")["items"]
    return sorted(e["addresses"][0] for s in items for e in s.get("endpoints") or [])


def test_node_add_remove_updates_endpoints_and_slices(kube, start_operator, cluster):
    add_node(kube, node("n1", "10.0.0.1", labels={"role": "worker"}))
    add_node(kube, node("n2", "10.0.0.2", labels={"role": "worker"}))
    add_node(kube, node("master", "10.0.0.9", labels={"role": "control"}))
    op = start_operator(alertmanager=AMOptions(kubelet_service="kube-system/kubelet", kubelet_endpointslice=True,
                                          kubelet_selector="role=worker"))
    eventually(lambda: ips(kube) == ["10.0.0.1", "10.0.0.2"], 20, "two workers listed")
    eventually(lambda: slice_ips(kube) == ["10.0.0.1", "10.0.0.2"], 20, "two workers in the slices")
    svc = kube.get(SERVICES, "kubelet", "kube-system")
    assert [p["name"] for p in svc["spec"]["ports"]] == ["https-metrics", "http-metrics", "cadvisor"]
    assert svc["spec"]["clusterIP"] == "None" and svc["metadata"]["labels"]["k8s-app"] == "kubelet"
    ep = kube.get(ENDPOINTS, "kubelet", "kube-system")
    assert ep["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"] == "true"
    assert ep["subsets"][0]["addresses"][0]["targetRef"]["kind"] == "Node"

    add_node(kube, node("n3", "10.0.0.3", labels={"role": "worker"}))
    eventually(lambda: ips(kube) == ["10.0.0.1", "10.0.0.2", "10.0.0.3"], 20, "node added")
    kube.delete(NODES, "n1")
    eventually(lambda: ips(kube) == ["10.0.0.2", "10.0.0.3"], 20, "node removed")
    eventually(lambda: slice_ips(kube) == ["10.0.0.2", "10.0.0.3"], 20, "slices follow")
    rv = kube.get(ENDPOINTS, "kubelet", "kube-system")["metadata"]["resourceVersion"]
    slices_rv = [s["metadata"]["resourceVersion"] for s in kube.list(ENDPOINTSLICES, "kube-system")["items"]]
    kube.patch(NODES, "n2", {"metadata": {"annotations": {"touched": "yes"}}})
    sync = next(c for c in op.operator.controllers if isinstance(c, KubeletSync))
    done = sync.syncs
    sync._trigger.set()  # a periodic sync: nothing changed, so nothing is written
    eventually(lambda: sync.syncs > done, 20, "another sync")
    assert kube.get(ENDPOINTS, "kubelet", "kube-system")["metadata"]["resourceVersion"] == rv
    assert [s["metadata"]["resourceVersion"] for s in kube.list(ENDPOINTSLICES, "kube-system")["items"]] == slices_rv
    assert ips(kube) == ["10.0.0.2", "10.0.0.3"]
    registry = op.operator.registry
    assert registry.get_sample_value("prometheus_operator_node_syncs_total", {"resource": "endpoints"}) >= 3
    assert registry.get_sample_value("prometheus_operator_kubelet_managed_resource", {"resource": "endpointslice"}) == 1
    assert registry.get_sample_value("prometheus_operator_node_syncs_failed_total", {"resource": "endpoints"}) in (None, 0)
