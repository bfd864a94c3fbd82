"""`recommender explain` that finds no history says why (issue 21 §7): the two queries it sent, and
what a real Prometheus holds instead, as flags. The history is labelled as the autoscaling demo
labels it (job="cadvisor", pod/container labels), which upstream's defaults do not match."""

from __future__ import annotations

import math
import subprocess
import sys
import time

from prom.prom_fixtures import counter, gauge

from promop.recommender.diagnose import why_no_samples
from promop.recommender.history import HistoryConfig
from promop.vpa.timeutil import format_time
from .test_recommender_e2e import NS, create_workload

NOW = math.floor(time.time() / 60) * 60.0
DEMO_LABELS = {"job": "cadvisor", "namespace": NS, "pod": "web-7d4b9-abcde", "container": "app"}


def demo_history(labels: dict = DEMO_LABELS):
    start, end = NOW - 3 * 3600, NOW - 60
    return [counter("container_cpu_usage_seconds_total", labels, start, end, 60, 0.0, 0.25),
            gauge("container_memory_working_set_bytes", labels, start, end, 60, lambda t: 300e6)]


def explain(cluster, tmp_path, prom_url, *flags: str) -> subprocess.CompletedProcess:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    return subprocess.run([sys.executable, "-m", "promop", "recommender", "explain", f"{NS}/web-vpa",
                           "--kubeconfig", kubeconfig, "--prometheus-address", prom_url, "--history-length", "2h",
                           "--history-resolution", "5m", "--metric-for-pod-labels", "", "--now", format_time(NOW),
                           *flags], capture_output=True, text=True, timeout=120)


def test_explain_with_upstreams_defaults_names_the_queries_and_the_flags(cluster, kube, prometheus_factory, tmp_path):
    prom = prometheus_factory(demo_history())
    create_workload(kube)
    p = explain(cluster, tmp_path, prom.url)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert f"history from Prometheus {prom.url} (0 samples" in out and "Prometheus history" not in out, out
    assert 'no samples: the CPU query was rate(container_cpu_usage_seconds_total{job="kubernetes-cadvisor"' in out
    assert 'the memory query container_memory_working_set_bytes{job="kubernetes-cadvisor"' in out
    assert 'has none with job="kubernetes-cadvisor", but has job="cadvisor" (2 series): ' \
           "pass --prometheus-cadvisor-job-name cadvisor" in out, out
    assert "the series have no 'pod_name' label: pass --container-pod-name-label pod" in out
    assert "the series have no 'name' label: pass --container-name-label container" in out
    assert "no recommendation" in out
    # with the flags it named, the same history gives a recommendation and no diagnosis
    p = explain(cluster, tmp_path, prom.url, "--prometheus-cadvisor-job-name", "cadvisor",
                "--container-pod-name-label", "pod", "--container-name-label", "container")
    assert p.returncode == 0, p.stderr
    assert "no samples" not in p.stdout and "container app:" in p.stdout, p.stdout


def test_explain_says_when_no_pod_with_samples_is_selected(cluster, kube, prometheus_factory, tmp_path):
    prom = prometheus_factory(demo_history({**DEMO_LABELS, "pod": "web-old-12345"}))  # gone: no labels known
    create_workload(kube)
    p = explain(cluster, tmp_path, prom.url, "--prometheus-cadvisor-job-name", "cadvisor",
                "--container-pod-name-label", "pod", "--container-name-label", "container")
    assert p.returncode == 0, p.stderr
    assert "(0 samples" not in p.stdout and "no samples" not in p.stdout, p.stdout
    assert f"none of the 1 pods with samples in {NS} is matched by the selector app=web" in p.stdout, p.stdout


def test_reasons_without_series_and_in_another_namespace():
    cfg = HistoryConfig(cadvisor_job_name="kubelet", ctr_pod_name_label="pod", ctr_name_label="container",
                        namespace="shop")
    nothing = why_no_samples(cfg, [])
    assert len(nothing) == 3 and "no container_cpu_usage_seconds_total or container_memory_working_set_bytes " \
                                  "series at all" in nothing[2]
    elsewhere = why_no_samples(cfg, [{"job": "kubelet", "namespace": "web", "pod": "p", "container": "c"}])
    assert elsewhere[2:] == ["  no series in namespace 'shop' (found: web)"]
    matching = why_no_samples(cfg, [{"job": "kubelet", "namespace": "shop", "pod": "p", "container": "c"}])
    assert "1 matching series" in matching[2] and "window" in matching[2]
