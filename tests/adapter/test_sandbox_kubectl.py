"""`promop adapter` as a process, registered in the sandbox as an aggregated API server:
kubectl get --raw through the aggregation proxy, kubectl top pod and kubectl top node.

The adapter reads the front proxy's CA from kube-system/extension-apiserver-authentication (the
sandbox publishes it with the first APIService), authenticates the proxied requests by that
client certificate, and asks the sandbox for SubjectAccessReviews."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from adapter.adapter_fixtures import (  # noqa: F401 - fixtures
    CONFIG, NODES, POD_OBJECTS, cluster_prom, parse_quantity, prometheus_factory,
)
from prom.prom_fixtures import free_port, wait_for

KUBECTL = shutil.which("kubectl")
pytestmark = [pytest.mark.prometheus, pytest.mark.kubectl,
              pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")]


def _kubectl(kubeconfig: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    # a cache of its own: kubectl keys discovery by host:port, which an earlier sandbox may have used
    cache = os.path.join(os.path.dirname(kubeconfig), "kcache")
    proc = subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", *args],
                          capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
    return proc


def _objects(port: int) -> list[dict]:
    out: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                       for n in ("shop", "backend", "promop")]
    for pod in POD_OBJECTS["pods"]:
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod["metadata"],
                    "spec": {"containers": [{"name": "app", "image": "x"}]}})
    for node in POD_OBJECTS["nodes"]:
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": node["metadata"]})
    out.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "promop-adapter", "namespace": "promop"},
                "spec": {"clusterIP": "127.0.0.1", "ports": [{"name": "https", "port": port}]}})
    for group, version in (("custom.metrics.k8s.io", "v1beta2"), ("custom.metrics.k8s.io", "v1beta1"),
                           ("external.metrics.k8s.io", "v1beta1"), ("metrics.k8s.io", "v1beta1")):
        out.append({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": f"{version}.{group}"},
                    "spec": {"group": group, "version": version, "groupPriorityMinimum": 100,
                             "versionPriority": 200 if version == "v1beta2" else 100, "insecureSkipTLSVerify": True,
                             "service": {"name": "promop-adapter", "namespace": "promop", "port": port}}})
    return out


@pytest.fixture(params=["registered-first", "adapter-first"])
def registered(request, cluster_prom, sandbox, sandbox_kubeconfig, tmp_path: Path):  # noqa: F811
    """Both orders: APIServices registered before the adapter starts, or after (the adapter then finds
    the front-proxy CA when the sandbox publishes it, through its periodic re-read)."""
    port = free_port()
    manifest = tmp_path / "objects.yaml"
    manifest.write_text(yaml.safe_dump_all(_objects(port)))
    adapter_first = request.param == "adapter-first"
    if not adapter_first:
        _kubectl(sandbox_kubeconfig, "apply", "-f", str(manifest))
    else:
        _kubectl(sandbox_kubeconfig, "create", "namespace", "shop")
        _kubectl(sandbox_kubeconfig, "create", "namespace", "backend")
    proc = None
    if adapter_first:
        proc = _start_adapter(cluster_prom, sandbox_kubeconfig, port, tmp_path)
        _kubectl(sandbox_kubeconfig, "apply", "-f", str(manifest))
    for node, (cpu, mem) in NODES.items():   # kubectl top node divides by allocatable
        _kubectl(sandbox_kubeconfig, "patch", "node", node, "--subresource=status", "--type=merge", "-p",
                 json.dumps({"status": {"allocatable": {"cpu": "4", "memory": "8Gi"},
                                        "capacity": {"cpu": "4", "memory": "8Gi"}}}))
    for pod in POD_OBJECTS["pods"]:   # what the kubelet would report; metrics.k8s.io serves Running pods
        _kubectl(sandbox_kubeconfig, "patch", "pod", pod["metadata"]["name"], "-n", pod["metadata"]["namespace"],
                 "--subresource=status", "--type=merge", "-p", json.dumps({"status": {"phase": "Running"}}))
    if proc is None:
        proc = _start_adapter(cluster_prom, sandbox_kubeconfig, port, tmp_path)

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"adapter exited: {(tmp_path / 'adapter.log').read_text()[-3000:]}")
        r = _kubectl(sandbox_kubeconfig, "get", "--raw", "/apis/custom.metrics.k8s.io/v1beta2", check=False)
        return r.returncode == 0 and "pods/http_requests_per_second" in r.stdout

    try:
        wait_for(ready, 60, "the adapter behind the sandbox's aggregation", interval=0.3)
        yield sandbox_kubeconfig, tmp_path
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _start_adapter(cluster_prom, kubeconfig: str, port: int, tmp_path: Path) -> subprocess.Popen:  # noqa: F811
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with open(tmp_path / "adapter.log", "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "promop", "adapter", f"--config={config}", f"--prometheus-url={cluster_prom.url}",
             f"--kubeconfig={kubeconfig}", f"--secure-port={port}", "--bind-address=127.0.0.1",
             f"--cert-dir={tmp_path / 'certs'}", "--metrics-relist-interval=1m",
             "--requestheader-refresh-interval=300ms"],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": os.getcwd()})


def test_get_raw_through_the_aggregation(registered) -> None:
    kc, _ = registered
    doc = json.loads(_kubectl(kc, "get", "--raw",
                              "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second"
                              "?labelSelector=app%3Dweb").stdout)
    assert [(i["describedObject"]["name"], round(parse_quantity(i["value"]), 2)) for i in doc["items"]] == [
        ("web-1", 1.75), ("web-2", 2.75)]
    v1 = json.loads(_kubectl(kc, "get", "--raw",
                             "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/web-2/http_requests_per_second"
                             ).stdout)
    assert v1["items"][0]["metricName"] == "http_requests_per_second"
    ext = json.loads(_kubectl(kc, "get", "--raw",
                              "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_depth").stdout)
    assert sorted(i["value"] for i in ext["items"]) == ["42", "7500m"]
    groups = json.loads(_kubectl(kc, "get", "--raw", "/apis").stdout)
    names = {g["name"] for g in groups["groups"]}
    assert {"custom.metrics.k8s.io", "external.metrics.k8s.io", "metrics.k8s.io", "apps"} <= names
    missing = _kubectl(kc, "get", "--raw", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/nope",
                       check=False)
    assert missing.returncode != 0 and "could not find the metric nope for pods" in missing.stderr
    # the aggregator's discovery check through the real adapter (front-proxy certificate, SubjectAccessReview)
    rows = {line.split()[0]: line.split()[1:3] for line in _kubectl(kc, "get", "apiservices").stdout.splitlines()[1:]}
    for name in ("v1beta2.custom.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io",
                 "v1beta1.metrics.k8s.io"):
        assert rows[name] == ["promop/promop-adapter", "True"], (name, rows.get(name))


def test_kubectl_top_pod_and_node(registered) -> None:
    kc, _ = registered
    out = _kubectl(kc, "top", "pod", "-n", "shop", "--no-headers").stdout
    rows = {line.split()[0]: line.split()[1:] for line in out.strip().splitlines()}
    assert sorted(rows) == ["web-1", "web-2"]
    assert abs(parse_quantity(rows["web-1"][0]) - 0.30) <= 0.003 and rows["web-1"][1] == "80Mi"   # app + sidecar
    assert abs(parse_quantity(rows["web-2"][0]) - 0.50) <= 0.002 and rows["web-2"][1] == "128Mi"
    containers = _kubectl(kc, "top", "pod", "web-1", "-n", "shop", "--containers", "--no-headers").stdout
    assert [line.split()[1] for line in containers.strip().splitlines()] == ["app", "sidecar"]

    nodes = _kubectl(kc, "top", "node", "--no-headers").stdout
    rows = {line.split()[0]: line.split()[1:] for line in nodes.strip().splitlines()}
    assert abs(parse_quantity(rows["node-a"][0]) - 1.5) <= 0.002 and rows["node-a"][2] == "2048Mi"
    assert rows["node-b"][2] == "1536Mi"
    assert "unknown" in " ".join(rows["node-c"])      # no CPU series for node-c: no metrics, as upstream


ADAPTER_GVS = {("custom.metrics.k8s.io", "v1beta2"), ("custom.metrics.k8s.io", "v1beta1"),
               ("external.metrics.k8s.io", "v1beta1"), ("metrics.k8s.io", "v1beta1")}


def test_aggregated_discovery_publishes_the_adapter_current(registered, sandbox) -> None:
    """What kubectl 1.26+ and the HPA read: the sandbox's aggregated /apis, built as kube-aggregator
    builds it from the adapter's own answer. An adapter whose /apis the aggregator cannot use shows
    Stale entries without resources here (and kubectl top says 'Metrics API not available')."""
    import requests

    kc, _ = registered
    for version in ("v2", "v2beta1"):
        accept = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
        r = requests.get(f"{sandbox.url}/apis", headers={"Accept": f"{accept},application/json"}, timeout=30)
        assert r.status_code == 200 and r.headers["Content-Type"] == accept
        doc = r.json()
        entries = {(g["metadata"]["name"], v["version"]): v for g in doc["items"] for v in g["versions"]}
        for gv in sorted(ADAPTER_GVS):
            assert entries[gv]["freshness"] == "Current", (gv, entries[gv])
            assert entries[gv]["resources"], gv
        cm = next(g for g in doc["items"] if g["metadata"]["name"] == "custom.metrics.k8s.io")
        assert [v["version"] for v in cm["versions"]] == ["v1beta2", "v1beta1"]   # versionPriority 200, 100
        pods = next(r for r in entries[("custom.metrics.k8s.io", "v1beta2")]["resources"] if r["resource"] == "pods")
        assert {s["subresource"] for s in pods["subresources"]} == {"http_requests_per_second"}
    listed = set(_kubectl(kc, "api-versions").stdout.split())
    assert {f"{g}/{v}" for g, v in ADAPTER_GVS} <= listed
    rows = [line.split() for line in _kubectl(kc, "api-resources", "--api-group=metrics.k8s.io",
                                               "--no-headers").stdout.splitlines()]
    assert sorted((r[0], r[-2], r[-1]) for r in rows) == [("nodes", "false", "NodeMetrics"),
                                                          ("pods", "true", "PodMetrics")]
