"""The ScaledObject controller on the sandbox: reconcile, the 0<->1 scale loop, status, events.

The expected values are KEDA's (../shared/reference/keda.md §2.1, §2.2, §2.4, §2.12), not our output.
"""

from __future__ import annotations

import pytest

from promop.autoscaler.keda.resources import DEPLOYMENTS, SCALEDOBJECTS
from tests.keda.runtime_harness import KedaHarness, deployment, scaled_object, wait_for


@pytest.fixture
def h(sandbox):
    harness = KedaHarness(sandbox)
    yield harness
    harness.close()


def test_reconcile_writes_metadata_hpa_and_status(h):
    h.client.create(DEPLOYMENTS, deployment("web", 0), "default")
    h.client.create(SCALEDOBJECTS, scaled_object("web", "web", h.prom.url, "q_web", minReplicaCount=0,
                                                 maxReplicaCount=7), "default")
    h.start()
    so = wait_for(lambda: (o := h.so("web")) and (o.get("status") or {}).get("hpaName") and o, what="hpaName")
    assert "finalizer.keda.sh" in so["metadata"]["finalizers"]
    assert so["metadata"]["labels"]["scaledobject.keda.sh/name"] == "web"
    st = so["status"]
    assert st["hpaName"] == "keda-hpa-web"
    assert st["externalMetricNames"] == ["s0-prometheus"]
    assert st["triggersTypes"] == "prometheus"
    assert st["scaleTargetKind"] == "apps/v1.Deployment"
    assert st["originalReplicaCount"] == 0
    hpa = h.hpa("keda-hpa-web")
    assert hpa["spec"]["minReplicas"] == 1 and hpa["spec"]["maxReplicas"] == 7
    metric = hpa["spec"]["metrics"][0]["external"]
    assert metric["metric"]["name"] == "s0-prometheus"
    assert metric["metric"]["selector"] == {"matchLabels": {"scaledobject.keda.sh/name": "web"}}
    assert metric["target"] == {"type": "AverageValue", "averageValue": "10"}
    assert hpa["metadata"]["ownerReferences"][0]["uid"] == so["metadata"]["uid"]
    wait_for(lambda: h.condition("web", "Ready").get("reason") == "ScaledObjectReady", what="Ready")


def test_scales_zero_to_one_and_back_after_cooldown(h):
    h.client.create(DEPLOYMENTS, deployment("api", 0), "default")
    h.prom.set("q_api", "0")
    h.client.create(SCALEDOBJECTS, scaled_object("api", "api", h.prom.url, "q_api", cooldownPeriod=1),
                    "default")
    h.start()
    wait_for(lambda: h.condition("api", "Active").get("reason") == "ScalerNotActive", what="inactive")
    assert h.replicas("api") == 0
    h.prom.set("q_api", "25")
    wait_for(lambda: h.replicas("api") == 1, what="0 -> 1")
    ev = wait_for(lambda: h.events("KEDAScaleTargetActivated"), what="activation event")
    assert ev[0]["message"] == ("Scaled apps/v1.Deployment default/api from 0 to 1, triggered by "
                                "s0-prometheus")
    assert ev[0]["source"]["component"] == "keda-operator"
    wait_for(lambda: h.condition("api", "Active").get("reason") == "ScalerActive", what="Active")
    assert (h.so("api")["status"].get("lastActiveTime"))
    h.prom.set("q_api", "0")
    wait_for(lambda: h.replicas("api") == 0, what="1 -> 0 after the cooldown")
    wait_for(lambda: h.events("KEDAScaleTargetDeactivated"), what="deactivation event")


def test_activation_threshold_is_strict(h):
    h.client.create(DEPLOYMENTS, deployment("strict", 0), "default")
    h.prom.set("q_strict", "5")
    so = scaled_object("strict", "strict", h.prom.url, "q_strict")
    so["spec"]["triggers"][0]["metadata"]["activationThreshold"] = "5"
    h.client.create(SCALEDOBJECTS, so, "default")
    h.start()
    wait_for(lambda: h.condition("strict", "Active").get("reason") == "ScalerNotActive", what="inactive at =")
    assert h.replicas("strict") == 0
    h.prom.set("q_strict", "5.001")
    wait_for(lambda: h.replicas("strict") == 1, what="active above the activation threshold")


