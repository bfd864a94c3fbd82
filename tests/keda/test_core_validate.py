"""KEDA's admission rules for ScaledObjects (reference §1.7; texts from scaledobject_webhook.go,
scaledobject_types.go and scaletriggers_types.go, asserted verbatim by KEDA's own tests)."""

from __future__ import annotations

import pytest

from promop.keda.validate import validate_scaled_object

PROM = {"serverAddress": "http://p", "query": "q", "threshold": "10"}


def so(name="app", annotations=None, **spec) -> dict:
    base = {"scaleTargetRef": {"name": "web"}, "triggers": [{"type": "prometheus", "metadata": PROM}]}
    base.update(spec)
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": name, "namespace": "ns", "annotations": annotations or {}}, "spec": base}


def errors(obj, others=(), hpas=(), **kw):
    return validate_scaled_object(obj, list(others), list(hpas), **kw)[0]


def test_valid():
    assert validate_scaled_object(so(), [], []) == ([], [])


# --- bounds ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,message", [
    ({"minReplicaCount": 5, "maxReplicaCount": 3}, "MinReplicaCount=5 must be less than MaxReplicaCount=3"),
    ({"minReplicaCount": 0, "maxReplicaCount": 0}, "MinReplicaCount=1 must be less than MaxReplicaCount=0"),
    ({"minReplicaCount": 101}, "MinReplicaCount=101 must be less than MaxReplicaCount=100"),
    ({"idleReplicaCount": 2, "minReplicaCount": 2}, "IdleReplicaCount=2 must be less than MinReplicaCount=2"),
    ({"idleReplicaCount": 0}, "IdleReplicaCount=0 must be less than MinReplicaCount=0"),
    # min=0 is read as GetHPAMinReplicas() = 1 once set, so idle=1 with min=0 is refused ...
    ({"idleReplicaCount": 1, "minReplicaCount": 0}, "IdleReplicaCount=1 must be less than MinReplicaCount=1"),
])
def test_bounds(spec, message):
    assert errors(so(**spec)) == [message]


@pytest.mark.parametrize("spec", [{"minReplicaCount": 3, "maxReplicaCount": 3}, {"idleReplicaCount": 0, "minReplicaCount": 2},
                                  {"maxReplicaCount": 1}, {"minReplicaCount": 100},
                                  {"idleReplicaCount": 0, "minReplicaCount": 0}])   # ... and idle=0 with min=0 passes
def test_bounds_ok(spec):
    assert errors(so(**spec)) == []


# --- other ScaledObjects and HPAs ----------------------------------------------------------------------

def test_second_scaled_object_on_the_same_target():
    assert errors(so("b"), others=[so("a")]) == [
        "the workload 'web' of type 'apps/v1.Deployment' is already managed by the ScaledObject 'a'"]


def test_same_object_is_not_a_conflict_and_other_kinds_are_not():
    assert errors(so("a"), others=[so("a")]) == []
    sts = so("b", scaleTargetRef={"name": "web", "kind": "StatefulSet"})
    assert errors(sts, others=[so("a")]) == []


def test_same_hpa_name():
    other = so("a", scaleTargetRef={"name": "other"}, advanced={"horizontalPodAutoscalerConfig": {"name": "shared"}})
    mine = so("b", advanced={"horizontalPodAutoscalerConfig": {"name": "shared"}})
    assert errors(mine, others=[other]) == ["the HPA 'shared' is already managed by the ScaledObject 'a'"]


def hpa(name="foreign", owner=None, annotations=None, target="web", kind="Deployment"):
    meta = {"name": name, "namespace": "ns", "annotations": annotations or {}}
    if owner:
        meta["ownerReferences"] = [{"kind": "ScaledObject", "name": owner}]
    return {"metadata": meta, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target}}}


def test_foreign_hpa():
    assert errors(so(), hpas=[hpa()]) == [
        "the workload 'web' of type 'apps/v1.Deployment' is already managed by the hpa 'foreign'"]


