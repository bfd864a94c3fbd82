"""`promop recommender simulate`: samples from a file through the model, with every step explained.

The file format is issue 16's: config overrides, containersPerPod, now, cpu/memory/ooms samples, policy.
Every error is a ValueError naming the field (`cpu[3].cores: ...`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from promop.vpa.amounts import cpu_amount_from_cores, memory_amount_from_bytes
from promop.vpa.config import DEFAULT, Config
from promop.vpa.explain import explain_lines
from promop.quantity import int_value, parse_quantity
from promop.vpa.recommend import ContainerPolicy, ContainerRecommendation, apply_policy, estimate, min_resources
from promop.vpa.state import AggregateContainerState, ContainerState
from promop.vpa.timeutil import format_time, parse_time

KNOWN = {"config", "containersPerPod", "now", "cpu", "memory", "ooms", "policy", "containerName"}


@dataclass
class Samples:
    config: Config
    containers_per_pod: int
    now: float | None
    cpu: list[tuple[float, int]]          # (time, millicores)
    memory: list[tuple[float, int]]       # (time, bytes)
    ooms: list[tuple[float, int]]         # (time, memory request bytes)
    policy: ContainerPolicy | None
    container_name: str = "app"


@dataclass
class Result:
    recommendation: ContainerRecommendation | None
    state: AggregateContainerState
    lines: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        r = self.recommendation
        out: dict[str, Any] = {"explanation": self.lines}
        if r is None:
            out["recommendation"] = None
            return out
        out["recommendation"] = r.as_status()
        out["amounts"] = {"target": r.target, "lowerBound": r.lower_bound, "upperBound": r.upper_bound,
                          "uncappedTarget": r.uncapped_target}
        out["confidence"] = r.confidence
        return out


def _time(item: Any, where: str) -> float:
    if not isinstance(item, dict) or "time" not in item:
        raise ValueError(f"{where}.time: missing (each sample is {{time: RFC 3339, ...}})")
    try:
        return parse_time(item["time"])
    except ValueError as exc:
        raise ValueError(f"{where}.time: {exc}") from None


def _number(item: dict, key: str, where: str, parse) -> Any:
    if key not in item:
        raise ValueError(f"{where}.{key}: missing")
    try:
        value = parse(item[key])
    except ValueError as exc:
        raise ValueError(f"{where}.{key}: {exc}") from None
    if value < 0:
        raise ValueError(f"{where}.{key}: must not be negative, got {item[key]!r}")
    return value


def _list(doc: dict, key: str) -> list[tuple[str, dict]]:
    """The samples of a list as (where, item); `{from, to, every, ...}` expands to one item per step."""
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{key}: want a list of samples, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        if isinstance(item, dict) and "from" in item:
            out.extend(_expand(item, where))
        else:
            out.append((where, item))
    return out


MAX_EXPANDED = 1_000_000


def _expand(item: dict, where: str) -> list[tuple[str, dict]]:
    from promop.vpa.timeutil import parse_duration

    for k in ("to", "every"):
        if k not in item:
            raise ValueError(f"{where}.{k}: missing (a range is {{from, to, every, ...}}; to is exclusive)")
    try:
        start = parse_time(item["from"])
    except ValueError as exc:
        raise ValueError(f"{where}.from: {exc}") from None
    try:
        end = parse_time(item["to"])
    except ValueError as exc:
        raise ValueError(f"{where}.to: {exc}") from None
    try:
        step = parse_duration(item["every"])
    except ValueError as exc:
        raise ValueError(f"{where}.every: {exc}") from None
    if step <= 0:
        raise ValueError(f"{where}.every: must be positive")
    if (end - start) / step > MAX_EXPANDED:
        raise ValueError(f"{where}: more than {MAX_EXPANDED} samples")
    rest = {k: v for k, v in item.items() if k not in ("from", "to", "every")}
    out, t = [], start
    while t < end:
        out.append((where, {**rest, "time": t}))
        t = start + len(out) * step
    return out


def parse_samples(doc: Any) -> Samples:
    """Validate a decoded samples file; ValueError names the first bad field."""
    if not isinstance(doc, dict):
        raise ValueError("top level: want a mapping with cpu, memory, ooms, ...")
    unknown = sorted(set(doc) - KNOWN)
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown field; known: {', '.join(sorted(KNOWN))}")
    cfg = doc.get("config") or {}
    if not isinstance(cfg, dict):
        raise ValueError("config: want a mapping of settings")
    config = DEFAULT.with_overrides(cfg)
    n = doc.get("containersPerPod", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"containersPerPod: want an integer >= 1, got {n!r}")
    now = None
    if doc.get("now") is not None:
        try:
            now = parse_time(doc["now"])
        except ValueError as exc:
            raise ValueError(f"now: {exc}") from None
    cpu = []
    for where, item in _list(doc, "cpu"):
        t = _time(item, where)
        cores = _number(item, "cores", where, lambda v: float(parse_quantity(v)))
        cpu.append((t, cpu_amount_from_cores(cores)))
    memory = []
    for where, item in _list(doc, "memory"):
        t = _time(item, where)
        memory.append((t, memory_amount_from_bytes(float(_number(item, "bytes", where, int_value)))))
    ooms = []
    for where, item in _list(doc, "ooms"):
        t = _time(item, where)
        ooms.append((t, _number(item, "memoryRequest", where, int_value)))
    policy = None
    if doc.get("policy") is not None:
        if not isinstance(doc["policy"], dict):
            raise ValueError("policy: want a mapping (minAllowed, maxAllowed, controlledResources, mode)")
        policy = ContainerPolicy.from_spec(doc["policy"], where="policy")
    name = str(doc.get("containerName") or "app")
    return Samples(config, n, now, cpu, memory, ooms, policy, name)


def feed(container: ContainerState, samples: Samples) -> None:
    """Samples in time order, as the history provider sorts them; at one instant memory before OOMs."""
    for t, m in sorted(samples.cpu, key=lambda x: x[0]):
        container.add_cpu_sample(m, t)
    events = [(t, 0, b) for t, b in samples.memory] + [(t, 1, r) for t, r in samples.ooms]
    for t, kind, v in sorted(events, key=lambda e: (e[0], e[1])):
        if kind == 0:
            container.add_memory_sample(v, t)
        else:
            container.record_oom(t, v)


def simulate(samples: Samples) -> Result:
    state = AggregateContainerState(samples.config)
    container = ContainerState(state, samples.config)
    feed(container, samples)
    name = samples.container_name
    rec = None
    mode_off = samples.policy is not None and samples.policy.mode == "Off"
    if state.total_samples_count > 0 and not mode_off:
        # The pod's other containers count only for the floor split (containersPerPod).
        rec = estimate(state, samples.config, min_resources(samples.config, samples.containers_per_pod), name,
                       trace=True)
        apply_policy(rec, samples.policy, samples.config)
    lines: list[str] = []
    d = container.dropped
    if d["cpu"] or d["memory"] or d["oom"]:
        lines.append(f"dropped: {d['cpu']} CPU samples not newer than the previous one, {d['memory']} memory "
                     f"samples older than the last one, {d['oom']} OOMs older than the last memory sample minus one interval")
    if samples.ooms:
        lines.append(f"ooms: {len(samples.ooms) - d['oom']} recorded, each as max(used + "
                     f"{samples.config.oom_min_bump_up_bytes:.0f} B, used x {samples.config.oom_bump_up_ratio:g}) "
                     "with used = max(memory request, the interval's usage peak)")
    if rec is None:
        lines.append("no recommendation: " + ("policy.mode is Off" if mode_off else "no CPU samples (upstream "
                     "recommends only for containers with CPU samples)"))
        return Result(None, state, lines)
    lines += explain_lines(rec, state, samples.config, samples.containers_per_pod)
    if samples.now is not None and state.is_expired(samples.now, samples.config):
        lines.append(f"note: at now={format_time(samples.now)} the last CPU sample is older than the "
                     f"{samples.config.memory_aggregation_window / 86400:g}-day window: upstream would have "
                     "garbage-collected this state")
    return Result(rec, state, lines)
