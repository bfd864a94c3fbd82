"""ScaledObject/ScaledJob parsing with KEDA's defaults (reference §1.1-§1.3, §1.5), the pause
annotations, quantities (§3.4 value -> HPA) and fallback (§2.6)."""

from __future__ import annotations

import pytest

from promop.keda.fallback import (
    FallbackError, any_fallback_active, fallback_active, fallback_enabled, fallback_replicas, fallback_value,
    record_health,
)
from promop.keda.quantities import clamp_metric, milli_quantity
from promop.keda.spec import KedaSpecError, parse_scaled_job, parse_scaled_object, pause_state


def so(**spec) -> dict:
    base = {"scaleTargetRef": {"name": "web"},
            "triggers": [{"type": "prometheus", "metadata": {"serverAddress": "http://p", "query": "q", "threshold": "1"}}]}
    base.update(spec)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": "app", "namespace": "ns", "uid": "u1"}, "spec": base}


def test_defaults():
    s = parse_scaled_object(so())
    assert (s.polling_interval, s.cooldown_period, s.initial_cooldown_period) == (30, 300, 0)
    assert (s.min_replicas, s.hpa_min_replicas, s.hpa_max_replicas) == (0, 1, 100)
    assert s.idle_replica_count is None and s.fallback is None and not s.restore_to_original_replica_count
    assert (s.target.api_version, s.target.kind, s.target.name) == ("apps/v1", "Deployment", "web")
    assert s.hpa_name == "keda-hpa-app"
    assert s.triggers[0].metric_name == "s0-prometheus" and s.triggers[0].effective_metric_type == "AverageValue"


def test_hpa_name_override_and_min_max():
    s = parse_scaled_object(so(minReplicaCount=3, maxReplicaCount=7,
                               advanced={"horizontalPodAutoscalerConfig": {"name": "mine"}}))
    assert (s.hpa_name, s.min_replicas, s.hpa_min_replicas, s.hpa_max_replicas) == ("mine", 3, 3, 7)


def test_zero_polling_and_cooldown_are_kept():
    s = parse_scaled_object(so(cooldownPeriod=0))
    assert s.cooldown_period == 0 and s.cooldown_period_set and not s.polling_interval_set


def test_trigger_index_counts_resource_triggers():
    s = parse_scaled_object(so(triggers=[{"type": "cpu", "metadata": {"value": "50"}},
                                         {"type": "prometheus", "metadata": {}},
                                         {"type": "prometheus", "metadata": {}}]))
    assert [t.metric_name for t in s.triggers] == ["cpu", "s1-prometheus", "s2-prometheus"]


@pytest.mark.parametrize("spec,field", [
    ({"triggers": []}, "spec.triggers"),
    ({"pollingInterval": 0}, "spec.pollingInterval"),
    ({"cooldownPeriod": -1}, "spec.cooldownPeriod"),
    ({"minReplicaCount": "1"}, "spec.minReplicaCount"),
    ({"scaleTargetRef": {}}, "spec.scaleTargetRef.name"),
    ({"fallback": {"replicas": 1}}, "spec.fallback.failureThreshold"),
    ({"fallback": {"failureThreshold": 1, "replicas": 1, "behavior": "x"}}, "spec.fallback.behavior"),
    ({"triggers": [{"metadata": {}}]}, "spec.triggers[0].type"),
    ({"triggers": [{"type": "prometheus", "authenticationRef": {"name": "a", "kind": "Secret"}}]},
     "spec.triggers[0].authenticationRef.kind"),
])
def test_errors_name_the_field(spec, field):
    with pytest.raises(KedaSpecError) as exc:
        parse_scaled_object(so(**spec))
    assert exc.value.field == field and "\n" not in str(exc.value)


def test_no_triggers_message():
    with pytest.raises(KedaSpecError, match="no triggers defined in the ScaledObject/ScaledJob"):
        parse_scaled_object(so(triggers=[]))


def test_status_strings():
    s = parse_scaled_object(so(triggers=[
        {"type": "prometheus", "metadata": {}, "authenticationRef": {"name": "ta1"}},
        {"type": "cpu", "metadata": {}},
        {"type": "prometheus", "metadata": {}, "authenticationRef": {"name": "cta", "kind": "ClusterTriggerAuthentication"}}]))
    assert s.triggers_types == "prometheus,cpu"
    assert s.authentications_types == "ta1,cta"
    assert s.triggers[0].auth_ref == {"name": "ta1", "kind": "TriggerAuthentication"}


def test_using_modifiers():
    assert not parse_scaled_object(so()).using_modifiers
    assert parse_scaled_object(so(advanced={"scalingModifiers": {"target": "2"}})).using_modifiers


# --- §1.3 pause annotations ---------------------------------------------------------------------------

P = "autoscaling.keda.sh/"


@pytest.mark.parametrize("value,paused", [("true", True), ("false", False), ("1", True), ("0", False),
                                          ("yes", True), ("", True), ("FALSE", False), ("banana", True)])
def test_paused_non_boolean_counts_as_true(value, paused):
    assert pause_state({P + "paused": value}).paused is paused


def test_paused_replicas_takes_precedence_even_over_paused_false():
    p = pause_state({P + "paused": "false", P + "paused-replicas": "3"})
    assert p.paused and p.paused_replicas == 3 and p.stops_loop


def test_paused_replicas_zero():
    p = pause_state({P + "paused-replicas": "0"})
    assert p.paused_replicas == 0 and p.stops_loop


