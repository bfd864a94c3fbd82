"""ScaledJob sizing (§1.5; KEDA's `pkg/scaling/scaledjob/metrics.go` and `executor/scale_jobs.go`), pure.

Why pure: how many Jobs a poll creates is a small arithmetic over (metric values, targets, running and
pending Jobs, strategy); the controller only counts Jobs and creates them.

    scaler_metrics(value, target, active, max_replicas) -> ScalerMetrics   one trigger
    combine(metrics, calculation, min_replicas, max_replicas) -> (isActive, queueLength, maxValue)
    effective_max_scale(strategy, max_scale, running, pending, max_replicas, scale_to, ...) -> (max, scaleTo)
    jobs_to_create(spec, metrics, running, pending) -> int
    scale_decision(spec, metrics, running, pending) -> ScaleDecision        the same, with KEDA's event inputs
    is_pending(job, pods, pending_pod_conditions) -> bool                   the pending count's rule
    rollout_deletions(spec, jobs) -> list; rollout_propagation(spec) -> str  a spec change's old Jobs
    jobs_to_delete(finished, limit) -> list                                 the history limits
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from promop.keda.prometheus import TriggerError, go_parse_float
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


def combine(metrics: list[ScalerMetrics], calculation: str, min_replicas: int,
            max_replicas: int) -> tuple[bool, float, float]:
    """IsScaledJobActive: only active triggers count; `max` (default) takes the trigger with the longest
    queue, `min` the shortest, `avg` the averages over the active triggers (KEDA 2.20 divides by the
    active ones, not by all; the caller rounds up), `sum` the sums. A ScaledJob with minReplicaCount > 0
    is always active; maxValue is capped at maxReplicaCount."""
    queue, max_value, active = 0.0, 0.0, False
    live = [m for m in metrics if m.is_active]
    if calculation == "min":
        for m in live:
            if queue == 0 or m.queue_length < queue:
                queue, max_value, active = m.queue_length, m.max_value, True
    elif calculation == "avg":
        if live:
            active = True
            queue = sum(m.queue_length for m in live) / len(live)
            max_value = sum(m.max_value for m in live) / len(live)
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
    deduction - int(running x percentage), max) (a missing deduction counts as 0: KEDA dereferences a nil
    pointer there and its scale loop panics); accurate max - running when maxScale + running exceeds
    max, else maxScale - pending; eager min(max - running - pending, maxScale) with scaleTo = max."""
    if strategy == "custom" and running_percentage is not None:
        return min(max_scale - queue_deduction - int(running * running_percentage), max_replicas), scale_to
    if strategy == "accurate":
        if max_scale + running > max_replicas:
            return max_replicas - running, scale_to
        return max_scale - pending, scale_to
    if strategy == "eager":
        return min(max_replicas - running - pending, max_scale), max_replicas
    return max_scale - running, scale_to


@dataclass(slots=True)
class ScaleDecision:
    """One poll's decision (RequestJobScale): `create` Jobs now; `effective` is the strategy's effective
    max scale (KEDA writes `KEDAJobsCreated` "Created <create> jobs" whenever it is > 0 on an active
    poll, even when `create` is 0)."""
    active: bool
    create: int
    effective: int


def running_job_percentage(job: ScaledJob) -> float | None:
    """customScalingRunningJobPercentage as Go's strconv.ParseFloat reads it; None when missing or not a
    number, which makes KEDA fall back to the default strategy (it logs, never rejects the ScaledJob).
    Non-finite values: see below."""
    raw = job.scaling_strategy.custom_running_job_percentage
    if raw is None:
        return None
    try:
        value = go_parse_float(str(raw))
    except TriggerError:
        return None
    # NaN and ±Inf parse in Go, and int64() of them is undefined there (amd64: the minimum int64, so the
    # count wraps); promop takes the default strategy for them as for any other non-number
    return value if math.isfinite(value) else None


