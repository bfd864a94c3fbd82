"""The estimator chain, the per-container floors, controlledResources and capping (logic/, routines/).

`recommend` is upstream's podResourceRecommender plus the capping post-processor;
`explain_container` returns every intermediate value with the rule that made it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from promop.vpa.amounts import (
    MAX_RESOURCE_AMOUNT,
    cpu_amount_from_cores,
    memory_amount_from_bytes,
    scale_resource,
)
from promop.vpa.config import DEFAULT, MIB, Config
from promop.vpa.state import CPU, MEMORY, AggregateContainerState

RESOURCES = (CPU, MEMORY)
DAY = 86400.0


def confidence(s: AggregateContainerState) -> float:
    """min(history span in days, samples / 1440): one day of one sample a minute is 1.0."""
    lifespan_days = (s.last_sample_start - s.first_sample_start) / DAY
    samples_amount = s.total_samples_count / (60 * 24)
    return min(lifespan_days, samples_amount)


def confidence_factor(multiplier: float, exponent: float, c: float) -> float:
    """(1 + multiplier/c) ** exponent with Go's float semantics at c = 0 (+Inf, so x**-2 -> 0)."""
    if c == 0:
        base = math.inf if multiplier > 0 else (math.nan if multiplier == 0 else -math.inf)
    else:
        base = 1.0 + multiplier / c
    try:
        return math.pow(base, exponent)
    except (OverflowError, ValueError):
        return math.inf


@dataclass
class Bounds:
    """One resource's numbers through the chain (amounts are int64 millicores or bytes)."""

    percentile: dict[str, float] = field(default_factory=dict)   # target/lower/upper -> raw percentile value
    base: dict[str, int] = field(default_factory=dict)
    with_margin: dict[str, int] = field(default_factory=dict)
    with_confidence: dict[str, int] = field(default_factory=dict)
    floored: dict[str, int] = field(default_factory=dict)


@dataclass
class ContainerRecommendation:
    """Target, lowerBound, upperBound, uncappedTarget as {resource: amount}; `steps` keeps the chain."""

    name: str
    target: dict[str, int]
    lower_bound: dict[str, int]
    upper_bound: dict[str, int]
    uncapped_target: dict[str, int]
    confidence: float = 0.0
    upper_factor: float = 0.0
    lower_factor: float = 0.0
    min_resources: dict[str, int] = field(default_factory=dict)
    steps: dict[str, Bounds] = field(default_factory=dict)
    capped: list[str] = field(default_factory=list)

    def as_status(self) -> dict:
        """status.recommendation.containerRecommendations[] entry."""
        from promop.quantity import format_bytes, format_milli

        def rl(amounts: dict[str, int]) -> dict[str, str]:
            out = {}
            if CPU in amounts:
                out[CPU] = format_milli(amounts[CPU])
            if MEMORY in amounts:
                out[MEMORY] = format_bytes(amounts[MEMORY])
            return out

        return {"containerName": self.name, "target": rl(self.target), "lowerBound": rl(self.lower_bound),
                "upperBound": rl(self.upper_bound), "uncappedTarget": rl(self.uncapped_target)}


