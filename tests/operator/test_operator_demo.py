"""`promop demo --once` on a fresh checkout: sandbox, CRDs, examples, one full sync, a summary."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml
from operator_testlib import ROOT


def test_demo_once(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "promop", "demo", "--once", "--output-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "installed 4 CRDs" in out
    assert re.search(r"ServiceMonitors\s+selected\s+14, accepted\s+13", out), out
    assert re.search(r"PrometheusRules\s+selected\s+8, accepted\s+8", out), out
    assert "rejected: ServiceMonitor monitoring/broken-example" in out and "scrapeTimeout" in out
    assert "StatefulSet prometheus-k8s" in out
    path = Path(re.search(r"decoded prometheus.yaml: (\S+)", out).group(1))
    assert path.parent == tmp_path
    config = yaml.safe_load(path.read_text())
    jobs = [j["job_name"] for j in config["scrape_configs"]]
    assert len(jobs) == 22 and "serviceMonitor/monitoring/node-exporter/0" in jobs
    assert not any("broken-example" in j for j in jobs)
    assert len(config["rule_files"]) >= 3


def test_demo_once_against_a_cluster_kubeconfig(tmp_path):
    from promop.sandbox import Sandbox

    with Sandbox(port=0) as sb:
        kubeconfig = sb.write_kubeconfig(tmp_path / "kubeconfig")
        proc = subprocess.run([sys.executable, "-m", "promop", "demo", "--once", "--kubeconfig", kubeconfig,
                               "--output-dir", str(tmp_path / "out")],
                              capture_output=True, text=True, timeout=180, cwd=ROOT)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"cluster: {sb.url}" in proc.stdout
        assert "sandbox:" not in proc.stdout
        assert (tmp_path / "out" / "monitoring_k8s_prometheus.yaml").exists()
