"""The MemHpa controller against the sandbox with a real Prometheus scraping a simulated memory exporter."""

from __future__ import annotations

import pytest

from tests.autoscaler.harness import DEPLOYMENTS, MI, deployment, memhpa, wait_for

from promop.autoscaler.crd import MEMHPAS

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def test_scale_up_under_load_then_cooldown(env):
    env.client.create(DEPLOYMENTS, deployment("web", 1), "default")
    env.usage_per_pod = 90 * MI  # 90% of the 100Mi limit, target 50% -> ceil(1.8 x 1) = 2
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    env.start(env.prometheus.url)
    wait_for(lambda: env.replicas("web") == 2, what="scale to 2")
    ev = wait_for(lambda: env.events("SuccessfulRescale"), what="the rescale event")[0]
    assert ev["message"] == "New size: 2; reason: memory resource utilization (percentage of limit) above target"
    # One GET per poll, and a wait for both fields: a pass right after the scale may still read the
    # Deployment at 1 replica from its informer cache and write desiredReplicas 1 (with the
    # lastScaleTime it remembers) until the next pass sees the scale.
    wait_for(lambda: (s := env.memhpa("web").get("status") or {}).get("lastScaleTime")
             and s.get("desiredReplicas", 0) >= 2, what="status with lastScaleTime and desiredReplicas >= 2")
    # Still 90% per pod: the cool-down (3 min since the last scale) holds the next scale-up.
    cond = wait_for(lambda: (c := env.condition("web", "AbleToScale")) and c["reason"] == "BackoffBoth" and c,
                    what="BackoffBoth")
    assert cond["status"] == "False"
    assert env.replicas("web") == 2
    env.offset += 181  # past the upscale window, within the downscale one
    wait_for(lambda: env.replicas("web") == 4, what="scale to 4 after the cool-down")
    # the sandbox's kubelet creates the pods on its own thread, after the scale
    wait_for(lambda: len(env.pods()) == 4, what="4 pods")
    assert env.memhpa("web")["status"]["currentMemoryUtilizationPercentage"] == 90


def test_stabilization_before_scale_down_with_behavior(env):
    env.client.create(DEPLOYMENTS, deployment("api", 4), "default")
    env.usage_per_pod = 5 * MI  # 5% of the limit: wants 1 replica
    env.client.create(MEMHPAS, memhpa("api", "api", behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}),
                      "default")
    env.start(env.prometheus.url)
    cond = wait_for(lambda: (c := env.condition("api", "AbleToScale")) and c["reason"] == "ScaleDownStabilized"
                    and c, what="ScaleDownStabilized")
    assert cond["status"] == "True"
    assert env.replicas("api") == 4
    env.offset += 61
    wait_for(lambda: env.replicas("api") == 1, what="scale down to 1 after the window")
    ev = wait_for(lambda: env.events("SuccessfulRescale"), what="event")[0]
    assert ev["message"] == "New size: 1; reason: All metrics below target"


def test_prometheus_down_no_scaling_clear_condition(env):
    env.client.create(DEPLOYMENTS, deployment("web", 2), "default")
    env.usage_per_pod = 95 * MI
    env.prometheus.stop()
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    env.start(env.prometheus.url)
    cond = wait_for(lambda: (c := env.condition("web", "ScalingActive")) and c["status"] == "False" and c,
                    what="ScalingActive False")
    assert cond["reason"] == "FailedGetResourceMetric"
    assert "Prometheus query failed" in cond["message"]
    assert wait_for(lambda: env.events("FailedComputeMetricsReplicas"), what="warning event")
    assert env.replicas("web") == 2
    assert env.memhpa("web")["spec"]["maxReplicas"] == 8  # the user's object is intact


def test_target_deleted_then_memhpa_deleted(env):
    env.client.create(DEPLOYMENTS, deployment("web", 1), "default")
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    app = env.start(env.prometheus.url)
    wait_for(lambda: env.condition("web", "ScalingActive"), what="a first pass")
    env.client.delete(DEPLOYMENTS, "web", "default")
    cond = wait_for(lambda: (c := env.condition("web", "AbleToScale")) and c["reason"] == "FailedGetScale" and c,
                    what="FailedGetScale")
    assert cond["status"] == "False" and "not found" in cond["message"]
    assert env.events("FailedGetScale")
    env.client.delete(MEMHPAS, "web", "default")
    wait_for(lambda: "default/web" not in app.controller.reconciler.memory, what="memory forgotten")