@dataclass(frozen=True)
class ContainerPolicy:
    """resourcePolicy.containerPolicies[] entry, amounts already parsed."""

    container_name: str = "*"
    mode: str = "Auto"
    min_allowed: dict = field(default_factory=dict)   # resource -> amount
    max_allowed: dict = field(default_factory=dict)
    controlled_resources: tuple = RESOURCES
    # Per-VPA intake overrides (upstream's PerVPAConfig): None keeps the recommender's setting.
    oom_bump_up_ratio: float | None = None
    oom_min_bump_up_bytes: float | None = None
    memory_aggregation_interval: float | None = None
    memory_aggregation_interval_count: int | None = None

    def intake_config(self, base: Config) -> Config:
        """The recommender's config with this policy's intake overrides applied."""
        from dataclasses import replace

        changes = {k: getattr(self, k) for k in ("oom_bump_up_ratio", "oom_min_bump_up_bytes",
                                                 "memory_aggregation_interval", "memory_aggregation_interval_count")
                   if getattr(self, k) is not None}
        return replace(base, **changes) if changes else base

    @classmethod
    def from_spec(cls, spec: dict, where: str = "containerPolicies[]") -> "ContainerPolicy":
        """Parse upstream's fields; ValueError names the field."""
        from promop.quantity import int_value, milli_value, parse_quantity

        def amounts(key: str) -> dict:
            out = {}
            for res, q in (spec.get(key) or {}).items():
                try:
                    if res == CPU:
                        out[CPU] = milli_value(q)
                    elif res == MEMORY:
                        out[MEMORY] = int_value(q)
                except ValueError as exc:
                    raise ValueError(f"{where}.{key}.{res}: {exc}") from None
            return out

        controlled = spec.get("controlledResources")
        if controlled is None:
            controlled = list(RESOURCES)
        if not isinstance(controlled, list) or any(r not in RESOURCES for r in controlled):
            raise ValueError(f"{where}.controlledResources: want a list of cpu and/or memory, got {controlled!r}")
        mode = spec.get("mode") or "Auto"
        if mode not in ("Auto", "Off"):
            raise ValueError(f"{where}.mode: want Auto or Off, got {mode!r}")
        overrides: dict = {}
        try:
            if spec.get("oomBumpUpRatio") is not None:
                overrides["oom_bump_up_ratio"] = float(parse_quantity(spec["oomBumpUpRatio"]))
                if overrides["oom_bump_up_ratio"] < 1:
                    raise ValueError("must be at least 1")
        except ValueError as exc:
            raise ValueError(f"{where}.oomBumpUpRatio: {exc}") from None
        try:
            if spec.get("oomMinBumpUp") is not None:
                overrides["oom_min_bump_up_bytes"] = float(int_value(spec["oomMinBumpUp"]))
        except ValueError as exc:
            raise ValueError(f"{where}.oomMinBumpUp: {exc}") from None
        for key, name in (("memoryAggregationIntervalSeconds", "memory_aggregation_interval"),
                          ("memoryAggregationIntervalCount", "memory_aggregation_interval_count")):
            v = spec.get(key)
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    raise ValueError(f"{where}.{key}: want a positive integer, got {v!r}")
                overrides[name] = float(v) if name == "memory_aggregation_interval" else v
        return cls(container_name=str(spec.get("containerName") or "*"), mode=mode,
                   min_allowed=amounts("minAllowed"), max_allowed=amounts("maxAllowed"),
                   controlled_resources=tuple(controlled), **overrides)


def container_policy(name: str, policies: list[ContainerPolicy]) -> ContainerPolicy | None:
    """api_utils.GetContainerResourcePolicy: the container's own entry, else the '*' entry."""
    default = None
    for p in policies:
        if p.container_name == name:
            return p
        if p.container_name == "*":
            default = p
    return default


def min_resources(config: Config, num_containers: int) -> dict[str, int]:
    """The pod floors (25m, 250 MiB) split equally, each share truncated."""
    fraction = 1.0 / float(num_containers)
    return {
        CPU: scale_resource(cpu_amount_from_cores(config.pod_min_cpu_millicores * 0.001), fraction),
        MEMORY: scale_resource(memory_amount_from_bytes(config.pod_min_memory_mb * MIB), fraction),
    }


