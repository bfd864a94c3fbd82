"""One pass of upstream's HPA controller (`reconcileAutoscaler`) without the API calls.

`decide` takes what the controller would have read (the spec, the target's
scale, its pods, what the metrics APIs returned, the controller's memory and the
time) and returns what it would do, with every intermediate value and upstream's
conditions, reasons and event wording.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promop.autoscale import calculator as calc
from promop.autoscale.model import History, MetricError, MetricValues, Options, Pod, Tolerances
from promop.autoscale.normalize import (
    Behavior, Condition, normalize, normalize_with_behaviors, record_initial_recommendation, store_scale_event,
)
from promop.quantity import format_milli
from promop.autoscale.spec import HpaSpec, MetricSpec


@dataclass(slots=True)
class MetricResult:
    spec: MetricSpec
    replicas: int | None = None
    utilization: int | None = None
    average_value: int | None = None   # milli
    value: int | None = None           # milli
    name: str = ""                     # upstream's metric description ("cpu resource utilization ...")
    error: str | None = None
    condition: Condition | None = None
    details: calc.Proposal | None = None

    def as_dict(self) -> dict:
        out: dict = {"type": self.spec.type, "name": self.spec.name}
        if self.spec.container:
            out["container"] = self.spec.container
        target = {"type": self.spec.target_type}
        if self.spec.average_utilization is not None:
            target["averageUtilization"] = self.spec.average_utilization
        if self.spec.average_value is not None:
            target["averageValue"] = format_milli(self.spec.average_value)
        if self.spec.value is not None:
            target["value"] = format_milli(self.spec.value)
        out["target"] = target
        if self.error is not None:
            out["error"] = self.error
            return out
        out["replicaProposal"] = self.replicas
        if self.utilization is not None:
            out["currentUtilization"] = self.utilization
        if self.average_value is not None:
            out["currentAverageValue"] = format_milli(self.average_value)
        if self.value is not None:
            out["currentValue"] = format_milli(self.value)
        d = self.details
        if d is not None:
            out["ratio"] = round(d.ratio, 6)
            if self.spec.type in ("Resource", "ContainerResource", "Pods"):
                out["pods"] = {"ready": d.ready_count, "unready": d.unready, "missing": d.missing,
                               "ignored": d.ignored}
        return out


@dataclass(slots=True)
class Decision:
    current_replicas: int
    desired_replicas: int
    rescale: bool
    reason: str                                  # upstream's rescale reason ("" when not rescaling)
    metrics: list[MetricResult] = field(default_factory=list)
    metric_replicas: int | None = None           # the max over metrics, before normalization
    metric_name: str = ""
    stabilized: int | None = None
    stabilization_reason: str | None = None
    limited: int | None = None
    limit_reason: str | None = None
    cooldown_reason: str | None = None           # MemHpa: the change waits for its forbidden window
    conditions: list[Condition] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)   # (type, reason, message)
    error: str | None = None
    history: History = field(default_factory=History)
    behavior: Behavior | None = None
    now: float = 0.0

    def history_after_rescale(self) -> History:
        """The controller's memory once the new size was written (`storeScaleEvent`)."""
        h = self.history.copy()
        if self.rescale:
            store_scale_event(h, self.behavior, self.current_replicas, self.desired_replicas, self.now)
        return h

    def condition(self, kind: str) -> Condition | None:
        for c in self.conditions:
            if c.type == kind:
                return c
        return None


def tolerances_for(spec: HpaSpec, options: Options) -> Tolerances:
    """`tolerancesForHpa`: per-direction `behavior.*.tolerance`, else the controller's."""
    t = Tolerances(options.tolerance, options.tolerance)
    if spec.behavior is not None:
        if spec.behavior.scale_down.tolerance is not None:
            t.down = spec.behavior.scale_down.tolerance
        if spec.behavior.scale_up.tolerance is not None:
            t.up = spec.behavior.scale_up.tolerance
    return t


def _unable(reason: str, err: str) -> Condition:
    return Condition("ScalingActive", "False", reason, f"the HPA was unable to compute the replica count: {err}")


def _selector_text(selector: dict | None) -> str:
    """Go's `%+v` of a *LabelSelector, as upstream prints it in the External metric's name."""
    if selector is None:
        return "nil"
    labels = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    ml = "map[" + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())) + "]"
    me = "[" + " ".join("{Key:%s Operator:%s Values:[%s]}" % (e.get("key"), e.get("operator"),
                                                            " ".join(e.get("values") or [])) for e in exprs) + "]"
    return f"&LabelSelector{{MatchLabels:{ml},MatchExpressions:{me},}}"


