"""Upstream's replica calculator (`replica_calculator.go`, `metrics/utilization.go`), pure.

Every value is an integer in milli-units; ratios are float64 as in Go; integer
division truncates toward zero and replica counts are `ceil` of a float, exactly
where upstream does so. Errors are MetricError with upstream's messages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from promop.autoscale.model import MetricError, Pod, PodMetric, Tolerances

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)
MAX_INT64 = 2**63 - 1


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncation toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_ceil_int32(x: float) -> int:
    """`int32(math.Ceil(x))`, saturated where Go's conversion would be undefined."""
    if x != x:
        return MIN_INT32
    if x >= MAX_INT32:
        return MAX_INT32
    if x <= MIN_INT32:
        return MIN_INT32
    return math.ceil(x)


def go_trunc_int32(x: float) -> int:
    """`int32(x)`: truncation toward zero, saturated."""
    if x >= MAX_INT32:
        return MAX_INT32
    if x <= MIN_INT32:
        return MIN_INT32
    return int(x)


@dataclass(slots=True)
class Groups:
    ready_count: int
    unready: set[str]
    missing: set[str]
    ignored: set[str]


def group_pods(pods: list[Pod], metrics: dict[str, PodMetric], resource: str, now: float,
               cpu_initialization_period: float, initial_readiness_delay: float) -> Groups:
    """`groupPods`: ignored (deleted, Failed), unready (Pending; CPU readiness rules), missing (no metric)."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        if pod.deleted or pod.phase == "Failed":
            ignored.add(pod.name)
            continue
        if pod.phase == "Pending":
            unready.add(pod.name)
            continue
        metric = metrics.get(pod.name)
        if metric is None:
            missing.add(pod.name)
            continue
        if resource == "cpu":
            if pod.ready is None or pod.start_time is None:
                is_unready = True
            else:
                transition = pod.ready_transition if pod.ready_transition is not None else 0.0
                if pod.start_time + cpu_initialization_period > now:
                    # Within the initialisation period: unready, or no full metric window since the transition.
                    is_unready = pod.ready == "False" or metric.timestamp < transition + metric.window
                else:
                    # Unready and never became ready.
                    is_unready = pod.ready == "False" and pod.start_time + initial_readiness_delay > transition
            if is_unready:
                unready.add(pod.name)
                continue
        ready += 1
    return Groups(ready, unready, missing, ignored)


def pod_requests(pods: list[Pod], container: str, resource: str, basis: str = "requests") -> dict[str, int]:
    """`calculatePodRequests`: per pod, the sum of container requests (or limits, for MemHpa), milli.

    Restartable init containers count; a named container counts alone; a pod-level
    value is used when set and no container is named. Any missing value is an error.
    """
    word = "request" if basis == "requests" else "limit"
    out: dict[str, int] = {}
    for pod in pods:
        pod_level = pod.requests if basis == "requests" else pod.limits
        if not container and pod_level:
            if resource not in pod_level:
                raise MetricError(f"missing pod-level {word} for {resource} in Pod {pod.name}")
            out[pod.name] = pod_level[resource]
            continue
        total = 0
        for c in (*pod.containers, *pod.init_containers):
            if container and c.name != container:
                continue
            values = c.requests if basis == "requests" else c.limits
            if resource not in values:
                raise MetricError(f"missing {word} for {resource} in container {c.name} of Pod {pod.name}")
            total += values[resource]
        out[pod.name] = total
    return out


def utilization_ratio(metrics: dict[str, int], requests: dict[str, int], target: int) -> tuple[float, int, int]:
    """`GetResourceUtilizationRatio`: (ratio, utilization %, raw average value)."""
    metrics_total = 0
    requests_total = 0
    entries = 0
    for name, value in metrics.items():
        request = requests.get(name)
        if request is None:
            continue  # extraneous metric
        metrics_total += value
        requests_total += request
        entries += 1
    if requests_total == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = go_div(metrics_total * 100, requests_total)
    utilization = max(MIN_INT32, min(MAX_INT32, utilization))
    return utilization / target, utilization, go_div(metrics_total, entries)


def usage_ratio(metrics: dict[str, int], target: int) -> tuple[float, int]:
    """`GetMetricUsageRatio`: (ratio, average usage)."""
    usage = go_div(sum(metrics.values()), len(metrics))
    return usage / target, usage


@dataclass(slots=True)
class Proposal:
    replicas: int
    utilization: int | None = None   # percent, for Utilization targets
    value: int | None = None         # milli: the average (Resource raw, Pods) or the value (Object, External)
    ready_count: int = 0
    unready: int = 0
    missing: int = 0
    ignored: int = 0
    ratio: float = 0.0


def resource_replicas(current: int, target_utilization: int, resource: str, pods: list[Pod],
                      metrics: dict[str, PodMetric], tolerances: Tolerances, now: float,
                      cpu_initialization_period: float = 300.0, initial_readiness_delay: float = 30.0,
                      container: str = "", basis: str = "requests") -> Proposal:
    """`GetResourceReplicas` (Utilization target); `basis="limits"` is MemHpa's denominator."""
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    groups = group_pods(pods, metrics, resource, now, cpu_initialization_period, initial_readiness_delay)
    values = {name: m.value for name, m in metrics.items()
              if name not in groups.ignored and name not in groups.unready}
    if not values:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    requests = pod_requests(pods, container, resource, basis)
    ratio, utilization, raw = utilization_ratio(values, requests, target_utilization)
    result = Proposal(current, utilization, raw, groups.ready_count, len(groups.unready), len(groups.missing),
                      len(groups.ignored), ratio)

    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        if tolerances.within(ratio):
            return result
        result.replicas = go_ceil_int32(ratio * groups.ready_count)
        return result

    if groups.missing:
        if ratio < 1.0:
            fallback = max(100, target_utilization)
            for name in groups.missing:
                values[name] = go_div(requests[name] * fallback, 100)
        elif ratio > 1.0:
            for name in groups.missing:
                values[name] = 0
    if scale_up_with_unready:
        for name in groups.unready:
            values[name] = 0

    new_ratio, _, _ = utilization_ratio(values, requests, target_utilization)
    result.ratio = new_ratio
    if tolerances.within(new_ratio) or (ratio > 1.0 and new_ratio < 1.0) or (ratio < 1.0 and new_ratio > 1.0):
        return result
    new_replicas = go_ceil_int32(new_ratio * len(values))
    if (new_ratio < 1.0 and new_replicas > current) or (new_ratio > 1.0 and new_replicas < current):
        return result
    result.replicas = new_replicas
    return result


