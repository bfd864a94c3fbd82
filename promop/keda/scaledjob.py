"""ScaledJob sizing (§1.5; KEDA's `pkg/scaling/scaledjob/metrics.go` and `executor/scale_jobs.go`), pure.

Why pure: how many Jobs a poll creates is a small arithmetic over (metric values, targets, running and
pending Jobs, strategy); the controller only counts Jobs and creates them.

    scaler_metrics(value, target, active, max_replicas) -> ScalerMetrics   one trigger
    combine(metrics, calculation, min_replicas, max_replicas) -> (isActive, queueLength, maxValue)
    effective_max_scale(strategy, max_scale, running, pending, max_replicas, scale_to, ...) -> (max, scaleTo)
    jobs_to_create(spec, metrics, running, pending) -> int
    jobs_to_delete(finished, limit) -> list                                 the history limits
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from promop.keda.spec import ScaledJob


@dataclass(slots=True)
class ScalerMetrics:
    queue_length: float
    max_value: float
    is_active: bool


def scaler_metrics(value: float, target: float, active: bool, max_replicas: int) -> ScalerMetrics:
    """One trigger: queueLength is the metric value, maxValue = min(queueLength / target, maxReplicaCount)
    (0 with a zero target)."""
    max_value = min(value / target, float(max_replicas)) if target else 0.0
    return ScalerMetrics(queue_length=value, max_value=max_value, is_active=active)


def _divide_with_ceil(x: float, y: int) -> float:
    return float(math.ceil(x / y))


def combine(metrics: list[ScalerMetrics], calculation: str, min_replicas: int,
            max_replicas: int) -> tuple[bool, float, float]:
    """IsScaledJobActive: only active triggers count; `max` (default) takes the trigger with the longest
    queue, `min` the shortest, `avg` the ceil of the averages over all triggers, `sum` the sums. A
    ScaledJob with minReplicaCount > 0 is always active; maxValue is capped at maxReplicaCount."""
    queue, max_value, active = 0.0, 0.0, False
    live = [m for m in metrics if m.is_active]
    if calculation == "min":
        for m in live:
            if queue == 0 or m.queue_length < queue:
                queue, max_value, active = m.queue_length, m.max_value, True
    elif calculation == "avg":
        if live:
            active = True
        if metrics:
            queue = _divide_with_ceil(sum(m.queue_length for m in live), len(metrics))
            max_value = _divide_with_ceil(sum(m.max_value for m in live), len(metrics))
    elif calculation == "sum":
        for m in live:
            queue, max_value, active = queue + m.queue_length, max_value + m.max_value, True
    else:
        for m in live:
            if m.queue_length > queue:
                queue, max_value, active = m.queue_length, m.max_value, True
    if min_replicas > 0:
        active = True
    return active, queue, min(float(max_replicas), max_value)


def effective_max_scale(strategy: str, max_scale: int, running: int, pending: int, max_replicas: int,
                        scale_to: int, queue_deduction: int = 0,
                        running_percentage: float | None = None) -> tuple[int, int]:
    """(effective max scale, scaleTo) by strategy: default maxScale - running; custom min(maxScale -
    deduction - running x percentage, max); accurate max - running when maxScale + running exceeds max,
    else maxScale - pending; eager min(max - running - pending, maxScale) with scaleTo = max."""
    if strategy == "custom" and running_percentage is not None:
        return min(max_scale - queue_deduction - int(running * running_percentage), max_replicas), scale_to
    if strategy == "accurate":
        if max_scale + running > max_replicas:
            return max_replicas - running, scale_to
        return max_scale - pending, scale_to
    if strategy == "eager":
        return min(max_replicas - running - pending, max_scale), max_replicas
    return max_scale - running, scale_to


def jobs_to_create(job: ScaledJob, metrics: list[ScalerMetrics], running: int, pending: int) -> int:
    """How many Jobs one poll creates (RequestJobScale): below minReplicaCount, the missing ones;
    otherwise min(scaleTo, effective max scale) by the strategy, over the running Jobs above the minimum;
    none while inactive."""
    active, queue, max_value = combine(metrics, job.scaling_strategy.multiple_scalers_calculation,
                                       job.min_replica_count, job.max_replica_count)
    scale_to, max_scale = math.ceil(queue), math.ceil(max_value)
    if running < job.min_replica_count:
        effective = scale_to = job.min_replica_count - running
    else:
        s = job.scaling_strategy
        effective, scale_to = effective_max_scale(s.strategy, max_scale, running - job.min_replica_count, pending,
                                                  job.max_replica_count, scale_to, s.custom_queue_length_deduction,
                                                  s.custom_running_job_percentage)
    effective = max(effective, 0)
    if not active or effective <= 0:
        return 0
    return min(scale_to, effective)


def jobs_to_delete(finished: list[dict], limit: int) -> list[dict]:
    """The finished Jobs (all Complete, or all Failed) beyond the history limit, oldest completion first."""
    if len(finished) <= limit:
        return []
    ordered = sorted(finished, key=lambda j: (j.get("status") or {}).get("completionTime") or "")
    return ordered[:len(finished) - limit]
