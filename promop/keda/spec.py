"""A `keda.sh/v1alpha1` ScaledObject/ScaledJob (plain dicts) into typed specs with KEDA's defaults.

Why a typed spec: the scale loop, the HPA builder, the metrics path and the webhook all read the
same defaults (pollingInterval 30, cooldownPeriod 300, maxReplicaCount 100, fallback behavior
`static`, HPA name `keda-hpa-<name>`); computing them once keeps the four in agreement. Wrong
types raise `KedaSpecError` naming the field, one line a user can act on. The bounds KEDA checks
in its webhook/reconcile (min <= max, idle < min) are not checked here: see validate.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PAUSED = "autoscaling.keda.sh/paused"
PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas"
PAUSED_SCALE_IN = "autoscaling.keda.sh/paused-scale-in"
PAUSED_SCALE_OUT = "autoscaling.keda.sh/paused-scale-out"
FORCE_ACTIVATION = "autoscaling.keda.sh/force-activation"
TRANSFER_HPA_OWNERSHIP = "scaledobject.keda.sh/transfer-hpa-ownership"
HPA_EXCLUDED_LABELS = "scaledobject.keda.sh/hpa-excluded-labels"
VALIDATIONS_HPA_OWNERSHIP = "validations.keda.sh/hpa-ownership"
SCALED_OBJECT_NAME_LABEL = "scaledobject.keda.sh/name"
FINALIZER = "finalizer.keda.sh"
COMPOSITE_METRIC = "composite-metric"

FALLBACK_BEHAVIORS = ("static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower",
                      "scalingModifiers")
RESOURCE_TRIGGERS = ("cpu", "memory")
SUPPORTED_TRIGGERS = ("prometheus", "cpu", "memory")
DEFAULT_POLLING_INTERVAL = 30
DEFAULT_COOLDOWN_PERIOD = 300
DEFAULT_HPA_MAX_REPLICAS = 100
DEFAULT_HPA_MIN_REPLICAS = 1
DEFAULT_SCALEDJOB_MAX = 100
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class KedaSpecError(ValueError):
    """A field of a ScaledObject/ScaledJob is wrong; `field` is its path (e.g. `spec.triggers[0].type`)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool: the twelve spellings it accepts; ValueError for anything else."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


@dataclass(slots=True)
class ScaleTargetRef:
    name: str
    api_version: str = "apps/v1"
    kind: str = "Deployment"
    env_source_container_name: str = ""

    @property
    def group(self) -> str:
        """The API group of api_version ("" for the core group, "apps" for apps/v1)."""
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""


@dataclass(slots=True)
class Trigger:
    index: int                 # position in spec.triggers: the `s<index>-` of the metric name
    type: str
    name: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    auth_ref: dict | None = None   # {"name": ..., "kind": "TriggerAuthentication"|"ClusterTriggerAuthentication"}
    metric_type: str = ""          # as written; "" means the trigger's default (AverageValue; cpu: Utilization)
    use_cached_metrics: bool = False

    @property
    def is_resource(self) -> bool:
        """cpu/memory triggers become HPA Resource metrics, not external ones."""
        return self.type in RESOURCE_TRIGGERS

    @property
    def metric_name(self) -> str:
        """The external metric name KEDA gives it (`s0-prometheus`); `cpu`/`memory` for resource triggers."""
        return self.type if self.is_resource else f"s{self.index}-{normalize_string(self.type)}"

    @property
    def effective_metric_type(self) -> str:
        return self.metric_type or ("Utilization" if self.is_resource else "AverageValue")


@dataclass(slots=True)
class Fallback:
    failure_threshold: int
    replicas: int
    behavior: str = "static"


@dataclass(slots=True)
class ScalingModifiers:
    formula: str = ""
    target: str = ""
    activation_target: str = ""
    metric_type: str = ""      # "" means AverageValue

    @property
    def effective_metric_type(self) -> str:
        return self.metric_type or "AverageValue"


