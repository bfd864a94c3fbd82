"""ScaledJob sizing (reference §1.5): the strategies' formulas and the multiple-scalers rules."""

from __future__ import annotations

import pytest

from promop.keda.scaledjob import (
    ScalerMetrics, combine, effective_max_scale, is_pending, jobs_to_create, jobs_to_delete, rollout_deletions,
    rollout_propagation, scale_decision, scaler_metrics,
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


# --- KEDA 2.20's rules, read from its source (pkg/scaling/scaledjob/metrics.go, executor/scale_jobs.go,
# controllers/keda/scaledjob_controller.go); the expected numbers are worked from those formulas by hand.

def test_avg_divides_by_the_active_triggers_only():
    # an inactive trigger must not dilute the average: (10 + 30) / 2, not / 3
    metrics = [ScalerMetrics(10, 5.0, True), ScalerMetrics(30, 3.0, True), ScalerMetrics(99, 9.0, False)]
    assert combine(metrics, "avg", 0, 100) == (True, 20, 4.0)


def test_avg_rounds_up_only_at_the_end():
    # (1 + 2) / 2 = 1.5 -> ceil 2 Jobs; a ceil of each term or a floor would give 1 or 3
    m = [ScalerMetrics(1, 1.0, True), ScalerMetrics(2, 2.0, True)]
    assert combine(m, "avg", 0, 100) == (True, 1.5, 1.5)
    assert jobs_to_create(job(calculation="avg"), m, 0, 0) == 2


def test_min_skips_inactive_and_sum_adds_active():
    m = [ScalerMetrics(2, 2.0, False), ScalerMetrics(7, 7.0, True), ScalerMetrics(4, 4.0, True)]
    assert combine(m, "min", 0, 100) == (True, 4, 4.0)
    assert combine(m, "sum", 0, 100) == (True, 11, 11.0)


def test_custom_percentage_is_go_parse_float_and_falls_back_to_default():
    m = [scaler_metrics(10, 1, True, 100)]
    # custom: min(10 - 2 - int(4 * 0.25), 100) = 7 (the default strategy would give 10 - 4 = 6)
    assert jobs_to_create(job("custom", customScalingQueueLengthDeduction=2,
                              customScalingRunningJobPercentage="0.25"), m, 4, 0) == 7
    # not a Go float (".5e" and "1,5" are not; Python's float reads neither, "0x1p-2" it would not
    # read but Go does): KEDA logs and uses the default strategy, 10 - 4 = 6
    assert jobs_to_create(job("custom", customScalingQueueLengthDeduction=2,
                              customScalingRunningJobPercentage="0x1p-2"), m, 4, 0) == 7
    for bad in ("half", "1,5", "", ".5e", "NaN", "+Inf"):   # non-finite: promop's choice, see the docstring
        assert jobs_to_create(job("custom", customScalingQueueLengthDeduction=2,
                                  customScalingRunningJobPercentage=bad), m, 4, 0) == 6
    # custom without the percentage is the default strategy too
    assert jobs_to_create(job("custom", customScalingQueueLengthDeduction=2), m, 4, 0) == 6


def test_custom_truncates_running_times_percentage():
    # int64(float64(3) * 0.5) = 1, not round(1.5) = 2
    assert effective_max_scale("custom", 10, 3, 0, 100, 10, queue_deduction=0, running_percentage=0.5)[0] == 9


def test_scale_decision_reports_effective_for_the_event():
    # active, queue 0, one running: effective = max(0 - 1, 0) = 0 -> no event and nothing created
    d = scale_decision(job(min_replicas=0), [scaler_metrics(0.5, 1, True, 100)], 0, 0)
    assert (d.active, d.create, d.effective) == (True, 1, 1)
    d = scale_decision(job(), [scaler_metrics(3, 1, True, 100)], 5, 0)
    assert (d.create, d.effective) == (0, 0)


def _job(name, done=None, generation=None):
    j = {"metadata": {"name": name, "annotations": {}}, "status": {}}
    if done:
        j["status"]["conditions"] = [{"type": done, "status": "True"}]
    if generation is not None:
        j["metadata"]["annotations"]["scaledjob.keda.sh/generation"] = str(generation)
    return j


def _pod(phase="Pending", **conds):
    return {"status": {"phase": phase, "conditions": [{"type": t, "status": s} for t, s in conds.items()]}}


@pytest.mark.parametrize("phase,pending", [("Pending", True), ("Running", False), ("Succeeded", False),
                                           ("Failed", True), ("Unknown", True)])
def test_default_pending_is_no_pod_running_or_succeeded(phase, pending):
    assert is_pending(_job("a"), [_pod(phase)], []) is pending


def test_default_pending_any_pod_and_no_pods():
    assert is_pending(_job("a"), [], []) is True
    assert is_pending(_job("a"), [_pod("Failed"), _pod("Running")], []) is False
    # a Running pod that is not Ready is not pending by default (KEDA reads the phase, not readiness)
    assert is_pending(_job("a"), [_pod("Running", Ready="False")], []) is False


def test_finished_job_is_never_pending():
    assert is_pending(_job("a", done="Complete"), [], []) is False
    assert is_pending(_job("a", done="Failed"), [], ["Ready"]) is False
    not_true = {"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Complete", "status": "False"}]}}
    assert is_pending(not_true, [], []) is True