@dataclass(frozen=True, slots=True)
class _Inputs:
    """What every metric kind's computation reads, besides the metric itself."""
    spec_replicas: int
    status_replicas: int
    pods: list[Pod]
    values: MetricValues
    tolerances: Tolerances
    now: float
    options: Options


def compute_metric(metric: MetricSpec, spec_replicas: int, status_replicas: int, pods: list[Pod],
                   values: MetricValues, tolerances: Tolerances, now: float, options: Options) -> MetricResult:
    """`computeReplicasForMetric` for one metric spec; errors are kept in the result."""
    result = MetricResult(metric)
    inputs = _Inputs(spec_replicas, status_replicas, pods, values, tolerances, now, options)
    by_kind = {"Resource": _resource_metric, "ContainerResource": _resource_metric, "Pods": _pods_metric,
               "Object": _object_metric}
    try:
        by_kind.get(metric.type, _external_metric)(metric, result, inputs)
    except MetricError as exc:
        result.error = str(exc)
        result.replicas = None
    return result


def _resource_metric(m: MetricSpec, result: MetricResult, x: "_Inputs") -> None:
    """Resource and ContainerResource metrics: utilization of requests/limits, or an average value."""
    if m.type == "Resource":
        samples = x.values.resource.get(m.name)
        fail_reason = "FailedGetResourceMetric"
    else:
        samples = x.values.container_resource.get(m.container, {}).get(m.name)
        fail_reason = "FailedGetContainerResourceMetric"
    fetch_error = None if samples is not None else MetricError(
        f"unable to get metrics for resource {m.name}: "
        + x.values.errors.get(f"{m.type}/{m.name}", "no metrics returned from resource metrics API"))
    try:
        if m.average_value is not None:
            try:
                if fetch_error:
                    raise fetch_error
                p = calc.plain_metric_replicas(x.spec_replicas, m.average_value, m.name, x.pods,
                                               samples, x.tolerances, x.now, x.options.cpu_initialization_period,
                                               x.options.initial_readiness_delay)
            except MetricError as exc:
                raise MetricError(f"failed to get {m.name} usage: {exc}") from None
            result.replicas, result.average_value = p.replicas, p.value
            result.name = f"{m.name} resource"
        elif m.average_utilization is not None:
            try:
                if fetch_error:
                    raise fetch_error
                p = calc.resource_replicas(x.spec_replicas, m.average_utilization, m.name, x.pods,
                                           samples, x.tolerances, x.now, x.options.cpu_initialization_period,
                                           x.options.initial_readiness_delay, m.container,
                                           m.basis)
            except MetricError as exc:
                raise MetricError(f"failed to get {m.name} utilization: {exc}") from None
            result.replicas, result.utilization, result.average_value = p.replicas, p.utilization, p.value
            of = "request" if m.basis == "requests" else "limit"
            result.name = (f"{m.name} container resource utilization (percentage of {of})"
                           if m.type == "ContainerResource"
                           else f"{m.name} resource utilization (percentage of {of})")
        else:
            raise MetricError("invalid resource metric source: neither an average utilization target "
                              "nor an average value (usage) target was set")
        result.details = p
    except MetricError as exc:
        result.condition = _unable(fail_reason, str(exc))
        if m.type == "Resource":
            raise MetricError(f"failed to get {m.name} resource metric value: {exc}") from None
        raise MetricError(f"failed to get {m.container} container metric value: {exc}") from None


def _pods_metric(m: MetricSpec, result: MetricResult, x: "_Inputs") -> None:
    """Pods metrics: an average value per pod from the custom metrics API."""
    samples = x.values.pods.get(m.name)
    try:
        if samples is None:
            raise MetricError(f"unable to get metric {m.name}: "
                              + x.values.errors.get(f"Pods/{m.name}", "no metrics returned from custom "
                                                  "metrics API"))
        p = calc.plain_metric_replicas(x.spec_replicas, m.average_value, "", x.pods, samples, x.tolerances,
                                       x.now, x.options.cpu_initialization_period,
                                       x.options.initial_readiness_delay)
    except MetricError as exc:
        result.condition = _unable("FailedGetPodsMetric", str(exc))
        raise MetricError(f"failed to get pods metric value: {exc}") from None
    result.replicas, result.average_value, result.details = p.replicas, p.value, p
    result.name = f"pods metric {m.name}"