def test_one_bad_object_does_not_stop_the_others(h):
    h.client.create(DEPLOYMENTS, deployment("good", 0), "default")
    h.prom.set("q_good", "50")
    bad = scaled_object("bad", "nothing", h.prom.url, "q_bad")
    bad["spec"]["scaleTargetRef"] = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"}
    h.client.create(SCALEDOBJECTS, bad, "default")
    h.client.create(SCALEDOBJECTS, scaled_object("good", "good", h.prom.url, "q_good"), "default")
    h.start()
    wait_for(lambda: h.replicas("good") == 1, what="the good one scales")
    ready = wait_for(lambda: (c := h.condition("bad", "Ready")).get("status") == "False" and c, what="bad Ready")
    assert ready["reason"] == "ScaledObjectCheckFailed"
    assert "scaleTargetRef" in ready["message"]
    assert any(e["involvedObject"]["name"] == "bad" for e in h.events("ScaledObjectCheckFailed"))


def test_second_scaled_object_on_one_target_gets_a_condition(h):
    h.client.create(DEPLOYMENTS, deployment("shared", 0), "default")
    h.client.create(SCALEDOBJECTS, scaled_object("first", "shared", h.prom.url, "q1"), "default")
    h.start()
    wait_for(lambda: h.condition("first", "Ready").get("status") == "True", what="first ready")
    h.client.create(SCALEDOBJECTS, scaled_object("second", "shared", h.prom.url, "q2"), "default")
    ready = wait_for(lambda: (c := h.condition("second", "Ready")).get("status") == "False" and c,
                     what="second refused")
    assert "already managed by the ScaledObject" in ready["message"] and "first" in ready["message"]
    assert h.condition("first", "Ready").get("status") == "True"
    assert h.hpa("keda-hpa-second") is None


def test_paused_replicas_deletes_the_hpa_and_sets_the_count_then_unpauses(h):
    h.client.create(DEPLOYMENTS, deployment("p", 0), "default")
    h.prom.set("q_p", "0")
    h.client.create(SCALEDOBJECTS, scaled_object("p", "p", h.prom.url, "q_p"), "default")
    h.start()
    wait_for(lambda: h.hpa("keda-hpa-p"), what="HPA")
    h.client.patch(SCALEDOBJECTS, "p", {"metadata": {"annotations": {"autoscaling.keda.sh/paused-replicas": "3"}}},
                   "default")
    wait_for(lambda: h.replicas("p") == 3, what="paused at 3")
    wait_for(lambda: h.hpa("keda-hpa-p") is None, what="HPA deleted")
    paused = wait_for(lambda: (c := h.condition("p", "Paused")).get("status") == "True" and c, what="Paused")
    assert paused["reason"] == "ScaledObjectPaused"
    assert h.so("p")["status"]["pausedReplicaCount"] == 3
    stopped = wait_for(lambda: _events_of(h, "p", "KEDAScalersStopped"), what="KEDAScalersStopped")
    assert [(e["type"], e["message"]) for e in stopped] == [("Normal", "Stopped scalers watch")]
    h.prom.set("q_p", "0")  # inactive: once unpaused the loop scales it to zero again
    h.client.patch(SCALEDOBJECTS, "p", {"metadata": {"annotations": {"autoscaling.keda.sh/paused-replicas": None}}},
                   "default")
    unpaused = wait_for(lambda: (c := h.condition("p", "Paused")).get("status") == "False" and c, what="unpaused")
    assert unpaused["reason"] == "ScaledObjectUnpaused"
    wait_for(lambda: h.hpa("keda-hpa-p"), what="HPA recreated")
    assert "pausedReplicaCount" not in h.so("p")["status"]
    wait_for(lambda: len(_events_of(h, "p", "KEDAScalersStarted")) == 2, what="started again after the pause")
    assert len(_events_of(h, "p", "KEDAScalersStopped")) == 1


def _events_of(h, name: str, reason: str) -> list[dict]:
    return [e for e in h.events(reason) if e["involvedObject"]["name"] == name]


def test_deletion_restores_the_original_replica_count_and_drops_the_finalizer(h):
    h.client.create(DEPLOYMENTS, deployment("r", 4), "default")
    h.prom.set("q_r", "0")
    h.client.create(SCALEDOBJECTS, scaled_object("r", "r", h.prom.url, "q_r", cooldownPeriod=0,
                                                 advanced={"restoreToOriginalReplicaCount": True}), "default")
    h.start()
    wait_for(lambda: h.replicas("r") == 0, what="scaled to zero")
    assert h.so("r")["status"]["originalReplicaCount"] == 4
    h.client.delete(SCALEDOBJECTS, "r", "default")
    wait_for(lambda: h.so("r") is None, what="finalizer removed, object gone")
    assert h.replicas("r") == 4
    assert [e["message"] for e in _events_of(h, "r", "KEDAScalersStopped")] == ["Stopped scalers watch"]


