"""Config assembly and storage: fragment text equals a whole-dict dump, gzip is stable, sections."""

from __future__ import annotations

import base64
import gzip

import pytest
import yaml

from promop.render import RenderInputs, generate_config, render
from promop.render.emit import emit

from .helpers import lay_out, pod_monitor, prometheus_obj, promtool_check_config, secret, service_monitor

PEM_CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"


def _full_inputs():
    prom = prometheus_obj(
        version="v3.13.2",
        externalLabels={"cluster": "eu-1"},
        alerting={"alertmanagers": [{"name": "am", "namespace": "monitoring", "port": "web", "apiVersion": "v2"}]},
        remoteWrite=[{"url": "https://rw.example.com/api/v1/write", "name": "rw",
                      "basicAuth": {"username": {"name": "rw", "key": "user"}, "password": {"name": "rw", "key": "pw"}},
                      "writeRelabelConfigs": [{"sourceLabels": ["__name__"], "regex": "go_.*", "action": "drop"}],
                      "queueConfig": {"maxShards": 10, "batchSendDeadline": "5s"}}],
        additionalScrapeConfigs={"name": "extra", "key": "jobs.yaml"},
    )
    sms = [service_monitor("a", endpoints=[{"port": "web", "tlsConfig": {
        "ca": {"configMap": {"name": "ca", "key": "ca.crt"}},
        "cert": {"secret": {"name": "tls", "key": "tls.crt"}},
        "keySecret": {"name": "tls", "key": "tls.key"}}}])]
    return RenderInputs(
        prometheus=prom,
        service_monitors=sms,
        pod_monitors=[pod_monitor("p")],
        secrets={
            ("monitoring", "rw"): secret("rw", user="u", pw="p"),
            ("monitoring", "tls"): secret("tls", **{"tls.crt": PEM_CERT, "tls.key": PEM_KEY}),
            ("monitoring", "extra"): secret("extra", **{"jobs.yaml": "- job_name: static\n  static_configs: [{targets: [a:1]}]\n"}),
        },
        configmaps={("monitoring", "ca"): {"metadata": {"name": "ca", "namespace": "monitoring"}, "data": {"ca.crt": PEM_CERT}}},
    )


def test_assembled_text_equals_dumping_the_whole_config():
    result = render(_full_inputs())
    assert result.config_text == emit(result.config)  # the per-job assembly is the whole dump
    assert yaml.safe_load(result.config_text) == result.config
    assert list(result.config) == ["global", "rule_files", "scrape_configs", "storage", "alerting", "remote_write"]


def test_text_loads_back_equal_to_a_plain_csafedumper_dump():
    """promop's emitter and PyYAML's give the same data, and neither writes anchors/aliases."""
    inputs = _full_inputs()
    inputs.prometheus["spec"].update(enforcedNamespaceLabel="namespace", shards=2,
                                     apiserverConfig={"host": "https://k8s", "basicAuth": {
                                         "username": {"name": "rw", "key": "user"}, "password": {"name": "rw", "key": "pw"}}})
    inputs.service_monitors[0]["spec"]["endpoints"] *= 2
    inputs.service_monitors[0]["spec"]["endpoints"][1]["metricRelabelings"] = [{"action": "labeldrop", "regex": "x"}]
    result = render(inputs)
    # the API server settings apply to every Kubernetes SD block, Alertmanagers' included
    assert result.config["alerting"]["alertmanagers"][0]["kubernetes_sd_configs"][0]["api_server"] == "https://k8s"
    assert result.config["scrape_configs"][0]["kubernetes_sd_configs"][0]["basic_auth"] == {"username": "u", "password": "p"}
    plain = yaml.dump(result.config, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
                      default_flow_style=False, sort_keys=False, allow_unicode=True)
    assert "&id" not in plain and "&id" not in result.config_text
    assert yaml.safe_load(plain) == yaml.safe_load(result.config_text) == result.config