def scale_decision(job: ScaledJob, metrics: list[ScalerMetrics], running: int, pending: int) -> ScaleDecision:
    """RequestJobScale's arithmetic: below minReplicaCount, the missing ones; otherwise min(scaleTo,
    effective max scale) by the strategy, over the running Jobs above the minimum; none while inactive."""
    active, queue, max_value = combine(metrics, job.scaling_strategy.multiple_scalers_calculation,
                                       job.min_replica_count, job.max_replica_count)
    scale_to, max_scale = math.ceil(queue), math.ceil(max_value)
    if running < job.min_replica_count:
        effective = scale_to = job.min_replica_count - running
    else:
        s = job.scaling_strategy
        effective, scale_to = effective_max_scale(s.strategy, max_scale, running - job.min_replica_count, pending,
                                                  job.max_replica_count, scale_to, s.custom_queue_length_deduction,
                                                  running_job_percentage(job))
    effective = max(effective, 0)
    if not active or effective <= 0:
        return ScaleDecision(active, 0, effective)
    return ScaleDecision(active, max(min(scale_to, effective), 0), effective)


def jobs_to_create(job: ScaledJob, metrics: list[ScalerMetrics], running: int, pending: int) -> int:
    """How many Jobs one poll creates (see scale_decision)."""
    return scale_decision(job, metrics, running, pending).create


def is_finished(job: dict) -> bool:
    """A Job with a Complete or Failed condition that is True (KEDA's isJobFinished)."""
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def is_pending(job: dict, pods: list[dict], pending_pod_conditions: list[str]) -> bool:
    """Whether an unfinished Job counts as pending (getPendingJobCount); `pods` are the Job's pods
    (KEDA lists them by the `job-name` label).

    Without `pendingPodConditions`: pending until one of its pods is in phase Running or Succeeded (a
    Running pod need not be Ready). With them: pending until one pod has every listed condition type with
    status "True"; the others need not be on the same pod. KEDA compares the number of distinct fulfilled
    types with the length of the list as written, so a list naming a type twice is never fulfilled: the
    Job stays pending. That is kept (a drop-in counts as KEDA counts); a finished Job is never pending.
    """
    if is_finished(job):
        return False
    if pending_pod_conditions:
        wanted = set(pending_pod_conditions)
        for pod in pods:
            met = {c.get("type") for c in (pod.get("status") or {}).get("conditions") or []
                   if c.get("type") in wanted and c.get("status") == "True"}
            if len(met) == len(pending_pod_conditions):
                return False
        return True
    return not any((pod.get("status") or {}).get("phase") in ("Running", "Succeeded") for pod in pods)


GENERATION_ANNOTATION = "scaledjob.keda.sh/generation"


def rollout_deletions(job: ScaledJob, jobs: list[dict]) -> list[dict]:
    """The Jobs a reconcile deletes (deletePreviousVersionScaleJobs): with any rollout strategy but
    `gradual`, every Job of the ScaledJob (running or finished) whose `scaledjob.keda.sh/generation`
    annotation is missing or differs from the ScaledJob's generation; with `gradual`, none."""
    if job.rollout_strategy == "gradual":
        return []
    current = str(job.generation)
    return [j for j in jobs if ((j.get("metadata") or {}).get("annotations") or {}).get(GENERATION_ANNOTATION)
            != current]


def rollout_propagation(job: ScaledJob) -> str:
    """The deletion's propagationPolicy: Foreground only for `rollout.propagationPolicy: foreground`,
    otherwise Background (KEDA reads `rollout.propagationPolicy` even when the deprecated
    `rolloutStrategy` chose the strategy)."""
    return "Foreground" if job.rollout_propagation_policy == "foreground" else "Background"


def jobs_to_delete(finished: list[dict], limit: int) -> list[dict]:
    """The finished Jobs (all Complete, or all Failed) beyond the history limit, oldest completion first."""
    if len(finished) <= limit:
        return []
    ordered = sorted(finished, key=lambda j: (j.get("status") or {}).get("completionTime") or "")
    return ordered[:len(finished) - limit]
