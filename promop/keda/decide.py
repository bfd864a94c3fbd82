"""One poll of KEDA's scale loop (§2.4/§2.5: RequestScale), pure.

Why pure: the timing rules (cooldown, initialCooldownPeriod, lastActiveTime) and the first-match
table are where a drop-in is judged; here they are one function of the inputs and `now`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from promop.keda import status as st
from promop.keda.quantities import milli_value_of
from promop.keda.spec import COMPOSITE_METRIC, PauseState, ScaledObject


@dataclass(slots=True)
class TriggerResult:
    """One trigger's outcome in this poll."""
    metric_name: str               # s0-prometheus, or cpu/memory for resource triggers
    trigger_name: str = ""         # spec.triggers[].name (formula variable), "" if unnamed
    value: float | None = None     # the raw value (before clamping); None on error / resource trigger
    active: bool = False           # value > activationThreshold
    error: str | None = None       # the error text when the query failed
    is_resource: bool = False      # cpu/memory: always active, no value
    fallback_active: bool = False  # health says fallback serves this metric (counts as active)
    last_good: bool = False        # failing, its last good value stands in (active = that value's; promop.keda.lastgood)


@dataclass(slots=True)
class Event:
    type: str                      # Normal | Warning
    reason: str
    message: str


@dataclass(slots=True)
class Decision:
    scale_to: int | None = None                  # set the target's replicas to this (None: leave it)
    last_active_time: datetime | None = None     # the new status.lastActiveTime
    conditions: list[dict] = field(default_factory=list)  # the new status.conditions
    events: list[Event] = field(default_factory=list)
    is_active: bool = False
    is_error: bool = False
    active_metrics: list[str] = field(default_factory=list)
    triggers_activity: dict[str, dict] = field(default_factory=dict)   # status.triggersActivity
    failure_event: Event | None = None           # emit this instead of the scaling event if the scale fails
    composite_value: float | None = None         # scalingModifiers: the formula's value this poll


def _parse_go_float(text: str, default: float) -> float:
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        return default


def composite_value(so: ScaledObject, results: list[TriggerResult]) -> float | None:
    """scalingModifiers' formula over the named triggers' values (served values: clamped, milli-rounded);
    a failing trigger is nil. None when the formula gives nil or cannot be evaluated."""
    from promop.keda.formula import FormulaError, compile_formula
    values = {r.trigger_name: (None if r.error or r.value is None else milli_value_of(r.value) / 1000)
              for r in results if r.trigger_name and not r.is_resource}
    try:
        return compile_formula(so.scaling_modifiers.formula).evaluate(values)
    except FormulaError:
        return None


def activity(so: ScaledObject, pause: PauseState, results: list[TriggerResult]) -> tuple[bool, bool, list[str], float | None]:
    """(isActive, isError, activeTriggers, composite) as KEDA's getScaledObjectState collects them: a trigger
    is active above its activation threshold or while its fallback serves (#7239); an all-cpu/memory
    ScaledObject is always active; with scalingModifiers activity is `composite > activationTarget`, false
    on any error; force-activation makes it active."""
    is_error = any(r.error and not r.fallback_active for r in results)
    active = [r.metric_name for r in results if not r.is_resource and (r.active or r.fallback_active)]
    is_active = bool(active) or (bool(results) and all(r.is_resource for r in results))
    composite = None
    if so.using_modifiers and so.scaling_modifiers.formula:
        composite = composite_value(so, results)
        threshold = _parse_go_float(so.scaling_modifiers.activation_target, 0.0)
        is_active = composite is not None and not any(r.error for r in results) and composite > threshold
        active = [COMPOSITE_METRIC] if is_active else []
    if pause.force_activation:
        is_active = True
    return is_active, is_error, active, composite


def scale_to_zero_allowed(so: ScaledObject, last_active_time: datetime | None, creation_time: datetime | None,
                          now: datetime) -> bool:
    """§2.5: without lastActiveTime, after creation + initialCooldownPeriod; else after lastActiveTime +
    cooldownPeriod (both strictly before now)."""
    if last_active_time is None:
        return creation_time is None or creation_time + timedelta(seconds=so.initial_cooldown_period) < now
    return last_active_time + timedelta(seconds=so.cooldown_period) < now


