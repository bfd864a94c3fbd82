"""Upstream's normalization of a desired replica count (`horizontal.go`), pure.

Without `behavior`: stabilize over the downscale window, then clamp to
[min, min(max, max(2 x current, 4))]. With `behavior`: per-direction
stabilization windows, then Pods/Percent rate limits over the recorded scale
events. The controller's memory (`History`) is an argument and the updated
memory part of the result; `now` is an argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promop.autoscale.calculator import MAX_INT32, MIN_INT32, go_ceil_int32, go_trunc_int32
from promop.autoscale.model import History, ScaleEvent, TimedRecommendation

SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0


@dataclass(slots=True)
class Policy:
    type: str          # Pods | Percent
    value: int
    period_seconds: int


@dataclass(slots=True)
class ScalingRules:
    stabilization_window_seconds: int | None
    select_policy: str = "Max"          # Max | Min | Disabled
    policies: list[Policy] = field(default_factory=list)
    tolerance: float | None = None


@dataclass(slots=True)
class Behavior:
    scale_up: ScalingRules
    scale_down: ScalingRules


def default_scale_up() -> ScalingRules:
    return ScalingRules(0, "Max", [Policy("Pods", 4, 15), Policy("Percent", 100, 15)])


def default_scale_down() -> ScalingRules:
    return ScalingRules(None, "Max", [Policy("Percent", 100, 15)])


@dataclass(slots=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str

    def as_dict(self) -> dict:
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message}


@dataclass(slots=True)
class Normalized:
    desired: int
    stabilized: int
    able_to_scale: Condition
    scaling_limited: Condition


def record_initial_recommendation(history: History, current: int, now: float) -> None:
    """`recordInitialRecommendation`: on a first pass, the current size counts as a recommendation."""
    if history.recommendations is None:
        history.recommendations = [TimedRecommendation(now, current)]


def _record(history: History, desired: int, now: float, old_index: int | None) -> None:
    recs = history.recommendations if history.recommendations is not None else []
    history.recommendations = recs
    if old_index is not None:
        recs[old_index] = TimedRecommendation(now, desired)
    else:
        recs.append(TimedRecommendation(now, desired))


def stabilize(history: History, desired: int, now: float, window: float) -> int:
    """`stabilizeRecommendation` (no behavior): the max over the window; records `desired`."""
    best = desired
    old_index = None
    cutoff = now - window
    for i, rec in enumerate(history.recommendations or ()):
        if rec.time < cutoff:
            old_index = i
        elif rec.replicas > best:
            best = rec.replicas
    _record(history, desired, now, old_index)
    return best


def scale_up_limit(current: int) -> int:
    """`calculateScaleUpLimit`: max(2 x current, 4)."""
    return int(max(SCALE_UP_LIMIT_FACTOR * float(current), SCALE_UP_LIMIT_MINIMUM))


def convert_with_rules(current: int, desired: int, min_replicas: int, max_replicas: int) -> tuple[int, str, str]:
    """`convertDesiredReplicasWithRules`: the clamp of the legacy path."""
    limit = scale_up_limit(current)
    if max_replicas > limit:
        maximum, reason, message = limit, "ScaleUpLimit", \
            "the desired replica count is increasing faster than the maximum scale rate"
    else:
        maximum, reason, message = max_replicas, "TooManyReplicas", \
            "the desired replica count is more than the maximum replica count"
    if desired < min_replicas:
        return min_replicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
    if desired > maximum:
        return maximum, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def normalize(history: History, current: int, desired: int, min_replicas: int, max_replicas: int,
              now: float, window: float) -> Normalized:
    """`normalizeDesiredReplicas`: the path without `behavior`."""
    stabilized = stabilize(history, desired, now, window)
    if stabilized != desired:
        able = Condition("AbleToScale", "True", "ScaleDownStabilized",
                         "recent recommendations were higher than current one, applying the highest recent "
                         "recommendation")
    else:
        able = Condition("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
    result, reason, message = convert_with_rules(current, stabilized, min_replicas, max_replicas)
    limited = Condition("ScalingLimited", "False" if result == stabilized else "True", reason, message)
    return Normalized(result, stabilized, able, limited)


def stabilize_with_behaviors(history: History, current: int, desired: int, behavior: Behavior,
                             now: float) -> tuple[int, str, str]:
    """`stabilizeRecommendationWithBehaviors`: up = min and down = max over their windows."""
    up = desired
    up_cutoff = now - float(behavior.scale_up.stabilization_window_seconds or 0)
    down = desired
    down_cutoff = now - float(behavior.scale_down.stabilization_window_seconds or 0)
    old_index = None
    for i, rec in enumerate(history.recommendations or ()):
        if rec.time > up_cutoff:
            up = min(rec.replicas, up)
        if rec.time > down_cutoff:
            down = max(rec.replicas, down)
        if rec.time < up_cutoff and rec.time < down_cutoff:
            old_index = i
    recommendation = current
    if recommendation < up:
        recommendation = up
    if recommendation > down:
        recommendation = down
    _record(history, desired, now, old_index)
    if desired >= current:
        return recommendation, "ScaleUpStabilized", \
            "recent recommendations were lower than current one, applying the lowest recent recommendation"
    return recommendation, "ScaleDownStabilized", \
        "recent recommendations were higher than current one, applying the highest recent recommendation"


def replicas_change_per_period(period_seconds: int, events: list[ScaleEvent], now: float) -> int:
    """`getReplicasChangePerPeriod`: the sum of |change| of events newer than the period."""
    cutoff = now - float(period_seconds)
    return sum(e.replicas for e in events if e.time > cutoff)


def scale_up_limit_with_rules(current: int, up_events: list[ScaleEvent], down_events: list[ScaleEvent],
                              rules: ScalingRules, now: float) -> int:
    """`calculateScaleUpLimitWithScalingRules`."""
    if rules.select_policy == "Disabled":
        return current
    if rules.select_policy == "Min":
        result, pick = MAX_INT32, min
    else:
        result, pick = MIN_INT32, max
    for policy in rules.policies:
        start = (current - replicas_change_per_period(policy.period_seconds, up_events, now)
                 + replicas_change_per_period(policy.period_seconds, down_events, now))
        if policy.type == "Pods":
            proposed = start + policy.value
        else:  # Percent: rounded up, or a small target could never grow
            proposed = go_ceil_int32(float(start) * (1 + float(policy.value) / 100))
        result = pick(result, proposed)
    return result


def scale_down_limit_with_rules(current: int, up_events: list[ScaleEvent], down_events: list[ScaleEvent],
                                rules: ScalingRules, now: float) -> int:
    """`calculateScaleDownLimitWithBehaviors`: Max picks the largest change, i.e. the smallest size."""
    if rules.select_policy == "Disabled":
        return current
    if rules.select_policy == "Min":
        result, pick = MIN_INT32, max
    else:
        result, pick = MAX_INT32, min
    for policy in rules.policies:
        start = (current - replicas_change_per_period(policy.period_seconds, up_events, now)
                 + replicas_change_per_period(policy.period_seconds, down_events, now))
        if policy.type == "Pods":
            proposed = start - policy.value
        else:  # Percent: truncated
            proposed = go_trunc_int32(float(start) * (1 - float(policy.value) / 100))
        result = pick(result, proposed)
    return result


def convert_with_behavior_rate(history: History, current: int, desired: int, min_replicas: int,
                               max_replicas: int, behavior: Behavior, now: float) -> tuple[int, str, str]:
    """`convertDesiredReplicasWithBehaviorRate`."""
    if desired > current:
        limit = scale_up_limit_with_rules(current, history.scale_up_events, history.scale_down_events,
                                          behavior.scale_up, now)
        if limit < current:
            limit = current  # no further scale-up until old events expire
        maximum = max_replicas
        if maximum > limit:
            maximum, reason, message = limit, "ScaleUpLimit", \
                "the desired replica count is increasing faster than the maximum scale rate"
        else:
            reason, message = "TooManyReplicas", "the desired replica count is more than the maximum replica count"
        if desired > maximum:
            return maximum, reason, message
    elif desired < current:
        limit = scale_down_limit_with_rules(current, history.scale_up_events, history.scale_down_events,
                                            behavior.scale_down, now)
        if limit > current:
            limit = current
        minimum = min_replicas
        if minimum < limit:
            minimum, reason, message = limit, "ScaleDownLimit", \
                "the desired replica count is decreasing faster than the maximum scale rate"
        else:
            reason, message = "TooFewReplicas", "the desired replica count is less than the minimum replica count"
        if desired < minimum:
            return minimum, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def normalize_with_behaviors(history: History, current: int, desired: int, min_replicas: int, max_replicas: int,
                             behavior: Behavior, now: float) -> Normalized:
    """`normalizeDesiredReplicasWithBehaviors`; `behavior` must already carry its defaults."""
    stabilized, reason, message = stabilize_with_behaviors(history, current, desired, behavior, now)
    if stabilized != desired:
        able = Condition("AbleToScale", "True", reason, message)
    else:
        able = Condition("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
    result, reason, message = convert_with_behavior_rate(history, current, stabilized, min_replicas, max_replicas,
                                                         behavior, now)
    limited = Condition("ScalingLimited", "False" if result == stabilized else "True", reason, message)
    return Normalized(result, stabilized, able, limited)


def longest_policy_period(rules: ScalingRules) -> int:
    return max((p.period_seconds for p in rules.policies), default=0)


def store_scale_event(history: History, behavior: Behavior | None, previous: int, new: int, now: float) -> None:
    """`storeScaleEvent`: record |change| in the direction's list, reusing an outdated slot."""
    if behavior is None:
        return
    if new > previous:
        events, rules, change = history.scale_up_events, behavior.scale_up, new - previous
    else:
        events, rules, change = history.scale_down_events, behavior.scale_down, previous - new
    cutoff = now - float(longest_policy_period(rules))
    old_index = None
    for i, event in enumerate(events):
        if event.time < cutoff:
            event.outdated = True
        if event.outdated:
            old_index = i
    event = ScaleEvent(now, change, False)
    if old_index is not None:
        events[old_index] = event
    else:
        events.append(event)
