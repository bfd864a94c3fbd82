"""Probe selection and validation, as upstream's resource selector (pkg/prometheus/resource_selector_test.go
TestSelectProbes: each scenario's verdict), plus promop's per-object isolation and `promop explain probe`."""

from __future__ import annotations

import copy

import pytest
import yaml

from promop.render import RenderInputs, RenderOptions, render
from promop.render.probe import valid_prober_url

OPTIONS = RenderOptions(endpointslice_supported=False, shard_retention_policy=False)
SECRET = {"metadata": {"name": "secret", "namespace": "test"}, "stringData": {"key1": "val1"}}
HEADER = {"header": [{"name": "secret", "key": "key1"}]}


def prometheus(version: str = "v3.13.2", **spec) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": {"name": "p", "namespace": "test"},
            "spec": {"version": version, "probeSelector": {}, "scrapeClasses": [{"name": "existent"}], **spec}}


def probe(name: str = "test", namespace: str = "test", labels: dict | None = None, **spec) -> dict:
    base = {"prober": {"url": "example.com:80"}, "targets": {"staticConfig": {}}}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Probe",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": {**base, **spec}}


def verdict(p: dict, version: str = "v3.13.2") -> bool:
    result = render(RenderInputs(prometheus(version), probes=[p], secrets={("test", "secret"): SECRET}, options=OPTIONS))
    assert [(d.kind, d.selected) for d in result.selection] == [("Probe", True)]
    return result.accepted("Probe") == [("test", "test")]


def with_prober(**prober) -> dict:
    return probe(prober={"url": "example.com:80", **prober})


def replace_rule(target: str) -> list[dict]:
    return [{"action": "Replace", "targetLabel": target, "sourceLabels": ["foo", "bar"]}]


# (scenario, probe, Prometheus version, valid) from TestSelectProbes
SCENARIOS = [
    ("url starting with http", with_prober(url="http://blackbox-exporter.example.com"), None, False),
    ("url starting with https", with_prober(url="https://blackbox-exporter.example.com"), None, False),
    ("url starting with ftp", with_prober(url="ftp://fileserver.com"), None, False),
    ("ip address as prober url", with_prober(url="192.168.178.3"), None, True),
    ("ip address:port as prober url", with_prober(url="192.168.178.3:9090"), None, True),
    ("dnsname as prober url", with_prober(url="blackbox-exporter.example.com"), None, True),
    ("dnsname:port as prober url", with_prober(url="blackbox-exporter.example.com:8080"), None, True),
    ("hostname as prober url", with_prober(url="localhost"), None, True),
    ("hostname starting with a digit", with_prober(url="12-exporter.example.com"), None, True),
    ("ipv6 address", with_prober(url="::1"), None, True),
    ("ipv6 full address", with_prober(url="2001:db8::1"), None, True),
    ("ipv6 address with port", with_prober(url="[::1]:9090"), None, True),
    ("ipv6 full address with port", with_prober(url="[2001:db8::1]:9090"), None, True),
    ("invalid proxyurl", with_prober(proxyUrl="http://xxx-${dev}.svc.cluster.local:80", noProxy="0.0.0.0",
                                     proxyFromEnvironment=False, proxyConnectHeader=HEADER), None, False),
    ("proxy from environment and proxyurl", with_prober(proxyUrl="http://no-proxy.com", proxyFromEnvironment=True,
                                                        proxyConnectHeader=HEADER), None, False),
    ("proxy from environment and noproxy", with_prober(noProxy="0.0.0.0", proxyFromEnvironment=True,
                                                       proxyConnectHeader=HEADER), None, False),
    ("invalid secret key", with_prober(proxyUrl="http://no-proxy.com", proxyFromEnvironment=True,
                                       proxyConnectHeader={"header": [{"name": "secret", "key": "invalid_key"}]}),
     None, False),
    ("connect header without proxy", with_prober(proxyFromEnvironment=False, proxyConnectHeader=HEADER), None, False),
    ("valid proxyconfig", with_prober(proxyUrl="http://no-proxy.com", noProxy="0.0.0.0", proxyFromEnvironment=False,
                                      proxyConnectHeader=HEADER), None, True),
    ("valid metric relabeling", probe(metricRelabelings=replace_rule("valid")), None, True),
    ("utf-8 metric relabeling with prom2", probe(metricRelabelings=replace_rule(" invalid label name")), "2.55.0", False),
    ("utf-8 metric relabeling with prom3", probe(metricRelabelings=replace_rule(" invalid label name")), "3.5.0", True),
    ("valid static relabeling", probe(targets={"staticConfig": {"relabelingConfigs": replace_rule("valid")}}), None, True),
    ("valid static target labels", probe(targets={"staticConfig": {"labels": {"owner": "team-a"}}}), None, True),
    ("invalid static label with prom2", probe(targets={"staticConfig": {"labels": {"cluster-id": "x"}}}), "2.55.0", False),
    ("static label with prom3", probe(targets={"staticConfig": {"labels": {"cluster-id": "x"}}}), "3.0.0", True),
    ("utf-8 static relabeling with prom2",
     probe(targets={"staticConfig": {"relabelingConfigs": replace_rule(" invalid label name")}}), "2.55.0", False),
    ("utf-8 static relabeling with prom3",
     probe(targets={"staticConfig": {"relabelingConfigs": replace_rule(" invalid label name")}}), "3.5.0", True),
    ("valid ingress relabeling", probe(targets={"ingress": {"relabelingConfigs": replace_rule("valid")}}), None, True),
    ("utf-8 ingress relabeling with prom2",
     probe(targets={"staticConfig": {}, "ingress": {"relabelingConfigs": replace_rule(" invalid label name")}}),
     "2.55.0", False),
    ("utf-8 ingress relabeling with prom3",
     probe(targets={"staticConfig": {}, "ingress": {"relabelingConfigs": replace_rule(" invalid label name")}}),
     "3.5.0", True),
    ("inexistent scrape class", probe(scrapeClass="inexistent", targets={"ingress": {}}), None, False),
    ("existent scrape class", probe(scrapeClass="existent", targets={"ingress": {}}), None, True),
]


