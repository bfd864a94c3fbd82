"""KEDA ScaledObjects end to end on the REAL control plane (the kit's start.sh, no node):
kube-controller-manager's HPA, the aggregator, `promop adapter` and `promop autoscaler` as local
processes, a stand-in Prometheus whose answer the test changes. A Deployment goes 0 -> 1 -> N -> 0
(replica counts; without a node its pods stay Pending, which the HPA's external AverageValue
metric does not need). The autoscaler runs under its bundle ServiceAccount's token: no request of
it may be refused (403).

How the apiserver reaches a local process: the APIService's Service has no selector and a manual
Endpoints on a non-loopback address of this machine (the apiserver refuses loopback endpoints),
and the apiserver runs with --enable-aggregator-routing=true (so it dials that endpoint, not a
ClusterIP no kube-proxy routes).

Runs only with PROMOP_REAL_TIER=1.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from deadlines import scaled
from tests.keda.realplane import (ROOT, aggregated_plane, free_port, promop, register_external_metrics, stop_all,
                                  with_logs)
from tests.keda.runtime_harness import StandInPrometheus

pytestmark = [pytest.mark.real_apiserver,
              pytest.mark.skipif(os.environ.get("PROMOP_REAL_TIER") != "1",
                                 reason="the real-cluster tier runs only with PROMOP_REAL_TIER=1")]

NS = "keda-e2e"


def wait_for(check, timeout: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout * float(os.environ.get("PROMOP_TEST_TIMEOUT_SCALE", "3"))
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def bundle_rbac(component: str) -> str:
    """The bundle's Namespace, ServiceAccount, ClusterRole and ClusterRoleBinding (not the Deployment)."""
    from promop.operator.bundle import as_stream, render_bundle

    docs = [d for d in yaml.safe_load_all(as_stream(render_bundle(namespace=NS, component=component))) if d]
    keep = [d for d in docs if d["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")]
    return yaml.safe_dump_all(keep)


@pytest.fixture(scope="module")
def plane():
    with aggregated_plane("2s") as cp:
        yield cp


def test_deployment_scales_0_1_n_0_under_the_bundle_rbac(plane, tmp_path: Path):
    prom = StandInPrometheus()
    procs = []
    try:
        for crd in sorted((ROOT / "crds").glob("keda.sh_*.yaml")) + [ROOT / "crds/autoscaling.promop.dev_memhpas.yaml"]:
            plane.kubectl("apply", "--server-side", "-f", str(crd))
        plane.kubectl("create", "namespace", NS)
        plane.kubectl("apply", "-f", "-", input=bundle_rbac("autoscaler"))
        sa_config = plane.token_kubeconfig(NS, "promop-autoscaler", tmp_path / "sa.kubeconfig")
        keda_port, adapter_port = free_port(), free_port()
        auto_log, adapter_log = tmp_path / "autoscaler.log", tmp_path / "adapter.log"
        procs.append(promop("autoscaler", "--kubeconfig", sa_config, "--web.listen-address", "127.0.0.1:0",
                            "--keda-metrics-address", f"127.0.0.1:{keda_port}", "--prometheus-url", prom.url,
                            log=auto_log))
        config = tmp_path / "adapter.yaml"
        config.write_text("rules: []\n")
        procs.append(promop("adapter", "--config", str(config), "--prometheus-url", prom.url, "--kubeconfig",
                            plane.kubeconfig, "--secure-port", str(adapter_port), "--bind-address", "0.0.0.0",
                            "--cert-dir", str(tmp_path / "certs"), "--authorization-always-allow",
                            "--keda-metrics-url", f"http://127.0.0.1:{keda_port}", log=adapter_log))
        register_external_metrics(plane, NS, adapter_port, scaled(60))
        _deployment_and_scaled_object(plane, prom)

        def replicas() -> int:
            out = plane.kubectl("get", "deployment", "web", "-n", NS, "-o", "jsonpath={.spec.replicas}")
            return int(out.stdout or 0)

        def so_status() -> dict:
            out = plane.kubectl("get", "scaledobject", "web", "-n", NS, "-o", "json", check=False)
            return (json.loads(out.stdout).get("status") or {}) if out.returncode == 0 else {}

        wait_for(lambda: so_status().get("hpaName") == "keda-hpa-web", 20, "the ScaledObject reconciled")
        wait_for(lambda: plane.kubectl("get", "hpa", "keda-hpa-web", "-n", NS, check=False).returncode == 0, 30,
                 "the HPA")
        assert replicas() == 0
        prom.set("web_queue", "5")         # active (> activationThreshold 0): KEDA's 0 -> 1
        wait_for(lambda: replicas() == 1, 60, "0 -> 1")
        prom.set("web_queue", "35")        # the HPA: ceil(35 / 10) = 4
        wait_for(lambda: replicas() == 4, 120, "1 -> 4 by kube-controller-manager's HPA "
                 f"(adapter log: {adapter_log.read_text()[-2000:]})")
        hpa = json.loads(plane.kubectl("get", "hpa", "keda-hpa-web", "-n", NS, "-o", "json").stdout)
        current = hpa["status"]["currentMetrics"][0]["external"]
        assert current["metric"]["name"] == "s0-prometheus"
        prom.set("web_queue", "0")         # inactive: after cooldownPeriod KEDA scales to zero
        wait_for(lambda: replicas() == 0, 90, "N -> 0")
        _scaled_job(plane, prom)           # ScaledJob: 2 Jobs for a queue of 2 (threshold 1)
        wait_for(lambda: len(json.loads(plane.kubectl("get", "jobs", "-n", NS, "-l", "scaledjob.keda.sh/name=work",
                                                       "-o", "json").stdout)["items"]) == 2, 60, "two Jobs")
        out = plane.kubectl("get", "so", "-n", NS)
        assert "web" in out.stdout and "apps/v1.Deployment" in out.stdout
        log = auto_log.read_text()
        assert "403" not in log and "Forbidden" not in log and "forbidden" not in log, log[-3000:]
    except AssertionError as exc:
        raise with_logs(exc, tmp_path) from None
    finally:
        stop_all(procs)
        prom.close()


def _deployment_and_scaled_object(plane, prom) -> None:
    prom.set("web_queue", "0")
    docs = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
         "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "app", "image": "busybox:none"}]}}}},
        {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "web", "namespace": NS},
         "spec": {"scaleTargetRef": {"name": "web"}, "pollingInterval": 1, "cooldownPeriod": 3,
                  "maxReplicaCount": 6,
                  "triggers": [{"type": "prometheus", "metadata": {
                      "serverAddress": prom.url, "query": "web_queue", "threshold": "10"}}]}},
    ]
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def _scaled_job(plane, prom) -> None:
    prom.set("work_queue", "2")
    sj = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "metadata": {"name": "work", "namespace": NS},
          "spec": {"pollingInterval": 1, "maxReplicaCount": 5,
                   "jobTargetRef": {"template": {"spec": {"restartPolicy": "Never",
                                                          "containers": [{"name": "w", "image": "busybox:none"}]}}},
                   "triggers": [{"type": "prometheus", "metadata": {
                       "serverAddress": prom.url, "query": "work_queue", "threshold": "1"}}]}}
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(sj))