def test_own_hpa_other_target_and_opt_out_are_fine():
    assert errors(so(), hpas=[hpa("keda-hpa-app", owner="app")]) == []
    assert errors(so(), hpas=[hpa(target="other")]) == []
    assert errors(so(), hpas=[hpa(kind="StatefulSet")]) == []
    assert errors(so(), hpas=[hpa(annotations={"validations.keda.sh/hpa-ownership": "false"})]) == []


def test_transfer_ownership_needs_the_name():
    transfer = {"scaledobject.keda.sh/transfer-hpa-ownership": "true"}
    assert errors(so(annotations=transfer), hpas=[hpa()]) == [
        "the existing hpa 'foreign' for workload 'web' of type 'apps/v1.Deployment' must be specified by name in "
        "advanced settings to enable ownership transfer"]
    named = so(annotations=transfer, advanced={"horizontalPodAutoscalerConfig": {"name": "foreign"}})
    assert errors(named, hpas=[hpa()]) == []


# --- fallback --------------------------------------------------------------------------------------------

def test_fallback_negative():
    assert errors(so(fallback={"failureThreshold": -1, "replicas": 2})) == [
        "FailureThreshold=-1 & Replicas=2 must both be greater than or equal to 0"]


def test_fallback_needs_an_average_value_trigger():
    msg = "at least one trigger (that is not cpu or memory) has to have the `AverageValue` type for the fallback to be enabled"
    value_only = so(fallback={"failureThreshold": 3, "replicas": 2},
                    triggers=[{"type": "prometheus", "metricType": "Value", "metadata": PROM}])
    assert errors(value_only) == [msg]
    cpu_only = so(fallback={"failureThreshold": 3, "replicas": 2}, minReplicaCount=1,
                  triggers=[{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}}])
    assert errors(cpu_only) == [msg]
    assert errors(so(fallback={"failureThreshold": 3, "replicas": 2})) == []


def test_fallback_with_modifiers_value():
    obj = so(fallback={"failureThreshold": 3, "replicas": 2},
             triggers=[{"type": "prometheus", "name": "a", "metadata": PROM}],
             advanced={"scalingModifiers": {"formula": "a", "target": "2", "metricType": "Value"}})
    assert errors(obj) == ["when using ScalingModifiers, ScaledObject.Spec.Advanced.ScalingModifiers.MetricType "
                           "must be AverageValue to have fallback enabled"]


def test_fallback_behavior_scaling_modifiers_needs_a_formula():
    obj = so(fallback={"failureThreshold": 3, "replicas": 2, "behavior": "scalingModifiers"})
    assert len(errors(obj)) == 1 and "scalingModifiers" in errors(obj)[0]


# --- scalingModifiers ---------------------------------------------------------------------------------------

def mods(**sm):
    return so(triggers=[{"type": "prometheus", "name": "a", "metadata": PROM},
                        {"type": "prometheus", "name": "b", "metadata": PROM},
                        {"type": "cpu", "name": "c", "metricType": "Utilization", "metadata": {"value": "50"}}],
              advanced={"scalingModifiers": sm})


def test_formula_ok():
    assert errors(mods(formula="(a + b) / 2", target="2")) == []
    assert errors(mods(formula="count([a, b], {# > 1}) > 1 ? 5 : 0", target="2")) == []


def test_formula_referencing_a_cpu_trigger_is_unknown():
    (msg,) = errors(mods(formula="a + c", target="2"))
    assert msg.startswith("error validating formula in ScalingModifiers: unknown name c")


def test_formula_syntax_error():
    (msg,) = errors(mods(formula="a +", target="2"))
    assert msg.startswith("error validating formula in ScalingModifiers: ")


def test_formula_mandatory_and_target_mandatory():
    assert errors(mods(target="2")) == ["error ScalingModifiers.Formula is mandatory"]
    assert errors(mods(formula="a")) == ["error validating formula in ScalingModifiers: formula is given but target is empty"]


