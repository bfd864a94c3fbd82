"""Stabilization windows and rate-limit periods at their edges (../shared/reference/autoscaling.md §2.3, §2.4).

Upstream compares times with Go's `Before`/`After`, both strict: the legacy window keeps a
recommendation recorded exactly `window` ago (it is not `Before(cutoff)`), the behavior windows
and the rate-limit periods drop one recorded exactly at the cutoff (it is not `After(cutoff)`).
Scale-up stabilization takes the *lowest* recent recommendation, so a burst does not scale up
until it has lasted the whole window.
"""

from __future__ import annotations

from promop.autoscale import History, MetricValues, Options, ScaleEvent, TimedRecommendation, decide
from promop.autoscale.hpa import Cooldown
from promop.autoscale.spec import parse_hpa_spec
from tests.autoscale.helpers import NOW, pods, samples


def cpu_hpa(behavior: dict | None = None, max_replicas: int = 100):
    spec = {"minReplicas": 1, "maxReplicas": max_replicas, "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                     "averageUtilization": 50}}}]}
    if behavior is not None:
        spec["behavior"] = behavior
    return parse_hpa_spec(spec)


def run(spec, current: int, per_pod_milli: int, history: History | None, now: float = NOW, **kw):
    """One pass over `current` pods of request 1000m each using `per_pod_milli` (target 50%)."""
    usage = {f"p{i}": per_pod_milli for i in range(current)}
    return decide(spec, current, current, pods(current, 1000), MetricValues(resource={"cpu": samples(usage, now)}),
                  history, now, Options(), **kw)


# 4 pods at 1250m of 1000m with a 50% target: ratio 2.5 -> 10 replicas.
UP_TO_10 = (4, 1250)
# 10 pods at 250m: ratio 0.5 -> 5 replicas.
DOWN_TO_5 = (10, 250)

GENEROUS_UP = {"policies": [{"type": "Pods", "value": 100, "periodSeconds": 15}]}


def test_scale_up_window_takes_the_lowest_recent_recommendation():
    spec = cpu_hpa({"scaleUp": {"stabilizationWindowSeconds": 60, **GENEROUS_UP}})
    history = History([TimedRecommendation(NOW - 30, 5), TimedRecommendation(NOW - 20, 7)])
    d = run(spec, *UP_TO_10, history)
    assert d.metric_replicas == 10
    assert d.stabilized == 5 and d.desired_replicas == 5
    assert d.stabilization_reason == "ScaleUpStabilized"
    # the unstabilized 10 is what is remembered
    assert [r.replicas for r in d.history.recommendations] == [5, 7, 10]


def test_scale_up_window_never_goes_below_current():
    spec = cpu_hpa({"scaleUp": {"stabilizationWindowSeconds": 60, **GENEROUS_UP}})
    history = History([TimedRecommendation(NOW - 30, 2)])
    d = run(spec, *UP_TO_10, history)
    assert d.desired_replicas == 4 and not d.rescale


def test_scale_up_window_excludes_a_recommendation_exactly_at_its_start():
    spec = cpu_hpa({"scaleUp": {"stabilizationWindowSeconds": 60, **GENEROUS_UP}})
    at_edge = run(spec, *UP_TO_10, History([TimedRecommendation(NOW - 60, 5)]))
    assert at_edge.desired_replicas == 10
    inside = run(spec, *UP_TO_10, History([TimedRecommendation(NOW - 59.5, 5)]))
    assert inside.desired_replicas == 5


def test_scale_down_window_excludes_a_recommendation_exactly_at_its_start():
    spec = cpu_hpa({"scaleDown": {"stabilizationWindowSeconds": 300}})
    at_edge = run(spec, *DOWN_TO_5, History([TimedRecommendation(NOW - 300, 9)]))
    assert at_edge.desired_replicas == 5
    inside = run(spec, *DOWN_TO_5, History([TimedRecommendation(NOW - 299.5, 9)]))
    assert inside.desired_replicas == 9
    assert inside.stabilization_reason == "ScaleDownStabilized"


def test_behavior_scale_down_window_defaults_to_the_controller_flag():
    spec = cpu_hpa({"scaleUp": GENEROUS_UP})
    d = run(spec, *DOWN_TO_5, History([TimedRecommendation(NOW - 299.5, 9)]))
    assert d.desired_replicas == 9


def test_behavior_recommendation_replaced_only_once_older_than_both_windows():
    spec = cpu_hpa({"scaleUp": {"stabilizationWindowSeconds": 60}, "scaleDown": {"stabilizationWindowSeconds": 300}})
    # exactly at the scale-down cutoff: not Before it, so kept, and the new value is appended
    kept = run(spec, *DOWN_TO_5, History([TimedRecommendation(NOW - 300, 7)]))
    assert [(r.time, r.replicas) for r in kept.history.recommendations] == [(NOW - 300, 7), (NOW, 5)]
    replaced = run(spec, *DOWN_TO_5, History([TimedRecommendation(NOW - 300.5, 7)]))
    assert [(r.time, r.replicas) for r in replaced.history.recommendations] == [(NOW, 5)]


def test_legacy_window_keeps_a_recommendation_exactly_window_old():
    at_edge = run(cpu_hpa(), *DOWN_TO_5, History([TimedRecommendation(NOW - 300, 9)]))
    assert at_edge.stabilized == 9 and at_edge.desired_replicas == 9
    assert at_edge.stabilization_reason == "ScaleDownStabilized"
    assert [r.replicas for r in at_edge.history.recommendations] == [9, 5]
    expired = run(cpu_hpa(), *DOWN_TO_5, History([TimedRecommendation(NOW - 300.5, 9)]))
    assert expired.desired_replicas == 5
    assert [(r.time, r.replicas) for r in expired.history.recommendations] == [(NOW, 5)]  # the expired slot reused


def test_legacy_window_takes_the_highest_not_the_latest():
    history = History([TimedRecommendation(NOW - 200, 9), TimedRecommendation(NOW - 100, 6)])
    d = run(cpu_hpa(), *DOWN_TO_5, history)
    assert d.desired_replicas == 9


def test_legacy_window_follows_the_controller_flag():
    history = History([TimedRecommendation(NOW - 60, 9)])
    opts = Options(downscale_stabilization_window=60.0)
    usage = {f"p{i}": 250 for i in range(10)}
    d = decide(cpu_hpa(), 10, 10, pods(10, 1000), MetricValues(resource={"cpu": samples(usage)}), history, NOW, opts)
    assert d.desired_replicas == 9
    opts = Options(downscale_stabilization_window=59.0)
    d = decide(cpu_hpa(), 10, 10, pods(10, 1000), MetricValues(resource={"cpu": samples(usage)}), history, NOW, opts)
    assert d.desired_replicas == 5


def test_rate_limit_period_excludes_an_event_exactly_period_old():
    # H11's policy: down Percent 50 per 60s. An event exactly 60s old is outside the period.
    spec = cpu_hpa({"scaleDown": {"stabilizationWindowSeconds": 0,
                                  "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}]}})
    at_edge = History(scale_down_events=[ScaleEvent(NOW - 60, 5)])
    d = run(spec, 5, 200, at_edge)  # ratio 0.4 -> 2
    assert d.metric_replicas == 2
    assert d.desired_replicas == 2
    inside = History(scale_down_events=[ScaleEvent(NOW - 59.5, 5)])
    d = run(spec, 5, 200, inside)
    assert d.desired_replicas == 5 and d.limit_reason == "ScaleDownLimit"


def test_scale_up_rate_limit_counts_events_inside_the_period():
    spec = cpu_hpa({"scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}})
    inside = run(spec, *UP_TO_10, History(scale_up_events=[ScaleEvent(NOW - 59.5, 2)]))
    assert inside.desired_replicas == 4 and inside.limit_reason == "ScaleUpLimit"  # start 2, +2 = 4
    at_edge = run(spec, *UP_TO_10, History(scale_up_events=[ScaleEvent(NOW - 60, 2)]))
    assert at_edge.desired_replicas == 6


def test_memhpa_cooldown_needs_strictly_more_than_the_forbidden_window():
    cooldown_at = Cooldown(last_scale_time=NOW - 180)
    d = run(cpu_hpa(), *UP_TO_10, None, cooldown=cooldown_at)
    assert d.desired_replicas == 4 and d.cooldown_reason == "BackoffBoth"
    d = run(cpu_hpa(), *UP_TO_10, None, cooldown=Cooldown(last_scale_time=NOW - 180.5))
    assert d.desired_replicas == 8
    d = run(cpu_hpa(), *DOWN_TO_5, None, cooldown=Cooldown(last_scale_time=NOW - 300))
    assert d.desired_replicas == 10 and d.cooldown_reason == "BackoffDownscale"
    d = run(cpu_hpa(), *DOWN_TO_5, None, cooldown=Cooldown(last_scale_time=NOW - 300.5))
    assert d.desired_replicas == 5


def test_scale_event_slot_reused_only_once_older_than_the_longest_period():
    spec = cpu_hpa({"scaleDown": {"stabilizationWindowSeconds": 0,
                                  "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15},
                                               {"type": "Pods", "value": 8, "periodSeconds": 60}]}})
    at_edge = run(spec, *DOWN_TO_5, History(scale_down_events=[ScaleEvent(NOW - 60, 3)]))
    assert at_edge.desired_replicas == 5
    events = at_edge.history_after_rescale().scale_down_events
    assert [(e.time, e.replicas) for e in events] == [(NOW - 60, 3), (NOW, 5)]
    older = run(spec, *DOWN_TO_5, History(scale_down_events=[ScaleEvent(NOW - 60.5, 3)]))
    events = older.history_after_rescale().scale_down_events
    assert [(e.time, e.replicas) for e in events] == [(NOW, 5)]
