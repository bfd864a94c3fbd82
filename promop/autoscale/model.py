"""The plain data the algorithm works on.

Quantities are integers in milli-units (as upstream's `MilliValue()`); times are
seconds since the epoch (floats); durations are seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class MetricError(Exception):
    """One metric could not be computed; the message is upstream's wording."""


@dataclass(slots=True)
class Container:
    name: str
    requests: dict[str, int] = field(default_factory=dict)   # resource -> milli
    limits: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Pod:
    """What the calculator reads of a pod.

    `ready` is the status of the Ready condition ("True", "False", "Unknown") or
    None when the pod has no Ready condition. `init_containers` holds only the
    restartable (sidecar) init containers, the ones whose requests count.
    """
    name: str
    phase: str = "Running"
    ready: str | None = "True"
    ready_transition: float | None = None
    start_time: float | None = None
    deleted: bool = False
    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    requests: dict[str, int] | None = None   # pod-level resources (PodLevelResources)
    limits: dict[str, int] | None = None

    @property
    def running_and_ready(self) -> bool:
        return self.phase == "Running" and self.ready == "True"


@dataclass(slots=True)
class PodMetric:
    value: int               # milli
    timestamp: float = 0.0
    window: float = 30.0


@dataclass(slots=True)
class MetricValues:
    """What the metrics APIs returned; a metric absent here failed to be fetched.

    resource: {resource: {pod: PodMetric}}; container_resource: {container: {resource: {pod: PodMetric}}};
    pods: {metric: {pod: PodMetric}}; object: {metric: milli}; external: {metric: [milli, ...]}.
    `errors` maps "type/name" to the fetch error to report instead of the default one.
    """
    resource: dict[str, dict[str, PodMetric]] = field(default_factory=dict)
    container_resource: dict[str, dict[str, dict[str, PodMetric]]] = field(default_factory=dict)
    pods: dict[str, dict[str, PodMetric]] = field(default_factory=dict)
    object: dict[str, int] = field(default_factory=dict)
    external: dict[str, list[int]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Options:
    """The controller's flags (`--horizontal-pod-autoscaler-*`), upstream's defaults."""
    tolerance: float = 0.1
    downscale_stabilization_window: float = 300.0
    cpu_initialization_period: float = 300.0
    initial_readiness_delay: float = 30.0


@dataclass(slots=True)
class TimedRecommendation:
    time: float
    replicas: int


@dataclass(slots=True)
class ScaleEvent:
    time: float
    replicas: int          # |change|
    outdated: bool = False


@dataclass(slots=True)
class History:
    """The controller's memory for one HPA. `recommendations is None` means a first pass."""
    recommendations: list[TimedRecommendation] | None = None
    scale_up_events: list[ScaleEvent] = field(default_factory=list)
    scale_down_events: list[ScaleEvent] = field(default_factory=list)

    def copy(self) -> "History":
        return History(
            None if self.recommendations is None else [TimedRecommendation(r.time, r.replicas) for r in self.recommendations],
            [ScaleEvent(e.time, e.replicas, e.outdated) for e in self.scale_up_events],
            [ScaleEvent(e.time, e.replicas, e.outdated) for e in self.scale_down_events],
        )


@dataclass(slots=True)
class Tolerances:
    down: float = 0.1
    up: float = 0.1

    def within(self, ratio: float) -> bool:
        return (1.0 - self.down) <= ratio <= (1.0 + self.up)