def test_spec_corrections_reported_not_written_back(env):
    env.client.create(DEPLOYMENTS, deployment("web", 1), "default")
    env.client.create(MEMHPAS, memhpa("web", "web", minReplicas=0, targetUtilizationPercentage=150), "default")
    env.start(env.prometheus.url)
    cond = wait_for(lambda: env.condition("web", "ValidSpec"), what="ValidSpec")
    assert cond["status"] == "False" and cond["reason"] == "SpecCorrected"
    assert "using 80" in cond["message"]
    events = wait_for(lambda: len(env.events("ValidationPolicy")) >= 2 and env.events("ValidationPolicy"),
                      what="ValidationPolicy events")
    assert len(events) == 2
    spec = env.memhpa("web")["spec"]
    assert spec["minReplicas"] == 0 and spec["targetUtilizationPercentage"] == 150


def test_zero_replicas_is_left_alone(env):
    env.client.create(DEPLOYMENTS, deployment("web", 0), "default")
    env.usage_per_pod = 95 * MI
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    env.start(env.prometheus.url)
    cond = wait_for(lambda: env.condition("web", "ScalingActive"), what="a pass")
    assert cond["reason"] == "ScalingDisabled"
    assert env.replicas("web") == 0


def test_leader_election_one_writer_and_failover(env):
    env.client.create(DEPLOYMENTS, deployment("web", 1), "default")
    env.usage_per_pod = 90 * MI
    # a renew deadline a loaded machine's stall does not exceed (a lost lease would let b lead too
    # early); the failover stays quick, as a stopped leader releases its lease
    timings = dict(leader_elect=True, lease_duration=4.0, renew_deadline=3.0, retry_period=0.2)
    a = env.start(env.prometheus.url, identity="a", **timings)
    wait_for(lambda: a.leading.is_set(), what="a leads")
    b = env.start(env.prometheus.url, identity="b", **timings)
    wait_for(lambda: b.controller is not None and b.controller.synced(), what="b synced")
    assert not b.leading.is_set()
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    wait_for(lambda: env.replicas("web") == 2, what="scaled by the leader")
    assert b.controller.metrics.syncs.labels("ok")._value.get() == 0
    env.stop_app(a)
    wait_for(lambda: b.leading.is_set(), what="b takes over")
    env.offset += 181
    wait_for(lambda: env.replicas("web") == 4, what="b scales")


def test_any_resource_with_a_scale_subresource(env):
    from promop.kube.resources import CRDS, PODS, Resource

    env.client.create(CRDS, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}, "scale": {
                                   "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                                   "labelSelectorPath": ".status.selector"}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]}})
    widgets = Resource("example.com", "v1", "widgets", kind="Widget")
    wait_for(lambda: _served(env, widgets), what="the Widget CRD served")
    w = env.client.create(widgets, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                                    "spec": {"replicas": 1}}, "default")
    w["status"] = {"replicas": 1, "selector": "app=widget"}
    env.client.update(widgets, w, "default", subresource="status")
    pod = env.client.create(PODS, {"metadata": {"name": "widget-0", "labels": {"app": "widget"}},
                                    "spec": {"containers": [{"name": "app", "image": "x",
                                                             "resources": {"limits": {"memory": "100Mi"}}}]}},
                            "default")
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    env.client.update(PODS, pod, "default", subresource="status")
    env.usage_per_pod = 90 * MI
    body = memhpa("w", "w")
    body["spec"]["scaleTargetRef"] = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"}
    env.client.create(MEMHPAS, body, "default")
    env.start(env.prometheus.url)
    wait_for(lambda: env.client.get(widgets, "w", "default")["spec"]["replicas"] == 2, what="the Widget scaled")
    ev = wait_for(lambda: env.events("SuccessfulRescale"), what="event")[0]
    assert ev["message"].startswith("New size: 2;")


def _served(env, res) -> bool:
    from promop.kube.errors import ApiError

    try:
        env.client.list(res, "default")
        return True
    except ApiError:
        return False


def test_last_scale_time_is_recorded_even_when_its_status_write_conflicted(env, sandbox):
    """The cool-down must never be skipped: a scale whose status write failed is still recorded later."""
    env.client.create(DEPLOYMENTS, deployment("web", 1), "default")
    env.usage_per_pod = 90 * MI
    sandbox.faults.fail_next(1, 409, verb="update", resource="memhpas")
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    env.start(env.prometheus.url)
    wait_for(lambda: env.replicas("web") == 2, what="scale to 2")
    wait_for(lambda: (env.memhpa("web").get("status") or {}).get("lastScaleTime"), what="lastScaleTime recorded")
    cond = wait_for(lambda: (c := env.condition("web", "AbleToScale")) and c["reason"] == "BackoffBoth" and c,
                    what="the cool-down holding")
    assert env.replicas("web") == 2 and len(env.events("SuccessfulRescale")) == 1
    assert cond["status"] == "False"
