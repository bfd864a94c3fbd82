"""`promop hpa explain` (the command) reading the metrics APIs as the HPA controller does: the sandbox's
aggregation in front of a real `promop adapter` process, in front of a real Prometheus holding backfilled data.

The expected decision is computed here from the data the fixture wrote (adapter_fixtures.PODS) and upstream's
formulas (reference/autoscaling.md), never from the adapter's or the command's output."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from adapter.adapter_fixtures import (  # noqa: F401 - fixtures
    CONFIG, MI, PODS, cluster_prom, prometheus_factory,
)
from prom.prom_fixtures import free_port, wait_for

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

NS = "shop"
# memory requests per container (bytes); usage comes from PODS
REQUESTS = {("web-1", "app"): 100 * MI, ("web-1", "sidecar"): 28 * MI, ("web-2", "app"): 128 * MI}
MEMORY_TARGET = 50          # averageUtilization, percent of requests
RPS_TARGET = 1.0            # averageValue of http_requests_per_second per pod


def _objects(port: int) -> list[tuple[str, str, str, dict]]:
    """(group/version, plural, namespace, body) to create."""
    out: list[tuple[str, str, str, dict]] = [
        ("v1", "namespaces", "", {"metadata": {"name": n}}) for n in (NS, "promop")]
    for pod in ("web-1", "web-2"):
        containers = [{"name": c, "image": "x", "resources": {"requests": {"memory": str(req)}}}
                      for (p, c), req in REQUESTS.items() if p == pod]
        out.append(("v1", "pods", NS, {"metadata": {"name": pod, "labels": {"app": "web"}},
                                       "spec": {"containers": containers}}))
    out.append(("apps/v1", "deployments", NS, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "x"}]}}}}))
    out.append(("autoscaling/v2", "horizontalpodautoscalers", NS, {
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 10, "metrics": [
                     {"type": "Resource", "resource": {"name": "memory", "target": {
                         "type": "Utilization", "averageUtilization": MEMORY_TARGET}}},
                     {"type": "Pods", "pods": {"metric": {"name": "http_requests_per_second"},
                                               "target": {"type": "AverageValue", "averageValue": "1"}}}]}}))
    out.append(("v1", "services", "promop", {"metadata": {"name": "promop-adapter"},
                                             "spec": {"clusterIP": "127.0.0.1", "ports": [{"port": port}]}}))
    for group, version in (("custom.metrics.k8s.io", "v1beta2"), ("custom.metrics.k8s.io", "v1beta1"),
                           ("metrics.k8s.io", "v1beta1")):
        out.append(("apiregistration.k8s.io/v1", "apiservices", "", {
            "metadata": {"name": f"{version}.{group}"},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": 100,
                     "versionPriority": 200 if version == "v1beta2" else 100, "insecureSkipTLSVerify": True,
                     "service": {"name": "promop-adapter", "namespace": "promop", "port": port}}}))
    return out


def _create_all(kubeconfig: str, port: int) -> None:
    from promop.kube.client import KubeClient
    from promop.kube.resources import Resource

    client = KubeClient.from_kubeconfig(kubeconfig)
    try:
        for gv, plural, ns, body in _objects(port):
            group, _, version = gv.rpartition("/")
            res = Resource(group, version, plural, namespaced=bool(ns))
            client.create(res, body, ns or None)
            if plural == "pods":   # what the kubelet would report: running and ready for an hour
                client.patch(res, body["metadata"]["name"], {"status": {
                    "phase": "Running", "startTime": "2020-01-01T00:00:00Z",
                    "conditions": [{"type": "Ready", "status": "True",
                                    "lastTransitionTime": "2020-01-01T00:00:00Z"}]}}, ns, subresource="status")
            if plural == "deployments":
                client.patch(res, "web", {"status": {"replicas": 2, "readyReplicas": 2}}, ns, subresource="status")
    finally:
        client.close()


def _expected() -> dict:
    """Upstream's formulas on the fixture's data: utilization is int(sum usage * 100 / sum requests), the
    proposal ceil(ratio * ready pods); for a Pods metric, ceil(average / target * ready pods); the largest
    proposal wins, then the legacy scale-up limit applies."""
    usage = sum(mem for ns, pod, _c, _v, _cpu, mem in PODS if ns == NS and pod in ("web-1", "web-2"))
    utilization = int(usage * 100 / sum(REQUESTS.values()))
    memory_replicas = math.ceil(utilization / MEMORY_TARGET * 2)
    rps: dict[str, float] = {}
    for ns, pod, _c, verbs, _cpu, _mem in PODS:
        if ns == NS and pod in ("web-1", "web-2"):
            rps[pod] = rps.get(pod, 0.0) + sum(verbs.values())
    average = sum(rps.values()) / len(rps)
    pods_replicas = math.ceil(average / RPS_TARGET * 2)
    proposal = max(memory_replicas, pods_replicas)
    # without spec.behavior, a scale-up is limited to max(2 * current, 4) (upstream's legacy normalization)
    return {"utilization": utilization, "memory": memory_replicas, "memory_average": usage // 2, "rps": average,
            "pods": pods_replicas, "proposal": proposal, "desired": min(proposal, max(2 * 2, 4))}


@pytest.fixture
def adapter_behind_sandbox(cluster_prom, sandbox, sandbox_kubeconfig, tmp_path: Path):  # noqa: F811
    port = free_port()
    _create_all(sandbox_kubeconfig, port)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    log = open(tmp_path / "adapter.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "promop", "adapter", f"--config={config}", f"--prometheus-url={cluster_prom.url}",
         f"--kubeconfig={sandbox_kubeconfig}", f"--secure-port={port}", "--bind-address=127.0.0.1",
         f"--cert-dir={tmp_path / 'certs'}", "--metrics-relist-interval=1m"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": os.getcwd()})
    from promop.adapter.lister import get_json
    from promop.kube.client import KubeClient

    client = KubeClient.from_kubeconfig(sandbox_kubeconfig)

    seen = {"last": ""}

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"adapter exited: {(tmp_path / 'adapter.log').read_text()[-3000:]}")
        try:
            body = get_json(client, "/apis/custom.metrics.k8s.io/v1beta2")
        except Exception as exc:  # noqa: BLE001 - not up yet
            seen["last"] = str(exc)
            return False
        return any(r.get("name") == "pods/http_requests_per_second" for r in body.get("resources") or [])

    try:
        try:
            wait_for(ready, 60, "the adapter behind the sandbox's aggregation", interval=0.3)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last answer: {seen['last']}; adapter log: "
                                 f"{(tmp_path / 'adapter.log').read_text()[-3000:]}") from None
        yield sandbox_kubeconfig
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _explain(kubeconfig: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promop", "hpa", "explain", f"{NS}/web", "--kubeconfig", kubeconfig,
                           *extra], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})


def test_hpa_explain_reads_the_metrics_apis_served_by_the_adapter(adapter_behind_sandbox) -> None:
    kc = adapter_behind_sandbox
    want = _expected()
    assert 2 < want["desired"] < want["proposal"]   # the data: a scale-up, the Pods metric's, and limited

    proc = _explain(kc, "-o", "yaml")
    assert proc.returncode == 0, proc.stderr
    out = yaml.safe_load(proc.stdout)
    assert "error" not in out, out
    assert out["currentReplicas"] == 2
    assert out["metricReplicas"] == want["proposal"], out
    assert out["desiredReplicas"] == want["desired"], out
    memory, rps = out["metrics"][0], out["metrics"][1]
    assert not memory.get("error") and not rps.get("error"), out["metrics"]
    assert memory["currentUtilization"] == want["utilization"], memory
    assert int(memory["currentAverageValue"]) == want["memory_average"], memory
    assert memory["replicaProposal"] == want["memory"], memory
    assert rps["replicaProposal"] == want["pods"], rps
    assert abs(_milli(rps["currentAverageValue"]) - want["rps"]) <= 0.01, rps
    assert out["metricName"] == "pods metric http_requests_per_second"

    text = _explain(kc)
    assert text.returncode == 0, text.stderr
    assert f"decision: 2 -> {want['desired']} replicas" in text.stdout, text.stdout
    assert f"{want['utilization']}% of request" in text.stdout, text.stdout
    assert f"largest proposal: {want['proposal']} (pods metric http_requests_per_second)" in text.stdout


def _milli(value) -> float:
    s = str(value)
    return float(s[:-1]) / 1000 if s.endswith("m") else float(s)
