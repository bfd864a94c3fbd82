"""ScaledJob with the prometheus trigger on the sandbox: Jobs created for the queue (default strategy:
maxScale - running), capped at maxReplicaCount, finished Jobs beyond the history limit deleted."""

from __future__ import annotations

import pytest

from promop.autoscaler.keda.resources import JOBS, SCALEDJOBS
from tests.keda.runtime_harness import KedaHarness, wait_for


@pytest.fixture
def h(sandbox):
    harness = KedaHarness(sandbox)
    yield harness
    harness.close()


def _sj(name: str, server: str, query: str, **spec) -> dict:
    body = {"jobTargetRef": {"template": {"metadata": {"labels": {"app": name}},
                                          "spec": {"restartPolicy": "Never",
                                                   "containers": [{"name": "work", "image": "busybox"}]}}},
            "pollingInterval": 1, "maxReplicaCount": 5,
            "triggers": [{"type": "prometheus", "metadata": {"serverAddress": server, "query": query,
                                                             "threshold": "1"}}]}
    body.update(spec)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "metadata": {"name": name}, "spec": body}


def _jobs(h, name: str) -> list[dict]:
    return h.client.list(JOBS, "default", label_selector=f"scaledjob.keda.sh/name={name}")["items"]


def test_jobs_for_the_queue_then_history_limit(h):
    h.prom.set("q_jobs", "3")
    h.client.create(SCALEDJOBS, _sj("work", h.prom.url, "q_jobs", successfulJobsHistoryLimit=1), "default")
    h.start()
    jobs = wait_for(lambda: len(j := _jobs(h, "work")) == 3 and j, what="three jobs")
    job = jobs[0]
    assert job["metadata"]["ownerReferences"][0]["kind"] == "ScaledJob"
    assert job["spec"]["template"]["spec"]["containers"][0]["name"] == "work"
    # KEDA's generateJobs: the ScaledJob's labels on the Job, the template's stay on the pod template
    assert "app" not in job["metadata"]["labels"]
    assert job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "keda-operator"
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "work", "scaledjob.keda.sh/name": "work"}
    assert job["metadata"]["name"].startswith("work-")
    # the reconcile writes status first (conditions initialized, Ready); the poll then sets Active
    def active() -> dict | None:
        o = h.client.get(SCALEDJOBS, "work", "default")
        conds = (o.get("status") or {}).get("conditions") or []
        return o if any(c["type"] == "Active" and c["status"] == "True" for c in conds) else None

    sj = wait_for(active, what="Active=True")
    assert "finalizer.keda.sh" in sj["metadata"]["finalizers"]
    assert any(e["message"] == "Created 3 jobs" for e in h.events("KEDAJobsCreated"))
    h.prom.set("q_jobs", "9")            # capped at maxReplicaCount 5: 2 more while 3 run
    wait_for(lambda: len(_jobs(h, "work")) == 5, what="five jobs")
    h.prom.set("q_jobs", "0")
    wait_for(lambda: any(c["type"] == "Active" and c["status"] == "False"
                         for c in (h.client.get(SCALEDJOBS, "work", "default").get("status") or {}).get(
                             "conditions", [])), what="inactive")
    assert len(_jobs(h, "work")) == 5
    for j in _jobs(h, "work"):
        h.client.patch(JOBS, j["metadata"]["name"], {"status": {
            "conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1,
            "completionTime": "2026-01-01T00:00:00Z"}}, "default", subresource="status")
    wait_for(lambda: len(_jobs(h, "work")) == 1, what="history limit 1")