def test_target_created_after_the_scaled_object(h):
    h.prom.set("q_late", "50")
    h.client.create(SCALEDOBJECTS, scaled_object("late", "late", h.prom.url, "q_late"), "default")
    h.start()
    ready = wait_for(lambda: (c := h.condition("late", "Ready")).get("status") == "False" and c, what="not found")
    assert "Deployment default/late not found" in ready["message"]
    h.client.create(DEPLOYMENTS, deployment("late", 0), "default")
    wait_for(lambda: h.replicas("late") == 1, what="reconciled once the target exists, then activated")


def test_keda_scaler_metrics_and_scalers_started_event(h):
    h.client.create(DEPLOYMENTS, deployment("m", 0), "default")
    h.prom.set("q_m", "7.5")
    h.client.create(SCALEDOBJECTS, scaled_object("m", "m", h.prom.url, "q_m"), "default")
    ctl = h.start()
    labels = {"namespace": "default", "metric": "s0-prometheus", "scaledObject": "m", "scaler": "prometheusScaler",
              "triggerIndex": "0", "type": "scaledobject"}
    wait_for(lambda: ctl.registry.get_sample_value("keda_scaler_metrics_value", labels) == 7.5, what="value")
    assert ctl.registry.get_sample_value("keda_scaler_active", labels) == 1.0
    assert [e["message"] for e in h.events("KEDAScalersStarted")] == ["Started scalers watch"]
    h.client.delete(SCALEDOBJECTS, "m", "default")
    wait_for(lambda: ctl.registry.get_sample_value("keda_scaler_active", labels) is None, what="series dropped")


def test_foreign_hpa_on_the_target_gets_a_condition_and_an_event(h):
    from promop.autoscaler.keda.resources import HPAS

    h.client.create(DEPLOYMENTS, deployment("fh", 1), "default")
    h.client.create(HPAS, {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                           "metadata": {"name": "theirs"},
                           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "fh"},
                                    "minReplicas": 1, "maxReplicas": 3,
                                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                                        "type": "Utilization", "averageUtilization": 50}}}]}}, "default")
    h.client.create(SCALEDOBJECTS, scaled_object("fh", "fh", h.prom.url, "q_fh"), "default")
    h.start()
    ready = wait_for(lambda: (c := h.condition("fh", "Ready")).get("status") == "False" and c, what="refused")
    assert ready["reason"] == "ScaledObjectCheckFailed"
    assert "the workload 'fh' of type 'apps/v1.Deployment' is already managed by the hpa 'theirs'" in ready["message"]
    assert any(e["involvedObject"]["name"] == "fh" for e in h.events("ScaledObjectCheckFailed"))
    assert h.hpa("keda-hpa-fh") is None


def test_unsupported_trigger_type_is_a_condition_not_a_crash_loop(h):
    h.client.create(DEPLOYMENTS, deployment("kf", 0), "default")
    so = scaled_object("kf", "kf", h.prom.url, "q_kf")
    so["spec"]["triggers"] = [{"type": "kafka", "metadata": {"topic": "t"}}]
    h.client.create(SCALEDOBJECTS, so, "default")
    h.start()
    ready = wait_for(lambda: (c := h.condition("kf", "Ready")).get("status") == "False" and c, what="refused")
    assert ready["reason"] == "ScaledObjectCheckFailed" and "kafka" in ready["message"]
    assert h.controller.metrics.reconciles.labels("error")._value.get() == 0


def _hpa_status(h, name: str, *conditions: dict) -> None:
    from promop.autoscaler.keda.resources import HPAS

    hpa = wait_for(lambda: h.hpa(name), what=f"HPA {name}")
    hpa["status"] = {"currentReplicas": 0, "desiredReplicas": 0, "conditions": list(conditions)}
    h.client.update(HPAS, hpa, "default", subresource="status")


def _conditions(h, name: str) -> dict:
    """Every condition of one read of the ScaledObject, by type: assertions about two conditions look at
    the same status, not at two writes."""
    return {c.get("type"): c for c in ((h.so(name) or {}).get("status") or {}).get("conditions") or []}


