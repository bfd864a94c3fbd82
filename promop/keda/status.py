"""KEDA's ScaledObject conditions (§1.4): types, reasons and messages, and the HPAActive mapping.

Why pure: the scale loop, the reconcile and `promop keda explain` write and read the same condition
set; KEDA's conditions carry type/status/reason/message only (no transition times).
"""

from __future__ import annotations

READY, ACTIVE, FALLBACK, PAUSED, HPA_ACTIVE = "Ready", "Active", "Fallback", "Paused", "HPAActive"

# (status, reason, message) as KEDA writes them
READY_OK = ("True", "ScaledObjectReady", "ScaledObject is defined correctly and is ready for scaling")
READY_TRIGGER_ERROR = ("False", "TriggerError", "Triggers defined in ScaledObject are not working correctly")
READY_PARTIAL_ERROR = ("Unknown", "PartialTriggerError", "Some triggers defined in ScaledObject are not working correctly")
ACTIVE_TRUE = ("True", "ScalerActive", "Scaling is performed because triggers are active")
ACTIVE_FORCED = ("True", "ScalerActive", "Scaling is performed because activation is being forced by annotation")
ACTIVE_FALSE = ("False", "ScalerNotActive", "Scaling is not performed because triggers are not active")
ACTIVE_COOLDOWN = ("False", "ScalerCooldown", "Scaler cooling down because triggers are not active")
ACTIVE_UNKNOWN = ("Unknown", "UnknownState", "")
FALLBACK_TRUE = ("True", "FallbackExists", "At least one trigger is falling back on this scaled object")
FALLBACK_FALSE = ("False", "NoFallbackFound", "No fallbacks are active on this scaled object")
PAUSED_TRUE = ("True", "ScaledObjectPaused", "ScaledObject is paused")
PAUSED_FALSE = ("False", "ScaledObjectUnpaused", "pause annotation removed for ScaledObject")
HPA_ACTIVE_TRUE = ("True", "HPAActive", "HPA is actively scaling")


def ready_check_failed(message: str, error: str) -> tuple[str, str, str]:
    """Ready=False ScaledObjectCheckFailed "<msg>: <err>" (a reconcile error)."""
    return ("False", "ScaledObjectCheckFailed", f"{message}: {error}" if error else message)


def initial_conditions() -> list[dict]:
    """Ready, Active and Fallback Unknown, Paused False (GetInitializedConditions); HPAActive comes later."""
    return [{"type": READY, "status": "Unknown"}, {"type": ACTIVE, "status": "Unknown"},
            {"type": FALLBACK, "status": "Unknown"}, {"type": PAUSED, "status": "False"}]


def are_initialized(conditions: list[dict] | None) -> bool:
    """KEDA's AreInitialized: all of Ready, Active, Fallback and Paused present (HPAActive is not required)."""
    present = {c.get("type") for c in conditions or []}
    return {READY, ACTIVE, FALLBACK, PAUSED} <= present


def get_condition(conditions: list[dict] | None, type_: str) -> dict | None:
    return next((c for c in conditions or [] if c.get("type") == type_), None)


def set_condition(conditions: list[dict] | None, type_: str, status: str, reason: str = "",
                  message: str = "") -> list[dict]:
    """A new condition list with `type_` set (replaced where it is, appended if missing). Empty reason and
    message are left out, as Go's omitempty leaves them."""
    entry = {"type": type_, "status": status}
    if reason:
        entry["reason"] = reason
    if message:
        entry["message"] = message
    out = [dict(c) for c in conditions or []]
    for i, c in enumerate(out):
        if c.get("type") == type_:
            out[i] = entry
            return out
    out.append(entry)
    return out


def set_triple(conditions: list[dict] | None, type_: str, triple: tuple[str, str, str]) -> list[dict]:
    return set_condition(conditions, type_, *triple)


def hpa_active_condition(hpa: dict | None) -> tuple[str, str, str] | None:
    """HPAActive (KEDA >= 2.20.2) from the HPA's ScalingActive condition: True HPAActive while it scales;
    True ScalingDisabled (the HPA's message) when the target is at 0 replicas; False with the HPA's reason
    and "HPA is not actively scaling: <msg>" otherwise (HPAMetricsUnavailable if it gave no reason).
    None when the HPA or its ScalingActive condition is not there: the condition is left as it is."""
    if not hpa:
        return None
    cond = next((c for c in (hpa.get("status") or {}).get("conditions") or [] if c.get("type") == "ScalingActive"), None)
    if cond is None:
        return None
    reason, message = cond.get("reason") or "", cond.get("message") or ""
    if cond.get("status") == "True":
        return HPA_ACTIVE_TRUE
    if reason == "ScalingDisabled":
        return ("True", "ScalingDisabled", message)
    return ("False", reason or "HPAMetricsUnavailable", f"HPA is not actively scaling: {message}")


READY_HPA_NOT_WORKING = "HPANotWorking"


def hpa_not_working(hpa: dict | None, namespace: str, name: str) -> tuple[str, str, str] | None:
    """promop's addition on top of KEDA (issue 31, "Ready reflects a broken HPA"): Ready=False
    HPANotWorking when the owned HPA says it cannot scale: ScalingActive=False for any reason but
    ScalingDisabled (the target is at 0 replicas, KEDA's own doing: making that not-Ready was KEDA's
    #7669 Argo CD false-Degraded regression), or AbleToScale=False. The HPA's reason and message are
    passed through so the user sees what kube-controller-manager sees. None when the HPA is fine or
    not (yet) there: Ready is then KEDA's."""
    if not hpa:
        return None
    for c in (hpa.get("status") or {}).get("conditions") or []:
        kind, reason = c.get("type"), c.get("reason") or ""
        if c.get("status") != "False" or kind not in ("ScalingActive", "AbleToScale"):
            continue
        if kind == "ScalingActive" and reason == "ScalingDisabled":
            continue
        return ("False", READY_HPA_NOT_WORKING, f"HPA {namespace}/{name} is not working: {kind}=False "
                f"{reason or 'NoReason'}: {c.get('message') or ''}".rstrip(": "))
    return None


def ready_with_hpa(conditions: list[dict] | None, hpa: dict | None, namespace: str, name: str) -> list[dict]:
    """KEDA's Ready, except that a Ready=True is turned into Ready=False HPANotWorking while the HPA is
    broken (a trigger error or a check failure, already False/Unknown, keeps KEDA's more precise reason).
    Recovery needs nothing: KEDA presets Ready=True on every poll."""
    broken = hpa_not_working(hpa, namespace, name)
    if broken is None or (get_condition(conditions, READY) or {}).get("status") != "True":
        return list(conditions or [])
    return set_triple(conditions, READY, broken)


def with_hpa(conditions: list[dict] | None, hpa: dict | None, namespace: str, name: str) -> list[dict]:
    """HPAActive mirrored from the HPA and Ready turned HPANotWorking from the same HPA, together: every
    writer of the conditions (the scale loop, the reconcile) goes through here, so a Ready=False
    HPANotWorking never stands beside a missing or stale HPAActive that says otherwise."""
    active = hpa_active_condition(hpa)
    if active is not None:
        conditions = set_triple(conditions, HPA_ACTIVE, active)
    return ready_with_hpa(conditions, hpa, namespace, name)
