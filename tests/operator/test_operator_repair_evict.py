"""--repair-policy-for-statefulsets=evict on the sandbox's Eviction subresource: the stuck pod goes
through the Eviction API, so a PodDisruptionBudget that allows no disruption keeps it (the operator
logs why and tries again at its next look), and once the budget allows, it is evicted, not deleted."""

from __future__ import annotations

import logging

import pytest
from kubernetes import client
from operator_fakes import fake_references, fake_render
from operator_testlib import OPERATOR_AGENT, ROOT, eventually, modify

from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.kube.resources import EVENTS, NAMESPACES, PODS, PROMETHEUSES, STATEFULSETS
from promop.operator.install import install_crds
from promop.operator.repair import REASON
from promop.sandbox import Sandbox

NS = "mon"


@pytest.fixture
def cluster():
    """StatefulSets report nothing by themselves: the test writes their status and pods."""
    with Sandbox(port=0, bookmark_interval=0.5) as sb:
        install_crds(KubeClient(sb.api_client()), ROOT / "crds")
        yield sb


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def repair_log():
    logger = logging.getLogger("promop.operator.repair")
    handler = Records()
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


def exists(kube, name) -> bool:
    try:
        kube.get(PODS, name, NS)
        return True
    except NotFound:
        return False


def make_pod(kube, sts: dict, ordinal: int, revision: str, ready: bool) -> None:
    """A pod of the StatefulSet, Running (a crash-looping pod is Running and not Ready)."""
    md = sts["metadata"]
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{md['name']}-{ordinal}", "namespace": NS,
                         "labels": {**sts["spec"]["selector"]["matchLabels"], "controller-revision-hash": revision,
                                    "apps.kubernetes.io/pod-index": str(ordinal)},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": md["name"],
                                              "uid": md["uid"], "controller": True}]},
            "spec": {"containers": [{"name": "prometheus", "image": "prom"}]}}
    created = kube.create(PODS, body, NS)
    created["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    kube.update(PODS, created, NS, subresource="status")


def evictions(sb, code: int) -> int:
    return sum(1 for r in sb.requests if r.resource == "pods" and r.subresource == "eviction" and r.code == code)


def test_a_budget_at_zero_keeps_the_stuck_pod_until_it_allows_then_it_is_evicted(cluster, kube, start_operator,
                                                                                  repair_log):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator(render=fake_render, references=fake_references, repair_policy="evict")
    op.controller.repair_recheck = 0.5  # upstream looks again every minute
    kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                               "metadata": {"name": "p", "namespace": NS}, "spec": {"replicas": 3}})
    sts = eventually(lambda: kube.get(STATEFULSETS, "prometheus-p", NS), what="the StatefulSet")
    make_pod(kube, sts, 0, "rev-a", True)
    make_pod(kube, sts, 1, "rev-b", False)
    make_pod(kube, sts, 2, "rev-b", False)
    policy = client.PolicyV1Api(cluster.api_client())
    policy.create_namespaced_pod_disruption_budget(NS, {  # 3 wanted, 1 healthy: no disruption allowed
        "metadata": {"name": "prometheus"},
        "spec": {"minAvailable": 3, "selector": {"matchLabels": sts["spec"]["selector"]["matchLabels"]}}})
    eventually(lambda: (policy.read_namespaced_pod_disruption_budget("prometheus", NS).status or
                        client.V1PodDisruptionBudgetStatus(current_healthy=0, desired_healthy=0, disruptions_allowed=0,
                                                           expected_pods=0)).observed_generation == 1,
               what="the budget observed by the disruption controller")
    modify(kube, STATEFULSETS, "prometheus-p", NS, lambda o: o.update(status={
        "observedGeneration": o["metadata"]["generation"], "replicas": 3, "readyReplicas": 1,
        "availableReplicas": 1, "currentRevision": "rev-a", "updateRevision": "rev-c"}), subresource="status")

    # refused, and tried again at the next look (nothing else changes meanwhile)
    eventually(lambda: evictions(cluster, 429) >= 2, what="the eviction refused, then tried again")
    assert exists(kube, "prometheus-p-2") and exists(kube, "prometheus-p-1")
    warned = [r for r in repair_log.records if r.levelno == logging.WARNING]
    assert warned and "Cannot evict pod as it would violate the pod's disruption budget." in \
        warned[0].kv["error"] and "prometheus-p-2/eviction" in warned[0].kv["error"]
    assert warned[0].kv["statefulset"] == f"{NS}/prometheus-p"
    assert not [e for e in kube.list(EVENTS, NS)["items"] if e.get("reason") == REASON]  # nothing done, nothing told

    # the budget now lets unready pods go: the next looks evict both stuck pods, highest first
    policy.patch_namespaced_pod_disruption_budget("prometheus", NS, {"spec": {"unhealthyPodEvictionPolicy":
                                                                              "AlwaysAllow"}})
    eventually(lambda: not exists(kube, "prometheus-p-2"), what="the highest stuck pod evicted")
    eventually(lambda: not exists(kube, "prometheus-p-1"), what="the next stuck pod evicted")
    assert exists(kube, "prometheus-p-0")
    assert evictions(cluster, 201) == 2
    assert not any(r.resource == "pods" and r.verb == "delete" for r in cluster.requests)  # evicted, not deleted
    events = eventually(lambda: [e for e in kube.list(EVENTS, NS)["items"] if e.get("reason") == REASON],
                        what="the repair Events")
    assert any("evicted pod prometheus-p-2 of StatefulSet prometheus-p" in e["message"] and
               "--repair-policy-for-statefulsets=evict" in e["message"] for e in events)