def test_ready_reflects_a_broken_hpa_and_recovers(h):
    """promop on top of KEDA (issue 31): HPAActive mirrors the HPA exactly as KEDA 2.20.2, and Ready=False
    HPANotWorking passes the HPA's reason through while it is broken, back to KEDA's Ready when it heals."""
    h.client.create(DEPLOYMENTS, deployment("bh", 1), "default")
    h.prom.set("q_bh", "25")
    h.client.create(SCALEDOBJECTS, scaled_object("bh", "bh", h.prom.url, "q_bh"), "default")
    h.start()
    wait_for(lambda: h.condition("bh", "Ready").get("reason") == "ScaledObjectReady", what="Ready")
    _hpa_status(h, "keda-hpa-bh", {"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale"},
                {"type": "ScalingActive", "status": "False", "reason": "FailedGetExternalMetric",
                 "message": "the HPA was unable to compute the replica count: no metrics returned"})
    # Both from one read: whichever writer (reconcile or loop) set Ready set HPAActive from the same HPA.
    got = wait_for(lambda: (c := _conditions(h, "bh")).get("Ready", {}).get("status") == "False" and c,
                   what="not Ready")
    ready, hpa_active = got["Ready"], got.get("HPAActive", {})
    assert ready["reason"] == "HPANotWorking"
    assert "default/keda-hpa-bh" in ready["message"] and "FailedGetExternalMetric" in ready["message"]
    assert "no metrics returned" in ready["message"]
    assert (hpa_active["status"], hpa_active["reason"]) == ("False", "FailedGetExternalMetric")
    assert hpa_active["message"] == ("HPA is not actively scaling: the HPA was unable to compute the replica "
                                     "count: no metrics returned")
    _hpa_status(h, "keda-hpa-bh", {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"},
                {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound", "message": "ok"})
    healed = wait_for(lambda: (c := _conditions(h, "bh")).get("Ready", {}).get("reason") == "ScaledObjectReady" and c,
                      what="Ready again")
    assert healed["HPAActive"]["reason"] == "HPAActive"   # in the same status as that Ready


def test_scaling_disabled_at_zero_keeps_ready_true(h):
    """KEDA's #7669: an HPA at 0 replicas says ScalingActive=False ScalingDisabled; that is KEDA's own doing,
    not a broken HPA, so Ready stays True (Argo CD must not see Degraded) and HPAActive is True ScalingDisabled."""
    h.client.create(DEPLOYMENTS, deployment("zd", 0), "default")
    h.prom.set("q_zd", "0")
    h.client.create(SCALEDOBJECTS, scaled_object("zd", "zd", h.prom.url, "q_zd"), "default")
    h.start()
    wait_for(lambda: h.condition("zd", "Ready").get("reason") == "ScaledObjectReady", what="Ready")
    _hpa_status(h, "keda-hpa-zd", {"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled",
                                   "message": "scaling is disabled since the replica count of the target is zero"})
    got = wait_for(lambda: (c := _conditions(h, "zd")).get("HPAActive", {}).get("reason") == "ScalingDisabled" and c,
                   what="HPAActive")
    assert got["HPAActive"]["status"] == "True"
    assert got["Ready"]["status"] == "True"


def test_trigger_authentication_status_lists_its_scaled_objects(h):
    """§1.6: status.scaledobjects is the comma-joined names of the referencing ScaledObjects; a deleted one
    leaves the list, one in another namespace or without the reference never enters it."""
    from promop.autoscaler.keda.resources import TRIGGERAUTHENTICATIONS

    h.client.create(TRIGGERAUTHENTICATIONS, {"apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication",
                                             "metadata": {"name": "creds"},
                                             "spec": {"secretTargetRef": [{"parameter": "bearerToken",
                                                                           "name": "tok", "key": "t"}]}}, "default")
    for name in ("ua", "ub", "uc"):
        h.client.create(DEPLOYMENTS, deployment(name, 1), "default")
        so = scaled_object(name, name, h.prom.url, "q_" + name)
        if name != "uc":
            so["spec"]["triggers"][0]["authenticationRef"] = {"name": "creds"}
        h.client.create(SCALEDOBJECTS, so, "default")
    h.start()

    def listed() -> str | None:
        return (h.client.get(TRIGGERAUTHENTICATIONS, "creds", "default").get("status") or {}).get("scaledobjects")

    wait_for(lambda: listed() == "ua,ub", what="both users listed")
    h.client.delete(SCALEDOBJECTS, "ua", "default")
    wait_for(lambda: listed() == "ub", what="the deleted one removed")