def estimate(s: AggregateContainerState, config: Config, floors: dict[str, int], name: str = "",
             trace: bool = False) -> ContainerRecommendation:
    """Percentile -> margin -> confidence multiplier (bounds only) -> floor, for cpu and memory.

    Amounts are int64 like upstream's ResourceAmount: every step truncates (resourceAmountFromFloat).
    With trace, `steps` keeps every intermediate value for explanations.
    """
    c = confidence(s)
    up = confidence_factor(config.upper_bound_confidence_multiplier, config.upper_bound_confidence_exponent, c)
    low = confidence_factor(config.lower_bound_confidence_multiplier, config.lower_bound_confidence_exponent, c)
    margin = config.safety_margin
    target: dict[str, int] = {}
    lower: dict[str, int] = {}
    upper: dict[str, int] = {}
    steps: dict[str, Bounds] = {}
    for res, h, scale, pcts in (
            (CPU, s.cpu, 1000.0, (config.target_percentile_cpu, config.lower_bound_percentile_cpu,
                                  config.upper_bound_percentile_cpu)),
            (MEMORY, s.memory, 1.0, (config.target_percentile_memory, config.lower_bound_percentile_memory,
                                     config.upper_bound_percentile_memory))):
        floor = floors[res]
        b = Bounds() if trace else None
        for which, p, factor, into in (("target", pcts[0], None, target), ("lower", pcts[1], low, lower),
                                       ("upper", pcts[2], up, upper)):
            v = h.percentile(p)
            base = _amount(v * scale)
            m = base + _amount(base * margin)
            cm = m if factor is None else _amount(m * factor)
            into[res] = cm if cm >= floor else floor
            if b is not None:
                b.percentile[which], b.base[which], b.with_margin[which] = v, base, m
                b.with_confidence[which], b.floored[which] = cm, into[res]
        if b is not None:
            steps[res] = b
    return ContainerRecommendation(name=name, target=target, lower_bound=lower, upper_bound=upper,
                                   uncapped_target=dict(target), confidence=c, upper_factor=up, lower_factor=low,
                                   min_resources=dict(floors), steps=steps)


def _amount(x: float) -> int:
    """resourceAmountFromFloat, inlined for the hot path (NaN and +Inf -> the maximum)."""
    if 0.0 <= x <= 1e14:
        return int(x)
    return 0 if x < 0.0 else MAX_RESOURCE_AMOUNT


def apply_policy(rec: ContainerRecommendation, policy: ContainerPolicy | None, config: Config = DEFAULT) -> None:
    """controlledResources filter, then minAllowed/maxAllowed, then the global max-allowed flags; in place."""
    controlled = policy.controlled_resources if policy else RESOURCES
    for d in (rec.target, rec.lower_bound, rec.upper_bound, rec.uncapped_target):
        for res in list(d):
            if res not in controlled:
                del d[res]
    global_max = {}
    if config.max_allowed_cpu_millicores:
        global_max[CPU] = config.max_allowed_cpu_millicores
    if config.max_allowed_memory_bytes:
        global_max[MEMORY] = config.max_allowed_memory_bytes
    from promop.quantity import format_bytes, format_milli

    def q(res: str, v: int) -> str:
        return format_milli(v) if res == CPU else format_bytes(v)

    for label, d in (("target", rec.target), ("lowerBound", rec.lower_bound), ("upperBound", rec.upper_bound)):
        for res, v in list(d.items()):
            if policy is not None and res in policy.min_allowed and v < policy.min_allowed[res]:
                rec.capped.append(f"{label}.{res} {q(res, v)} raised to minAllowed {q(res, policy.min_allowed[res])}")
                v = policy.min_allowed[res]
            mx = policy.max_allowed.get(res) if policy is not None else None
            if mx is None:
                mx = global_max.get(res)
            if mx is not None and v > mx:
                rec.capped.append(f"{label}.{res} {q(res, v)} lowered to maxAllowed {q(res, mx)}")
                v = mx
            d[res] = v


def recommend(states: dict[str, AggregateContainerState], policies: list[ContainerPolicy] | None = None,
              config: Config = DEFAULT) -> dict[str, ContainerRecommendation]:
    """Recommendations for one VPA: containers with mode Off or no CPU samples are left out (and not counted
    for the floor split), as upstream's GetContainerNameToAggregateStateMap does."""
    policies = policies or []
    chosen = {}
    for name, s in states.items():
        p = container_policy(name, policies)
        if p is not None and p.mode == "Off":
            continue
        if s.total_samples_count > 0:
            chosen[name] = s
    if not chosen:
        return {}
    floors = min_resources(config, len(chosen))
    out = {}
    for name in sorted(chosen):
        rec = estimate(chosen[name], config, floors, name)
        apply_policy(rec, container_policy(name, policies), config)
        out[name] = rec
    return out


__all__ = ["ContainerPolicy", "ContainerRecommendation", "MAX_RESOURCE_AMOUNT", "confidence", "estimate",
           "min_resources", "recommend", "apply_policy", "container_policy"]