def test_empty_scrape_configs_text():
    result = generate_config(prometheus_obj(version="v2.45.0"))
    assert "scrape_configs: []\n" in result.text
    assert yaml.safe_load(result.text)["scrape_configs"] == []


def test_config_secret_is_gzip_with_mtime_zero_and_stable():
    a, b = render(_full_inputs()), render(_full_inputs())
    assert a.config_secret == b.config_secret
    gz = base64.b64decode(a.config_secret["data"]["prometheus.yaml.gz"])
    assert gz[4:8] == b"\0\0\0\0"  # MTIME field
    assert gzip.decompress(gz).decode() == a.config_text
    md = a.config_secret["metadata"]
    assert md["name"] == "prometheus-k8s"
    assert md["labels"]["app.kubernetes.io/managed-by"] == "prometheus-operator"
    assert md["ownerReferences"][0]["controller"] is True


def test_tls_assets_are_copied_and_referenced_by_path():
    result = render(_full_inputs())
    job = result.config["scrape_configs"][0]
    assert job["tls_config"] == {
        "ca_file": "/etc/prometheus/certs/1_monitoring_ca_ca.crt",
        "cert_file": "/etc/prometheus/certs/0_monitoring_tls_tls.crt",
        "key_file": "/etc/prometheus/certs/0_monitoring_tls_tls.key",
    }
    [tls] = result.tls_secrets
    assert tls["metadata"]["name"] == "prometheus-k8s-tls-assets-0"
    assert sorted(tls["data"]) == ["0_monitoring_tls_tls.crt", "0_monitoring_tls_tls.key", "1_monitoring_ca_ca.crt"]
    assert base64.b64decode(tls["data"]["1_monitoring_ca_ca.crt"]).decode() == PEM_CERT


