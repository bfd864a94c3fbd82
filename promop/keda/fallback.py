"""KEDA's fallback (§2.6, `pkg/fallback/fallback.go`): health counting and the value served instead.

Why pure: the scale loop and the metrics path both count failures through the same function (so a
failing trigger accrues failures at their combined rate, as in KEDA), and both must agree on when
fallback starts (strictly more than failureThreshold consecutive failures) and what it serves.
"""

from __future__ import annotations

import re

from promop.keda.spec import ScaledObject

HAPPY = "Happy"
FAILING = "Failing"


class FallbackError(Exception):
    """Fallback cannot produce a value (Value metric type with no ready pod)."""


def record_health(health: dict | None, metric: str, ok: bool) -> dict:
    """status.health after one evaluation of `metric`: success resets it to {0, Happy}, a failure adds one
    to numberOfFailures and marks it Failing. Returns a new dict; the input is not changed."""
    out = {name: dict(entry) for name, entry in (health or {}).items()}
    if ok:
        out[metric] = {"numberOfFailures": 0, "status": HAPPY}
    else:
        before = (out.get(metric) or {}).get("numberOfFailures") or 0
        out[metric] = {"numberOfFailures": before + 1, "status": FAILING}
    return out


def fallback_active(health: dict | None, metric: str, threshold: int) -> bool:
    """Fallback serves `metric` once it failed more than `threshold` times in a row (strict >)."""
    entry = (health or {}).get(metric) or {}
    return entry.get("status") == FAILING and (entry.get("numberOfFailures") or 0) > threshold


def any_fallback_active(health: dict | None, threshold: int) -> bool:
    """The Fallback condition: some health entry is Failing with more than `threshold` failures."""
    return any(fallback_active(health, metric, threshold) for metric in (health or {}))


def fallback_replicas(behavior: str, replicas: int, current: int) -> int:
    """The replica count fallback aims at: `static` -> replicas, `currentReplicas` -> current,
    `currentReplicasIfHigher` -> max(current, replicas), `currentReplicasIfLower` -> min(current, replicas).
    (`scalingModifiers` aims at `replicas`; see fallback_value_for_formula.)"""
    if behavior == "currentReplicas":
        return current
    if behavior == "currentReplicasIfHigher":
        return max(current, replicas)
    if behavior == "currentReplicasIfLower":
        return min(current, replicas)
    return replicas


def fallback_value(target: float, metric_type: str, replicas: int, ready_pods: int | None = None) -> float:
    """The metric value fallback serves so that the HPA computes `replicas`: target x replicas for
    AverageValue, target x replicas / readyPods for Value (FallbackError with no ready pod)."""
    if metric_type == "Value":
        if not ready_pods:
            raise FallbackError("fallback for a Value metric needs at least one ready pod of the scale target; "
                                "none is Running and Ready")
        return target * replicas / ready_pods
    return target * replicas


def fallback_enabled(so: ScaledObject, metric_type: str) -> bool:
    """KEDA's isFallbackEnabled + HasValidFallback: fallback is set, both numbers >= 0, the metric is an
    AverageValue or Value external metric, and with scalingModifiers the target is a positive integer."""
    fb = so.fallback
    if fb is None or fb.failure_threshold < 0 or fb.replicas < 0:
        return False
    if metric_type not in ("AverageValue", "Value"):
        return False
    if so.using_modifiers:
        target = so.scaling_modifiers.target
        return re.fullmatch(r"[+-]?[0-9]+", target) is not None and int(target) > 0   # Go's strconv.Atoi
    return True


def health_tracked(so: ScaledObject) -> bool:
    """KEDA counts health only with a valid fallback: thresholds >= 0 and, with modifiers, an integer target > 0."""
    return so.fallback is not None and fallback_enabled(so, "AverageValue")


def modifiers_fallback_value(composite: float | None, so: ScaledObject) -> float:
    """`fallback.behavior: scalingModifiers` (KEDA 2.20): failing triggers are nil in the formula; when the
    formula itself yields nil, the composite metric is fallback.replicas x the modifiers' target."""
    if composite is not None:
        return composite
    try:
        target = float(so.scaling_modifiers.target) if so.scaling_modifiers else 0.0
    except ValueError:
        target = 0.0
    return (so.fallback.replicas if so.fallback else 0) * target