def test_pending_pod_conditions_all_true_on_one_pod():
    want = ["Ready", "PodScheduled"]
    assert is_pending(_job("a"), [_pod("Running", Ready="True", PodScheduled="True")], want) is False
    assert is_pending(_job("a"), [_pod("Running", Ready="False", PodScheduled="True")], want) is True
    # one condition on each of two pods is not enough: a single pod must have them all
    assert is_pending(_job("a"), [_pod("Running", Ready="True"), _pod("Running", PodScheduled="True")],
                      want) is True
    # with conditions, the phase no longer matters: Running without the conditions is pending
    assert is_pending(_job("a"), [_pod("Running")], ["Ready"]) is True
    # extra true conditions do not hurt
    assert is_pending(_job("a"), [_pod("Pending", Ready="True", PodScheduled="True", Initialized="True")],
                      ["Ready"]) is False


def test_pending_pod_conditions_with_a_duplicate_never_fulfil():
    # KEDA compares distinct fulfilled types with the list's length (as written)
    assert is_pending(_job("a"), [_pod("Running", Ready="True")], ["Ready", "Ready"]) is True


def test_accurate_uses_the_pending_count():
    # accurate: maxScale - pending = 10 - 3 = 7
    assert jobs_to_create(job("accurate"), [scaler_metrics(10, 1, True, 100)], 5, 3) == 7


def _sj(generation=3, **spec):
    return parse_scaled_job({"metadata": {"name": "j", "generation": generation}, "spec": {
        "jobTargetRef": {"template": {}}, "triggers": [{"type": "prometheus", "metadata": {}}], **spec}})


def test_rollout_default_and_immediate_delete_other_generations():
    jobs = [_job("same", generation=3), _job("old", generation=2), _job("none"), _job("oldDone", "Complete", 1)]
    for spec in ({}, {"rollout": {"strategy": "immediate"}}, {"rolloutStrategy": "immediate"}):
        assert [j["metadata"]["name"] for j in rollout_deletions(_sj(**spec), jobs)] == ["old", "none", "oldDone"]


def test_rollout_gradual_deletes_nothing():
    jobs = [_job("old", generation=2)]
    assert rollout_deletions(_sj(rollout={"strategy": "gradual"}), jobs) == []
    assert rollout_deletions(_sj(rolloutStrategy="gradual"), jobs) == []


def test_deprecated_rollout_strategy_wins():
    jobs = [_job("old", generation=2)]
    assert rollout_deletions(_sj(rolloutStrategy="gradual", rollout={"strategy": "immediate"}), jobs) == []
    assert len(rollout_deletions(_sj(rolloutStrategy="immediate", rollout={"strategy": "gradual"}), jobs)) == 1


def test_rollout_propagation():
    assert rollout_propagation(_sj()) == "Background"
    assert rollout_propagation(_sj(rollout={"propagationPolicy": "background"})) == "Background"
    assert rollout_propagation(_sj(rollout={"propagationPolicy": "foreground"})) == "Foreground"
    # the deprecated field picks the strategy; the policy is still rollout.propagationPolicy's
    assert rollout_propagation(_sj(rolloutStrategy="immediate", rollout={"propagationPolicy": "foreground"})) \
        == "Foreground"
