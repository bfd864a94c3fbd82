"""`kubectl drain` against the sandbox: it finds the Eviction subresource through discovery, posts
policy/v1 Evictions, retries while a PodDisruptionBudget refuses (429) and succeeds once it allows."""

from __future__ import annotations

import pytest

from .helpers import KUBECTL
from .test_eviction import NS, SELECTOR, exists, make_pdb, make_pod, request, settled

pytestmark = [pytest.mark.kubectl,
              pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")]


def test_kubectl_drain_evicts_through_the_budget(sandbox, core, apps, kubectl):
    core.create_node({"metadata": {"name": "n1"}})
    sts = apps.create_namespaced_stateful_set(NS, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "serviceName": "web", "selector": SELECTOR,
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}}).to_dict()
    for i in range(2):
        core.create_namespaced_pod(NS, {
            "metadata": {"name": f"web-{i}", "labels": {"app": "a"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                              "uid": sts["metadata"]["uid"], "controller": True}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}})
        core.patch_namespaced_pod_status(f"web-{i}", NS, {"status": {
            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    make_pod(core, "elsewhere", labels={"app": "b"})  # not on n1: drain leaves it
    make_pdb(sandbox, maxUnavailable=0)
    settled(sandbox)
    header, row = kubectl("get", "pdb").stdout.splitlines()
    assert header.split()[:7] == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS"]
    assert row.split()[:4] == ["budget", "N/A", "0", "0"]

    refused = kubectl("drain", "n1", "--timeout=3s", check=False)
    assert refused.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in refused.stderr
    assert exists(sandbox, "web-0") and exists(sandbox, "web-1")
    assert core.read_node("n1").spec.unschedulable is True  # cordoned first
    assert any(r.resource == "pods" and r.subresource == "eviction" and r.code == 429 for r in sandbox.requests)

    code, _, _ = request(sandbox, "DELETE", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/budget")
    assert code == 200
    make_pdb(sandbox, maxUnavailable=2)
    settled(sandbox)
    rehearsed = kubectl("drain", "n1", "--dry-run=server", "--timeout=20s")
    assert "node/n1 drained (server dry run)" in rehearsed.stdout, rehearsed.stdout
    # kubectl puts dryRun in the Eviction's deleteOptions: answered 201, nothing deleted
    assert sum(1 for r in sandbox.requests if r.subresource == "eviction" and r.code == 201) == 2
    assert exists(sandbox, "web-0") and exists(sandbox, "web-1")
    assert settled(sandbox)["status"]["disruptionsAllowed"] == 2  # a dry run spends nothing
    drained = kubectl("drain", "n1", "--timeout=20s")
    assert "pod/web-0 evicted" in drained.stdout and "pod/web-1 evicted" in drained.stdout
    assert "node/n1 drained" in drained.stdout
    assert not exists(sandbox, "web-0") and not exists(sandbox, "web-1") and exists(sandbox, "elsewhere")
    assert not any(r.resource == "pods" and r.verb == "delete" for r in sandbox.requests)  # evicted, not deleted
