"""`promop autoscaler` as a process: flags, /healthz, /readyz, /metrics, SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest
import requests

from deadlines import scaled
from promop.autoscaler.crd import MEMHPAS
from tests.autoscaler.harness import DEPLOYMENTS, MI, deployment, memhpa, wait_for

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def test_process_serves_health_and_metrics_and_stops_cleanly(env):
    env.client.create(DEPLOYMENTS, deployment("web", 1), "default")
    env.usage_per_pod = 90 * MI
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    # port 0 and the address it logs: a port picked free beforehand may be taken by then (xdist)
    proc = subprocess.Popen([sys.executable, "-m", "promop", "autoscaler", "--kubeconfig", env.kubeconfig,
                             "--prometheus-url", env.prometheus.url, "--sync-period", "0.5",
                             "--web.listen-address", "127.0.0.1:0", "--log-format", "json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        serving = wait_for(lambda: next((json.loads(line) for line in list(lines) if '"serving /metrics' in line), None),
                           what="the logged web address")
        base = f"http://{serving['address']}"

        def get(path):
            try:
                return requests.get(base + path, timeout=2)
            except requests.RequestException:
                return None

        wait_for(lambda: (r := get("/readyz")) is not None and r.status_code == 200, what="/readyz 200")
        wait_for(lambda: (r := get("/healthz")) is not None and r.status_code == 200, what="/healthz 200")
        wait_for(lambda: env.replicas("web") == 2, what="the process scales")
        metrics = wait_for(lambda: (r := get("/metrics")) and 'promop_autoscaler_rescales_total{direction="up"} 1.0'
                           in r.text and r.text, what="the rescale counted")
        assert "promop_autoscaler_syncs_total" in metrics
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(scaled(30)) == 0
        reader.join(scaled(5))
        err = "".join(lines)
        assert '"msg": "rescaled"' in err or '"msg":"rescaled"' in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_flags_exit_2():
    proc = subprocess.run([sys.executable, "-m", "promop", "autoscaler", "--web.listen-address", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--web.listen-address" in proc.stderr
