"""`promop render` and `promop explain prometheusagent` on PrometheusAgent files, as a user runs them."""

from __future__ import annotations

import yaml
from cli_runner import promop

AGENT = """
apiVersion: monitoring.coreos.com/v1alpha1
kind: PrometheusAgent
metadata: {name: edge, namespace: mon}
spec:
  podMonitorSelector: {matchLabels: {team: a}}
  remoteWrite: [{url: "http://central/api/v1/write"}]
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: app, namespace: mon, labels: {team: a}}
spec:
  selector: {}
  podMetricsEndpoints: [{port: web}]
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: other, namespace: mon, labels: {team: b}}
spec:
  selector: {}
  podMetricsEndpoints: [{port: web}]
"""




def test_render_writes_the_agent_objects(tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT)
    proc = promop("render", "-f", str(path))
    assert proc.returncode == 0, proc.stderr
    objs = [o for o in yaml.safe_load_all(proc.stdout) if o]
    names = {(o["kind"], o["metadata"]["name"]) for o in objs}
    assert {("Secret", "prom-agent-edge"), ("Service", "prometheus-agent-operated"),
            ("StatefulSet", "prom-agent-edge")} <= names
    assert not any(o["kind"] == "ConfigMap" for o in objs)  # no rule files for an agent


def test_render_daemonset_needs_the_gate(tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT.replace("spec:\n  podMonitorSelector", "spec:\n  mode: DaemonSet\n  podMonitorSelector", 1))
    off = promop("render", "-f", str(path))
    assert "PrometheusAgentDaemonSet feature gate" in off.stderr
    assert "Traceback" not in off.stderr
    on = promop("render", "--feature-gates", "PrometheusAgentDaemonSet=true", "-f", str(path))
    assert on.returncode == 0, on.stderr
    kinds = [o["kind"] for o in yaml.safe_load_all(on.stdout) if o]
    assert "DaemonSet" in kinds and "StatefulSet" not in kinds


def test_explain_prometheusagent(tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT)
    proc = promop("explain", "prometheusagent", "mon/edge", "-f", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "PrometheusAgent mon/edge: 1 scrape jobs" in proc.stdout
    assert "PodMonitor mon/app: selected; scrape jobs: podMonitor/mon/app/0" in proc.stdout
    assert "PodMonitor mon/other: not selected" in proc.stdout
    monitor = promop("explain", "podmonitor", "mon/other", "-f", str(path))
    assert "PrometheusAgent mon/edge: not selected" in monitor.stdout
