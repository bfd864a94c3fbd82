"""A scenario file (`promop hpa simulate -f`) into the algorithm's inputs, and a decision back into plain data.

Every error names the field (`pods[2].containers[0].requests.cpu: ...`) so a
user can fix the file without reading code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from promop.autoscale.hpa import Cooldown, Decision, decide
from promop.autoscale.model import (
    Container, History, MetricValues, Options, Pod, PodMetric, ScaleEvent, TimedRecommendation,
)
from promop.duration import parse_go_seconds
from promop.quantity import QuantityError, format_milli, milli_value
from promop.autoscale.spec import HpaSpec, SpecError, parse_hpa_spec

SCENARIO_KEYS = ("now", "hpa", "memhpa", "scale", "pods", "metrics", "history", "options")


def parse_duration(value: object, path: str) -> float:
    """A Go duration (`5m`, `1m30s`, `300ms`) or a number of seconds, in seconds."""
    if isinstance(value, bool):
        raise SpecError(path, f"must be a duration such as 30s or 5m, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return parse_go_seconds(value)
        except ValueError as exc:
            raise SpecError(path, f"must be a duration such as 30s, 5m or 1m30s, got {value!r} ({exc})") from None
    raise SpecError(path, f"must be a duration such as 30s, 5m or 1m30s, got {value!r}")


def parse_time(value: object, path: str) -> float:
    """RFC 3339 (`2026-01-01T00:10:00Z`) into seconds since the epoch."""
    if isinstance(value, datetime):  # YAML may already have decoded a timestamp
        dt = value
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise SpecError(path, f"must be an RFC 3339 time such as 2026-01-01T00:10:00Z, got {value!r}") from None
    else:
        raise SpecError(path, f"must be an RFC 3339 time such as 2026-01-01T00:10:00Z, got {value!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def format_time(seconds: float) -> str:
    dt = datetime.fromtimestamp(seconds, tz=timezone.utc)
    text = dt.isoformat(timespec="microseconds" if seconds % 1 else "seconds")
    return text.replace("+00:00", "Z")


def _mapping(value: object, path: str, optional: bool = False) -> dict:
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise SpecError(path, f"must be a mapping, got {type(value).__name__ if value is not None else 'nothing'}")
    return value


def _list(value: object, path: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(path, f"must be a list, got {type(value).__name__}")
    return value


def _int(value: object, path: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SpecError(path, f"must be an integer >= {low}, got {value!r}")
    return value


def _milli(value: object, path: str) -> int:
    try:
        return milli_value(value)
    except QuantityError as exc:
        raise SpecError(path, str(exc)) from None


def _resources(value: object, path: str) -> dict[str, int]:
    return {str(k): _milli(v, f"{path}.{k}") for k, v in _mapping(value, path, optional=True).items()}


def _unknown(raw: dict, allowed: tuple[str, ...], path: str) -> None:
    for key in raw:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise SpecError(where, f"unknown field; expected one of: {', '.join(allowed)}")


POD_KEYS = ("name", "phase", "ready", "readyTransitionTime", "startTime", "deletionTimestamp", "containers",
            "initContainers", "requests", "limits", "labels")


def parse_pod(raw: object, path: str, now: float) -> Pod:
    """A pod; defaults: Running, Ready, started an hour before `now`, ready since it started."""
    raw = _mapping(raw, path)
    _unknown(raw, POD_KEYS, path)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{path}.name", "must be the pod's name")
    phase = raw.get("phase", "Running")
    if phase not in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
        raise SpecError(f"{path}.phase", f"must be Pending, Running, Succeeded, Failed or Unknown, got {phase!r}")
    ready = raw.get("ready", True)
    if ready is True or ready == "True":
        ready_status: str | None = "True"
    elif ready is False or ready == "False":
        ready_status = "False"
    elif ready is None:
        ready_status = None  # no Ready condition at all
    elif ready == "Unknown":
        ready_status = "Unknown"
    else:
        raise SpecError(f"{path}.ready", f"must be true, false, Unknown or null (no Ready condition), got {ready!r}")
    start = now - 3600.0
    if "startTime" in raw:
        start = None if raw["startTime"] is None else parse_time(raw["startTime"], f"{path}.startTime")
    transition = start if start is not None else now - 3600.0
    if raw.get("readyTransitionTime") is not None:
        transition = parse_time(raw["readyTransitionTime"], f"{path}.readyTransitionTime")
    containers = []
    for i, c in enumerate(_list(raw.get("containers"), f"{path}.containers")):
        cp = f"{path}.containers[{i}]"
        c = _mapping(c, cp)
        _unknown(c, ("name", "requests", "limits"), cp)
        containers.append(Container(str(c.get("name", f"c{i}")), _resources(c.get("requests"), f"{cp}.requests"),
                                    _resources(c.get("limits"), f"{cp}.limits")))
    init = []
    for i, c in enumerate(_list(raw.get("initContainers"), f"{path}.initContainers")):
        cp = f"{path}.initContainers[{i}]"
        c = _mapping(c, cp)
        _unknown(c, ("name", "requests", "limits", "restartPolicy"), cp)
        if c.get("restartPolicy") == "Always":  # only sidecars count
            init.append(Container(str(c.get("name", f"i{i}")), _resources(c.get("requests"), f"{cp}.requests"),
                                  _resources(c.get("limits"), f"{cp}.limits")))
    return Pod(name, phase, ready_status, transition, start, raw.get("deletionTimestamp") is not None, containers,
               init, _resources(raw["requests"], f"{path}.requests") if raw.get("requests") else None,
               _resources(raw["limits"], f"{path}.limits") if raw.get("limits") else None)


def _sample(raw: object, path: str, now: float, window: float) -> PodMetric:
    if not isinstance(raw, dict):
        return PodMetric(_milli(raw, path), now, window)
    _unknown(raw, ("value", "timestamp", "window"), path)
    if "value" not in raw:
        raise SpecError(f"{path}.value", "is required")
    ts = parse_time(raw["timestamp"], f"{path}.timestamp") if raw.get("timestamp") is not None else now
    win = parse_duration(raw["window"], f"{path}.window") if raw.get("window") is not None else window
    return PodMetric(_milli(raw["value"], f"{path}.value"), ts, win)


def _per_pod(raw: object, path: str, now: float, window: float) -> dict[str, PodMetric]:
    return {str(pod): _sample(v, f"{path}.{pod}", now, window) for pod, v in _mapping(raw, path).items()}


def _value(raw: object, path: str) -> int:
    if isinstance(raw, dict):
        _unknown(raw, ("value", "timestamp"), path)
        if "value" not in raw:
            raise SpecError(f"{path}.value", "is required")
        return _milli(raw["value"], f"{path}.value")
    return _milli(raw, path)


def parse_metrics(raw: object, now: float, path: str = "metrics") -> MetricValues:
    raw = _mapping(raw, path, optional=True)
    _unknown(raw, ("resource", "containerResource", "pods", "object", "external"), path)
    values = MetricValues()
    for res, per_pod in _mapping(raw.get("resource"), f"{path}.resource", True).items():
        values.resource[str(res)] = _per_pod(per_pod, f"{path}.resource.{res}", now, 30.0)
    for container, by_res in _mapping(raw.get("containerResource"), f"{path}.containerResource", True).items():
        cp = f"{path}.containerResource.{container}"
        values.container_resource[str(container)] = {
            str(res): _per_pod(per_pod, f"{cp}.{res}", now, 30.0) for res, per_pod in _mapping(by_res, cp).items()}
    for name, per_pod in _mapping(raw.get("pods"), f"{path}.pods", True).items():
        values.pods[str(name)] = _per_pod(per_pod, f"{path}.pods.{name}", now, 60.0)
    for name, v in _mapping(raw.get("object"), f"{path}.object", True).items():
        values.object[str(name)] = _value(v, f"{path}.object.{name}")
    for name, series in _mapping(raw.get("external"), f"{path}.external", True).items():
        sp = f"{path}.external.{name}"
        if not isinstance(series, list):
            series = [series]
        values.external[str(name)] = [_value(v, f"{sp}[{i}]") for i, v in enumerate(series)]
    return values


def parse_history(raw: object, path: str = "history") -> History | None:
    if raw is None:
        return None
    raw = _mapping(raw, path)
    _unknown(raw, ("recommendations", "scaleUpEvents", "scaleDownEvents"), path)

    def entries(key: str) -> list[tuple[float, int]]:
        out = []
        for i, e in enumerate(_list(raw.get(key), f"{path}.{key}")):
            ep = f"{path}.{key}[{i}]"
            e = _mapping(e, ep)
            _unknown(e, ("time", "replicas"), ep)
            if "time" not in e:
                raise SpecError(f"{ep}.time", "is required")
            out.append((parse_time(e["time"], f"{ep}.time"), _int(e.get("replicas"), f"{ep}.replicas")))
        return out

    return History([TimedRecommendation(t, r) for t, r in entries("recommendations")],
                   [ScaleEvent(t, r) for t, r in entries("scaleUpEvents")],
                   [ScaleEvent(t, r) for t, r in entries("scaleDownEvents")])


def parse_options(raw: object, path: str = "options") -> Options:
    raw = _mapping(raw, path, optional=True)
    _unknown(raw, ("tolerance", "downscaleStabilizationWindow", "cpuInitializationPeriod",
                   "initialReadinessDelay"), path)
    o = Options()
    if raw.get("tolerance") is not None:
        t = raw["tolerance"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0:
            raise SpecError(f"{path}.tolerance", f"must be a number >= 0 such as 0.1, got {t!r}")
        o.tolerance = float(t)
    for key, attr in (("downscaleStabilizationWindow", "downscale_stabilization_window"),
                      ("cpuInitializationPeriod", "cpu_initialization_period"),
                      ("initialReadinessDelay", "initial_readiness_delay")):
        if raw.get(key) is not None:
            setattr(o, attr, parse_duration(raw[key], f"{path}.{key}"))
    return o


@dataclass(slots=True)
class Scenario:
    now: float
    name: str
    spec: HpaSpec
    spec_replicas: int
    status_replicas: int
    pods: list[Pod]
    metrics: MetricValues
    history: History | None
    options: Options
    cooldown: Cooldown | None = None          # a MemHpa without behavior
    corrections: list[str] = field(default_factory=list)
    # samples naming no pod of the list, per metric (type, container, name): pods that went away
    superfluous: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def decide(self) -> Decision:
        return decide(self.spec, self.spec_replicas, self.status_replicas, self.pods, self.metrics, self.history,
                      self.now, self.options, self.cooldown)


def superfluous_samples(pod_names: set[str], metrics: MetricValues) -> dict[tuple[str, str, str], list[str]]:
    """Per-pod samples for pods not in the list, keyed as explain() names metrics. A metrics API
    answers for pods that just went away (metrics-server and adapters lag the pod list), so
    upstream's calculator takes such samples, and so do we, rather than refusing the file."""
    groups = [(("Resource", "", r), v) for r, v in metrics.resource.items()]
    groups += [(("ContainerResource", c, r), v) for c, by in metrics.container_resource.items() for r, v in by.items()]
    groups += [(("Pods", "", m), v) for m, v in metrics.pods.items()]
    out = {key: sorted(pod for pod in samples if pod not in pod_names) for key, samples in groups}
    return {key: pods for key, pods in out.items() if pods}


