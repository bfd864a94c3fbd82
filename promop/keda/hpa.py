"""The HorizontalPodAutoscaler KEDA owns for a ScaledObject (§2.2, `controllers/keda/hpa.go`).

Why pure: the controller creates/updates it, `promop keda explain` shows it, and the tests compare it
field by field with KEDA's: name, labels (app.kubernetes.io/* plus the ScaledObject's, minus the
excluded ones), annotations, controller owner reference, min/max, behavior (selectPolicy Disabled
for the paused-scale-in/out annotations) and the metrics, External before Resource.
"""

from __future__ import annotations

import copy

from promop.keda.prometheus import parse_threshold
from promop.keda.quantities import milli_quantity
from promop.keda.spec import (
    COMPOSITE_METRIC, HPA_EXCLUDED_LABELS, SCALED_OBJECT_NAME_LABEL, SUPPORTED_TRIGGERS, KedaSpecError, PauseState, ScaledObject, Trigger,
)

KEDA_VERSION = "2.20.2"


class HpaBuildError(ValueError):
    """The HPA cannot be built (a trigger's target is wrong); the message names the trigger."""


def _external_metric(name: str, so_name: str, metric_type: str, value: float) -> dict:
    kind = "averageValue" if metric_type == "AverageValue" else "value"
    return {"type": "External", "external": {
        "metric": {"name": name, "selector": {"matchLabels": {SCALED_OBJECT_NAME_LABEL: so_name}}},
        "target": {"type": metric_type, kind: milli_quantity(value)}}}


def _resource_metric(trigger: Trigger) -> dict:
    """KEDA's cpu/memory scaler: Resource (ContainerResource with `containerName`), Utilization from
    `value` as an integer, AverageValue as the quantity written."""
    metric_type = trigger.metric_type or trigger.metadata.get("type") or "Utilization"
    value = trigger.metadata.get("value", "")
    target: dict = {"type": metric_type}
    if metric_type == "Utilization":
        try:
            target["averageUtilization"] = int(value)
        except ValueError:
            raise HpaBuildError(f"spec.triggers[{trigger.index}].metadata.value: {value!r} is not an integer "
                                "utilization percentage") from None
    else:
        target["averageValue"] = value
    container = trigger.metadata.get("containerName")
    if container:
        return {"type": "ContainerResource", "containerResource": {"name": trigger.type, "container": container,
                                                                   "target": target}}
    return {"type": "Resource", "resource": {"name": trigger.type, "target": target}}


def metric_specs(so: ScaledObject) -> list[dict]:
    """The HPA's metrics: one per trigger, then (with scalingModifiers and a target > 0) every External one
    replaced by `composite-metric`; sorted by type, External before Resource (a stable sort)."""
    specs = []
    for trigger in so.triggers:
        if trigger.is_resource:
            specs.append(_resource_metric(trigger))
            continue
        if trigger.type not in SUPPORTED_TRIGGERS:
            raise HpaBuildError(f"spec.triggers[{trigger.index}].type: trigger type {trigger.type!r} is not supported by "
                                f"promop (supported: {', '.join(SUPPORTED_TRIGGERS)})")
        if trigger.effective_metric_type not in ("AverageValue", "Value"):
            raise HpaBuildError(f"spec.triggers[{trigger.index}].metricType: 'Utilization' metric type is unsupported "
                                "for external metrics, allowed values are 'Value' or 'AverageValue'")
        try:
            threshold = parse_threshold(trigger.metadata)
        except ValueError as exc:
            raise HpaBuildError(f"spec.triggers[{trigger.index}]: {exc}") from None
        specs.append(_external_metric(trigger.metric_name, so.name, trigger.effective_metric_type, threshold))
    if so.using_modifiers:
        try:
            target = float(so.scaling_modifiers.target)
        except ValueError:
            target = 0.0
        if target > 0:
            specs = [s for s in specs if s["type"] != "External"]
            specs.append(_external_metric(COMPOSITE_METRIC, so.name, so.scaling_modifiers.effective_metric_type, target))
    names = [s["external"]["metric"]["name"] for s in specs if s["type"] == "External"]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise HpaBuildError(f"metricName {duplicate} is defined multiple times in the ScaledObject/ScaledJob")
    return sorted(specs, key=lambda s: s["type"])


def hpa_labels(so: ScaledObject, keda_version: str = KEDA_VERSION) -> dict[str, str]:
    excluded = {x.strip() for x in so.annotations.get(HPA_EXCLUDED_LABELS, "").split(",") if x.strip()}
    labels = {"app.kubernetes.io/name": so.hpa_name[:63], "app.kubernetes.io/version": keda_version,
              "app.kubernetes.io/part-of": so.name, "app.kubernetes.io/managed-by": "keda-operator"}
    labels.update({k: v for k, v in so.labels.items() if k not in excluded})
    return labels


def hpa_behavior(so: ScaledObject, pause: PauseState) -> dict | None:
    """advanced.horizontalPodAutoscalerConfig.behavior verbatim, with selectPolicy Disabled on scaleDown for
    paused-scale-in and on scaleUp for paused-scale-out."""
    behavior = copy.deepcopy(so.hpa_behavior) if so.hpa_behavior is not None else None
    for paused, key in ((pause.scale_in, "scaleDown"), (pause.scale_out, "scaleUp")):
        if paused:
            behavior = behavior if behavior is not None else {}
            rules = behavior.get(key) or {}
            rules["selectPolicy"] = "Disabled"
            behavior[key] = rules
    return behavior


def build_hpa(so_obj: dict, so: ScaledObject, pause: PauseState, scale_target: dict | None = None,
              keda_version: str = KEDA_VERSION) -> dict:
    """The autoscaling/v2 HPA for `so`; `so_obj` (the ScaledObject dict) gives the uid for the controller
    owner reference; the scaleTargetRef is the ScaledObject's (`scale_target`, the target object or its
    /scale, is accepted for compatibility and never overrides it).
    Raises HpaBuildError for a trigger whose target cannot be read."""
    meta = so_obj.get("metadata") or {}
    # KEDA takes the GVK from the ScaledObject's scaleTargetRef (resolved through the REST mapper); a
    # /scale subresource (autoscaling/v1 Scale) passed as scale_target must not leak into the HPA
    target = scale_target if scale_target and scale_target.get("kind") not in (None, "Scale") else {}
    api_version = so.target.api_version if so.target.api_version else target.get("apiVersion")
    kind = so.target.kind or target.get("kind")
    spec = {"scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": so.target.name},
            "minReplicas": so.hpa_min_replicas, "maxReplicas": so.hpa_max_replicas, "metrics": metric_specs(so)}
    behavior = hpa_behavior(so, pause)
    if behavior is not None:
        spec["behavior"] = behavior
    metadata = {"name": so.hpa_name, "namespace": so.namespace, "labels": hpa_labels(so, keda_version),
                "ownerReferences": [{"apiVersion": so_obj.get("apiVersion") or "keda.sh/v1alpha1",
                                     "kind": so_obj.get("kind") or "ScaledObject", "name": so.name,
                                     "uid": meta.get("uid") or so.uid, "controller": True,
                                     "blockOwnerDeletion": True}]}
    if so.annotations:
        metadata["annotations"] = dict(so.annotations)
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": metadata, "spec": spec}


__all__ = ["HpaBuildError", "KedaSpecError", "build_hpa", "hpa_behavior", "hpa_labels", "metric_specs"]
