"""Properties the algorithm must keep for any input (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from promop.autoscale import History, MetricValues, decide
from promop.autoscale import calculator as calc
from promop.autoscale.model import Tolerances
from promop.autoscale.normalize import Behavior, Policy, ScalingRules, convert_with_behavior_rate
from promop.autoscale.spec import parse_hpa_spec
from tests.autoscale.helpers import NOW, pods, samples

TOL = Tolerances(0.1, 0.1)
usage_lists = st.lists(st.integers(0, 5000), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(usage_lists, st.integers(1, 200), st.integers(0, 3000), st.integers(0, 11))
def test_monotonic_in_load(usage, target, extra, which):
    """More load on any pod never gives fewer replicas (fixed current size)."""
    ps = pods(len(usage), 1000)
    current = len(usage)
    more = list(usage)
    more[which % len(usage)] += extra
    a = calc.resource_replicas(current, target, "cpu", ps, samples({f"p{i}": u for i, u in enumerate(usage)}),
                               TOL, NOW).replicas
    b = calc.resource_replicas(current, target, "cpu", ps, samples({f"p{i}": u for i, u in enumerate(more)}),
                               TOL, NOW).replicas
    assert b >= a


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10_000_000), min_size=1, max_size=10), st.integers(1, 10_000_000),
       st.integers(0, 5_000_000))
def test_monotonic_in_load_plain_metric(usage, target, extra):
    ps = pods(len(usage))
    a = calc.plain_metric_replicas(len(usage), target, "", ps, samples({f"p{i}": u for i, u in enumerate(usage)}),
                                   TOL, NOW).replicas
    b = calc.plain_metric_replicas(len(usage), target, "", ps,
                                   samples({f"p{i}": u + extra for i, u in enumerate(usage)}), TOL, NOW).replicas
    assert b >= a


behaviors = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "scaleUp": st.fixed_dictionaries({}, optional={
        "stabilizationWindowSeconds": st.integers(0, 600),
        "selectPolicy": st.sampled_from(["Max", "Min", "Disabled"]),
        "policies": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["Pods", "Percent"]),
                                                    "value": st.integers(1, 300),
                                                    "periodSeconds": st.integers(1, 1800)}), max_size=3)}),
    "scaleDown": st.fixed_dictionaries({}, optional={
        "stabilizationWindowSeconds": st.integers(0, 600),
        "selectPolicy": st.sampled_from(["Max", "Min", "Disabled"]),
        "policies": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["Pods", "Percent"]),
                                                    "value": st.integers(1, 100),
                                                    "periodSeconds": st.integers(1, 1800)}), max_size=3)}),
}))


@settings(max_examples=300, deadline=None)
@given(usage_lists, st.integers(1, 150), st.integers(1, 10), st.integers(0, 30), behaviors,
       st.lists(st.tuples(st.integers(0, 900), st.integers(0, 60)), max_size=5))
def test_never_outside_min_max(usage, target, min_replicas, spread, behavior, recs):
    """Whatever the metrics, memory and behavior, the decision from a size in range stays in range."""
    from promop.autoscale.model import TimedRecommendation
    max_replicas = min_replicas + spread
    current = max(min_replicas, min(max_replicas, len(usage)))
    ps = pods(len(usage), 1000)
    spec = {"minReplicas": min_replicas, "maxReplicas": max_replicas, "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                     "averageUtilization": target}}}]}
    if behavior is not None:
        spec["behavior"] = behavior
    history = History([TimedRecommendation(NOW - age, r) for age, r in recs]) if recs else None
    d = decide(parse_hpa_spec(spec), current, current, ps,
               MetricValues(resource={"cpu": samples({f"p{i}": u for i, u in enumerate(usage)})}), history, NOW)
    assert min_replicas <= d.desired_replicas <= max_replicas


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40), st.integers(1, 500), st.integers(0, 100))
def test_ratio_within_tolerance_never_changes(n, target, permille):
    """Every pod at a usage whose ratio lies in [0.9, 1.1] keeps the current size."""
    request = 1000
    ps = pods(n, request)
    # utilisation u with 0.9 <= u / target <= 1.1
    low, high = -(-9 * target // 10), (11 * target) // 10
    u = low + (high - low) * permille // 100
    if not (0.9 <= u / target <= 1.1):
        return
    values = samples({f"p{i}": u * request // 100 for i in range(n)})
    assert calc.resource_replicas(n, target, "cpu", ps, values, TOL, NOW).replicas == n
    plain = calc.plain_metric_replicas(n, 1000, "", ps, samples({f"p{i}": 1000 * u // target for i in range(n)}),
                                       TOL, NOW)
    if 0.9 <= (1000 * u // target) / 1000 <= 1.1:
        assert plain.replicas == n


policies = st.lists(st.builds(Policy, st.sampled_from(["Pods", "Percent"]), st.integers(1, 300),
                              st.integers(1, 1800)), max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 100), st.integers(0, 300), policies, policies)
def test_disabled_never_scales_in_that_direction(current, desired, up_policies, down_policies):
    up_disabled = Behavior(ScalingRules(0, "Disabled", up_policies), ScalingRules(0, "Max", down_policies))
    result, _, _ = convert_with_behavior_rate(History([]), current, desired, 1, 1000, up_disabled, NOW)
    assert result <= current
    down_disabled = Behavior(ScalingRules(0, "Max", up_policies), ScalingRules(0, "Disabled", down_policies))
    result, _, _ = convert_with_behavior_rate(History([]), current, desired, 1, 1000, down_disabled, NOW)
    assert result >= current
