"""Upstream's controller logic around the calculator: readiness, failures, conditions, legacy normalization."""

from __future__ import annotations

from promop.autoscale import History, MetricValues, Options, TimedRecommendation, decide
from promop.autoscale import calculator as calc
from promop.autoscale.model import MetricError, Tolerances
from promop.autoscale.spec import parse_hpa_spec
from tests.autoscale.helpers import NOW, pods, samples

import pytest

TOL = Tolerances(0.1, 0.1)


def spec(*metrics, min_replicas=1, max_replicas=20, behavior=None):
    s = {"minReplicas": min_replicas, "maxReplicas": max_replicas, "metrics": list(metrics)}
    if behavior is not None:
        s["behavior"] = behavior
    return parse_hpa_spec(s)


CPU50 = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
PODS100 = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue",
                                                                           "averageValue": "100"}}}


def test_cpu_readiness_rules_only_for_cpu():
    # Within the CPU initialisation period, a pod whose last transition is younger than one metric window
    # is unready for CPU; for any other metric it counts as ready.
    young = pods(2, start=NOW - 60, transition=NOW - 10)
    metrics = samples({"p0": 900, "p1": 900})
    groups = calc.group_pods(young, metrics, "cpu", NOW, 300, 30)
    assert groups.unready == {"p0", "p1"}
    assert calc.group_pods(young, metrics, "memory", NOW, 300, 30).ready_count == 2
    # After the period: unready only when Ready=False and it never became ready.
    old_never_ready = pods(1, ready="False", start=NOW - 3600, transition=NOW - 3590)
    assert calc.group_pods(old_never_ready, samples({"p0": 1}), "cpu", NOW, 300, 30).unready == {"p0"}
    old_was_ready = pods(1, ready="False", start=NOW - 3600, transition=NOW - 100)
    assert calc.group_pods(old_was_ready, samples({"p0": 1}), "cpu", NOW, 300, 30).ready_count == 1
    no_condition = pods(1, ready=None)
    assert calc.group_pods(no_condition, samples({"p0": 1}), "cpu", NOW, 300, 30).unready == {"p0"}


def test_deleted_and_failed_pods_are_ignored():
    ps = pods(3)
    ps[0].deleted = True
    ps[1].phase = "Failed"
    g = calc.group_pods(ps, samples({"p0": 1, "p1": 1, "p2": 1}), "cpu", NOW, 300, 30)
    assert g.ignored == {"p0", "p1"} and g.ready_count == 1


def test_missing_request_is_an_error_with_upstreams_message():
    ps = pods(2)
    ps[1].containers[0].requests.pop("cpu")
    with pytest.raises(MetricError, match="missing request for cpu in container app of Pod p1"):
        calc.resource_replicas(2, 50, "cpu", ps, samples({"p0": 100, "p1": 100}), TOL, NOW)


def test_all_metrics_failed_keeps_current_and_says_why():
    d = decide(spec(CPU50), 4, 4, pods(4), MetricValues(), None, NOW)
    assert d.desired_replicas == 4 and not d.rescale
    active = d.condition("ScalingActive")
    assert (active.status, active.reason) == ("False", "FailedGetResourceMetric")
    assert d.error.startswith("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource "
                              "metric value: failed to get cpu utilization: unable to get metrics for resource cpu")
    assert d.events[0][1] == "FailedComputeMetricsReplicas"


def test_partial_failure_allows_scale_up_but_not_scale_down():
    ps = pods(4)
    up = MetricValues(pods={"rps": samples({f"p{i}": 300_000 for i in range(4)})})
    d = decide(spec(CPU50, PODS100), 4, 4, ps, up, None, NOW)
    assert d.metric_replicas == 12 and d.desired_replicas == 8 and d.rescale
    assert d.condition("ScalingActive").reason == "ValidMetricFound"
    assert d.error.startswith("invalid metrics (1 invalid out of 2)")
    down = MetricValues(pods={"rps": samples({f"p{i}": 10_000 for i in range(4)})})
    d = decide(spec(CPU50, PODS100), 4, 4, ps, down, None, NOW)
    assert not d.rescale and d.desired_replicas == 4
    assert d.condition("ScalingActive").reason == "FailedGetResourceMetric"


