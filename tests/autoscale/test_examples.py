"""The worked examples H1-H14 of ../shared/reference/autoscaling.md §2.5, with the reference's numbers."""

from __future__ import annotations

import pytest

from promop.autoscale import History, MetricValues, Options, ScaleEvent, TimedRecommendation, decide
from promop.autoscale import calculator as calc
from promop.autoscale.model import Tolerances
from promop.autoscale.normalize import (
    Behavior, Policy, ScalingRules, convert_with_behavior_rate, default_scale_down, default_scale_up,
    normalize_with_behaviors,
)
from promop.autoscale.spec import parse_hpa_spec
from tests.autoscale.helpers import NOW, pods, samples

TOL = Tolerances(0.1, 0.1)


def cpu_hpa(target: int, max_replicas: int = 20, behavior: dict | None = None, min_replicas: int = 1):
    spec = {"minReplicas": min_replicas, "maxReplicas": max_replicas, "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                     "averageUtilization": target}}}]}
    if behavior is not None:
        spec["behavior"] = behavior
    return parse_hpa_spec(spec)


def cpu_values(usage: dict[str, int]) -> MetricValues:
    return MetricValues(resource={"cpu": samples(usage)})


def test_h1_utilization_proposal_and_both_normalizations():
    ps = pods(4, 500)
    usage = {"p0": 400, "p1": 500, "p2": 600, "p3": 700}
    p = calc.resource_replicas(4, 50, "cpu", ps, samples(usage), TOL, NOW)
    assert (p.utilization, p.ratio, p.replicas) == (110, 2.2, 9)
    no_behavior = decide(cpu_hpa(50), 4, 4, ps, cpu_values(usage), None, NOW)
    assert no_behavior.metric_replicas == 9
    assert no_behavior.desired_replicas == 8
    assert no_behavior.limit_reason == "ScaleUpLimit"
    with_default_behavior = decide(cpu_hpa(50, behavior={}), 4, 4, ps, cpu_values(usage), None, NOW)
    assert with_default_behavior.desired_replicas == 8
    assert with_default_behavior.reason == "cpu resource utilization (percentage of request) above target"
    assert with_default_behavior.events == [("Normal", "SuccessfulRescale", "New size: 8; reason: cpu resource "
                                             "utilization (percentage of request) above target")]


@pytest.mark.parametrize("usage,expected", [(1050, 3), (1100, 3), (1110, 4)], ids=["H2", "H2b", "H2c"])
def test_h2_tolerance_is_inclusive(usage, expected):
    ps = pods(3, 1000)
    p = calc.resource_replicas(3, 100, "cpu", ps, samples({f"p{i}": usage for i in range(3)}), TOL, NOW)
    assert p.replicas == expected


def test_h3_missing_pod_on_scale_up_counts_zero():
    ps = pods(4, 1000)
    p = calc.resource_replicas(4, 50, "cpu", ps, samples({"p0": 900, "p1": 900, "p2": 900}), TOL, NOW)
    assert p.missing == 1
    assert p.utilization == 90  # the reported utilisation is before filling in
    assert p.ratio == 1.34
    assert p.replicas == 6


def test_h4_missing_pod_on_scale_down_counts_its_request():
    ps = pods(4, 1000)
    p = calc.resource_replicas(4, 50, "cpu", ps, samples({"p0": 100, "p1": 100, "p2": 100}), TOL, NOW)
    assert p.ratio == 0.64
    assert p.replicas == 3


def test_h5_pending_pods_count_zero_on_scale_up():
    ps = pods(3, 1000) + pods(2, 1000, prefix="q", phase="Pending")
    p = calc.resource_replicas(5, 50, "cpu", ps, samples({"p0": 800, "p1": 800, "p2": 800}), TOL, NOW)
    assert p.unready == 2
    assert p.ratio == 0.96
    assert p.replicas == 5
    p = calc.resource_replicas(5, 50, "cpu", ps, samples({"p0": 1000, "p1": 1000, "p2": 1000}), TOL, NOW)
    assert p.ratio == 1.2
    assert p.replicas == 6


def test_h6_pods_metric_average_value():
    ps = pods(3)
    p = calc.plain_metric_replicas(3, 100_000, "", ps, samples({"p0": 150_000, "p1": 200_000, "p2": 250_000}),
                                   TOL, NOW)
    assert (p.value, p.ratio, p.replicas) == (200_000, 2.0, 6)


def test_h7_external_value_and_scale_from_zero():
    ps = pods(2)
    assert calc.value_replicas(2, 10_000, calc.sum_external([50_000, 45_000]), TOL, ps).replicas == 19
    assert calc.value_replicas(0, 10_000, 95_000, TOL, ps).replicas == 10
    spec = parse_hpa_spec({"minReplicas": 0, "maxReplicas": 100, "metrics": [
        {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "10"}}}]})
    d = decide(spec, 2, 2, ps, MetricValues(external={"queue": [50_000, 45_000]}), None, NOW)
    assert d.metric_replicas == 19


