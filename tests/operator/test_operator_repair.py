"""--repair-policy-for-statefulsets (upstream 0.90+, pkg/operator/statefulset_reporter.go Repair): a
StatefulSet stuck on a broken revision gets its failing pod removed, one per sync, and the Prometheus
gets an Event saying so."""

from __future__ import annotations

import pytest
from operator_fakes import fake_references, fake_render
from operator_testlib import OPERATOR_AGENT, ROOT, eventually, modify

from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.kube.resources import EVENTS, NAMESPACES, PODS, PROMETHEUSES, STATEFULSETS
from promop.operator.install import install_crds
from promop.operator.rbac import granted
from promop.operator.repair import REASON, pod_to_repair, repair
from promop.sandbox import Sandbox

NS = "mon"


def sts(generation=2, observed=2, current="rev-a", update="rev-c"):
    return {"metadata": {"name": "prometheus-p", "namespace": NS, "generation": generation},
            "spec": {"selector": {"matchLabels": {"app": "p"}}},
            "status": {"observedGeneration": observed, "currentRevision": current, "updateRevision": update}}


def pod(ordinal, revision, ready, owner="prometheus-p", deleting=False, index_label=True):
    labels = {"app": "p", "controller-revision-hash": revision}
    if index_label:
        labels["apps.kubernetes.io/pod-index"] = str(ordinal)
    md = {"name": f"prometheus-p-{ordinal}", "namespace": NS, "labels": labels,
          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner, "uid": "u",
                               "controller": True}]}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    cond = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"metadata": md, "status": {"phase": "Running" if ready else "Pending", "conditions": cond}}


def name(p):
    return p["metadata"]["name"] if p else None


def test_the_pod_to_repair_is_the_highest_not_ready_pod_of_neither_revision():
    stuck = [pod(0, "rev-a", True), pod(1, "rev-b", False), pod(2, "rev-b", False, index_label=False)]
    assert name(pod_to_repair(sts(), stuck)) == "prometheus-p-2"  # highest ordinal first (the name's suffix)
    assert name(pod_to_repair(sts(), stuck[:2])) == "prometheus-p-1"
    assert pod_to_repair(sts(), [pod(1, "rev-b", True)]) is None  # ready
    assert pod_to_repair(sts(), [pod(1, "rev-a", False)]) is None  # the current revision: the rollout's business
    assert pod_to_repair(sts(), [pod(1, "rev-c", False)]) is None  # the update revision: starting, not stuck
    assert pod_to_repair(sts(), [pod(1, "rev-b", False, deleting=True)]) is None
    assert pod_to_repair(sts(), [pod(1, "rev-b", False, owner="prometheus-q")]) is None
    assert pod_to_repair(sts(observed=1), stuck) is None  # the StatefulSet controller has not caught up


def test_policy_none_does_nothing():
    assert repair(None, [sts()], "none", lambda note: pytest.fail(note)) == []


@pytest.fixture
def cluster():
    """A sandbox whose StatefulSets report nothing by themselves: the test writes their status (and
    pods) as kube-controller-manager leaves them around a stuck rollout."""
    with Sandbox(port=0, bookmark_interval=0.5) as sb:
        install_crds(KubeClient(sb.api_client()), ROOT / "crds")
        yield sb


def create_pod(kube, p):
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {k: v for k, v in p["metadata"].items()},
            "spec": {"containers": [{"name": "prometheus", "image": "prom"}]}}
    created = kube.create(PODS, body, NS)
    created["status"] = p["status"]
    kube.update(PODS, created, NS, subresource="status")


def exists(kube, res, name) -> bool:
    try:
        kube.get(res, name, NS)
        return True
    except NotFound:
        return False


def test_a_stuck_rollout_is_repaired_by_deleting_its_failing_pod(cluster, kube, start_operator):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    op = start_operator(render=fake_render, references=fake_references, repair_policy="delete")
    op.controller.repair_recheck = 0.5  # upstream looks again every minute
    kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                               "metadata": {"name": "p", "namespace": NS}, "spec": {"replicas": 3}})
    made = eventually(lambda: exists(kube, STATEFULSETS, "prometheus-p") and kube.get(STATEFULSETS, "prometheus-p", NS),
                      what="the StatefulSet")
    labels = made["spec"]["selector"]["matchLabels"]
    owner = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "prometheus-p", "uid": made["metadata"]["uid"],
              "controller": True}]
    for p in (pod(0, "rev-a", True), pod(1, "rev-b", False), pod(2, "rev-b", False)):
        p["metadata"]["labels"].update(labels)
        p["metadata"]["ownerReferences"] = owner
        create_pod(kube, p)
    # what the StatefulSet controller reports: pod 1 stuck at rev-b, the fixed spec is rev-c
    modify(kube, STATEFULSETS, "prometheus-p", NS, lambda o: o.update(status={
        "observedGeneration": o["metadata"]["generation"], "replicas": 3, "readyReplicas": 1,
        "availableReplicas": 1, "currentRevision": "rev-a", "updateRevision": "rev-c"}), subresource="status")
    # one pod per sync, the highest ordinal first; nothing else changes, the recheck removes the next one
    eventually(lambda: not exists(kube, PODS, "prometheus-p-2"), what="the highest stuck pod deleted")
    eventually(lambda: not exists(kube, PODS, "prometheus-p-1"), what="the next stuck pod deleted")
    assert exists(kube, PODS, "prometheus-p-0")

    def repaired_events():
        return [e for e in kube.list(EVENTS, NS)["items"] if e.get("reason") == REASON]
    events = eventually(lambda: len(repaired_events()) == 2 and repaired_events(), what="two repair events")
    notes = sorted(e["message"] for e in events)
    assert {(e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in events} == {("Prometheus", "p")}
    assert "deleted pod prometheus-p-1 of StatefulSet prometheus-p" in notes[0]
    assert "deleted pod prometheus-p-2 of StatefulSet prometheus-p" in notes[1]
    note = notes[0]
    assert "rev-b" in note and "--repair-policy-for-statefulsets=delete" in note
    # the bundle's ClusterRole (promop manifests --repair-policy-for-statefulsets=delete) grants exactly these
    used = {("", "pods" + (f"/{r.subresource}" if r.subresource else ""), r.verb) for r in cluster.requests
            if r.user_agent.startswith(OPERATOR_AGENT) and r.resource == "pods"}
    assert used == {t for t in granted(repair="delete") if t[1].startswith("pods")}
