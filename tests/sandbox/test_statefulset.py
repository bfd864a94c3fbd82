"""apps/v1 StatefulSets: status subresource, generation, immutable fields, fake kubelet."""

from __future__ import annotations

import json
import time

import pytest
from deadlines import scaled
from kubernetes import client
from kubernetes.client import ApiException

from promop.sandbox import Sandbox


def statefulset(name="prom", replicas=1, image="prom:v1", service="prom") -> dict:
    return {"metadata": {"name": name}, "spec": {
        "replicas": replicas, "serviceName": service,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "prometheus", "image": image}]}}}}


def test_generation_and_status_subresource(apps):
    made = apps.create_namespaced_stateful_set("default", statefulset())
    assert made.metadata.generation == 1
    scaled = apps.patch_namespaced_stateful_set("prom", "default", {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2
    with_status = apps.patch_namespaced_stateful_set_status(
        "prom", "default", {"status": {"replicas": 3, "readyReplicas": 2}})
    assert with_status.status.ready_replicas == 2
    assert with_status.metadata.generation == 2
    ignored = apps.patch_namespaced_stateful_set(
        "prom", "default", {"status": {"readyReplicas": 0}})
    assert ignored.status.ready_replicas == 2
    assert ignored.metadata.resource_version == with_status.metadata.resource_version


def test_changing_an_immutable_field_is_invalid(apps):
    apps.create_namespaced_stateful_set("default", statefulset())
    with pytest.raises(ApiException) as excinfo:
        apps.patch_namespaced_stateful_set("prom", "default",
                                           {"spec": {"serviceName": "other"}})
    assert excinfo.value.status == 422
    status = json.loads(excinfo.value.body)
    assert status["reason"] == "Invalid" and "serviceName" in status["message"]
    with pytest.raises(ApiException) as excinfo:
        apps.replace_namespaced_stateful_set("prom", "default",
                                             statefulset(service="prom", replicas=1) | {
                                                 "spec": dict(statefulset()["spec"],
                                                              selector={"matchLabels": {
                                                                  "app": "x"}})})
    assert excinfo.value.status == 422
    # mutable fields update fine
    updated = apps.replace_namespaced_stateful_set("prom", "default",
                                                   statefulset(replicas=2, image="prom:v2"))
    assert updated.spec.template.spec.containers[0].image == "prom:v2"


def _eventually(check, timeout: float = 10.0):
    deadline = time.monotonic() + scaled(timeout)  # times PROMOP_TEST_TIMEOUT_SCALE (tests/deadlines.py)
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_simulated_statefulsets_report_ready_asynchronously():
    """The controller writes status through /status after the create: the create response has
    none, and its resourceVersion is stale once the status is written (as on a cluster)."""
    with Sandbox(simulate_statefulsets=True) as sb:
        apps = client.AppsV1Api(sb.api_client())
        made = apps.create_namespaced_stateful_set("default", statefulset(replicas=2))
        assert made.status is None or not made.status.ready_replicas
        _eventually(lambda: getattr(apps.read_namespaced_stateful_set(
            "prom", "default").status, "ready_replicas", None) == 2)
        current = apps.read_namespaced_stateful_set("prom", "default")
        assert current.metadata.resource_version != made.metadata.resource_version
        assert current.status.observed_generation == 1
        assert "kube-controller-manager" in [m.manager for m in current.metadata.managed_fields]
        stale = dict(statefulset(replicas=3))
        stale["metadata"]["resourceVersion"] = made.metadata.resource_version
        with pytest.raises(ApiException) as excinfo:
            apps.replace_namespaced_stateful_set("prom", "default", stale)
        assert excinfo.value.status == 409
        apps.patch_namespaced_stateful_set("prom", "default", {"spec": {"replicas": 4}})
        _eventually(lambda: apps.read_namespaced_stateful_set(
            "prom", "default").status.ready_replicas == 4)
        scaled = apps.read_namespaced_stateful_set("prom", "default")
        assert scaled.status.updated_replicas == 4
        assert scaled.status.observed_generation == scaled.metadata.generation == 2


def test_without_simulation_status_stays_empty(apps):
    made = apps.create_namespaced_stateful_set("default", statefulset(replicas=2))
    assert made.status is None or made.status.ready_replicas is None


def test_statefulset_scale_subresource(apps):
    apps.create_namespaced_stateful_set("default", statefulset(replicas=1))
    apps.patch_namespaced_stateful_set_scale("prom", "default", {"spec": {"replicas": 3}})
    assert apps.read_namespaced_stateful_set_scale("prom", "default").spec.replicas == 3
    assert apps.read_namespaced_stateful_set("prom", "default").spec.replicas == 3
