"""One line per intermediate value of a recommendation, saying where it came from (simulate and explain)."""

from __future__ import annotations

from promop.vpa.config import Config
from promop.quantity import format_bytes, format_milli
from promop.vpa.recommend import ContainerRecommendation
from promop.vpa.state import CPU, MEMORY, AggregateContainerState
from promop.vpa.timeutil import ZERO_TIME, format_time

WHICH = (("target", "target"), ("lower", "lowerBound"), ("upper", "upperBound"))


def _amount(res: str, v: int) -> str:
    if res == CPU:
        return format_milli(v)
    text = format_bytes(v)
    return f"{v} B" if text == str(v) else f"{v} B ({text})"


def _factor(x: float) -> str:
    return "+Inf" if x == float("inf") else f"{x:.6g}"


def _dur(seconds: float) -> str:
    if seconds % 86400 == 0:
        return f"{int(seconds // 86400)}d"
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    return f"{seconds:g}s"


def explain_lines(rec: ContainerRecommendation, state: AggregateContainerState, config: Config,
                  num_containers: int) -> list[str]:
    s = state
    lines = []
    span = (s.last_sample_start - s.first_sample_start) / 86400 if s.first_sample_start != ZERO_TIME else 0.0
    first = format_time(s.first_sample_start) if s.first_sample_start != ZERO_TIME else "-"
    last = format_time(s.last_sample_start) if s.last_sample_start != ZERO_TIME else "-"
    lines.append(f"history: {s.total_samples_count} CPU samples from {first} to {last} (span {span:.4f} days)")
    lines.append(f"confidence = min(span {span:.4f} d, samples {s.total_samples_count}/1440 = "
                 f"{s.total_samples_count / 1440:.4f}) = {rec.confidence:.6g}")
    lines.append(f"upper multiplier = (1 + {config.upper_bound_confidence_multiplier:g}/confidence)"
                 f"^{config.upper_bound_confidence_exponent:g} = {_factor(rec.upper_factor)}"
                 + ("  (no history span yet: the upper bound is unbounded, capped at 1e14)" if rec.confidence == 0
                    else ""))
    lines.append(f"lower multiplier = (1 + {config.lower_bound_confidence_multiplier:g}/confidence)"
                 f"^{config.lower_bound_confidence_exponent:g} = {_factor(rec.lower_factor)}")
    lines.append(f"floors = pod minimum ({config.pod_min_cpu_millicores:g}m, {config.pod_min_memory_mb:g} MiB) "
                 f"/ {num_containers} container(s), truncated = {format_milli(rec.min_resources[CPU])}, "
                 f"{_amount(MEMORY, rec.min_resources[MEMORY])}")
    pct = {CPU: (config.target_percentile_cpu, config.lower_bound_percentile_cpu, config.upper_bound_percentile_cpu),
           MEMORY: (config.target_percentile_memory, config.lower_bound_percentile_memory,
                    config.upper_bound_percentile_memory)}
    hists = {CPU: s.cpu, MEMORY: s.memory}
    for res in (CPU, MEMORY):
        h = hists[res]
        what = ("CPU usage (weight 0.1 per sample" if res == CPU else "daily memory peaks (weight 1.0 per "
                f"{_dur(config.memory_aggregation_interval)} interval")
        half = config.cpu_half_life if res == CPU else config.memory_half_life
        ref = format_time(h.reference_time) if h.reference_time != ZERO_TIME else "-"
        lines.append(f"{res} histogram: {what}, halving every {_dur(half)} back from {ref}), "
                     f"total weight {h.total_weight:.6g}, buckets {h.min_bucket}..{h.max_bucket}"
                     if not h.is_empty() else f"{res} histogram: empty (no samples): percentiles are 0")
        b = rec.steps[res]
        unit = "cores" if res == CPU else "bytes"
        for (key, label), p in zip(WHICH, pct[res]):
            v = b.percentile[key]
            bucket = h.percentile_bucket(p)
            where = (f"end of bucket {bucket}" if bucket is not None and bucket < h.options.num_buckets - 1
                     else (f"start of the last bucket {bucket}" if bucket is not None else "empty histogram"))
            conv = "x1000, truncated" if res == CPU else "truncated"
            line = (f"{res} {label}: p{p * 100:g} = {v:.10g} {unit} ({where}) -> {_amount(res, b.base[key])} "
                    f"({conv}); + margin int({b.base[key]} x {config.safety_margin:g}) = "
                    f"{_amount(res, b.with_margin[key])}")
            if key == "upper":
                line += f"; x upper multiplier {_factor(rec.upper_factor)} = {_amount(res, b.with_confidence[key])}"
            elif key == "lower":
                line += f"; x lower multiplier {_factor(rec.lower_factor)} = {_amount(res, b.with_confidence[key])}"
            floor = rec.min_resources[res]
            if b.with_confidence[key] < floor:
                line += f"; below the floor, raised to {_amount(res, floor)}"
            lines.append(line)
    for note in rec.capped:
        lines.append(f"policy: {note}")
    return lines


def format_result(name: str, rec: ContainerRecommendation | None, lines: list[str]) -> str:
    """A container's recommendation and the lines that explain it, as `simulate` and `explain` print them."""
    out = []
    if rec is None:
        out.append(f"container {name}: no recommendation")
    else:
        out.append(f"container {name}:")
        for label, d in (("target", rec.target), ("lowerBound", rec.lower_bound), ("upperBound", rec.upper_bound),
                         ("uncappedTarget", rec.uncapped_target)):
            parts = []
            if "cpu" in d:
                parts.append(f"cpu {format_milli(d['cpu'])}")
            if "memory" in d:
                b = d["memory"]
                parts.append(f"memory {b}" + (f" ({format_bytes(b)})" if format_bytes(b) != str(b) else ""))
            out.append(f"  {label + ':':<16}{'  '.join(parts) if parts else '-'}")
    out.append("why:")
    out.extend(f"  {line}" for line in lines)
    return "\n".join(out) + "\n"
