"""The Alertmanager status and the per-AlertmanagerConfig `status.bindings` (pure)."""

from __future__ import annotations

from typing import Any, Mapping

from promop.operator.status import AVAILABLE, RECONCILED, condition, keep_transition_times
from promop.render.alertmanager.statefulset import replicas
from promop.render.model import MONITORING_GROUP

ACCEPTED = "Accepted"


def pod_selector(name: str) -> str:
    labels = {"alertmanager": name, "app.kubernetes.io/instance": name,
              "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": "alertmanager"}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def alertmanager_status(am: Mapping[str, Any], sts: Mapping[str, Any] | None, *, error: str | None,
                        reconciled_reason: str = "", reconciled_message: str = "", now: str) -> dict:
    md = am.get("metadata") or {}
    spec = am.get("spec") or {}
    generation = int(md.get("generation") or 0)
    st = (sts or {}).get("status") or {}
    total = int(st.get("replicas") or 0)
    available = int(st.get("availableReplicas", st.get("readyReplicas")) or 0)
    expected = replicas(spec)
    name = f"alertmanager-{md.get('name')}"
    if sts is None:
        avail = condition(AVAILABLE, "False", "StatefulSetNotFound", f"StatefulSet {name} not found", generation, now)
    elif expected > 0 and available == 0:
        avail = condition(AVAILABLE, "False", "NoPodReady", f"0/{expected} pods ready", generation, now)
    elif available < expected:
        avail = condition(AVAILABLE, "Degraded", "SomePodsNotReady", f"{available}/{expected} pods ready", generation, now)
    else:
        avail = condition(AVAILABLE, "True", "", "", generation, now)
    if error:
        rec = condition(RECONCILED, "False", "ReconciliationFailed", error, generation, now)
    else:
        rec = condition(RECONCILED, "True", reconciled_reason, reconciled_message, generation, now)
    old = ((am.get("status") or {}).get("conditions")) or []
    return {
        "paused": bool(spec.get("paused", False)),
        "replicas": total,
        "updatedReplicas": int(st.get("updatedReplicas") or 0),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total - available),
        "selector": pod_selector(md.get("name", "")),
        "conditions": keep_transition_times(old, [avail, rec]),
    }


def _is_for(binding: Mapping[str, Any], am: Mapping[str, Any]) -> bool:
    md = am["metadata"]
    return (binding.get("resource") == "alertmanagers" and binding.get("group") == MONITORING_GROUP
            and binding.get("namespace") == md.get("namespace") and binding.get("name") == md.get("name"))


def desired_bindings(obj: Mapping[str, Any], am: Mapping[str, Any], verdict: tuple[bool, str] | None,
                     now: str) -> list[dict]:
    """`obj`'s status.bindings once `am` says `verdict` ((accepted, message), None: not selected).
    Other Alertmanagers' bindings are kept in place."""
    current = list(((obj.get("status") or {}).get("bindings")) or [])
    ours = next((b for b in current if _is_for(b, am)), None)
    if verdict is None:
        return [b for b in current if not _is_for(b, am)]
    accepted, message = verdict
    md = am["metadata"]
    cond = {"type": ACCEPTED, "status": "True" if accepted else "False",
            "reason": "" if accepted else "InvalidConfiguration", "message": message,
            "observedGeneration": int((obj.get("metadata") or {}).get("generation") or 0), "lastTransitionTime": now}
    binding = {"group": MONITORING_GROUP, "resource": "alertmanagers", "name": md["name"],
               "namespace": md["namespace"], "conditions": keep_transition_times((ours or {}).get("conditions"), [cond])}
    if ours is None:
        return [*current, binding]
    return [binding if _is_for(b, am) else b for b in current]


def status_changed(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    current = current or {}
    return any(current.get(k) != v for k, v in desired.items())
