"""A PrometheusAgent's status: replica counts of its StatefulSets (per shard) or DaemonSet, and the
Available / Reconciled conditions, as upstream reports them for agents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from promop.operator.status import (AVAILABLE, RECONCILED, combined_availability, condition, keep_transition_times,
                                    statefulset_counts)
from promop.render.agent.workload import selector_labels


def _ds_counts(ds: Mapping[str, Any] | None) -> dict[str, int]:
    st = (ds or {}).get("status") or {}
    desired = int(st.get("desiredNumberScheduled") or 0)
    available = int(st.get("numberAvailable", st.get("numberReady")) or 0)
    return {"replicas": desired, "updatedReplicas": int(st.get("updatedNumberScheduled") or 0),
            "availableReplicas": available, "unavailableReplicas": max(0, desired - available)}


def _availability(kind: str, name: str, obj: Mapping[str, Any] | None, counts: dict[str, int],
                  expected: int) -> tuple[str, str, str]:
    if obj is None:
        return "False", f"{kind}NotFound", f"{kind} {name} not found"
    if expected > 0 and counts["availableReplicas"] == 0:
        return "False", "NoPodReady", f"{kind} {name}: 0/{expected} pods ready"
    if counts["availableReplicas"] < expected:
        return "Degraded", "SomePodsNotReady", f"{kind} {name}: {counts['availableReplicas']}/{expected} pods ready"
    return "True", "", ""


def agent_status(agent: Mapping[str, Any], workloads: Sequence[tuple[str, Mapping[str, Any] | None]],
                 daemonset: bool, *, error: str | None, now: str, reason: str = "") -> dict:
    """The desired status, from (name, live object or None) of each desired StatefulSet (or the DaemonSet)."""
    md = agent.get("metadata") or {}
    spec = agent.get("spec") or {}
    generation = int(md.get("generation") or 0)
    totals = dict.fromkeys(("replicas", "updatedReplicas", "availableReplicas", "unavailableReplicas"), 0)
    shard_statuses, parts = [], []
    for shard, (name, obj) in enumerate(workloads):
        counts = _ds_counts(obj) if daemonset else statefulset_counts(obj)
        for k, v in counts.items():
            totals[k] += v
        if not daemonset:
            shard_statuses.append({"shardID": str(shard), **counts})
        expected = counts["replicas"] if daemonset else int(spec.get("replicas") or 1)
        parts.append(_availability("DaemonSet" if daemonset else "StatefulSet", name, obj, counts, expected))
    available = ("False", "ReconciliationFailed", error) if error else combined_availability(parts)
    conditions = [condition(AVAILABLE, *available, generation, now)]
    if error:
        conditions.append(condition(RECONCILED, "False", "ReconciliationFailed", error, generation, now))
    else:
        conditions.append(condition(RECONCILED, "True", reason, "", generation, now))
    out: dict = {"paused": bool(spec.get("paused", False)), **totals,
                 "conditions": keep_transition_times((agent.get("status") or {}).get("conditions"), conditions)}
    if not daemonset:
        out["shardStatuses"] = shard_statuses
        out["shards"] = len(workloads)
    sel = selector_labels(agent, None)
    out["selector"] = ",".join(f"{k}={v}" for k, v in sorted(sel.items()))
    return out