def test_h8_external_average_value():
    p = calc.average_value_replicas(2, 10_000, 95_000, TOL)
    assert p.ratio == 4.75
    assert p.replicas == 10


def up_rules(select: str, *policies: Policy) -> Behavior:
    return Behavior(ScalingRules(0, select, list(policies)), default_scale_down())


@pytest.mark.parametrize("select,expected", [("Max", 7), ("Min", 6), ("Disabled", 3)])
def test_h9_scale_up_select_policy(select, expected):
    b = up_rules(select, Policy("Pods", 4, 60), Policy("Percent", 100, 60))
    assert convert_with_behavior_rate(History([]), 3, 20, 1, 100, b, NOW)[0] == expected


def test_h10_percent_up_rounds_up():
    b = up_rules("Max", Policy("Percent", 10, 60))
    assert convert_with_behavior_rate(History([]), 5, 20, 1, 100, b, NOW) == (
        6, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")


def down_rules(select: str, *policies: Policy) -> Behavior:
    return Behavior(default_scale_up(), ScalingRules(0, select, list(policies)))


def test_h11_percent_down_over_time():
    b = down_rules("Max", Policy("Percent", 50, 60))
    history = History([])
    assert convert_with_behavior_rate(history, 10, 2, 1, 100, b, NOW)[0] == 5
    history.scale_down_events.append(ScaleEvent(NOW, 5))
    assert convert_with_behavior_rate(history, 5, 2, 1, 100, b, NOW + 30)[0] == 5
    assert convert_with_behavior_rate(history, 5, 2, 1, 100, b, NOW + 61)[0] == 2


def test_h12_percent_down_truncates():
    b = down_rules("Max", Policy("Percent", 30, 60))
    assert convert_with_behavior_rate(History([]), 7, 1, 1, 100, b, NOW)[0] == 4


@pytest.mark.parametrize("select,expected", [("Max", 7), ("Min", 8)])
def test_h13_scale_down_select_policy(select, expected):
    b = down_rules(select, Policy("Pods", 2, 60), Policy("Percent", 30, 60))
    assert convert_with_behavior_rate(History([]), 10, 1, 1, 100, b, NOW)[0] == expected


def test_h14_scale_down_stabilization_window():
    b = Behavior(default_scale_up(), ScalingRules(300, "Max", [Policy("Percent", 100, 15)]))
    history = History([TimedRecommendation(NOW - 200, 8), TimedRecommendation(NOW - 100, 6)])
    n = normalize_with_behaviors(history, 10, 5, 1, 100, b, NOW)
    assert n.stabilized == 8
    assert n.desired == 8
    assert n.able_to_scale.reason == "ScaleDownStabilized"
    assert [r.replicas for r in history.recommendations] == [8, 6, 5]  # the unstabilized value is recorded


def test_h14_through_decide_with_behavior_on_the_hpa():
    ps = pods(10, 1000)
    spec = cpu_hpa(50, behavior={"scaleDown": {"stabilizationWindowSeconds": 300}})
    history = History([TimedRecommendation(NOW - 200, 8), TimedRecommendation(NOW - 100, 6)])
    d = decide(spec, 10, 10, ps, cpu_values({f"p{i}": 250 for i in range(10)}), history, NOW, Options())
    assert d.metric_replicas == 5
    assert d.stabilized == 8 and d.desired_replicas == 8
    assert d.reason == "All metrics below target"