def _object_metric(m: MetricSpec, result: MetricResult, x: "_Inputs") -> None:
    """Object metrics: a value (or an average value) of one described object."""
    obj = m.described_object
    usage = x.values.object.get(m.name)
    try:
        if usage is None:
            raise MetricError(f"unable to get metric {m.name}: {obj.get('kind')} on "
                              f"{obj.get('name')} " + x.values.errors.get(
                                  f"Object/{m.name}", "no metrics returned from custom metrics API"))
        if m.target_type == "Value":
            p = calc.value_replicas(x.spec_replicas, m.value, usage, x.tolerances, x.pods)
            result.value = p.value
            result.name = f"{obj.get('kind')} metric {m.name}"
        else:
            p = calc.average_value_replicas(x.status_replicas, m.average_value, usage, x.tolerances)
            result.average_value = p.value
            result.name = f"external metric {m.name}({_selector_text(m.selector)})"
    except MetricError as exc:
        result.condition = _unable("FailedGetObjectMetric", str(exc))
        raise MetricError(f"failed to get object metric value: {exc}") from None
    result.replicas, result.details = p.replicas, p


def _external_metric(m: MetricSpec, result: MetricResult, x: "_Inputs") -> None:
    """External metrics: a value or an average value over the series' sum."""
    series = x.values.external.get(m.name)
    try:
        if series is None:
            raise MetricError(f"unable to get external metric {m.name}: "
                              + x.values.errors.get(f"External/{m.name}",
                                                  "no metrics returned from external metrics API"))
        usage = calc.sum_external(series)
        if m.average_value is not None:
            p = calc.average_value_replicas(x.status_replicas, m.average_value, usage, x.tolerances)
            result.average_value = p.value
        else:
            p = calc.value_replicas(x.spec_replicas, m.value, usage, x.tolerances, x.pods)
            result.value = p.value
    except MetricError as exc:
        result.condition = _unable("FailedGetExternalMetric", str(exc))
        raise MetricError(f"failed to get {m.name} external metric value: {exc}") from None
    result.replicas, result.details = p.replicas, p
    result.name = f"external metric {m.name}({_selector_text(m.selector)})"


@dataclass(slots=True)
class Cooldown:
    """MemHpa's normalization without `behavior` (the HPA's before 1.12): no change in a direction until
    `up`/`down` seconds have passed since the last scale."""
    last_scale_time: float | None
    up: float = 180.0
    down: float = 300.0


def normalize_with_cooldown(cooldown: Cooldown, current: int, desired: int, min_replicas: int, max_replicas: int,
                            now: float) -> tuple[int, int, Condition, Condition]:
    """Clamp as the legacy path does, then hold a change whose forbidden window has not passed."""
    from promop.autoscale.normalize import convert_with_rules

    result, reason, message = convert_with_rules(current, desired, min_replicas, max_replicas)
    limited = Condition("ScalingLimited", "False" if result == desired else "True", reason, message)
    back_down = back_up = False
    able = Condition("AbleToScale", "True", "ReadyForNewScale",
                     "the last scale time was sufficiently old as to warrant a new scale")
    last = cooldown.last_scale_time
    if last is not None:
        if not last + cooldown.down < now:
            back_down = True
            able = Condition("AbleToScale", "False", "BackoffDownscale",
                             "the time since the previous scale is still within the downscale forbidden window")
        if not last + cooldown.up < now:
            back_up = True
            able = Condition("AbleToScale", "False", "BackoffBoth" if back_down else "BackoffUpscale",
                             "the time since the previous scale is still within both the downscale and upscale "
                             "forbidden windows" if back_down else
                             "the time since the previous scale is still within the upscale forbidden window")
    held = result
    if (result > current and back_up) or (result < current and back_down):
        held = current
    return result, held, able, limited


