"""MemHpa's defaults, corrections, utilisation of limits and cool-down."""

from __future__ import annotations

import pytest

from promop.autoscale.memhpa import render_query, validate, decide_memhpa
from promop.autoscale.spec import SpecError
from tests.autoscale.helpers import NOW, pods

MI = 1024 * 1024
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def test_defaults_and_corrections_are_reported_not_fatal():
    s = validate({"scaleTargetRef": REF, "minReplicas": 0, "maxReplicas": -1, "targetUtilizationPercentage": 150})
    assert (s.min_replicas, s.max_replicas, s.target_utilization) == (1, 5, 80)
    assert [c.field for c in s.corrections] == ["spec.minReplicas", "spec.maxReplicas",
                                                "spec.targetUtilizationPercentage"]
    s = validate({"scaleTargetRef": REF, "minReplicas": 3, "maxReplicas": 2})
    assert s.max_replicas == 7 and s.utilization_base == "limits"
    with pytest.raises(SpecError, match="spec.scaleTargetRef"):
        validate({"minReplicas": 1})
    with pytest.raises(SpecError, match="spec.utilizationBase"):
        validate({"scaleTargetRef": REF, "utilizationBase": "usage"})


def mem_pods(n, limit_mi=100):
    return pods(n, mem_limit=limit_mi * MI * 1000)


def test_utilisation_of_limits_scales_up():
    s = validate({"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 10, "targetUtilizationPercentage": 50})
    d = decide_memhpa(s, 2, mem_pods(2), {"p0": 90 * MI, "p1": 90 * MI}, None, None, NOW)
    assert d.metrics[0].utilization == 90
    assert d.metric_replicas == 4 and d.desired_replicas == 4
    assert d.reason == "memory resource utilization (percentage of limit) above target"


def test_missing_limit_is_a_clear_error_and_no_scaling():
    s = validate({"scaleTargetRef": REF, "maxReplicas": 10})
    d = decide_memhpa(s, 2, pods(2), {"p0": 90 * MI, "p1": 90 * MI}, None, None, NOW)
    assert not d.rescale
    assert "missing limit for memory in container app of Pod p0" in d.error


def test_prometheus_down_is_no_scaling_with_the_reason():
    s = validate({"scaleTargetRef": REF, "maxReplicas": 10})
    d = decide_memhpa(s, 2, mem_pods(2), None, None, None, NOW, error="connection refused")
    assert not d.rescale and "connection refused" in d.error
    assert d.condition("ScalingActive").status == "False"


def test_cooldown_three_minutes_up_five_down():
    s = validate({"scaleTargetRef": REF, "maxReplicas": 10, "targetUtilizationPercentage": 50})
    high = {"p0": 90 * MI, "p1": 90 * MI}
    held = decide_memhpa(s, 2, mem_pods(2), high, NOW - 100, None, NOW)
    assert not held.rescale and held.cooldown_reason == "BackoffBoth"
    assert decide_memhpa(s, 2, mem_pods(2), high, NOW - 181, None, NOW).desired_replicas == 4
    low = {f"p{i}": 5 * MI for i in range(4)}
    down_held = decide_memhpa(s, 4, mem_pods(4), low, NOW - 200, None, NOW)
    assert not down_held.rescale and down_held.cooldown_reason == "BackoffDownscale"
    assert decide_memhpa(s, 4, mem_pods(4), low, NOW - 301, None, NOW).desired_replicas == 1


def test_behavior_replaces_the_cooldown():
    s = validate({"scaleTargetRef": REF, "maxReplicas": 10, "targetUtilizationPercentage": 50,
                  "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}})
    d = decide_memhpa(s, 2, mem_pods(2), {"p0": 90 * MI, "p1": 90 * MI}, NOW - 10, None, NOW)
    assert d.desired_replicas == 3 and d.limit_reason == "ScaleUpLimit"


def test_query_template():
    q = render_query('sum by (pod) (x{namespace="{{namespace}}", pod=~"{{pods}}"})', "shop", ["web-b", "web.a"])
    assert q == 'sum by (pod) (x{namespace="shop", pod=~"web-b|web\\\\.a"})'
