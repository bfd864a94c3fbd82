"""An autoscaling/v2 HorizontalPodAutoscaler spec (a plain dict) into the algorithm's shapes, with
upstream's defaults (`pkg/apis/autoscaling/v2/defaults.go`) and errors that name the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promop.autoscale.normalize import Behavior, Policy, ScalingRules, default_scale_down, default_scale_up
from promop.quantity import QuantityError, approximate_float, milli_value

METRIC_TYPES = ("Resource", "ContainerResource", "Pods", "Object", "External")
TARGET_TYPES = ("Utilization", "Value", "AverageValue")


class SpecError(ValueError):
    """A field of the input is wrong; `field` is its path."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(slots=True)
class MetricSpec:
    type: str
    name: str                          # the resource name or the metric name
    target_type: str
    value: int | None = None           # milli
    average_value: int | None = None   # milli
    average_utilization: int | None = None
    container: str = ""
    described_object: dict = field(default_factory=dict)
    selector: dict | None = None
    basis: str = "requests"            # "limits" for MemHpa's utilisation of memory limits

    def as_dict(self) -> dict:
        """The metric's identity as upstream's status shows it."""
        return {"type": self.type, "name": self.name}


@dataclass(slots=True)
class HpaSpec:
    min_replicas: int
    max_replicas: int
    metrics: list[MetricSpec]
    behavior: Behavior | None = None


