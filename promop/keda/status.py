"""KEDA's ScaledObject conditions (§1.4): types, reasons and messages, and the HPAActive mapping.

Why pure: the scale loop, the reconcile and `promop keda explain` write and read the same condition
set; KEDA's conditions carry type/status/reason/message only (no transition times).
"""

from __future__ import annotations

READY, ACTIVE, FALLBACK, PAUSED, HPA_ACTIVE = "Ready", "Active", "Fallback", "Paused", "HPAActive"


def initial_conditions() -> list[dict]:
    """Ready, Active and Fallback Unknown, Paused False (GetInitializedConditions)."""
    raise NotImplementedError


def set_condition(conditions: list[dict], type_: str, status: str, reason: str = "", message: str = "") -> list[dict]:
    """A new condition list with `type_` set (appended if missing, in place otherwise)."""
    raise NotImplementedError


def get_condition(conditions: list[dict], type_: str) -> dict | None:
    raise NotImplementedError


def hpa_active_condition(hpa: dict | None) -> dict | None:
    """HPAActive from the HPA's ScalingActive condition; None when the HPA cannot be read (left untouched)."""
    raise NotImplementedError
