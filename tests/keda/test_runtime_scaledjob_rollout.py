"""ScaledJob on the sandbox, KEDA 2.20's rules from its source: rollout on a spec change (immediate deletes
the previous generation's Jobs with the propagation policy asked, gradual leaves them), the pending
count read from the Jobs' pods (phase, or pendingPodConditions), TriggerAuthentication
`status.scaledjobs`, and the conditions and Events the reconcile and the poll write."""

from __future__ import annotations

import threading

import pytest

from promop.autoscaler.keda.resources import JOBS, SCALEDJOBS, TRIGGERAUTHENTICATIONS
from promop.kube.resources import PODS
from tests.keda.runtime_harness import KedaHarness, wait_for


@pytest.fixture
def h(sandbox):
    harness = KedaHarness(sandbox)
    yield harness
    harness.close()


def _sj(name: str, server: str, query: str, **spec) -> dict:
    body = {"jobTargetRef": {"template": {"spec": {"restartPolicy": "Never",
                                                   "containers": [{"name": "work", "image": "busybox"}]}}},
            "pollingInterval": 1, "maxReplicaCount": 10,
            "triggers": [{"type": "prometheus", "metadata": {"serverAddress": server, "query": query,
                                                             "threshold": "1"}}]}
    body.update(spec)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "metadata": {"name": name}, "spec": body}


def _jobs(h, name: str) -> list[dict]:
    return h.client.list(JOBS, "default", label_selector=f"scaledjob.keda.sh/name={name}")["items"]


def _gen(job: dict) -> str:
    return job["metadata"]["annotations"]["scaledjob.keda.sh/generation"]


def _status(h, name: str) -> dict:
    return h.client.get(SCALEDJOBS, name, "default").get("status") or {}


def _cond(h, name: str, type_: str) -> dict:
    return next((c for c in _status(h, name).get("conditions") or [] if c["type"] == type_), {})


def _spy_deletes(ctl) -> list[tuple[str, str | None]]:
    calls: list[tuple[str, str | None]] = []
    lock = threading.Lock()
    real = ctl.client.delete

    def delete(res, name, namespace=None, **kw):
        if res is JOBS or getattr(res, "plural", None) == "jobs":
            with lock:
                calls.append((name, kw.get("propagation_policy")))
        return real(res, name, namespace, **kw)

    ctl.client.delete = delete
    return calls


def _change_image(h, name: str) -> None:
    obj = h.client.get(SCALEDJOBS, name, "default")
    tpl = obj["spec"]["jobTargetRef"]["template"]
    tpl["spec"]["containers"][0]["image"] = "busybox:2"
    h.client.patch(SCALEDJOBS, name, {"spec": {"jobTargetRef": obj["spec"]["jobTargetRef"]}}, "default")


@pytest.mark.parametrize("rollout,policy", [({}, "Background"),
                                            ({"rollout": {"strategy": "immediate",
                                                          "propagationPolicy": "foreground"}}, "Foreground")])
