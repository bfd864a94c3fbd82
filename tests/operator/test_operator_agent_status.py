"""The PrometheusAgent status, computed from its workloads and the sync outcome (pure)."""

from __future__ import annotations

from promop.operator.agent.status import agent_status

NOW = "2026-01-01T00:00:00Z"
AGENT = {"metadata": {"name": "edge", "namespace": "ns", "generation": 3}, "spec": {"replicas": 2}}


def _conds(status: dict) -> dict:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_statefulsets_summed_per_shard():
    ready = {"status": {"replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}}
    half = {"status": {"replicas": 2, "updatedReplicas": 1, "availableReplicas": 1}}
    st = agent_status(AGENT, [("prom-agent-edge", ready), ("prom-agent-edge-shard-1", half)], False,
                      error=None, now=NOW)
    assert (st["replicas"], st["updatedReplicas"], st["availableReplicas"], st["unavailableReplicas"]) == (4, 3, 3, 1)
    assert st["shards"] == 2 and [s["shardID"] for s in st["shardStatuses"]] == ["0", "1"]
    assert _conds(st) == {"Available": ("Degraded", "SomePodsNotReady"), "Reconciled": ("True", "")}
    assert all(c["observedGeneration"] == 3 for c in st["conditions"])
    assert "operator.prometheus.io/shard" not in st["selector"] and "app.kubernetes.io/name=prometheus-agent" in st["selector"]


def test_missing_workload_and_errors():
    st = agent_status(AGENT, [("prom-agent-edge", None)], False, error=None, now=NOW)
    assert _conds(st)["Available"] == ("False", "StatefulSetNotFound")
    st = agent_status(AGENT, [], False, error="spec.mode: needs the gate", now=NOW)
    assert _conds(st) == {"Available": ("False", "ReconciliationFailed"),
                          "Reconciled": ("False", "ReconciliationFailed")}
    assert st["conditions"][1]["message"] == "spec.mode: needs the gate"


def test_daemonset_counts_and_no_shards():
    ds = {"status": {"desiredNumberScheduled": 3, "numberAvailable": 3, "updatedNumberScheduled": 3}}
    st = agent_status(AGENT, [("prom-agent-edge", ds)], True, error=None, now=NOW)
    assert (st["replicas"], st["availableReplicas"], st["unavailableReplicas"]) == (3, 3, 0)
    assert "shardStatuses" not in st and "shards" not in st
    assert _conds(st)["Available"] == ("True", "")
    down = {"status": {"desiredNumberScheduled": 3, "numberAvailable": 0}}
    assert _conds(agent_status(AGENT, [("prom-agent-edge", down)], True, error=None, now=NOW))["Available"] == (
        "False", "NoPodReady")


def test_transition_time_kept_when_unchanged():
    ready = {"status": {"replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}}
    first = agent_status(AGENT, [("prom-agent-edge", ready)], False, error=None, now=NOW)
    again = agent_status({**AGENT, "status": first}, [("prom-agent-edge", ready)], False, error=None,
                         now="2026-01-02T00:00:00Z")
    assert [c["lastTransitionTime"] for c in again["conditions"]] == [NOW, NOW]