def test_a_stuck_pod_with_no_budget_is_evicted(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator(render=fake_render, references=fake_references, repair_policy="evict")
    op.controller.repair_recheck = 0.5
    kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                               "metadata": {"name": "p", "namespace": NS}, "spec": {"replicas": 2}})
    sts = eventually(lambda: kube.get(STATEFULSETS, "prometheus-p", NS), what="the StatefulSet")
    make_pod(kube, sts, 0, "rev-a", True)
    make_pod(kube, sts, 1, "rev-b", False)
    modify(kube, STATEFULSETS, "prometheus-p", NS, lambda o: o.update(status={
        "observedGeneration": o["metadata"]["generation"], "replicas": 2, "readyReplicas": 1,
        "availableReplicas": 1, "currentRevision": "rev-a", "updateRevision": "rev-c"}), subresource="status")
    eventually(lambda: not exists(kube, "prometheus-p-1"), what="the stuck pod evicted")
    assert evictions(cluster, 201) == 1 and exists(kube, "prometheus-p-0")
    assert not any(r.resource == "pods" and r.verb == "delete" for r in cluster.requests)
    assert pod_permissions_used(cluster) == pod_permissions_granted("evict")


def pod_permissions_used(sb) -> set[tuple[str, str, str]]:
    """The (group, resource, verb) triples of the operator's pod requests, from the sandbox's request log."""
    return {("", "pods" + (f"/{r.subresource}" if r.subresource else ""), r.verb) for r in sb.requests
            if r.user_agent.startswith(OPERATOR_AGENT) and r.resource == "pods"}


def pod_permissions_granted(repair: str) -> set[tuple[str, str, str]]:
    from promop.operator.rbac import granted

    return {t for t in granted(repair=repair) if t[1].startswith("pods")}


def test_the_install_bundle_grants_what_each_repair_policy_uses():
    """Least privilege: no pod access without the flag; with it, the verbs its mode sends and no other."""
    from promop.operator.bundle import render_bundle

    assert pod_permissions_granted("none") == set()
    assert pod_permissions_granted("evict") == {("", "pods", "list"), ("", "pods/eviction", "create")}
    assert pod_permissions_granted("delete") == {("", "pods", "list"), ("", "pods", "delete")}
    files = {f.name: f.text for f in render_bundle(repair_policy="evict")}
    assert "--repair-policy-for-statefulsets=evict" in "".join(files.values())
    assert "pods/eviction" in "".join(files.values())
    assert "repair-policy" not in "".join(f.text for f in render_bundle())
