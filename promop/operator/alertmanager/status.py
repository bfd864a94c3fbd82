"""The Alertmanager status and the per-AlertmanagerConfig `status.bindings` (pure)."""

from __future__ import annotations

from typing import Any, Mapping

from promop.operator.status import keep_transition_times
from promop.operator.workload import status as workload_status
from promop.render.alertmanager.statefulset import replicas
from promop.render.model import MONITORING_GROUP

ACCEPTED = "Accepted"
APP = "alertmanager"


def pod_selector(name: str) -> str:
    return workload_status.pod_selector(APP, name)


def alertmanager_status(am: Mapping[str, Any], sts: Mapping[str, Any] | None, *, error: str | None,
                        reconciled_reason: str = "", reconciled_message: str = "", now: str) -> dict:
    """What status should say: pods from the StatefulSet, Reconciled False with the reason on an error."""
    return workload_status.statefulset_status(am, sts, app=APP, expected=replicas(am.get("spec") or {}), error=error,
                                              reconciled_reason=reconciled_reason,
                                              reconciled_message=reconciled_message, now=now)


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

