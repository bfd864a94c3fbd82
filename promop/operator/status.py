"""The Prometheus status subresource, computed from its StatefulSets and the last sync.

Pure functions: the caller passes `now` (RFC 3339) so tests are deterministic.
`lastTransitionTime` is carried over from the current status while a
condition's status does not change, as upstream does.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable, Mapping, Sequence

from promop.render.statefulset import shard_count as render_shard_count

AVAILABLE = "Available"
RECONCILED = "Reconciled"
FAST_RELOAD = "FastReload"  # ours: how the config reloader reads the config (promop/render/fast_reload.py)
_ORDER = {"True": 0, "Degraded": 1, "False": 2}


def now_rfc3339() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def shard_count(prometheus: Mapping[str, Any]) -> int:
    """The renderer's shard count, so status and StatefulSets never disagree (a string "3" is 1 for both)."""
    return render_shard_count(prometheus.get("spec") or {})


def pod_selector(name: str) -> str:
    """The label selector of every pod of Prometheus `name` (all shards), for the scale subresource."""
    labels = {
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": "prometheus-operator",
        "app.kubernetes.io/name": "prometheus",
        "operator.prometheus.io/name": name,
        "prometheus": name,
    }
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def statefulset_counts(sts: Mapping[str, Any] | None) -> dict[str, int]:
    """The replica counts of a status from one StatefulSet (None: absent, all 0)."""
    st = (sts or {}).get("status") or {}
    replicas = int(st.get("replicas") or 0)
    available = int(st.get("availableReplicas", st.get("readyReplicas")) or 0)
    return {
        "replicas": replicas,
        "updatedReplicas": int(st.get("updatedReplicas") or 0),
        "availableReplicas": available,
        "unavailableReplicas": max(0, replicas - available),
    }


def _shard_availability(name: str, sts: Mapping[str, Any] | None, expected: int) -> tuple[str, str, str]:
    """(status, reason, message) of one shard."""
    if sts is None:
        return "False", "StatefulSetNotFound", f"StatefulSet {name} not found"
    available = statefulset_counts(sts)["availableReplicas"]
    if expected > 0 and available == 0:
        return "False", "NoPodReady", f"shard {name}: 0/{expected} pods ready"
    if available < expected:
        return "Degraded", "SomePodsNotReady", f"shard {name}: {available}/{expected} pods ready"
    return "True", "", ""


def combined_availability(parts: Iterable[tuple[str, str, str]]) -> tuple[str, str, str]:
    """One Available (status, reason, message) from each workload's (shard's): the worst status, the
    distinct reasons joined by "And", the messages joined by "; " (as upstream reports several shards)."""
    worst, reasons, messages = "True", [], []
    for status, reason, message in parts:
        if _ORDER[status] > _ORDER[worst]:
            worst = status
        if reason and reason not in reasons:
            reasons.append(reason)
        if message:
            messages.append(message)
    return worst, "And".join(reasons), "; ".join(messages)


def condition(ctype: str, status: str, reason: str, message: str, generation: int, now: str) -> dict:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": now,
    }


def keep_transition_times(old: Sequence[Mapping[str, Any]] | None, new: list[dict]) -> list[dict]:
    """Copy lastTransitionTime from `old` for every condition whose status is unchanged."""
    previous = {c.get("type"): c for c in (old or [])}
    out = []
    for cond in new:
        prev = previous.get(cond["type"])
        if prev and prev.get("status") == cond["status"] and prev.get("lastTransitionTime"):
            cond = {**cond, "lastTransitionTime": prev["lastTransitionTime"]}
        out.append(cond)
    return out


def prometheus_status(
    prometheus: Mapping[str, Any],
    statefulsets: Mapping[int, Mapping[str, Any] | None],
    *,
    error: str | None = None,
    reconciled_reason: str = "",
    reconciled_message: str = "",
    reload_mode: tuple[bool, str, str] | None = None,
    now: str,
) -> dict:
    """The desired `status` of `prometheus`, given its StatefulSet per shard index and the sync outcome."""
    md = prometheus.get("metadata") or {}
    spec = prometheus.get("spec") or {}
    name = md.get("name", "")
    generation = int(md.get("generation") or 0)
    shards = shard_count(prometheus)
    try:
        expected = int(spec.get("replicas") if spec.get("replicas") is not None else 1)
    except (TypeError, ValueError):
        expected = 1
    totals = {"replicas": 0, "updatedReplicas": 0, "availableReplicas": 0, "unavailableReplicas": 0}
    shard_statuses = []
    parts = []
    for shard in range(shards):
        sts = statefulsets.get(shard)
        counts = statefulset_counts(sts)
        for k, v in counts.items():
            totals[k] += v
        shard_statuses.append({"shardID": str(shard), **counts})
        sts_name = f"prometheus-{name}" + (f"-shard-{shard}" if shard else "")
        parts.append(_shard_availability(sts_name, sts, expected))
    available = condition(AVAILABLE, *combined_availability(parts), generation, now)
    if error:
        reconciled = condition(RECONCILED, "False", reconciled_reason or "ReconciliationFailed", error, generation, now)
    else:
        reconciled = condition(RECONCILED, "True", reconciled_reason, reconciled_message, generation, now)
    conditions = [available, reconciled]
    if reload_mode is not None:
        fast, reason, message = reload_mode
        conditions.append(condition(FAST_RELOAD, "True" if fast else "False", reason, message, generation, now))
    old = ((prometheus.get("status") or {}).get("conditions")) or []
    return {
        "paused": bool(spec.get("paused", False)),
        **totals,
        "conditions": keep_transition_times(old, conditions),
        "shardStatuses": shard_statuses,
        "shards": shards,
        "selector": pod_selector(name),
    }


def status_changed(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """True when writing `desired` would change the stored status."""
    current = current or {}
    return any(current.get(k) != v for k, v in desired.items())