def test_tls_assets_shard_over_several_secrets():
    from promop.render.tls_assets import MAX_SECRET_DATA, tls_secrets

    big = "x" * (MAX_SECRET_DATA // 2)
    secrets = tls_secrets(prometheus_obj(), _full_inputs().options, {"a": big, "b": big, "c": "small"})
    assert [s["metadata"]["name"] for s in secrets] == ["prometheus-k8s-tls-assets-0", "prometheus-k8s-tls-assets-1"]
    assert sorted(secrets[0]["data"]) == ["a"] and sorted(secrets[1]["data"]) == ["b", "c"]


def test_global_external_labels_alerting_remote_write_additional():
    result = render(_full_inputs())
    cfg = result.config
    assert cfg["global"]["external_labels"] == {
        "cluster": "eu-1", "prometheus": "monitoring/k8s", "prometheus_replica": "$(POD_NAME)"}
    assert cfg["alerting"]["alert_relabel_configs"] == [{"action": "labeldrop", "regex": "prometheus_replica"}]
    [am] = cfg["alerting"]["alertmanagers"]
    assert am["api_version"] == "v2"
    assert am["relabel_configs"][0] == {"action": "keep", "source_labels": ["__meta_kubernetes_service_name"], "regex": "am"}
    [rw] = cfg["remote_write"]
    assert rw["basic_auth"] == {"username": "u", "password": "p"}
    assert rw["write_relabel_configs"] == [{"source_labels": ["__name__"], "regex": "go_.*", "action": "drop"}]
    assert rw["queue_config"] == {"max_shards": 10, "batch_send_deadline": "5s"}
    assert "remote_timeout" not in rw  # upstream has no default: Prometheus' own applies
    assert cfg["scrape_configs"][-1]["job_name"] == "static"
    assert [j["job_name"] for j in cfg["scrape_configs"]] == [
        "serviceMonitor/monitoring/a/0", "podMonitor/monitoring/p/0", "static"]
    assert cfg["storage"] == {"tsdb": {"retention": {"time": "24h"}}}
    assert cfg["rule_files"] == [f"/etc/prometheus/rules/prometheus-k8s-rulefiles-{i}/*.yaml" for i in range(3)]


def test_prometheus_level_problems_are_warnings_not_failures():
    inputs = _full_inputs()
    inputs.secrets = {k: v for k, v in inputs.secrets.items() if k[1] not in ("rw", "extra")}
    result = render(inputs)
    fields = {w.field for w in result.warnings}
    assert "spec.remoteWrite[0].basicAuth.username" in fields
    assert "spec.additionalScrapeConfigs" in fields
    assert "remote_write" not in result.config
    # the monitors still render
    assert [j["job_name"] for j in result.config["scrape_configs"]] == [
        "serviceMonitor/monitoring/a/0", "podMonitor/monitoring/p/0"]


def test_additional_scrape_configs_bad_items_dropped():
    inputs = _full_inputs()
    inputs.secrets[("monitoring", "extra")] = secret("extra", **{"jobs.yaml": (
        "- job_name: ok\n  static_configs: [{targets: [a:1]}]\n"
        "- job_name: ok\n"
        "- static_configs: []\n"
        "- job_name: badrelabel\n  relabel_configs: [{action: hashmod, source_labels: [a], target_label: b}]\n")})
    result = render(inputs)
    assert [j["job_name"] for j in result.config["scrape_configs"]][-1] == "ok"
    messages = [w.message for w in result.warnings if w.field.startswith("spec.additionalScrapeConfigs")]
    assert len(messages) == 3
    assert any("already used" in m for m in messages) and any("hashmod needs a non-zero modulus" in m for m in messages)


def test_version_gated_fields_are_dropped_with_a_warning():
    prom = prometheus_obj(version="v2.30.0")
    sm = service_monitor("a", keepDroppedTargets=5, endpoints=[{"port": "web", "enableHttp2": True}])
    result = render(RenderInputs(prometheus=prom, service_monitors=[sm]))
    job = result.config["scrape_configs"][0]
    assert "keep_dropped_targets" not in job and "enable_http2" not in job
    warned = {(w.field, w.message) for w in result.warnings if w.name == "a"}
    assert ("spec.keepDroppedTargets", "ignored: keep_dropped_targets needs Prometheus >= 2.47.0, but spec.version is v2.30.0") in warned
    assert any(f == "spec.endpoints[0].enableHttp2" for f, _ in warned)


def test_enforced_limits_cap_user_limits():
    prom = prometheus_obj(version="v2.42.0", enforcedSampleLimit=100, enforcedTargetLimit=10)
    sms = [service_monitor("a", sampleLimit=1000, targetLimit=5), service_monitor("b")]
    cfg = render(RenderInputs(prometheus=prom, service_monitors=sms)).config
    a, b = cfg["scrape_configs"]
    assert (a["sample_limit"], a["target_limit"]) == (100, 5)
    assert (b["sample_limit"], b["target_limit"]) == (100, 10)  # < 2.45: enforced applies when unset


def test_unmanaged_config_when_no_scrape_selector():
    prom = prometheus_obj()
    for k in ("serviceMonitorSelector", "podMonitorSelector"):
        del prom["spec"][k]
    result = render(RenderInputs(prometheus=prom))
    assert result.config_unmanaged and result.config_secret["data"] == {} and result.config == {}


def test_pod_monitor_relabel_order():
    pm = pod_monitor("p", jobLabel="app", podMetricsEndpoints=[{"port": "metrics", "relabelings": [
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]}])
    cfg = render(RenderInputs(prometheus=prometheus_obj(version="v2.42.0"), pod_monitors=[pm])).config
    [job] = cfg["scrape_configs"]
    assert job["job_name"] == "podMonitor/monitoring/p/0"
    assert job["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": ["monitoring"]}}]
    targets = [r.get("target_label") or r.get("action") for r in job["relabel_configs"]]
    assert targets == [
        "__tmp_prometheus_job_name", "drop", "keep", "keep", "namespace", "container", "pod",
        "job", "job", "endpoint", "node", "__tmp_current_shard", "keep", "__tmp_hash", "__tmp_hash", "keep"]
    assert job["relabel_configs"][7] == {"target_label": "job", "replacement": "monitoring/p"}
    assert job["relabel_configs"][2]["source_labels"] == ["__meta_kubernetes_pod_label_app", "__meta_kubernetes_pod_labelpresent_app"]


