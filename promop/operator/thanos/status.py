"""The ThanosRuler status (pure): replicas from its StatefulSet, Available and Reconciled conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from promop.operator.status import AVAILABLE, RECONCILED, condition, keep_transition_times


def pod_selector(name: str) -> str:
    labels = {"thanos-ruler": name, "app.kubernetes.io/instance": name,
              "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": "thanos-ruler"}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _expected(spec: Mapping[str, Any]) -> int:
    value = spec.get("replicas")
    return value if isinstance(value, int) and value >= 0 else 1


def ruler_status(ruler: Mapping[str, Any], sts: Mapping[str, Any] | None, *, error: str | None, now: str) -> dict:
    """What status should say: pods from the StatefulSet, Reconciled False with the reason on an error."""
    md = ruler.get("metadata") or {}
    spec = ruler.get("spec") or {}
    generation = int(md.get("generation") or 0)
    st = (sts or {}).get("status") or {}
    total = int(st.get("replicas") or 0)
    available = int(st.get("availableReplicas", st.get("readyReplicas")) or 0)
    expected = _expected(spec)
    name = f"thanos-ruler-{md.get('name')}"
    if sts is None:
        avail = condition(AVAILABLE, "False", "StatefulSetNotFound", f"StatefulSet {name} not found", generation, now)
    elif expected > 0 and available == 0:
        avail = condition(AVAILABLE, "False", "NoPodReady", f"0/{expected} pods ready", generation, now)
    elif available < expected:
        avail = condition(AVAILABLE, "Degraded", "SomePodsNotReady", f"{available}/{expected} pods ready",
                          generation, now)
    else:
        avail = condition(AVAILABLE, "True", "", "", generation, now)
    if error:
        rec = condition(RECONCILED, "False", "ReconciliationFailed", error, generation, now)
    else:
        rec = condition(RECONCILED, "True", "", "", generation, now)
    old = ((ruler.get("status") or {}).get("conditions")) or []
    return {
        "paused": bool(spec.get("paused", False)),
        "replicas": total,
        "updatedReplicas": int(st.get("updatedReplicas") or 0),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total - available),
        "selector": pod_selector(md.get("name", "")),
        "conditions": keep_transition_times(old, [avail, rec]),
    }