def plain_metric_replicas(current: int, target_usage: int, resource: str, pods: list[Pod],
                          metrics: dict[str, PodMetric], tolerances: Tolerances, now: float,
                          cpu_initialization_period: float = 300.0,
                          initial_readiness_delay: float = 30.0) -> Proposal:
    """`calcPlainMetricReplicas`: Resource AverageValue and Pods metrics."""
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    groups = group_pods(pods, metrics, resource, now, cpu_initialization_period, initial_readiness_delay)
    values = {name: m.value for name, m in metrics.items()
              if name not in groups.ignored and name not in groups.unready}
    if not values:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    ratio, usage = usage_ratio(values, target_usage)
    result = Proposal(current, None, usage, groups.ready_count, len(groups.unready), len(groups.missing),
                      len(groups.ignored), ratio)

    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        if tolerances.within(ratio):
            return result
        result.replicas = go_ceil_int32(ratio * groups.ready_count)
        return result

    if groups.missing:
        fill = target_usage if ratio < 1.0 else 0
        for name in groups.missing:
            values[name] = fill
    if scale_up_with_unready:
        for name in groups.unready:
            values[name] = 0

    new_ratio, _ = usage_ratio(values, target_usage)
    result.ratio = new_ratio
    if tolerances.within(new_ratio) or (ratio > 1.0 and new_ratio < 1.0) or (ratio < 1.0 and new_ratio > 1.0):
        return result
    new_replicas = go_ceil_int32(new_ratio * len(values))
    if (new_ratio < 1.0 and new_replicas > current) or (new_ratio > 1.0 and new_replicas < current):
        return result
    result.replicas = new_replicas
    return result


def ready_pods_count(pods: list[Pod]) -> int:
    """`getReadyPodsCount`: Running and Ready."""
    if not pods:
        raise MetricError("unable to calculate ready pods: no pods returned by selector while calculating "
                          "replica count")
    return sum(1 for p in pods if p.running_and_ready)


def usage_ratio_replicas(current: int, ratio: float, tolerances: Tolerances, pods: list[Pod]) -> int:
    """`getUsageRatioReplicaCount`: Value targets of Object and External metrics."""
    if current != 0:
        if tolerances.within(ratio):
            return current
        return go_ceil_int32(ratio * ready_pods_count(pods))
    return go_ceil_int32(ratio)  # scale to or from zero


def value_replicas(current: int, target: int, usage: int, tolerances: Tolerances, pods: list[Pod]) -> Proposal:
    """`GetObjectMetricReplicas` / `GetExternalMetricReplicas` once the value is known."""
    ratio = usage / target
    return Proposal(usage_ratio_replicas(current, ratio, tolerances, pods), value=usage, ratio=ratio)


def average_value_replicas(status_replicas: int, target_average: int, usage: int,
                           tolerances: Tolerances) -> Proposal:
    """`GetObjectPerPodMetricReplicas` / `GetExternalPerPodMetricReplicas`; value is the per-pod average."""
    replicas = status_replicas
    ratio = usage / (float(target_average) * float(replicas)) if replicas else math.copysign(math.inf, usage) if usage else math.nan
    if not tolerances.within(ratio):
        replicas = go_ceil_int32(usage / target_average)
    per_pod = usage / status_replicas if status_replicas else (math.inf if usage > 0 else math.nan)
    average = math.ceil(per_pod) if math.isfinite(per_pod) else (MAX_INT64 if per_pod == math.inf else -MAX_INT64 - 1)
    return Proposal(replicas, value=average, ratio=ratio)


def sum_external(values: list[int]) -> int:
    """The sum of every returned series, capped at MaxInt64 as upstream does."""
    total = 0
    for v in values:
        total += v
        if total >= MAX_INT64:
            return MAX_INT64
    return total
