"""The sandbox's scale subresource for workloads and its kubelet simulation, through the real client."""

from __future__ import annotations

import time

import pytest
from deadlines import scaled

from promop.kube.client import KubeClient
from promop.kube.resources import Resource
from promop.sandbox.kubelet import Kubelet

DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")
STATEFULSETS = Resource("apps", "v1", "statefulsets", kind="StatefulSet")
REPLICASETS = Resource("apps", "v1", "replicasets", kind="ReplicaSet")
PODS = Resource("", "v1", "pods", kind="Pod")


def workload(kind: str, name: str, replicas: int) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "x",
                                                           "resources": {"limits": {"memory": "100Mi"}}}]}}}}


def wait_for(check, timeout=10.0, what="condition"):
    deadline = time.monotonic() + scaled(timeout)  # times PROMOP_TEST_TIMEOUT_SCALE (tests/deadlines.py)
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def client(sandbox_kubeconfig):
    c = KubeClient.from_kubeconfig(sandbox_kubeconfig)
    yield c
    c.close()


def pod_names(client, selector):
    return sorted(p["metadata"]["name"] for p in client.list(PODS, "default", label_selector=selector)["items"])


@pytest.mark.parametrize("res,kind", [(DEPLOYMENTS, "Deployment"), (STATEFULSETS, "StatefulSet"),
                                      (REPLICASETS, "ReplicaSet")])
def test_scale_subresource_and_pods_follow_replicas(sandbox, client, res, kind):
    with Kubelet(sandbox):
        client.create(res, workload(kind, "web", 2), "default")
        wait_for(lambda: len(pod_names(client, "app=web")) == 2, what="2 pods")
        scale = client.get(res, "web", "default", subresource="scale")
        assert scale["kind"] == "Scale"
        assert scale["spec"]["replicas"] == 2
        assert scale["status"]["selector"] == "app=web"
        wait_for(lambda: client.get(res, "web", "default", subresource="scale")["status"]["replicas"] == 2,
                 what="status replicas 2")
        scale["spec"]["replicas"] = 5
        client.update(res, scale, "default", subresource="scale")
        wait_for(lambda: len(pod_names(client, "app=web")) == 5, what="5 pods")
        pod = client.list(PODS, "default", label_selector="app=web")["items"][0]
        assert pod["status"]["phase"] == "Running"
        assert any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])
        assert pod["spec"]["containers"][0]["resources"]["limits"]["memory"] == "100Mi"
        scale = client.get(res, "web", "default", subresource="scale")
        scale["spec"]["replicas"] = 1
        client.update(res, scale, "default", subresource="scale")
        wait_for(lambda: len(pod_names(client, "app=web")) == 1, what="1 pod")
        if kind == "StatefulSet":
            assert pod_names(client, "app=web") == ["web-0"]
        wait_for(lambda: client.get(res, "web", "default")["status"]["readyReplicas"] == 1, what="status 1")
