"""The recommender's settings with upstream's defaults (config/config.go, model/aggregations_config.go)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

DAY = 86400.0
MIB = 1024 * 1024


@dataclass(frozen=True)
class Config:
    """Every knob of the model. Durations in seconds, memory in bytes, CPU in millicores."""

    target_percentile_cpu: float = 0.9
    target_percentile_memory: float = 0.9
    lower_bound_percentile_cpu: float = 0.5
    lower_bound_percentile_memory: float = 0.5
    upper_bound_percentile_cpu: float = 0.95
    upper_bound_percentile_memory: float = 0.95
    safety_margin: float = 0.15
    pod_min_cpu_millicores: float = 25.0
    pod_min_memory_mb: float = 250.0
    cpu_half_life: float = DAY
    memory_half_life: float = DAY
    memory_aggregation_interval: float = DAY
    memory_aggregation_interval_count: int = 8
    oom_bump_up_ratio: float = 1.2
    oom_min_bump_up_bytes: float = 100.0 * MIB
    # Upper bound: (1 + multiplier/confidence) ** exponent; lower bound likewise.
    upper_bound_confidence_multiplier: float = 1.0
    upper_bound_confidence_exponent: float = 1.0
    lower_bound_confidence_multiplier: float = 0.001
    lower_bound_confidence_exponent: float = -2.0
    # --container-recommendation-max-allowed-cpu / -memory (0: none).
    max_allowed_cpu_millicores: int = 0
    max_allowed_memory_bytes: int = 0

    @property
    def memory_aggregation_window(self) -> float:
        return self.memory_aggregation_interval * self.memory_aggregation_interval_count

    def with_overrides(self, overrides: dict[str, Any]) -> "Config":
        """Apply camelCase (simulate files, upstream flag spirit) or snake_case overrides.

        Raises ValueError naming the key when a key is unknown or a value is not a number.
        """
        known = {f.name: f for f in fields(self)}
        camel = {_camel(n): n for n in known}
        aliases = {
            "targetPercentile": ("target_percentile_cpu", "target_percentile_memory"),
            "lowerBoundPercentile": ("lower_bound_percentile_cpu", "lower_bound_percentile_memory"),
            "upperBoundPercentile": ("upper_bound_percentile_cpu", "upper_bound_percentile_memory"),
            "halfLife": ("cpu_half_life", "memory_half_life"),
            "podMinCPUMillicores": ("pod_min_cpu_millicores",),
            "podMinMemoryMb": ("pod_min_memory_mb",),
            "oomMinBumpUp": ("oom_min_bump_up_bytes",),
            "memoryAggregationIntervalSeconds": ("memory_aggregation_interval",),
        }
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            if key in aliases:
                names: tuple[str, ...] = aliases[key]
            elif key in known:
                names = (key,)
            elif key in camel:
                names = (camel[key],)
            else:
                raise ValueError(f"config.{key}: unknown setting; known: {', '.join(sorted(set(camel) | set(aliases)))}")
            for name in names:
                changes[name] = _coerce(key, name, value)
        return replace(self, **changes)


DURATION_FIELDS = {"cpu_half_life", "memory_half_life", "memory_aggregation_interval"}


def _coerce(key: str, name: str, value: Any) -> Any:
    if name in DURATION_FIELDS and isinstance(value, str):
        from promop.vpa.timeutil import parse_duration

        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ValueError(f"config.{key}: {exc}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"config.{key}: want a number, got {value!r}")
    if name in ("memory_aggregation_interval_count", "max_allowed_cpu_millicores", "max_allowed_memory_bytes"):
        return int(value)
    return float(value)


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


DEFAULT = Config()
