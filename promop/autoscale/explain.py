"""A decision in words: what each metric proposed and why, then what normalization did to it."""

from __future__ import annotations

from collections.abc import Mapping

from promop.autoscale.hpa import Decision, MetricResult
from promop.quantity import format_milli
from promop.autoscale.spec import HpaSpec


def _metric_line(m: MetricResult) -> str:
    s = m.spec
    label = f"{s.type} {s.container + '/' if s.container else ''}{s.name}"
    if m.error is not None:
        return f"{label}: no proposal: {m.error}"
    d = m.details
    if m.utilization is not None:
        of = "limit" if s.basis == "limits" else "request"  # a MemHpa's utilization is of the memory limit
        basis = (f"{m.utilization}% of {of} (average {format_milli(m.average_value)}) against a target of "
                 f"{s.average_utilization}%")
    elif s.type in ("Resource", "ContainerResource", "Pods"):
        basis = f"average {format_milli(m.average_value)} per pod against a target of {format_milli(s.average_value)}"
    elif m.value is not None:
        basis = f"value {format_milli(m.value)} against a target of {format_milli(s.value)}"
    else:
        basis = (f"{format_milli(m.average_value)} per replica against a target average of "
                 f"{format_milli(s.average_value)}")
    tail = ""
    if d is not None:
        tail = f", ratio {d.ratio:.3f}"
        if s.type in ("Resource", "ContainerResource", "Pods"):
            tail = f" over {d.ready_count} ready pods"
            extra = [f"{n} {w}" for n, w in ((d.unready, "unready"), (d.missing, "missing"), (d.ignored, "ignored"))
                     if n]
            if extra:
                tail += f" ({', '.join(extra)}), ratio after filling them in {d.ratio:.3f}"
            else:
                tail += f", ratio {d.ratio:.3f}"
    return f"{label}: {basis}{tail} -> {m.replicas} replicas"


def _superfluous_line(m: MetricResult, pods: list[str]) -> str:
    """What upstream's calculator does with samples of pods it does not list (pods that went away):
    a Utilization target skips them (no request to divide by: GetResourceUtilizationRatio); an
    average (GetMetricUsageRatio) still counts them, over the ready pods listed."""
    names = ", ".join(pods)
    if m.utilization is not None:
        return (f"  ignored samples of pods not in the pod list ({names}): pods that went away, "
                "skipped as upstream's replica calculator skips them")
    return (f"  samples of pods not in the pod list ({names}) still count in the average, as in upstream's "
            "replica calculator (it averages every sample the metrics API returns)")


def explain(d: Decision, spec: HpaSpec,
            superfluous: Mapping[tuple[str, str, str], list[str]] | None = None) -> list[str]:
    """The decision in words; `superfluous` (Scenario.superfluous) names samples of pods not listed."""
    lines = [f"current size {d.current_replicas}; bounds [{spec.min_replicas}, {spec.max_replicas}]"
             + ("; behavior set" if spec.behavior is not None else "; no behavior (legacy normalization)")]
    active = d.condition("ScalingActive")
    if active is not None and active.reason == "ScalingDisabled":
        lines.append("scaling is disabled: the target has 0 replicas and minReplicas is not 0")
    elif d.metric_replicas is None and not d.metrics:
        lines.append(f"metrics not read: {d.reason}")
    for m in d.metrics:
        lines.append(_metric_line(m))
        extra = (superfluous or {}).get((m.spec.type, m.spec.container, m.spec.name))
        if extra and m.error is None:
            lines.append(_superfluous_line(m, extra))
    if d.error and d.metric_replicas is None:
        lines.append(f"no decision: {d.error}; the size stays {d.current_replicas}")
        return lines
    if d.error:
        lines.append(f"some metrics failed ({d.error}); scaling up is still allowed, scaling down is not")
    if d.metric_replicas is not None:
        lines.append(f"largest proposal: {d.metric_replicas} ({d.metric_name})")
    if d.stabilized is not None:
        if d.stabilized != d.metric_replicas:
            why = ("recent recommendations were higher than this one" if d.stabilization_reason == "ScaleDownStabilized"
                   else "recent recommendations were lower than this one")
            lines.append(f"stabilized to {d.stabilized} ({d.stabilization_reason}: {why})")
        else:
            lines.append("stabilization window: no change")
    if d.limited is not None:
        if d.limited != d.stabilized:
            limited = d.condition("ScalingLimited")
            lines.append(f"limited to {d.limited} ({d.limit_reason}: {limited.message if limited else ''})")
        else:
            lines.append("within the allowed range and rate")
    if d.cooldown_reason is not None:
        able = d.condition("AbleToScale")
        lines.append(f"held at {d.desired_replicas} by the cool-down ({d.cooldown_reason}: "
                     f"{able.message if able else ''})")
    if d.rescale:
        lines.append(f"scale from {d.current_replicas} to {d.desired_replicas}: {d.reason}")
    else:
        lines.append(f"keep {d.current_replicas} replicas")
    return lines