def parse_scenario(raw: object) -> Scenario:
    raw = _mapping(raw, "scenario")
    _unknown(raw, SCENARIO_KEYS, "")
    if "now" not in raw:
        raise SpecError("now", "is required: the time of the decision, RFC 3339")
    now = parse_time(raw["now"], "now")
    cooldown = None
    corrections: list[str] = []
    if "memhpa" in raw:
        if "hpa" in raw:
            raise SpecError("memhpa", "give hpa or memhpa, not both")
        from promop.autoscale.memhpa import DOWNSCALE_WINDOW, UPSCALE_WINDOW, validate

        obj = _mapping(raw.get("memhpa"), "memhpa")
        meta = obj.get("metadata") or {}
        try:
            mspec = validate(obj.get("spec", obj))
        except SpecError as exc:
            raise SpecError(f"memhpa.{exc.field}", exc.message) from None
        corrections = [f"{c.field}: {c.message}" for c in mspec.corrections]
        spec = mspec.hpa_spec()
        if mspec.behavior_raw is None:
            last = (obj.get("status") or {}).get("lastScaleTime")
            cooldown = Cooldown(parse_time(last, "memhpa.status.lastScaleTime") if last else None,
                                UPSCALE_WINDOW, DOWNSCALE_WINDOW)
    else:
        obj = _mapping(raw.get("hpa"), "hpa")
        meta = obj.get("metadata") or {}
        spec = parse_hpa_spec(obj["spec"], "hpa.spec") if "spec" in obj else parse_hpa_spec(obj, "hpa")
    name = f"{meta.get('namespace', 'default')}/{meta['name']}" if isinstance(meta, dict) and meta.get("name") else ""
    scale = _mapping(raw.get("scale"), "scale")
    _unknown(scale, ("specReplicas", "statusReplicas"), "scale")
    if "specReplicas" not in scale:
        raise SpecError("scale.specReplicas", "is required: the target's spec.replicas")
    spec_replicas = _int(scale["specReplicas"], "scale.specReplicas")
    status_replicas = _int(scale.get("statusReplicas", spec_replicas), "scale.statusReplicas")
    pods = [parse_pod(p, f"pods[{i}]", now) for i, p in enumerate(_list(raw.get("pods"), "pods"))]
    seen: set[str] = set()
    for i, p in enumerate(pods):
        if p.name in seen:
            raise SpecError(f"pods[{i}].name", f"duplicate pod name {p.name!r}")
        seen.add(p.name)
    metrics = parse_metrics(raw.get("metrics"), now)
    superfluous = superfluous_samples(seen, metrics)
    return Scenario(now, name, spec, spec_replicas, status_replicas, pods, metrics,
                    parse_history(raw.get("history")), parse_options(raw.get("options")), cooldown, corrections,
                    superfluous)