@pytest.mark.parametrize("target,cause", [("0", "%!w(<nil>)"), ("-1", "%!w(<nil>)"),
                                          ("x", 'strconv.ParseFloat: parsing "x": invalid syntax')])
def test_formula_target(target, cause):
    assert errors(mods(formula="a", target=target)) == [
        "error validating target in ScalingModifiers: error converting target for scalingModifiers (string->float) "
        f"to valid target: {cause}"]


def test_formula_that_fails_with_dummy_values():
    (msg,) = errors(mods(formula="a % 2", target="2"))
    assert msg.startswith("error validating formula in ScalingModifiers")


# --- names and triggers --------------------------------------------------------------------------------------

def test_name_length():
    long = "x" * 64
    assert errors(so(long))[0] == (f'scaledobject name "{long}" is 64 characters long; must be no more than 63 '
                                   'characters because it is used as the "scaledobject.keda.sh/name" label value')
    name = "x" * 60     # keda-hpa-<60> is 69 long
    assert errors(so(name))[0].startswith(f'HPA name "keda-hpa-{name}" derived from scaledobject is 69 characters long')
    assert errors(so(name, advanced={"horizontalPodAutoscalerConfig": {"name": "short"}})) == []


def test_duplicate_trigger_names():
    obj = so(triggers=[{"type": "prometheus", "name": "t", "metadata": PROM}, {"type": "prometheus", "name": "t", "metadata": PROM}])
    assert errors(obj) == ['triggerName "t" is defined multiple times in the ScaledObject/ScaledJob, but it must be unique']


def test_use_cached_metrics_on_cpu():
    obj = so(minReplicaCount=1, triggers=[{"type": "cpu", "useCachedMetrics": True, "metricType": "Utilization",
                                           "metadata": {"value": "5"}}])
    assert 'property "useCachedMetrics" is not supported for "cpu" scaler' in errors(obj)


def test_no_triggers():
    assert errors(so(triggers=[])) == ["no triggers defined in the ScaledObject/ScaledJob"]


# --- cpu/memory with the target ---------------------------------------------------------------------------------

def deployment(resources):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "resources": resources}]}}}}


def test_cpu_trigger_needs_a_request():
    obj = so(minReplicaCount=1, triggers=[{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}}])
    assert errors(obj, scale_target=deployment({})) == [
        "the scaledobject has a cpu trigger but the container app doesn't have the cpu request defined"]
    assert errors(obj, scale_target=deployment({"requests": {"cpu": "100m"}})) == []
    limit_range = {"spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "50m"}}]}}
    assert errors(obj, scale_target=deployment({}), limit_ranges=[limit_range]) == []


def test_only_cpu_with_min_zero():
    obj = so(triggers=[{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}}])
    assert errors(obj, scale_target=deployment({"requests": {"cpu": "1"}})) == [
        "scaledobject has only cpu/memory triggers AND minReplica is 0 (scale to zero doesn't work in this case)"]


# --- warnings ----------------------------------------------------------------------------------------------------

def test_warnings():
    _, warnings = validate_scaled_object(so(minReplicaCount=1, pollingInterval=10, cooldownPeriod=60), [], [])
    assert len(warnings) == 2 and warnings[0].startswith("pollingInterval") and warnings[1].startswith("cooldownPeriod")
    assert validate_scaled_object(so(minReplicaCount=0, pollingInterval=10, cooldownPeriod=60), [], [])[1] == []
    assert validate_scaled_object(so(minReplicaCount=2, idleReplicaCount=0, pollingInterval=10), [], [])[1] == []
    cached = so(minReplicaCount=1, pollingInterval=10,
                triggers=[{"type": "prometheus", "useCachedMetrics": True, "metadata": PROM}])
    assert validate_scaled_object(cached, [], [])[1] == []
    assert validate_scaled_object(so(minReplicaCount=1), [], [])[1] == []
