"""KEDA's admission webhook for ScaledObjects (§1.7, `apis/keda/v1alpha1/scaledobject_webhook.go`).

Why pure: promop's admission webhook and the controller's own checks (a condition and an event when
an object the webhook would have refused got in anyway, e.g. with the webhook not installed) use the
same rules and KEDA's texts. KEDA stops at the first error; we report every error (each with KEDA's
text, the first one first in KEDA's order), so a user fixes them in one round.
"""

from __future__ import annotations

import math

from promop.keda.formula import FormulaError, compile_formula
from promop.keda.spec import (
    RESOURCE_TRIGGERS, SCALED_OBJECT_NAME_LABEL, TRANSFER_HPA_OWNERSHIP, VALIDATIONS_HPA_OWNERSHIP, KedaSpecError,
    ScaledObject, Trigger, parse_scaled_object,
)

MAX_NAME = 63


def gvk_string(api_version: str, kind: str) -> str:
    """KEDA's GVKString: `group/version.Kind` (`apps/v1.Deployment`; the core group is empty: `/v1.Pod`)."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}.{kind}"


def replica_bounds_error(so: ScaledObject) -> str | None:
    """CheckReplicaCountBoundsAreValid. min is read through GetHPAMinReplicas when set, so min=0 with
    max=0 reads "MinReplicaCount=1 must be less than MaxReplicaCount=0" (KEDA #5570, #3724); idle is
    compared with that min, and with 0 when min is unset (so idle with min unset is refused)."""
    minimum = so.hpa_min_replicas if so.min_replica_count is not None else 0
    maximum = so.hpa_max_replicas
    if minimum > maximum:
        return f"MinReplicaCount={minimum} must be less than MaxReplicaCount={maximum}"
    if so.idle_replica_count is not None and so.idle_replica_count >= minimum:
        return f"IdleReplicaCount={so.idle_replica_count} must be less than MinReplicaCount={minimum}"
    return None


def fallback_error(so: ScaledObject) -> str | None:
    """CheckFallbackValid, plus `behavior: scalingModifiers` without a formula (KEDA 2.20)."""
    fb = so.fallback
    if fb is None:
        return None
    if fb.failure_threshold < 0 or fb.replicas < 0:
        return (f"FailureThreshold={fb.failure_threshold} & Replicas={fb.replicas} "
                "must both be greater than or equal to 0")
    if fb.behavior == "scalingModifiers" and not (so.using_modifiers and so.scaling_modifiers.formula):
        return "fallback behavior scalingModifiers requires spec.advanced.scalingModifiers.formula to be set"
    if so.using_modifiers:
        if so.scaling_modifiers.metric_type == "Value":
            return ("when using ScalingModifiers, ScaledObject.Spec.Advanced.ScalingModifiers.MetricType "
                    "must be AverageValue to have fallback enabled")
        return None
    if not any(not t.is_resource and (t.metric_type or "AverageValue") == "AverageValue" for t in so.triggers):
        return ("at least one trigger (that is not cpu or memory) has to have the `AverageValue` type "
                "for the fallback to be enabled")
    return None


def name_error(so: ScaledObject) -> str | None:
    if len(so.name) > MAX_NAME:
        return (f'scaledobject name "{so.name}" is {len(so.name)} characters long; must be no more than {MAX_NAME} '
                f'characters because it is used as the "{SCALED_OBJECT_NAME_LABEL}" label value')
    if len(so.hpa_name) > MAX_NAME:
        return (f'HPA name "{so.hpa_name}" derived from scaledobject is {len(so.hpa_name)} characters long; must be no '
                f"more than {MAX_NAME} characters; set spec.advanced.horizontalPodAutoscalerConfig.name to a shorter "
                "name or shorten the scaledobject name")
    return None


def triggers_error(triggers: list[Trigger]) -> str | None:
    """ValidateTriggers (scaletriggers_types.go), texts asserted verbatim by KEDA's tests."""
    if not triggers:
        return "no triggers defined in the ScaledObject/ScaledJob"
    seen: set[str] = set()
    for t in triggers:
        if t.use_cached_metrics and t.type in ("cpu", "memory", "cron"):
            return f'property "useCachedMetrics" is not supported for "{t.type}" scaler'
        if t.name:
            if t.name in seen:
                return f'triggerName "{t.name}" is defined multiple times in the ScaledObject/ScaledJob, but it must be unique'
            seen.add(t.name)
    return None


def modifiers_error(so: ScaledObject) -> str | None:
    """ValidateAndCompileScalingModifiers: a formula is mandatory, needs a target, must compile over the named
    non-cpu/memory triggers and run with the dummy value -1.0; the target must be a float > 0 (AverageValue
    or Value). errors.Join's two lines are joined with ": " here (one line)."""
    sm = so.scaling_modifiers
    if not sm.formula:
        return "error ScalingModifiers.Formula is mandatory"
    if not sm.target:
        return "error validating formula in ScalingModifiers: formula is given but target is empty"
    names = {t.name for t in so.triggers if t.name and t.type not in RESOURCE_TRIGGERS}
    try:
        formula = compile_formula(sm.formula, known_names=names)
        formula.evaluate({name: -1.0 for name in names})
    except FormulaError as exc:
        return f"error validating formula in ScalingModifiers: {exc}"
    try:
        target = float(sm.target)
        bad = math.isnan(target) or target <= 0
        cause = "%!w(<nil>)"
    except ValueError:
        bad, cause = True, f'strconv.ParseFloat: parsing "{sm.target}": invalid syntax'
    if bad:
        return ("error validating target in ScalingModifiers: error converting target for scalingModifiers "
                f"(string->float) to valid target: {cause}")
    if sm.metric_type == "Utilization":
        return ("error validating target in ScalingModifiers: error trigger type is Utilization, but it needs to be "
                "AverageValue or Value for external metrics")
    return None


def scaled_objects_error(so: ScaledObject, others: list[dict]) -> str | None:
    """verifyScaledObjects: another ScaledObject of the namespace on the same target (name and GVK), or
    owning the same HPA name."""
    mine = gvk_string(so.target.api_version, so.target.kind)
    for raw in others:
        meta = raw.get("metadata") or {}
        if meta.get("name") == so.name or (meta.get("namespace") or so.namespace) != so.namespace:
            continue
        try:
            other = parse_scaled_object(raw)
        except KedaSpecError:
            continue
        if gvk_string(other.target.api_version, other.target.kind) == mine and other.target.name == so.target.name:
            return (f"the workload '{other.target.name}' of type '{mine}' is already managed by the "
                    f"ScaledObject '{other.name}'")
        if other.hpa_name == so.hpa_name:
            return f"the HPA '{other.hpa_name}' is already managed by the ScaledObject '{other.name}'"
    return None


def hpas_error(so: ScaledObject, hpas: list[dict]) -> str | None:
    """verifyHpas: an HPA on the same workload that this ScaledObject does not own, unless the HPA is
    annotated validations.keda.sh/hpa-ownership: "false", or the transfer annotation is "true" and
    horizontalPodAutoscalerConfig.name names that HPA."""
    mine = gvk_string(so.target.api_version, so.target.kind)
    for hpa in hpas:
        meta = hpa.get("metadata") or {}
        if (meta.get("namespace") or so.namespace) != so.namespace:
            continue
        if (meta.get("annotations") or {}).get(VALIDATIONS_HPA_OWNERSHIP) == "false":
            continue
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if gvk_string(ref.get("apiVersion") or "", ref.get("kind") or "") != mine or ref.get("name") != so.target.name:
            continue
        owned = any(o.get("kind") == "ScaledObject" and o.get("name") == so.name for o in meta.get("ownerReferences") or [])
        if owned:
            continue
        name = meta.get("name")
        if so.annotations.get(TRANSFER_HPA_OWNERSHIP) == "true":
            if so.hpa_name_override != name:
                return (f"the existing hpa '{name}' for workload '{so.target.name}' of type '{mine}' must be specified "
                        "by name in advanced settings to enable ownership transfer")
            continue
        return f"the workload '{so.target.name}' of type '{mine}' is already managed by the hpa '{name}'"
    return None


def cpu_memory_error(so: ScaledObject, scale_target: dict | None, limit_ranges: list[dict]) -> str | None:
    """verifyCPUMemoryScalers (Deployments and StatefulSets only, as KEDA): each container (or the
    `containerName` one) needs a request or limit of the trigger's resource, or a LimitRange default;
    only-cpu/memory triggers with min 0 cannot scale to zero."""
    if not any(t.is_resource for t in so.triggers) or not scale_target:
        return None
    if gvk_string(scale_target.get("apiVersion") or "", scale_target.get("kind") or "") not in (
            "apps/v1.Deployment", "apps/v1.StatefulSet"):
        return None
    containers = ((((scale_target.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    for t in (t for t in so.triggers if t.is_resource):
        wanted = t.metadata.get("containerName", "")
        for c in containers:
            if wanted and c.get("name") != wanted:
                continue
            if not _resource_set(c.get("resources") or {}, t.type) and not _limit_range_sets(limit_ranges, t.type):
                return (f"the scaledobject has a {t.type} trigger but the container {c.get('name')} doesn't have "
                        f"the {t.type} request defined")
    if all(t.is_resource for t in so.triggers) and not so.min_replica_count:
        return "scaledobject has only cpu/memory triggers AND minReplica is 0 (scale to zero doesn't work in this case)"
    return None


def _positive(quantity) -> bool:
    from promop.quantity import QuantityError, approximate_float
    try:
        return approximate_float(quantity) > 0
    except QuantityError:
        return False


def _resource_set(resources: dict, name: str) -> bool:
    values = [(resources.get(k) or {}).get(name) for k in ("requests", "limits")]
    return any(v is not None for v in values) and any(_positive(v) for v in values if v is not None)


def _limit_range_sets(limit_ranges: list[dict], name: str) -> bool:
    for lr in limit_ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            values = [(item.get(k) or {}).get(name) for k in ("defaultRequest", "default")]
            if item.get("type") == "Container" and any(v is not None and _positive(v) for v in values):
                return True
    return False


def warnings_for(so: ScaledObject) -> list[str]:
    """KEDA 2.20's webhook warnings (also a Normal event KEDAScalerInfo): a field that is set but cannot
    matter because the ScaledObject never scales to zero or idle."""
    out = []
    never_idle = so.min_replicas > 0 and so.idle_replica_count is None
    if never_idle and so.polling_interval_set and not any(t.use_cached_metrics for t in so.triggers):
        out.append("pollingInterval has no effect: with minReplicaCount > 0 and no idleReplicaCount the HPA, not the "
                   "scale loop, decides the replica count (it only matters with useCachedMetrics)")
    if never_idle and so.cooldown_period_set:
        out.append("cooldownPeriod has no effect: it only applies to scaling to zero or to idleReplicaCount, and "
                   "minReplicaCount > 0 with no idleReplicaCount never does")
    return out


def validate_scaled_object(obj: dict, other_scaled_objects: list[dict] | None = None, hpas: list[dict] | None = None,
                           scale_target: dict | None = None,
                           limit_ranges: list[dict] | None = None) -> tuple[list[str], list[str]]:
    """(errors, warnings) for `obj` given the other ScaledObjects and the HPAs of its namespace (and, for
    cpu/memory triggers, the target object and the namespace's LimitRanges)."""
    try:
        so = parse_scaled_object(obj)
    except KedaSpecError as exc:
        return [exc.message if exc.field == "spec.triggers" else str(exc)], []
    checks = [
        lambda: cpu_memory_error(so, scale_target, limit_ranges or []),
        lambda: scaled_objects_error(so, other_scaled_objects or []),
        lambda: modifiers_error(so) if so.using_modifiers else None,
        lambda: hpas_error(so, hpas or []),
        lambda: replica_bounds_error(so),
        lambda: fallback_error(so),
        lambda: name_error(so),
        lambda: triggers_error(so.triggers),
    ]
    errors = [msg for msg in (check() for check in checks) if msg]
    return errors, warnings_for(so)