@pytest.mark.parametrize("scenario,obj,version,valid", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_upstream_probe_verdicts(scenario, obj, version, valid):
    assert verdict(copy.deepcopy(obj), f"v{version}" if version else "v3.13.2") is valid


def test_prober_url_edge_cases():
    assert valid_prober_url("a.b:65535") and not valid_prober_url("a.b:65536")
    assert not valid_prober_url("a.b:") and not valid_prober_url("-x.example.com")
    assert not valid_prober_url("host/path") and not valid_prober_url("[::1")


def test_nil_probe_selector_selects_nothing_and_empty_selects_all():
    p = probe()
    none = render(RenderInputs({**prometheus(), "spec": {"version": "v3.13.2", "serviceMonitorSelector": {}}},
                               probes=[p], options=OPTIONS))
    assert [d.selected for d in none.selection if d.kind == "Probe"] == [False]
    assert none.config["scrape_configs"] == []
    every = render(RenderInputs(prometheus(), probes=[p], options=OPTIONS))
    assert [j["job_name"] for j in every.config["scrape_configs"]] == ["probe/test/test"]


def test_probe_selector_labels_and_namespace_selector():
    prom = prometheus(probeSelector={"matchLabels": {"team": "web"}})
    mine, other_label, other_ns = probe("a", labels={"team": "web"}), probe("b"), probe("c", "elsewhere", {"team": "web"})
    result = render(RenderInputs(prom, probes=[mine, other_label, other_ns], options=OPTIONS))
    by_name = {d.name: d for d in result.selection}
    assert by_name["a"].selected and not by_name["b"].selected and not by_name["c"].selected
    assert "probeNamespaceSelector is not set" in by_name["c"].reason  # nil: own namespace only
    assert "team" in by_name["b"].reason
    prom["spec"]["probeNamespaceSelector"] = {}
    result = render(RenderInputs(prom, probes=[mine, other_label, other_ns], options=OPTIONS))
    assert sorted(result.accepted("Probe")) == [("elsewhere", "c"), ("test", "a")]


def test_an_invalid_probe_is_rejected_alone():
    good, bad = probe("good"), with_prober(url="http://bad")
    bad["metadata"]["name"] = "bad"
    result = render(RenderInputs(prometheus(), probes=[good, bad], options=OPTIONS))
    assert result.accepted("Probe") == [("test", "good")]
    [problem] = result.rejected
    assert (problem.kind, problem.name, problem.field) == ("Probe", "bad", "spec.prober.url")
    assert "without a scheme" in problem.message


def test_probe_schema_violations_are_rejected():
    bad = probe(prober={"url": "x:1", "scheme": "ftp"})
    result = render(RenderInputs(prometheus(), probes=[bad], options=OPTIONS))
    assert [p.field for p in result.rejected] == ["spec.prober.scheme"]


def test_scrape_timeout_above_interval_is_rejected():
    result = render(RenderInputs(prometheus(), probes=[probe(interval="10s", scrapeTimeout="20s")], options=OPTIONS))
    assert [p.field for p in result.rejected] == ["spec.scrapeTimeout"]


def test_missing_secret_rejects_the_probe():
    p = probe(basicAuth={"username": {"name": "nope", "key": "u"}, "password": {"name": "nope", "key": "p"}})
    result = render(RenderInputs(prometheus(), probes=[p], options=OPTIONS))
    assert result.accepted("Probe") == [] and result.rejected[0].field.startswith("spec.basicAuth")


def test_probe_tls_secret_goes_to_the_tls_assets_secret():
    secret = {"metadata": {"name": "tls", "namespace": "test"}, "stringData": {"ca": "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"}}
    p = probe(tlsConfig={"ca": {"secret": {"name": "tls", "key": "ca"}}, "serverName": "x"})
    result = render(RenderInputs(prometheus(), probes=[p], secrets={("test", "tls"): secret}, options=OPTIONS))
    [job] = result.config["scrape_configs"]
    assert job["tls_config"] == {"ca_file": "/etc/prometheus/certs/0_test_tls_ca", "server_name": "x"}
    assets = {k for s in result.tls_secrets for k in (s.get("data") or s.get("stringData") or {})}
    assert "0_test_tls_ca" in assets  # upstream's asset names, as in probe_monitor_with_oauth2.golden


def test_offline_render_and_explain(tmp_path):
    files = tmp_path / "in.yaml"
    files.write_text(yaml.safe_dump_all([
        prometheus("v2.42.0"),
        {**probe("blackbox", labels={}), "spec": {"module": "http_2xx", "prober": {"url": "bb.test.svc:19115"},
                                                  "targets": {"staticConfig": {"static": ["https://example.com"]}}}},
        with_prober(url="http://wrong:9115"),
    ]))
    out = tmp_path / "out"
    from cli_runner import promop  # in-process: the same entry point as `python -m promop`

    run = promop("render", "-f", str(files), "--out", str(out))
    assert run.returncode == 0, run.stderr
    config = yaml.safe_load((out / "test" / "p" / "prometheus.yaml").read_text())
    [job] = config["scrape_configs"]
    assert job["job_name"] == "probe/test/blackbox"
    assert job["metrics_path"] == "/probe"  # the CRD default, as kubectl apply would store it
    explain = promop("explain", "probe", "test/test", "-f", str(files))
    assert explain.returncode == 1
    assert "selected but rejected: spec.prober.url" in explain.stdout
