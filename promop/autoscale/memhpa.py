"""MemHpa: scale a workload on the memory its pods use, as a share of their limits (or requests).

The resource (`autoscaling.promop.dev/v1alpha1`, kind MemHpa) keeps the
original's defaults and corrections (min < 1 -> 1, max < min -> min + 4,
target outside 1..100 -> 80), reported rather than written back. The decision
is the HPA's utilisation calculation on memory, with the original's cool-down
(3 min up, 5 min down since the last scale) unless `behavior` is set, in which
case the HPA's behaviors apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promop.autoscale.hpa import Cooldown, Decision, decide
from promop.autoscale.model import History, MetricValues, Options, Pod, PodMetric
from promop.autoscale.spec import HpaSpec, MetricSpec, SpecError, parse_behavior

GROUP = "autoscaling.promop.dev"
VERSION = "v1alpha1"
KIND = "MemHpa"
PLURAL = "memhpas"
DEFAULT_TARGET = 80
UPSCALE_WINDOW = 180.0
DOWNSCALE_WINDOW = 300.0
DEFAULT_QUERY = ('sum by (pod) (container_memory_working_set_bytes{namespace="{{namespace}}", '
                 'pod=~"{{pods}}", container!="", container!="POD"})')


@dataclass(slots=True)
class Correction:
    field: str
    message: str


@dataclass(slots=True)
class MemHpaSpec:
    target: dict                 # scaleTargetRef
    min_replicas: int
    max_replicas: int
    target_utilization: int
    utilization_base: str = "limits"
    behavior_raw: dict | None = None
    query: str = DEFAULT_QUERY
    corrections: list[Correction] = field(default_factory=list)

    def hpa_spec(self) -> HpaSpec:
        metric = MetricSpec("Resource", "memory", "Utilization", average_utilization=self.target_utilization,
                            basis=self.utilization_base)
        return HpaSpec(self.min_replicas, self.max_replicas, [metric], parse_behavior(self.behavior_raw))


def _int_or_none(value: object, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(path, f"must be an integer, got {value!r}")
    return value


def validate(spec: object) -> MemHpaSpec:
    """Defaults and corrections as the original MemHpa; raises SpecError for what cannot be corrected."""
    if not isinstance(spec, dict):
        raise SpecError("spec", "must be a mapping")
    ref = spec.get("scaleTargetRef")
    if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
        raise SpecError("spec.scaleTargetRef", "must give the kind and name of the workload to scale")
    corrections: list[Correction] = []
    min_replicas = _int_or_none(spec.get("minReplicas"), "spec.minReplicas")
    if min_replicas is None or min_replicas < 1:
        if min_replicas is not None:
            corrections.append(Correction("spec.minReplicas", f"minReplicas {min_replicas} is below 1; using 1"))
        min_replicas = 1
    max_replicas = _int_or_none(spec.get("maxReplicas"), "spec.maxReplicas")
    if max_replicas is None or max_replicas < min_replicas:
        corrections.append(Correction("spec.maxReplicas", (
            f"maxReplicas {max_replicas} is below minReplicas {min_replicas}" if max_replicas is not None
            else "maxReplicas is not set") + f"; using minReplicas + 4 = {min_replicas + 4}"))
        max_replicas = min_replicas + 4
    target = _int_or_none(spec.get("targetUtilizationPercentage"), "spec.targetUtilizationPercentage")
    if target is None or not 1 <= target <= 100:
        if target is not None:
            corrections.append(Correction("spec.targetUtilizationPercentage",
                                          f"targetUtilizationPercentage {target} is outside 1..100; using "
                                          f"{DEFAULT_TARGET}"))
        target = DEFAULT_TARGET
    base = spec.get("utilizationBase") or "limits"
    if base not in ("limits", "requests"):
        raise SpecError("spec.utilizationBase", f"must be limits or requests, got {base!r}")
    query = spec.get("query") or DEFAULT_QUERY
    if not isinstance(query, str):
        raise SpecError("spec.query", "must be a PromQL string")
    behavior = spec.get("behavior")
    parse_behavior(behavior, "spec.behavior")  # validate now, so errors name the field
    return MemHpaSpec(dict(ref), min_replicas, max_replicas, target, base, behavior, query, corrections)


def decide_memhpa(spec: MemHpaSpec, current: int, pods: list[Pod], usage_bytes: dict[str, float] | None,
                  last_scale_time: float | None, history: History | None, now: float,
                  error: str | None = None, status_replicas: int | None = None) -> Decision:
    """The decision for one MemHpa: `usage_bytes` is per-pod memory from Prometheus (None: the query failed,
    `error` says why)."""
    values = MetricValues()
    if usage_bytes is not None:
        values.resource["memory"] = {name: PodMetric(int(round(v * 1000)), now, 60.0)
                                     for name, v in usage_bytes.items()}
    elif error:
        values.errors["Resource/memory"] = error
    cooldown = Cooldown(last_scale_time, UPSCALE_WINDOW, DOWNSCALE_WINDOW) if spec.behavior_raw is None else None
    return decide(spec.hpa_spec(), current, current if status_replicas is None else status_replicas, pods,
                  values, history, now, Options(), cooldown)


def render_query(template: str, namespace: str, pod_names: list[str]) -> str:
    """The per-pod query: `{{namespace}}` and `{{pods}}` (an anchored regex of the pod names) substituted."""
    # Pod names are DNS subdomains: only "." is special in a regex; in a PromQL string its escape is doubled.
    pods = "|".join(n.replace(".", "\\\\.") for n in sorted(pod_names)) or "^$"
    return template.replace("{{namespace}}", namespace).replace("{{pods}}", pods)