def decide(spec: HpaSpec, spec_replicas: int, status_replicas: int, pods: list[Pod], values: MetricValues,
           history: History | None, now: float, options: Options | None = None,
           cooldown: Cooldown | None = None) -> Decision:
    """One reconcile pass: the desired size, why, and the controller's updated memory.

    With `cooldown` and no `behavior`, MemHpa's cool-down replaces the legacy stabilization.
    """
    options = options or Options()
    history = history.copy() if history is not None else History()
    current = spec_replicas
    record_initial_recommendation(history, current, now)
    behavior = _with_default_scale_down_window(spec.behavior, options)
    d = Decision(current, 0, True, "", history=history, behavior=behavior, now=now)
    able = Condition("AbleToScale", "True", "SucceededGetScale",
                     "the HPA controller was able to get the target's current scale")
    active: Condition | None = None
    limited: Condition | None = None

    if current == 0 and spec.min_replicas != 0:
        d.desired_replicas = 0
        d.rescale = False
        active = Condition("ScalingActive", "False", "ScalingDisabled",
                           "scaling is disabled since the replica count of the target is zero")
    elif current > spec.max_replicas:
        d.reason = "Current number of replicas above Spec.MaxReplicas"
        d.desired_replicas = spec.max_replicas
    elif current < spec.min_replicas:
        d.reason = "Current number of replicas below Spec.MinReplicas"
        d.desired_replicas = spec.min_replicas
    else:
        if not _propose(d, spec, _Inputs(spec_replicas, status_replicas, pods, values,
                                         tolerances_for(spec, options), now, options), able):
            return d
        active = Condition("ScalingActive", "True", "ValidMetricFound",
                           f"the HPA was able to successfully calculate a replica count from {d.metric_name}")
        able, limited = _normalize(d, spec, behavior, cooldown, options)

    if d.rescale:
        able = Condition("AbleToScale", "True", "SucceededRescale",
                         f"the HPA controller was able to update the target scale to {d.desired_replicas}")
        d.events.append(("Normal", "SuccessfulRescale", f"New size: {d.desired_replicas}; reason: {d.reason}"))
    else:
        d.desired_replicas = current
    d.conditions = [c for c in (able, active, limited) if c is not None]
    return d


def _with_default_scale_down_window(behavior: Behavior | None, options: Options) -> Behavior | None:
    """maybeInitScaleDownStabilizationWindow: the controller's flag fills an unset scale-down window."""
    if behavior is None or behavior.scale_down.stabilization_window_seconds is not None:
        return behavior
    return Behavior(behavior.scale_up, type(behavior.scale_down)(
        int(options.downscale_stabilization_window), behavior.scale_down.select_policy,
        behavior.scale_down.policies, behavior.scale_down.tolerance))


def _propose(d: Decision, spec: HpaSpec, x: _Inputs, able: Condition) -> bool:
    """Every metric's proposal, the largest wins (d.metric_replicas). False when the metrics cannot decide:
    all invalid, or some invalid and the valid ones would scale down (d says why, and keeps the size)."""
    replicas = 0
    invalid = 0
    first_error: str | None = None
    first_condition: Condition | None = None
    for metric in spec.metrics:
        r = compute_metric(metric, x.spec_replicas, x.status_replicas, x.pods, x.values, x.tolerances, x.now,
                           x.options)
        d.metrics.append(r)
        if r.error is not None:
            if invalid == 0:
                first_error, first_condition = r.error, r.condition
            invalid += 1
            continue
        if replicas == 0 or r.replicas > replicas:
            replicas, d.metric_name = r.replicas, r.name
    error = None
    if first_error is not None:
        error = f"invalid metrics ({invalid} invalid out of {len(spec.metrics)}), first error is: {first_error}"
    d.error = error
    if invalid >= len(spec.metrics) or (invalid > 0 and replicas < x.spec_replicas):
        d.conditions = [able, first_condition or _unable("InvalidMetricSourceType", first_error or "")]
        d.desired_replicas = d.current_replicas
        d.rescale = False
        d.events.append(("Warning", "FailedComputeMetricsReplicas", error or ""))
        return False
    d.metric_replicas = replicas
    return True


def _normalize(d: Decision, spec: HpaSpec, behavior: Behavior | None, cooldown: Cooldown | None,
               options: Options) -> tuple[Condition, Condition]:
    """The proposal through stabilization and limits (behaviors, the legacy window, or MemHpa's cool-down);
    sets d.desired_replicas and d.rescale and returns the AbleToScale and ScalingLimited conditions."""
    current, desired, now = d.current_replicas, d.metric_replicas, d.now
    if desired > current:
        d.reason = f"{d.metric_name} above target"
    if desired < current:
        d.reason = "All metrics below target"
    if behavior is None and cooldown is not None:
        clamped, result, able, limited = normalize_with_cooldown(cooldown, current, desired, spec.min_replicas,
                                                                 spec.max_replicas, now)
        d.limited, d.limit_reason = clamped, limited.reason
        if result != clamped:
            d.cooldown_reason = able.reason
        d.desired_replicas = result
        d.rescale = result != current
        return able, limited
    if behavior is None:
        n = normalize(d.history, current, desired, spec.min_replicas, spec.max_replicas, now,
                      options.downscale_stabilization_window)
    else:
        n = normalize_with_behaviors(d.history, current, desired, spec.min_replicas, spec.max_replicas,
                                     behavior, now)
    d.stabilized, d.stabilization_reason = n.stabilized, n.able_to_scale.reason
    d.limited, d.limit_reason = n.desired, n.scaling_limited.reason
    d.desired_replicas = n.desired
    d.rescale = n.desired != current
    return n.able_to_scale, n.scaling_limited
