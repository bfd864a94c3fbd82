"""--repair-policy-for-statefulsets for the PrometheusAgent and ThanosRuler StatefulSets (as for a
Prometheus, test_operator_repair.py): after a sync, the pod a stuck rollout leaves behind is removed
and the workload object gets an Event saying so."""

from __future__ import annotations

import pytest
from operator_testlib import ROOT, eventually, modify

from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.kube.resources import EVENTS, NAMESPACES, PODS, STATEFULSETS
from promop.operator.agent import PROMETHEUSAGENTS
from promop.operator.install import install_crds
from promop.operator.repair import REASON
from promop.operator.thanos import THANOSRULERS
from promop.sandbox import Sandbox

NS = "mon"


@pytest.fixture
def cluster():
    """A sandbox whose StatefulSets report nothing by themselves: the test writes their status (and
    pods) as kube-controller-manager leaves them around a stuck rollout."""
    with Sandbox(port=0, bookmark_interval=0.5) as sb:
        install_crds(KubeClient(sb.api_client()), ROOT / "crds")
        KubeClient(sb.api_client()).create(NAMESPACES, {"metadata": {"name": NS}})
        yield sb


def _get(kube, res, name):
    try:
        return kube.get(res, name, NS)
    except NotFound:
        return None


def _create_pod(kube, sts: dict, ordinal: int, revision: str, ready: bool) -> None:
    md = sts["metadata"]
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{md['name']}-{ordinal}", "namespace": NS,
                         "labels": {**sts["spec"]["selector"]["matchLabels"], "controller-revision-hash": revision,
                                    "apps.kubernetes.io/pod-index": str(ordinal)},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": md["name"],
                                              "uid": md["uid"], "controller": True}]},
            "spec": {"containers": [{"name": "main", "image": "img"}]}}
    created = kube.create(PODS, body, NS)
    created["status"] = {"phase": "Running" if ready else "Pending",
                         "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    kube.update(PODS, created, NS, subresource="status")


def make_stuck(kube, sts_name: str) -> None:
    """Pod 1 not ready at rev-b, neither the current (rev-a) nor the update revision (rev-c)."""
    sts = kube.get(STATEFULSETS, sts_name, NS)
    _create_pod(kube, sts, 0, "rev-a", True)
    _create_pod(kube, sts, 1, "rev-b", False)
    modify(kube, STATEFULSETS, sts_name, NS, lambda o: o.update(status={
        "observedGeneration": o["metadata"]["generation"], "replicas": 2, "readyReplicas": 1,
        "availableReplicas": 1, "currentRevision": "rev-a", "updateRevision": "rev-c"}), subresource="status")


def repaired(kube, kind: str, name: str, sts_name: str, verb: str) -> None:
    """Pod 1 removed, pod 0 kept, and an Event on the workload object naming what was done."""
    eventually(lambda: _get(kube, PODS, f"{sts_name}-1") is None, 30, "the stuck pod removed")
    assert _get(kube, PODS, f"{sts_name}-0") is not None
    events = eventually(lambda: [e for e in kube.list(EVENTS, NS)["items"] if e.get("reason") == REASON], 30,
                        "the repair Event")
    assert (events[0]["involvedObject"]["kind"], events[0]["involvedObject"]["name"]) == (kind, name)
    assert f"{verb} pod {sts_name}-1 of StatefulSet {sts_name}" in events[0]["message"]


def test_a_stuck_agent_rollout_is_repaired(cluster, kube, start_operator):
    start_operator(repair_policy="delete")  # evict: test_operator_repair_evict.py
    kube.create(PROMETHEUSAGENTS, {
        "apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent",
        "metadata": {"name": "edge", "namespace": NS},
        "spec": {"replicas": 2, "podMonitorSelector": {},
                 "remoteWrite": [{"url": "http://central:9090/api/v1/write"}]}},
        NS)
    eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-edge"), 30, "the agent's StatefulSet")
    make_stuck(kube, "prom-agent-edge")
    repaired(kube, "PrometheusAgent", "edge", "prom-agent-edge", "deleted")


def test_a_stuck_thanos_ruler_rollout_is_repaired(cluster, kube, start_operator):
    start_operator(repair_policy="delete")
    kube.create(THANOSRULERS, {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler", "metadata": {"name": "tr", "namespace": NS},
        "spec": {"replicas": 2, "queryEndpoints": ["dnssrv+_http._tcp.thanos-query.monitoring.svc"],
                 "ruleSelector": {}}}, NS)
    eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-tr"), 30, "the ThanosRuler's StatefulSet")
    make_stuck(kube, "thanos-ruler-tr")
    repaired(kube, "ThanosRuler", "tr", "thanos-ruler-tr", "deleted")


def test_policy_none_leaves_the_stuck_pods(cluster, kube, start_operator):
    op = start_operator()
    kube.create(THANOSRULERS, {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ThanosRuler", "metadata": {"name": "tr", "namespace": NS},
        "spec": {"replicas": 2, "queryEndpoints": ["dnssrv+_http._tcp.thanos-query.monitoring.svc"],
                 "ruleSelector": {}}}, NS)
    eventually(lambda: _get(kube, STATEFULSETS, "thanos-ruler-tr"), 30, "the ThanosRuler's StatefulSet")
    make_stuck(kube, "thanos-ruler-tr")
    eventually(op.idle, 30, "idle after the StatefulSet's status change")
    assert _get(kube, PODS, "thanos-ruler-tr-1") is not None
