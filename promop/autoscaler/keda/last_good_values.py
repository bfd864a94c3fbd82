"""The last good values of a ScaledObject's triggers, kept for both paths (promop.keda.lastgood).

The scale loop and the metrics path both evaluate triggers; both record a success (the new last
good value) and a failure (the failing streak) here, under the state's lock, and ask here whether
the last good value stands in for a failure now. The first time it does in a streak, one log line
says so; `promop keda explain` reads `views`.
"""

from __future__ import annotations

import logging
from datetime import datetime

from promop.host.logs import fields
from promop.keda import lastgood
from promop.keda.decide import TriggerResult

from promop.autoscaler.keda.state import SOState
from promop.autoscaler.keda.triggers import BuiltTrigger

log = logging.getLogger("promop.autoscaler.keda")


def note_success(state: SOState, built: BuiltTrigger, value: float, now: datetime) -> None:
    """Keep `value` as the trigger's last good value (activity on the raw value, as the loop's)."""
    if state.so.fallback is None:
        return          # without fallback nothing stands in for an error (KEDA's behaviour)
    p = built.prometheus
    active = p is not None and value > p.activation_threshold
    with state.lock:
        before = state.last_good.get(built.metric_name)
        state.last_good[built.metric_name] = lastgood.after_success(value, active, now, built.key)
    if before is not None and before.served_since is not None:
        log.info("trigger recovered: its own value is served again",
                 **fields(scaledobject=state.key, metric=built.metric_name, value=value))


def note_failure(state: SOState, built: BuiltTrigger, now: datetime, path: str) -> lastgood.LastGood | None:
    """Record a failed evaluation; the last good value to serve in its place now, or None. The
    caller has counted the failure in status.health already (so fallback activation is current)."""
    metric = built.metric_name
    with state.lock:
        last = lastgood.after_failure(state.last_good.get(metric), now)
        if last is None:
            return None
        state.last_good[metric] = last
        use = lastgood.usable(state.so, built.spec.effective_metric_type, state.health, metric, last,
                              state.polling_interval, now, built.key)
        if use is None:
            return None
        first = use.served_since is None
        use = state.last_good[metric] = lastgood.mark_served(use, now)
        failures = (state.health.get(metric) or {}).get("numberOfFailures") or 0
    if first:
        fb = state.so.fallback
        log.warning("trigger failing: serving its last good value until fallback is active",
                    **fields(scaledobject=state.key, metric=metric, value=use.value, active=use.active,
                             last_good_at=use.at.isoformat(), failing_since=(use.failing_since or now).isoformat(),
                             failures=failures, failure_threshold=fb.failure_threshold if fb else None, path=path))
    return use


def views(state: SOState, now: datetime) -> dict:
    """metric -> what explain shows of each failing trigger's last good value, with `serving`: whether
    the HPA is served it now (False once fallback is active or the value is too old)."""
    fb = state.so.fallback
    if fb is None:
        return {}
    with state.lock:
        items = [(m, last) for m, last in state.last_good.items() if last.failing_since is not None]
        health = dict(state.health)
    out = {}
    for metric, last in items:
        built = state.trigger_for(metric)
        entry = lastgood.view(last, health, metric, fb.failure_threshold, state.polling_interval)
        entry["serving"] = built is not None and lastgood.usable(
            state.so, built.spec.effective_metric_type, health, metric, last, state.polling_interval, now,
            built.key) is not None
        out[metric] = entry
    return out


def stand_in_activity(state: SOState, built: BuiltTrigger, result: TriggerResult, now: datetime) -> None:
    """The scale loop's side: record the poll's result; a failing trigger whose last good value is
    served takes that value's activity (the HPA is told that value, so the loop agrees with it), and
    stays an error (KEDA's table: errors never scale to zero; active with an error is
    PartialTriggerError)."""
    if result.error is None:
        if result.value is not None:
            note_success(state, built, result.value, now)
        return
    last = note_failure(state, built, now, "loop")
    if last is not None:
        result.active = last.active
        result.last_good = True