def decision_to_dict(d: Decision, explain: list[str] | None = None, corrections: list[str] | None = None) -> dict:
    """The decision as `simulate` prints it."""
    out: dict = {"desiredReplicas": d.desired_replicas, "currentReplicas": d.current_replicas,
                 "rescale": d.rescale, "reason": d.reason or None}
    if corrections:
        out["corrections"] = corrections
    out["metrics"] = [m.as_dict() for m in d.metrics]
    if d.metric_replicas is not None:
        out["metricReplicas"] = d.metric_replicas
        out["metricName"] = d.metric_name
    if d.stabilized is not None:
        out["stabilized"] = {"replicas": d.stabilized, "reason": d.stabilization_reason}
    if d.limited is not None:
        out["rateLimited"] = {"replicas": d.limited, "reason": d.limit_reason}
    if d.cooldown_reason is not None:
        out["cooldown"] = {"replicas": d.desired_replicas, "reason": d.cooldown_reason}
    out["conditions"] = [c.as_dict() for c in d.conditions]
    out["events"] = [{"type": t, "reason": r, "message": m} for t, r, m in d.events]
    if d.error:
        out["error"] = d.error
    if explain is not None:
        out["explanation"] = explain
    return out


__all__ = ["Scenario", "SpecError", "decision_to_dict", "format_milli", "format_time", "parse_scenario"]