@pytest.mark.parametrize("value", ["abc", "1.5", "", " 3"])
def test_paused_replicas_non_integer_is_an_error(value):
    with pytest.raises(KedaSpecError, match="paused-replicas"):
        pause_state({P + "paused-replicas": value})


def test_scale_in_out_do_not_stop_the_loop():
    p = pause_state({P + "paused-scale-in": "true", P + "paused-scale-out": "true"})
    assert p.scale_in and p.scale_out and not p.stops_loop and p.any
    assert not pause_state({P + "paused-scale-in": "false"}).any
    assert not pause_state({}).any and not pause_state(None).force_activation


def test_force_activation():
    assert pause_state({P + "force-activation": "true"}).force_activation
    assert not pause_state({P + "force-activation": "false"}).force_activation


# --- quantities ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value,text", [(2, "2"), (0.5, "500m"), (9.3344, "9334m"), (9.3345, "9335m"), (1500, "1500"),
                                        (2000, "2k"), (0, "0"), (0.0004, "0"), (0.0005, "1m"), (1e6, "1M"),
                                        (float("nan"), "0"), (float("inf"), "0"), (float("-inf"), "0"), (-3, "0"),
                                        (1e16, "10P"), (100.5, "100500m")])
def test_milli_quantity(value, text):
    assert milli_quantity(value) == text


def test_clamp():
    assert clamp_metric(-0.1) == 0 and clamp_metric(3.5) == 3.5


# --- §2.6 fallback -------------------------------------------------------------------------------------

def test_health_counting():
    h = record_health({}, "s0-prometheus", False)
    h = record_health(h, "s0-prometheus", False)
    assert h == {"s0-prometheus": {"numberOfFailures": 2, "status": "Failing"}}
    h2 = record_health(h, "s0-prometheus", True)
    assert h2 == {"s0-prometheus": {"numberOfFailures": 0, "status": "Happy"}}
    assert h["s0-prometheus"]["numberOfFailures"] == 2     # not changed in place


def test_fallback_starts_strictly_after_threshold():
    h = {}
    for _ in range(3):
        h = record_health(h, "m", False)
    assert not fallback_active(h, "m", 3)
    h = record_health(h, "m", False)
    assert fallback_active(h, "m", 3) and any_fallback_active(h, 3)
    assert not fallback_active(record_health(h, "m", True), "m", 3)


def test_fallback_threshold_zero_starts_on_first_failure():
    assert fallback_active(record_health({}, "m", False), "m", 0)


@pytest.mark.parametrize("behavior,replicas,current,expected", [
    ("static", 5, 2, 5), ("currentReplicas", 5, 2, 2), ("currentReplicasIfHigher", 5, 2, 5),
    ("currentReplicasIfHigher", 5, 8, 8), ("currentReplicasIfLower", 5, 2, 2), ("currentReplicasIfLower", 5, 8, 5)])
def test_fallback_replicas(behavior, replicas, current, expected):
    assert fallback_replicas(behavior, replicas, current) == expected


def test_fallback_value():
    assert fallback_value(10, "AverageValue", 5) == 50
    assert fallback_value(10, "Value", 6, ready_pods=3) == 20
    with pytest.raises(FallbackError):
        fallback_value(10, "Value", 6, ready_pods=0)


def test_fallback_enabled():
    s = parse_scaled_object(so(fallback={"failureThreshold": 3, "replicas": 5}))
    assert fallback_enabled(s, "AverageValue") and fallback_enabled(s, "Value")
    assert not fallback_enabled(s, "Utilization")
    assert not fallback_enabled(parse_scaled_object(so()), "AverageValue")
    neg = parse_scaled_object(so(fallback={"failureThreshold": -1, "replicas": 5}))
    assert not fallback_enabled(neg, "AverageValue")
    mods = parse_scaled_object(so(fallback={"failureThreshold": 1, "replicas": 5},
                                  advanced={"scalingModifiers": {"formula": "a", "target": "2.5"}}))
    assert not fallback_enabled(mods, "AverageValue")   # the modifier target must parse as an int > 0
    for target, ok in (("3", True), ("0", False), (" 3", False), ("-2", False)):
        m = parse_scaled_object(so(fallback={"failureThreshold": 1, "replicas": 5},
                                   advanced={"scalingModifiers": {"formula": "a", "target": target}}))
        assert fallback_enabled(m, "AverageValue") is ok, target


# --- ScaledJob ------------------------------------------------------------------------------------------

def test_scaled_job_defaults():
    j = parse_scaled_job({"metadata": {"name": "j", "namespace": "n"}, "spec": {
        "jobTargetRef": {"template": {"spec": {"containers": []}}},
        "triggers": [{"type": "prometheus", "metadata": {}}]}})
    assert (j.polling_interval, j.max_replica_count, j.min_replica_count) == (30, 100, 0)
    assert (j.successful_jobs_history_limit, j.failed_jobs_history_limit) == (100, 100)
    assert j.scaling_strategy.strategy == "default"


def test_scaled_job_bad_strategy():
    with pytest.raises(KedaSpecError, match="spec.scalingStrategy.strategy"):
        parse_scaled_job({"metadata": {"name": "j"}, "spec": {
            "jobTargetRef": {"template": {}}, "scalingStrategy": {"strategy": "fast"},
            "triggers": [{"type": "prometheus", "metadata": {}}]}})