@dataclass(slots=True)
class ScaledObject:
    namespace: str
    name: str
    uid: str
    generation: int
    target: ScaleTargetRef
    triggers: list[Trigger]
    polling_interval: int = DEFAULT_POLLING_INTERVAL
    cooldown_period: int = DEFAULT_COOLDOWN_PERIOD
    initial_cooldown_period: int = 0
    idle_replica_count: int | None = None
    min_replica_count: int | None = None
    max_replica_count: int | None = None
    fallback: Fallback | None = None
    restore_to_original_replica_count: bool = False
    hpa_name_override: str = ""
    hpa_behavior: dict | None = None
    scaling_modifiers: ScalingModifiers | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: str = ""
    # what the user wrote, for the webhook's warnings (KEDA warns on a set but irrelevant field)
    polling_interval_set: bool = False
    cooldown_period_set: bool = False

    @property
    def hpa_name(self) -> str:
        """`keda-hpa-<name>` unless advanced.horizontalPodAutoscalerConfig.name is set."""
        return self.hpa_name_override or f"keda-hpa-{self.name}"

    @property
    def min_replicas(self) -> int:
        """The scale loop's minimum: 0 when unset (KEDA scales to zero by default)."""
        return self.min_replica_count or 0

    @property
    def hpa_min_replicas(self) -> int:
        """KEDA's GetHPAMinReplicas: min when > 0, else 1 (the HPA never goes below 1)."""
        return self.min_replica_count if self.min_replica_count and self.min_replica_count > 0 \
            else DEFAULT_HPA_MIN_REPLICAS

    @property
    def hpa_max_replicas(self) -> int:
        """KEDA's GetHPAMaxReplicas: max, else 100."""
        return DEFAULT_HPA_MAX_REPLICAS if self.max_replica_count is None else self.max_replica_count

    @property
    def using_modifiers(self) -> bool:
        """KEDA's IsUsingModifiers: any field of advanced.scalingModifiers set."""
        m = self.scaling_modifiers
        return m is not None and any((m.formula, m.target, m.activation_target, m.metric_type))

    @property
    def external_triggers(self) -> list[Trigger]:
        return [t for t in self.triggers if not t.is_resource]

    @property
    def triggers_types(self) -> str:
        return triggers_types(self.triggers)

    @property
    def authentications_types(self) -> str:
        return authentications_types(self.triggers)


@dataclass(slots=True)
class PauseState:
    """What the pause annotations ask for (§1.3). `paused_replicas` takes precedence over `paused`."""
    paused: bool = False                 # the loop stops and the HPA is deleted
    paused_replicas: int | None = None   # ... and the target is set to this count
    scale_in: bool = False               # HPA scaleDown selectPolicy Disabled; no scale to zero/idle
    scale_out: bool = False              # HPA scaleUp selectPolicy Disabled; no activation from zero
    force_activation: bool = False       # every trigger counts as active

    @property
    def stops_loop(self) -> bool:
        return self.paused or self.paused_replicas is not None

    @property
    def any(self) -> bool:
        """Paused=True is reported for any of the four pause annotations."""
        return self.stops_loop or self.scale_in or self.scale_out


def normalize_string(text: str) -> str:
    """KEDA's kedautil.NormalizeString, used in metric names: `/ . : % ( ) " space < > $ ' # *` become `-`."""
    for old, new in (("/", "-"), (".", "-"), (":", "-"), ("%", "-"), ("(", "-"), (")", "-"), ('"', "-"),
                     (" ", "-"), ("<", "-"), (">", "-"), ("$", "-"), ("'", "-"), ("#", "-"), ("*", "-")):
        text = text.replace(old, new)
    return text


def _bool_annotation(annotations: dict, key: str) -> bool:
    """KEDA's getBoolAnnotation: absent is false, a non-boolean value counts as true."""
    if key not in annotations:
        return False
    try:
        return parse_bool(str(annotations[key]))
    except ValueError:
        return True


