"""Real manifests: kube-prometheus rendered for Prometheus 2.42 and checked by promtool.

promtool check config also loads every rule file the config names, so this
checks the rule ConfigMaps and TLS asset layout as mounted.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from promop.render import RenderInputs, render

from .helpers import PROMTOOL_VERSION, lay_out, promtool_check_config


def _inputs(docs: list[dict]) -> RenderInputs:
    prometheus = copy.deepcopy(next(d for d in docs if d["kind"] == "Prometheus"))
    prometheus["spec"]["version"] = PROMTOOL_VERSION
    return RenderInputs(
        prometheus=prometheus,
        service_monitors=[d for d in docs if d["kind"] == "ServiceMonitor"],
        prometheus_rules=[d for d in docs if d["kind"] == "PrometheusRule"],
    )


@pytest.mark.prometheus
def test_kube_prometheus_passes_promtool(kube_prometheus, tmp_path):
    result = render(_inputs(kube_prometheus))
    assert result.rejected == []
    assert len(result.config["scrape_configs"]) == 22  # 13 ServiceMonitors, 22 endpoints
    assert len(result.rule_files) == 8
    config = lay_out(result, tmp_path)
    proc = promtool_check_config(config)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "SUCCESS" in out
    # every rule file was found through the rule_files globs and checked
    assert out.count("/etc/prometheus/rules/prometheus-k8s-rulefiles-0/") == 8, out
    # kube-prometheus itself has one duplicated recording rule: promtool lints it (not fatal)
    assert out.count("FAILED") <= 1 and ("FAILED" not in out or "duplicate rule" in out), out


def test_kube_prometheus_jobs_and_selection(kube_prometheus):
    result = render(_inputs(kube_prometheus))
    assert all(d.selected for d in result.selection)
    kubelet = result.jobs[("ServiceMonitor", "monitoring", "kubelet")]
    assert kubelet == [f"serviceMonitor/monitoring/kubelet/{i}" for i in range(4)]
    job = next(j for j in result.config["scrape_configs"] if j["job_name"] == "serviceMonitor/monitoring/kubelet/1")
    assert job["kubernetes_sd_configs"][0]["role"] == "endpointslice"
    assert job["honor_timestamps"] is False
    assert job["bearer_token_file"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert job["tls_config"] == {"insecure_skip_verify": True}
    assert {"source_labels": ["__meta_kubernetes_service_label_app_kubernetes_io_name"], "target_label": "job",
            "regex": "(.+)", "replacement": "${1}"} in job["relabel_configs"]
    assert result.config["alerting"]["alertmanagers"][0]["api_version"] == "v2"
    # the Secret holds exactly the text
    import base64
    import gzip
    data = gzip.decompress(base64.b64decode(result.config_secret["data"]["prometheus.yaml.gz"])).decode()
    assert data == result.config_text
    assert yaml.safe_load(data) == result.config
    assert yaml.dump(result.config, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), default_flow_style=False,
                     sort_keys=False, allow_unicode=True) == data
