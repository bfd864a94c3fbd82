"""`promop demo autoscaling` serves the metrics APIs: `promop adapter` behind the sandbox's aggregation answers
`kubectl top pod` and the custom metrics API with the demo pods' memory."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from promop.demos.autoscaling import CPU_CORES, load_at
from tests.prom.prom_fixtures import require_binaries

MI = 1024 * 1024


@pytest.mark.prometheus
@pytest.mark.slow
@pytest.mark.parametrize("with_kubectl", [True, False], ids=["kubectl", "no-kubectl"])
def test_demo_metrics_apis_answer_through_the_aggregation(with_kubectl, tmp_path):
    require_binaries()
    env = dict(os.environ)
    if with_kubectl:
        if not shutil.which("kubectl"):
            pytest.skip("kubectl is not installed")
    else:  # a PATH with prometheus only: the demo shows the raw API instead of kubectl top
        (tmp_path / "prometheus").symlink_to(shutil.which("prometheus"))
        env["PATH"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "promop", "demo", "autoscaling", "--once", "--speed", "60"],
                          capture_output=True, text=True, timeout=240, env=env)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert ("metrics APIs: promop adapter registered as APIServices v1beta1.metrics.k8s.io, "
            "v1beta2.custom.metrics.k8s.io, v1beta1.custom.metrics.k8s.io") in out
    # at the start: one pod holding the whole load (the demo's input, 60Mi), CPU_CORES of CPU
    memory_mi = load_at(0)
    if with_kubectl:
        assert re.search(r"\$ kubectl --kubeconfig \S+ top pod -n default\n\s+NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)",
                         out), out
        rows = re.findall(r"^\s+(shop-\S+)\s+(\d+)m\s+(\d+)Mi\s*$", out, re.M)
    else:
        assert "GET /apis/metrics.k8s.io/v1beta1/namespaces/default/pods (what kubectl top pod reads):" in out
        rows = re.findall(r"^\s+(shop-\S+)\s+cpu (\d+)m\s+memory (\d+)Mi\s*$", out, re.M)
    assert len(rows) == 1, out
    pod, cpu_m, mem = rows[0]
    assert int(mem) == memory_mi
    assert abs(int(cpu_m) - CPU_CORES * 1000) <= 2
    custom = re.findall(r"^\s+(shop-\S+): memory_working_set_bytes = (\d+)$", out, re.M)
    assert custom == [(pod, str(int(memory_mi * MI)))], out
    assert "done: peak" in out and "back to 1" in out   # the autoscaling part still runs its course
