"""`--disable-unmanaged-prometheus-configuration` (RenderOptions.unmanaged_configuration=False): a Prometheus
with none of the four scrape selectors gets a generated config, as upstream's WithoutUnmanagedConfiguration
(nil selectors select nothing; rules, alerting and additional scrape configs still count)."""

from __future__ import annotations

import base64
import gzip

import yaml

from promop.render import RenderInputs, render
from promop.render.model import RenderOptions

from .helpers import prometheus_obj, secret, service_monitor

MANAGED = RenderOptions(unmanaged_configuration=False)


def no_selectors(**spec) -> dict:
    prom = prometheus_obj(version="v2.42.0", **spec)
    for key in ("serviceMonitorSelector", "podMonitorSelector", "probeSelector", "scrapeConfigSelector"):
        prom["spec"].pop(key, None)
    return prom


def secret_config(result) -> dict:
    return yaml.safe_load(gzip.decompress(base64.b64decode(result.config_secret["data"]["prometheus.yaml.gz"])))


def test_without_the_flag_the_config_is_left_to_the_user():
    result = render(RenderInputs(prometheus=no_selectors()))
    assert result.config_unmanaged and result.config_secret["data"] == {}


def test_with_the_flag_the_config_is_generated_and_nil_selectors_select_nothing():
    result = render(RenderInputs(prometheus=no_selectors(), service_monitors=[service_monitor("a")], options=MANAGED))
    assert not result.config_unmanaged
    config = secret_config(result)
    assert config == result.config and config["global"]["evaluation_interval"]
    assert config.get("scrape_configs", []) == []  # a nil serviceMonitorSelector selects nothing
    assert not any(d.selected for d in result.selection)


def test_with_the_flag_additional_scrape_configs_are_generated():
    extra = secret("extra", "monitoring", **{"jobs.yaml": "- job_name: extra\n  static_configs: [{targets: [a:1]}]\n"})
    prom = no_selectors(additionalScrapeConfigs={"name": "extra", "key": "jobs.yaml"})
    result = render(RenderInputs(prometheus=prom, secrets={("monitoring", "extra"): extra}, options=MANAGED))
    assert [j["job_name"] for j in secret_config(result)["scrape_configs"]] == ["extra"]


def test_the_flag_changes_nothing_when_a_selector_is_set():
    prom = prometheus_obj(version="v2.42.0")
    sms = [service_monitor("a")]
    plain = render(RenderInputs(prometheus=prom, service_monitors=sms))
    flagged = render(RenderInputs(prometheus=prom, service_monitors=sms, options=MANAGED))
    assert plain.config == flagged.config and plain.config_secret == flagged.config_secret
    assert plain.statefulsets == flagged.statefulsets
