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
