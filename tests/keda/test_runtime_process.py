"""`promop autoscaler` as a process on the sandbox: --keda=auto turns the ScaledObject controller on
when the keda.sh CRDs are installed (MemHpa's CRD absent: MemHpa off), serves the metrics endpoint,
and says so in its log; with neither the flag's `false` nor the CRDs, it says why it is off."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from promop.autoscaler.keda.resources import DEPLOYMENTS, SCALEDOBJECTS
from tests.keda.realplane import free_port
from tests.keda.runtime_harness import KedaHarness, deployment, scaled_object, wait_for

ROOT = Path(__file__).resolve().parents[2]


def _start(kubeconfig: str, log: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "promop", "autoscaler", "--kubeconfig", kubeconfig,
                             "--web.listen-address", "127.0.0.1:0", *extra], stdout=log.open("w"),
                            stderr=subprocess.STDOUT, cwd=str(ROOT))


def test_keda_only_cluster_runs_the_scaled_object_controller(sandbox, sandbox_kubeconfig, tmp_path):
    h = KedaHarness(sandbox)
    port = free_port()
    log = tmp_path / "autoscaler.log"
    proc = _start(sandbox_kubeconfig, log, "--keda-metrics-address", f"127.0.0.1:{port}", "--kube-api-qps", "200",
                  "--kube-api-burst", "300")
    try:
        h.client.create(DEPLOYMENTS, deployment("w", 0), "default")
        h.prom.set("q_w", "12")
        h.client.create(SCALEDOBJECTS, scaled_object("w", "w", h.prom.url, "q_w"), "default")
        wait_for(lambda: h.replicas("w") == 1, 30, "activated by the process")
        url = f"http://127.0.0.1:{port}/keda/v1/namespaces/default/scaledobjects/w/metrics/s0-prometheus"
        body = json.loads(urllib.request.urlopen(url, timeout=10).read())
        assert body["items"][0]["value"] == "12"
        text = log.read_text()
        assert "ScaledObject controller on" in text and "MemHpa controller off" in text
    finally:
        proc.terminate()
        proc.wait(20)
        h.close()


def test_without_the_crds_it_says_the_controller_is_off(sandbox, sandbox_kubeconfig, tmp_path):
    log = tmp_path / "autoscaler.log"
    proc = _start(sandbox_kubeconfig, log, "--keda-metrics-address", "")
    try:
        wait_for(lambda: "ScaledObject controller off: the keda.sh CRDs are not installed" in log.read_text(), 30,
                 "the log line")
    finally:
        proc.terminate()
        proc.wait(20)
