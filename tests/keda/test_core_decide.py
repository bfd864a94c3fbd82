"""One poll of the scale loop (reference §2.4 table, first match wins; §2.5 timings), the status
conditions (§1.4) and the owned HPA (§2.2)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from promop.keda.decide import TriggerResult, decide, scale_to_zero_allowed
from promop.keda.hpa import HpaBuildError, build_hpa
from promop.keda.spec import parse_scaled_object, pause_state
from promop.keda.status import get_condition, hpa_active_condition, initial_conditions

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
CREATED = NOW - timedelta(hours=1)
KIND = "apps/v1.Deployment"
PROM = {"serverAddress": "http://p", "query": "q", "threshold": "10"}


def so_obj(annotations=None, labels=None, **spec) -> dict:
    base = {"scaleTargetRef": {"name": "web"}, "triggers": [{"type": "prometheus", "metadata": PROM}]}
    base.update(spec)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": "app", "namespace": "ns", "uid": "uid-1", "annotations": annotations or {},
                         "labels": labels or {}}, "spec": base}


def run(current, results, annotations=None, last_active=None, created=CREATED, conditions=None, **spec):
    obj = so_obj(annotations, **spec)
    return decide(parse_scaled_object(obj), pause_state(obj["metadata"]["annotations"]), current, results,
                  last_active, created, NOW, conditions, KIND)


def active(name="s0-prometheus", value=20.0):
    return TriggerResult(metric_name=name, value=value, active=True)


def inactive(name="s0-prometheus", value=0.0):
    return TriggerResult(metric_name=name, value=value, active=False)


def failing(name="s0-prometheus", fallback=False):
    return TriggerResult(metric_name=name, error="boom", fallback_active=fallback)


def cond(d, type_):
    c = get_condition(d.conditions, type_)
    return (c.get("status"), c.get("reason", "")) if c else None


# --- activation ---------------------------------------------------------------------------------------

def test_activation_from_zero_to_one_with_event():
    d = run(0, [active()])
    assert d.scale_to == 1 and d.last_active_time == NOW
    assert cond(d, "Active") == ("True", "ScalerActive") and cond(d, "Ready") == ("True", "ScaledObjectReady")
    assert [(e.type, e.reason, e.message) for e in d.events] == [
        ("Normal", "KEDAScaleTargetActivated", "Scaled apps/v1.Deployment ns/web from 0 to 1, triggered by s0-prometheus")]
    assert d.failure_event.reason == "KEDAScaleTargetActivationFailed"


def test_activation_goes_to_min_when_min_above_zero():
    assert run(0, [active()], minReplicaCount=3).scale_to == 3


def test_activation_event_lists_every_active_trigger():
    d = run(0, [active("s0-prometheus"), inactive("s1-prometheus"), active("s2-prometheus")])
    assert d.events[-1].message.endswith("triggered by s0-prometheus;s2-prometheus")


def test_activation_from_idle_to_min():
    d = run(1, [active()], idleReplicaCount=1, minReplicaCount=2)
    assert d.scale_to == 2


def test_active_above_zero_only_refreshes_last_active_time():
    d = run(4, [active()])
    assert d.scale_to is None and d.last_active_time == NOW and cond(d, "Active") == ("True", "ScalerActive")
    assert not d.events


def test_activation_threshold_is_the_callers_strict_comparison():
    d = run(0, [TriggerResult(metric_name="s0-prometheus", value=40.0, active=False)])
    assert d.scale_to is None and not d.is_active


def test_active_with_some_error_is_partial():
    d = run(3, [active("s0-prometheus"), failing("s1-prometheus")])
    assert cond(d, "Ready") == ("Unknown", "PartialTriggerError") and d.scale_to is None
    assert d.last_active_time is None


def test_active_with_error_at_zero_still_activates():
    d = run(0, [active("s0-prometheus"), failing("s1-prometheus")])
    assert d.scale_to == 1


def test_force_activation():
    d = run(0, [inactive()], annotations={"autoscaling.keda.sh/force-activation": "true"})
    assert d.scale_to == 1
    assert get_condition(d.conditions, "Active")["message"] == \
        "Scaling is performed because activation is being forced by annotation"


def test_paused_scale_out_blocks_activation():
    d = run(0, [active()], annotations={"autoscaling.keda.sh/paused-scale-out": "true"})
    assert d.scale_to is None and cond(d, "Paused") == ("True", "ScaledObjectPaused")


def test_fallback_active_trigger_counts_as_active_and_scales_from_zero():
    d = run(0, [failing(fallback=True)], fallback={"failureThreshold": 3, "replicas": 5})
    assert d.is_active and d.scale_to == 1 and cond(d, "Fallback") == ("True", "FallbackExists")
    assert any(e.reason == "ScaledObjectFallbackActivated" for e in d.events)


def test_all_resource_triggers_are_always_active():
    d = run(0, [TriggerResult(metric_name="cpu", is_resource=True)], minReplicaCount=1)
    assert d.is_active and d.scale_to == 1


# --- deactivation and errors --------------------------------------------------------------------------

def test_inactive_with_error_and_fallback_does_nothing():
    d = run(3, [failing()], fallback={"failureThreshold": 3, "replicas": 5}, last_active=NOW - timedelta(hours=1))
    assert d.scale_to is None and cond(d, "Ready") == ("Unknown", "")


def test_inactive_with_error_without_fallback_is_trigger_error_and_never_scales_to_zero():
    d = run(3, [failing()], last_active=NOW - timedelta(hours=1))
    assert d.scale_to is None and cond(d, "Ready") == ("False", "TriggerError")
    assert get_condition(d.conditions, "Ready")["message"] == "Triggers defined in ScaledObject are not working correctly"


def test_error_with_fallback_replicas_zero_falls_through_to_scale_to_zero():
    d = run(3, [failing()], fallback={"failureThreshold": 3, "replicas": 0}, last_active=NOW - timedelta(hours=1))
    assert d.scale_to == 0


def test_scale_to_zero_after_cooldown_with_event():
    d = run(3, [inactive()], last_active=NOW - timedelta(seconds=301))
    assert d.scale_to == 0 and cond(d, "Active") == ("False", "ScalerNotActive")
    assert [(e.reason, e.message) for e in d.events] == [
        ("KEDAScaleTargetDeactivated", "Deactivated apps/v1.Deployment ns/web from 3 to 0")]


def test_cooldown_is_strict():
    d = run(3, [inactive()], last_active=NOW - timedelta(seconds=300))
    assert d.scale_to is None and cond(d, "Active") == ("False", "ScalerCooldown")
    assert get_condition(d.conditions, "Active")["message"] == "Scaler cooling down because triggers are not active"


def test_custom_cooldown():
    assert run(3, [inactive()], last_active=NOW - timedelta(seconds=31), cooldownPeriod=30).scale_to == 0
    assert run(3, [inactive()], last_active=NOW - timedelta(seconds=29), cooldownPeriod=30).scale_to is None


def test_initial_cooldown_without_last_active_time():
    assert run(3, [inactive()], created=NOW - timedelta(seconds=100), initialCooldownPeriod=120).scale_to is None
    assert run(3, [inactive()], created=NOW - timedelta(seconds=121), initialCooldownPeriod=120).scale_to == 0
    # the default initialCooldownPeriod is 0: scale in at once when never active
    assert run(3, [inactive()], created=NOW - timedelta(seconds=1)).scale_to == 0


def test_scale_to_idle():
    d = run(4, [inactive()], idleReplicaCount=0, minReplicaCount=2, last_active=NOW - timedelta(seconds=400))
    assert d.scale_to == 0


def test_paused_scale_in_blocks_scale_to_zero():
    d = run(3, [inactive()], annotations={"autoscaling.keda.sh/paused-scale-in": "true"},
            last_active=NOW - timedelta(hours=1))
    assert d.scale_to is None and cond(d, "Paused") == ("True", "ScaledObjectPaused")


def test_min_above_zero_never_scales_to_zero():
    assert run(3, [inactive()], minReplicaCount=1, last_active=NOW - timedelta(hours=1)).scale_to is None


def test_below_min_without_idle_scales_up_to_min():
    assert run(1, [inactive()], minReplicaCount=3).scale_to == 3


def test_at_zero_inactive_is_not_active():
    d = run(0, [inactive()])
    assert d.scale_to is None and cond(d, "Active") == ("False", "ScalerNotActive") and not d.events


def test_paused_stops_the_loop():
    d = run(0, [active()], annotations={"autoscaling.keda.sh/paused": "true"})
    assert d.scale_to is None and cond(d, "Paused") == ("True", "ScaledObjectPaused")


def test_unpause_sets_unpaused():
    paused = [{"type": "Paused", "status": "True", "reason": "ScaledObjectPaused"}]
    d = run(2, [active()], conditions=initial_conditions()[:3] + paused)
    assert cond(d, "Paused") == ("False", "ScaledObjectUnpaused")


def test_scale_to_zero_allowed_boundaries():
    s = parse_scaled_object(so_obj(cooldownPeriod=10, initialCooldownPeriod=5))
    assert scale_to_zero_allowed(s, NOW - timedelta(seconds=11), None, NOW)
    assert not scale_to_zero_allowed(s, NOW - timedelta(seconds=10), None, NOW)
    assert not scale_to_zero_allowed(s, None, NOW - timedelta(seconds=5), NOW)


def test_triggers_activity():
    d = run(2, [active("s0-prometheus"), inactive("s1-prometheus")])
    assert d.triggers_activity == {"s0-prometheus": {"isActive": True}, "s1-prometheus": {"isActive": False}}


# --- scalingModifiers activity ---------------------------------------------------------------------------

def named(name, metric, value, is_active=True, error=None):
    return TriggerResult(metric_name=metric, trigger_name=name, value=value, active=is_active, error=error)


def test_modifiers_activity_is_composite_above_activation_target():
    adv = {"scalingModifiers": {"formula": "(a + b) / 2", "target": "2", "activationTarget": "5"}}
    d = run(0, [named("a", "s0-prometheus", 4, False), named("b", "s1-prometheus", 8, False)], advanced=adv)
    assert d.composite_value == 6 and d.is_active and d.scale_to == 1
    d = run(0, [named("a", "s0-prometheus", 4), named("b", "s1-prometheus", 6)], advanced=adv)
    assert d.composite_value == 5 and not d.is_active


def test_modifiers_activity_false_on_error():
    adv = {"scalingModifiers": {"formula": "a ?? 100", "target": "2"}}
    d = run(0, [named("a", "s0-prometheus", None, False, error="x")], advanced=adv)
    assert not d.is_active and d.composite_value == 100


# --- status ---------------------------------------------------------------------------------------------

def test_initial_conditions():
    assert [(c["type"], c["status"]) for c in initial_conditions()] == [
        ("Ready", "Unknown"), ("Active", "Unknown"), ("Fallback", "Unknown"), ("Paused", "False")]


@pytest.mark.parametrize("hpa_cond,expected", [
    ({"status": "True", "reason": "ValidMetricFound", "message": "ok"}, ("True", "HPAActive", "HPA is actively scaling")),
    ({"status": "False", "reason": "ScalingDisabled", "message": "scaling is disabled since the replica count of the target is zero"},
     ("True", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")),
    ({"status": "False", "reason": "FailedGetExternalMetric", "message": "unable to get"},
     ("False", "FailedGetExternalMetric", "HPA is not actively scaling: unable to get")),
    ({"status": "False", "message": "m"}, ("False", "HPAMetricsUnavailable", "HPA is not actively scaling: m")),
])
def test_hpa_active_condition(hpa_cond, expected):
    hpa = {"status": {"conditions": [{"type": "AbleToScale", "status": "True"}, {"type": "ScalingActive", **hpa_cond}]}}
    assert hpa_active_condition(hpa) == expected


def test_hpa_active_untouched_without_hpa():
    assert hpa_active_condition(None) is None and hpa_active_condition({"status": {}}) is None


# --- §2.2 HPA ---------------------------------------------------------------------------------------------

def hpa(annotations=None, labels=None, **spec):
    obj = so_obj(annotations, labels, **spec)
    return build_hpa(obj, parse_scaled_object(obj), pause_state(obj["metadata"]["annotations"]))


def test_hpa_shape():
    h = hpa(labels={"team": "a", "scaledobject.keda.sh/name": "app"}, annotations={"note": "x"})
    assert h["metadata"]["name"] == "keda-hpa-app" and h["metadata"]["namespace"] == "ns"
    assert h["metadata"]["labels"] == {"app.kubernetes.io/name": "keda-hpa-app", "app.kubernetes.io/version": "2.20.2",
                                       "app.kubernetes.io/part-of": "app", "app.kubernetes.io/managed-by": "keda-operator",
                                       "team": "a", "scaledobject.keda.sh/name": "app"}
    assert h["metadata"]["annotations"] == {"note": "x"}
    assert h["metadata"]["ownerReferences"] == [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": "app",
                                                 "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}]
    assert h["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert (h["spec"]["minReplicas"], h["spec"]["maxReplicas"]) == (1, 100) and "behavior" not in h["spec"]
    assert h["spec"]["metrics"] == [{"type": "External", "external": {
        "metric": {"name": "s0-prometheus", "selector": {"matchLabels": {"scaledobject.keda.sh/name": "app"}}},
        "target": {"type": "AverageValue", "averageValue": "10"}}}]


def test_hpa_excluded_labels():
    h = hpa(labels={"a": "1", "b": "2", "c": "3"}, annotations={"scaledobject.keda.sh/hpa-excluded-labels": "a, b"})
    assert "a" not in h["metadata"]["labels"] and "b" not in h["metadata"]["labels"] and h["metadata"]["labels"]["c"] == "3"


def test_hpa_min_max_and_name_override():
    h = hpa(minReplicaCount=0, maxReplicaCount=9, advanced={"horizontalPodAutoscalerConfig": {"name": "x" * 70}})
    assert (h["spec"]["minReplicas"], h["spec"]["maxReplicas"]) == (1, 9)
    assert h["metadata"]["name"] == "x" * 70 and h["metadata"]["labels"]["app.kubernetes.io/name"] == "x" * 63
    assert hpa(minReplicaCount=4)["spec"]["minReplicas"] == 4


def test_hpa_behavior_copied_and_disabled_by_pause_annotations():
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}]}}
    assert hpa(advanced={"horizontalPodAutoscalerConfig": {"behavior": behavior}})["spec"]["behavior"] == behavior
    h = hpa(annotations={"autoscaling.keda.sh/paused-scale-in": "true"},
            advanced={"horizontalPodAutoscalerConfig": {"behavior": behavior}})
    assert h["spec"]["behavior"]["scaleDown"]["selectPolicy"] == "Disabled"
    assert h["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 60 and "scaleUp" not in h["spec"]["behavior"]
    h = hpa(annotations={"autoscaling.keda.sh/paused-scale-out": "true"})
    assert h["spec"]["behavior"] == {"scaleUp": {"selectPolicy": "Disabled"}}
    assert "selectPolicy" not in behavior["scaleDown"]      # the ScaledObject's copy is not changed


def test_hpa_metrics_sorted_external_before_resource_with_trigger_index():
    h = hpa(triggers=[{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "60"}},
                      {"type": "prometheus", "metadata": {**PROM, "threshold": "0.5"}},
                      {"type": "memory", "metricType": "AverageValue", "metadata": {"value": "512Mi"}},
                      {"type": "prometheus", "metricType": "Value", "metadata": {**PROM, "threshold": "2500"}}])
    m = h["spec"]["metrics"]
    assert [x["type"] for x in m] == ["External", "External", "Resource", "Resource"]
    assert m[0]["external"]["metric"]["name"] == "s1-prometheus"
    assert m[0]["external"]["target"] == {"type": "AverageValue", "averageValue": "500m"}
    assert m[1]["external"]["metric"]["name"] == "s3-prometheus"
    assert m[1]["external"]["target"] == {"type": "Value", "value": "2500"}
    assert m[2]["resource"] == {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}
    assert m[3]["resource"] == {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}}


def test_hpa_composite_metric():
    h = hpa(triggers=[{"type": "prometheus", "name": "a", "metadata": PROM},
                      {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}},
                      {"type": "prometheus", "name": "b", "metadata": PROM}],
            advanced={"scalingModifiers": {"formula": "a + b", "target": "4", "metricType": "Value"}})
    m = h["spec"]["metrics"]
    assert [x["type"] for x in m] == ["External", "Resource"]
    assert m[0]["external"] == {"metric": {"name": "composite-metric",
                                           "selector": {"matchLabels": {"scaledobject.keda.sh/name": "app"}}},
                                "target": {"type": "Value", "value": "4"}}


def test_hpa_bad_threshold():
    with pytest.raises(HpaBuildError, match="threshold"):
        hpa(triggers=[{"type": "prometheus", "metadata": {**PROM, "threshold": "x"}}])


def test_hpa_refuses_utilization_for_prometheus_and_unknown_trigger_types():
    with pytest.raises(HpaBuildError, match="'Utilization' metric type is unsupported for external metrics"):
        hpa(triggers=[{"type": "prometheus", "metricType": "Utilization", "metadata": PROM}])
    with pytest.raises(HpaBuildError, match="trigger type 'kafka' is not supported"):
        hpa(triggers=[{"type": "kafka", "metadata": {"lagThreshold": "5"}}])


def test_hpa_scale_target_ref_is_the_scaled_objects_even_given_the_scale_subresource():
    obj = so_obj(scaleTargetRef={"name": "db", "apiVersion": "apps/v1", "kind": "StatefulSet"})
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "db"}, "spec": {"replicas": 2}}
    h = build_hpa(obj, parse_scaled_object(obj), pause_state({}), scale)
    assert h["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}


@pytest.mark.parametrize("conds, broken", [
    ([{"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled", "message": "zero"}], False),
    ([{"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"},
      {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}], False),
    ([{"type": "ScalingActive", "status": "False", "reason": "InvalidMetricSourceType", "message": "bad"}], True),
    ([{"type": "ScalingActive", "status": "False", "reason": "FailedGetExternalMetric", "message": "x"}], True),
    ([{"type": "AbleToScale", "status": "False", "reason": "FailedGetScale", "message": "no scale"},
      {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"}], True),
    ([{"type": "ScalingLimited", "status": "False", "reason": "DesiredWithinRange"}], False),
])
def test_ready_reflects_a_broken_hpa(conds, broken):
    from promop.keda.status import hpa_not_working, ready_with_hpa

    hpa = {"status": {"conditions": conds}}
    got = hpa_not_working(hpa, "ns", "keda-hpa-a")
    ready = get_condition(ready_with_hpa(initial_conditions_ready(), hpa, "ns", "keda-hpa-a"), "Ready")
    if not broken:
        assert got is None and ready["status"] == "True"
        return
    bad = next(c for c in conds if c["status"] == "False")
    assert got[0] == "False" and got[1] == "HPANotWorking"
    assert "ns/keda-hpa-a" in got[2] and bad["reason"] in got[2] and bad["message"] in got[2]
    assert ready["status"] == "False" and ready["reason"] == "HPANotWorking"


def initial_conditions_ready() -> list[dict]:
    from promop.keda.status import READY, READY_OK, set_triple

    return set_triple(initial_conditions(), READY, READY_OK)


def test_a_trigger_error_keeps_keda_ready_reason_over_a_broken_hpa():
    from promop.keda.status import READY, READY_TRIGGER_ERROR, ready_with_hpa, set_triple

    hpa = {"status": {"conditions": [{"type": "ScalingActive", "status": "False", "reason": "FailedGetExternalMetric"}]}}
    conds = set_triple(initial_conditions(), READY, READY_TRIGGER_ERROR)
    assert get_condition(ready_with_hpa(conds, hpa, "ns", "h"), "Ready")["reason"] == "TriggerError"
    assert ready_with_hpa(conds, None, "ns", "h") == conds


def test_ready_hpa_not_working_always_comes_with_hpa_active_from_the_same_hpa():
    """CI caught the reconcile writing Ready=False HPANotWorking with no HPAActive (only the scale loop set
    it): both writers now go through with_hpa, which sets the pair from one HPA."""
    from promop.keda.status import HPA_ACTIVE, with_hpa

    hpa = {"status": {"conditions": [{"type": "ScalingActive", "status": "False",
                                      "reason": "FailedGetExternalMetric", "message": "no metrics returned"}]}}
    got = with_hpa(initial_conditions_ready(), hpa, "ns", "keda-hpa-a")
    assert get_condition(got, "Ready")["reason"] == "HPANotWorking"
    assert get_condition(got, HPA_ACTIVE) == {"type": HPA_ACTIVE, "status": "False", "reason": "FailedGetExternalMetric",
                                              "message": "HPA is not actively scaling: no metrics returned"}
    healed = {"status": {"conditions": [{"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"}]}}
    again = with_hpa(got, healed, "ns", "keda-hpa-a")
    assert get_condition(again, HPA_ACTIVE)["reason"] == "HPAActive"
    assert with_hpa(initial_conditions_ready(), None, "ns", "keda-hpa-a") == initial_conditions_ready()


def test_both_condition_writers_use_with_hpa():
    """The reconcile and the scale loop must not set Ready from the HPA without HPAActive: neither calls
    ready_with_hpa on its own."""
    import inspect

    from promop.autoscaler.keda import loop, reconcile

    for mod in (loop, reconcile):
        src = inspect.getsource(mod)
        assert "with_hpa(" in src and "ready_with_hpa" not in src, mod.__name__