def test_spec_change_deletes_previous_generation(h, rollout, policy):
    h.prom.set("q_roll", "2")
    h.client.create(SCALEDJOBS, _sj("roll", h.prom.url, "q_roll", **rollout), "default")
    ctl = h.start()
    deletes = _spy_deletes(ctl)
    first = wait_for(lambda: len(j := _jobs(h, "roll")) == 2 and j, what="two jobs")
    assert {_gen(j) for j in first} == {"1"}
    _change_image(h, "roll")
    # the old two go, two new ones (generation 2, the new image) are created for the same queue
    new = wait_for(lambda: (j := _jobs(h, "roll")) and {_gen(x) for x in j} == {"2"} and len(j) == 2 and j,
                   what="only generation-2 jobs")
    assert new[0]["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:2"
    old_names = {j["metadata"]["name"] for j in first}
    assert {(n, p) for n, p in deletes if n in old_names} == {(n, policy) for n in old_names}
    assert h.events("ScaledJobRolloutCleanupCompleted")


def test_gradual_leaves_running_jobs(h):
    h.prom.set("q_grad", "2")
    h.client.create(SCALEDJOBS, _sj("grad", h.prom.url, "q_grad", rollout={"strategy": "gradual"}), "default")
    h.start()
    wait_for(lambda: len(_jobs(h, "grad")) == 2, what="two jobs")
    _change_image(h, "grad")
    # generation 2 reconciled: its scalers watch restarted (a second "Started scalers watch")
    wait_for(lambda: len([e for e in h.events("KEDAScalersStarted") if e["message"] == "Started scalers watch"])
             == 2, what="generation 2 reconciled")
    h.prom.set("q_grad", "3")            # one more for the queue, under the new spec; the old two stay
    jobs = wait_for(lambda: len(j := _jobs(h, "grad")) == 3 and j, what="a third job")
    assert sorted(_gen(j) for j in jobs) == ["1", "1", "2"]
    assert not h.events("ScaledJobRolloutCleanupStarted")


def _pod_for(h, job: dict, phase: str, conditions: dict[str, str]) -> None:
    name = job["metadata"]["name"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{name}-pod", "labels": {"job-name": name, "scaledjob.keda.sh/name": "pend"}},
           "spec": {"containers": [{"name": "work", "image": "busybox"}]}}
    h.client.create(PODS, pod, "default")
    h.client.patch(PODS, f"{name}-pod", {"status": {"phase": phase, "conditions": [
        {"type": t, "status": s} for t, s in conditions.items()]}}, "default", subresource="status")


def test_pending_count_reads_pod_conditions(h):
    # accurate: maxScale - pending while maxScale + running <= max. Queue 2: 2 jobs; both pending, so no more
    # (2 - 2 = 0) until their pods have every pendingPodConditions type True: then 2 - 0 = 2 more.
    h.prom.set("q_pend", "2")
    h.client.create(SCALEDJOBS, _sj("pend", h.prom.url, "q_pend", scalingStrategy={
        "strategy": "accurate", "pendingPodConditions": ["Ready", "PodScheduled"]}), "default")
    h.start()
    jobs = wait_for(lambda: len(j := _jobs(h, "pend")) == 2 and j, what="two jobs")
    # Running but not Ready: still pending under pendingPodConditions (it would not be by default)
    for j in jobs:
        _pod_for(h, j, "Running", {"Ready": "False", "PodScheduled": "True"})
    polls = h.prom.count("q_pend")
    wait_for(lambda: h.prom.count("q_pend") >= polls + 3, what="three more polls")
    assert len(_jobs(h, "pend")) == 2
    for j in jobs:
        h.client.patch(PODS, f"{j['metadata']['name']}-pod", {"status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}}, "default",
            subresource="status")
    wait_for(lambda: len(_jobs(h, "pend")) == 4, what="two more once the pods are no longer pending")


def test_default_pending_is_the_pod_phase(h):
    # the same, without pendingPodConditions: a Running pod (not Ready) is enough to stop being pending
    h.prom.set("q_pend", "2")
    h.client.create(SCALEDJOBS, _sj("pend", h.prom.url, "q_pend", scalingStrategy={"strategy": "accurate"}),
                    "default")
    h.start()
    jobs = wait_for(lambda: len(j := _jobs(h, "pend")) == 2 and j, what="two jobs")
    polls = h.prom.count("q_pend")
    wait_for(lambda: h.prom.count("q_pend") >= polls + 2, what="two more polls")
    assert len(_jobs(h, "pend")) == 2        # no pods: pending
    for j in jobs:
        _pod_for(h, j, "Running", {"Ready": "False"})
    wait_for(lambda: len(_jobs(h, "pend")) == 4, what="two more once their pods run")


def test_trigger_authentication_lists_scaledjobs(h):
    h.client.create(TRIGGERAUTHENTICATIONS, {"apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication",
                                             "metadata": {"name": "creds"}, "spec": {}}, "default")
    for name in ("jb", "ja", "jc"):
        sj = _sj(name, h.prom.url, "q_" + name)
        if name != "jc":
            sj["spec"]["triggers"][0]["authenticationRef"] = {"name": "creds"}
        h.client.create(SCALEDJOBS, sj, "default")
    h.start()

    def status() -> dict:
        return h.client.get(TRIGGERAUTHENTICATIONS, "creds", "default").get("status") or {}

    wait_for(lambda: status().get("scaledjobs") == "ja,jb", what="both users listed, sorted")
    assert "scaledobjects" not in status()   # the ScaledObjects' list is another field
    h.client.delete(SCALEDJOBS, "ja", "default")
    wait_for(lambda: status().get("scaledjobs") == "jb", what="the deleted one removed")
    h.client.delete(SCALEDJOBS, "jb", "default")
    wait_for(lambda: "scaledjobs" not in status(), what="an empty list removed")


def test_conditions_and_events_as_keda(h):
    h.prom.set("q_cond", "0")
    sj = _sj("cond", h.prom.url, "q_cond")
    sj["spec"]["triggers"].append({"type": "prometheus", "metadata": {"serverAddress": h.prom.url,
                                                                      "query": "q_bad", "threshold": "1"}})
    h.prom.set("q_bad", 500)
    h.client.create(SCALEDJOBS, sj, "default")
    h.start()
    # inactive with an error: Ready False TriggerError (KEDA's text, not the error), Active False
    wait_for(lambda: _cond(h, "cond", "Ready").get("reason") == "TriggerError", what="TriggerError")
    assert _cond(h, "cond", "Ready")["message"] == "Triggers defined in ScaledJob are not working correctly"
    assert _cond(h, "cond", "Active") == {"type": "Active", "status": "False", "reason": "ScalerNotActive",
                                          "message": "Scaling is not performed because triggers are not active"}
    st = _status(h, "cond")
    assert st["triggersTypes"] == "prometheus" and "authenticationsTypes" not in st
    assert {c["type"] for c in st["conditions"]} == {"Ready", "Active", "Fallback", "Paused"}
    # on each reconcile that finds Ready not True (the first, and a second one after the finalizer patch
    # if the poll's TriggerError came first), as KEDA's reconciler
    assert {e["message"] for e in h.events("ScaledJobReady")} == {"ScaledJob is ready for scaling"}
    # one "is built" per trigger, then the watch (KEDA's e2e tests read these two messages)
    assert sorted(e["message"] for e in h.events("KEDAScalersStarted")) == [
        "Scaler prometheus is built", "Scaler prometheus is built", "Started scalers watch"]
    assert h.events("ScaledJobInactive")
    # active with an error: Unknown PartialTriggerError, an Event ScaledJobActive
    h.prom.set("q_cond", "1")
    wait_for(lambda: _cond(h, "cond", "Ready").get("reason") == "PartialTriggerError", what="partial")
    assert _cond(h, "cond", "Ready")["status"] == "Unknown"
    assert _cond(h, "cond", "Active")["status"] == "True"
    assert len(h.events("ScaledJobActive")) == 1
    assert "lastActiveTime" in _status(h, "cond")
    # no error: back to True with the poll's message ("for scaling"; the reconcile writes "to scaling")
    h.prom.set("q_bad", "0")
    wait_for(lambda: _cond(h, "cond", "Ready").get("status") == "True", what="ready again")
    assert _cond(h, "cond", "Ready")["message"] == "ScaledJob is defined correctly and is ready for scaling"


def test_pause_and_unpause(h):
    h.prom.set("q_pause", "0")
    h.client.create(SCALEDJOBS, _sj("pause", h.prom.url, "q_pause"), "default")
    h.start()
    wait_for(lambda: _cond(h, "pause", "Ready").get("message")
             == "ScaledJob is defined correctly and is ready to scaling", what="reconciled")
    h.client.patch(SCALEDJOBS, "pause", {"metadata": {"annotations": {"autoscaling.keda.sh/paused": "true"}}},
                   "default")
    wait_for(lambda: _cond(h, "pause", "Paused").get("status") == "True", what="paused")
    assert _cond(h, "pause", "Paused") == {"type": "Paused", "status": "True", "reason": "ScaledJobPaused",
                                           "message": "ScaledJob is paused"}
    assert _cond(h, "pause", "Ready")["message"] == "ScaledJob is paused, skipping reconcile loop"
    assert [e["message"] for e in h.events("KEDAScalersStopped")] == ["Stopped scalers watch"]
    h.prom.set("q_pause", "3")
    polls = h.prom.count("q_pause")
    # no loop while paused: the query is not sent and no Job is created
    wait_for(lambda: h.events("ScaledJobPaused"), what="the pause event")
    assert h.prom.count("q_pause") <= polls + 1 and len(_jobs(h, "pause")) == 0
    h.client.patch(SCALEDJOBS, "pause", {"metadata": {"annotations": {"autoscaling.keda.sh/paused": None}}},
                   "default")
    wait_for(lambda: _cond(h, "pause", "Paused").get("reason") == "ScaledJobUnpaused", what="unpaused")
    assert _cond(h, "pause", "Paused")["message"] == "ScaledJob is unpaused"
    wait_for(lambda: len(_jobs(h, "pause")) == 3, what="jobs after unpausing")
    assert len(h.events("KEDAScalersStarted")) == 4      # built + watch, twice


def test_cluster_trigger_authentication_created_later_lists_scaledjobs(h):
    from promop.autoscaler.keda.resources import CLUSTERTRIGGERAUTHENTICATIONS

    sj = _sj("cj", h.prom.url, "q_cj")
    sj["spec"]["triggers"][0]["authenticationRef"] = {"name": "shared", "kind": "ClusterTriggerAuthentication"}
    h.client.create(SCALEDJOBS, sj, "default")
    h.start()
    wait_for(lambda: _cond(h, "cj", "Ready").get("status") in ("True", "False", "Unknown")
             and _status(h, "cj").get("authenticationsTypes") == "shared", what="reconciled")
    h.client.create(CLUSTERTRIGGERAUTHENTICATIONS, {"apiVersion": "keda.sh/v1alpha1",
                                                    "kind": "ClusterTriggerAuthentication",
                                                    "metadata": {"name": "shared"}, "spec": {}})
    wait_for(lambda: (h.client.get(CLUSTERTRIGGERAUTHENTICATIONS, "shared").get("status") or {}).get("scaledjobs")
             == "cj", what="status.scaledjobs on the ClusterTriggerAuthentication")


def test_metric_type_is_a_check_failure(h):
    sj = _sj("mt", h.prom.url, "q_mt")
    sj["spec"]["triggers"][0]["metricType"] = "Value"
    h.client.create(SCALEDJOBS, sj, "default")
    h.client.create(SCALEDJOBS, _sj("fine", h.prom.url, "q_fine"), "default")
    h.prom.set("q_mt", "2")
    h.prom.set("q_fine", "1")
    h.start()
    wait_for(lambda: _cond(h, "mt", "Ready").get("reason") == "ScaledJobCheckFailed", what="check failed")
    assert "metricType" in _cond(h, "mt", "Ready")["message"]
    assert _cond(h, "mt", "Active") == {"type": "Active", "status": "Unknown", "reason": "UnknownState",
                                        "message": "ScaledJob check failed"}
    assert h.events("ScaledJobCheckFailed")
    wait_for(lambda: len(_jobs(h, "fine")) == 1, what="the other ScaledJob still works")
    assert _jobs(h, "mt") == [] and h.prom.count("q_mt") == 0