def test_max_over_metrics():
    ps = pods(4, 1000)
    values = MetricValues(resource={"cpu": samples({f"p{i}": 1250 for i in range(4)})},  # 125% -> 10
                          pods={"rps": samples({f"p{i}": 150_000 for i in range(4)})})  # 1.5 -> 6
    d = decide(spec(CPU50, PODS100), 4, 4, ps, values, None, NOW)
    assert [m.replicas for m in d.metrics] == [10, 6]
    assert d.metric_replicas == 10 and d.desired_replicas == 8
    assert d.condition("ScalingLimited").as_dict()["reason"] == "ScaleUpLimit"


def test_scaling_disabled_at_zero_and_out_of_range_corrections():
    d = decide(spec(CPU50), 0, 0, pods(1), MetricValues(), None, NOW)
    assert d.desired_replicas == 0 and d.condition("ScalingActive").reason == "ScalingDisabled"
    d = decide(spec(CPU50, max_replicas=5), 9, 9, pods(9), MetricValues(), None, NOW)
    assert d.desired_replicas == 5 and d.reason == "Current number of replicas above Spec.MaxReplicas"
    d = decide(spec(CPU50, min_replicas=3), 2, 2, pods(2), MetricValues(), None, NOW)
    assert d.desired_replicas == 3 and d.reason == "Current number of replicas below Spec.MinReplicas"


def test_legacy_stabilization_first_pass_records_current_and_holds_scale_down():
    ps = pods(10, 1000)
    low = MetricValues(resource={"cpu": samples({f"p{i}": 100 for i in range(10)})})  # 10% of 50 -> 2
    d = decide(spec(CPU50), 10, 10, ps, low, None, NOW)
    assert d.metric_replicas == 2 and d.stabilized == 10 and not d.rescale
    assert d.condition("AbleToScale").reason == "ScaleDownStabilized"
    assert [(r.time, r.replicas) for r in d.history.recommendations] == [(NOW, 10), (NOW, 2)]
    # 5 minutes later the initial recommendation is older than the window (strictly before the cutoff)
    later = decide(spec(CPU50), 10, 10, ps, low, d.history, NOW + 300.5)
    assert later.desired_replicas == 2 and later.reason == "All metrics below target"
    assert later.condition("ScalingLimited").reason == "DesiredWithinRange"
    # an expired entry is replaced, not appended
    assert len(later.history.recommendations) == 2


def test_per_direction_tolerance_from_behavior():
    ps = pods(4, 1000)
    values = MetricValues(resource={"cpu": samples({f"p{i}": 540 for i in range(4)})})  # 108% of target
    assert decide(spec(CPU50), 4, 4, ps, values, None, NOW).desired_replicas == 4
    tight = spec(CPU50, behavior={"scaleUp": {"tolerance": "0.05"}})
    assert decide(tight, 4, 4, ps, values, None, NOW).desired_replicas == 5


def test_scale_events_recorded_after_rescale():
    ps = pods(4, 1000)
    values = MetricValues(resource={"cpu": samples({f"p{i}": 1000 for i in range(4)})})
    d = decide(spec(CPU50, behavior={}), 4, 4, ps, values, History([TimedRecommendation(NOW - 1, 4)]), NOW,
               Options())
    assert d.desired_replicas == 8
    h = d.history_after_rescale()
    assert [(e.time, e.replicas) for e in h.scale_up_events] == [(NOW, 4)]
    # 10 s later the 15 s period still holds the change: start = 8 - 4 = 4, so the limit stays 8
    values8 = MetricValues(resource={"cpu": samples({f"p{i}": 1000 for i in range(8)})})
    again = decide(spec(CPU50, behavior={}), 8, 8, pods(8, 1000), values8, h, NOW + 10)
    assert again.metric_replicas == 16 and again.desired_replicas == 8
    assert again.condition("ScalingLimited").reason == "ScaleUpLimit"
