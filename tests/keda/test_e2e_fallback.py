"""One failing trigger does not stall the other's scale-down, on the REAL control plane (issue 31).

kube-controller-manager's HPA scales down only when every metric it reads is valid (KEDA #4533,
#5657, #6887: under KEDA a failing trigger's metric is an error until fallback.failureThreshold is
exceeded, so the HPA holds the replicas however low the healthy trigger goes). With `fallback` set,
promop serves the failing trigger's last good value meanwhile: here trigger A's Prometheus starts
answering 500, trigger B's value drops, and the real HPA scales DOWN to what A's last good value and
B's new one ask for.

The set-up is tests/keda/test_e2e_scale.py's (kcm's HPA through the aggregator to `promop adapter`
as a local process, forwarding to `promop autoscaler`): the control plane is realkube.ControlPlane.
Runs only with PROMOP_REAL_TIER=1.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

import realkube
from deadlines import scaled
from tests.keda.realplane import (ROOT, aggregated_plane, free_port, promop, register_external_metrics, stop_all,
                                  with_logs)
from tests.keda.runtime_harness import StandInPrometheus

pytestmark = [pytest.mark.real_apiserver,
              pytest.mark.skipif(os.environ.get("PROMOP_REAL_TIER") != "1",
                                 reason="the real-cluster tier runs only with PROMOP_REAL_TIER=1")]

NS = "keda-fallback"


def wait_for(check, timeout: float, what: str):
    return realkube.wait_for(check, scaled(timeout), what)


@pytest.fixture(scope="module")
def plane():
    with aggregated_plane("2s") as cp:
        yield cp


def _objects(prom_a: StandInPrometheus, prom_b: StandInPrometheus) -> str:
    trig = [{"type": "prometheus", "metadata": {"serverAddress": p.url, "query": q, "threshold": "10"}}
            for p, q in ((prom_a, "queue_a"), (prom_b, "queue_b"))]
    return yaml.safe_dump_all([
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "app", "image": "busybox:none"}]}}}},
        {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "web", "namespace": NS},
         "spec": {"scaleTargetRef": {"name": "web"}, "pollingInterval": 5, "minReplicaCount": 1,
                  "maxReplicaCount": 6,
                  # failures come from the loop (every 5 s) and every HPA sync (2 s): 100 keeps fallback
                  # off for the whole test, the last good value stands in for (100 + 1) x 5 s
                  "fallback": {"failureThreshold": 100, "replicas": 6},
                  "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {
                      "scaleDown": {"stabilizationWindowSeconds": 0}}}},
                  "triggers": trig}}])


def test_the_hpa_scales_down_on_the_healthy_trigger_while_the_other_fails(plane, tmp_path: Path):
    prom_a, prom_b = StandInPrometheus(), StandInPrometheus()
    procs = []
    try:
        for crd in sorted((ROOT / "crds").glob("keda.sh_*.yaml")):
            plane.kubectl("apply", "--server-side", "-f", str(crd))
        plane.kubectl("create", "namespace", NS)
        keda_port, adapter_port = free_port(), free_port()
        procs.append(promop("autoscaler", "--kubeconfig", plane.kubeconfig, "--web.listen-address", "127.0.0.1:0",
                            "--keda-metrics-address", f"127.0.0.1:{keda_port}", "--prometheus-url", prom_a.url,
                            log=tmp_path / "autoscaler.log"))
        config = tmp_path / "adapter.yaml"
        config.write_text("rules: []\n")
        procs.append(promop("adapter", "--config", str(config), "--prometheus-url", prom_a.url, "--kubeconfig",
                            plane.kubeconfig, "--secure-port", str(adapter_port), "--bind-address", "0.0.0.0",
                            "--cert-dir", str(tmp_path / "certs"), "--authorization-always-allow",
                            "--keda-metrics-url", f"http://127.0.0.1:{keda_port}", log=tmp_path / "adapter.log"))
        register_external_metrics(plane, NS, adapter_port, scaled(60))
        prom_a.set("queue_a", "20")        # A alone would want ceil(20 / 10) = 2
        prom_b.set("queue_b", "50")        # B wants 5: the HPA takes the max
        plane.kubectl("apply", "-f", "-", input=_objects(prom_a, prom_b))

        def replicas() -> int:
            return int(plane.kubectl("get", "deployment", "web", "-n", NS, "-o",
                                     "jsonpath={.spec.replicas}").stdout or 0)

        def status() -> dict:
            out = plane.kubectl("get", "scaledobject", "web", "-n", NS, "-o", "json", check=False)
            return (json.loads(out.stdout).get("status") or {}) if out.returncode == 0 else {}

        wait_for(lambda: replicas() == 5, 120, "1 -> 5 by kube-controller-manager's HPA")
        prom_a.set("queue_a", 500)         # A's Prometheus fails from now on
        wait_for(lambda: (status().get("health") or {}).get("s0-prometheus", {}).get("status") == "Failing", 60,
                 "A's failure counted in status.health")
        started = time.monotonic()
        prom_b.set("queue_b", "10")        # B now wants 1; A's last good value 20 still wants 2
        wait_for(lambda: replicas() == 2, 90, "5 -> 2 by the HPA while A fails (KEDA: stuck at 5)")
        took = time.monotonic() - started
        health = status()["health"]["s0-prometheus"]
        assert health["status"] == "Failing" and 0 < health["numberOfFailures"] <= 100
        hpa = json.loads(plane.kubectl("get", "hpa", "keda-hpa-web", "-n", NS, "-o", "json").stdout)
        active = next(c for c in hpa["status"]["conditions"] if c["type"] == "ScalingActive")
        assert active["status"] == "True", active
        log = (tmp_path / "autoscaler.log").read_text()
        assert "serving its last good value" in log
        print(f"scale-down 5 -> 2 while trigger A fails: {took:.1f} s after B dropped")
    except (AssertionError, realkube.KitError) as exc:
        raise with_logs(exc, tmp_path) from None
    finally:
        stop_all(procs)
        prom_a.close()
        prom_b.close()
