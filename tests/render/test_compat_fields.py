"""Field-by-field compatibility with upstream beyond the goldens (reference §1): fields once
wrongly reported as unsupported, byte-identical goldens (key order), version gates."""

from __future__ import annotations

import pytest
import yaml

from promop.render import RenderInputs, RenderOptions, render

from .helpers import pod_monitor, prometheus_obj, service_monitor
from .test_conformance import CONFORMANCE, DEVIATIONS, SPEC, _render


def _jobs(result) -> dict:
    return {j["job_name"]: j for j in result.config["scrape_configs"]}


def test_prometheus_pod_target_labels_apply_after_the_monitors_own_without_warning():
    prom = prometheus_obj(podTargetLabels=["team", "app.kubernetes.io/part-of"])
    sm = service_monitor("sm", podTargetLabels=["tier"])
    pm = pod_monitor("pm")
    result = render(RenderInputs(prometheus=prom, service_monitors=[sm], pod_monitors=[pm]))
    assert not [w for w in result.warnings if "podTargetLabels" in w.field], result.warnings
    for name in ("serviceMonitor/monitoring/sm/0", "podMonitor/monitoring/pm/0"):
        targets = [r["target_label"] for r in _jobs(result)[name]["relabel_configs"]
                   if "target_label" in r and r.get("source_labels", [""])[0].startswith("__meta_kubernetes_pod_label_")]
        expected = ["tier"] if name.startswith("service") else []
        assert targets == [*expected, "team", "app_kubernetes_io_part_of"], name


@pytest.mark.parametrize("sm_role,prom_role,expected", [
    ("EndpointSlice", None, "endpointslice"),
    ("Endpoints", "EndpointSlice", "endpoints"),  # the monitor's own choice wins
    (None, "EndpointSlice", "endpointslice"),
])
def test_service_monitor_discovery_role_is_used_without_warning(sm_role, prom_role, expected):
    extra = {"serviceDiscoveryRole": sm_role} if sm_role else {}
    prom = prometheus_obj(**({"serviceDiscoveryRole": prom_role} if prom_role else {}))
    result = render(RenderInputs(prometheus=prom, service_monitors=[service_monitor("sm", **extra)],
                                 options=RenderOptions(endpointslice_supported=True)))
    assert not [w for w in result.warnings if "serviceDiscoveryRole" in w.field], result.warnings
    job = _jobs(result)["serviceMonitor/monitoring/sm/0"]
    assert job["kubernetes_sd_configs"][0]["role"] == expected
    port_rule = next(r for r in job["relabel_configs"] if r.get("regex") == "web")
    assert port_rule["source_labels"] == [f"__meta_kubernetes_{'endpointslice' if expected == 'endpointslice' else 'endpoint'}_port_name"]


def test_every_tsdb_field_is_written_without_a_warning():
    prom = prometheus_obj(version="v3.13.2", tsdb={"outOfOrderTimeWindow": "1h", "chunkEncoding": {"floats": "Xor2"},
                                                  "staleSeriesCompactionThreshold": "0.5"})
    result = render(RenderInputs(prometheus=prom))
    assert result.config["storage"]["tsdb"] == {
        "out_of_order_time_window": "1h", "stale_series_compaction_threshold": 0.5,
        "chunk_encoding": {"floats": "xor2"}, "retention": {"time": "24h"}}
    assert not [w for w in result.warnings if w.field.startswith("spec.tsdb")]


@pytest.mark.parametrize("case", [c for c in SPEC["cases"] if not c.get("partial")
                                  and c["golden"] not in {d["golden"] for d in DEVIATIONS}],
                         ids=lambda c: c["golden"])
def test_golden_text_is_byte_identical(case):
    """Key order everywhere, not just parsed equality. The one formatting difference: an empty
    string is '' in PyYAML and "" in Go's yaml, the same value."""
    golden = (CONFORMANCE / case["golden"]).read_text()
    assert _render(case).text == golden.replace(': ""\n', ": ''\n")


@pytest.mark.parametrize("version,present,absent", [
    ("v2.44.0", set(), {"sample_limit", "target_limit", "keep_dropped_targets"}),  # global limits need 2.45
    ("v2.45.0", {"sample_limit", "target_limit"}, {"keep_dropped_targets"}),  # keep_dropped_targets needs 2.47
    ("v2.47.0", {"sample_limit", "target_limit", "keep_dropped_targets"}, set()),
])
def test_global_limit_version_gates(version, present, absent):
    prom = prometheus_obj(version=version, sampleLimit=10, targetLimit=5, keepDroppedTargets=3)
    result = render(RenderInputs(prometheus=prom))
    glob = result.config["global"]
    assert present <= set(glob) and not absent & set(glob), glob
    names = {"sample_limit": "sampleLimit", "target_limit": "targetLimit", "keep_dropped_targets": "keepDroppedTargets"}
    assert {f"spec.{names[k]}" for k in absent} <= {w.field for w in result.warnings}, result.warnings


def test_job_key_order_for_every_optional_key():
    """Reference §1.1 order: head, SD, interval..enable_http2, proxy, oauth2, tls, bearer, basic,
    authorization, relabel_configs, limits, protocols, body size, metric_relabel_configs."""
    sm = service_monitor("sm", sampleLimit=10, targetLimit=5, labelLimit=3, labelNameLengthLimit=4,
                         labelValueLengthLimit=5, keepDroppedTargets=6, bodySizeLimit="1MB",
                         scrapeProtocols=["PrometheusText0.0.4"], fallbackScrapeProtocol="PrometheusText0.0.4",
                         attachMetadata={"node": True}, endpoints=[{
                             "port": "web", "honorLabels": True, "honorTimestamps": True,
                             "trackTimestampsStaleness": True, "interval": "30s", "scrapeTimeout": "10s",
                             "path": "/m", "params": {"a": ["b"]}, "scheme": "HTTPS", "followRedirects": True,
                             "enableHttp2": False, "proxyUrl": "http://proxy:3128",
                             "tlsConfig": {"insecureSkipVerify": True}, "bearerTokenFile": "/var/token",
                             "metricRelabelings": [{"action": "drop", "sourceLabels": ["__name__"], "regex": "x"}]}])
    result = render(RenderInputs(prometheus=prometheus_obj(version="v3.13.2"), service_monitors=[sm]))
    assert result.rejected == []
    job = _jobs(result)["serviceMonitor/monitoring/sm/0"]
    assert list(job) == [
        "job_name", "honor_labels", "honor_timestamps", "track_timestamps_staleness", "kubernetes_sd_configs",
        "scrape_interval", "scrape_timeout", "metrics_path", "params", "scheme", "follow_redirects", "enable_http2",
        "proxy_url", "tls_config", "bearer_token_file", "relabel_configs", "sample_limit", "target_limit",
        "label_limit", "label_name_length_limit", "label_value_length_limit", "keep_dropped_targets",
        "scrape_protocols", "fallback_scrape_protocol", "body_size_limit", "metric_relabel_configs"]
    assert job["scheme"] == "https"
    assert job["kubernetes_sd_configs"][0]["attach_metadata"] == {"node": True}
    assert yaml.safe_load(result.config_text) == result.config
