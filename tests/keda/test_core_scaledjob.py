"""ScaledJob sizing (reference §1.5): the strategies' formulas and the multiple-scalers rules."""

from __future__ import annotations

import pytest

from promop.keda.scaledjob import (
    ScalerMetrics, combine, effective_max_scale, jobs_to_create, jobs_to_delete, scaler_metrics,
)
from promop.keda.spec import parse_scaled_job


def job(strategy="default", max_replicas=100, min_replicas=0, calculation=None, **extra):
    ss = {"strategy": strategy, **extra}
    if calculation:
        ss["multipleScalersCalculation"] = calculation
    return parse_scaled_job({"metadata": {"name": "j"}, "spec": {
        "jobTargetRef": {"template": {}}, "maxReplicaCount": max_replicas, "minReplicaCount": min_replicas,
        "scalingStrategy": ss, "triggers": [{"type": "prometheus", "metadata": {}}]}})


def test_scaler_metrics_caps_at_max():
    assert scaler_metrics(10, 2, True, 100) == ScalerMetrics(10, 5.0, True)
    assert scaler_metrics(1000, 2, True, 7).max_value == 7


@pytest.mark.parametrize("strategy,max_scale,running,pending,max_replicas,expected", [
    ("default", 10, 3, 0, 100, 7),
    ("accurate", 10, 3, 2, 100, 8),          # maxScale - pending
    ("accurate", 10, 95, 2, 100, 5),         # over the limit: max - running
    ("eager", 10, 3, 2, 100, 10),            # min(max - running - pending, maxScale)
    ("eager", 10, 3, 2, 12, 7),
])
def test_strategies(strategy, max_scale, running, pending, max_replicas, expected):
    assert effective_max_scale(strategy, max_scale, running, pending, max_replicas, 10)[0] == expected


def test_eager_scales_to_max():
    assert effective_max_scale("eager", 10, 3, 2, 20, 4) == (10, 20)


def test_custom():
    assert effective_max_scale("custom", 10, 4, 0, 100, 10, queue_deduction=1, running_percentage=0.5) == (7, 10)


def test_default_creates_queue_over_target_minus_running():
    m = [scaler_metrics(10, 2, True, 100)]
    assert jobs_to_create(job(), m, running=2, pending=0) == 3


def test_inactive_creates_nothing_and_min_fills_up():
    assert jobs_to_create(job(), [scaler_metrics(10, 2, False, 100)], 0, 0) == 0
    assert jobs_to_create(job(min_replicas=3), [scaler_metrics(0, 2, False, 100)], 1, 0) == 2


def test_max_replica_count_caps():
    assert jobs_to_create(job(max_replicas=4), [scaler_metrics(100, 1, True, 4)], 1, 0) == 3


@pytest.mark.parametrize("calc,queue,max_value", [("", 30, 3.0), ("max", 30, 3.0), ("min", 10, 5.0),
                                                  ("sum", 40, 8.0), ("avg", 20, 4.0)])
def test_multiple_scalers(calc, queue, max_value):
    metrics = [ScalerMetrics(10, 5.0, True), ScalerMetrics(30, 3.0, True)]
    assert combine(metrics, calc, 0, 100) == (True, queue, max_value)


def test_inactive_scalers_are_ignored():
    assert combine([ScalerMetrics(10, 5.0, False), ScalerMetrics(3, 1.0, True)], "max", 0, 100) == (True, 3, 1.0)


def test_history_limit():
    jobs = [{"metadata": {"name": f"j{i}"}, "status": {"completionTime": f"2026-01-0{i}T00:00:00Z"}} for i in (3, 1, 2)]
    assert [j["metadata"]["name"] for j in jobs_to_delete(jobs, 1)] == ["j1", "j2"]
    assert jobs_to_delete(jobs, 3) == []
