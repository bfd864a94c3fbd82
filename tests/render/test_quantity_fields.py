"""resource.Quantity fields in a Prometheus config are numbers, as upstream writes them
(`AsApproximateFloat64()`): Prometheus refuses `native_histogram_min_bucket_factor: '1.1'`
(issue 21 §5). The upstream goldens (test_conformance.py, NativeHistogramConfig*.golden)
cover 12.124; these cover the other quantity forms and a bad value."""

from __future__ import annotations

import copy

import pytest
import yaml

from promop.render import RenderOptions, generate_config

OPTIONS = RenderOptions(endpointslice_supported=False, shard_retention_policy=False)
PROMETHEUS = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
              "metadata": {"name": "test", "namespace": "default"},
              "spec": {"version": "v3.13.2", "scrapeInterval": "30s"}}


def monitor(name: str, factor) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {}, "endpoints": [{"port": "web"}], "nativeHistogramMinBucketFactor": factor}}


@pytest.mark.parametrize("factor,number", [("1.1", 1.1), ("500m", 0.5), ("2", 2), (2, 2), ("1.5", 1.5),
                                           ("11e-1", 1.1)])
def test_min_bucket_factor_is_a_number(factor, number):
    result = generate_config(copy.deepcopy(PROMETHEUS), [monitor("m", factor)], options=OPTIONS)
    assert result.rejected == []
    [job] = yaml.safe_load(result.text)["scrape_configs"]
    value = job["native_histogram_min_bucket_factor"]
    assert not isinstance(value, str) and value == number
    assert f"native_histogram_min_bucket_factor: {yaml.safe_dump(value).splitlines()[0]}" in result.text


def test_a_bad_factor_rejects_its_monitor_only():
    result = generate_config(copy.deepcopy(PROMETHEUS), [monitor("bad", "1.1x"), monitor("good", "1.1")],
                             options=OPTIONS)
    [problem] = result.rejected
    assert (problem.name, problem.field) == ("bad", "spec.nativeHistogramMinBucketFactor")
    assert "1.1x" in problem.message  # the CRD schema's quantity pattern
    assert [j["job_name"] for j in result.config["scrape_configs"]] == ["serviceMonitor/default/good/0"]