def _int(value: object, path: str, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(path, f"must be an integer, got {value!r}")
    if low is not None and value < low or high is not None and value > high:
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise SpecError(path, f"must be {bounds}, got {value}")
    return value


def _mapping(value: object, path: str) -> dict:
    if not isinstance(value, dict):
        raise SpecError(path, f"must be a mapping, got {type(value).__name__}")
    return value


def _milli(value: object, path: str) -> int:
    try:
        return milli_value(value)
    except QuantityError as exc:
        raise SpecError(path, str(exc)) from None


def parse_target(target: object, path: str, metric: MetricSpec, allow_utilization: bool) -> None:
    target = _mapping(target, path)
    kind = target.get("type")
    allowed = TARGET_TYPES if allow_utilization else TARGET_TYPES[1:]
    if kind not in allowed:
        raise SpecError(f"{path}.type", f"must be one of {', '.join(allowed)}, got {kind!r}")
    metric.target_type = kind
    if "value" in target and target["value"] is not None:
        metric.value = _milli(target["value"], f"{path}.value")
    if "averageValue" in target and target["averageValue"] is not None:
        metric.average_value = _milli(target["averageValue"], f"{path}.averageValue")
    if "averageUtilization" in target and target["averageUtilization"] is not None:
        metric.average_utilization = _int(target["averageUtilization"], f"{path}.averageUtilization", 1)
    needed = {"Utilization": "averageUtilization", "Value": "value", "AverageValue": "averageValue"}[kind]
    have = {"Utilization": metric.average_utilization, "Value": metric.value,
            "AverageValue": metric.average_value}[kind]
    if have is None:
        raise SpecError(f"{path}.{needed}", f"must be set for a target of type {kind}")


def parse_metric(raw: object, path: str) -> MetricSpec:
    raw = _mapping(raw, path)
    kind = raw.get("type")
    if kind not in METRIC_TYPES:
        raise SpecError(f"{path}.type", f"must be one of {', '.join(METRIC_TYPES)}, got {kind!r}")
    key = kind[0].lower() + kind[1:]
    src = _mapping(raw.get(key), f"{path}.{key}")
    sp = f"{path}.{key}"
    metric = MetricSpec(kind, "", "")
    if kind in ("Resource", "ContainerResource"):
        name = src.get("name")
        if not isinstance(name, str) or not name:
            raise SpecError(f"{sp}.name", "must name a resource such as cpu or memory")
        metric.name = name
        if kind == "ContainerResource":
            container = src.get("container")
            if not isinstance(container, str) or not container:
                raise SpecError(f"{sp}.container", "must name a container")
            metric.container = container
        parse_target(src.get("target"), f"{sp}.target", metric, True)
        if metric.target_type == "Value":
            raise SpecError(f"{sp}.target.type", "must be Utilization or AverageValue for a resource metric")
        return metric
    ident = _mapping(src.get("metric"), f"{sp}.metric")
    name = ident.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{sp}.metric.name", "must name the metric")
    metric.name = name
    metric.selector = ident.get("selector")
    parse_target(src.get("target"), f"{sp}.target", metric, False)
    if kind == "Pods" and metric.target_type != "AverageValue":
        raise SpecError(f"{sp}.target.type", "must be AverageValue for a Pods metric")
    if kind == "Object":
        metric.described_object = _mapping(src.get("describedObject"), f"{sp}.describedObject")
        for k in ("kind", "name"):
            if not metric.described_object.get(k):
                raise SpecError(f"{sp}.describedObject.{k}", "must be set")
    return metric


def parse_rules(raw: object, path: str, default: ScalingRules) -> ScalingRules:
    """`GenerateHPAScale{Up,Down}Rules`: each unset field takes the default."""
    if raw is None:
        return default
    raw = _mapping(raw, path)
    rules = default
    if raw.get("selectPolicy") is not None:
        if raw["selectPolicy"] not in ("Max", "Min", "Disabled"):
            raise SpecError(f"{path}.selectPolicy", f"must be Max, Min or Disabled, got {raw['selectPolicy']!r}")
        rules.select_policy = raw["selectPolicy"]
    if raw.get("stabilizationWindowSeconds") is not None:
        rules.stabilization_window_seconds = _int(raw["stabilizationWindowSeconds"],
                                                  f"{path}.stabilizationWindowSeconds", 0, 3600)
    if raw.get("policies") is not None:
        if not isinstance(raw["policies"], list):
            raise SpecError(f"{path}.policies", "must be a list")
        rules.policies = []
        for i, p in enumerate(raw["policies"]):
            pp = f"{path}.policies[{i}]"
            p = _mapping(p, pp)
            if p.get("type") not in ("Pods", "Percent"):
                raise SpecError(f"{pp}.type", f"must be Pods or Percent, got {p.get('type')!r}")
            rules.policies.append(Policy(p["type"], _int(p.get("value"), f"{pp}.value", 1),
                                         _int(p.get("periodSeconds"), f"{pp}.periodSeconds", 1, 1800)))
    if raw.get("tolerance") is not None:
        try:
            rules.tolerance = approximate_float(raw["tolerance"])
        except QuantityError as exc:
            raise SpecError(f"{path}.tolerance", str(exc)) from None
        if rules.tolerance < 0:
            raise SpecError(f"{path}.tolerance", "must not be negative")
    return rules


def parse_behavior(raw: object, path: str = "spec.behavior") -> Behavior | None:
    if raw is None:
        return None
    raw = _mapping(raw, path)
    return Behavior(parse_rules(raw.get("scaleUp"), f"{path}.scaleUp", default_scale_up()),
                    parse_rules(raw.get("scaleDown"), f"{path}.scaleDown", default_scale_down()))


def parse_hpa_spec(spec: object, path: str = "spec") -> HpaSpec:
    """The spec of an autoscaling/v2 HPA; defaults: minReplicas 1, metrics [cpu 80%]."""
    spec = _mapping(spec, path)
    min_replicas = spec.get("minReplicas")
    min_replicas = 1 if min_replicas is None else _int(min_replicas, f"{path}.minReplicas", 0)
    if spec.get("maxReplicas") is None:
        raise SpecError(f"{path}.maxReplicas", "is required")
    max_replicas = _int(spec.get("maxReplicas"), f"{path}.maxReplicas", 1)
    if max_replicas < min_replicas:
        raise SpecError(f"{path}.maxReplicas", f"must be greater than or equal to minReplicas ({min_replicas})")
    raw_metrics = spec.get("metrics")
    if raw_metrics is None or raw_metrics == []:
        metrics = [MetricSpec("Resource", "cpu", "Utilization", average_utilization=80)]
    else:
        if not isinstance(raw_metrics, list):
            raise SpecError(f"{path}.metrics", "must be a list")
        metrics = [parse_metric(m, f"{path}.metrics[{i}]") for i, m in enumerate(raw_metrics)]
    return HpaSpec(min_replicas, max_replicas, metrics, parse_behavior(spec.get("behavior"), f"{path}.behavior"))
