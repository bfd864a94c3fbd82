"""`promop demo` on a fresh checkout: sandbox, CRDs, examples, one full sync, a summary; then it keeps
running for kubectl until Ctrl-C."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from operator_testlib import ROOT, eventually, scaled


def test_demo_without_simulated_kubelet_says_so(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "promop", "demo", "--once", "--no-simulate-kubelet",
                           "--output-dir", str(tmp_path)], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kubelet is not simulated" in proc.stdout


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


def assert_first_sync_summary(out: str, err: str, out_dir: Path) -> None:
    """The summary `promop demo` prints after its first sync (stdout), and its first sync log line (stderr)."""
    assert f"installed {len(list((ROOT / 'crds').glob('*.yaml')))} CRDs" in out
    assert re.search(r"ServiceMonitors\s+selected\s+14, accepted\s+13", out), out
    assert re.search(r"PrometheusRules\s+selected\s+8, accepted\s+8", out), out
    assert "rejected: ServiceMonitor monitoring/broken-example" in out and "scrapeTimeout" in out
    assert "StatefulSet prometheus-k8s" in out
    # the kube-prometheus Alertmanager is reconciled too (its Service alertmanager-main comes from examples/)
    assert re.search(r"AlertmanagerConfigs\s+selected\s+1, accepted\s+1", out), out
    assert "StatefulSet alertmanager-main" in out and "Service alertmanager-operated" in out
    path = Path(re.search(r"decoded prometheus.yaml: (\S+)", out).group(1))
    assert path.parent == out_dir
    config = yaml.safe_load(path.read_text())
    jobs = [j["job_name"] for j in config["scrape_configs"]]
    assert len(jobs) == 22 and "serviceMonitor/monitoring/node-exporter/0" in jobs
    assert not any("broken-example" in j for j in jobs)
    assert len(config["rule_files"]) >= 3
    # it says it simulates kubelet, and how to turn that off
    assert "kubelet is simulated" in out and "--no-simulate-kubelet" in out
    # logs at info: one line per sync, saying what triggered it and what it wrote
    synced = [line for line in err.splitlines() if "msg=synced" in line]
    assert synced and 'cause="Prometheus monitoring/k8s add"' in synced[0], err
    assert "created Secret prometheus-k8s" in synced[0] and "writes=" in synced[0]


def test_demo_summarises_the_first_sync_keeps_running_reacts_to_kubectl_and_stops_on_ctrl_c(tmp_path):
    """`promop demo` as the README runs it, one run for the whole story (each run is seconds of CPU on a loaded
    machine): the summary of the first sync, then kubectl applies a ServiceMonitor and the operator reacts,
    then Ctrl-C exits 0. `--once` exits 0 after the same summary (the other tests here and the wheel's)."""
    import base64
    import gzip
    import shutil
    import signal
    import threading

    proc = subprocess.Popen([sys.executable, "-m", "promop", "demo", "--output-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []  # stdout
    logs: list[str] = []  # stderr
    for stream, into in ((proc.stdout, lines), (proc.stderr, logs)):
        threading.Thread(target=lambda stream=stream, into=into: [into.append(line) for line in stream],
                         daemon=True).start()
    try:
        eventually(lambda: any("running until Ctrl-C" in line for line in lines), 60, "the demo to settle")
        # the summary precedes "running until Ctrl-C" on stdout; the sync's log line may still be in the pipe
        eventually(lambda: assert_first_sync_summary("".join(lines), "".join(logs), tmp_path) is None, 10,
                   "the first sync's summary and log line")
        if shutil.which("kubectl") is None:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(scaled(60)) == 0, "".join(lines + logs)
            pytest.skip("kubectl is not installed (the summary and Ctrl-C checks passed)")
        kubeconfig = next(line.split(": ", 1)[1].strip() for line in lines if line.startswith("kubeconfig: "))
        sm = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
              "metadata": {"name": "mine", "namespace": "monitoring"},
              "spec": {"selector": {"matchLabels": {"app": "mine"}}, "endpoints": [{"port": "web"}]}}
        kubectl = ["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", str(tmp_path / "kcache")]
        subprocess.run([*kubectl, "apply", "-f", "-"], input=yaml.safe_dump(sm), text=True, check=True,
                       capture_output=True, timeout=60)

        def config_has_my_job() -> bool:
            out = subprocess.run([*kubectl, "-n", "monitoring", "get", "secret", "prometheus-k8s", "-o",
                                  "jsonpath={.data.prometheus\\.yaml\\.gz}"], capture_output=True, text=True,
                                 check=True, timeout=60).stdout
            return "serviceMonitor/monitoring/mine/0" in gzip.decompress(base64.b64decode(out)).decode()
        eventually(config_has_my_job, 20, "the operator to add the applied ServiceMonitor's job")
        # the decoded prometheus.yaml it printed stays current, and the sync is logged in one line
        path = Path(next(re.search(r"decoded prometheus.yaml: (\S+)", line).group(1) for line in lines
                         if "decoded prometheus.yaml:" in line))
        eventually(lambda: "serviceMonitor/monitoring/mine/0" in path.read_text(), 20, "the decoded file rewritten")
        eventually(lambda: any(f"changed: rewrote {path}" in line for line in lines), 20, "the rewrite announced")
        # the operator logs "synced" after its writes, so possibly after the demo's poll saw the Secret
        eventually(lambda: any("msg=synced" in line and "ServiceMonitor monitoring/mine add" in line
                               for line in logs), 20, "the sync logged in one line")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(scaled(60)) == 0, "".join(lines + logs)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