def test_log_files_and_histogram_keys():
    prom = prometheus_obj(version="v2.45.0", queryLogFile="/var/log/q.log", scrapeFailureLogFile="failures.log",
                          scrapeClassicHistograms=True)
    sm = service_monitor("a", scrapeClassicHistograms=True)
    result = render(RenderInputs(prometheus=prom, service_monitors=[sm]))
    g = result.config["global"]
    assert g["query_log_file"] == "/var/log/q.log"
    assert "scrape_failure_log_file" not in g and "always_scrape_classic_histograms" not in g
    assert result.config["scrape_configs"][0]["scrape_classic_histograms"] is True
    fields = {w.field for w in result.warnings}
    assert {"spec.scrapeFailureLogFile", "spec.scrapeClassicHistograms"} <= fields


def _refused_items_result():
    prom = prometheus_obj(
        version="v2.42.0",
        externalLabels={"bad-name": "x", "good_name": "y"},
        remoteWrite=[{"url": "https://ok.example.com/w"},
                     {"url": "https://h.example.com/w", "headers": {"Authorization": "Bearer x"}},
                     {"url": "http://bad host/w"}],
        alerting={"alertmanagers": [{"name": "am2", "namespace": "monitoring", "port": "web", "timeout": "10s"}]},
    )
    return render(RenderInputs(prometheus=prom, service_monitors=[service_monitor("a")]))


def test_prometheus_level_items_prometheus_would_refuse_are_dropped():
    result = _refused_items_result()
    cfg = result.config
    assert "bad-name" not in cfg["global"]["external_labels"] and cfg["global"]["external_labels"]["good_name"] == "y"
    assert [rw["url"] for rw in cfg["remote_write"]] == ["https://ok.example.com/w"]
    assert [am["timeout"] for am in cfg["alerting"]["alertmanagers"]] == ["10s"]
    fields = {w.field for w in result.warnings}
    assert {"spec.externalLabels.bad-name", "spec.remoteWrite[1].headers.Authorization", "spec.remoteWrite[2].url"} <= fields


def test_prometheus_violating_its_crd_schema_is_rejected_with_every_field():
    """What the apiserver would refuse is refused here too, before anything is rendered."""
    from promop.render.schema_check import InvalidPrometheus

    prom = prometheus_obj(
        version="v2.42.0",
        remoteWrite=[{"url": "not a url"}],
        alerting={"alertmanagers": [{"name": "am", "namespace": "monitoring", "port": "web", "timeout": "5 s"}]},
    )
    with pytest.raises(InvalidPrometheus) as info:
        render(RenderInputs(prometheus=prom, service_monitors=[service_monitor("a")]))
    assert [(p.field, p.message.split(":")[0]) for p in info.value.problems] == [
        ("spec.alerting.alertmanagers[0].timeout", "Invalid value"),
        ("spec.remoteWrite[0].url", "Invalid value"),
    ]
    assert "should match '^(http|https)://.+$'" in info.value.problems[1].message


@pytest.mark.prometheus
def test_full_config_passes_promtool(tmp_path):
    """Every section at once (TLS assets, remote write, alerting, additional jobs, dropped bad items)."""
    inputs = _full_inputs()
    inputs.prometheus["spec"]["version"] = "v2.42.0"
    a = tmp_path / "a"
    proc = promtool_check_config(lay_out(render(inputs), a),
                                 lay_out(_refused_items_result(), tmp_path / "b"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
