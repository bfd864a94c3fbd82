"""A Probe whose scrapeTimeout equals its interval is valid (issue 30 item 4), as for ServiceMonitors.

Upstream checks `scrapeTimeout <= interval` (docs: checkServiceMonitor and the Probe's checks in
pkg/prometheus/resource_selector.go; the interval defaults to the Prometheus' scrapeInterval), and
Prometheus itself refuses only a timeout *greater* than the interval: promtool is the oracle here.
Only "greater" was tested, so `>=` for `>` passed the suite while refusing every such Probe.
"""

from __future__ import annotations

import pytest
import yaml

from promop.render import RenderInputs, RenderOptions, render

from .helpers import PROMTOOL_VERSION, run_promtool

OPTIONS = RenderOptions(endpointslice_supported=False, shard_retention_policy=False)


def prometheus(**spec) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": {"name": "p", "namespace": "test"},
            "spec": {"version": PROMTOOL_VERSION, "probeSelector": {}, "serviceMonitorSelector": {}, **spec}}


def probe(**spec) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Probe", "metadata": {"name": "pr", "namespace": "test"},
            "spec": {"prober": {"url": "blackbox.example.com:9115"},
                     "targets": {"staticConfig": {"static": ["https://example.com"]}}, **spec}}


def probe_job(result) -> dict:
    jobs = result.config["scrape_configs"]
    return next(j for j in jobs if j["job_name"] == "probe/test/pr")


@pytest.mark.parametrize("prom_spec,probe_spec,timing", [
    ({}, {"interval": "10s", "scrapeTimeout": "10s"}, ("10s", "10s")),
    ({"scrapeInterval": "15s"}, {"scrapeTimeout": "15s"}, (None, "15s")),  # equal to the Prometheus default
], ids=["own-interval", "prometheus-interval"])
def test_timeout_equal_to_interval_is_accepted(tmp_path, prom_spec, probe_spec, timing):
    result = render(RenderInputs(prometheus(**prom_spec), probes=[probe(**probe_spec)], options=OPTIONS))
    assert result.rejected == [], result.rejected
    assert result.accepted("Probe") == [("test", "pr")]
    job = probe_job(result)
    assert (job.get("scrape_interval"), job.get("scrape_timeout")) == timing
    config = tmp_path / "prometheus.yaml"
    config.write_text(yaml.safe_dump(result.config))
    proc = run_promtool("check", "config", "--syntax-only", str(config))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_timeout_above_interval_is_refused_by_us_and_by_prometheus(tmp_path):
    result = render(RenderInputs(prometheus(), probes=[probe(interval="10s", scrapeTimeout="11s")], options=OPTIONS))
    assert [p.field for p in result.rejected] == ["spec.scrapeTimeout"]
    # the oracle: Prometheus refuses the same job written by hand
    config = tmp_path / "prometheus.yaml"
    config.write_text(yaml.safe_dump({"scrape_configs": [{"job_name": "x", "scrape_interval": "10s",
                                                          "scrape_timeout": "11s",
                                                          "static_configs": [{"targets": ["a:1"]}]}]}))
    proc = run_promtool("check", "config", "--syntax-only", str(config))
    assert proc.returncode != 0 and "scrape timeout greater than scrape interval" in proc.stdout + proc.stderr


def test_service_monitor_with_equal_timeout_is_accepted_too():
    sm = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "sm", "namespace": "test"},
          "spec": {"selector": {}, "endpoints": [{"port": "web", "interval": "10s", "scrapeTimeout": "10s"}]}}
    result = render(RenderInputs(prometheus(), service_monitors=[sm], options=OPTIONS))
    assert result.rejected == [] and result.accepted("ServiceMonitor") == [("test", "sm")]