def decide(so: ScaledObject, pause: PauseState, current_replicas: int, results: list[TriggerResult],
           last_active_time: datetime | None, creation_time: datetime | None, now: datetime,
           conditions: list[dict] | None = None, scale_target_kind: str = "") -> Decision:
    """KEDA's RequestScale for one poll (§2.4, first match wins). `conditions` are the current
    status.conditions; `scale_target_kind` is status.scaleTargetKind (e.g. apps/v1.Deployment) for the
    event messages. The caller applies `scale_to`, then emits `events` (or `failure_event` if it failed)."""
    d = Decision(last_active_time=last_active_time, conditions=[dict(c) for c in conditions or st.initial_conditions()])
    if pause.stops_loop:
        d.conditions = st.set_triple(d.conditions, st.PAUSED, st.PAUSED_TRUE)
        return d
    d.is_active, d.is_error, d.active_metrics, d.composite_value = activity(so, pause, results)
    d.triggers_activity = {r.metric_name: {"isActive": bool(r.active or r.fallback_active or r.is_resource)}
                           for r in results}
    _pause_and_fallback_conditions(d, so, pause, results)
    if not d.is_error:
        d.conditions = st.set_triple(d.conditions, st.READY, st.READY_OK)
    if d.is_active:
        _active(d, so, pause, current_replicas, now, scale_target_kind)
    else:
        _inactive(d, so, pause, current_replicas, last_active_time, creation_time, now, scale_target_kind)
    return d


def _pause_and_fallback_conditions(d: Decision, so: ScaledObject, pause: PauseState, results: list[TriggerResult]) -> None:
    paused = st.get_condition(d.conditions, st.PAUSED) or {}
    if pause.any and paused.get("status") != "True":
        d.conditions = st.set_triple(d.conditions, st.PAUSED, st.PAUSED_TRUE)
    elif not pause.any and paused.get("status") == "True":
        d.conditions = st.set_triple(d.conditions, st.PAUSED, st.PAUSED_FALSE)
    before = (st.get_condition(d.conditions, st.FALLBACK) or {}).get("status")
    falling = any(r.fallback_active for r in results)
    d.conditions = st.set_triple(d.conditions, st.FALLBACK, st.FALLBACK_TRUE if falling else st.FALLBACK_FALSE)
    if falling and before != "True":
        d.events.append(Event("Warning", "ScaledObjectFallbackActivated", st.FALLBACK_TRUE[2]))
    elif not falling and before == "True":
        d.events.append(Event("Normal", "ScaledObjectFallbackDeactivated", st.FALLBACK_FALSE[2]))


def _active(d: Decision, so: ScaledObject, pause: PauseState, current: int, now: datetime, kind: str) -> None:
    active_msg = st.ACTIVE_FORCED if pause.force_activation else st.ACTIVE_TRUE
    if (so.idle_replica_count is not None and current < so.min_replicas) or current == 0:
        target = so.min_replicas if so.min_replicas > 0 else 1
        if pause.scale_out:
            d.last_active_time = now
            d.conditions = st.set_triple(d.conditions, st.ACTIVE, active_msg)
            return
        d.scale_to = target
        d.last_active_time = now
        d.conditions = st.set_triple(d.conditions, st.ACTIVE, active_msg)
        ref = f"{kind} {so.namespace}/{so.target.name}"
        d.events.append(Event("Normal", "KEDAScaleTargetActivated",
                              f"Scaled {ref} from {current} to {target}, triggered by {';'.join(d.active_metrics)}"))
        d.failure_event = Event("Warning", "KEDAScaleTargetActivationFailed",
                                f"Failed to scaled {ref} from {current} to {target}")
    elif d.is_error:
        d.conditions = st.set_triple(d.conditions, st.READY, st.READY_PARTIAL_ERROR)
    else:
        d.last_active_time = now
        d.conditions = st.set_triple(d.conditions, st.ACTIVE, active_msg)


def _inactive(d: Decision, so: ScaledObject, pause: PauseState, current: int, last_active: datetime | None,
              created: datetime | None, now: datetime, kind: str) -> None:
    idle = so.idle_replica_count
    if d.is_error and so.fallback is not None and so.fallback.replicas != 0:
        return      # the HPA gets fallback metrics once failureThreshold is passed
    if d.is_error and so.fallback is None:
        d.conditions = st.set_triple(d.conditions, st.READY, st.READY_TRIGGER_ERROR)
        return      # errors never scale to zero
    if (idle is not None and current > idle) or (current > 0 and so.min_replicas == 0):
        if not scale_to_zero_allowed(so, last_active, created, now):
            d.conditions = st.set_triple(d.conditions, st.ACTIVE, st.ACTIVE_COOLDOWN)
            return
        if pause.scale_in:
            d.conditions = st.set_triple(d.conditions, st.ACTIVE, st.ACTIVE_FALSE)
            return
        target = idle if idle is not None else so.min_replicas
        ref = f"{kind} {so.namespace}/{so.target.name}"
        d.scale_to = target
        d.conditions = st.set_triple(d.conditions, st.ACTIVE, st.ACTIVE_FALSE)
        d.events.append(Event("Normal", "KEDAScaleTargetDeactivated", f"Deactivated {ref} from {current} to {target}"))
        d.failure_event = Event("Warning", "KEDAScaleTargetDeactivationFailed", f"Failed to deactivated {ref}")
    elif idle is None and current < so.min_replicas:
        d.scale_to = so.min_replicas
    else:
        d.conditions = st.set_triple(d.conditions, st.ACTIVE, st.ACTIVE_FALSE)