def pause_state(annotations: dict | None) -> PauseState:
    """The pause annotations of a ScaledObject. Raises KedaSpecError for a non-integer paused-replicas
    (KEDA refuses to reconcile such an object; it never guesses a count)."""
    annotations = annotations or {}
    replicas = None
    if PAUSED_REPLICAS in annotations:
        text = str(annotations[PAUSED_REPLICAS])
        try:
            replicas = _go_atoi32(text)
        except ValueError:
            raise KedaSpecError(f"metadata.annotations[{PAUSED_REPLICAS}]",
                                f'invalid value "{text}": must be an integer replica count') from None
    return PauseState(
        paused=replicas is not None or _bool_annotation(annotations, PAUSED),
        paused_replicas=replicas,
        scale_in=_bool_annotation(annotations, PAUSED_SCALE_IN),
        scale_out=_bool_annotation(annotations, PAUSED_SCALE_OUT),
        force_activation=_bool_annotation(annotations, FORCE_ACTIVATION),
    )


def _go_atoi32(text: str) -> int:
    """strconv.ParseInt(text, 10, 32): an optional sign and ASCII digits, nothing else."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(text)
    value = int(text)
    if not -(2**31) <= value < 2**31:
        raise ValueError(text)
    return value


def _int(value: object, path: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise KedaSpecError(path, f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise KedaSpecError(path, f"must be at least {minimum}, got {value}")
    return value


def _opt_int(spec: dict, key: str, path: str, minimum: int | None = None) -> int | None:
    value = spec.get(key)
    return None if value is None else _int(value, f"{path}.{key}", minimum)


def _mapping(value: object, path: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise KedaSpecError(path, f"must be a mapping, got {type(value).__name__}")
    return value


def _str(value: object, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise KedaSpecError(path, f"must be a string, got {value!r}")
    return value


def parse_trigger(raw: object, index: int, path: str = "spec.triggers") -> Trigger:
    """One entry of spec.triggers (§1.2)."""
    where = f"{path}[{index}]"
    raw = _mapping(raw, where)
    kind = _str(raw.get("type"), f"{where}.type")
    if not kind:
        raise KedaSpecError(f"{where}.type", "is required; set the scaler type, e.g. prometheus")
    metadata = _mapping(raw.get("metadata"), f"{where}.metadata")
    for key, value in metadata.items():
        _str(value, f"{where}.metadata.{key}")
    auth = raw.get("authenticationRef")
    if auth is not None:
        auth = _mapping(auth, f"{where}.authenticationRef")
        if not _str(auth.get("name"), f"{where}.authenticationRef.name"):
            raise KedaSpecError(f"{where}.authenticationRef.name", "is required")
        kind_ref = _str(auth.get("kind"), f"{where}.authenticationRef.kind") or "TriggerAuthentication"
        if kind_ref not in ("TriggerAuthentication", "ClusterTriggerAuthentication"):
            raise KedaSpecError(f"{where}.authenticationRef.kind",
                                f"must be TriggerAuthentication or ClusterTriggerAuthentication, got {kind_ref!r}")
        auth = {"name": auth["name"], "kind": kind_ref}
    cached = raw.get("useCachedMetrics", False)
    if not isinstance(cached, bool):
        raise KedaSpecError(f"{where}.useCachedMetrics", f"must be a boolean, got {cached!r}")
    return Trigger(index=index, type=kind, name=_str(raw.get("name"), f"{where}.name"),
                   metadata={k: v for k, v in metadata.items() if v is not None}, auth_ref=auth,
                   metric_type=_str(raw.get("metricType"), f"{where}.metricType"), use_cached_metrics=cached)


def _triggers(spec: dict, path: str) -> list[Trigger]:
    raw = spec.get("triggers")
    if raw is None or raw == []:
        raise KedaSpecError(f"{path}.triggers", "no triggers defined in the ScaledObject/ScaledJob")
    if not isinstance(raw, list):
        raise KedaSpecError(f"{path}.triggers", f"must be a list, got {type(raw).__name__}")
    return [parse_trigger(item, i, f"{path}.triggers") for i, item in enumerate(raw)]


def _target_ref(spec: dict) -> ScaleTargetRef:
    ref = spec.get("scaleTargetRef")
    if not isinstance(ref, dict):
        raise KedaSpecError("spec.scaleTargetRef", "is required; name the Deployment (or other /scale resource)")
    name = _str(ref.get("name"), "spec.scaleTargetRef.name")
    if not name:
        raise KedaSpecError("spec.scaleTargetRef.name", "is required")
    return ScaleTargetRef(name=name,
                          api_version=_str(ref.get("apiVersion"), "spec.scaleTargetRef.apiVersion") or "apps/v1",
                          kind=_str(ref.get("kind"), "spec.scaleTargetRef.kind") or "Deployment",
                          env_source_container_name=_str(ref.get("envSourceContainerName"),
                                                         "spec.scaleTargetRef.envSourceContainerName"))


def _fallback(spec: dict) -> Fallback | None:
    raw = spec.get("fallback")
    if raw is None:
        return None
    raw = _mapping(raw, "spec.fallback")
    for key in ("failureThreshold", "replicas"):
        if raw.get(key) is None:
            raise KedaSpecError(f"spec.fallback.{key}", "is required when fallback is set")
    behavior = _str(raw.get("behavior"), "spec.fallback.behavior") or "static"
    if behavior not in FALLBACK_BEHAVIORS:
        raise KedaSpecError("spec.fallback.behavior", f"must be one of {', '.join(FALLBACK_BEHAVIORS)}, got {behavior!r}")
    # negative values are the webhook's error (CheckFallbackValid), not a parse error
    return Fallback(failure_threshold=_int(raw["failureThreshold"], "spec.fallback.failureThreshold"),
                    replicas=_int(raw["replicas"], "spec.fallback.replicas"), behavior=behavior)


def _advanced(spec: dict) -> tuple[bool, str, dict | None, ScalingModifiers | None]:
    adv = _mapping(spec.get("advanced"), "spec.advanced")
    restore = adv.get("restoreToOriginalReplicaCount", False)
    if not isinstance(restore, bool):
        raise KedaSpecError("spec.advanced.restoreToOriginalReplicaCount", f"must be a boolean, got {restore!r}")
    hpa = _mapping(adv.get("horizontalPodAutoscalerConfig"), "spec.advanced.horizontalPodAutoscalerConfig")
    name = _str(hpa.get("name"), "spec.advanced.horizontalPodAutoscalerConfig.name")
    behavior = hpa.get("behavior")
    if behavior is not None:
        behavior = _mapping(behavior, "spec.advanced.horizontalPodAutoscalerConfig.behavior")
    mods = None
    if adv.get("scalingModifiers") is not None:
        raw = _mapping(adv["scalingModifiers"], "spec.advanced.scalingModifiers")
        p = "spec.advanced.scalingModifiers"
        mods = ScalingModifiers(formula=_str(raw.get("formula"), f"{p}.formula"),
                                target=_target_text(raw.get("target"), f"{p}.target"),
                                activation_target=_target_text(raw.get("activationTarget"), f"{p}.activationTarget"),
                                metric_type=_str(raw.get("metricType"), f"{p}.metricType"))
        if mods.metric_type not in ("", "AverageValue", "Value"):
            raise KedaSpecError(f"{p}.metricType", f"must be AverageValue or Value, got {mods.metric_type!r}")
    return restore, name, behavior, mods


def _target_text(value: object, path: str) -> str:
    """scalingModifiers target/activationTarget are strings in KEDA's API; YAML numbers are accepted
    as their text (a sandbox without the CRD's schema would hand us an int)."""
    if isinstance(value, bool):
        raise KedaSpecError(path, f"must be a string, got {value!r}")
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    return _str(value, path)


def parse_scaled_object(obj: dict) -> ScaledObject:
    """A ScaledObject dict into a `ScaledObject` with KEDA's defaults. Raises KedaSpecError."""
    meta = _mapping(obj.get("metadata"), "metadata")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise KedaSpecError("spec", "is required")
    restore, hpa_name, behavior, mods = _advanced(spec)
    polling = _opt_int(spec, "pollingInterval", "spec", 1)
    cooldown = _opt_int(spec, "cooldownPeriod", "spec", 0)
    return ScaledObject(
        namespace=meta.get("namespace") or "default", name=meta.get("name") or "",
        uid=meta.get("uid") or "", generation=meta.get("generation") or 0,
        target=_target_ref(spec), triggers=_triggers(spec, "spec"),
        polling_interval=DEFAULT_POLLING_INTERVAL if polling is None else polling,
        cooldown_period=DEFAULT_COOLDOWN_PERIOD if cooldown is None else cooldown,
        initial_cooldown_period=_opt_int(spec, "initialCooldownPeriod", "spec", 0) or 0,
        idle_replica_count=_opt_int(spec, "idleReplicaCount", "spec", 0),
        min_replica_count=_opt_int(spec, "minReplicaCount", "spec", 0),
        max_replica_count=_opt_int(spec, "maxReplicaCount", "spec", 0),
        fallback=_fallback(spec), restore_to_original_replica_count=restore,
        hpa_name_override=hpa_name, hpa_behavior=behavior, scaling_modifiers=mods,
        labels=dict(meta.get("labels") or {}), annotations=dict(meta.get("annotations") or {}),
        creation_timestamp=meta.get("creationTimestamp") or "",
        polling_interval_set=polling is not None, cooldown_period_set=cooldown is not None,
    )


# --- ScaledJob -------------------------------------------------------------------------------------

SCALING_STRATEGIES = ("default", "custom", "accurate", "eager")
MULTIPLE_SCALERS_CALCULATIONS = ("", "min", "avg", "sum", "max")


@dataclass(slots=True)
class ScalingStrategy:
    strategy: str = "default"
    custom_queue_length_deduction: int = 0
    custom_running_job_percentage: str | None = None    # as written; parsed at each poll
    pending_pod_conditions: list[str] = field(default_factory=list)
    multiple_scalers_calculation: str = ""     # "" behaves as max


@dataclass(slots=True)
class ScaledJob:
    namespace: str
    name: str
    uid: str
    generation: int
    job_spec: dict                     # spec.jobTargetRef: a batch/v1 JobSpec
    triggers: list[Trigger]
    polling_interval: int = DEFAULT_POLLING_INTERVAL
    successful_jobs_history_limit: int = 100
    failed_jobs_history_limit: int = 100
    min_replica_count: int = 0
    max_replica_count: int = DEFAULT_SCALEDJOB_MAX
    rollout_strategy: str = "default"
    rollout_propagation_policy: str = "background"
    scaling_strategy: ScalingStrategy = field(default_factory=ScalingStrategy)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def paused(self) -> bool:
        """`autoscaling.keda.sh/paused` on a ScaledJob (non-boolean counts as true, as for ScaledObjects)."""
        return _bool_annotation(self.annotations, PAUSED)

    @property
    def triggers_types(self) -> str:
        return triggers_types(self.triggers)

    @property
    def authentications_types(self) -> str:
        return authentications_types(self.triggers)


def _scaling_strategy(spec: dict) -> ScalingStrategy:
    raw = _mapping(spec.get("scalingStrategy"), "spec.scalingStrategy")
    p = "spec.scalingStrategy"
    strategy = _str(raw.get("strategy"), f"{p}.strategy") or "default"
    if strategy not in SCALING_STRATEGIES:
        raise KedaSpecError(f"{p}.strategy", f"must be one of {', '.join(SCALING_STRATEGIES)}, got {strategy!r}")
    calc = _str(raw.get("multipleScalersCalculation"), f"{p}.multipleScalersCalculation")
    if calc not in MULTIPLE_SCALERS_CALCULATIONS:
        raise KedaSpecError(f"{p}.multipleScalersCalculation", f"must be one of min, avg, sum, max, got {calc!r}")
    # kept as written: KEDA parses it with strconv.ParseFloat at each poll and, when that fails, uses the
    # default strategy instead of rejecting the ScaledJob (promop.keda.scaledjob.running_job_percentage)
    pct = raw.get("customScalingRunningJobPercentage")
    pct = None if pct is None else str(pct)
    conditions = raw.get("pendingPodConditions") or []
    if not isinstance(conditions, list) or not all(isinstance(c, str) for c in conditions):
        raise KedaSpecError(f"{p}.pendingPodConditions", "must be a list of condition types")
    return ScalingStrategy(strategy=strategy,
                           custom_queue_length_deduction=_opt_int(raw, "customScalingQueueLengthDeduction", p) or 0,
                           custom_running_job_percentage=pct, pending_pod_conditions=list(conditions),
                           multiple_scalers_calculation=calc)


def parse_scaled_job(obj: dict) -> ScaledJob:
    """A ScaledJob dict into a `ScaledJob` with KEDA's defaults (§1.5). Raises KedaSpecError."""
    meta = _mapping(obj.get("metadata"), "metadata")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise KedaSpecError("spec", "is required")
    job = spec.get("jobTargetRef")
    if not isinstance(job, dict) or not isinstance(job.get("template"), dict):
        raise KedaSpecError("spec.jobTargetRef", "is required: a Job spec with a pod template")
    rollout = _mapping(spec.get("rollout"), "spec.rollout")
    max_count = _opt_int(spec, "maxReplicaCount", "spec", 0)
    polling = _opt_int(spec, "pollingInterval", "spec", 1)
    return ScaledJob(
        namespace=meta.get("namespace") or "default", name=meta.get("name") or "",
        uid=meta.get("uid") or "", generation=meta.get("generation") or 0,
        job_spec=job, triggers=_triggers(spec, "spec"),
        polling_interval=DEFAULT_POLLING_INTERVAL if polling is None else polling,
        successful_jobs_history_limit=_history(spec, "successfulJobsHistoryLimit"),
        failed_jobs_history_limit=_history(spec, "failedJobsHistoryLimit"),
        min_replica_count=_opt_int(spec, "minReplicaCount", "spec", 0) or 0,
        max_replica_count=DEFAULT_SCALEDJOB_MAX if max_count is None else max_count,
        # the deprecated spec.rolloutStrategy, when set, wins over rollout.strategy (as in KEDA)
        rollout_strategy=_str(spec.get("rolloutStrategy"), "spec.rolloutStrategy")
        or _str(rollout.get("strategy"), "spec.rollout.strategy") or "default",
        rollout_propagation_policy=_str(rollout.get("propagationPolicy"), "spec.rollout.propagationPolicy")
        or "background",
        scaling_strategy=_scaling_strategy(spec),
        labels=dict(meta.get("labels") or {}), annotations=dict(meta.get("annotations") or {}),
    )


def _history(spec: dict, key: str) -> int:
    value = _opt_int(spec, key, "spec", 0)
    return 100 if value is None else value


def triggers_types(triggers: list[Trigger]) -> str:
    """status.triggersTypes of a ScaledObject or ScaledJob (KEDA's CombinedTriggersAndAuthenticationsTypes):
    the trigger types, comma-joined, each once, in spec order."""
    return ",".join(dict.fromkeys(t.type for t in triggers))


def authentications_types(triggers: list[Trigger]) -> str:
    """status.authenticationsTypes: the referenced authentication names, comma-joined, each once."""
    return ",".join(dict.fromkeys(t.auth_ref["name"] for t in triggers if t.auth_ref and t.auth_ref.get("name")))
